"""Distributed-tensor operators (TVM's `R.dist.*`) and the collectives (`R.ccl.*`).

Global view: `R.dist.annotate_sharding(x, device_mesh="mesh[0]", placement="S[1]")` asks for a
placement at a value (propagation takes it as a seed); `R.dist.redistribute(x, ...)` changes
one explicitly (propagate-sharding writes these where placements change). Per-device view
(after lower-sharding): `R.ccl.allreduce`, `allgather`, `reduce_scatter`, `all_to_all`,
`broadcast` and `shard` on each device's local tensor, over one mesh axis; those that change a
dimension give their result's struct info as `out_sinfo`.
"""

from __future__ import annotations

from tirc.ir.dist.dtensor import DTensorSInfo, with_placement
from tirc.ir.dist.mesh import DeviceMesh, MeshError, lookup_mesh
from tirc.ir.dist.placement import REDUCE_OPS, PlacementError, parse_placement
from tirc.ir.graph import StructInfo, TensorSInfo
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import dims_equal, shape_text


def call_mesh(oc: OpCall) -> DeviceMesh:
    """The mesh named by the call's `device_mesh`; an error at the call when there is none."""
    infos = getattr(oc.module, "global_infos", None) or {}
    try:
        return lookup_mesh(infos, oc.values["device_mesh"])
    except MeshError as exc:
        oc.error(str(exc))


def _placed(oc: OpCall) -> StructInfo:
    """annotate_sharding / redistribute: the value as a DTensor with the placement asked for."""
    x = oc.tensor("x")
    assert x.shape is not None
    mesh = call_mesh(oc)
    try:
        placement = parse_placement(oc.values["placement"], len(x.shape))
        placement.check(len(x.shape), mesh.ndim)
    except PlacementError as exc:
        oc.error(str(exc))
    plain_x = x.tensor() if isinstance(x, DTensorSInfo) else x
    return with_placement(plain_x, oc.values["device_mesh"], placement)


for _name in ("dist.annotate_sharding", "dist.redistribute"):
    register(_name, [Param("x", "tensor"), Param("device_mesh", "str"),
                     Param("placement", "str")], _placed)


def _group(oc: OpCall) -> tuple[TensorSInfo, DeviceMesh, int]:
    """A collective's input and its mesh axis, checked."""
    x = oc.tensor("x")
    mesh = call_mesh(oc)
    try:
        axis = mesh.axis_index(oc.values["mesh_axis"])
    except MeshError as exc:
        oc.error(str(exc))
    if isinstance(x, DTensorSInfo):
        oc.error("takes a per-device tensor; collectives on distributed tensors are inserted by "
                 "the compiler (write R.dist.redistribute)")
    op_type = oc.values.get("op_type")
    if op_type is not None and op_type not in REDUCE_OPS:
        oc.error(f"op_type must be one of {', '.join(REDUCE_OPS)}, got '{op_type}'")
    return x, mesh, axis


def _same(oc: OpCall) -> StructInfo:
    """A collective whose result has the input's shape."""
    x, mesh, axis = _group(oc)
    root = oc.values.get("root")
    if root is not None and not 0 <= root < mesh.shape[axis]:
        oc.error(f"root {root} is not a coordinate of mesh axis {axis} (size "
                 f"{mesh.shape[axis]})")
    return x


def _resized(oc: OpCall) -> StructInfo:
    """A collective whose result differs from its input in one dimension (`out_sinfo`)."""
    x, _, _ = _group(oc)
    assert x.shape is not None
    outs = oc.call.sinfo_args or oc.values.get("out_sinfo") or ()
    if len(outs) != 1 or not isinstance(outs[0], TensorSInfo) or outs[0].shape is None:
        oc.error("needs out_sinfo: the per-device result, R.Tensor(shape, dtype)")
    out = outs[0]
    changed = [oc.axis(oc.values[k], len(x.shape)) for k in ("axis", "split_axis", "concat_axis")
               if oc.values.get(k) is not None]
    if len(out.shape) != len(x.shape) or (out.dtype is not None and out.dtype != x.dtype):
        oc.error(f"out_sinfo {shape_text(out.shape)} {out.dtype} does not fit the input "
                 f"{shape_text(x.shape)} {x.dtype}")
    for k, (a, b) in enumerate(zip(x.shape, out.shape)):
        if k not in changed and not dims_equal(a, b):
            oc.error(f"out_sinfo changes dimension {k}, which this collective keeps")
    return TensorSInfo(out.shape, x.dtype, len(out.shape))


_MESH = [Param("device_mesh", "str", "mesh[0]"), Param("mesh_axis", "int", 0)]
register("ccl.allreduce", [Param("x", "tensor"), Param("op_type", "str", "sum"), *_MESH], _same)
register("ccl.broadcast", [Param("x", "tensor"), *_MESH, Param("root", "int", 0)], _same)
register("ccl.allgather", [Param("x", "tensor"), *_MESH, Param("axis", "int", 0),
                           Param("out_sinfo", "sinfo", None)], _resized)
register("ccl.shard", [Param("x", "tensor"), *_MESH, Param("axis", "int", 0),
                       Param("out_sinfo", "sinfo", None)], _resized)
register("ccl.reduce_scatter", [Param("x", "tensor"), Param("op_type", "str", "sum"), *_MESH,
                                Param("axis", "int", 0), Param("out_sinfo", "sinfo", None)],
         _resized)
register("ccl.all_to_all", [Param("x", "tensor"), *_MESH, Param("split_axis", "int", 0),
                            Param("concat_axis", "int", 0), Param("out_sinfo", "sinfo", None)],
         _resized)
