"""The boxes a megakernel task touches: two accesses of one buffer join into their hull, and
bounds are compared as the same variables, never as equal up to renaming."""

from __future__ import annotations

from tirc.ir import Var, make_buffer
from tirc.ir.printer import print_node
from tirc.passes.megakernel.dependence import Access, hull


def test_the_hull_of_two_symbolic_points_spans_both() -> None:
    x = make_buffer("X", (64,), "float32")
    a, b = Var("a"), Var("b")
    (box,) = hull([Access(x, False, [(a, a)]), Access(x, True, [(b, b)])])
    lo, hi = box.box[0]
    assert box.write
    assert print_node(lo) == "T.min(a, b)"
    assert print_node(hi) == "T.max(a, b)"


def test_the_hull_of_one_point_twice_is_that_point() -> None:
    x = make_buffer("X", (64,), "float32")
    a = Var("a")
    (box,) = hull([Access(x, False, [(a, a)]), Access(x, False, [(a, a)])])
    assert box.box[0] == (a, a)
