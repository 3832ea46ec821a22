"""R.arange with a symbolic bound (`R.arange(1, R.prim_value(n), 2)`, as TVM's legalization
test writes it): the length is ceildiv(end - start, step) over the size, the values NumPy's
arange; compiled at -O0 and -O3 against the interpreter and NumPy for several sizes, a bound
that no shape mentions passed to the kernel, the printed form read back, and the diagnostic
for a symbolic step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graph_support import compile_sample, normalize_diagnostic
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter
from tirc.ir.printer import print_module
from tirc.passes.graph.normalize import Normalize

CASES: dict[str, tuple[str, Callable[[int], np.ndarray]]] = {
    "end": ("R.arange(1, R.prim_value(n), 2)", lambda n: np.arange(1, n, 2)),
    "start_float": ('R.arange(R.prim_value(n), 20, 3, dtype="float32")',
                    lambda n: np.arange(n, 20, 3).astype("float32")),
    "descending": ("R.arange(R.prim_value(n * 2), R.prim_value(n - 3), -2)",
                   lambda n: np.arange(2 * n, n - 3, -2)),
    "count": ("R.arange(R.prim_value(n))", lambda n: np.arange(n)),
    "offset": ("R.arange(R.prim_value(n), R.prim_value(n + 5))", lambda n: np.arange(n, n + 5)),
}


def module() -> str:
    """One function per case over `x: R.Tensor(("n",))`."""
    out = ["from tvm.script import ir as I", "from tvm.script import tir as T",
           "from tvm.script import relax as R", "", "@I.ir_module", "class Module:"]
    for name, (body, _) in CASES.items():
        out += ["    @R.function", f'    def {name}(x: R.Tensor(("n",), "float32")):',
                "        n = T.int64()", f"        return {body}", ""]
    return "\n".join(out)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Any]:
    tmp = tmp_path_factory.mktemp("arange")
    path = tmp / "arange.tir"
    path.write_text(module())
    return {level: compile_sample(path, tmp / f"arange{level}.so", level) for level in (0, 3)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_and_interpreted_are_numpys(built: dict[int, Any], name: str) -> None:
    mod = parse(module())
    for n in (0, 1, 6, 11):
        x = np.zeros(n, dtype="float32")
        want = CASES[name][1](n)
        got = Interpreter(mod).call(name, x.copy())
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        for level, lib in built.items():
            np.testing.assert_array_equal(getattr(lib, name)(x.copy()), want,
                                          err_msg=f"{name} n={n} -O{level}")


def test_length_prints_and_reads_back() -> None:
    printed = print_module(Normalize()(parse(module())))
    assert 'R.Tensor((n // T.int64(2),), dtype="int64") = R.arange(start=1, end=n, step=2)' \
        in printed
    assert print_module(Normalize()(parse(printed))) == printed


def test_a_symbolic_step_is_a_diagnostic(tmp_path: Path) -> None:
    text = module().replace("R.arange(R.prim_value(n))", "R.arange(0, 8, R.prim_value(n))")
    err = normalize_diagnostic(tmp_path, text)
    assert "R.arange: with a symbolic bound, start and end must be integers and step a " \
        "constant integer, got 0, 8 and n" == err.message
