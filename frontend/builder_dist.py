"""The distributed syntax (TVM Relax's distributed dialect): device meshes and DTensors.

    I.module_global_infos({"mesh": [R.device_mesh((2,), I.Range(0, 2))]})
    x: R.DTensor((128, 256), "float32", "mesh[0]", "S[1]")
    x: R.DTensor((128, 256), "float32", "mesh[0]", "S[(128, 2, 128):(128, 1@d0, 1)]")

A mesh may name its axes (`axes=("dp", "tp")`, default d0, d1, ...). A placement is TVM's
per-mesh-axis list (`"S[1]"`, `"R"`, `"S[0], R"`, plus `P` and `O[k]`, see
tirc.ir.dist.placement), or an Axe layout over the mesh's axes (a string with `@axis`).
"""

from __future__ import annotations

from typing import Any

from tirc.frontend import syntax as S
from tirc.frontend.builder_expr import literal_value
from tirc.frontend.context import Context
from tirc.frontend.signature import Sig, check_call
from tirc.ir.dist.axe import from_layout
from tirc.ir.dist.dtensor import DTensorSInfo
from tirc.ir.dist.mesh import DeviceMesh, MeshError, lookup_mesh
from tirc.ir.dist.placement import Placement, PlacementError, parse_placement
from tirc.ir.graph import TensorSInfo
from tirc.ir.layout import LayoutError, parse_layout
from tirc.ir.ops.sinfo_util import const_dim


def _lit(node: S.Expr) -> Any:
    """A literal, or a tuple of literals for a tuple or list of them (None otherwise)."""
    if isinstance(node, (S.Tuple, S.List)):
        items = [_lit(e) for e in node.elts]
        return None if any(i is None for i in items) else tuple(items)
    return literal_value(node)


def global_infos(ctx: Context, call: S.Call) -> dict[str, tuple[Any, ...]]:
    """`I.module_global_infos({...})`: each key maps to a list of infos (device meshes)."""
    a = check_call(ctx, call, "I.module_global_infos", Sig(1, 1))
    node = a.pos[0]
    if not isinstance(node, S.Dict):
        ctx.error("I.module_global_infos takes a dict such as {\"mesh\": [R.device_mesh("
                  "(2,), I.Range(0, 2))]}", node.span)
    out: dict[str, tuple[Any, ...]] = {}
    for key, value in zip(node.keys, node.values):
        k = literal_value(key)
        if not isinstance(k, str):
            ctx.error("a global info's key is a string", key.span)
        items = value.elts if isinstance(value, (S.List, S.Tuple)) else [value]
        out[k] = tuple(device_mesh(ctx, item) for item in items)
    return out


def device_mesh(ctx: Context, node: S.Expr) -> DeviceMesh:
    """`R.device_mesh((2, 2), I.Range(0, 4), axes=("dp", "tp"))`."""
    if S.call_name(node) != "R.device_mesh":
        ctx.unsupported("global infos other than R.device_mesh(...)", node.span)
    assert isinstance(node, S.Call)
    a = check_call(ctx, node, "R.device_mesh", Sig(2, 2, ("axes",)))
    shape = _lit(a.pos[0])
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, tuple) or not shape or \
            not all(isinstance(e, int) and not isinstance(e, bool) for e in shape):
        ctx.error("a device mesh's shape is a tuple of integers such as (2, 2)", a.pos[0].span)
    first, count = _device_range(ctx, a.pos[1])
    names: tuple[str, ...] = ()
    if "axes" in a.kw:
        value = _lit(a.kw["axes"])
        value = (value,) if isinstance(value, str) else value
        if not isinstance(value, tuple) or not all(isinstance(n, str) for n in value):
            ctx.error("axes= names the mesh axes: a tuple of strings", a.kw["axes"].span)
        names = value
    try:
        mesh = DeviceMesh(shape, first, names, span=node.span)
    except MeshError as exc:
        ctx.error(str(exc), node.span)
    if count != mesh.size:
        ctx.error(f"the mesh {shape} has {mesh.size} devices, but the device range holds "
                  f"{count}", a.pos[1].span)
    return mesh


def _device_range(ctx: Context, node: S.Expr) -> tuple[int, int]:
    """`I.Range(0, 4)` or a list of consecutive device ids -> (first, count)."""
    if S.call_name(node) in ("I.Range", "Range", "range"):
        assert isinstance(node, S.Call)
        a = check_call(ctx, node, "I.Range", Sig(2, 2))
        lo, hi = literal_value(a.pos[0]), literal_value(a.pos[1])
        if isinstance(lo, int) and isinstance(hi, int) and 0 <= lo < hi:
            return lo, hi - lo
    value = _lit(node)
    if isinstance(value, tuple) and value and all(isinstance(v, int) for v in value) and \
            list(value) == list(range(value[0], value[0] + len(value))):
        return value[0], len(value)
    ctx.error("a mesh's devices are I.Range(first, end) (or a list of consecutive ids)",
              node.span)


def dtensor(ctx: Context, call: S.Call, base: TensorSInfo, mesh_node: S.Expr | None,
            placement_node: S.Expr | None, infos: dict[str, tuple[Any, ...]]) -> DTensorSInfo:
    """`R.DTensor(shape, dtype, "mesh[0]", "S[1]")` given its tensor part `base`."""
    eb_str = literal_value(mesh_node) if mesh_node is not None else None
    if not isinstance(eb_str, str):
        ctx.error("R.DTensor needs its device mesh as a string: \"mesh[0]\"",
                  mesh_node.span if mesh_node is not None else call.span)
    text = literal_value(placement_node) if placement_node is not None else None
    if not isinstance(text, str):
        ctx.error("R.DTensor needs its placement as a string such as \"S[1]\" or \"R\"",
                  placement_node.span if placement_node is not None else call.span)
    assert mesh_node is not None and placement_node is not None
    try:
        mesh = lookup_mesh(infos, eb_str)
    except MeshError as exc:
        ctx.error(str(exc), mesh_node.span)
    ndim = len(base.shape) if base.shape is not None else base.ndim
    try:
        placement = _layout_placement(text, base, mesh) if "@" in text else \
            parse_placement(text, ndim if ndim >= 0 else None)
        placement.check(ndim, mesh.ndim)
    except (PlacementError, LayoutError) as exc:
        ctx.error(str(exc), placement_node.span)
    return DTensorSInfo(base.shape, base.dtype, base.ndim, eb_str, placement, span=call.span)


def _layout_placement(text: str, base: TensorSInfo, mesh: DeviceMesh) -> Placement:
    """The placement an Axe layout string describes for a static-shape tensor."""
    shape = [const_dim(d) for d in base.shape or ()]
    if base.shape is None or any(d is None for d in shape):
        raise LayoutError("a placement written as an Axe layout needs a static shape")
    layout = parse_layout(text)
    if not hasattr(layout, "group"):
        raise LayoutError("a placement layout is a tile layout, not a swizzle")
    return from_layout(layout, [int(d) for d in shape if d is not None], mesh)  # type: ignore[arg-type]
