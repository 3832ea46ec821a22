"""R.take with an `R.Prim` index (TVM's legalization tests write `R.take(x, index, axis=1)`
with `index: R.Prim("int64")`, and `R.take(x, R.prim_value(n - 1), axis=1)`): the index acts
as a 0-d tensor, so the axis is dropped; the interpreter and the library at -O0 and -O3
against NumPy's take, every mode, and the struct info inferred."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from graph_support import compile_sample
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter
from tirc.ir.printer import print_module
from tirc.passes.graph.normalize import Normalize

PROGRAM = """\
from tvm.script import ir as I
from tvm.script import tir as T
from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def axis1(x: R.Tensor((2, 3, 4), "float32"), index: R.Prim("int64")):
        return R.take(x, index, axis=1)

    @R.function
    def flat(x: R.Tensor((2, 3, 4), "float32"), index: R.Prim("int64")):
        return R.take(x, index)

    @R.function
    def clip(x: R.Tensor((2, 3, 4), "float32"), index: R.Prim("int32")):
        return R.take(x, index, axis=2, mode="clip")

    @R.function
    def last(x: R.Tensor((2, "n", 4), "float32"), index: R.Prim("int64")):
        n = T.int64()
        return R.take(x, R.prim_value(n - 1), axis=1)
"""

CASES = {
    "axis1": ([-3, -1, 0, 2], lambda x, i: np.take(x, i, axis=1)),
    "flat": ([-24, 5, 23], lambda x, i: np.take(x, i)),
    "clip": ([-5, 1, 9], lambda x, i: np.take(x, i, axis=2, mode="clip")),
    "last": ([0], lambda x, i: x[:, -1]),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Any]:
    tmp = tmp_path_factory.mktemp("take")
    path = tmp / "take.tir"
    path.write_text(PROGRAM)
    return {level: compile_sample(path, tmp / f"take{level}.so", level) for level in (0, 3)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_prim_index_is_a_0d_index(built: dict[int, Any], name: str) -> None:
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    mod = parse(PROGRAM)
    for i in CASES[name][0]:
        want = CASES[name][1](x, i)
        np.testing.assert_array_equal(Interpreter(mod).call(name, x, i), want)
        for level, lib in built.items():
            np.testing.assert_array_equal(np.asarray(getattr(lib, name)(x, i)), want,
                                          err_msg=f"{name}[{i}] -O{level}")


def test_struct_info_drops_the_axis() -> None:
    printed = print_module(Normalize()(parse(PROGRAM)))
    assert 'def axis1(x: R.Tensor((2, 3, 4), dtype="float32"), index: R.Prim("int64")) -> ' \
        'R.Tensor((T.int64(2), T.int64(4)), dtype="float32"):' in printed
    assert '-> R.Tensor((), dtype="float32"):' in printed
