"""normalize: infer the struct info of every graph binding and put it on the bound variable.

Each binding's value is checked by its operator (shapes broadcast, dimensions agree,
symbolically), rewritten into canonical form, and its variable gets the inferred struct info;
annotations and the declared return type must agree with what is inferred. Errors are
diagnostics at the binding (`error: R.add: cannot broadcast (n, 256) with (n, 255)`).
"""

from __future__ import annotations

import dataclasses

from tirc.ir.diagnostics import CompileError, DiagnosticContext
from tirc.ir.graph import (
    Binding,
    BindingBlock,
    ExternFunc,
    Function,
    GCall,
    GlobalVar,
    GraphExpr,
    GVar,
    If,
    MatchCast,
    ObjectSInfo,
    PrimSInfo,
    SeqExpr,
    StructInfo,
    TensorSInfo,
    Tuple,
    TupleGetItem,
    VarBinding,
)
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.ops.infer import infer_expr, match_cast_conflict, more_precise, sinfo_agrees
from tirc.ir.ops.sinfo_util import sinfo_text
from tirc.ir.packed_call import module_function_of_symbol
from tirc.ir.span import Span
from tirc.ir.visitor import Mutator, post_order_visit, substitute
from tirc.passes.pass_base import Pass, PassContext


@dataclass(frozen=True)
class Normalize(Pass):
    """Struct info inference for every graph function of the module."""

    name = "normalize"
    description = "infer and check the struct info of every graph binding (symbolic shapes)"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        diag = DiagnosticContext()
        out = mod
        for name, func in mod.graph_funcs().items():
            try:
                new = normalize_function(func, out)
            except CompileError as err:
                diag.diagnostics.extend(err.diagnostics)
                continue
            if new is not func:
                out = out.with_function(name, new)
        diag.check()
        return out


def _at(err: CompileError, span: Span | None) -> CompileError:
    """The error, placed at `span` when it carries no location of its own."""
    if span is None or all(d.span is not None for d in err.diagnostics):
        return err
    return CompileError([dataclasses.replace(d, span=d.span or span) for d in err.diagnostics])


def normalize_function(func: Function, mod: IRModule | None = None) -> Function:
    """The function with every variable's struct info inferred and checked."""
    mapping: dict[GVar, GVar] = {}
    params = []
    for p in func.params:
        if p.struct_info is None:
            mapping[p] = dataclasses.replace(p, struct_info=ObjectSInfo())
        params.append(mapping.get(p, p))
    func = _tuple_items_resolved(func)
    func = _module_packed_calls(func, mod)
    old_blocks, body_value = bind_returned_calls(func)
    blocks = _normalize_blocks(old_blocks, mapping, mod)
    body_value = substitute(body_value, mapping)
    try:
        body_value, ret = infer_expr(body_value, mod)
    except CompileError as err:
        raise _at(err, func.body.span or func.span) from None
    declared = func.ret_struct_info
    if declared is not None and not sinfo_agrees(declared, ret):
        raise CompileError(f"{func.name} returns {sinfo_text(ret)}, but its declared return "
                           f"type is {sinfo_text(declared)}", func.body.body.span or func.span)
    ret = more_precise(declared, ret) if declared is not None else ret
    blocks = _same_blocks(old_blocks, blocks)
    body = SeqExpr(tuple(blocks), body_value, span=func.body.span)
    new = dataclasses.replace(func, params=tuple(params), body=body, ret_struct_info=ret)
    unchanged = (not mapping and body_value is func.body.body and ret == declared
                 and len(blocks) == len(func.body.blocks)
                 and all(a is b for a, b in zip(blocks, func.body.blocks)))
    return func if unchanged else new


def _module_packed_calls(func: Function, mod: IRModule | None) -> Function:
    """`R.call_dps_packed("sym", args, out)` where "sym" is a loop function of the module
    (tirc.ir.packed_call.module_function_of_symbol) as the `R.call_tir` of that function: the
    same destination-passing call, of the module's own kernel rather than a C library's."""
    if mod is None:
        return func

    class _Calls(Mutator):
        def visit_GCall(self, node: GCall) -> GraphExpr:
            node = self.generic_visit(node)
            callee = node.args[0] if node.args else None
            if node.op != "call_dps_packed" or not isinstance(callee, ExternFunc) or \
                    len(node.args) != 2:
                return node
            name = module_function_of_symbol(mod, callee.symbol)
            if name is None:
                return node
            return dataclasses.replace(node, op="call_tir",
                                       args=(GlobalVar(name, span=callee.span), node.args[1]))

    return _Calls().visit(func)


def _tuple_items_resolved(func: Function) -> Function:
    """`t[k]` of a variable bound to a tuple of values (`t = (x, y)`) replaced by the field
    itself, and such a variable in the returned value (or a tuple of it) by its tuple: exact,
    as a tuple only gathers its fields, and what lower-graph can follow (it has no tuple
    objects, only the tensors, shapes and scalars in them)."""
    literals: dict[GVar, Tuple] = {}

    def collect(seq: SeqExpr) -> None:
        for block in seq.blocks:
            for b in block.bindings:
                value = getattr(b, "value", None)
                if isinstance(b, VarBinding) and isinstance(value, Tuple):
                    literals[b.var] = value
                for branch in value.branches if isinstance(value, If) else ():
                    collect(branch)

    collect(func.body)
    if not literals:
        return func

    class _Items(Mutator):
        def visit_TupleGetItem(self, node: TupleGetItem) -> GraphExpr:
            inner = self.visit(node.tuple_value)
            inner = literals.get(inner, inner) if isinstance(inner, GVar) else inner
            if isinstance(inner, Tuple) and 0 <= node.index < len(inner.fields):
                return self.visit(inner.fields[node.index])
            return node if inner is node.tuple_value else \
                dataclasses.replace(node, tuple_value=inner)

    items = _Items()

    def returned(e: GraphExpr) -> GraphExpr:
        if isinstance(e, GVar) and e in literals:
            return returned(literals[e])
        if isinstance(e, Tuple):
            fields = tuple(returned(f) for f in e.fields)
            return e if all(a is b for a, b in zip(fields, e.fields)) else \
                dataclasses.replace(e, fields=fields)
        return items.visit(e)

    body = returned(items.visit(func.body.body))
    blocks = tuple(dataclasses.replace(block, bindings=tuple(items.visit(b)
                                                             for b in block.bindings))
                   for block in func.body.blocks)
    projected = {b.var for block in func.body.blocks for b in block.bindings
                 if isinstance(getattr(b, "value", None), TupleGetItem)}
    renamed = {b.var: b.value for block in blocks for b in block.bindings  # type: ignore[attr-defined]
               if b.var in projected and b.var.is_dataflow and isinstance(b.value, GVar)}  # type: ignore[attr-defined]
    if renamed:  # `w = t[1]` in a dataflow block: its uses, all in the block, use the field
        blocks = tuple(dataclasses.replace(block, bindings=tuple(
            substitute(b, renamed) for b in block.bindings if b.var not in renamed))
            for block in blocks)
        body = substitute(body, renamed)
    blocks = _unused_tuples_dropped(blocks, body, set(literals))
    if body is func.body.body and all(
            len(x.bindings) == len(y.bindings) and all(a is b for a, b in zip(x.bindings,
                                                                               y.bindings))
            for x, y in zip(blocks, func.body.blocks)):
        return func
    return dataclasses.replace(func, body=dataclasses.replace(func.body, blocks=blocks,
                                                              body=body))


def _unused_tuples_dropped(blocks: tuple[BindingBlock, ...], body: GraphExpr,
                           tuples: set[GVar]) -> tuple[BindingBlock, ...]:
    """The blocks without the bindings of `tuples` that nothing uses any more (a tuple has
    no effect, and a use left would keep its fields' producers out of fusion)."""
    used: set[GVar] = set()

    def use(n: object) -> None:
        if isinstance(n, GVar):
            used.add(n)

    while True:
        used.clear()
        post_order_visit(body, use)
        for block in blocks:
            used.update(block.outputs)
            for b in block.bindings:
                post_order_visit(b.value, use)  # type: ignore[attr-defined]
        dead = {b.var for block in blocks for b in block.bindings
                if b.var in tuples and b.var not in used}
        if not dead:
            return blocks
        blocks = tuple(dataclasses.replace(block, bindings=tuple(
            b for b in block.bindings if b.var not in dead)) for block in blocks)


def bind_returned_calls(func: Function) -> tuple[tuple[BindingBlock, ...], GraphExpr]:
    """`return R.add(x, y)` (or a call inside the returned tuple or indexed from it): each
    call bound to a variable of its own in a last block, as Relax's normalizer binds it, so
    that a function returns variables; the blocks and the returned value."""
    taken = {p.name for p in func.params} | _bound_names(func.body)
    bindings: list[Binding] = []

    def leaf(e: GraphExpr) -> GraphExpr:
        if isinstance(e, Tuple):
            fields = tuple(leaf(f) for f in e.fields)
            return e if all(a is b for a, b in zip(fields, e.fields)) else \
                dataclasses.replace(e, fields=fields)
        if isinstance(e, TupleGetItem):
            inner = leaf(e.tuple_value)
            return e if inner is e.tuple_value else dataclasses.replace(e, tuple_value=inner)
        if not isinstance(e, GCall):
            return e
        name = next(n for n in ("gv", *(f"gv{k}" for k in range(1, len(taken) + 2)))
                    if n not in taken)
        taken.add(name)
        var = GVar(name, None, False, span=e.span)
        bindings.append(VarBinding(var, e, span=e.span))
        return var

    value = leaf(func.body.body)
    if not bindings:
        return func.body.blocks, value
    last = BindingBlock(tuple(bindings), False, span=bindings[0].span)
    return (*func.body.blocks, last), value


def _bound_names(seq: SeqExpr) -> set[str]:
    names: set[str] = set()
    for block in seq.blocks:
        for b in block.bindings:
            names.add(b.var.name)
            if isinstance(b.value, If):
                for branch in b.value.branches:
                    names |= _bound_names(branch)
    return names


def _normalize_blocks(old: tuple[BindingBlock, ...], mapping: dict[GVar, GVar],
                      mod: IRModule | None) -> list[BindingBlock]:
    """The blocks with nested calls flattened and every binding's struct info inferred."""
    blocks = []
    for block in old:
        bindings: list[Binding] = []
        for b in block.bindings:
            bindings.extend(_flatten(b, block.is_dataflow, mod))
        bindings = [_binding(b, mapping, mod) for b in bindings]
        outputs = tuple(mapping.get(v, v) for v in block.outputs)
        blocks.append(dataclasses.replace(block, bindings=tuple(bindings), outputs=outputs))
    return blocks


def _normalize_if(e: If, mapping: dict[GVar, GVar], mod: IRModule | None
                  ) -> tuple[If, StructInfo]:
    """An `if` with both branches normalized, and its struct info: the branches' results
    must agree (a tensor of one shape and dtype), the condition must be a boolean scalar."""
    cond = substitute(e.cond, mapping)
    _, cs = infer_expr(cond, mod)
    is_bool = isinstance(cs, PrimSInfo) and cs.dtype.is_bool or isinstance(
        cs, TensorSInfo) and cs.shape == () and cs.dtype is not None and cs.dtype.is_bool
    if not is_bool:
        raise CompileError("the condition of 'if' must be a boolean scalar (R.Prim(\"bool\")), "
                           f"not {sinfo_text(cs)}", e.span or e.cond.span)
    branches = []
    results: list[StructInfo] = []
    for branch in e.branches:
        blocks = _same_blocks(branch.blocks, _normalize_blocks(branch.blocks, mapping, mod))
        body = substitute(branch.body, mapping)
        try:
            body, sinfo = infer_expr(body, mod)
        except CompileError as err:
            raise _at(err, branch.span or e.span) from None
        results.append(sinfo)
        unchanged = body is branch.body and all(a is b for a, b in zip(blocks, branch.blocks))
        branches.append(branch if unchanged else SeqExpr(tuple(blocks), body,
                                                         span=branch.span))
    t, f = results
    if not (sinfo_agrees(t, f) and sinfo_agrees(f, t)):
        raise CompileError(f"the branches of 'if' give different results: {sinfo_text(t)} "
                           f"and {sinfo_text(f)}", e.span)
    new = e if cond is e.cond and all(a is b for a, b in zip(branches, e.branches)) else \
        dataclasses.replace(e, cond=cond, true_branch=branches[0], false_branch=branches[1])
    return new, more_precise(t, f)


def _same_blocks(old: tuple[BindingBlock, ...], new: list[BindingBlock]) -> list[BindingBlock]:
    return [o if (len(o.bindings) == len(n.bindings)
                  and all(a is b for a, b in zip(o.bindings, n.bindings))
                  and o.outputs == n.outputs) else n for o, n in zip(old, new)]


def _flatten(b: Binding, dataflow: bool, mod: IRModule | None) -> list[Binding]:
    """Calls nested in a binding's arguments, bound first to variables of their own."""
    value = b.value  # type: ignore[attr-defined]
    if not isinstance(value, GCall):
        return [b]
    prefix: list[Binding] = []
    counter = [0]

    def lift(e: GraphExpr) -> GraphExpr:
        if isinstance(e, Tuple):
            fields = tuple(lift(f) for f in e.fields)
            return e if fields == e.fields else dataclasses.replace(e, fields=fields)
        if isinstance(e, TupleGetItem):  # `R.topk(x, ...)[0]`: the call bound, then indexed
            inner = lift(e.tuple_value)
            return e if inner is e.tuple_value else dataclasses.replace(e, tuple_value=inner)
        if not isinstance(e, GCall):
            return e
        inner = dataclasses.replace(e, args=tuple(lift(a) for a in e.args))
        counter[0] += 1
        var = GVar(name=f"{b.var.name}_{counter[0]}", is_dataflow=dataflow)
        prefix.append(VarBinding(var, inner, span=e.span or b.span))
        return var

    args = tuple(lift(a) for a in value.args)
    if not prefix:
        return [b]
    return prefix + [dataclasses.replace(b, value=dataclasses.replace(value, args=args))]


def _binding(b: Binding, mapping: dict[GVar, GVar], mod: IRModule | None) -> Binding:
    span = b.span or getattr(b.value, "span", None)  # type: ignore[attr-defined]
    try:
        if isinstance(b.value, If):  # type: ignore[attr-defined]
            value, inferred = _normalize_if(b.value, mapping, mod)  # type: ignore[attr-defined]
        else:
            value = _fold_item(substitute(b.value, mapping))  # type: ignore[attr-defined]
            value, inferred = infer_expr(value, mod)
    except CompileError as err:
        raise _at(err, span) from None
    sinfo: StructInfo
    if isinstance(b, MatchCast):
        why = match_cast_conflict(b.struct_info, inferred)
        if why is not None:
            raise CompileError(f"R.match_cast of {b.var.name} can never succeed: {why}", span)
        sinfo = _cast_result(b.struct_info, inferred)
    else:
        declared = b.var.struct_info
        if declared is not None and not sinfo_agrees(declared, inferred):
            raise CompileError(f"{b.var.name}: the annotation {sinfo_text(declared)} does not "
                               f"match the value's {sinfo_text(inferred)}", span)
        sinfo = more_precise(declared, inferred) if declared is not None else inferred
    var = b.var
    if var.struct_info != sinfo:
        var = dataclasses.replace(var, struct_info=sinfo)
        mapping[b.var] = var
    if var is b.var and value is b.value:  # type: ignore[attr-defined]
        return b
    if isinstance(b, MatchCast):
        return dataclasses.replace(b, var=var, value=value)
    assert isinstance(b, VarBinding)
    return dataclasses.replace(b, var=var, value=value)


def _cast_result(target: StructInfo, value: StructInfo) -> StructInfo:
    """The struct info of a match_cast's variable: the target's, with the value's dtype where
    the target leaves it open (`R.match_cast(x, R.Tensor([m, n]))` of a float32 `x` is a
    float32 tensor, which every kernel needs to know)."""
    if isinstance(target, TensorSInfo) and target.dtype is None and \
            isinstance(value, TensorSInfo) and value.dtype is not None:
        return dataclasses.replace(target, dtype=value.dtype)
    return target


def _fold_item(e: GraphExpr) -> GraphExpr:
    """`R.TupleGetItem(R.tuple(a, b), 0)` is `a` (TVM's normalize test binds an `if`'s
    condition so): an item of a tuple written out is that field, whose tensor the lowering
    can name."""
    if isinstance(e, TupleGetItem):
        inner = _fold_item(e.tuple_value)
        if isinstance(inner, Tuple) and 0 <= e.index < len(inner.fields):
            return inner.fields[e.index]
    return e
