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
from dataclasses import dataclass
from typing import Any

from tirc.ir.diagnostics import CompileError, DiagnosticContext
from tirc.ir.dist.dtensor import DTensorSInfo, is_distributed, plain, with_placement
from tirc.ir.dist.mesh import DeviceMesh, MeshError, lookup_mesh, parse_mesh_ref, parse_mesh_shape
from tirc.ir.dist.placement import Owned, Partial, Placement, PlacementError, Shard, parse_placement
from tirc.ir.dist.shard_shape import is_even
from tirc.ir.graph import (
    Binding,
    BindingBlock,
    Constant,
    Function,
    GCall,
    GraphExpr,
    GVar,
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
from tirc.passes.dist.decompose import can_decompose, decompose
from tirc.passes.dist.operands import operand_exprs, with_operands
from tirc.passes.dist.plan import PlanError, plan
from tirc.passes.dist.resolve import resolve
from tirc.passes.dist.rules import Rule, rule_for
from tirc.passes.pass_base import Pass, PassContext

DIST_OPS = ("dist.annotate_sharding", "dist.redistribute")
Placed = Placement | tuple[Any, ...]


@dataclass(frozen=True)
class PropagateSharding(Pass):
    """Placements for every value; redistributions where operators need other ones."""

    name = "propagate-sharding"
    description = "give every value of a distributed function a placement (R.DTensor), " \
                  "inserting R.dist.redistribute where an operator needs another"
    uneven: bool = True
    mesh: str = ""

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        uneven = self.uneven and ctx.config.get("sharding.uneven", "1").lower() not in \
            ("0", "false", "off")
        spec = self.mesh or ctx.config.get("sharding.mesh", "")
        if spec:
            mod = resize_meshes(mod, spec)
        diag = DiagnosticContext()
        out = mod
        for name, func in mod.graph_funcs().items():
            if not uses_sharding(func):
                continue
            try:
                new = _Propagator(bind_calls_in_body(func, out), out, uneven, ctx).run()
            except CompileError as err:
                diag.diagnostics.extend(err.diagnostics)
                continue
            out = out.with_function(name, new)
        diag.check()
        return out


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


def _mesh_refs(func: Function) -> list[tuple[str, Span | None]]:
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
    if isinstance(s, DTensorSInfo):
        out.append((s.device_mesh, s.span or span))
    elif isinstance(s, TupleSInfo):
        for f in s.fields:
            _dtensor_refs(f, span, out)


class _Propagator:
    """Propagation and resolution for one function."""

    def __init__(self, func: Function, mod: IRModule, uneven: bool, ctx: PassContext) -> None:
        self.func = func
        self.mod = mod
        self.uneven = uneven
        self.ctx = ctx
        refs = _mesh_refs(func)
        self.mesh_ref = refs[0][0]
        for ref, span in refs[1:]:
            if ref != self.mesh_ref:
                raise CompileError(f"{func.name} places tensors on two device meshes, "
                                   f"'{self.mesh_ref}' and '{ref}'; one function runs on one mesh "
                                   "(pipeline stages across meshes are not supported)", span)
        try:
            self.mesh: DeviceMesh = lookup_mesh(mod.global_infos, self.mesh_ref)
        except MeshError as exc:
            raise CompileError(str(exc), refs[0][1]) from None
        self.place: dict[GVar, Placed] = {}
        self.pinned: dict[GVar, Placement] = {}
        self.bindings = [b for blk in func.body.blocks for b in blk.bindings]
        self.rules: dict[int, tuple[list[GraphExpr], list[TensorSInfo], Rule]] = {}

    # ---- helpers -------------------------------------------------------------------------

    def sinfo_of(self, e: GraphExpr) -> StructInfo:
        if isinstance(e, GVar) and e.struct_info is not None:
            return e.struct_info
        if isinstance(e, Constant):
            return TensorSInfo((), e.dtype, 0)
        return infer_expr(e, self.mod)[1]

    def placement_of(self, e: GraphExpr, table: dict[GVar, Placed]) -> Placed | None:
        if isinstance(e, Constant):
            return Placement.replicated(self.mesh.ndim)
        if isinstance(e, Tuple):
            items = [self.placement_of(f, table) for f in e.fields]
            return None if any(i is None for i in items) else tuple(items)
        if isinstance(e, GVar):
            return table.get(e)
        return None

    def check_pin(self, placement: Placement, s: StructInfo | None, what: str,
                  span: Span | None) -> Placement:
        """A placement the program gives, checked against its tensor and the mesh."""
        if not isinstance(s, TensorSInfo) or s.shape is None:
            raise CompileError(f"{what}: a placement needs a tensor of known shape", span)
        try:
            placement.check(len(s.shape), self.mesh.ndim)
        except PlacementError as exc:
            raise CompileError(f"{what}: {exc}", span) from None
        for axis, item in enumerate(placement.items):
            p = self.mesh.shape[axis]
            if isinstance(item, Shard) and not is_even(s.shape[item.dim], p) and not self.uneven:
                raise CompileError(
                    f"{what}: dimension {item.dim} ({shape_text([s.shape[item.dim]])[1:-2]}) "
                    f"does not split evenly over mesh axis '{self.mesh.axis_names[axis]}' "
                    f"({p} devices) and uneven shards are off", span)
            if isinstance(item, Owned) and item.coord >= p:
                raise CompileError(f"{what}: O[{item.coord}] is not a coordinate of mesh axis "
                                   f"'{self.mesh.axis_names[axis]}' ({p} devices)", span)
        return placement

    def rule(self, b: VarBinding) -> tuple[list[GraphExpr], list[TensorSInfo], Rule]:
        key = id(b)
        if key not in self.rules:
            call = b.value
            assert isinstance(call, GCall)
            exprs = operand_exprs(call, self.sinfo_of, self.mod)
            sinfos = [plain(self.sinfo_of(e)) for e in exprs]
            out = plain(b.var.struct_info) or infer_expr(call, self.mod)[1]
            self.rules[key] = (exprs, sinfos, rule_for(call, sinfos, out))  # type: ignore[arg-type]
        return self.rules[key]

    # ---- phase A: infer unknown placements -------------------------------------------------

    def seed(self) -> None:
        for p in self.func.params:
            if isinstance(p.struct_info, DTensorSInfo):
                self.place[p] = self.check_pin(p.struct_info.placement, p.struct_info,
                                               f"parameter '{p.name}'", p.span)
        for b in self.bindings:
            s = b.var.struct_info
            if isinstance(s, DTensorSInfo):
                self.pinned[b.var] = self.check_pin(s.placement, s, f"'{b.var.name}'", b.span)
            value = getattr(b, "value", None)
            if isinstance(value, GCall) and value.op in DIST_OPS:
                s = self.sinfo_of(value.args[0])
                pl = self.check_pin(parse_placement(str(value.attrs["placement"]),
                                                    getattr(s, "ndim", None)), s,
                                    f"R.{value.op}", value.span)
                old = self.pinned.get(b.var)
                if old is not None and old != pl:
                    raise CompileError(f"'{b.var.name}' is annotated \"{old}\" but "
                                       f"R.{value.op} places it \"{pl}\"", b.span)
                self.pinned[b.var] = pl
        self.place.update(self.pinned)

    def forward(self, b: Binding, creation: bool) -> bool:
        if b.var in self.place:
            return False
        value = b.value  # type: ignore[attr-defined]
        if isinstance(value, (GVar, Tuple)) or isinstance(b, MatchCast):
            pl = self.placement_of(value, self.place)
        elif isinstance(value, TupleGetItem):
            tup = self.placement_of(value.tuple_value, self.place)
            pl = tup[value.index] if isinstance(tup, tuple) else None
        elif isinstance(value, GCall):
            exprs, sinfos, rule = self.rule(b)  # type: ignore[arg-type]
            if not any(isinstance(e, GVar) for e in exprs) and not creation:
                return False  # made from constants: free to take its consumers' placement
            pls = [self.placement_of(e, self.place) for e in exprs]
            if any(not isinstance(p, Placement) for p in pls):
                return self.sideways(exprs, sinfos, pls, rule)
            res = resolve(rule, sinfos, pls, self.mesh,  # type: ignore[arg-type]
                          splittable=self.splittable(b, rule, sinfos))
            pl = res.results[0] if not isinstance(self.sinfo_of_var(b), TupleSInfo) \
                else tuple(res.results)
        else:
            return False
        if pl is None:
            return False
        self.place[b.var] = pl
        return True

    def sideways(self, exprs: list[GraphExpr], sinfos: list[TensorSInfo],
                 pls: list[Placed | None], rule: Rule) -> bool:
        """Operands whose placement is unknown, split the way a known split operand of the
        same operator asks (a weight multiplied by a split activation)."""
        if not any(isinstance(p, Placement) and not p.is_replicated for p in pls):
            return False
        known = [p if isinstance(p, Placement) else Placement.replicated(self.mesh.ndim)
                 for p in pls]
        res = resolve(rule, sinfos, known, self.mesh)
        changed = False
        for e, p, target in zip(exprs, pls, res.operands):
            if p is None and isinstance(e, GVar) and not target.is_replicated:
                self.place[e] = target
                changed = True
        return changed

    def sinfo_of_var(self, b: Binding) -> StructInfo | None:
        return b.var.struct_info

    def backward(self, b: Binding) -> bool:
        out = self.place.get(b.var)
        if out is None:
            return False
        value = b.value  # type: ignore[attr-defined]
        changed = False

        def give(e: GraphExpr, pl: Placed) -> None:
            nonlocal changed
            if isinstance(e, GVar) and e not in self.place:
                self.place[e] = pl
                changed = True

        if isinstance(value, GVar) or isinstance(b, MatchCast):
            give(value, out)
        elif isinstance(value, GCall) and value.op == "dist.annotate_sharding":
            give(value.args[0], out)
        elif isinstance(value, GCall) and value.op not in DIST_OPS:
            exprs, sinfos, rule = self.rule(b)  # type: ignore[arg-type]
            first = out[0] if isinstance(out, tuple) else out
            if not isinstance(first, Placement):
                return False
            for i, e in enumerate(exprs):
                if isinstance(e, GVar) and e not in self.place:
                    give(e, self.wish(rule, i, first))
        return changed

    def wish(self, rule: Rule, i: int, out: Placement) -> Placement:
        """The placement operand `i` should have for the result to be placed `out`."""
        items = []
        for it in out.items:
            f = None
            if isinstance(it, Shard) and rule.results and it.dim < len(rule.results[0]):
                f = rule.results[0][it.dim]
            elif isinstance(it, Partial):
                f = next((g for g, op in rule.reduction.items() if op == it.op), None)
            d = rule.dim_of(rule.operands[i], f) if f is not None and \
                f not in rule.replicated else None
            items.append(Shard(d) if d is not None else Placement.replicated(1).items[0])
        return Placement(tuple(items))

    def infer(self) -> None:
        self.seed()
        params = [p for p in self.func.params if isinstance(p.struct_info, TensorSInfo)]
        for creation in (False, True):
            while True:
                changed = True
                while changed:
                    changed = False
                    for b in self.bindings:
                        changed |= self.forward(b, creation)
                    for b in reversed(self.bindings):
                        changed |= self.backward(b)
                unknown = [p for p in params if p not in self.place]
                if not unknown:
                    break
                self.place[unknown[0]] = Placement.replicated(self.mesh.ndim)

    # ---- phase B: resolve each binding ---------------------------------------------------

    def splittable(self, b: Binding, rule: Rule, sinfos: list[TensorSInfo]) -> frozenset[int]:
        call = b.value  # type: ignore[attr-defined]
        if rule.decomposable and sinfos and can_decompose(call, sinfos[0]):
            return frozenset(rule.replicated)
        return frozenset()

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
        if isinstance(s, TensorSInfo) and isinstance(pl, Placement):
            return with_placement(plain(s), self.mesh_ref, pl)  # type: ignore[arg-type]
        if isinstance(s, TupleSInfo) and isinstance(pl, tuple):
            return TupleSInfo(tuple(self.placed_sinfo(f, p)  # type: ignore[misc]
                                    for f, p in zip(s.fields, pl)), span=s.span)
        return s


def _bytes(s: TensorSInfo) -> int | None:
    n = s.dtype.bytes if s.dtype is not None else None
    for d in s.shape or ():
        v = getattr(d, "value", None)
        if v is None or n is None:
            return None
        n *= v
    return n
