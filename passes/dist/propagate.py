"""propagate-sharding: a placement for every value of a distributed graph function.

Seeds are the placements the program gives: `R.DTensor` parameters, annotated bindings,
`R.dist.annotate_sharding` and `R.dist.redistribute`, a `R.DTensor` return type. Unknown
placements are inferred by propagating forwards through each operator's factor rule
(passes/dist/rules.py) and backwards from consumers (so weights feeding an annotated value
get split the way it is, as GSPMD and TVM do); a parameter nothing decides is replicated.
Then each binding is resolved in order (passes/dist/resolve.py): where an operand arrives
placed differently from what its operator needs, an explicit `R.dist.redistribute` binding
is inserted before it (visible in `--print-after=propagate-sharding`), and a normalization
over a split axis is written out as reductions of statistics (decompose.py). Every value ends
up typed `R.DTensor(shape, dtype, "mesh[0]", placement)`. A compiler-inserted redistribution
that gathers a whole tensor onto every device (an all-gather or broadcast) is a warning at
the line that needs it.

Options: `uneven` (`-fno-uneven-shards` sets it false: a split that does not divide is an
error) and `mesh` (`--mesh 4` or `--mesh mesh[0]=2x2`: resize the module's meshes).
"""

from __future__ import annotations

import dataclasses
from tirc.ir.lean_dataclass import dataclass
from typing import Any

from tirc.ir.diagnostics import CompileError, DiagnosticContext
from tirc.ir.dist.dtensor import DTensorSInfo, plain, with_placement
from tirc.ir.dist.placement import Partial, Placement, Shard
from tirc.ir.graph import (
    Binding,
    BindingBlock,
    Constant,
    Function,
    GCall,
    GraphExpr,
    GVar,
    If,
    MatchCast,
    SeqExpr,
    StructInfo,
    TensorSInfo,
    Tuple,
    TupleGetItem,
    TupleSInfo,
    VarBinding,
)
from tirc.ir.module import IRModule
from tirc.ir.ops.infer import infer_expr
from tirc.ir.ops.sinfo_util import shape_text
from tirc.ir.span import Span
from tirc.ir.visitor import post_order_visit, substitute
from tirc.passes.dist.decompose import decompose
from tirc.passes.dist.infer import Placed, PlacementInference
from tirc.passes.dist.operands import operand_exprs, with_operands
from tirc.passes.dist.plan import PlanError, plan
from tirc.passes.dist.resolve import resolve
from tirc.passes.dist.rules import rule_for
from tirc.passes.dist.sharded_function import (
    DIST_OPS,
    bind_calls_in_body,
    resize_meshes,
    uses_sharding,
)
from tirc.passes.pass_base import Pass, PassContext, option


def _switch(text: str) -> bool:
    """An on/off config value: 0, false, off and no are off, anything else on."""
    return text.strip().lower() not in ("0", "false", "off", "no")


@dataclass(frozen=True)
class PropagateSharding(Pass):
    """Placements for every value; redistributions where operators need other ones."""

    name = "propagate-sharding"
    description = "give every value of a distributed function a placement (R.DTensor), " \
                  "inserting R.dist.redistribute where an operator needs another"
    uneven: bool = option(True, config="sharding.uneven", parse=_switch,
                          doc="a mesh axis may split a dimension it does not divide "
                              "(-fno-uneven-shards: an error)")
    mesh: str = option("", config="sharding.mesh",
                       doc="run on meshes of this shape instead of the declared ones: 4, 2x2, "
                           "mesh[0]=2x2 (--mesh)")

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        if self.mesh:
            mod = resize_meshes(mod, self.mesh)
        diag = DiagnosticContext()
        out = mod
        for name, func in mod.graph_funcs().items():
            if not uses_sharding(func):
                continue
            branch = _first_if(func)
            if branch is not None:
                diag.error("propagate-sharding: 'if' in a sharded graph function is not "
                           "supported yet", branch.span)
                continue
            try:
                new = _Rewriter(bind_calls_in_body(func, out), out, self.uneven, ctx).run()
            except CompileError as err:
                diag.diagnostics.extend(err.diagnostics)
                continue
            out = out.with_function(name, new)
        diag.check()
        return out


def _first_if(func: Function) -> If | None:
    """The first `if` of a graph function, if it has one (sharding does not enter branches)."""
    found: list[If] = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, If) else None)
    return found[0] if found else None


class _Rewriter(PlacementInference):
    """Phase two: each binding resolved in order, redistributions and decompositions
    written, every variable typed by its placement."""

    def run(self) -> Function:
        self.infer()
        self.final: dict[GVar, Placed] = {}
        self.mapping: dict[GVar, GraphExpr] = {}
        self.counter = 0
        params = []
        for p in self.func.params:
            pl = self.place.get(p)
            if isinstance(pl, Placement) and isinstance(p.struct_info, TensorSInfo):
                new = dataclasses.replace(
                    p, struct_info=with_placement(plain(p.struct_info), self.mesh_ref, pl))  # type: ignore[arg-type]
                self.mapping[p] = new
                self.final[new] = pl
                params.append(new)
            else:
                params.append(p)
        blocks = []
        for blk in self.func.body.blocks:
            out: list[Binding] = []
            for b in blk.bindings:
                self.emit(b, out, blk.is_dataflow)
            outputs = []
            for v in blk.outputs:
                m = self.mapping.get(v, v)
                outputs.append(m if isinstance(m, GVar) else v)
            blocks.append(dataclasses.replace(blk, bindings=tuple(out), outputs=tuple(outputs)))
        body_value = substitute(self.func.body.body, self.mapping)
        body_value, tail = self.finish_return(body_value)
        if tail and blocks and not blocks[-1].is_dataflow:
            blocks[-1] = dataclasses.replace(blocks[-1], bindings=blocks[-1].bindings + tuple(tail))
        elif tail:
            blocks.append(BindingBlock(tuple(tail), False))
        ret = self.sinfo_of(body_value)
        body = SeqExpr(tuple(blocks), body_value, span=self.func.body.span)
        return dataclasses.replace(self.func, params=tuple(params), body=body,
                                   ret_struct_info=ret)

    def finish_return(self, value: GraphExpr) -> tuple[GraphExpr, list[Binding]]:
        """Partial results reduced, and a declared placement of the result reached."""
        tail: list[Binding] = []
        declared = self.func.ret_struct_info
        fields = value.fields if isinstance(value, Tuple) else (value,)
        wants = declared.fields if isinstance(declared, TupleSInfo) else (declared,)
        out = []
        for k, e in enumerate(fields):
            pl = self.placement_of(e, self.final)
            want = wants[k] if k < len(wants) else None
            if isinstance(want, DTensorSInfo):
                target = self.check_pin(want.placement, want, "the return type", self.func.span)
            elif isinstance(pl, Placement) and pl.has_partial:
                target = Placement(tuple(Placement.replicated(1).items[0]
                                         if isinstance(i, Partial) else i for i in pl.items))
            else:
                out.append(e)
                continue
            if isinstance(pl, Placement) and pl != target:
                e = self.redistribute(e, target, tail, False, e.span or self.func.span,
                                      "", explicit=True)
            out.append(e)
        if isinstance(value, Tuple):
            return Tuple(tuple(out), span=value.span), tail
        return out[0], tail

    def fresh(self, base: str, is_dataflow: bool, span: Span | None) -> GVar:
        """A new variable named after `base`."""
        self.counter += 1
        return GVar(f"{base}_r{self.counter}", is_dataflow=is_dataflow, span=span)

    def redistribute(self, e: GraphExpr, target: Placement, out: list[Binding],
                     is_dataflow: bool, span: Span | None, why: str,
                     explicit: bool = False, var: GVar | None = None) -> GVar:
        """Bind `R.dist.redistribute(e, ...)` (to `var`, or a fresh variable)."""
        src = self.placement_of(e, self.final)
        s = plain(self.sinfo_of(e))
        assert isinstance(src, Placement) and isinstance(s, TensorSInfo)
        try:
            steps = plan(src, target)
        except PlanError as exc:
            raise CompileError(f"cannot redistribute '{getattr(e, 'name', 'value')}' from "
                               f"\"{src}\" to \"{target}\": {exc}", span) from None
        if not explicit:
            self.warn_gathers(e, s, steps, span, why)
        name = getattr(e, "name", "v")
        sinfo = with_placement(s, self.mesh_ref, target)
        new = dataclasses.replace(var if var is not None else
                                  self.fresh(name, is_dataflow, span), struct_info=sinfo)
        call = GCall("dist.redistribute", (e,), {"device_mesh": self.mesh_ref,
                                                 "placement": str(target)}, span=span)
        out.append(VarBinding(new, call, span=span))
        self.final[new] = target
        return new

    def warn_gathers(self, e: GraphExpr, s: TensorSInfo, steps: list[Any], span: Span | None,
                     why: str) -> None:
        """A warning when a compiler-inserted plan gathers a whole tensor onto every device."""
        for st in steps:
            if st.op not in ("ccl.allgather", "ccl.broadcast"):
                continue
            what = "all-gathers" if st.op == "ccl.allgather" else "broadcasts"
            nbytes = _bytes(s)
            size = f" ({nbytes} bytes)" if nbytes is not None else ""
            reason = f": {why}" if why else ""
            self.ctx.warn(f"{what} the whole {shape_text(s.shape or ())} {s.dtype} tensor "
                          f"'{getattr(e, 'name', 'value')}'{size} onto every device of mesh axis "
                          f"'{self.mesh.axis_names[st.mesh_axis]}'{reason}", span)
            return

    def emit(self, b: Binding, out: list[Binding], is_dataflow: bool,
             pinned: Placement | None = None) -> None:
        """Resolve one binding into `out` (redistributions first, a decomposition when a
        normalization's axis is split)."""
        value = substitute(b.value, self.mapping)  # type: ignore[attr-defined]
        pinned = pinned or self.pinned.get(b.var)
        if isinstance(value, GCall) and value.op in DIST_OPS:
            self.emit_dist(b, value, out, is_dataflow)
            return
        if not isinstance(value, GCall):
            pl = self.placement_of(value, self.final)
            if isinstance(value, TupleGetItem):
                tup = self.placement_of(value.tuple_value, self.final)
                pl = tup[value.index] if isinstance(tup, tuple) else None
            sinfo = self.placed_sinfo(plain(b.var.struct_info) or self.sinfo_of(value), pl)
            if isinstance(b, MatchCast):
                sinfo_m = self.placed_sinfo(plain(b.struct_info), pl)
                new_var = dataclasses.replace(b.var, struct_info=sinfo_m)
                out.append(dataclasses.replace(b, var=new_var, value=value,
                                               struct_info=sinfo_m))
            else:
                new_var = dataclasses.replace(b.var, struct_info=sinfo)
                out.append(dataclasses.replace(b, var=new_var, value=value))
            self.mapping[b.var] = new_var
            if pl is not None:
                self.final[new_var] = pl
            return
        value, _ = infer_expr(value, self.mod)
        b = dataclasses.replace(b, value=value)
        assert isinstance(b, VarBinding)
        exprs = operand_exprs(value, self.sinfo_of, self.mod)
        sinfos = [plain(self.sinfo_of(e)) for e in exprs]
        out_sinfo = plain(infer_expr(value, self.mod)[1])
        rule = rule_for(value, sinfos, out_sinfo)  # type: ignore[arg-type]
        pls = [self.placement_of(e, self.final) for e in exprs]
        hint = self.place.get(b.var)
        hint_first = hint[0] if isinstance(hint, tuple) else hint
        split = self.splittable(b, rule, sinfos)  # type: ignore[arg-type]
        res = resolve(rule, sinfos, pls, self.mesh,  # type: ignore[arg-type]
                      hint_first if isinstance(hint_first, Placement) else None, split)
        if split and any(isinstance(it, Shard) and rule.operands[0][it.dim] in rule.replicated
                         for it in res.operands[0].items):
            for nb in decompose(b, sinfos[0]):
                self.emit(nb, out, is_dataflow, pinned if nb.var is b.var else None)
            return
        new_args = []
        for i, (e, pl, target) in enumerate(zip(exprs, pls, res.operands)):
            if pl != target and not isinstance(e, Constant):
                e = self.redistribute(e, target, out, is_dataflow, b.span,
                                      self.reason(value, res.why[i]))
            new_args.append(e)
        value = with_operands(value, new_args, self.sinfo_of, self.mod)
        results: Placed = tuple(res.results) if isinstance(out_sinfo, TupleSInfo) \
            else res.results[0]
        if pinned is not None and results != pinned:
            tmp = self.fresh(b.var.name, is_dataflow, b.span)
            tmp = dataclasses.replace(tmp, struct_info=self.placed_sinfo(out_sinfo, results))
            out.append(VarBinding(tmp, value, span=b.span))
            self.final[tmp] = results
            new = self.redistribute(tmp, pinned, out, is_dataflow, b.span, "", explicit=True,
                                    var=b.var)
            self.mapping[b.var] = new
            return
        new_var = dataclasses.replace(b.var, struct_info=self.placed_sinfo(out_sinfo, results))
        out.append(VarBinding(new_var, value, span=b.span))
        self.mapping[b.var] = new_var
        self.final[new_var] = results

    def reason(self, call: GCall, why: str) -> str:
        """Why an operand must be gathered, for the warning."""
        return f"R.{call.op} needs it whole here ({why})" if why else f"R.{call.op} needs it"

    def emit_dist(self, b: Binding, call: GCall, out: list[Binding], is_dataflow: bool) -> None:
        """`annotate_sharding` and explicit `redistribute`: a redistribution when needed."""
        src = call.args[0]
        target = self.pinned[b.var]
        if self.placement_of(src, self.final) == target and isinstance(src, GVar):
            self.mapping[b.var] = src
            return
        new = self.redistribute(src, target, out, is_dataflow, b.span, "", explicit=True,
                                var=b.var)
        self.mapping[b.var] = new

    def placed_sinfo(self, s: StructInfo | None, pl: Placed | None) -> StructInfo | None:
        """Struct info with its placement(s)."""
        if isinstance(s, TensorSInfo) and isinstance(pl, Placement):
            return with_placement(plain(s), self.mesh_ref, pl)  # type: ignore[arg-type]
        if isinstance(s, TupleSInfo) and isinstance(pl, tuple):
            return TupleSInfo(tuple(self.placed_sinfo(f, p)  # type: ignore[misc]
                                    for f, p in zip(s.fields, pl)), span=s.span)
        return s


def _bytes(s: TensorSInfo) -> int | None:
    """A static tensor's bytes (None when symbolic)."""
    n = s.dtype.bytes if s.dtype is not None else None
    for d in s.shape or ():
        v = getattr(d, "value", None)
        if v is None or n is None:
            return None
        n *= v
    return n
