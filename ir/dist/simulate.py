"""A device mesh simulated in one process with numpy: every device's program, in lockstep.

`simulate(mod, "main", *global_arrays)` runs a per-device graph function (after
lower-sharding) on every device of its mesh: it scatters each global argument by its
parameter's placement, interprets each device's bindings with the reference interpreter,
and where a binding is a collective, combines the devices' values with numpy
(`numpy_collectives`), then gathers the results back into global arrays. Fast enough for
unit tests of propagation, local shapes and collective insertion without MPI.
"""

from __future__ import annotations

from tirc.ir.attrs import SHARDING

from collections.abc import Sequence
from typing import Any

import numpy as np
from tirc.ir.dist import numpy_collectives
from tirc.ir.dist.mesh import DeviceMesh
from tirc.ir.dist.placement import Owned, Partial, Placement, Replicate, Shard, parse_placement
from tirc.ir.dist.shard_shape import local_slices
from tirc.ir.expr import IntImm, Var
from tirc.ir.graph import Function, GCall, MatchCast, ShapeSInfo
from tirc.ir.interpreter import Interpreter
from tirc.ir.interpreter.graph import GraphRunner
from tirc.ir.module import IRModule



def global_view(func: Function) -> tuple[DeviceMesh, list[Placement], list[Placement]]:
    """The mesh and the parameter and result placements a per-device function records."""
    view = func.attrs.get(SHARDING)
    if view is None:
        raise ValueError(f"{func.name} is not a per-device function (run lower-sharding)")
    mesh = DeviceMesh(tuple(view["mesh"]), 0, tuple(view.get("axes", ())))
    params = [parse_placement(p) for p in view["params"]]
    results = [parse_placement(p) for p in view["results"]]
    return mesh, params, results


def scatter(array: np.ndarray, placement: Placement, mesh: DeviceMesh,
            coords: Sequence[int]) -> np.ndarray:
    """The part of a global array the device at `coords` holds. A partial value is whole at
    coordinate 0 and the reduction's identity elsewhere (0 for sum, 1 for prod; max and min
    hold it everywhere); an owned one is zeros away from its owner."""
    pairs = list(zip(placement.items, coords))
    part = np.ascontiguousarray(array[local_slices(array.shape, placement, mesh, coords)])
    if any(isinstance(it, Owned) and it.coord != c for it, c in pairs) or \
            any(isinstance(it, Partial) and it.op == "sum" and c for it, c in pairs):
        return np.zeros_like(part)
    if any(isinstance(it, Partial) and it.op == "prod" and c for it, c in pairs):
        return np.ones_like(part)
    return part


def gather(parts: dict[tuple[int, ...], np.ndarray], placement: Placement,
           mesh: DeviceMesh) -> np.ndarray:
    """The global array from every device's part, axis by axis (last mesh axis first)."""
    level = dict(parts)
    for axis in reversed(range(mesh.ndim)):
        item = placement[axis]
        nxt: dict[tuple[int, ...], np.ndarray] = {}
        for key in {k[:axis] + k[axis + 1:] for k in level}:
            group = [level[key[:axis] + (c,) + key[axis:]] for c in range(mesh.shape[axis])]
            if isinstance(item, Shard):
                nxt[key] = np.concatenate(group, axis=item.dim)
            elif isinstance(item, Partial):
                nxt[key] = numpy_collectives.reduce(group, item.op)
            elif isinstance(item, Owned):
                nxt[key] = group[item.coord]
            else:
                nxt[key] = group[0]
        level = nxt
    return level[()]


def simulate(mod: IRModule, name: str, *args: np.ndarray, local: bool = False) -> Any:
    """Run per-device function `name` on a simulated mesh; global results (or, with
    `local=True`, {device coordinates: that device's results})."""
    func = mod.functions[name]
    assert isinstance(func, Function)
    mesh, params, results = global_view(func)
    devices = [mesh.coords(r) for r in range(mesh.size)]
    interp = Interpreter(mod)
    runners = {c: GraphRunner(interp) for c in devices}
    fparams = list(func.params)
    has_coord = bool(fparams) and isinstance(fparams[0].struct_info, ShapeSInfo)
    tensor_params = fparams[1:] if has_coord else fparams
    if len(args) != len(tensor_params):
        raise ValueError(f"{name} takes {len(tensor_params)} arguments, got {len(args)}")
    view = func.attrs[SHARDING]
    sizes = tuple(int(np.shape(args[k])[d]) for k, d, _ in view.get("sizes", {}).values())
    for c, runner in runners.items():
        if has_coord:
            runner.match(fparams[0].struct_info, tuple(c) + sizes, "device_coord")
            runner.values[fparams[0]] = tuple(c) + sizes
        parts = [(p, scatter(np.asarray(a), pl, mesh, c))
                 for p, pl, a in zip(tensor_params, params, args)]
        # Parameters whose sizes are plain variables bind them before the others check theirs.
        for p, part in sorted(parts, key=lambda item: _derived_dims(item[0].struct_info)):
            runner.match(p.struct_info, part, f"argument {p.name} on device {c}")
            runner.values[p] = part
    for block in func.body.blocks:
        for b in block.bindings:
            value = b.value  # type: ignore[attr-defined]
            if isinstance(value, GCall) and value.op.startswith("ccl."):
                _collective(b, value, runners, mesh)
                continue
            for runner in runners.values():
                v = runner.eval(value)
                if isinstance(b, MatchCast):
                    runner.match(b.struct_info, v, f"match_cast of {b.var.name}")
                runner.values[b.var] = v
    outs = {c: r.eval(func.body.body) for c, r in runners.items()}
    if local:
        return outs
    single = not isinstance(next(iter(outs.values())), tuple)
    per_result = [{c: (o if single else o[k]) for c, o in outs.items()}
                  for k in range(1 if single else len(results))]
    gathered = [gather(parts, results[k] if k < len(results) else
                       Placement((Replicate(),) * mesh.ndim), mesh)
                for k, parts in enumerate(per_result)]
    return gathered[0] if single else tuple(gathered)


def _derived_dims(s: Any) -> int:
    """How many dimensions of a tensor's shape are expressions (not a variable or a number)."""
    return sum(1 for d in getattr(s, "shape", None) or () if not isinstance(d, (Var, IntImm)))


def _collective(b: Any, call: GCall, runners: dict[tuple[int, ...], GraphRunner],
                mesh: DeviceMesh) -> None:
    """Run one collective binding: combine the devices' values group by group."""
    axis = int(call.attrs.get("mesh_axis", 0))
    values = {c: r.eval(call.args[0]) for c, r in runners.items()}
    for key in {c[:axis] + c[axis + 1:] for c in runners}:
        members = [key[:axis] + (k,) + key[axis:] for k in range(mesh.shape[axis])]
        outs = numpy_collectives.run(call.op, [values[m] for m in members], call.attrs)
        for m, out in zip(members, outs):
            runners[m].match(b.var.struct_info, out, f"R.{call.op} on device {m}")
            runners[m].values[b.var] = out
