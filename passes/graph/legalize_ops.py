"""legalize-ops: every graph operator becomes `R.call_tir` of a generated loop function.

Each call is matched to its operator, the operator's legalizer builds a block-based PrimFunc
over the call's (symbolic) shapes, and the binding becomes
`R.call_tir(Module.add, (x, b), out_sinfo=R.Tensor((n, 256), "float32"))`. Identical kernels
(structurally equal) are shared; names are the operator's (`add`, `add1`, `softmax`, ...).
Operators without a loop-level form (`shape_of`, calls) and cross-level calls stay.
"""

from __future__ import annotations

import dataclasses

from tirc.ir.function import PrimFunc
from tirc.ir.graph import (
    BindingBlock,
    Function,
    GCall,
    GlobalVar,
    GraphExpr,
    GVar,
    SeqExpr,
    ShapeExpr,
    StructInfo,
    TensorSInfo,
    Tuple,
    TupleGetItem,
    TupleSInfo,
    VarBinding,
    with_branches,
)
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.ops.infer import infer_expr
from tirc.ir.ops.registry import bound_call
from tirc.ir.ops.size_checks import call_size_checks
from tirc.ir.structural import structural_equal, structural_hash
from tirc.passes.graph.inplace_calls import IN_PLACE, mark_in_place
from tirc.passes.graph.legalize_blas import BLAS_CONFIG, blas_enabled, blas_matmul
from tirc.passes.graph.legalize_inplace import legalize_inplace
from tirc.passes.graph.legalize_table import get_legalizer, refuse_uncompiled
from tirc.passes.graph.normalize import normalize_function
from tirc.passes.pass_base import Pass, PassContext, option


@dataclass(frozen=True)
class LegalizeOps(Pass):
    """Graph operators -> call_tir of loop functions added to the module."""

    name = "legalize-ops"
    description = "lower graph operators to R.call_tir of generated loop functions"

    blas: bool = option(False, config=BLAS_CONFIG, parse=blas_enabled,
                        doc="float32 matmuls call a CBLAS sgemm (-fblas)")

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        kernels = _KernelTable(mod)
        out = mod
        blas = self.blas
        for name, func in mod.graph_funcs().items():
            marked = mark_in_place(normalize_function(func, mod), mod)
            new = legalize_function(marked, mod, kernels, blas)
            if new is not func:
                out = out.with_function(name, new)
        for kname, kfunc in kernels.added.items():
            out = out.with_function(kname, kfunc)
        return out


class _KernelTable:
    """The loop functions added so far, shared when structurally equal."""

    def __init__(self, mod: IRModule) -> None:
        self.taken = set(mod.functions)
        self.added: dict[str, PrimFunc] = {}
        self.by_hash: dict[int, list[str]] = {}

    def add(self, func: PrimFunc) -> str:
        h = structural_hash(dataclasses.replace(func, name=""))
        for name in self.by_hash.get(h, []):
            if structural_equal(dataclasses.replace(self.added[name], name=""),
                                dataclasses.replace(func, name="")):
                return name
        name, k = func.name, 0
        while name in self.taken:
            k += 1
            name = f"{func.name}{k}"
        self.taken.add(name)
        self.added[name] = dataclasses.replace(func, name=name)
        self.by_hash.setdefault(h, []).append(name)
        return name


def legalize_function(func: Function, mod: IRModule, kernels: _KernelTable,
                      blas: bool = False) -> Function:
    """Replace each legalizable operator call of `func` by a call_tir (a matmul by a BLAS
    call when `blas`, see legalize_blas.py)."""
    blocks, changed = _legalize_blocks(func.body.blocks, mod, kernels, blas)
    if not changed:
        return func
    return dataclasses.replace(func, body=dataclasses.replace(func.body, blocks=tuple(blocks)))


def _legalize_blocks(old: tuple[BindingBlock, ...], mod: IRModule, kernels: _KernelTable,
                     blas: bool) -> tuple[list[BindingBlock], bool]:
    """The blocks with their calls legalized (inside the branches of an `if` too), and
    whether anything changed."""
    blocks = []
    changed = False

    def branch(seq: SeqExpr) -> SeqExpr:
        nonlocal changed
        inner, moved = _legalize_blocks(seq.blocks, mod, kernels, blas)
        changed |= moved
        return dataclasses.replace(seq, blocks=tuple(inner)) if moved else seq

    for block in old:
        bindings = []
        for b in block.bindings:
            b = with_branches(b, branch)
            if isinstance(b, VarBinding) and isinstance(b.value, GCall):
                library = blas_matmul(b.value, b.var.struct_info,
                                      lambda a: infer_expr(a, mod)[1]) if blas else None
                if library is not None:
                    bindings.extend(_size_checks(b.value, mod, block.is_dataflow))
                    bindings.append(dataclasses.replace(b, value=library))
                    changed = True
                    continue
                value = legalize_call(b.value, b.var.struct_info, mod, kernels)
                if value is not b.value:
                    value, items = _bind_items(value, block.is_dataflow)
                    bindings.extend(_size_checks(b.value, mod, block.is_dataflow))
                    bindings.extend(items)
                    b = dataclasses.replace(b, value=value)
                    changed = True
            bindings.append(b)
        blocks.append(dataclasses.replace(block, bindings=tuple(bindings)))
    return blocks, changed


def legalize_call(call: GCall, out: StructInfo | None, mod: IRModule,
                  kernels: _KernelTable) -> GraphExpr:
    """The call_tir for one operator call, or the call unchanged when it has no kernel."""
    if call.op == "call_tir_inplace":  # lower-graph runs one marked in_place itself
        return call if call.attrs.get(IN_PLACE) else legalize_inplace(call, mod, kernels.add)
    refuse_uncompiled(call)
    legalize = get_legalizer(call.op)
    if legalize is None or out is None or not _known(out):
        return call
    oc = bound_call(call, lambda a: infer_expr(a, mod)[1], mod)
    if any(isinstance(s, TensorSInfo) and (s.shape is None or s.dtype is None)
           for s in _flat(oc.sinfo.values())):
        return call
    kernel = legalize(oc, out)
    prim, tir_vars = kernel.build()
    name = kernels.add(prim)
    outs = out.fields if isinstance(out, TupleSInfo) else (out,)
    args: tuple[GraphExpr, ...] = (GlobalVar(name), Tuple(tuple(kernel.args)))
    if tir_vars:
        args += (ShapeExpr(tuple(tir_vars)),)
    return GCall("call_tir", args, {}, tuple(outs), span=call.span)


def _size_checks(call: GCall, mod: IRModule, dataflow: bool) -> list[VarBinding]:
    """`R.tirc.size_check` bindings for the sizes the call's struct info assumed equal
    (tirc.ir.ops.size_checks), to run before its kernel; lower-graph compiles them."""
    return [VarBinding(GVar(name="size_check", struct_info=TupleSInfo(()), is_dataflow=dataflow),
                       check.call(call.span), span=call.span)
            for check in call_size_checks(call, mod)]


def _bind_items(call: GCall, dataflow: bool) -> tuple[GCall, list[VarBinding]]:
    """`t[k]` arguments of a call_tir (a tuple variable's fields) bound to variables of their
    own first, so that every argument is a variable or a constant (normal form)."""
    args = call.args[1]
    assert isinstance(args, Tuple)
    items: list[VarBinding] = []
    fields = []
    for a in args.fields:
        if isinstance(a, TupleGetItem):
            sinfo = getattr(a.tuple_value, "struct_info", None)
            assert isinstance(sinfo, TupleSInfo)
            name = getattr(a.tuple_value, "name", "t")
            v = GVar(name=f"{name}_{a.index}", struct_info=sinfo.fields[a.index],
                     is_dataflow=dataflow)
            items.append(VarBinding(v, a))
            a = v
        fields.append(a)
    if not items:
        return call, []
    new_args = (call.args[0], Tuple(tuple(fields)), *call.args[2:])
    return dataclasses.replace(call, args=new_args), items


def _known(s: StructInfo) -> bool:
    if isinstance(s, TupleSInfo):
        return all(_known(f) for f in s.fields)
    return isinstance(s, TensorSInfo) and s.shape is not None and s.dtype is not None


def _flat(items: object) -> list[object]:
    out: list[object] = []
    for x in items:  # type: ignore[attr-defined]
        out.extend(x if isinstance(x, tuple) else (x,))
    return out


