"""`--report-collectives`: every collective the compiler inserted, its line and its bytes.

Read from the per-device functions after lower-sharding: one row per `R.ccl.*` binding with
the source line it serves, the collective, the mesh axis and group size, the tensor, and two
byte counts per device: `payload` (the local tensor handed to the collective) and `traffic`
(what a bandwidth-optimal algorithm sends from each device: a ring all-reduce sends
2(p-1)/p of the tensor, an all-gather (p-1) local parts, a reduce-scatter and an all-to-all
(p-1)/p, a broadcast the tensor from the root, a shard nothing). Sizes may be symbolic.
"""

from __future__ import annotations

import sys
from tirc.ir.lean_dataclass import dataclass
from typing import TextIO

from tirc.ir.dist.collective import KIND_NAMES, is_collective
from tirc.ir.dist.mesh import lookup_mesh
from tirc.ir.expr import IntImm, PrimExpr, binop
from tirc.ir.graph import Function, GCall, GVar, TensorSInfo
from tirc.ir.module import IRModule
from tirc.ir.ops.sinfo_util import dim, product, shape_text, simplify_dim
from tirc.ir.span import Span
from tirc.passes.manager import Instrument, PassRun
from tirc.passes.pass_base import Pass, PassContext


@dataclass(frozen=True)
class Record:
    """One inserted collective."""

    function: str
    kind: str
    detail: str
    axis: str
    group: int | None
    value: str
    dtype: str
    shape: tuple[PrimExpr, ...]
    payload: PrimExpr
    traffic: PrimExpr | None
    span: Span | None

    def line(self) -> str:
        """One line of the report."""
        where = f"{self.span.file}:{self.span.line}" if self.span is not None else self.function
        group = f"{self.axis} ({self.group} devices)" if self.group is not None else \
            "every process"
        sent = f"{_text(self.traffic)} bytes sent per device" if self.traffic is not None \
            else "traffic depends on the number of processes"
        return (f"{where}: {self.kind}{self.detail} over {group} of {self.value}: {self.dtype} "
                f"{shape_text(self.shape)}, {_text(self.payload)} bytes per device, {sent}")


def _text(e: PrimExpr) -> str:
    """A dimension expression as the report prints it."""
    return shape_text([e])[1:-2]


def _scaled(e: PrimExpr, num: int, den: int) -> PrimExpr:
    """`e * num / den`, simplified."""
    if isinstance(e, IntImm):
        return IntImm(e.value * num // den, e.dtype)
    return simplify_dim(binop("floordiv", binop("mul", e, IntImm(num, e.dtype)),
                              IntImm(den, e.dtype)))


def records(mod: IRModule) -> list[Record]:
    """The collectives of every per-device graph function of `mod`, in order."""
    out: list[Record] = []
    for f in mod.functions.values():
        if isinstance(f, Function):
            out.extend(_function_records(f, mod))
    return out


def _function_records(f: Function, mod: IRModule) -> list[Record]:
    """The collectives of one per-device function."""
    out = []
    for blk in f.body.blocks:
        for b in blk.bindings:
            call = getattr(b, "value", None)
            if not isinstance(call, GCall) or not is_collective(call.op):
                continue
            x = call.args[0]
            s = x.struct_info if isinstance(x, GVar) else None
            if not isinstance(s, TensorSInfo) or s.shape is None or s.dtype is None:
                continue
            payload = simplify_dim(binop("mul", dim(product(s.shape)), dim(s.dtype.bytes)))
            ref = str(call.attrs.get("device_mesh", ""))
            if not ref:  # every process: its size is known only at run time
                out.append(Record(f.name, KIND_NAMES[call.op], "", "", None, x.name,
                                  str(s.dtype), s.shape, payload, None, call.span or b.span))
                continue
            mesh = lookup_mesh(mod.global_infos, ref)
            axis = mesh.axis_index(call.attrs.get("mesh_axis", 0))
            p = mesh.shape[axis]
            traffic = {
                "ccl.allreduce": _scaled(payload, 2 * (p - 1), p),
                "ccl.allgather": _scaled(payload, p - 1, 1),
                "ccl.reduce_scatter": _scaled(payload, p - 1, p),
                "ccl.all_to_all": _scaled(payload, p - 1, p),
                "ccl.broadcast": payload,
                "ccl.broadcast_from_worker0": payload,
                "ccl.scatter": _scaled(payload, p - 1, p),
                "ccl.scatter_from_worker0": _scaled(payload, p - 1, p),
                "ccl.shard": IntImm(0, payload.dtype),
            }[call.op]
            detail = ""
            if "op_type" in call.attrs or call.op in ("ccl.allreduce", "ccl.reduce_scatter"):
                detail = f" ({call.attrs.get('op_type', 'sum')})"
            if call.op in ("ccl.allgather", "ccl.reduce_scatter", "ccl.shard", "ccl.scatter"):
                detail += f" along dimension {call.attrs.get('axis', 0)}"
            if call.op == "ccl.all_to_all":
                detail = (f" (split {call.attrs.get('split_axis', 0)}, concat "
                          f"{call.attrs.get('concat_axis', 0)})")
            out.append(Record(f.name, KIND_NAMES[call.op], detail, mesh.axis_names[axis], p,
                              x.name, str(s.dtype), s.shape, payload, traffic,
                              call.span or b.span))
    return out


def render(rows: list[Record]) -> str:
    """The report's text: one line per collective and a total."""
    if not rows:
        return "tirc: no collectives\n"
    lines = [f"tirc: {len(rows)} collective{'s' if len(rows) != 1 else ''}:"]
    lines += ["  " + r.line() for r in rows]
    return "\n".join(lines) + "\n"


class ReportCollectives(Instrument):
    """Prints the report after each run of lower-sharding (to stderr)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream
        self.printed = False

    def after_pass(self, p: Pass, before: IRModule, after: IRModule, ctx: PassContext,
                   run: PassRun) -> None:
        """Print the report after lower-sharding."""
        if p.name == "lower-sharding":
            (self.stream or sys.stderr).write(render(records(after)))
            self.printed = True

    def exit_pipeline(self, mod: IRModule, ctx: PassContext) -> None:
        """Say so when lower-sharding never ran."""
        if not self.printed:
            (self.stream or sys.stderr).write("tirc: no collectives (lower-sharding did not "
                                              "run)\n")
