"""legalize-ops binds each size a call's struct info assumed equal as `R.tirc.size_check` before
the call's kernel; fusion and dead-code-elim keep it in place, lower-graph makes it a
`tirc.check` of the host function, and the reference interpreter gives the same message at
every stage."""

from __future__ import annotations

import numpy as np
import pytest
from graph_support import run_passes
from tirc.frontend import parse
from tirc.ir import structural_equal
from tirc.ir.graph import GCall
from tirc.ir.interpreter import Interpreter, InterpreterError, run_prim_func
from tirc.ir.stmt import AssertStmt
from tirc.ir.structural import first_difference
from tirc.ir.visitor import post_order_visit
from tirc.passes.graph.annotate_op_pattern import AnnotateOpPattern
from tirc.passes.graph.dead_code_elim import DeadCodeElim
from tirc.passes.graph.fuse_ops import FuseOps
from tirc.passes.graph.fuse_tir import FuseTIR
from tirc.passes.graph.legalize_ops import LegalizeOps
from tirc.passes.graph.lower_graph import LowerGraph, lower_function
from tirc.passes.graph.memory_plan import MemoryPlanPass
from tirc.passes.graph.normalize import Normalize

SRC = '''
@R.function
def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor(("m", 4), "float32")):
    with R.dataflow():
        z = R.add(x, y)
        w = R.exp(z)
        R.output(w)
    return w
'''

PASSES = (Normalize(), LegalizeOps(), AnnotateOpPattern(), FuseOps(), FuseTIR(), DeadCodeElim(),
          MemoryPlanPass(), LowerGraph())
MESSAGE = "R.add: sizes n = 2 and m = 3 must be equal"


def _bound_ops(mod: object) -> list[str]:
    return [b.value.op if b.value.op != "call_tir" else "call_tir"
            for b in mod["main"].body.blocks[0].bindings  # type: ignore[index]
            if isinstance(b.value, GCall)]


def test_checks_stay_before_the_kernels_and_fail_alike() -> None:
    stages = run_passes(parse(SRC), PASSES)
    legalized, fused, kept = stages[2], stages[5], stages[6]
    assert _bound_ops(legalized) == ["tirc.size_check", "call_tir", "call_tir"]
    assert _bound_ops(fused) == ["tirc.size_check", "call_tir"]  # one fused kernel, after it
    assert _bound_ops(kept) == ["tirc.size_check", "call_tir"]  # unused, kept
    host = stages[-1]
    assert 'T.call_intrin("int32", "tirc.check", n == m, "<string>:5:13: R.add: sizes n = ' \
        '%lld and m = %lld must be equal", n, m)' in host.script()
    again = parse(legalized.script())  # the printed check parses back
    assert structural_equal(again, legalized), first_difference(legalized, again)
    x, y = np.ones((2, 4), "float32"), np.ones((3, 4), "float32")
    for mod in stages[:-1]:
        with pytest.raises(InterpreterError, match=MESSAGE):
            Interpreter(mod).call("main", x, y)
    with pytest.raises(InterpreterError, match=MESSAGE):
        Interpreter(host).call("main", x, y, np.empty((2, 4), "float32"))
    out = np.empty((2, 4), "float32")
    Interpreter(host).call("main", x, x, out)
    np.testing.assert_allclose(out, np.exp(x + x), rtol=1e-6)


def test_gpu_and_megakernel_hosts_assert() -> None:
    """For a GPU launch plan and the megakernels the check is an assert scoping over the rest
    (their only form of host check), its message naming the sizes without their values."""
    planned = run_passes(parse(SRC), PASSES[:-1])[-1]
    host, _ = lower_function(planned["main"], planned, asserts=True)
    found: list[AssertStmt] = []
    post_order_visit(host.body, lambda n: found.append(n) if isinstance(n, AssertStmt) else None)
    assert [a.message for a in found] == ["<string>:5:13: R.add: sizes n and m must be equal"]
    with pytest.raises(InterpreterError, match="R.add: sizes n and m must be equal"):
        run_prim_func(host, [np.ones((2, 4), "float32"), np.ones((3, 4), "float32"),
                             np.empty((2, 4), "float32")])
