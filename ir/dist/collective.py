"""The collectives: their graph-level operators and the `tirc_ccl_*` C interface they become.

This is the contract between the passes that insert collectives, the backends that call them
and the C shims behind them (runtime/ccl/tirc_ccl.h: MPI for CPU processes, NCCL for GPUs).
Every collective is one C function of the same shape,

    int32_t tirc_ccl_<name>(DLTensor *send, DLTensor *recv, const int64_t *params, int32_t n)

where `params` is `[mesh ndim, mesh shape..., mesh axis, a, b]`: the group is the devices
that differ from the caller only along `mesh axis` (a mesh of shape (0,) is every process);
`a` and `b` are the collective's own integers below. Tensors are row-major and local (each device's part); a split dimension is
balanced (see shard_shape). `shard` moves no data between devices: it copies the caller's
part of a replicated tensor.
"""

from __future__ import annotations

from tirc.ir.lean_dataclass import dataclass
from typing import Any

from tirc.ir.dist.mesh import lookup_mesh
from tirc.ir.graph import GCall

# Reduction codes shared with the C shims.
REDUCE_CODES = {"sum": 0, "prod": 1, "max": 2, "min": 3}


@dataclass(frozen=True)
class Collective:
    """One collective: graph operator, C function, and the meaning of its two integers."""

    op: str               # graph operator, without `R.`
    symbol: str           # C function
    a: str                # attribute giving params[a] ("" for 0)
    b: str                # attribute giving params[b] ("" for 0)
    moves_data: bool = True


COLLECTIVES = {c.op: c for c in (
    Collective("ccl.allreduce", "tirc_ccl_all_reduce", "op_type", ""),
    Collective("ccl.allgather", "tirc_ccl_all_gather", "axis", ""),
    Collective("ccl.reduce_scatter", "tirc_ccl_reduce_scatter", "axis", "op_type"),
    Collective("ccl.all_to_all", "tirc_ccl_all_to_all", "split_axis", "concat_axis"),
    Collective("ccl.broadcast", "tirc_ccl_broadcast", "root", ""),
    Collective("ccl.shard", "tirc_ccl_shard", "axis", "", moves_data=False),
    Collective("ccl.scatter", "tirc_ccl_scatter", "axis", "root"),
    Collective("ccl.broadcast_from_worker0", "tirc_ccl_broadcast", "root", ""),
    Collective("ccl.scatter_from_worker0", "tirc_ccl_scatter", "axis", "root"),
)}

# The name a report and a diagnostic use for each (the kebab-case of MPI's and NCCL's names).
KIND_NAMES = {
    "ccl.allreduce": "all-reduce", "ccl.allgather": "all-gather",
    "ccl.reduce_scatter": "reduce-scatter", "ccl.all_to_all": "all-to-all",
    "ccl.broadcast": "broadcast", "ccl.shard": "local shard", "ccl.scatter": "scatter",
    "ccl.broadcast_from_worker0": "broadcast", "ccl.scatter_from_worker0": "scatter",
}


CCL_PREFIX = "tirc_ccl_"


def is_ccl_symbol(symbol: str) -> bool:
    """True for the C functions of the collective interface (resolved at load time)."""
    return symbol.startswith(CCL_PREFIX)


def is_collective(op: str) -> bool:
    """True for the graph operators that are collectives (`ccl.*`)."""
    return op in COLLECTIVES


def param_value(attr: str, attrs: dict[str, object]) -> int:
    """The integer a collective passes for one of its attributes."""
    if not attr:
        return 0
    value = attrs[attr]
    if attr == "op_type":
        return REDUCE_CODES[str(value)]
    assert isinstance(value, int)
    return value


def ccl_params(coll: Collective, mesh_shape: tuple[int, ...], mesh_axis: int,
               attrs: dict[str, object]) -> list[int]:
    """The `params` array of one call."""
    return [len(mesh_shape), *mesh_shape, mesh_axis, param_value(coll.a, attrs),
            param_value(coll.b, attrs)]


def collective_call(call: GCall, global_infos: dict[str, tuple[Any, ...]]) -> tuple[str, list[int]]:
    """The C function and `params` of one `R.ccl.*` call (defaults filled in)."""
    from tirc.ir.ops.registry import bind_call, get_op

    op = get_op(call.op)
    assert op is not None
    values, _ = bind_call(op, call)
    coll = COLLECTIVES[call.op]
    if not values["device_mesh"]:  # every process: a mesh of one axis, sized at run time
        return coll.symbol, ccl_params(coll, (0,), 0, values)
    mesh = lookup_mesh(global_infos, str(values["device_mesh"]))
    axis = mesh.axis_index(values["mesh_axis"])
    return coll.symbol, ccl_params(coll, mesh.shape, axis, values)
