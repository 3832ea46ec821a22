"""Distributed-tensor operators (TVM's `R.dist.*`) and the collectives (`R.ccl.*`).

Global view: `R.dist.annotate_sharding(x, device_mesh="mesh[0]", placement="S[1]")` asks for a
placement at a value (propagation takes it as a seed); `R.dist.redistribute(x, ...)` changes
one explicitly (propagate-sharding writes these where placements change). Per-device view
(after lower-sharding): `R.ccl.allreduce`, `allgather`, `reduce_scatter`, `all_to_all`,
`broadcast`, `scatter` and `shard` on each device's local tensor, over one mesh axis; those
that change a dimension give their result's struct info as `out_sinfo`. Without a
`device_mesh` a collective's group is every process, as in TVM's disco
(`R.ccl.allreduce(x, "sum")`, `R.ccl.allgather(x, num_workers=2)`,
`R.ccl.broadcast_from_worker0(x)`, `R.ccl.scatter_from_worker0(x, num_workers=2, axis=1)`).
"""

from __future__ import annotations

from tirc.ir.dist.dtensor import DTensorSInfo, with_placement
from tirc.ir.dist.mesh import DeviceMesh, MeshError, lookup_mesh
from tirc.ir.dist.placement import REDUCE_OPS, PlacementError, parse_placement
from tirc.ir.expr import binop
from tirc.ir.graph import StructInfo, TensorSInfo
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import const_dim, dim, dims_equal, shape_text, simplify_dim


def call_mesh(oc: OpCall) -> DeviceMesh | None:
    """The mesh named by the call's `device_mesh` (None for "": every process, TVM's disco
    group); an error at the call when the module declares no such mesh."""
    if not oc.values["device_mesh"]:
        return None
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


def _group(oc: OpCall) -> tuple[TensorSInfo, int | None]:
    """A collective's input and the size of its group (None: every process), checked."""
    x = oc.tensor("x")
    mesh = call_mesh(oc)
    if mesh is None:
        if oc.values["mesh_axis"] not in (0, "0"):
            oc.error("without a device_mesh the group is every process: mesh_axis must be 0")
        size = None
    else:
        try:
            size = mesh.shape[mesh.axis_index(oc.values["mesh_axis"])]
        except MeshError as exc:
            oc.error(str(exc))
    if not oc.values.get("in_group", True):
        oc.error("unsupported: in_group=False (a collective across disco's worker groups)")
    if isinstance(x, DTensorSInfo):
        oc.error("takes a per-device tensor; collectives on distributed tensors are inserted by "
                 "the compiler (write R.dist.redistribute)")
    op_type = oc.values.get("op_type")
    if op_type is not None and op_type not in REDUCE_OPS:
        oc.error(f"op_type must be one of {', '.join(REDUCE_OPS)}, got '{op_type}'")
    root = oc.values.get("root")
    if root is not None and size is not None and not 0 <= root < size:
        oc.error(f"root {root} is not a coordinate of mesh axis {oc.values['mesh_axis']} "
                 f"(size {size})")
    return x, size


def _same(oc: OpCall) -> StructInfo:
    """A collective whose result has the input's shape."""
    return _group(oc)[0]


def _resized(oc: OpCall) -> StructInfo:
    """A collective whose result differs from its input in one dimension: `out_sinfo`, or
    TVM's `num_workers` for an even split (allgather multiplies, scatter divides)."""
    x, _ = _group(oc)
    assert x.shape is not None
    outs = oc.call.sinfo_args or oc.values.get("out_sinfo") or ()
    workers = oc.values.get("num_workers")
    if not outs and workers is not None:
        axis = oc.axis(oc.values.get("axis") or 0, len(x.shape))
        dims = list(x.shape)
        if oc.op.name == "ccl.allgather":
            dims[axis] = simplify_dim(binop("mul", dims[axis], dim(workers)))
        elif const_dim(dims[axis]) is not None and const_dim(dims[axis]) % workers == 0:
            dims[axis] = dim(const_dim(dims[axis]) // workers)
        else:
            oc.error(f"dimension {axis} ({shape_text(x.shape)}) does not split evenly into "
                     f"{workers} workers; give out_sinfo")
        return TensorSInfo(tuple(dims), x.dtype, len(dims))
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


_MESH = [Param("device_mesh", "str", ""), Param("mesh_axis", "int", 0)]
_X = Param("x", "tensor")
_OUT = Param("out_sinfo", "sinfo", None)
register("ccl.allreduce", [_X, Param("op_type", "str", "sum"), *_MESH,
                           Param("in_group", "bool", True)], _same)
register("ccl.broadcast", [_X, *_MESH, Param("root", "int", 0)], _same)
register("ccl.allgather", [_X, Param("num_workers", "int", None), *_MESH,
                           Param("axis", "int", 0), _OUT, Param("in_group", "bool", True)],
         _resized)
register("ccl.shard", [_X, *_MESH, Param("axis", "int", 0), _OUT], _resized)
register("ccl.reduce_scatter", [_X, Param("op_type", "str", "sum"), *_MESH,
                                Param("axis", "int", 0), _OUT], _resized)
register("ccl.all_to_all", [_X, *_MESH, Param("split_axis", "int", 0),
                            Param("concat_axis", "int", 0), _OUT], _resized)
register("ccl.scatter", [_X, *_MESH, Param("root", "int", 0), Param("axis", "int", 0), _OUT],
         _resized)
# TVM's disco spellings: worker 0 of the whole group broadcasts or scatters.
register("ccl.broadcast_from_worker0", [_X, *_MESH, Param("root", "int", 0)], _same)
register("ccl.scatter_from_worker0", [_X, Param("num_workers", "int", None),
                                      Param("axis", "int", 0), *_MESH, Param("root", "int", 0),
                                      _OUT], _resized)
