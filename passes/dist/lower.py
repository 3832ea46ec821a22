"""lower-sharding: a distributed graph function becomes the program each device runs.

After propagate-sharding every value is an `R.DTensor` (global shape, placement). This pass
(TVM's LowerGlobalViewToLocalView) rewrites the function over per-device tensors:

- every struct info becomes the local shape of its placement (`S[1]` of (128, 256) on two
  devices is (128, 128)); a split that does not divide gives shapes in the program's mesh
  coordinate (`(5 + 1 - coord_d0) // 2`), which the function then takes as a first parameter
  `device_coord: R.Shape([coord_d0, ...])` that the runtime fills in, together with any
  symbolic size that every parameter has split (a data-parallel batch `n`): the device
  cannot read it from its own arguments;
- each `R.dist.redistribute` becomes the collectives of its plan (passes/dist/plan.py):
  `R.ccl.allreduce`, `allgather`, `reduce_scatter`, `all_to_all`, `broadcast`, `shard`;
- operators whose attributes hold sizes get local ones (reshape, broadcast_to,
  collapse_sum_to, full, zeros, ones), and a `mean` over a split dimension divides its local
  sum by the global count.

The function records its global view in the attribute `tirc.sharding` (mesh shape and the
placement of every parameter and result), which the runtime reads to scatter and gather.
"""

from __future__ import annotations

from tirc.ir.attrs import SHARDING

import dataclasses
import math
from tirc.ir.lean_dataclass import dataclass
from typing import Any

from tirc.ir.diagnostics import CompileError, DiagnosticContext
from tirc.ir.dist.dtensor import DTensorSInfo, is_distributed
from tirc.ir.dist.mesh import DeviceMesh, lookup_mesh
from tirc.ir.dist.placement import Shard
from tirc.ir.dist.shard_shape import coord_var, is_even, local_shape
from tirc.ir.expr import Var
from tirc.ir.graph import (
    Binding,
    Constant,
    Function,
    GCall,
    GraphExpr,
    GVar,
    MatchCast,
    SeqExpr,
    ShapeExpr,
    ShapeSInfo,
    StructInfo,
    TensorSInfo,
    TupleSInfo,
    VarBinding,
)
from tirc.ir.module import IRModule
from tirc.ir.ops.sinfo_util import const_dim, normalize_axis, shape_vars
from tirc.ir.visitor import substitute
from tirc.passes.dist.plan import plan
from tirc.passes.graph.normalize import normalize_function
from tirc.passes.pass_base import Pass, PassContext

COORD_PARAM = "device_coord"
SIZED = ("reshape", "broadcast_to", "collapse_sum_to", "full", "zeros", "ones")


@dataclass(frozen=True)
class LowerSharding(Pass):
    """Distributed graph functions -> per-device graph functions with collectives."""

    name = "lower-sharding"
    description = "turn each distributed function into the per-device program: local " \
                  "shapes, R.ccl.* collectives for every redistribution"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """The per-device function."""
        diag = DiagnosticContext()
        out = mod
        for name, func in mod.graph_funcs().items():
            if not _distributed(func):
                continue
            try:
                new = _Lowering(func, out).run()
            except CompileError as err:
                diag.diagnostics.extend(err.diagnostics)
                continue
            out = out.with_function(name, new)
        diag.check()
        return out


def _distributed(func: Function) -> bool:
    """True when a graph function has a distributed parameter or result."""
    return any(is_distributed(p.struct_info) for p in func.params) or \
        is_distributed(func.ret_struct_info)


def _mesh_ref(func: Function) -> str:
    """The mesh ("mesh[0]") a distributed function runs on."""
    for p in func.params:
        if isinstance(p.struct_info, DTensorSInfo):
            return p.struct_info.device_mesh
    s = func.ret_struct_info
    fields = s.fields if isinstance(s, TupleSInfo) else (s,)
    for f in fields:
        if isinstance(f, DTensorSInfo):
            return f.device_mesh
    raise CompileError(f"{func.name}: no distributed parameter or result", func.span)


class _Lowering:
    """The per-device program of one distributed function."""
    def __init__(self, func: Function, mod: IRModule) -> None:
        self.func = func
        self.mod = mod
        self.mesh_ref = _mesh_ref(func)
        self.mesh: DeviceMesh = lookup_mesh(mod.global_infos, self.mesh_ref)
        self.coords: list[Var] = [coord_var(n) for n in self.mesh.axis_names]
        self.used_coords = False
        self.sizes: dict[Var, tuple[int, int, int]] = {}
        self.mapping: dict[GVar, GraphExpr] = {}
        self.counter = 0

    def local(self, s: StructInfo | None) -> StructInfo | None:
        """The per-device struct info of a (possibly distributed) one."""
        if isinstance(s, DTensorSInfo):
            assert s.shape is not None
            for axis, item in enumerate(s.placement.items):
                if isinstance(item, Shard) and not is_even(s.shape[item.dim],
                                                           self.mesh.shape[axis]):
                    self.used_coords = True
            shape = local_shape(s.shape, s.placement, self.mesh, self.coords)
            return TensorSInfo(shape, s.dtype, len(shape), span=s.span)
        if isinstance(s, TupleSInfo):
            return TupleSInfo(tuple(self.local(f) for f in s.fields), span=s.span)  # type: ignore[misc]
        return s

    def run(self) -> Function:
        """The per-device function."""
        self.split_sizes()
        params = []
        for p in self.func.params:
            new = dataclasses.replace(p, struct_info=self.local(p.struct_info))
            self.mapping[p] = new
            params.append(new)
        blocks = []
        for blk in self.func.body.blocks:
            out: list[Binding] = []
            for b in blk.bindings:
                self.binding(b, out, blk.is_dataflow)
            outputs = tuple(self.mapping.get(v, v) for v in blk.outputs)
            blocks.append(dataclasses.replace(blk, bindings=tuple(out),
                                              outputs=outputs))  # type: ignore[arg-type]
        body_value = substitute(self.func.body.body, self.mapping)
        attrs = dict(self.func.attrs)
        attrs[SHARDING] = self.global_view()
        if self.used_coords:
            values = (*self.coords, *self.sizes)
            coord = GVar(COORD_PARAM, ShapeSInfo(values, len(values)), span=self.func.span)
            params.insert(0, coord)
        func = dataclasses.replace(
            self.func, params=tuple(params),
            body=SeqExpr(tuple(blocks), body_value, span=self.func.body.span),
            ret_struct_info=self.local(self.func.ret_struct_info), attrs=attrs)
        return normalize_function(func, self.mod)

    def split_sizes(self) -> None:
        """Symbolic sizes that every parameter has split: a device cannot read them from its
        arguments, so they join the mesh coordinates as values the program is given (the
        runtime knows them from the global arrays, or sums the local sizes)."""
        whole: set[Var] = set()
        split: dict[Var, tuple[int, int, int]] = {}
        params = [p for p in self.func.params if isinstance(p.struct_info, TensorSInfo)]
        for k, p in enumerate(params):
            s = p.struct_info
            if s.shape is None:  # type: ignore[union-attr]
                continue
            dims = s.placement.sharded_dims() if isinstance(s, DTensorSInfo) else {}
            for d, e in enumerate(s.shape):  # type: ignore[union-attr]
                for v in shape_vars([e]):
                    if d in dims:
                        split.setdefault(v, (k, d, dims[d]))
                    else:
                        whole.add(v)
        self.sizes = {v: where for v, where in split.items() if v not in whole}
        if self.sizes:
            self.used_coords = True

    def global_view(self) -> dict[str, Any]:
        """Mesh shape and placements of parameters and results, for the runtime."""
        def placements(sinfos: list[StructInfo | None]) -> list[str]:
            """The placement text of each struct info ("R" for a plain tensor)."""
            return [str(s.placement) if isinstance(s, DTensorSInfo) else "R" for s in sinfos]

        ret = self.func.ret_struct_info
        results = list(ret.fields) if isinstance(ret, TupleSInfo) else [ret]
        view = {"mesh": list(self.mesh.shape), "axes": list(self.mesh.axis_names),
                "params": placements([p.struct_info for p in self.func.params]),
                "results": placements(results)}
        if self.used_coords:
            view["coords"] = [v.name for v in self.coords]
        if self.sizes:
            view["sizes"] = {v.name: list(where) for v, where in self.sizes.items()}
        return view

    def fresh(self, base: str, is_dataflow: bool, span: Any) -> GVar:
        """A new variable named after `base`."""
        self.counter += 1
        return GVar(f"{base}_{self.counter}", is_dataflow=is_dataflow, span=span)

    def binding(self, b: Binding, out: list[Binding], is_dataflow: bool) -> None:
        """Lower one binding into `out`: local struct info, collectives for redistributions."""
        value = substitute(b.value, self.mapping)  # type: ignore[attr-defined]
        sinfo = self.local(b.var.struct_info)
        if isinstance(value, GCall) and value.op == "dist.redistribute":
            self.redistribute(b, value, out, is_dataflow)
            return
        if isinstance(value, GCall):
            value = self.localize_call(b, value, out, is_dataflow)
        new_var = dataclasses.replace(b.var, struct_info=sinfo)
        if isinstance(b, MatchCast):
            out.append(dataclasses.replace(b, var=new_var, value=value,
                                           struct_info=self.local(b.struct_info)))
        else:
            out.append(VarBinding(new_var, value, span=b.span))
        self.mapping[b.var] = new_var

    def redistribute(self, b: Binding, call: GCall, out: list[Binding], is_dataflow: bool) -> None:
        """The collectives of one `R.dist.redistribute`, the last binding its variable."""
        src_expr = b.value.args[0]  # type: ignore[attr-defined]
        src = _dtensor(b, src_expr, self.func)
        dst = b.var.struct_info
        assert isinstance(dst, DTensorSInfo) and src.shape is not None
        steps = [st for st in plan(src.placement, dst.placement)
                 if self.mesh.shape[st.mesh_axis] > 1]  # a group of one device moves nothing
        cur = call.args[0]
        for k, st in enumerate(steps):
            after = dataclasses.replace(dst, placement=st.after)
            local = self.local(after)
            attrs = {"device_mesh": self.mesh_ref, "mesh_axis": st.mesh_axis, **st.attrs}
            sinfo_args = (local,) if st.op not in ("ccl.allreduce", "ccl.broadcast") else ()
            var = dataclasses.replace(b.var if k == len(steps) - 1 else
                                      self.fresh(b.var.name, is_dataflow, b.span),
                                      struct_info=local)
            out.append(VarBinding(var, GCall(st.op, (cur,), attrs, sinfo_args,  # type: ignore[arg-type]
                                             span=call.span), span=b.span))
            cur = var
        if not steps:
            var = dataclasses.replace(b.var, struct_info=self.local(dst))
            out.append(VarBinding(var, cur, span=b.span))
            cur = var
        self.mapping[b.var] = cur

    def localize_call(self, b: Binding, call: GCall, out: list[Binding],
                      is_dataflow: bool) -> GCall:
        """Sizes in attributes made local; a mean over a split dimension made a sum / N."""
        result = b.var.struct_info
        if call.op in SIZED and isinstance(result, DTensorSInfo):
            local = self.local(result)
            assert isinstance(local, TensorSInfo) and local.shape is not None
            args = list(call.args)
            k = 1 if call.op in ("reshape", "broadcast_to", "collapse_sum_to") else 0
            if k < len(args) and isinstance(args[k], ShapeExpr):
                args[k] = ShapeExpr(local.shape, span=args[k].span)
            return dataclasses.replace(call, args=tuple(args))
        if call.op == "mean":
            x = _dtensor(b, b.value.args[0], self.func)  # type: ignore[attr-defined]
            assert x.shape is not None
            nd = len(x.shape)
            axes = call.attrs.get("axis")
            reduced = list(range(nd)) if axes is None else \
                [normalize_axis(int(a), nd) for a in axes]
            split = x.placement.sharded_dims()
            if any(a in split for a in reduced):
                count = math.prod(const_dim(x.shape[a]) or 0 for a in reduced if a is not None)
                if count <= 0:
                    raise CompileError("R.mean over a split dimension needs static sizes",
                                       call.span)
                total = self.fresh(b.var.name + "_sum", is_dataflow, b.span)
                local = self.local(b.var.struct_info)
                total = dataclasses.replace(total, struct_info=local)
                out.append(VarBinding(total, dataclasses.replace(call, op="sum"), span=b.span))
                assert x.dtype is not None
                return GCall("divide", (total, Constant(count, x.dtype)), span=call.span)
        return call


def _dtensor(b: Binding, e: GraphExpr, func: Function) -> DTensorSInfo:
    """The DTensor struct info of an operand of `b` (an error if it has none)."""
    s = e.struct_info if isinstance(e, GVar) else None
    if not isinstance(s, DTensorSInfo):
        raise CompileError(f"lower-sharding: '{b.var.name}' reads a value without a placement "
                           "(run propagate-sharding first)", b.span or func.span)
    return s

