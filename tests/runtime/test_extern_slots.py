"""R.call_dps_packed by a dotted name (`"env.relu"`, as TVM's registered functions are called):
the library holds a slot per name, listed in its metadata, that `tirc.runtime.load(...,
externs=...)` or `register_func` fills with a Python function viewing the DLTensors as numpy
arrays. Compiled at -O0 and -O3 and compared with the reference interpreter; an empty slot,
an exception and a nonzero return are TircErrors; two loads keep their own functions; a GPU
launch plan calls the same Python functions on the host."""

from __future__ import annotations

import ctypes
import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from tirc.cli.main import cli
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter
from tirc.ir.packed_call import is_slot_name
from tirc.runtime import TircError, externs, get_func, load, register_func

SOURCE = '''
from tvm.script import ir as I
from tvm.script import tir as T
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor(("n", 4), "float32")
             ) -> R.Tensor(("n", 4), "float32"):
        n = T.int64()
        r = R.call_dps_packed("env.relu", (x,), out_sinfo=R.Tensor((n, 4), "float32"))
        t = R.call_dps_packed("env.pair", (r, y), out_sinfo=[R.Tensor((n, 4), "float32"),
                                                              R.Tensor((n,), "int32")])
        s = t[0]
        c = R.astype(t[1], "float32")
        u = R.add(s, R.expand_dims(c, axis=[1]))
        return u
'''


def _relu(x: np.ndarray, out: np.ndarray) -> None:
    np.maximum(x, 0, out=out)


def _pair(r: np.ndarray, y: np.ndarray, total: np.ndarray, count: np.ndarray) -> int:
    total[...] = r * y
    count[...] = (r > 0).sum(axis=1)
    return 0


FUNCS = {"env.relu": _relu, "env.pair": _pair}


@pytest.fixture(scope="module")
def libraries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("slots")
    src = out / "slots.tir"
    src.write_text(SOURCE)
    built = {}
    for opt in ("-O0", "-O3"):
        lib = out / f"slots{opt}.so"
        res = CliRunner().invoke(cli, [str(src), "-o", str(lib), opt])
        assert res.exit_code == 0, res.output
        built[opt] = lib
    return built


@pytest.fixture
def registry() -> Iterator[None]:
    """The process registry emptied of this file's names after each test."""
    yield
    for name in ("env.relu", "env.pair"):
        externs._registry.pop(name, None)


def _inputs(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n)
    return (rng.standard_normal((n, 4)).astype(np.float32),
            rng.standard_normal((n, 4)).astype(np.float32))


@pytest.mark.parametrize("opt", ["-O0", "-O3"])
def test_python_functions_behind_dotted_names(libraries: dict[str, Path], opt: str) -> None:
    m = load(libraries[opt], externs=FUNCS)
    for n in (3, 1, 0):
        x, y = _inputs(n)
        want = Interpreter(parse(SOURCE), externs=FUNCS).call("main", x.copy(), y.copy())
        relu = np.maximum(x, 0)
        np.testing.assert_allclose(want, relu * y + (relu > 0).sum(1, keepdims=True),
                                   rtol=1e-6)
        np.testing.assert_allclose(m.main(x, y), want, rtol=1e-6)


def test_metadata_lists_the_slots(libraries: dict[str, Path]) -> None:
    meta = load(libraries["-O0"], externs=FUNCS).metadata
    assert meta["externs"] == ["env.relu", "env.pair"]
    assert meta["symbols"]["extern_slots"] == "slots_extern_slots"
    assert meta["tirc_abi"] == 2
    lib = ctypes.CDLL(str(libraries["-O0"]))
    lib.tirc_metadata.restype = ctypes.c_char_p
    assert json.loads(lib.tirc_metadata())["externs"] == meta["externs"]


def test_empty_slot_is_an_error_naming_it(libraries: dict[str, Path]) -> None:
    m = load(libraries["-O3"], externs={"env.relu": _relu})
    with pytest.raises(TircError, match=r"^main: external function 'env.pair' is not "
                       r"registered \(tirc.runtime.load") as info:
        m.main(*_inputs(2))
    assert info.value.code == -6


def test_exception_in_the_function(libraries: dict[str, Path]) -> None:
    def boom(r: np.ndarray, y: np.ndarray, total: np.ndarray, count: np.ndarray) -> None:
        raise ValueError("no pairs today")

    m = load(libraries["-O0"], externs={"env.relu": _relu, "env.pair": boom})
    with pytest.raises(TircError, match="main: external function 'env.pair' raised "
                       "ValueError: no pairs today") as info:
        m.main(*_inputs(2))
    assert isinstance(info.value.__cause__, ValueError) and info.value.code == externs.RAISED
    # the next call is clean again
    m2 = load(libraries["-O0"], externs=FUNCS)
    assert m2.main(*_inputs(2)).shape == (2, 4)


def test_nonzero_return_is_the_code(libraries: dict[str, Path]) -> None:
    m = load(libraries["-O0"], externs={"env.relu": lambda x, out: 5, "env.pair": _pair})
    with pytest.raises(TircError, match="main: external function 'env.relu' returned 5"):
        m.main(*_inputs(2))


def test_registry(libraries: dict[str, Path], registry: None) -> None:
    register_func("env.relu", _relu)

    @register_func("env.pair")
    def pair(*arrays: np.ndarray) -> int:
        return _pair(*arrays)

    assert get_func("env.pair") is pair
    with pytest.raises(ValueError, match="'env.relu' is already registered"):
        register_func("env.relu", _relu)
    x, y = _inputs(3)
    want = Interpreter(parse(SOURCE), externs=FUNCS).call("main", x.copy(), y.copy())
    np.testing.assert_allclose(load(libraries["-O3"]).main(x, y), want, rtol=1e-6)
    # given functions take precedence over registered ones
    register_func("env.relu", lambda a, out: np.copyto(out, a), override=True)
    np.testing.assert_allclose(load(libraries["-O3"], externs={"env.relu": _relu}).main(x, y),
                               want, rtol=1e-6)


def test_two_loads_keep_their_own_functions(libraries: dict[str, Path]) -> None:
    double = {"env.relu": lambda a, out: np.copyto(out, 2 * a), "env.pair": _pair}
    a = load(libraries["-O0"], externs=FUNCS).main
    b = load(libraries["-O0"], externs=double).main
    gc.collect()
    x, y = _inputs(3)
    interp = Interpreter(parse(SOURCE), externs=double)
    np.testing.assert_allclose(b(x, y), interp.call("main", x.copy(), y.copy()), rtol=1e-6)
    want = Interpreter(parse(SOURCE), externs=FUNCS).call("main", x.copy(), y.copy())
    np.testing.assert_allclose(a(x, y), want, rtol=1e-6)


def test_unknown_extern_name_is_refused(libraries: dict[str, Path]) -> None:
    with pytest.raises(TircError, match="externs: the library calls no function named "
                       "'env.relux' \\(it calls: env.relu, env.pair\\)"):
        load(libraries["-O0"], externs={"env.relux": _relu})


def test_slot_names() -> None:
    assert is_slot_name("env.relu") and is_slot_name("tvm.contrib.cblas.matmul")
    assert not is_slot_name("relu") and not is_slot_name("env..relu")
    assert not is_slot_name("env.relu-2") and not is_slot_name(".relu")


def test_header_declares_the_slots(tmp_path: Path) -> None:
    src = tmp_path / "slots.tir"
    src.write_text(SOURCE)
    res = CliRunner().invoke(cli, [str(src), "-o", str(tmp_path / "slots.h")])
    assert res.exit_code == 0, res.output
    text = (tmp_path / "slots.h").read_text()
    assert " * [0] env.relu\n * [1] env.pair\n" in text
    assert "void **slots_extern_slots(void);" in text


def test_gpu_plan_calls_them_on_the_host(tmp_path: Path) -> None:
    from gpu_support import FakeDriver
    from tirc.backends.nvptx import compile_ptx, cuda_target
    from tirc.driver import lower
    from tirc.runtime.cuda import load_ptx

    lowered = lower(parse(SOURCE), cuda_target("cuda -arch=sm_90"), 2)
    result = compile_ptx(lowered, "cuda -arch=sm_90")
    assert "libraries" not in result.metadata  # no C library to find for dotted names
    path = tmp_path / "slots.ptx"
    path.write_text(result.ptx)
    x, y = _inputs(3)
    want = Interpreter(parse(SOURCE), externs=FUNCS).call("main", x.copy(), y.copy())
    got: Any = load_ptx(path, FakeDriver(lowered), externs=FUNCS).main(x, y)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(TircError, match="main: external function 'env.relu' is not registered"):
        load_ptx(path, FakeDriver(lowered)).main(x, y)
    bad = {**FUNCS, "env.pair": lambda *a: 1 // 0}
    with pytest.raises(TircError, match="main: external function 'env.pair' raised "
                       "ZeroDivisionError"):
        load_ptx(path, FakeDriver(lowered), externs=bad).main(x, y)


def test_name_that_is_neither_is_an_error_at_the_call(tmp_path: Path) -> None:
    src = tmp_path / "bad.tir"
    src.write_text(SOURCE.replace('"env.relu"', '"env relu"'))
    res = CliRunner().invoke(cli, [str(src), "-o", str(tmp_path / "bad.so")])
    assert res.exit_code == 1
    assert ("bad.tir:13:13: error: lower-graph: R.call_dps_packed: 'env relu' is neither a C "
            "identifier nor a dotted name such as 'env.relu'") in res.output
