"""The associative reductions rfactor can split, recognised from a block's body and init.

A reduction block folds one element per reduction point into a state held in buffers. rfactor
needs, of its reducer: the state buffers, their identity (the init of a partial state), and the
merge of two states (the write-back of the partials). Two kinds:

- **binary**: `X[s] = X[s] op v` with op one of +, *, max, min; one state buffer.
- **softmax merge** (online softmax, as in FlashAttention): the state is a running maximum
  `M[s]`, a running sum `L[s]` and an accumulator `O[s, d]` (one row over an inner loop of the
  body), and the element a logit x with a row v; the body computes x (any statements that do
  not touch the state), then

      m_new = T.max(M[s], x)
      for d in range(D):
          O[s, d] = O[s, d] * T.exp(M[s] - m_new) + T.exp(x - m_new) * v(d)
      L[s] = L[s] * T.exp(M[s] - m_new) + T.exp(x - m_new)
      M[s] = m_new

  (`exp` may be `T.fast_exp`; the two products may be written either way round). Merging two
  states (M1, L1, O1) and (M2, L2, O2) is the same update with x = M2, weights L2 and rows O2,
  which is associative and commutative; the identity is (lowest float, 0, 0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DType
from tirc.ir.expr import BinOp, BufferLoad, Call, FloatImm, IntImm, PrimExpr, Var, binop, const
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.stmt import Allocate, BufferStore, For, LetStmt, SeqStmt, Stmt, seq
from tirc.ir.structural import same_expr
from tirc.ir.visitor import Mutator, any_node, post_order_visit

Partial = Callable[[BufferLoad], PrimExpr]


@dataclass(frozen=True)
class Reduction:
    """A matched reduction: its state buffers, their identities and how two states merge."""

    kind: str
    states: tuple[Buffer, ...]
    identity: Stmt                    # the state set to the reducer's identity
    merge: Callable[[Partial], Stmt]  # the state merged with the partial one `partial(load)`


def binary_identity(op: str, dt: DType) -> PrimExpr:
    """The identity of +, *, max, min in `dt`."""
    if op == "add":
        return const(0, dt)
    if op == "mul":
        return const(1, dt)
    import numpy as np  # only for a max or min reduction: most compiles never load it

    hi = op == "min"
    if dt.is_float:
        top = float(np.finfo(dt.numpy_name()).max)
        return FloatImm(top if hi else -top, dt)
    info = np.iinfo(dt.numpy_name())
    return IntImm(int(info.max if hi else info.min), dt)


def match_reduction(blk: Any) -> Reduction | None:
    """The reduction a block performs, or None when it is none of the known kinds (its init,
    if any, must set the state buffers it folds into)."""
    red = _binary(blk) or _softmax_merge(blk)
    if red is None or blk.init is None:
        return red
    written: set[Buffer] = set()
    post_order_visit(blk.init, lambda n: written.add(n.buffer)
                     if isinstance(n, BufferStore) else None)
    return red if written == set(red.states) else None


# ---- binary ---------------------------------------------------------------------------------


def _binary(blk: Any) -> Reduction | None:
    body, init = blk.body, blk.init
    if not isinstance(body, BufferStore):
        return None
    if init is not None and not (isinstance(init, BufferStore) and init.buffer is body.buffer
                                 and same_expr(init.indices, body.indices)):
        return None
    v = body.value
    if not (isinstance(v, BinOp) and v.op in ("add", "mul", "max", "min")):
        return None
    buf = body.buffer
    if not any(_is_state(x, buf, body.indices) for x in (v.a, v.b)):
        return None
    here = BufferLoad(buf, body.indices, buf.dtype)

    def merge(partial: Partial) -> Stmt:
        return BufferStore(buf, binop(v.op, here, partial(here)), body.indices)

    identity = BufferStore(buf, binary_identity(v.op, buf.dtype), body.indices)
    return Reduction(v.op, (buf,), identity, merge)


def _is_state(e: PrimExpr, buf: Buffer, idx: tuple[PrimExpr, ...]) -> bool:
    return isinstance(e, BufferLoad) and e.buffer is buf and same_expr(e.indices, idx)


# ---- softmax merge --------------------------------------------------------------------------


def _tail(body: Stmt) -> LetStmt | None:
    """The `m_new = T.max(M[s], x)` binding that ends the body (after any prefix: statements,
    let bindings, local allocations)."""
    while True:
        if isinstance(body, SeqStmt) and body.seq:
            body = body.seq[-1]
        elif isinstance(body, LetStmt) and isinstance(body.value, BinOp) and \
                body.value.op == "max" and isinstance(body.value.a, BufferLoad):
            return body
        elif isinstance(body, (LetStmt, Allocate)):
            body = body.body
        else:
            return None


def _exp_of(e: PrimExpr) -> tuple[str, PrimExpr] | None:
    """(exp or fast_exp, its argument)."""
    if isinstance(e, Call) and e.op in ("exp", "fast_exp") and len(e.args) == 1:
        return e.op, e.args[0]
    return None


def _scaled(e: PrimExpr, state: BufferLoad | None, m: BufferLoad, m_new: Var
            ) -> tuple[str, PrimExpr | None, PrimExpr] | None:
    """`e` as `state * exp(M - m_new) + exp(x - m_new) [* w]`: (exp op, w or None, x)."""
    if not (isinstance(e, BinOp) and e.op == "add"):
        return None
    for kept, added in ((e.a, e.b), (e.b, e.a)):
        if not (isinstance(kept, BinOp) and kept.op == "mul"):
            continue
        for st, sc in ((kept.a, kept.b), (kept.b, kept.a)):
            ex = _exp_of(sc)
            if state is not None and not same_expr(st, state):
                continue
            if ex is None or not _is_diff(ex[1], m, m_new):
                continue
            term = _weighted(added, ex[0], m_new)
            if term is not None:
                return ex[0], term[0], term[1]
    return None


def _is_diff(e: PrimExpr, a: PrimExpr, m_new: Var) -> bool:
    return isinstance(e, BinOp) and e.op == "sub" and same_expr(e.a, a) and e.b is m_new


def _weighted(e: PrimExpr, op: str, m_new: Var) -> tuple[PrimExpr | None, PrimExpr] | None:
    """`exp(x - m_new)` or `exp(x - m_new) * w` (either order): (w or None, x)."""
    ex = _exp_of(e)
    if ex is not None and ex[0] == op and isinstance(ex[1], BinOp) and ex[1].op == "sub" \
            and ex[1].b is m_new:
        return None, ex[1].a
    if isinstance(e, BinOp) and e.op == "mul":
        for f, w in ((e.a, e.b), (e.b, e.a)):
            inner = _weighted(f, op, m_new)
            if inner is not None and inner[0] is None:
                return w, inner[1]
    return None


def _softmax_merge(blk: Any) -> Reduction | None:
    let = _tail(blk.body)
    if let is None:
        return None
    m_load, x = let.value.a, let.value.b  # type: ignore[attr-defined]
    m_new = let.var
    stmts = list(let.body.seq) if isinstance(let.body, SeqStmt) else [let.body]
    if len(stmts) != 3:
        return None
    m_store = stmts[-1]
    if not (isinstance(m_store, BufferStore) and m_store.buffer is m_load.buffer and
            same_expr(m_store.indices, m_load.indices) and m_store.value is m_new):
        return None
    loop = next((s for s in stmts[:2] if isinstance(s, For)), None)
    l_store = next((s for s in stmts[:2] if isinstance(s, BufferStore)), None)
    if loop is None or l_store is None or not isinstance(loop.body, BufferStore):
        return None
    o_store = loop.body
    s_idx = m_load.indices
    l_load = BufferLoad(l_store.buffer, l_store.indices, l_store.buffer.dtype)
    o_load = BufferLoad(o_store.buffer, o_store.indices, o_store.buffer.dtype)
    if not same_expr(l_store.indices, s_idx) or \
            not same_expr(o_store.indices, (*s_idx, loop.loop_var)):
        return None
    lm = _scaled(l_store.value, l_load, m_load, m_new)
    om = _scaled(o_store.value, o_load, m_load, m_new)
    if lm is None or om is None or lm[1] is not None or om[1] is None or \
            lm[0] != om[0] or not same_expr(lm[2], x) or not same_expr(om[2], x):
        return None
    states = (m_load.buffer, l_store.buffer, o_store.buffer)
    if len(set(states)) != 3 or _touches_state(blk.body, let, states) or \
            any_node(om[1], lambda n: getattr(n, "buffer", None) in states):
        return None
    op = lm[0]
    dt = m_load.buffer.dtype

    def merge(partial: Partial) -> Stmt:
        mn = Var(m_new.name, m_new.dtype)
        pm = partial(m_load)
        keep = Call(op, (binop("sub", m_load, mn),), dt)
        take = Call(op, (binop("sub", pm, mn),), dt)
        d = Var(loop.loop_var.name, loop.loop_var.dtype)
        o_at = BufferLoad(o_store.buffer, (*s_idx, d), o_store.buffer.dtype)
        o_new = binop("add", binop("mul", o_at, keep), binop("mul", take, partial(o_at)))
        l_new = binop("add", binop("mul", l_load, keep), binop("mul", take, partial(l_load)))
        return LetStmt(mn, binop("max", m_load, pm), seq(
            For(d, loop.min, loop.extent, loop.kind, BufferStore(o_store.buffer, o_new,
                                                                 o_at.indices)),
            BufferStore(l_store.buffer, l_new, s_idx), BufferStore(m_load.buffer, mn, s_idx)))

    d0 = Var(loop.loop_var.name, loop.loop_var.dtype)
    identity = seq(BufferStore(states[0], binary_identity("max", dt), s_idx),
                   BufferStore(states[1], const(0, states[1].dtype), s_idx),
                   For(d0, loop.min, loop.extent, loop.kind,
                       BufferStore(states[2], const(0, states[2].dtype), (*s_idx, d0))))
    return Reduction("softmax_merge", states, identity, merge)


def _touches_state(body: Stmt, tail: LetStmt, states: tuple[Buffer, ...]) -> bool:
    """Whether the element (the statements before the tail, and the logit) reads or writes a
    state buffer."""
    def is_state(n: Any) -> bool:
        return getattr(n, "buffer", None) in states

    return any_node(tail.value.b, is_state) or any_node(_without(body, tail), is_state)  # type: ignore[attr-defined]


def _without(body: Stmt, tail: LetStmt) -> Stmt:
    """The body with the tail (the state update) left out."""
    class _Drop(Mutator):
        def visit_LetStmt(self, s: LetStmt) -> Any:
            return seq() if s is tail else self.generic_visit(s)

    return _Drop().visit(body)
