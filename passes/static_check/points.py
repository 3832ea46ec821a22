"""Every iteration of a small loop nest at once: index expressions evaluated over all points.

When the loops an index depends on have constant bounds (or bounds over outer loops of the
same nest) and together at most MAX_POINTS iterations, the exact set of values the index takes
is known by evaluating it with numpy over every point; the conditions it runs under mask the
points out. That decides "does this access leave the buffer" exactly, with a witness, where
interval bounds would only over-approximate (`(i * 7) % 32` over 32 values of i). numpy is
imported when points are first enumerated, not with this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tirc.ir import intrinsics as intrin
from tirc.ir.dtype import DType, no_overflow
from tirc.ir.expr import BinOp, Call, Cast, IntImm, Let, Not, PrimExpr, Select, Var
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.visitor import post_order_visit
from tirc.passes.static_check.sites import Loop

if TYPE_CHECKING:
    import numpy as np  # imported where points are enumerated: most compiles never load it

MAX_POINTS = 1 << 16


class NotEnumerable(Exception):
    """The expression or its loops cannot be evaluated over all points."""


@dataclass
class Points:
    """The iterations of some loops: each loop variable's value per point, and which points
    are real iterations (a loop whose extent depends on an outer one leaves holes)."""

    env: dict[Var, np.ndarray]
    valid: np.ndarray
    loops: list[Loop]

    def at(self, k: int) -> dict[str, int]:
        """The loop variables' values at point `k`, by name, outermost first."""
        return {lp.var.name: int(self.env[lp.var][k]) for lp in self.loops}


def free_vars(exprs: Sequence[PrimExpr]) -> set[Var]:
    """The variables `exprs` read, without those a `T.Let` inside them binds."""
    found: set[Var] = set()
    bound: set[Var] = set()

    def visit(n: object) -> None:
        if isinstance(n, Var):
            found.add(n)
        elif isinstance(n, Let):
            bound.add(n.var)

    for e in exprs:
        post_order_visit(e, visit)
    return found - bound


def relevant_loops(exprs: Sequence[PrimExpr], loops: Sequence[Loop]) -> list[Loop]:
    """The loops whose variables `exprs` use, with the loops their bounds use, outermost
    first."""
    need = free_vars(exprs)
    out: list[Loop] = []
    for lp in reversed(loops):
        if lp.var in need:
            out.append(lp)
            need |= free_vars([lp.min, lp.extent])
    return out[::-1]


def enumerate_points(exprs: Sequence[PrimExpr], loops: Sequence[Loop]) -> Points:
    """All iterations of the loops `exprs` depend on; NotEnumerable when an expression uses a
    variable that is not one of those loops' (a symbolic size) or there are too many."""
    chosen = relevant_loops(exprs, loops)
    vars_ = {lp.var for lp in chosen}
    if free_vars([*exprs, *(e for lp in chosen for e in (lp.min, lp.extent))]) - vars_:
        raise NotEnumerable("symbolic")
    import numpy as np

    env: dict[Var, np.ndarray] = {}
    valid = np.ones(1, dtype=bool)
    for lp in chosen:
        lo = np.broadcast_to(evaluate(lp.min, env, len(valid)), valid.shape)
        ext = np.broadcast_to(evaluate(lp.extent, env, len(valid)), valid.shape)
        top = int(ext[valid].max()) if valid.any() else 0
        if top <= 0:
            return Points({v: np.zeros(0, np.int64) for v in vars_}, np.zeros(0, bool), chosen)
        if len(valid) * top > MAX_POINTS:
            raise NotEnumerable("too many points")
        step = np.tile(np.arange(top, dtype=np.int64), len(valid))
        env = {v: np.repeat(a, top) for v, a in env.items()}
        env[lp.var] = np.repeat(lo, top) + step
        valid = np.repeat(valid, top) & (step < np.repeat(ext, top))
    return Points(env, valid, chosen)


# The numpy function of each binary operator evaluated elementwise.
_ARITH = {
    "add": "add", "sub": "subtract", "mul": "multiply", "min": "minimum", "max": "maximum",
    "eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
    "ge": "greater_equal", "and": "logical_and", "or": "logical_or",
}


def evaluate(e: PrimExpr, env: dict[Var, np.ndarray], n: int) -> np.ndarray:
    """`e` over the points (int64 or bool arrays, or scalars that broadcast)."""
    import numpy as np

    if isinstance(e, IntImm):
        if e.dtype.kind == "uint" and e.dtype.bits >= 64:
            raise NotEnumerable("uint64")  # as _wrap: its values need not fit int64 points
        return np.asarray(e.value, dtype=bool if e.dtype.is_bool else np.int64)
    if isinstance(e, Var):
        if e not in env:
            raise NotEnumerable(e.name)
        return env[e]
    if e.dtype.lanes != 1:
        raise NotEnumerable("vector")
    if isinstance(e, Cast) and (e.dtype.is_int or e.dtype.is_bool) and \
            (e.value.dtype.is_int or e.value.dtype.is_bool):
        v = evaluate(e.value, env, n)
        return v.astype(bool) if e.dtype.is_bool else _wrap(v.astype(np.int64), e.dtype)
    if isinstance(e, Not):
        return np.logical_not(evaluate(e.a, env, n))
    if isinstance(e, Let):
        return evaluate(e.body, {**env, e.var: evaluate(e.value, env, n)}, n)
    if isinstance(e, Select) or (isinstance(e, Call) and e.op == intrin.IF_THEN_ELSE):
        c, t, f = (e.condition, e.true_value, e.false_value) if isinstance(e, Select) \
            else e.args
        return np.where(evaluate(c, env, n), evaluate(t, env, n), evaluate(f, env, n))
    if isinstance(e, BinOp) and (e.a.dtype.is_int or e.a.dtype.is_bool):
        a, b = evaluate(e.a, env, n), evaluate(e.b, env, n)
        if e.op in _ARITH:
            out = getattr(np, _ARITH[e.op])(a, b)
            return _wrap(out, e.dtype) if e.dtype.is_int else out
        if e.op in ("floordiv", "floormod", "truncdiv", "truncmod"):
            return _wrap(_division(e.op, a, b), e.dtype)
    raise NotEnumerable(type(e).__name__)


def _wrap(v: np.ndarray, dt: DType) -> np.ndarray:
    """Values of integer dtype `dt` as its arithmetic leaves them: int8, int16 and the unsigned
    types wrap around (int32 and int64 are taken not to overflow; uint64 does not fit the
    int64 points, which are then not enumerated)."""
    import numpy as np

    if no_overflow(dt):
        return v
    if dt.kind == "uint" and dt.bits >= 64:
        raise NotEnumerable("uint64")
    mask = (1 << dt.bits) - 1
    if dt.kind == "uint":
        return np.bitwise_and(v, mask)
    half = 1 << (dt.bits - 1)
    return np.bitwise_and(v + half, mask) - half


def _division(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division and modulo as the IR defines them (a zero divisor gives 0)."""
    import numpy as np

    safe = np.where(b == 0, 1, b)
    if op == "floordiv":
        out = np.floor_divide(a, safe)
    elif op == "floormod":
        out = np.mod(a, safe)
    else:
        q = np.abs(a) // np.abs(safe) * np.sign(a) * np.sign(safe)
        out = q if op == "truncdiv" else a - q * safe
    return np.where(b == 0, 0, out)
