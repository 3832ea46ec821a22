"""Phase one of propagate-sharding: a placement for every value, before any is resolved.

Seeds are the placements the program gives (parameters, annotated bindings,
`R.dist.annotate_sharding`, `R.dist.redistribute`). Unknown placements then spread forwards
through each operator's rule, sideways (an unknown operand split like the known split operand
it meets: a weight times a split activation) and backwards (an operand split the way its
result is annotated); a parameter that nothing decides is replicated, one at a time, until
every value has a placement. The results serve as parameter placements and as hints for the
second phase (propagate.py), which decides each binding for good.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.diagnostics import CompileError
from tirc.ir.dist.dtensor import DTensorSInfo, plain
from tirc.ir.dist.mesh import DeviceMesh, MeshError, lookup_mesh
from tirc.ir.dist.placement import Owned, Partial, Placement, PlacementError, Shard, parse_placement
from tirc.ir.dist.shard_shape import is_even
from tirc.ir.graph import (
    Binding,
    Constant,
    Function,
    GCall,
    GraphExpr,
    GVar,
    MatchCast,
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
from tirc.passes.dist.decompose import can_decompose
from tirc.passes.dist.operands import operand_exprs
from tirc.passes.dist.resolve import resolve
from tirc.passes.dist.rules import Rule, rule_for
from tirc.passes.dist.sharded_function import DIST_OPS, mesh_refs
from tirc.passes.pass_base import PassContext

Placed = Placement | tuple[Any, ...]


class PlacementInference:
    """The placements of one function's values (phase one) and the helpers both phases use."""

    def __init__(self, func: Function, mod: IRModule, uneven: bool, ctx: PassContext) -> None:
        self.func = func
        self.mod = mod
        self.uneven = uneven
        self.ctx = ctx
        refs = mesh_refs(func)
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
        if self.mesh.first != 0:
            raise CompileError(f"unsupported: '{self.mesh_ref}' starts at device "
                               f"{self.mesh.first}; a mesh is the whole world of processes, "
                               "devices 0 to N-1", self.mesh.span or refs[0][1])
        self.place: dict[GVar, Placed] = {}
        self.pinned: dict[GVar, Placement] = {}
        self.bindings = [b for blk in func.body.blocks for b in blk.bindings]
        self.rules: dict[int, tuple[list[GraphExpr], list[TensorSInfo], Rule]] = {}

    # ---- helpers -------------------------------------------------------------------------

    def sinfo_of(self, e: GraphExpr) -> StructInfo:
        """The struct info of an operand (a constant is a tensor of its shape)."""
        if isinstance(e, GVar) and e.struct_info is not None:
            return e.struct_info
        return infer_expr(e, self.mod)[1]

    def placement_of(self, e: GraphExpr, table: dict[GVar, Placed]) -> Placed | None:
        """The placement of an operand in `table` (constants are replicated)."""
        if isinstance(e, Constant):
            return Placement.replicated(self.mesh.ndim)
        if isinstance(e, Tuple):
            items = [self.placement_of(f, table) for f in e.fields]
            return None if any(i is None for i in items) else tuple(items)
        if isinstance(e, GVar):
            return table.get(e)
        if isinstance(e, TupleGetItem):  # `t[0]` of a tuple-valued operator's result
            whole = self.placement_of(e.tuple_value, table)
            return whole[e.index] if isinstance(whole, tuple) else None
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
        """The operands, their struct info and the factor rule of a call binding (cached)."""
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
        """The placements the program gives."""
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
        """Place `b`'s value from its operands (True when it learnt something)."""
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
        """The struct info of a binding's variable."""
        return b.var.struct_info

    def backward(self, b: Binding) -> bool:
        """Place `b`'s unknown operands from its value (True when it learnt something)."""
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
        """Every value placed: propagate to a fixed point, replicate an undecided parameter,
        repeat."""
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
        """The replicated factors of `b` that may be split because it can be decomposed."""
        call = b.value  # type: ignore[attr-defined]
        if rule.decomposable and sinfos and can_decompose(call, sinfos[0]):
            return frozenset(rule.replicated)
        return frozenset()
