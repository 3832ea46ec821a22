"""The set-up of a distributed graph function before propagation: whether it is one, its
mesh, the calls of its returned value bound to variables, and the module's meshes resized
(`--mesh`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir.diagnostics import CompileError
from tirc.ir.dist.dtensor import DTensorSInfo, is_distributed
from tirc.ir.dist.mesh import MeshError, parse_mesh_ref, parse_mesh_shape
from tirc.ir.graph import (
    Binding,
    BindingBlock,
    Function,
    GCall,
    GraphExpr,
    GVar,
    SeqExpr,
    StructInfo,
    Tuple,
    TupleSInfo,
    VarBinding,
)
from tirc.ir.module import IRModule
from tirc.ir.ops.infer import infer_expr
from tirc.ir.span import Span
from tirc.ir.visitor import post_order_visit

DIST_OPS = ("dist.annotate_sharding", "dist.redistribute")


def uses_sharding(func: Function) -> bool:
    """True when a graph function mentions a DTensor or an `R.dist.*` operator."""
    found = [is_distributed(p.struct_info) for p in func.params]
    found.append(is_distributed(func.ret_struct_info))

    def visit(n: Any) -> None:
        if isinstance(n, GCall) and n.op in DIST_OPS or isinstance(n, Binding) and \
                is_distributed(n.var.struct_info):
            found.append(True)

    post_order_visit(func.body, visit)
    return any(found)


def bind_calls_in_body(func: Function, mod: IRModule) -> Function:
    """`return R.add(R.f(x), y)`: the calls of the returned value bound to variables first
    (innermost first, in a block of their own), so every call is a binding."""
    bindings: list[Binding] = []

    def lift(e: GraphExpr) -> GraphExpr:
        if isinstance(e, Tuple):
            return Tuple(tuple(lift(f) for f in e.fields), span=e.span)
        if not isinstance(e, GCall):
            return e
        call = dataclasses.replace(e, args=tuple(lift(a) for a in e.args))
        var = GVar(f"ret{len(bindings)}", span=e.span)
        call, sinfo = infer_expr(call, mod)
        var = dataclasses.replace(var, struct_info=sinfo)
        bindings.append(VarBinding(var, call, span=e.span))
        return var

    value = lift(func.body.body)
    if not bindings:
        return func
    blocks = func.body.blocks
    if blocks and not blocks[-1].is_dataflow:
        blocks = blocks[:-1] + (dataclasses.replace(
            blocks[-1], bindings=blocks[-1].bindings + tuple(bindings)),)
    else:
        blocks += (BindingBlock(tuple(bindings), False),)
    return dataclasses.replace(func, body=SeqExpr(blocks, value, span=func.body.span))


def resize_meshes(mod: IRModule, spec: str) -> IRModule:
    """`"4"` (every mesh) or `"mesh[0]=2x2,mesh[1]=4"`: the module with its meshes resized."""
    infos = {k: list(v) for k, v in mod.global_infos.items()}
    try:
        for item in [s for s in spec.replace(";", " ").split() if s] if "=" in spec else [spec]:
            ref, _, shape_text_ = item.rpartition("=")
            shape = parse_mesh_shape(shape_text_)
            refs = [parse_mesh_ref(r) for r in ref.split(",") if r] if ref else \
                [(k, i) for k, v in infos.items() for i in range(len(v))]
            if not refs:
                raise MeshError("--mesh: the module declares no device mesh")
            for key, index in refs:
                if key not in infos or index >= len(infos[key]):
                    raise MeshError(f"--mesh: the module has no mesh '{key}[{index}]'")
                infos[key][index] = infos[key][index].with_shape(shape)
    except MeshError as exc:
        raise CompileError(str(exc)) from None
    return mod.replace(global_infos={k: tuple(v) for k, v in infos.items()})  # type: ignore[return-value]


def mesh_refs(func: Function) -> list[tuple[str, Span | None]]:
    """Every mesh reference of a function (parameters, return type, bindings, R.dist calls),
    with where it is."""
    refs: list[tuple[str, Span | None]] = []
    for p in func.params:
        _dtensor_refs(p.struct_info, p.span, refs)
    _dtensor_refs(func.ret_struct_info, func.span, refs)

    def visit(n: Any) -> None:
        if isinstance(n, Binding):
            _dtensor_refs(n.var.struct_info, n.span, refs)
        if isinstance(n, GCall) and n.op in DIST_OPS and "device_mesh" in n.attrs:
            refs.append((str(n.attrs["device_mesh"]), n.span))

    post_order_visit(func.body, visit)
    return refs


def _dtensor_refs(s: StructInfo | None, span: Span | None,
                  out: list[tuple[str, Span | None]]) -> None:
    """The mesh references of a struct info, added to `out`."""
    if isinstance(s, DTensorSInfo):
        out.append((s.device_mesh, s.span or span))
    elif isinstance(s, TupleSInfo):
        for f in s.fields:
            _dtensor_refs(f, span, out)


