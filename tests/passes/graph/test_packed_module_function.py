"""`R.call_dps_packed("sym", ...)` naming a loop function of the module by its exported
symbol calls that function (TVM's VM finds its own library's functions by name, as the MLC
course's `R.call_dps_packed("linear0", ...)` does): normalize makes it the `R.call_tir` of the
function, and the interpreter runs the function for it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from graph_support import kernel_calls, run_everywhere
from tirc.frontend import parse
from tirc.ir.graph import ExternFunc, GCall
from tirc.passes.graph.normalize import Normalize

PROGRAM = '''from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T


@I.ir_module
class Module:
    @T.prim_func
    def triple(x: T.Buffer((2, 3), "float32"), y: T.Buffer((2, 3), "float32")):
        T.func_attr({"global_symbol": "triple_kernel"})
        for i, j in T.grid(2, 3):
            y[i, j] = x[i, j] * T.float32(3)

    @T.prim_func(private=True)
    def hidden(x: T.Buffer((2, 3), "float32"), y: T.Buffer((2, 3), "float32")):
        for i, j in T.grid(2, 3):
            y[i, j] = x[i, j]

    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            a = R.call_dps_packed("triple_kernel", (x,), R.Tensor((2, 3), "float32"))
            b = R.add(a, x)
            R.output(b)
        return b

    @R.function
    def other(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        y = R.call_dps_packed("hidden", (x,), R.Tensor((2, 3), "float32"))
        return y
'''


def packed_symbols(mod, name: str) -> list[str]:  # noqa: ANN001
    """The symbols `name` still calls through R.call_dps_packed."""
    return [b.value.args[0].symbol for block in mod[name].body.blocks for b in block.bindings
            if isinstance(b.value, GCall) and b.value.op == "call_dps_packed"
            and isinstance(b.value.args[0], ExternFunc)]


def test_normalize_calls_the_module_function_by_its_symbol() -> None:
    mod = Normalize()(parse(PROGRAM, "packed.tir"))
    assert kernel_calls(mod, "main") == ["triple"]
    assert packed_symbols(mod, "main") == []
    assert packed_symbols(mod, "other") == ["hidden"]  # a private function exports no symbol


def test_compiled_and_interpreted_call_the_module_function(tmp_path: Path) -> None:
    text = PROGRAM.split("    @R.function\n    def other")[0]
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    for got in run_everywhere(tmp_path, text, [x]):
        np.testing.assert_allclose(got[0], x * 4)
