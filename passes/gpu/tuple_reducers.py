"""The reductions over several state buffers that a cross-thread reduction can lower.

A block may fold one element into several states together, as TVM's `comm_reducer` over a
tuple: LegalizeOps' argmax/argmin keep an index and a value, its group and instance norms a sum
and a sum of squares. Its body binds the new states with lets and stores them:

    with T.init(): I[s] = -1; V[s] = lowest
    i_new = T.Select(V[s] > x or V[s] == x and I[s] < k, I[s], k)
    v_new = T.Select(V[s] > x, V[s], x)
    I[s] = i_new; V[s] = v_new

Known kinds, matched as TVM's reducer registry matches them (the shape of the combiner, with
the state on the left and the element on the right):
- **independent**: each state `X_j[s] op_j e_j` with op one of +, *, max, min, the elements
  reading no state (a sum and a sum of squares);
- **arg-reduction**: an index and a value, `Select(x_v CMP y_v or x_v == y_v and x_i ICMP y_i,
  x_i, y_i)` and `Select(x_v CMP y_v, x_v, y_v)` with CMP `>` (argmax) or `<` (argmin) and
  ICMP `<` (the first index of the extreme value) or `>` (the last): topi's argmax/argmin
  combiner, associative and commutative because ties are broken by the index.
A single binary reduction (`X[s] = X[s] op v`) is the independent kind with one state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.expr import BinOp, BufferLoad, PrimExpr, Select, binop, const, select
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.stmt import BufferStore, LetStmt, SeqStmt, Stmt
from tirc.ir.structural import same_expr
from tirc.ir.visitor import any_node, substitute
from tirc.passes.schedule.reducers import binary_identity

Combine = Callable[[Sequence[PrimExpr], Sequence[PrimExpr]], list[PrimExpr]]


@dataclass(frozen=True)
class TupleReduction:
    """A matched reduction: state buffers and their indices, the inits, the element folded
    in at each point (in the block's variables), the identities and the combiner."""

    states: tuple[Buffer, ...]
    indices: tuple[tuple[PrimExpr, ...], ...]
    inits: tuple[PrimExpr, ...]
    elements: tuple[PrimExpr, ...]
    identities: tuple[PrimExpr, ...]
    combine: Combine  # (left states, right states) -> merged states


def _stores(s: Stmt | None) -> list[BufferStore] | None:
    """The stores of a statement made only of stores (a sequence or one)."""
    if isinstance(s, BufferStore):
        return [s]
    if isinstance(s, SeqStmt) and all(isinstance(x, BufferStore) for x in s.seq):
        return list(s.seq)  # type: ignore[arg-type]
    return None


def _updates(body: Stmt) -> list[BufferStore] | None:
    """The body's stores with the lets before them substituted into the stored values."""
    binds: dict[Any, PrimExpr] = {}
    while isinstance(body, LetStmt):
        binds[body.var] = substitute(body.value, binds) if binds else body.value
        body = body.body
    stores = _stores(body)
    if stores is None:
        return None
    for k, st in enumerate(stores):  # a store reading a state stored before it: not a tuple
        earlier = {x.buffer for x in stores[:k]}
        if earlier and any_node(st.value, lambda n, done=earlier: isinstance(n, BufferLoad)
                                and n.buffer in done):
            return None
    return [BufferStore(s.buffer, substitute(s.value, binds) if binds else s.value, s.indices)
            for s in stores]


def match_tuple_reduction(blk: Any) -> TupleReduction | None:
    """The reduction of a block with an init whose body stores each state once, or None."""
    inits, updates = _stores(blk.init), _updates(blk.body)
    if inits is None or updates is None or len(inits) != len(updates):
        return None
    states = tuple(u.buffer for u in updates)
    if len(set(states)) != len(states):
        return None
    init_of = {i.buffer: i for i in inits}
    for u in updates:
        i = init_of.get(u.buffer)
        if i is None or not same_expr(i.indices, u.indices):
            return None
    indices = tuple(u.indices for u in updates)

    def is_state(e: Any, j: int) -> bool:
        return isinstance(e, BufferLoad) and e.buffer is states[j] and \
            same_expr(e.indices, indices[j])

    stray = lambda n: isinstance(n, BufferLoad) and n.buffer in states and \
        not is_state(n, states.index(n.buffer))  # noqa: E731
    if any(any_node(u.value, stray) for u in updates):
        return None  # a state read at another element
    loads = [BufferLoad(b, idx, b.dtype) for b, idx in zip(states, indices)]
    found = _independent(updates, loads, is_state) or _arg(updates, loads, is_state)
    if found is None:
        return None
    elements, identities, combine = found
    return TupleReduction(states, indices, tuple(init_of[b].value for b in states),
                          tuple(elements), tuple(identities), combine)


Found = tuple[list[PrimExpr], list[PrimExpr], Combine]


def _independent(updates: list[BufferStore], loads: list[BufferLoad],
                 is_state: Callable[[Any, int], bool]) -> Found | None:
    """Each state folded on its own: `X_j = X_j op_j e_j`, no state read by an element."""
    ops, elements = [], []
    for j, u in enumerate(updates):
        v = u.value
        if not (isinstance(v, BinOp) and v.op in ("add", "mul", "max", "min")):
            return None
        other = v.b if is_state(v.a, j) else v.a if is_state(v.b, j) else None
        if other is None or any_node(other, lambda n: isinstance(n, BufferLoad) and
                                     any(n.buffer is x.buffer for x in loads)):
            return None
        ops.append(v.op)
        elements.append(other)

    def combine(a: Sequence[PrimExpr], b: Sequence[PrimExpr]) -> list[PrimExpr]:
        return [binop(op, x, y) for op, x, y in zip(ops, a, b)]

    return elements, [binary_identity(op, u.buffer.dtype) for op, u in zip(ops, updates)], \
        combine


def _arg_combiner(cmp: str, icmp: str, at_index: int) -> Combine:
    """topi's argmax (`cmp` "gt") / argmin ("lt") combiner over (index, value) states, the
    index at `at_index` (0 or 1) of the tuple; ties go to the `icmp` index."""
    at_value = 1 - at_index

    def combine(a: Sequence[PrimExpr], b: Sequence[PrimExpr]) -> list[PrimExpr]:
        better = binop(cmp, a[at_value], b[at_value])
        tie = binop("and", binop("eq", a[at_value], b[at_value]),
                    binop(icmp, a[at_index], b[at_index]))
        out = [a[0], a[1]]
        out[at_index] = select(binop("or", better, tie), a[at_index], b[at_index])
        out[at_value] = select(better, a[at_value], b[at_value])
        return out

    return combine


def _arg(updates: list[BufferStore], loads: list[BufferLoad],
         is_state: Callable[[Any, int], bool]) -> Found | None:
    """An (index, value) pair folded by topi's argmax/argmin combiner (either order)."""
    if len(updates) != 2:
        return None
    for at_index in (0, 1):
        at_value = 1 - at_index
        vu, iu = updates[at_value].value, updates[at_index].value
        if not (isinstance(vu, Select) and isinstance(iu, Select)
                and isinstance(vu.condition, BinOp) and vu.condition.op in ("gt", "lt")
                and is_state(vu.true_value, at_value) and is_state(iu.true_value, at_index)):
            continue
        elements = [loads[0], loads[1]]
        elements[at_value], elements[at_index] = vu.false_value, iu.false_value
        if any(any_node(e, lambda n: isinstance(n, BufferLoad) and
                        any(n.buffer is x.buffer for x in loads)) for e in elements):
            continue
        for icmp in ("lt", "gt"):
            combine = _arg_combiner(vu.condition.op, icmp, at_index)
            want = combine(loads, elements)
            if all(same_expr(w, u.value) for w, u in zip(want, updates)):
                ids = [loads[0], loads[1]]
                value_dt = updates[at_value].buffer.dtype
                ids[at_value] = binary_identity("max" if vu.condition.op == "gt" else "min",
                                                value_dt)
                ids[at_index] = const(-1, updates[at_index].buffer.dtype)
                return elements, ids, combine
    return None
