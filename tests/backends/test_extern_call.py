"""R.call_dps_packed on the CPU: samples/mlp_dps.tir compiled with `-l NAME -L DIR` against the
C library of samples/mlp_dps_extern.c (built here with `cc -shared -fPIC`), run at several
batch sizes and compared with numpy; the DLTensors the C function receives; a nonzero return
as a Python exception; and clear errors when the library or the symbol is missing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from script_modules import sample_references
from tirc.backends import emit
from tirc.backends.link import c_compiler, link_shared
from tirc.cli.main import cli
from tirc.frontend import parse_file
from tirc.ir import CompileError, IRModule
from tirc.ir.graph import ExternFunc, GCall, Tuple
from tirc.ir.ops import GraphBuilder, tensor
from tirc.ir.target import parse_target
from tirc.passes.manager import run_pipeline
from tirc.passes.pipeline import build_pipeline, default_pipeline
from tirc.runtime import TircError, load

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "mlp_dps.tir"
EXTERN_C = ROOT / "samples" / "mlp_dps_extern.c"
LIB = "mlp_dps_extern"

# The sample's function renamed, wrapped by one that checks every DLTensor field tirc fills
# (a distinct code for each) and fails with 42 at batch size 5.
CHECKING_C = f"""
#define mlp_bias_relu sample_bias_relu
#include "{EXTERN_C}"
#undef mlp_bias_relu

int32_t mlp_bias_relu(DLTensor **args, int32_t num_args) {{
  if (num_args != 3) return 10;
  int64_t n = args[0]->shape[0];
  int64_t want[3][2] = {{{{n, 128}}, {{128, 0}}, {{n, 128}}}};
  int32_t ndim[3] = {{2, 1, 2}};
  for (int k = 0; k < 3; ++k) {{
    DLTensor *t = args[k];
    if (t->device.device_type != 1) return 11;
    if (t->ndim != ndim[k]) return 12;
    if (t->dtype.code != 2 || t->dtype.bits != 32 || t->dtype.lanes != 1) return 13;
    if (t->strides != 0 || t->byte_offset != 0) return 14;
    for (int d = 0; d < t->ndim; ++d)
      if (t->shape[d] != want[k][d]) return 15;
    if ((uintptr_t)t->data % 4 != 0) return 16;
  }}
  if (args[0]->data == args[2]->data) return 17;
  if (n == 5) return 42;
  return sample_bias_relu(args, num_args);
}}
"""


REFS = sample_references()
MLP_DPS = REFS.BY_NAME["mlp_dps"]


def cc_shared(source: Path, out: Path) -> Path:
    """`cc -shared -fPIC -O2 source -o out`."""
    subprocess.run([*c_compiler(), "-shared", "-fPIC", "-O2", "-o", str(out), str(source)],
                   check=True, capture_output=True, text=True)
    return out


def tirc(*args: str | Path) -> tuple[int, str]:
    """Run `tirc ARGS...` in-process; the exit code and what it wrote to stderr."""
    r = CliRunner().invoke(cli, [str(a) for a in args], prog_name="tirc")
    return r.exit_code, r.stderr


def check(fn: object, n: int) -> None:
    """`fn` (the compiled main) at batch size n equals the numpy reference of the sample."""
    inputs = MLP_DPS.inputs({"n": n}, seed=n)
    got = fn(*inputs)  # type: ignore[operator]
    problem = REFS.mismatch([got], MLP_DPS.expected(inputs))
    assert problem is None, f"n={n}: {problem}"


@pytest.fixture(scope="module")
def lib_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding libmlp_dps_extern.so, built from the sample's C file."""
    out = tmp_path_factory.mktemp("extern")
    cc_shared(EXTERN_C, out / f"lib{LIB}.so")
    return out


@pytest.fixture(scope="module")
def built(lib_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`tirc mlp_dps.tir -o mlp_dps.so -l mlp_dps_extern -L DIR -MD`; the output folder."""
    out = tmp_path_factory.mktemp("built")
    code, err = tirc(SAMPLE, "-o", out / "mlp_dps.so", "-l", LIB, "-L", lib_dir, "-MD",
                     "-MF", out / "mlp_dps.d")
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def lowered() -> IRModule:
    """The sample through the default CPU pipeline (ready for the backend)."""
    target = parse_target("llvm")
    return run_pipeline(parse_file(SAMPLE), build_pipeline(default_pipeline(target, 2)))


@pytest.fixture(scope="module")
def obj(lowered: IRModule) -> bytes:
    """The lowered sample as an object file, linked below against different libraries."""
    return emit(lowered, "obj", parse_target("llvm"), 2)


@pytest.mark.parametrize("n", [1, 7, 64, 300])
def test_one_library_every_batch_size(built: Path, n: int) -> None:
    check(load(built / "mlp_dps.so").main, n)


def test_library_is_found_through_its_run_path(built: Path, lib_dir: Path) -> None:
    """The .so records the -L folder (absolute) as its run path: no LD_LIBRARY_PATH needed."""
    dynamic = subprocess.run(["readelf", "-d", str(built / "mlp_dps.so")], capture_output=True,
                             text=True, check=True).stdout
    assert f"[lib{LIB}.so]" in dynamic
    assert re.search(rf"\((RUNPATH|RPATH)\)\s+Library r\w*path: \[{re.escape(str(lib_dir))}\]",
                     dynamic), dynamic


def test_dependency_file_is_unaffected(built: Path) -> None:
    assert (built / "mlp_dps.d").read_text() == f"{built / 'mlp_dps.so'}: \\\n  {SAMPLE}\n"


def test_the_host_function_declares_and_calls_the_c_function(lowered: IRModule) -> None:
    ll = emit(lowered, "ll", parse_target("llvm"), 2).decode()
    assert re.search(r"^declare i32 @mlp_bias_relu\(ptr[^,]*, i32[^)]*\)", ll, re.M), ll
    assert re.search(r"call i32 @mlp_bias_relu\(ptr[^,]*, i32 3\)", ll)
    assert "main: external function 'mlp_bias_relu' returned %d" in ll


def test_dltensor_fields_and_a_failing_call(obj: bytes, tmp_path: Path) -> None:
    """Every field the C function reads is as docs/abi.md says; a nonzero return becomes
    TircError with the message and the code, and the library stays usable."""
    source = tmp_path / "checking.c"
    source.write_text(CHECKING_C)
    # A name of its own: the loader would reuse an already loaded libmlp_dps_extern.so.
    cc_shared(source, tmp_path / "libmlp_dps_checking.so")
    out = tmp_path / "checked.so"
    link_shared(obj, out, openmp=True, libs=("mlp_dps_checking",), lib_dirs=(str(tmp_path),),
                externs=("mlp_bias_relu",))
    fn = load(out).main
    check(fn, 3)
    with pytest.raises(TircError, match=r"^main: external function 'mlp_bias_relu' returned 42$")\
            as info:
        fn(*MLP_DPS.inputs({"n": 5}))
    assert info.value.code == 42
    check(fn, 7)


def test_without_the_library_linking_fails_clearly(tmp_path: Path) -> None:
    code, err = tirc(SAMPLE, "-o", tmp_path / "out.so")
    assert code == 1
    assert err == ("tirc: error: linking failed: external function 'mlp_bias_relu' "
                   "(R.call_dps_packed): no library defines it; link the library that does "
                   "with -l NAME -L DIR\n")
    assert not (tmp_path / "out.so").exists()


def test_a_library_without_the_symbol_or_not_found(obj: bytes, tmp_path: Path) -> None:
    with pytest.raises(CompileError) as info:
        link_shared(obj, tmp_path / "a.so", openmp=True, libs=("m",),
                    externs=("mlp_bias_relu",))
    assert str(info.value) == ("tirc: error: linking failed: external function 'mlp_bias_relu' "
                               "(R.call_dps_packed): not defined by -lm")
    with pytest.raises(CompileError) as info:
        link_shared(obj, tmp_path / "b.so", openmp=True, libs=("no_such_tirc_lib",),
                    lib_dirs=(str(tmp_path),), externs=("mlp_bias_relu",))
    assert str(info.value) == ("tirc: error: linking failed: library -lno_such_tirc_lib not "
                               f"found (searched -L{tmp_path} and the system's folders)")
    assert not list(tmp_path.glob("*.so"))


def test_a_library_removed_after_linking_fails_at_load(obj: bytes, lib_dir: Path,
                                                        tmp_path: Path) -> None:
    moved = tmp_path / "gone"
    moved.mkdir()
    shutil.copy(lib_dir / f"lib{LIB}.so", moved / "libmlp_dps_gone.so")
    link_shared(obj, tmp_path / "m.so", openmp=True, libs=("mlp_dps_gone",),
                lib_dirs=(str(moved),), externs=("mlp_bias_relu",))
    (moved / "libmlp_dps_gone.so").unlink()
    with pytest.raises(TircError, match=r"cannot load .*libmlp_dps_gone\.so: cannot open shared"):
        load(tmp_path / "m.so")


TWICE_C = f"""
#include "{EXTERN_C}"

int32_t twice(DLTensor **args, int32_t num_args) {{
  const float *a = (const float *)args[0]->data;
  float *out = (float *)args[1]->data;
  for (int64_t i = 0; i < args[0]->shape[0] * args[0]->shape[1]; ++i) out[i] = 2.0f * a[i];
  return num_args == 2 ? 0 : -1;
}}
"""


def test_a_result_written_by_the_c_function(tmp_path: Path) -> None:
    """When the C function writes the graph function's result, that parameter is an output
    (allocated by the runtime) and is not read."""
    gb = GraphBuilder()
    n = gb.sym("n")
    e = gb.emit("exp", gb.param("x", (n, 4)), name="e")
    out = gb.emit(GCall("call_dps_packed", (ExternFunc("twice"), Tuple((e,))), {},
                        (tensor((n, 4), "float32"),)), name="out")
    target = parse_target("llvm")
    mod = run_pipeline(IRModule({"main": gb.function("main", out)}),
                       build_pipeline(default_pipeline(target, 2)))
    source = tmp_path / "twice.c"
    source.write_text(TWICE_C)
    cc_shared(source, tmp_path / "libtirc_twice.so")
    emit(mod, "so", target, 2, tmp_path / "twice.so", libs=("tirc_twice",),
         lib_dirs=(str(tmp_path),))
    fn = load(tmp_path / "twice.so").main
    assert [(p["name"], p["input"], p["output"]) for p in fn.params] == [
        ("x", True, False), ("out", False, True)]
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(fn(x), 2 * np.exp(x), rtol=1e-6)


def test_numpy_reference_matches_the_c_function(built: Path) -> None:
    """The interpreter's Python stand-in and the C function agree (the oracle is sound)."""
    inputs = MLP_DPS.inputs({"n": 4})
    h = (inputs[0] @ inputs[1]).astype(np.float32)
    want = np.empty_like(h)
    MLP_DPS.externs["mlp_bias_relu"](h, inputs[2], want)
    got = load(built / "mlp_dps.so").main(*inputs)
    np.testing.assert_allclose(got, want @ inputs[3], rtol=1e-4, atol=1e-4)
