"""fuse-tir: each fused graph function (fuse-ops' `Primitive` groups) becomes one loop function.

The group's parameters and results become the loop function's buffers, the values passed
between its calls become buffers allocated in the root block, and each callee's blocks are
copied in order with its buffers and symbolic sizes rebound (fresh loop and block variables,
block names made unique). Calls of the group become `R.call_tir` of the new function, which
takes the group's name; the graph function is removed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from tirc.ir.expr import PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.graph import (
    Function,
    GCall,
    GlobalVar,
    GraphExpr,
    GVar,
    ShapeExpr,
    StructInfo,
    TensorSInfo,
    Tuple,
    TupleSInfo,
    VarBinding,
)
from tirc.ir.module import IRModule
from tirc.ir.ops.calls import bind_shape_vars
from tirc.ir.stmt import Block, BlockRealize
from tirc.ir.visitor import Mutator, substitute
from tirc.passes.graph.annotate_op_pattern import PATTERN_ATTR, analyze
from tirc.passes.graph.fuse_ops import PRIMITIVE_ATTR
from tirc.passes.graph.kernel import Kernel
from tirc.passes.pass_base import Pass, PassContext
from tirc.passes.rebind import fresh_copy


@dataclass(frozen=True)
class FuseTIR(Pass):
    """Fused graph functions -> one loop function each."""

    name = "fuse-tir"
    description = "merge each fused group's loop functions into one loop function"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        groups = {n: f for n, f in mod.graph_funcs().items() if f.attrs.get(PRIMITIVE_ATTR)}
        if not groups:
            return mod
        fused: dict[str, tuple[PrimFunc, list[PrimExpr]]] = {}
        out = mod
        for name, g in groups.items():
            fused[name] = fuse_group(g, mod)
            out = out.without_function(name)
        for name, f in list(out.graph_funcs().items()):
            new = _replace_calls(f, groups, fused)
            if new is not f:
                out = out.with_function(name, new)
        for name, (prim, _) in fused.items():
            out = out.with_function(name, prim)
        return out


class BlockNames(Mutator):
    """Makes block names unique across the copied kernels (`T_add`, `T_add_1`, ...)."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = taken

    def visit_Block(self, blk: Block) -> Any:
        new = self.generic_visit(blk)
        name, k = blk.name, 0
        while name in self.taken:
            k += 1
            name = f"{blk.name}_{k}"
        self.taken.add(name)
        return new if name == blk.name else dataclasses.replace(new, name=name)


def fuse_group(group: Function, mod: IRModule) -> tuple[PrimFunc, list[PrimExpr]]:
    """The loop function of a fused group, and its scalar size arguments (group-level)."""
    kernel = Kernel(group.name)
    block = group.body.blocks[0]
    results = _results(group)
    buffers: dict[GVar, Any] = {}
    for p in group.params:
        assert isinstance(p.struct_info, TensorSInfo)
        buffers[p] = kernel.input(p.name, p, p.struct_info)
    for b in block.bindings:
        s = b.var.struct_info
        assert isinstance(s, TensorSInfo) and s.shape is not None and s.dtype is not None
        if b.var in results:
            buffers[b.var] = kernel.output(b.var.name, s)
        else:
            buffers[b.var] = kernel.temp(b.var.name, kernel.dims(s.shape), s.dtype)
    outputs = [buffers[r] for r in results]
    kernel.outputs = outputs
    names: set[str] = set()
    for b in block.bindings:
        call = b.value
        assert isinstance(call, GCall) and isinstance(call.args[0], GlobalVar)
        callee = mod.functions[call.args[0].name]
        assert isinstance(callee, PrimFunc)
        args = call.args[1].fields if isinstance(call.args[1], Tuple) else ()
        actual = [buffers[a] for a in args] + [buffers[b.var]]
        mapping: dict[Any, Any] = dict(zip(callee.buffers, actual))
        mapping.update(bind_shape_vars(callee.buffers, [a.shape for a in actual]))
        root = fresh_copy(callee.body, mapping)
        root = BlockNames(names).visit(root)
        if isinstance(root, BlockRealize) and root.block.name.startswith("root"):
            kernel.temps.extend(root.block.alloc_buffers)
            kernel.stages.append(root.block.body)
        else:
            kernel.stages.append(root)
    prim, tir_vars = kernel.build()
    attrs = {**prim.attrs, PATTERN_ATTR: int(analyze(prim))}
    return dataclasses.replace(prim, attrs=attrs), tir_vars


def _results(group: Function) -> list[GVar]:
    body = group.body.body
    items = body.fields if isinstance(body, Tuple) else (body,)
    return [v for v in items if isinstance(v, GVar)]


def _replace_calls(func: Function, groups: dict[str, Function],
                   fused: dict[str, tuple[PrimFunc, list[PrimExpr]]]) -> Function:
    blocks = []
    changed = False
    for block in func.body.blocks:
        bindings = []
        for b in block.bindings:
            if isinstance(b, VarBinding) and isinstance(b.value, GCall) and b.value.op in fused:
                b = dataclasses.replace(b, value=_call_tir(b.value, b.var.struct_info,
                                                           groups[b.value.op],
                                                           fused[b.value.op][1]))
                changed = True
            bindings.append(b)
        blocks.append(dataclasses.replace(block, bindings=tuple(bindings)))
    if not changed:
        return func
    return dataclasses.replace(func, body=dataclasses.replace(func.body, blocks=tuple(blocks)))


def _call_tir(call: GCall, sinfo: StructInfo | None, group: Function,
              tir_vars: list[PrimExpr]) -> GraphExpr:
    outs = sinfo.fields if isinstance(sinfo, TupleSInfo) else (sinfo,)
    args: tuple[GraphExpr, ...] = (GlobalVar(group.name), Tuple(call.args))
    if tir_vars:
        values: dict[Var, PrimExpr] = {}
        for p, a in zip(group.params, call.args):
            ps, a_s = p.struct_info, getattr(a, "struct_info", None)
            if isinstance(ps, TensorSInfo) and isinstance(a_s, TensorSInfo):
                for d, actual in zip(ps.shape or (), a_s.shape or ()):
                    if isinstance(d, Var) and d not in values:
                        values[d] = actual
        args += (ShapeExpr(tuple(substitute(v, values) for v in tir_vars)),)
    return GCall("call_tir", args, {}, tuple(outs), span=call.span)  # type: ignore[arg-type]
