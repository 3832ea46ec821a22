"""A graph function's PTX through tirc.runtime.load: the launch plan the loader runs (kernels
in order, grids from the symbolic sizes, one workspace allocation for the intermediates,
outputs allocated from their shape expressions, a C function called on the host between two
kernels), checked against a fake driver that runs the kernels in the GPU interpreter."""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpu_support import SAMPLE_REFS, FakeDriver, build_extern_library
from tirc.backends.nvptx import compile_ptx, cuda_target
from tirc.driver import lower
from tirc.frontend import parse, parse_file
from tirc.ir.diagnostics import CompileError
from tirc.ir.module import IRModule
from tirc.runtime import TircError, cuda_driver, load
from tirc.runtime.cuda import WORKSPACE_ALIGN, load_ptx, workspace_layout

MLP = SAMPLE_REFS.BY_NAME["mlp"]


class RecordingDriver(FakeDriver):
    """The fake driver, also recording the size of every allocation."""

    def __init__(self, *lowered: IRModule) -> None:
        super().__init__(*lowered)
        self.allocs: list[int] = []

    def alloc(self, nbytes: int) -> int:
        self.allocs.append(nbytes)
        return super().alloc(nbytes)


@cache
def _mlp_build() -> tuple[str, IRModule, dict[str, Any]]:
    target = cuda_target("cuda -arch=sm_90")
    lowered = lower(parse_file(str(MLP.path)), target, 2)
    result = compile_ptx(lowered, target)
    return result.ptx, lowered, result.metadata


def _mlp(tmp_path: Path) -> tuple[Path, RecordingDriver, dict[str, Any]]:
    ptx, lowered, meta = _mlp_build()
    path = tmp_path / "mlp.ptx"
    path.write_text(ptx)
    return path, RecordingDriver(lowered), meta


def test_graph_function_returns_numpy_equal_to_the_reference(tmp_path: Path) -> None:
    path, fake, meta = _mlp(tmp_path)
    main = load_ptx(path, fake).main
    (plan,) = meta["functions"]
    for n in (5, 1):
        fake.launches.clear()
        fake.allocs.clear()
        inputs = MLP.inputs({"n": n})
        got = main(*inputs)
        assert isinstance(got, np.ndarray) and got.shape == (n, 10)
        assert SAMPLE_REFS.mismatch([got], MLP.reference(*inputs)) is None
        # The plan's kernels, in order, over grids computed from n.
        assert [x[0] for x in fake.launches] == [la["kernel"] for la in plan["launches"]]
        assert fake.launches[0][1:3] == ((8, -(-n // 16), 1), (16, 16, 1))
        # Seven inputs and the output copied in, and one allocation for every intermediate.
        sizes = [a.nbytes for a in inputs] + [n * 10 * 4]
        offsets, total = workspace_layout(plan["workspaces"], {"n": n})
        assert len(offsets) == len(plan["workspaces"]) >= 1
        assert fake.allocs == sizes + [total]
        assert fake.memory == {}


def test_zero_rows_launch_nothing(tmp_path: Path) -> None:
    path, fake, _ = _mlp(tmp_path)
    got = load_ptx(path, fake).main(*MLP.inputs({"n": 0}))
    assert got.shape == (0, 10) and fake.launches == []


class _OnDevice:
    """An array already on the (fake) device, as CuPy or PyTorch would hand it over."""

    def __init__(self, fake: FakeDriver, host: np.ndarray) -> None:
        self.ptr = fake.alloc(host.nbytes)
        fake.to_device(self.ptr, host)
        self.shape, self.dtype = host.shape, host.dtype

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "strides": None, "version": 3}


def test_device_arrays_are_used_in_place(tmp_path: Path) -> None:
    path, fake, _ = _mlp(tmp_path)
    inputs = MLP.inputs({"n": 4}, seed=2)
    on_device = [_OnDevice(fake, a) for a in inputs]
    out = _OnDevice(fake, np.zeros((4, 10), np.float32))
    fake.copies = 0
    fake.allocs.clear()
    assert load_ptx(path, fake).main(*on_device, out) is out  # the caller's object back
    assert fake.copies == 0 and len(fake.allocs) == 1  # only the workspace
    got = fake.memory[out.ptr].view(np.float32).reshape(4, 10)
    assert SAMPLE_REFS.mismatch([got], MLP.reference(*inputs)) is None


def test_wrong_shapes_are_errors_before_any_launch(tmp_path: Path) -> None:
    path, fake, _ = _mlp(tmp_path)
    inputs = MLP.inputs({"n": 3})
    inputs[1] = np.zeros((65, 128), np.float32)
    with pytest.raises(ValueError, match=r"main: argument w1: expected shape \(64, 128\), got "
                       r"\(65, 128\)"):
        load_ptx(path, fake).main(*inputs)
    assert fake.launches == [] and fake.memory == {}


def test_workspaces_share_one_aligned_allocation() -> None:
    spaces = [{"name": "a", "bytes": "n * 4"}, {"name": "b", "bytes": 0},
              {"name": "c", "bytes": "n * 2 + 1"}]
    offsets, total = workspace_layout(spaces, {"n": 100})
    assert offsets == {"a": 0, "b": 512, "c": 768}
    assert total == 1024 and all(o % WORKSPACE_ALIGN == 0 for o in offsets.values())
    assert workspace_layout([], {}) == ({}, 0)


def test_graph_ptx_without_a_driver_is_a_clear_error(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path, _, _ = _mlp(tmp_path)
    monkeypatch.setattr(cuda_driver, "_DRIVER", None)
    monkeypatch.setattr(cuda_driver, "_library_names", lambda: [str(tmp_path / "libcuda.so.1")])
    monkeypatch.setitem(__import__("sys").modules, "pycuda", None)
    monkeypatch.setitem(__import__("sys").modules, "pycuda.driver", None)
    with pytest.raises(TircError, match=f"cannot load '{path}': no CUDA driver"):
        load(path)


MATCH_CAST = """
@R.function
def main(x: R.Tensor(("n",), "float32"), y: R.Tensor(("m",), "float32")
         ) -> R.Tensor(("n",), "float32"):
    n = T.int64()
    with R.dataflow():
        z = R.match_cast(y, R.Tensor((n,), "float32"))
        o = R.add(x, z)
        R.output(o)
    return o
"""


def test_match_cast_is_checked_before_any_launch(tmp_path: Path) -> None:
    target = cuda_target("cuda -arch=sm_90")
    mod = lower(parse(MATCH_CAST), target, 2)
    result = compile_ptx(mod, target)
    assert "//   check m == n\n" in result.ptx
    (plan,) = result.metadata["functions"]
    (check,) = plan["checks"]
    assert (check["lhs"], check["op"], check["rhs"]) == ("m", "eq", "n")
    path = tmp_path / "mc.ptx"
    path.write_text(result.ptx)
    fake = RecordingDriver(mod)
    main = load_ptx(path, fake).main
    x, y = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
    np.testing.assert_array_equal(main(x, y), x + 1)
    fake.allocs.clear()
    fake.launches.clear()
    with pytest.raises(ValueError, match=r"main: R.match_cast of z: dimension 0 is not n "
                       r"\(4 vs 5\)"):
        main(x, np.ones(4, np.float32))
    assert fake.allocs == [] and fake.launches == []


MLP_DPS = SAMPLE_REFS.BY_NAME["mlp_dps"]
FAILING_C = """#include <stdint.h>
int32_t mlp_bias_relu(void **args, int32_t n) { return n == 3 ? 7 : -1; }
"""


@cache
def _mlp_dps_lowered() -> IRModule:
    return lower(parse_file(str(MLP_DPS.path)), cuda_target("cuda -arch=sm_90"), 2)


def _mlp_dps(tmp_path: Path, libs: tuple[str, ...], dirs: tuple[str, ...]
             ) -> tuple[Path, FakeDriver, dict[str, Any]]:
    """mlp_dps.tir as PTX linked (in its metadata) with `libs`, and a fake driver for it."""
    result = compile_ptx(_mlp_dps_lowered(), "cuda -arch=sm_90", 2, libs, dirs)
    path = tmp_path / "mlp_dps.ptx"
    path.write_text(result.ptx)
    return path, FakeDriver(_mlp_dps_lowered()), result.metadata


def test_c_function_between_kernels_runs_on_the_host(tmp_path: Path) -> None:
    libs, dirs = build_extern_library(MLP_DPS, tmp_path)
    path, fake, meta = _mlp_dps(tmp_path, libs, dirs)
    (plan,) = meta["functions"]
    (step,) = plan["host_calls"]
    assert step["symbol"] == "mlp_bias_relu" and step["before"] == 1
    assert [(a["kind"], a["role"], a["shape"]) for a in step["args"]] == [
        ("workspace", "in", ["n", 128]), ("buffer", "in", [128]),
        ("workspace", "out", ["n", 128])]
    assert meta["libraries"] == {"names": ["mlp_dps_extern"], "dirs": [str(tmp_path)]}
    assert "//   host call mlp_bias_relu(" in path.read_text()
    main = load_ptx(path, fake).main
    for n in (1, 7):
        inputs = MLP_DPS.inputs({"n": n})
        got = main(*inputs)
        assert got.shape == (n, 10)
        assert SAMPLE_REFS.mismatch([got], MLP_DPS.reference(*inputs)) is None
        assert [x[0] for x in fake.launches[-2:]] == ["main_kernel0", "main_kernel1"]
        assert fake.memory == {}


def test_c_function_failure_is_a_tirc_error(tmp_path: Path) -> None:
    (tmp_path / "fail.c").write_text(FAILING_C)
    from tirc.backends.link import c_compiler

    subprocess.run([*c_compiler(), "-shared", "-fPIC", "-o", str(tmp_path / "libmlp_fail.so"),
                    str(tmp_path / "fail.c")], check=True)
    path, fake, _ = _mlp_dps(tmp_path, ("mlp_fail",), (str(tmp_path),))
    main = load_ptx(path, fake).main
    with pytest.raises(TircError, match="main: external function 'mlp_bias_relu' returned 7"):
        main(*MLP_DPS.inputs({"n": 2}))
    assert [x[0] for x in fake.launches] == ["main_kernel0"]  # nothing after the failure
    assert fake.memory == {}


def test_missing_host_library_is_a_clear_error(tmp_path: Path) -> None:
    libs, dirs = build_extern_library(MLP_DPS, tmp_path)
    path, fake, _ = _mlp_dps(tmp_path, libs, dirs)
    (tmp_path / "libmlp_dps_extern.so").unlink()
    with pytest.raises(TircError, match=r"library -lmlp_dps_extern not found \(searched "
                       + re.escape(str(tmp_path))):
        load_ptx(path, fake)


def test_host_library_is_checked_at_compile_time(tmp_path: Path) -> None:
    with pytest.raises(CompileError, match="'mlp_bias_relu' .* no library defines it; give "
                       "the library that does with -l NAME -L DIR"):
        compile_ptx(_mlp_dps_lowered(), "cuda -arch=sm_90")
    with pytest.raises(CompileError, match=r"library -lnowhere not found"):
        compile_ptx(_mlp_dps_lowered(), "cuda -arch=sm_90", 2, ("nowhere",), (str(tmp_path),))
    (tmp_path / "other.c").write_text("int other(void) { return 0; }\n")
    from tirc.backends.link import c_compiler

    subprocess.run([*c_compiler(), "-shared", "-fPIC", "-o", str(tmp_path / "libother.so"),
                    str(tmp_path / "other.c")], check=True)
    with pytest.raises(CompileError, match="'mlp_bias_relu' .*not defined by -lother"):
        compile_ptx(_mlp_dps_lowered(), "cuda -arch=sm_90", 2, ("other",), (str(tmp_path),))
