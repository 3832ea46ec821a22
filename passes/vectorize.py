"""vectorize: `T.vectorized` loops become vector code with ramps and broadcasts.

The loop variable becomes `T.Ramp(base, 1, lanes)`; arithmetic on it stays a ramp while it is
affine (`i * 4 + j` -> `T.Ramp(j + base * 4, 4, lanes)`), so each load and store index becomes a
ramp (stride 1: contiguous; another stride, constant or symbolic: strided) and the access a
vector access of `dtype x lanes`. Values that don't depend on the loop variable stay scalar
and are broadcast where they meet vector values. Lets bound to vector values get new vector
variables.

Lanes: the extent when it is a constant no bigger than the maximum lanes, else the maximum.
The maximum is the option `max-lanes` (`vectorize{max-lanes=N}`, or `--pass-config
vectorize.max-lanes=N`), else the target's vector register bits
over the widest element accessed in the loop (512-bit znver5 and float32: 16), else 16.
A larger or symbolic extent is split into a serial loop over whole vectors (`i_o`) and a tail
for the remaining `extent % lanes` iterations: for a constant extent one narrower vector of
that many lanes (none when it divides; a 56-wide row of float32 is 3 x 16 lanes and 8 lanes,
not 8 scalar iterations, which cost as much as 8 vectors), for a symbolic one a scalar tail
loop (`i_t`). A symbolic extent that is not known to be non-negative (it is when it
is built from the parameter buffers' shape variables) is clamped with `T.max(extent, 0)`.

An inner loop whose bounds don't depend on the loop variable stays a loop around the vector
code of its body (an interchange, allowed because the vectorized iterations are independent;
an inner parallel loop runs serially there).

A body that is a single `if` whose condition holds on an interval of the loop variable (the
`T.where` of a split, after lower-blocks) becomes, per vector: `if <first and last lanes
pass>: <vector code> else: <the scalar iterations>`.

A body that cannot become vector code is left as a serial loop, with a note
`vectorize: loop i in f left scalar: <reason>` (shown by --print-changed): while loops, inner
loops whose bounds depend on the loop variable, allocations, other `if` statements whose
condition depends on the loop variable (they would need masked accesses), stores to one
address in every iteration (reductions into an accumulator), accesses whose index is not
affine in the loop variable (gathers, scatters) or that depend on it in two dimensions, calls
other than math intrinsics, and bodies that already hold vector code. As in TVM, marking a
loop vectorized promises its iterations are independent; dependences through memory between
iterations are not checked.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.arith import construct
from tirc.ir.expr import (
    BinOp,
    BufferLoad,
    Call,
    Cast,
    IRTypeError,
    PrimExpr,
    Var,
    binop,
    cast,
    const,
)
from tirc.ir.function import PrimFunc
from tirc.ir.intrinsics import PER_LANE_MATH
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.loop_jumps import contains_loop_jump
from tirc.ir.module import IRModule
from tirc.ir.rebind import fresh_copy, rebind, used_vars
from tirc.ir.stmt import BufferStore, For, ForKind, IfThenElse, Stmt, seq
from tirc.ir.target import target_vector_bits
from tirc.ir.visitor import Mutator, post_order_visit
from tirc.passes.pass_base import PassContext, PrimFuncPass, at_least, option
from tirc.passes.vector_body import BodyVectorizer, NotVectorizable, interval_condition

# Lanes of one vector when neither the option nor the target says.
DEFAULT_MAX_LANES = 16


def _widest_element_bits(s: Stmt) -> int:
    bits = [0]

    def check(n: Any) -> None:
        if isinstance(n, (BufferLoad, BufferStore)):
            bits.append(n.buffer.dtype.element().bytes * 8)  # bool counts as a byte

    post_order_visit(s, check)
    return max(bits) or 32


def _nonneg(e: PrimExpr, size_vars: set[Var]) -> bool:
    """True when `e` is provably >= 0: constants, shape variables, and sums/products of them."""
    if construct.is_int_const(e):
        return e.value >= 0
    if isinstance(e, Var):
        return e in size_vars
    if isinstance(e, Cast):
        return e.dtype.is_int and e.dtype.bits >= e.value.dtype.bits and _nonneg(e.value,
                                                                                 size_vars)
    if isinstance(e, BinOp) and e.op in ("add", "mul", "min", "max"):
        return _nonneg(e.a, size_vars) and _nonneg(e.b, size_vars)
    if isinstance(e, BinOp) and e.op in ("floordiv", "floormod"):
        return _nonneg(e.a, size_vars) and construct.is_int_const(e.b) and e.b.value > 0
    return False


def _per_lane_math(body: Stmt) -> list[str]:
    """The math calls in `body` that a CPU computes one lane at a time (PER_LANE_MATH)."""
    found: set[str] = set()
    post_order_visit(body, lambda n: found.add(n.op) if isinstance(n, Call) and
                     n.op in PER_LANE_MATH else None)
    return sorted(found)


@dataclass
class _LoopVectorizer(Mutator):
    """Vectorizes every vectorized loop of one function, innermost first."""

    ctx: PassContext
    func_name: str
    max_lanes: int | None
    target_bits: int | None
    size_vars: set[Var]
    cpu: bool

    def lanes_limit(self, body: Stmt) -> int:
        if self.max_lanes is not None:
            return self.max_lanes
        if self.target_bits is not None:
            return max(1, self.target_bits // _widest_element_bits(body))
        return DEFAULT_MAX_LANES

    def visit_For(self, s: For) -> Any:
        loop = self.generic_visit(s)
        if loop.kind != ForKind.VECTORIZED:
            return loop
        if contains_loop_jump(loop.body):
            self.ctx.note(f"vectorize: loop {loop.loop_var.name} in {self.func_name} left "
                          "scalar: its body breaks or continues a loop")
            return loop.replace(kind=ForKind.SERIAL)
        per_lane = _per_lane_math(loop.body) if self.cpu else []
        if per_lane:
            self.ctx.note(f"vectorize: loop {loop.loop_var.name} in {self.func_name} left "
                          f"scalar: {', '.join(per_lane)} run one lane at a time on the CPU "
                          f"(libm), and vector code around them only adds lane moves")
            return loop.replace(kind=ForKind.SERIAL)
        try:
            return self.vectorize(loop)
        except (NotVectorizable, IRTypeError) as why:
            self.ctx.note(f"vectorize: loop {loop.loop_var.name} in {self.func_name} left "
                          f"scalar: {why}")
            return loop.replace(kind=ForKind.SERIAL)

    def chunk(self, loop: For, base: PrimExpr, lanes: int) -> Stmt:
        """The vector code for iterations base .. base + lanes - 1 of `loop`.

        A body that is one `if` on a condition whose lanes form an interval (a conjunction of
        comparisons between affine functions of the loop variable, like the `T.where` of a
        split) becomes: vector code when the first and the last lane pass, else the scalar
        iterations of the chunk.
        """
        v, body = loop.loop_var, loop.body
        if isinstance(body, IfThenElse) and body.else_case is None:
            probe = BodyVectorizer(v, base, lanes)
            if interval_condition(probe.expr(body.condition)):
                last = construct.add(base, const(lanes - 1, v.dtype))
                all_lanes = binop("and", rebind(body.condition, {v: base}),
                                  rebind(body.condition, {v: last}))
                vs = Var(f"{v.name}_s", v.dtype)
                scalar = For(vs, const(0, v.dtype), const(lanes, v.dtype), ForKind.SERIAL,
                             fresh_copy(body, {v: construct.add(base, vs)}), span=loop.span)
                return IfThenElse(construct.fold(all_lanes), probe.stmt(body.then_case), scalar,
                                  span=body.span)
        return BodyVectorizer(v, base, lanes).stmt(body)

    def vectorize(self, loop: For) -> Stmt:
        v = loop.loop_var
        dt = v.dtype
        limit = self.lanes_limit(loop.body)
        lo, extent = cast(dt, loop.min), cast(dt, loop.extent)
        if construct.is_int_const(extent):
            n = extent.value
            if n <= 0:
                return loop.replace(kind=ForKind.SERIAL)
            if n == 1:
                return construct.fold(rebind(loop.body, {v: lo}))
            if n <= limit:
                return self.chunk(loop, lo, n)
            chunks: PrimExpr = const(n // limit, dt)
            rest: PrimExpr = const(n % limit, dt)
        else:
            if not _nonneg(extent, self.size_vars):
                extent = binop("max", extent, const(0, dt))
            chunks = construct.build_binop("floordiv", extent, const(limit, dt))
            rest = construct.build_binop("floormod", extent, const(limit, dt))
        if construct.is_int_const(chunks, 1):
            vector_part: Stmt = self.chunk(loop, lo, limit)
        else:
            vo = Var(f"{v.name}_o", dt)
            base = construct.add(lo, construct.mul(vo, const(limit, dt)))
            vector_part = For(vo, const(0, dt), chunks, ForKind.SERIAL,
                              self.chunk(loop, base, limit),
                              annotations=loop.annotations, span=loop.span)
        if construct.is_int_const(rest, 0):
            return vector_part
        start = construct.add(lo, construct.mul(chunks, const(limit, dt)))
        if construct.is_int_const(rest):  # a constant tail: one narrower vector
            last = rest.value
            if last == 1:
                return seq(vector_part, construct.fold(fresh_copy(loop.body, {v: start})))
            # a copy of the body, so that what it defines is not defined twice
            return seq(vector_part, self.chunk(loop.replace(body=fresh_copy(loop.body, {})),
                                               start, last))
        vt = Var(f"{v.name}_t", dt)
        tail_body = fresh_copy(loop.body, {v: construct.add(start, vt)})
        tail = For(vt, const(0, dt), rest, ForKind.SERIAL, tail_body,
                   annotations=loop.annotations, span=loop.span)
        return seq(vector_part, tail)


@dataclass(frozen=True)
class Vectorize(PrimFuncPass):
    """Vectorized loops to ramps, broadcasts and vector accesses; a tail when needed."""

    name = "vectorize"
    description = "turn vectorized loops into vector code (ramps, broadcasts, tails)"
    optional = True  # an optimisation (see Pass.optional)

    max_lanes: int | None = option(None, config="vectorize.max-lanes", check=at_least(1),
                                   doc="most lanes of one vector (default: from the target, "
                                       "else 16)")

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        size_vars = {v for b in func.buffer_map.values() for v in used_vars(b.shape)}
        cpu = getattr(ctx.target, "kind", "llvm") == "llvm"
        vectorizer = _LoopVectorizer(ctx, func.name, self.max_lanes,
                                     target_vector_bits(ctx.target), size_vars, cpu)
        body = vectorizer.visit(func.body)
        return func if body is func.body else func.replace(body=body)  # type: ignore[return-value]
