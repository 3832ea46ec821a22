"""Schedules: straight-line primitive calls with names, literals, lists and index maps."""

from __future__ import annotations

from tirc.frontend import parse
from tirc.ir import BinOp, SchedLambda, SchedRef

TEXT = '''
from tvm.script import tir as T


@T.prim_func
def matmul(A: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    for i, j in T.grid(64, 64):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj]


@S.schedule("matmul", target="llvm")
def tile(sch):
    b0 = sch.get_block("C")
    i, j = sch.get_loops(b0)
    io, ii = sch.split(i, factors=[None, 32])
    l, = sch.get_loops(b0)
    sch.reorder(io, j, ii)
    sch.transform_layout(b0, ("write", 0), lambda i, j: (i // 16, j, i % 16))
    sch.annotate(io, ann_key="pragma_auto_unroll_max_step", ann_val=-16)
    pass
'''


def test_schedule_instructions() -> None:
    mod = parse(TEXT, "sched.tir")
    (s,) = mod.schedules
    assert (s.func_name, s.target, s.name, s.param) == ("matmul", "llvm", "tile", "sch")
    prims = [ins.prim for ins in s.instrs]
    assert prims == ["get_block", "get_loops", "split", "get_loops", "reorder",
                     "transform_layout", "annotate"]
    get_block, get_loops, split, one, reorder, layout, annotate = s.instrs
    assert get_block.outputs == ("b0",) and get_block.args == ("C",) and not get_block.unpack
    assert get_loops.outputs == ("i", "j") and get_loops.unpack
    assert one.outputs == ("l",) and one.unpack
    assert split.args == (SchedRef("i"),) and split.kwargs == {"factors": [None, 32]}
    assert reorder.outputs == () and reorder.args == (SchedRef("io"), SchedRef("j"),
                                                      SchedRef("ii"))
    index_map = layout.args[2]
    assert layout.args[1] == ("write", 0) and isinstance(index_map, SchedLambda)
    i, j = index_map.params
    first, second, third = index_map.body
    assert isinstance(first, BinOp) and first.op == "floordiv" and first.a is i
    assert second is j and third.op == "floormod"
    assert annotate.kwargs == {"ann_key": "pragma_auto_unroll_max_step", "ann_val": -16}
