"""TVM's lowered cross-thread reduction, written by hand inside thread loops:

    T.attr(T.comm_reducer(lambda x, y: x + y, [T.float32(0)]), "reduce_scope", 0)
    T.tvm_thread_allreduce(T.uint32(1), value, cond, result[0], tx)

Every thread of a GPU block reaching it gives `value` (the identity where `cond` is false);
the threads that differ only in the listed thread variables (`tx`) combine theirs, and each
of them receives the result in `result`. It is read as the shared-memory tree TVM's
LowerThreadAllreduce also emits (a slot per thread, halving steps between barriers), so the
GPU interpreter and the backend run it as written. The enclosing threadIdx loops must have
constant extents; one value per reduction (`size` 1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tirc.frontend import syntax as S
from tirc.frontend.signature import Sig, check_call
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var, binop, const, if_then_else
from tirc.ir.gpu.threads import THREAD_TAGS, barrier
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.stmt import Allocate, BufferStore, ForKind, IfThenElse, Stmt, seq
from tirc.ir.visitor import substitute

if TYPE_CHECKING:
    from tirc.frontend.builder_stmt import LoopBuilder, Wrapper


@dataclass
class Reducer:
    """`T.comm_reducer(lambda x, y: combine, [identity])` of one value."""

    x: Var
    y: Var
    combine: PrimExpr
    identity: PrimExpr

    def apply(self, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        """`combine` of `a` and `b`."""
        return substitute(self.combine, {self.x: a, self.y: b})


def reducer_attr(lb: LoopBuilder, call: S.Call) -> Wrapper:
    """`T.attr(T.comm_reducer(...), "reduce_scope", ...)`: the reducer the next
    `T.tvm_thread_allreduce` uses (the attribute itself leaves nothing)."""
    a = check_call(lb.ctx, call, "T.attr", Sig(3, 3))
    key = lb.eb.str_literal(a.pos[1], "the attribute key")
    red = a.pos[0]
    assert isinstance(red, S.Call)
    if key != "reduce_scope":
        lb.ctx.unsupported(f"T.attr of a T.comm_reducer with key \"{key}\" (only "
                           "\"reduce_scope\")", a.pos[1].span)
    r = check_call(lb.ctx, red, "T.comm_reducer", Sig(2, 2))
    fn, ids = r.pos
    if not isinstance(ids, (S.List, S.Tuple)) or not ids.elts:
        lb.ctx.error("T.comm_reducer takes a list of identity values second", ids.span)
    if len(ids.elts) != 1:
        lb.ctx.unsupported("T.comm_reducer of several values", ids.span)
    identity = lb.eb.expr(ids.elts[0])
    if not isinstance(fn, S.Lambda) or len(fn.params) != 2:
        lb.ctx.error("T.comm_reducer takes `lambda x, y: ...` first (one value: two "
                     "parameters)", fn.span)
    x, y = (Var(p.id, identity.dtype, span=p.span) for p in fn.params)
    with lb.scope.frame():
        lb.scope.define(x.name, x, fn.params[0].span)
        lb.scope.define(y.name, y, fn.params[1].span)
        combine = lb.eb.expr(fn.body)
    if combine.dtype != identity.dtype:
        lb.ctx.error(f"the reducer combines to {combine.dtype}, its identity is "
                     f"{identity.dtype}", fn.body.span)
    lb.reducer = Reducer(x, y, combine, identity)
    return lambda body: body


def thread_allreduce(lb: LoopBuilder, call: S.Call) -> Stmt:
    """`T.tvm_thread_allreduce(size, value, cond, result, *threads)` as the tree in shared
    memory (see the module docstring)."""
    ctx = lb.ctx
    a = check_call(ctx, call, "T.tvm_thread_allreduce", Sig(5, None, ("dtype",)))
    red: Reducer | None = lb.reducer
    lb.reducer = None
    if red is None:
        ctx.error("T.tvm_thread_allreduce needs T.attr(T.comm_reducer(...), \"reduce_scope\", "
                  "0) right before it", call.span)
    if lb.eb.int_literal(_plain(a.pos[0]), "the number of reduced values") != 1:
        ctx.unsupported("T.tvm_thread_allreduce of several values", a.pos[0].span)
    value = lb.eb.expr(a.pos[1])
    cond = lb.eb.condition(a.pos[2], "the condition of T.tvm_thread_allreduce")
    result = lb.eb.expr(a.pos[3])
    if not isinstance(result, BufferLoad):
        ctx.error("the result of T.tvm_thread_allreduce is a buffer element (`t[0]`)",
                  a.pos[3].span)
    if value.dtype != red.identity.dtype or result.dtype != value.dtype:
        ctx.error(f"T.tvm_thread_allreduce of a {value.dtype} value into {result.dtype} with a "
                  f"{red.identity.dtype} reducer", call.span)
    loops = _thread_loops(lb, call)
    reduced: list[Any] = []
    for node in a.pos[4:]:
        v = lb.eb.expr(node)
        v = lb.block_bindings.get(v, v)  # a block's variable bound to the thread loop's
        head = next((h for h in loops.values() if h.var is v), None)
        if head is None:
            ctx.error("T.tvm_thread_allreduce reduces over the variables of threadIdx loops "
                      "around it", node.span)
        reduced.append(head)
    others = [h for h in loops.values() if all(h is not r for r in reduced)]
    size = 1
    for h in reduced:
        size *= h.extent.value
    group = _linear(others)
    slot = binop("add", binop("mul", group, const(size, group.dtype)), _linear(reduced))
    total = size
    for h in others:
        total *= h.extent.value
    buf = Buffer("red_buf", (const(total, "int32"),), value.dtype,
                 data=Var("red_buf", HANDLE, span=call.span), scope="shared")
    rank = _linear(reduced)
    steps: list[Stmt] = [BufferStore(buf, if_then_else(cond, value, red.identity), (slot,)),
                         barrier(call.span)]
    half = 1
    while half * 2 < size:
        half *= 2
    while half >= 1 and size > 1:
        ok = binop("and", binop("lt", rank, const(half, rank.dtype)),
                   binop("lt", binop("add", rank, const(half, rank.dtype)),
                         const(size, rank.dtype)))
        partner = binop("add", slot, const(half, slot.dtype))
        combined = red.apply(buf.vload(slot), buf.vload(partner))
        steps += [IfThenElse(ok, BufferStore(buf, combined, (slot,))), barrier(call.span)]
        half //= 2
    base = binop("mul", group, const(size, group.dtype))
    steps += [BufferStore(result.buffer, buf.vload(base), result.indices), barrier(call.span)]
    return Allocate(buf, seq(*steps), span=call.span)


def _plain(node: S.Expr) -> S.Expr:
    """`T.uint32(1)` as `1` (TVM prints the count so)."""
    if isinstance(node, S.Call) and len(node.args) == 1 and not node.keywords:
        return node.args[0]
    return node


def _thread_loops(lb: LoopBuilder, call: S.Call) -> dict[str, Any]:
    """The threadIdx loops around the call, by tag; each of constant extent."""
    out = {}
    for tag in THREAD_TAGS:
        head = lb.vthreads.get(tag)
        if head is None or head.kind != ForKind.THREAD_BINDING:
            continue
        if not isinstance(head.extent, IntImm):
            lb.ctx.unsupported(f"T.tvm_thread_allreduce inside a {tag} loop of symbolic "
                               "extent", call.span)
        out[tag] = head
    return out


def _linear(heads: list[Any]) -> PrimExpr:
    """The row-major index of the threads `heads` (x fastest), from 0."""
    index: PrimExpr = const(0, "int32")
    for h in reversed(heads):
        pos = binop("sub", h.var, h.min)
        index = binop("add", binop("mul", index, const(h.extent.value, index.dtype)), pos)
    return index
