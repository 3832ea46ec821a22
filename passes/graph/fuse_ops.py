"""fuse-ops: group call_tir bindings into fused graph functions, the way Relax's FuseOps does.

Inside each dataflow block, the calls form a graph (producer -> consumer edges labelled with
the consumer's `op_pattern`). With its post-dominator tree, TVM's three-phase partitioner
merges: an output-fusable call (matmul, softmax) with an elementwise path to its post-dominator
(epilogues); elementwise and broadcast calls into injective or reduction consumers; injective
calls into injective consumers. Each group of two or more calls becomes a graph function
`fused_<kernels>` with `R.func_attr({"Primitive": 1})`, called from the original function;
fuse-tir then merges each one into a single loop function.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field

from tirc.ir.attrs import PRIMITIVE
from tirc.ir.expr import Var
from tirc.ir.function import PrimFunc
from tirc.ir.graph import (
    Binding,
    BindingBlock,
    Function,
    GCall,
    GlobalVar,
    GVar,
    PrimSInfo,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    TensorSInfo,
    Tuple,
    TupleGetItem,
    TupleSInfo,
    VarBinding,
    with_branches,
)
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.visitor import post_order_visit, substitute
from tirc.passes.graph.annotate_op_pattern import OpPattern, pattern_of
from tirc.passes.pass_base import Pass, PassContext

MAX_FUSE_DEPTH = 256


@dataclass(eq=False)
class _Node:
    index: int
    binding: Binding
    pattern: OpPattern
    outputs: list[tuple[_Node, OpPattern]] = field(default_factory=list)
    extern_ref: bool = False


@dataclass(eq=False)
class _DomNode:
    node: _Node
    parent: _DomNode | None
    depth: int
    pattern: OpPattern


@dataclass(eq=False)
class _Group:
    pattern: OpPattern
    parent: _Group | None = None
    num_nodes: int = 1
    anchor: bool = False

    def root(self) -> _Group:
        g = self
        while g.parent is not None:
            g = g.parent
        return g


def call_pattern(value: object, mod: IRModule) -> OpPattern:
    """The pattern of a bound value: a call_tir's kernel pattern (with or without `tir_vars`,
    one or several outputs), else opaque. A call with an `R.Prim` argument stays opaque:
    fuse-tir's groups take tensors only."""
    if isinstance(value, GCall) and value.op == "call_tir" and len(value.args) in (2, 3) \
            and isinstance(value.args[0], GlobalVar) and isinstance(value.args[1], Tuple) \
            and (len(value.args) == 2 or isinstance(value.args[2], ShapeExpr)) \
            and not any(_is_prim(a) for a in value.args[1].fields):
        func = mod.functions.get(value.args[0].name)
        if isinstance(func, PrimFunc) and value.sinfo_args:
            return pattern_of(func)
    return OpPattern.OPAQUE


def _is_prim(e: object) -> bool:
    """Whether a call argument is an `R.Prim` value rather than a tensor."""
    return isinstance(e, PrimValue) or isinstance(getattr(e, "struct_info", None), PrimSInfo)


def is_call_tir(b: Binding) -> bool:
    """A call_tir binding (the members that make kernels; tuple bindings only pass values)."""
    return isinstance(b, VarBinding) and isinstance(b.value, GCall) and b.value.op == "call_tir"


def used_vars(node: object) -> list[GVar]:
    """Graph variables used under `node`, in order of first use."""
    found: list[GVar] = []
    post_order_visit(node, lambda n: found.append(n) if isinstance(n, GVar) and n not in found
                else None)
    return found


# ---- the graph and its post-dominator tree ----------------------------------------------


def build_graph(block: BindingBlock, live_after: set[GVar], mod: IRModule
                ) -> tuple[list[_Node], list[tuple[int, int]]]:
    """One node per binding in order, with consumer edges inside the block; and the pairs
    (projection, tuple) that must share a group.

    A tuple value (a call_tir with several outputs, or a tuple of tensors) fuses only when its
    every use is a projection `t[k]` bound in the block: then the projections are tied to it
    (they only name its parts), and a group never takes or returns a tuple."""
    uses: dict[GVar, list[int]] = {}
    for k, b in enumerate(block.bindings):
        for v in used_vars(b.value):  # type: ignore[attr-defined]
            uses.setdefault(v, []).append(k)
    projections = {k for k, b in enumerate(block.bindings)
                   if isinstance(b, VarBinding) and isinstance(b.value, TupleGetItem)
                   and isinstance(b.value.tuple_value, GVar)}
    nodes: list[_Node] = []
    by_var: dict[GVar, _Node] = {}
    tied: list[tuple[int, int]] = []
    for k, b in enumerate(block.bindings):
        value = b.value  # type: ignore[attr-defined]
        pattern = call_pattern(value, mod)
        if isinstance(value, Tuple) and all(isinstance(f, GVar) and
                                            isinstance(f.struct_info, TensorSInfo)
                                            for f in value.fields):
            pattern = OpPattern.INJECTIVE
        if isinstance(b.var.struct_info, TupleSInfo) and pattern != OpPattern.OPAQUE and (
                b.var in live_after or not set(uses.get(b.var, [])) <= projections):
            pattern = OpPattern.OPAQUE
        if k in projections:
            producer = by_var.get(value.tuple_value)
            pattern = OpPattern.OPAQUE
            if producer is not None and producer.pattern != OpPattern.OPAQUE:
                pattern = OpPattern.INJECTIVE
                tied.append((k, producer.index))
        node = _Node(k, b, pattern)
        node.extern_ref = b.var in live_after
        for v in used_vars(value):
            producer = by_var.get(v)
            if producer is not None:
                producer.outputs.append((node, node.pattern))
        by_var[b.var] = node
        nodes.append(node)
    return nodes, tied


def _lca(a: _DomNode | None, b: _DomNode | None, pattern: OpPattern
         ) -> tuple[_DomNode | None, OpPattern]:
    while a is not b:
        if a is None or b is None:
            return None, pattern
        if a.depth < b.depth:
            pattern, b = max(pattern, b.pattern), b.parent
        elif b.depth < a.depth:
            pattern, a = max(pattern, a.pattern), a.parent
        else:
            pattern = max(pattern, a.pattern, b.pattern)
            a, b = a.parent, b.parent
    return a, pattern


def post_dominators(nodes: list[_Node]) -> list[_DomNode]:
    """TVM's post-dominator tree: each node's nearest common consumer and the path's kind."""
    dom: list[_DomNode | None] = [None] * len(nodes)
    for node in reversed(nodes):
        if node.extern_ref or not node.outputs:
            dom[node.index] = _DomNode(node, None, 1, OpPattern.OPAQUE)
            continue
        pattern = OpPattern.ELEMWISE
        parent: _DomNode | None = dom[node.outputs[0][0].index]
        pattern = max(pattern, node.outputs[0][1])
        for consumer, edge in node.outputs[1:]:
            parent, pattern = _lca(parent, dom[consumer.index], pattern)
            pattern = max(pattern, edge)
        depth = parent.depth + 1 if parent is not None else 1
        dom[node.index] = _DomNode(node, parent, depth, pattern)
    return dom  # type: ignore[return-value]


# ---- the partitioner --------------------------------------------------------------------


class _Partitioner:
    """Union-find over nodes, merged by TVM's GraphPartitioner rules."""

    def __init__(self, nodes: list[_Node], tied: list[tuple[int, int]]) -> None:
        self.nodes = nodes
        self.groups = [_Group(n.pattern, anchor=n.pattern == OpPattern.OUT_EWISE_FUSABLE)
                       for n in nodes]
        for part, whole in tied:
            self.merge(self.groups[part], self.groups[whole])

    def check_path(self, src: _Node, sink: _Node, cond: object) -> bool:
        visited: set[int] = set()

        def walk(n: _Node) -> bool:
            if n.index in visited:
                return True
            visited.add(n.index)
            if not cond(self.groups[n.index].root().pattern, n is sink):  # type: ignore[operator]
                return False
            if n is sink:
                return True
            return all(walk(c) for c, _ in n.outputs)

        return all(walk(c) for c, _ in src.outputs)

    def merge(self, child: _Group, parent: _Group) -> None:
        child, parent = child.root(), parent.root()
        if child is parent:
            return
        parent.num_nodes += child.num_nodes
        child.parent = parent
        if child.anchor:
            parent.anchor = True
            parent.pattern = max(child.pattern, parent.pattern)

    def commit(self, src: _Node, sink: _Node) -> None:
        target = self.groups[sink.index]
        visited: set[int] = set()

        def walk(n: _Node) -> None:
            if n is sink or n.index in visited:
                return
            visited.add(n.index)
            self.merge(self.groups[n.index], target)
            for c, _ in n.outputs:
                walk(c)

        walk(src)

    def run(self, dom: list[_DomNode]) -> list[_Group]:
        for phase in (0, 1):
            for node in self.nodes:
                self.step(node, dom[node.index], phase)
        return [g.root() for g in self.groups]

    def step(self, node: _Node, d: _DomNode, phase: int) -> None:
        group = self.groups[node.index].root()
        if group.pattern == OpPattern.OPAQUE or d.parent is None:
            return
        sink = d.parent.node
        sink_group = self.groups[sink.index].root()
        if group is sink_group or group.num_nodes + sink_group.num_nodes > MAX_FUSE_DEPTH:
            return
        if group.pattern == OpPattern.OUT_EWISE_FUSABLE:
            if phase == 0 and d.pattern == OpPattern.ELEMWISE and self.check_path(
                    node, sink, lambda k, is_sink: k <= OpPattern.BROADCAST):
                self.commit(node, sink)
        elif group.pattern <= OpPattern.BROADCAST:
            if d.pattern <= OpPattern.INJECTIVE or d.pattern == OpPattern.COMM_REDUCE:
                def cond(k: OpPattern, is_sink: bool) -> bool:
                    if not is_sink:
                        return k <= OpPattern.INJECTIVE
                    return k <= OpPattern.OUT_EWISE_FUSABLE

                if self.check_path(node, sink, cond):
                    self.commit(node, sink)
        elif group.pattern == OpPattern.INJECTIVE:
            if phase == 1 and self.check_path(node, sink,
                                              lambda k, is_sink: k <= OpPattern.INJECTIVE):
                self.commit(node, sink)


def partition(block: BindingBlock, live_after: set[GVar], mod: IRModule) -> list[list[int]]:
    """The groups of binding indices (in order) that fuse: two kernels or more, every size
    they use bound by their inputs' shapes."""
    nodes, tied = build_graph(block, live_after, mod)
    roots = _Partitioner(nodes, tied).run(post_dominators(nodes))
    members: dict[int, list[int]] = {}
    for k, r in enumerate(roots):
        if nodes[k].pattern != OpPattern.OPAQUE:
            members.setdefault(id(r), []).append(k)
    return [m for m in members.values()
            if sum(is_call_tir(block.bindings[j]) for j in m) > 1 and _sizes_bound(block, m)]


def _sizes_bound(block: BindingBlock, members: list[int]) -> bool:
    """Every symbolic size the members use (struct info, `tir_vars`) is a whole dimension of
    one of the group's inputs, so the group function binds it from its parameters."""
    bindings = [block.bindings[j] for j in members]
    inputs = _inputs(bindings)
    bare = {d for v in inputs if isinstance(v.struct_info, TensorSInfo)
            for d in v.struct_info.shape or () if isinstance(d, Var)}
    used: set[Var] = set()
    for b in bindings:
        post_order_visit((b.var.struct_info, b.value),  # type: ignore[attr-defined]
                         lambda n: used.add(n) if isinstance(n, Var) else None)
    return used <= bare


def _inputs(bindings: list[Binding]) -> list[GVar]:
    """The variables the bindings use and do not bind, in order of first use."""
    bound = {b.var for b in bindings}
    inputs: list[GVar] = []
    for b in bindings:
        for v in used_vars(b.value):  # type: ignore[attr-defined]
            if v not in bound and v not in inputs:
                inputs.append(v)
    return inputs


# ---- rewriting ------------------------------------------------------------------------------


@dataclass(frozen=True)
class FuseOps(Pass):
    """call_tir chains -> calls of fused `Primitive` graph functions."""

    name = "fuse-ops"
    description = "group calls into fused functions (elementwise into producers, epilogues)"
    optional = True  # an optimisation (see Pass.optional)

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod
        for name, func in mod.graph_funcs().items():
            if func.attrs.get(PRIMITIVE):
                continue
            new, groups = fuse_function(func, out)
            for g in groups:
                out = out.with_function(g.name, g)
            if new is not func:
                out = out.with_function(name, new)
        return out


def _live_after(seq: SeqExpr, k: int) -> set[GVar]:
    later = [seq.blocks[j] for j in range(k + 1, len(seq.blocks))]
    live = set(used_vars(later)) | set(used_vars(seq.body))
    return live | set(seq.blocks[k].outputs)


def fuse_function(func: Function, mod: IRModule) -> tuple[Function, list[Function]]:
    """The function with its fusable groups replaced by calls, and the new group functions."""
    taken = set(mod.functions)
    new_funcs: list[Function] = []
    body = _fuse_seq(func.body, mod, taken, new_funcs)
    if not new_funcs:
        return func, []
    return dataclasses.replace(func, body=body), new_funcs


def _fuse_seq(seq: SeqExpr, mod: IRModule, taken: set[str], new_funcs: list[Function]
              ) -> SeqExpr:
    """`seq` with the groups of its dataflow blocks outlined into `new_funcs`; the branches of
    an `if` are fused on their own (a group never crosses the branch boundary)."""
    blocks = []
    before = len(new_funcs)

    def branch(inner: SeqExpr) -> SeqExpr:
        return _fuse_seq(inner, mod, taken, new_funcs)

    for k, block in enumerate(seq.blocks):
        if not block.is_dataflow:
            bindings = tuple(with_branches(b, branch) for b in block.bindings)
            same = all(a is b for a, b in zip(bindings, block.bindings))
            blocks.append(block if same else dataclasses.replace(block, bindings=bindings))
            continue
        groups = partition(block, _live_after(seq, k), mod)
        bindings = list(block.bindings)
        replaced: dict[int, list[Binding]] = {}
        drop: set[int] = set()
        for members in groups:
            gfunc, call_bindings = _outline(block, members, _live_after(seq, k), taken, mod)
            taken.add(gfunc.name)
            new_funcs.append(gfunc)
            replaced[members[-1]] = call_bindings
            drop.update(members)
        out: list[Binding] = []
        for j, b in enumerate(bindings):
            if j in replaced:
                out.extend(replaced[j])
            elif j not in drop:
                out.append(b)
        blocks.append(dataclasses.replace(block, bindings=tuple(out)))
    if len(new_funcs) == before:
        return seq
    return dataclasses.replace(seq, blocks=tuple(blocks))


def _outline(block: BindingBlock, members: list[int], live_after: set[GVar], taken: set[str],
             mod: IRModule) -> tuple[Function, list[Binding]]:
    """A group's graph function, and the bindings that call it in place of its members."""
    member_bindings = [block.bindings[j] for j in members]
    inputs = _inputs(member_bindings)
    later = [b for j, b in enumerate(block.bindings) if j not in members]
    used_later = set(used_vars([b.value for b in later])) | live_after  # type: ignore[attr-defined]
    outputs = [b.var for b in member_bindings if b.var in used_later]
    first_use = min((j for j, b in enumerate(block.bindings) if j not in members
                     and set(used_vars(b.value)) & set(outputs)), default=None)  # type: ignore[attr-defined]
    if first_use is not None and first_use < members[-1]:
        raise AssertionError("fuse-ops: a group output is used before the group ends")
    names = [b.value.args[0].name for b in member_bindings  # type: ignore[attr-defined]
             if is_call_tir(b)]
    name = _unique("fused_" + "_".join(names), taken)
    gfunc = _group_function(name, inputs, member_bindings, outputs)
    call = GCall(name, tuple(inputs), {}, ())
    if len(outputs) == 1:
        return gfunc, [VarBinding(outputs[0], call)]
    tvar = GVar(name=f"{name}_out", struct_info=gfunc.ret_struct_info, is_dataflow=True)
    return gfunc, [VarBinding(tvar, call)] + [VarBinding(o, TupleGetItem(tvar, k))
                                              for k, o in enumerate(outputs)]


def _unique(base: str, taken: set[str]) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}{k}"
    return name


def _group_function(name: str, inputs: list[GVar], members: list[Binding],
                    outputs: list[GVar]) -> Function:
    """The fused function: fresh parameters and variables, its own symbolic sizes."""
    sizes: dict[Var, Var] = {}
    for v in inputs:
        s = v.struct_info
        if isinstance(s, TensorSInfo) and s.shape is not None:
            for d in s.shape:
                if isinstance(d, Var) and d not in sizes:
                    sizes[d] = Var(d.name, d.dtype)
    mapping: dict[object, object] = dict(sizes)
    params = []
    for v in inputs:
        p = GVar(name=v.name, struct_info=substitute(v.struct_info, sizes))
        mapping[v] = p
        params.append(p)
    bindings = []
    for b in members:
        nv = GVar(name=b.var.name, struct_info=substitute(b.var.struct_info, sizes),
                  is_dataflow=b.var not in outputs)
        value = substitute(b.value, mapping)  # type: ignore[attr-defined]
        mapping[b.var] = nv
        bindings.append(VarBinding(nv, value))
    outs = tuple(mapping[o] for o in outputs)
    result = outs[0] if len(outs) == 1 else Tuple(outs)
    ret = outs[0].struct_info if len(outs) == 1 else TupleSInfo(
        tuple(o.struct_info for o in outs))  # type: ignore[misc]
    block = BindingBlock(tuple(bindings), True, outs)  # type: ignore[arg-type]
    return Function(name, tuple(params), SeqExpr((block,), result), ret,
                    {PRIMITIVE: 1})
