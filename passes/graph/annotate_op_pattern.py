"""annotate-op-pattern: classify each loop function for fusion (TVM's AnnotateTIROpPattern).

The kind of a function is the largest over its blocks, from how each block's store indices
relate to its load indices: elementwise (same indices), broadcast (a subsequence), injective
(functions of the store's variables), reduction (reduce iteration variables), output-fusable
(a multiply-accumulate like matmul, or a reduction followed by an output block like softmax),
else opaque. The kind goes to `T.func_attr({"op_pattern": k})` with TVM's numbering.
"""

from __future__ import annotations

import dataclasses
import enum

from tirc.ir.attrs import OP_PATTERN
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import BinOp, BufferLoad, Cast, IntImm, PrimExpr, Select, Var
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.stmt import Block, BlockRealize, BufferStore, IterKind
from tirc.ir.visitor import post_order_visit
from tirc.passes.pass_base import PassContext, PrimFuncPass


class OpPattern(enum.IntEnum):
    """TVM's OpPatternKind: larger kinds fuse less."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_EWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


def _blocks(func: PrimFunc) -> list[Block]:
    found: list[Block] = []
    post_order_visit(func.body, lambda n: found.append(n.block)
                     if isinstance(n, BlockRealize) and n.block.name != "root" else None)
    return found


def _nodes(e: object, kind: type) -> list:
    found: list = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, kind) else None)
    return found


def _is_elemwise(store: BufferStore, load: BufferLoad) -> bool:
    return len(store.indices) == len(load.indices) and all(
        a == b for a, b in zip(store.indices, load.indices))


def _is_broadcast(store: BufferStore, load: BufferLoad) -> bool:
    j = 0
    for d, idx in zip(load.buffer.shape, load.indices):
        if isinstance(d, IntImm) and d.value == 1 and isinstance(idx, IntImm) and idx.value == 0:
            continue
        while j < len(store.indices) and store.indices[j] is not idx:
            j += 1
        if j == len(store.indices):
            return False
        j += 1
    return True


def _is_injective(store: BufferStore, load: BufferLoad, iters: set[Var]) -> bool:
    """Load indices are functions of the store's variables (and of symbolic sizes)."""
    if not all(isinstance(i, Var) for i in store.indices):
        return False
    allowed = set(store.indices)
    return all(v in allowed for i in load.indices for v in _nodes(i, Var) if v in iters)


def _strip(e: PrimExpr) -> PrimExpr:
    return e.value if isinstance(e, Cast) else e


def is_fma(store: BufferStore) -> bool:
    """`C[...] = C[...] + A[...] * B[...]` (casts allowed)."""
    v = store.value
    if not (isinstance(v, BinOp) and v.op == "add"):
        return False
    for acc, prod in ((v.a, v.b), (v.b, v.a)):
        acc, prod = _strip(acc), _strip(prod)
        if isinstance(acc, BufferLoad) and acc.buffer is store.buffer and \
                isinstance(prod, BinOp) and prod.op == "mul":
            return True
    return False


def block_index_pattern(store: BufferStore, iters: set[Var]) -> OpPattern:
    """The elementwise/broadcast/injective kind of one store, OPAQUE when none applies;
    `iters` are the block's iteration variables."""
    kind = OpPattern.ELEMWISE
    has_elemwise = False
    for load in _nodes(store.value, BufferLoad):
        if _is_elemwise(store, load):
            has_elemwise = True
        elif _is_broadcast(store, load):
            kind = max(kind, OpPattern.BROADCAST)
        elif _is_injective(store, load, iters):
            kind = max(kind, OpPattern.INJECTIVE)
        else:
            return OpPattern.OPAQUE
    if kind == OpPattern.BROADCAST and has_elemwise:
        kind = OpPattern.ELEMWISE
    return kind


def identity_when_empty(store: BufferStore, iters: set[Var], reduced: set[Buffer]) -> bool:
    """`out[i] = T.Select(cond, c, acc[i])`, `acc` a reduction's result and `cond` free of the
    block's variables: how legalize-ops gives a reduction whose domain may be empty its
    result (passes/graph/kernel.py), still a reduction for fusion."""
    v = store.value
    return isinstance(v, Select) and isinstance(v.false_value, BufferLoad) and \
        v.false_value.buffer in reduced and _is_elemwise(store, v.false_value) and \
        not _nodes(v.true_value, BufferLoad) and \
        not any(x in iters for x in _nodes(v.condition, Var))


def analyze(func: PrimFunc) -> OpPattern:
    """The fusion kind of a loop function."""
    blocks = _blocks(func)
    if not blocks:
        return OpPattern.OPAQUE
    params = set(func.buffers)
    kind = OpPattern.ELEMWISE
    reduced: set[Buffer] = set()
    for block in blocks:
        stores = _nodes(block.body, BufferStore)
        if len(stores) != 1 or _nodes(block.body, BlockRealize):
            return OpPattern.OPAQUE
        store = stores[0]
        iters = {iv.var for iv in block.iter_vars}
        index_kind = block_index_pattern(store, iters)
        if index_kind != OpPattern.OPAQUE:
            if store.buffer in params and kind == OpPattern.COMM_REDUCE:
                if not identity_when_empty(store, iters, reduced):
                    kind = OpPattern.OUT_EWISE_FUSABLE
            else:
                kind = max(kind, index_kind)
            continue
        if any(iv.kind == IterKind.REDUCE for iv in block.iter_vars):
            kind = max(kind, OpPattern.OUT_EWISE_FUSABLE if is_fma(store)
                       else OpPattern.COMM_REDUCE)
            reduced.add(store.buffer)
            continue
        return OpPattern.OPAQUE
    return kind


def pattern_of(func: PrimFunc) -> OpPattern:
    """The annotated kind of a loop function, analysing it when it has none; an annotation
    that is none of TVM's kinds is an error (fusing by it could merge what must not be)."""
    value = func.attrs.get(OP_PATTERN)
    if value is None:
        return analyze(func)
    if isinstance(value, int) and not isinstance(value, bool) and \
            value in OpPattern._value2member_map_:
        return OpPattern(value)
    kinds = ", ".join(f"{k.value} ({k.name.lower()})" for k in OpPattern)
    raise CompileError(f"loop function '{func.name}': \"op_pattern\": {value!r} is not one of "
                       f"TVM's OpPatternKind values: {kinds}", func.span)


@dataclass(frozen=True)
class AnnotateOpPattern(PrimFuncPass):
    """Adds `op_pattern` to every loop function that has none."""

    name = "annotate-op-pattern"
    description = "classify loop functions (elementwise, broadcast, injective, reduction, ...)"

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        if OP_PATTERN in func.attrs:
            return func
        attrs = {**func.attrs, OP_PATTERN: int(analyze(func))}
        return dataclasses.replace(func, attrs=attrs)
