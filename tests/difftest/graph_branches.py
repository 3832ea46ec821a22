"""A stage of the random graph functions from a stream of its own (one program in eight gets
one, at a random step): `if c:` / `else:` on a fresh 0-d boolean parameter, each branch
computing a value of one shape by a chain of one or two shape-keeping operators of a recent
value, the branches differing, so that the argument chooses which runs (the interpreter runs
the branch taken; lower-graph makes it an `IfThenElse` of the host function, the GPU's
launch plan a branch). A function with an `if` has no dataflow block (an `if` may not be in
one), so the stage is drawn before any binding; later operators may use the `if`'s value.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from tirc.ir.graph import BindingBlock, If, SeqExpr

if TYPE_CHECKING:
    from difftest.graph_programs import Val, _Gen

# A shape-keeping operator, and its interval of results from the operand's.
CHAIN = ("negative", "abs", "nn.relu", "double", "tanh", "minimum")


def stage_if(gen: _Gen, r: random.Random) -> None:
    """`v = if c: chain(a) else: other_chain(a)` of a recent float32 value `a`."""
    from difftest.graph_programs import Val

    fit = [v for v in gen.vals[-4:] if v.dt == "float32" and v.dims]
    a = r.choice(fit) if fit else gen.pick()
    cond = gen.param((), "bool")
    gen.vals.remove(cond)  # a condition, not an operand of later operators
    first = [r.choice(CHAIN) for _ in range(r.randint(1, 2))]
    second = [r.choice([op for op in CHAIN if op != first[0]]) for _ in range(r.randint(1, 2))]
    branches, vals = [], []
    for ops in (first, second):
        seq, val = _branch(gen, a, ops)
        branches.append(seq)
        vals.append(val)
    var = gen.gb.emit(If(cond.var, branches[0], branches[1]))
    gen.vals.append(Val(var, a.dims, a.dt, min(v.lo for v in vals), max(v.hi for v in vals),
                        all(v.exact for v in vals)))


def _branch(gen: _Gen, a: Val, ops: list[str]) -> tuple[SeqExpr, Val]:
    """A branch binding `ops` in turn from `a` (a block of its own, not dataflow)."""
    from difftest.graph_programs import Val

    outer, gen.gb.bindings = gen.gb.bindings, []
    lo, hi, exact, var = a.lo, a.hi, a.exact, a.var
    try:
        for op in ops:
            if op == "double":
                var = gen.gb.emit("add", var, var)
                lo, hi = 2 * lo, 2 * hi
            elif op == "minimum":
                var = gen.gb.emit("minimum", var, a.var)
                lo, hi = min(lo, a.lo), min(hi, a.hi)
            else:
                var = gen.gb.emit(op, var)
                lo, hi, exact = _interval(op, lo, hi, exact)
        seq = SeqExpr((BindingBlock(tuple(gen.gb.bindings), False, ()),), var)
    finally:
        gen.gb.bindings = outer
    return seq, Val(var, a.dims, a.dt, lo, hi, exact)


def _interval(op: str, lo: float, hi: float, exact: bool) -> tuple[float, float, bool]:
    """The interval of a unary chain operator's results, and whether they are exact."""
    import math

    if op == "negative":
        return -hi, -lo, exact
    if op == "abs":
        return 0.0, max(abs(lo), abs(hi)), exact
    if op == "nn.relu":
        return max(0.0, lo), max(0.0, hi), exact
    return math.tanh(max(lo, -20.0)), math.tanh(min(hi, 20.0)), False
