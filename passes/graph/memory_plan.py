"""memory-plan: storage for the intermediate tensors of a graph function, reused after last use.

Every tensor a call produces that the function does not return needs storage. Walking the
bindings in order, each such tensor takes a free storage token of its dtype whose size is
comparable to its own (provably no larger or no smaller, symbolically: `n * 512` vs
`n * 128`), growing it when needed, or a new token; a token is freed after the last use of its
tensor (not before the call that produced it returns, so inputs never alias outputs). Tokens
are laid out one after another, each 64-byte aligned, in one workspace per call and dtype
(every token holds one dtype; the reference interpreter keeps storage typed) whose size is an
expression of the symbolic sizes. A call_tir_inplace marked `in_place` (inplace_calls) makes
no tensor: its result is its argument's, in the argument's storage. The plan goes to the
function's attributes (`tirc.workspace_bytes`, `tirc.storage`) where
`--print-after=memory-plan` shows it; lower-graph allocates from it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field

from tirc.ir.arith import make_analyzer
from tirc.ir.attrs import PRIMITIVE, STORAGE, WORKSPACE_BYTES
from tirc.ir.dist.collective import is_collective
from tirc.ir.dtype import DType
from tirc.ir.expr import PrimExpr, Var, binop
from tirc.ir.graph import (
    Binding,
    Function,
    GCall,
    GVar,
    If,
    MatchCast,
    SeqExpr,
    TensorSInfo,
    Tuple,
    TupleGetItem,
    TupleSInfo,
    VarBinding,
)
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.ops.sinfo_util import dim, product, shape_vars, simplify_dim
from tirc.ir.rebind import used_vars as rebind_used_vars
from tirc.ir.visitor import substitute
from tirc.passes.graph.fuse_ops import used_vars
from tirc.passes.graph.inplace_calls import IN_PLACE
from tirc.passes.pass_base import Pass, PassContext

ALIGN = 64

TensorId = tuple[GVar, int]  # a binding's variable and the index of the tensor in its value


@dataclass
class Token:
    """One storage block of the workspace: its dtype, size in bytes, place in 64-byte units."""

    dtype: DType
    size: PrimExpr
    offset_units: PrimExpr = field(default_factory=lambda: dim(0))


@dataclass
class MemoryPlan:
    """Where each intermediate tensor lives, and how big the workspace is."""

    tokens: list[Token]
    storage: dict[TensorId, int]
    workspace_bytes: dict[DType, PrimExpr]

    def offset_elems(self, tid: TensorId) -> PrimExpr:
        """The tensor's offset in the workspace, in elements of its dtype."""
        token = self.tokens[self.storage[tid]]
        return simplify_dim(binop("mul", token.offset_units, dim(ALIGN // token.dtype.bytes)))


def tensor_bytes(s: TensorSInfo) -> PrimExpr:
    """The size of a tensor in bytes (symbolic)."""
    assert s.shape is not None and s.dtype is not None
    return product(tuple(s.shape) + (dim(s.dtype.bytes),))


def _compare(a: PrimExpr, b: PrimExpr) -> int | None:
    """-1, 0 or 1 when `a` is provably less, equal or greater (or equal-or-), else None."""
    an = make_analyzer({v: (0, None) for v in shape_vars([a, b])})
    if an.can_prove(binop("eq", a, b)):
        return 0
    if an.can_prove(binop("le", a, b)):
        return -1
    if an.can_prove(binop("ge", a, b)):
        return 1
    return None


def produced_tensors(value: object, var: GVar) -> list[tuple[TensorId, TensorSInfo]]:
    """The tensors a binding's call writes (one per output of a call_tir); an `if` writes its
    result (each branch's last call writes into it, or the branch copies its value there)."""
    if not (isinstance(value, GCall) and (value.op in ("call_tir", "call_dps_packed")
                                          or is_collective(value.op)) or isinstance(value, If)):
        return []
    s = var.struct_info
    fields = s.fields if isinstance(s, TupleSInfo) else (s,)
    return [((var, k), f) for k, f in enumerate(fields) if isinstance(f, TensorSInfo)]


def tensor_of(e: object, aliases: dict[GVar, TensorId]) -> TensorId | None:
    """The tensor a graph value denotes (a variable, or a tuple item), if any."""
    if isinstance(e, GVar):
        return aliases.get(e, (e, 0))
    if isinstance(e, TupleGetItem) and isinstance(e.tuple_value, GVar):
        return (e.tuple_value, e.index)
    return None


def returned_leaves(value: object) -> list[object]:
    """The values a function returns, in order, with nested tuples flattened depth first."""
    if not isinstance(value, Tuple):
        return [value]
    return [leaf for f in value.fields for leaf in returned_leaves(f)]


def returned_tensors(func: Function, aliases: dict[GVar, TensorId]) -> list[TensorId | None]:
    """The tensors the function returns, in order (nested tuples flattened)."""
    return [tensor_of(e, aliases) for e in returned_leaves(func.body.body)]


def own_shape(tid: TensorId) -> tuple[PrimExpr, ...] | None:
    """The shape tensor `tid` has where it is made (its binding's type), if known."""
    s = tid[0].struct_info
    f = s.fields[tid[1]] if isinstance(s, TupleSInfo) and tid[1] < len(s.fields) else s
    return tuple(f.shape) if isinstance(f, TensorSInfo) and f.shape is not None else None


def reshaped(leaf: object, tid: TensorId | None) -> bool:
    """Whether a returned value names its tensor with a shape not provably the tensor's own
    (`w = R.match_cast(z, R.Tensor((3,)))` returned, `z` of shape `(n,)`): the result has the
    cast's shape, so the tensor is computed in storage of its own and copied to the result
    after the cast's check (written into the result, a wrong `n` would overrun it)."""
    s = getattr(leaf, "struct_info", None)
    own = own_shape(tid) if tid is not None else None
    if own is None or not isinstance(s, TensorSInfo) or s.shape is None:
        return False
    return len(s.shape) != len(own) or any(_compare(a, b) != 0 for a, b in zip(s.shape, own))


def aliases_of(func: Function) -> dict[GVar, TensorId]:
    """Variables bound to another tensor (`a = t[0]`, `a = b`, `a = R.match_cast(b, ...)`),
    and the result of each `if` branch that the branch computes: it is the if's tensor."""
    out: dict[GVar, TensorId] = {}
    _aliases(func.body, out, {})
    return out


def _aliases(seq: SeqExpr, out: dict[GVar, TensorId], tuples: dict[GVar, Tuple]) -> None:
    """Fill `out` for the bindings of `seq`; `tuples` holds the variables bound to a tuple
    of values (`t = (a, b)`, `u = nt[0]` of `nt = (t, c)`), so an item of one, nested
    too, is the tensor of its field."""
    for block in seq.blocks:
        for b in block.bindings:
            value = b.value  # type: ignore[attr-defined]
            if isinstance(value, Tuple):
                tuples[b.var] = value
            if isinstance(value, GVar) and value in tuples:
                tuples[b.var] = tuples[value]
                continue
            if isinstance(value, TupleGetItem) and isinstance(value.tuple_value, GVar) and \
                    value.tuple_value in tuples:
                fields = tuples[value.tuple_value].fields
                value = fields[value.index] if value.index < len(fields) else value
                if isinstance(value, GVar) and value in tuples:
                    tuples[b.var] = tuples[value]
                    continue
                if isinstance(value, Tuple):
                    tuples[b.var] = value
                    continue
            if isinstance(value, GCall) and value.op == "call_tir_inplace" and \
                    value.attrs.get(IN_PLACE):  # its result is its argument (inplace_calls)
                value = value.args[1].fields[  # type: ignore[attr-defined]
                    value.attrs["inplace_indices"][0]]
            if isinstance(b, (VarBinding, MatchCast)) and isinstance(value,
                                                                    (GVar, TupleGetItem)):
                tid = tensor_of(value, out)
                if tid is not None:
                    out[b.var] = tid
            elif isinstance(b, VarBinding) and isinstance(b.value, If):
                target = tensor_of(b.var, out)
                for branch in b.value.branches:
                    result = branch_result(branch)
                    if result is not None and target is not None:
                        out[result] = target
                    _aliases(branch, out, tuples)


def branch_result(branch: SeqExpr) -> GVar | None:
    """The variable an `if` branch returns when a call of that branch writes it (a single
    tensor): it takes the storage of the if's result, with no copy."""
    body = branch.body
    if not isinstance(body, GVar) or not isinstance(body.struct_info, TensorSInfo):
        return None
    for block in branch.blocks:
        for b in block.bindings:
            if b.var is body and isinstance(b, VarBinding):
                return body if produced_tensors(b.value, b.var) else None
    return None


def execution_order(seq: SeqExpr) -> list[tuple[list[GVar], Binding | None]]:
    """The bindings of `seq` in the order they may run, each with the variables it uses: an
    `if` produces its result (using its condition), then the bindings of each branch follow,
    each branch ending with a use of its result."""
    out: list[tuple[list[GVar], Binding | None]] = []
    for block in seq.blocks:
        for b in block.bindings:
            value = b.value  # type: ignore[attr-defined]
            if isinstance(value, If):
                out.append((used_vars(value.cond), b))
                for branch in value.branches:
                    out += execution_order(branch)
                    out.append((used_vars(branch.body), None))
            else:
                out.append((used_vars(value), b))
    return out


def cast_sizes(func: Function) -> dict[Var, PrimExpr]:
    """The sizes an `R.match_cast` binds (`c` of `R.match_cast(v, R.Tensor((c, 4)))`, no
    parameter's), each as the dimension of the value it is read from: the workspace is sized
    at entry, before any cast runs, so a tensor's size in it must not name them."""
    bound = rebind_used_vars(*(p.struct_info for p in func.params))
    sizes: dict[Var, PrimExpr] = {}

    def visit(seq: SeqExpr) -> None:
        for block in seq.blocks:
            for b in block.bindings:
                value = b.value  # type: ignore[attr-defined]
                if isinstance(value, If):
                    for branch in value.branches:
                        visit(branch)
                src = getattr(value, "struct_info", None)
                want = b.struct_info if isinstance(b, MatchCast) else None
                if not (isinstance(want, TensorSInfo) and isinstance(src, TensorSInfo) and
                        want.shape is not None and src.shape is not None and
                        len(want.shape) == len(src.shape)):
                    continue
                for w, got in zip(want.shape, src.shape):
                    if isinstance(w, Var) and w not in bound and w not in sizes:
                        sizes[w] = substitute(got, sizes)

    visit(func.body)
    return sizes


def plan_memory(func: Function) -> MemoryPlan:
    """Storage tokens for the tensors `func` computes but does not return."""
    sizes = cast_sizes(func)
    aliases = aliases_of(func)
    order = execution_order(func.body)
    pairs = list(zip(returned_leaves(func.body.body), returned_tensors(func, aliases)))
    returned = {t for e, t in pairs if t is not None and not reshaped(e, t)}
    kept = {t for e, t in pairs if reshaped(e, t)} - returned  # live until the copy at the end
    last_use: dict[TensorId, int] = {}
    for k, (uses, _) in enumerate(order):
        for v in uses:
            tid = aliases.get(v)
            s = v.struct_info
            ids = [tid] if tid is not None else [(v, j) for j in range(
                len(s.fields) if isinstance(s, TupleSInfo) else 1)]
            for t in ids:
                last_use[t] = k
    tokens: list[Token] = []
    free: list[int] = []
    storage: dict[TensorId, int] = {}
    ends: dict[TensorId, int] = {}
    for k, (_, b) in enumerate(order):
        produced = produced_tensors(b.value, b.var) if b is not None else []  # type: ignore[attr-defined]
        for tid, s in produced:
            if tid not in returned and tid[0] not in aliases:
                if sizes and s.shape is not None:
                    s = dataclasses.replace(s, shape=tuple(substitute(d, sizes) for d in s.shape))
                storage[tid] = _take(tokens, free, s)
                ends[tid] = len(order) if tid in kept else max(last_use.get(tid, k), k)
        for tid in [t for t, end in ends.items() if end == k]:
            free.append(storage[tid])
            del ends[tid]
    offsets: dict[DType, PrimExpr] = {}
    for t in tokens:
        offset = offsets.get(t.dtype, dim(0))
        t.offset_units = simplify_dim(offset)
        units = binop("floordiv", binop("add", t.size, dim(ALIGN - 1)), dim(ALIGN))
        offsets[t.dtype] = binop("add", offset, units)
    totals = {dt: simplify_dim(binop("mul", o, dim(ALIGN))) for dt, o in offsets.items()}
    return MemoryPlan(tokens, storage, totals)


def _take(tokens: list[Token], free: list[int], s: TensorSInfo) -> int:
    """A free token of the tensor's dtype and a comparable size (grown if needed), or a new
    one."""
    size = tensor_bytes(s)
    assert s.dtype is not None
    best: tuple[int, int] | None = None
    for pos, idx in enumerate(free):
        t = tokens[idx]
        if t.dtype != s.dtype:
            continue
        order = _compare(t.size, size)
        if order is None:
            continue
        if order >= 0 or best is None:
            best = (pos, idx)
            if order == 0:
                break
    if best is None:
        tokens.append(Token(s.dtype, size))
        return len(tokens) - 1
    pos, idx = best
    free.pop(pos)
    if _compare(tokens[idx].size, size) == -1:
        tokens[idx].size = size
    return idx


@dataclass(frozen=True)
class MemoryPlanPass(Pass):
    """Records each graph function's storage plan in its attributes."""

    name = "memory-plan"
    description = "plan intermediate storage: tokens by size and dtype, reuse after last use"
    optional = True  # an optimisation (see Pass.optional)

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod
        for name, func in mod.graph_funcs().items():
            if func.attrs.get(PRIMITIVE):
                continue
            plan = plan_memory(func)
            storage = {f"{tid[0].name}" + (f"[{tid[1]}]" if tid[1] else ""): (
                token, plan.tokens[token].offset_units * ALIGN)
                for tid, token in plan.storage.items()}
            sizes = {str(dt): size for dt, size in plan.workspace_bytes.items()}
            attrs = {**func.attrs, WORKSPACE_BYTES: sizes,
                     STORAGE: {k: (t, simplify_dim(o)) for k, (t, o) in storage.items()}}
            out = out.with_function(name, dataclasses.replace(func, attrs=attrs))
        return out
