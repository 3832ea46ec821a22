"""The `verify` pass: well-formedness of a module, written as a table of rules.

Scoping is tracked by one walker (`_Walker`); each rule in `RULES` is a (node kind, rule name,
check) entry whose check returns the message for a broken node, so the table reads as the
spec of what a well-formed module is. Errors become one CompileError with a span per problem.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from tirc.ir.attrs import THREAD_EXTENT, VIRTUAL_THREAD
from tirc.ir.buffer import Buffer, BufferRegion
from tirc.ir.diagnostics import MAX_ERRORS, CompileError, Diagnostic
from tirc.ir.expr import BinOp, BufferLoad, IntImm, Let, Var
from tirc.ir.function import PrimFunc
from tirc.ir.graph import (
    BindingBlock,
    Function,
    GCall,
    GlobalVar,
    GVar,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    Tuple,
    VarBinding,
)
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.loop_jumps import loop_jump_errors
from tirc.ir.module import IRModule
from tirc.ir.node import Node
from tirc.ir.span import Span
from tirc.ir.sparse.iteration import SparseIteration
from tirc.ir.stmt import Allocate, AttrStmt, Block, BlockRealize, BufferStore, For, LetStmt
from tirc.ir.visitor import Visitor
from tirc.passes.pass_base import Pass, PassContext

THREAD_ATTRS = (THREAD_EXTENT, VIRTUAL_THREAD)


# ---- the rules -------------------------------------------------------------------------


def _var_defined(v: Var, w: _Walker) -> str | None:
    if w.in_prim_func and v not in w.live:
        return f"variable '{v.name}' is used outside the scope that defines it"
    return None


def _buffer_in_scope(buf: Buffer, w: _Walker) -> str | None:
    if buf in w.live or buf.data in w.live:
        return None
    return f"buffer '{buf.name}' is used outside the scope that defines it"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _access_rank(node: BufferLoad | BufferStore, w: _Walker) -> str | None:
    buf = node.buffer
    if len(node.indices) != buf.ndim:
        return (f"buffer '{buf.name}' has rank {buf.ndim} but is accessed with "
                f"{_count(len(node.indices), 'index', 'indices')}")
    return None


def _region_rank(r: BufferRegion, w: _Walker) -> str | None:
    if len(r.region) != r.buffer.ndim:
        return (f"region of buffer '{r.buffer.name}' has {len(r.region)} dimensions "
                f"but the buffer has rank {r.buffer.ndim}")
    return None


def _region_in_bounds(r: BufferRegion, w: _Walker) -> str | None:
    for axis, (rng, dim) in enumerate(zip(r.region, r.buffer.shape)):
        if not all(isinstance(e, IntImm) for e in (rng.min, rng.extent, dim)):
            continue
        lo, ext, size = rng.min.value, rng.extent.value, dim.value
        if lo < 0 or ext < 0 or lo + ext > size:
            return (f"region [{lo}:{lo + ext}] of buffer '{r.buffer.name}' is outside its "
                    f"extent {size} in dimension {axis}")
    return None


def _iter_values_bound(br: BlockRealize, w: _Walker) -> str | None:
    n_vars, n_vals = len(br.block.iter_vars), len(br.iter_values)
    if n_vars != n_vals:
        return (f"block '{br.block.name}' has "
                f"{_count(n_vars, 'iteration variable', 'iteration variables')} but "
                f"{_count(n_vals, 'value is', 'values are')} bound")
    return None


def _iter_values_are_ints(br: BlockRealize, w: _Walker) -> str | None:
    for iv, value in zip(br.block.iter_vars, br.iter_values):
        if not value.dtype.is_int:
            return (f"block '{br.block.name}' binds iteration variable '{iv.var.name}' "
                    f"to a {value.dtype} value")
    return None


def _loop_dtypes(s: For, w: _Walker) -> str | None:
    if s.min.dtype != s.loop_var.dtype or s.extent.dtype != s.loop_var.dtype:
        return (f"loop variable '{s.loop_var.name}' is {s.loop_var.dtype} but its minimum is "
                f"{s.min.dtype} and its extent {s.extent.dtype}")
    return None


def _operand_dtypes(e: BinOp, w: _Walker) -> str | None:
    if e.a.dtype != e.b.dtype:
        return f"the operands of '{e.op}' are {e.a.dtype} and {e.b.dtype}"
    return None


def _gvar_defined(v: GVar, w: _Walker) -> str | None:
    if v not in w.live:
        return f"graph variable '{v.name}' is used before it is defined"
    return None


def _callee_exists(g: GlobalVar, w: _Walker) -> str | None:
    if g.name not in w.module.functions:
        return f"'{g.name}' is not a function of the module"
    return None


def _outputs_bound(b: BindingBlock, w: _Walker) -> str | None:
    bound = {binding.var for binding in b.bindings}
    for out in b.outputs:
        if out not in bound:
            return f"dataflow output '{out.name}' is not bound in its dataflow block"
    return None


@dataclass(frozen=True)
class Rule:
    """One well-formedness rule: nodes of `kind` must pass `check` (None means they do)."""

    kind: type
    name: str
    check: Callable[[Any, _Walker], str | None]


RULES: tuple[Rule, ...] = (
    Rule(Var, "var-defined", _var_defined),
    Rule(BufferLoad, "buffer-in-scope", lambda n, w: _buffer_in_scope(n.buffer, w)),
    Rule(BufferStore, "buffer-in-scope", lambda n, w: _buffer_in_scope(n.buffer, w)),
    Rule(BufferRegion, "buffer-in-scope", lambda n, w: _buffer_in_scope(n.buffer, w)),
    Rule(BufferLoad, "access-rank", _access_rank),
    Rule(BufferStore, "access-rank", _access_rank),
    Rule(BufferRegion, "region-rank", _region_rank),
    Rule(BufferRegion, "region-in-bounds", _region_in_bounds),
    Rule(BlockRealize, "iter-values-bound", _iter_values_bound),
    Rule(BlockRealize, "iter-values-int", _iter_values_are_ints),
    Rule(For, "loop-dtype", _loop_dtypes),
    Rule(BinOp, "operand-dtypes", _operand_dtypes),
    Rule(GVar, "gvar-defined", _gvar_defined),
    Rule(GlobalVar, "callee-exists", _callee_exists),
    Rule(BindingBlock, "outputs-bound", _outputs_bound),
)

# Scoping rule applied at every definition (variables, buffers, graph variables).
DUPLICATE_MESSAGE = "{what} '{name}' is defined more than once"


def _rules_for(node: Node) -> Iterator[Rule]:
    for rule in RULES:
        if isinstance(node, rule.kind):
            yield rule


# ---- the walker: scopes, spans, and rule dispatch ----------------------------------------


class _Walker(Visitor):
    """Walks one function, keeping the set of live definitions and the innermost span."""

    def __init__(self, module: IRModule, problems: list[Diagnostic]) -> None:
        self.module = module
        self.problems = problems
        self.live: set[Any] = set()
        self.seen: set[Any] = set()
        self.data_refs: dict[Var, int] = {}  # live buffers per data variable (aliases share)
        self.spans: list[Span] = []
        self.in_prim_func = False
        self.reported: set[tuple[str, str, Span | None]] = set()

    # -- reporting

    def report(self, rule: str, message: str, node: Node | None = None,
               at: Span | None = None) -> None:
        span = at if at is not None else node.span if node is not None and \
            node.span is not None else (self.spans[-1] if self.spans else None)
        key = (rule, message, span)
        if key not in self.reported and len(self.problems) < MAX_ERRORS:
            self.reported.add(key)
            self.problems.append(Diagnostic("error", message, span))

    def check(self, node: Node) -> None:
        for rule in _rules_for(node):
            message = rule.check(node, self)
            if message is not None:
                self.report(rule.name, message, node)

    # -- scopes

    def define(self, item: Any, node: Node | None = None) -> None:
        if item in self.seen:
            what = "buffer" if isinstance(item, Buffer) else "variable"
            self.report("no-duplicate-definition",
                        DUPLICATE_MESSAGE.format(what=what, name=item.name), node)
        self.seen.add(item)
        self.live.add(item)
        if isinstance(item, Buffer):
            self.data_refs[item.data] = self.data_refs.get(item.data, 0) + 1
            self.live.add(item.data)

    def undefine(self, *items: Any) -> None:
        for item in items:
            self.live.discard(item)
            if isinstance(item, Buffer):
                self.data_refs[item.data] -= 1
                if self.data_refs[item.data] == 0:
                    self.live.discard(item.data)

    def define_buffer(self, buf: Buffer, node: Node | None = None) -> None:
        """A buffer's shape is evaluated where it is defined, then the buffer is live."""
        self.visit((buf.shape, buf.strides, buf.elem_offset))
        self.define(buf, node)

    # -- traversal

    def visit(self, node: Any) -> None:
        if isinstance(node, Buffer):
            return  # a use of a buffer is checked by the node holding it
        if isinstance(node, Node):
            pushed = node.span is not None
            if pushed:
                self.spans.append(node.span)  # type: ignore[arg-type]
            self.check(node)
            super().visit(node)
            if pushed:
                self.spans.pop()
        else:
            super().visit(node)

    def visit_PrimFunc(self, f: PrimFunc) -> None:
        self.in_prim_func = True
        for p in f.params:
            self.define(p, f)
        buffers = [f.buffer_map[p] for p in f.params if p in f.buffer_map]
        for buf in buffers:
            for v in _free_vars((buf.shape, buf.strides, buf.elem_offset)):
                if v not in self.live:
                    self.define(v, f)
        for buf in buffers:
            self.define(buf, f)
        for message, span in loop_jump_errors(f.body):  # break/continue have a serial loop
            self.report("loop-jump-target", message, at=span)
        self.visit(f.body)

    def visit_For(self, s: For) -> None:
        self.visit((s.min, s.extent))
        self.define(s.loop_var, s)
        self.visit(s.body)
        self.undefine(s.loop_var)

    def visit_LetStmt(self, s: LetStmt) -> None:
        self.visit(s.value)
        self.define(s.var, s)
        self.visit(s.body)
        self.undefine(s.var)

    def visit_Let(self, e: Let) -> None:
        self.visit(e.value)
        self.define(e.var, e)
        self.visit(e.body)
        self.undefine(e.var)

    def visit_Allocate(self, s: Allocate) -> None:
        self.define_buffer(s.buffer, s)
        self.visit(s.init)
        self.visit(s.body)
        self.undefine(s.buffer)

    def visit_AttrStmt(self, s: AttrStmt) -> None:
        self.visit(s.value)
        launched = isinstance(s.node, Var) and s.key in THREAD_ATTRS and s.node not in self.live
        if launched:
            self.live.add(s.node)
        self.visit(s.body)
        if launched:
            self.undefine(s.node)

    def visit_BlockRealize(self, br: BlockRealize) -> None:
        self.visit((br.iter_values, br.predicate))
        self.visit(br.block)

    def visit_Block(self, b: Block) -> None:
        for iv in b.iter_vars:
            self.visit((iv.dom.min, iv.dom.extent))
        for iv in b.iter_vars:
            self.define(iv.var, iv)
        for buf in b.alloc_buffers:
            self.define_buffer(buf, b)
        for mb in b.match_buffers:
            self.visit(mb.source)
            for v in _free_vars((mb.buffer.shape, mb.buffer.strides, mb.buffer.elem_offset)):
                if v not in self.live:
                    self.define(v, mb)
            self.define(mb.buffer, mb)
        self.visit((b.reads, b.writes, b.init, b.body))
        self.undefine(*(iv.var for iv in b.iter_vars), *b.alloc_buffers,
                      *(mb.buffer for mb in b.match_buffers))

    def visit_SparseIteration(self, it: SparseIteration) -> None:
        for iv in it.sp_iter_vars:
            self.define(iv.var, iv)
        self.visit((it.init, it.body))
        self.undefine(*(iv.var for iv in it.sp_iter_vars))

    # graph level: GVars are scoped; loop-level expressions inside (shapes) are not checked

    def visit_Function(self, f: Function) -> None:
        self.in_prim_func = False
        for p in f.params:
            self.define(p, f)
        self.visit(f.body)

    def visit_SeqExpr(self, e: SeqExpr) -> None:
        self.visit((e.blocks, e.body))

    def visit_VarBinding(self, b: VarBinding) -> None:
        self.visit(b.value)
        self.define(b.var, b)

    def visit_MatchCast(self, b: MatchCast) -> None:
        self.visit(b.value)
        self.define(b.var, b)

    def visit_GVar(self, v: GVar) -> None:
        return  # a use; checked by its rule

    def visit_GCall(self, c: GCall) -> None:
        self.visit(c.args)

    def visit_Tuple(self, t: Tuple) -> None:
        # Not generic_visit: the field named `fields` hides Node.node_fields().
        self.visit(t.fields)

    def visit_PrimValue(self, v: PrimValue) -> None:
        return

    def visit_ShapeExpr(self, s: ShapeExpr) -> None:
        return


def _free_vars(tree: Any) -> list[Var]:
    found: list[Var] = []

    class _Collect(Visitor):
        def visit_Var(self, v: Var) -> None:
            if v not in found:
                found.append(v)

    _Collect().visit(tree)
    return found


# ---- entry points ----------------------------------------------------------------------


def verify_module(mod: IRModule) -> list[Diagnostic]:
    """Every well-formedness problem of `mod` (empty when it is well-formed)."""
    problems: list[Diagnostic] = []
    for func in mod.functions.values():
        _Walker(mod, problems).visit(func)
    return problems


def check_module(mod: IRModule) -> None:
    """Raise a CompileError naming every problem when `mod` is not well-formed."""
    problems = verify_module(mod)
    if problems:
        raise CompileError(problems)


@dataclass(frozen=True)
class Verify(Pass):
    """Checks well-formedness and returns the module unchanged."""

    name = "verify"
    description = ("check well-formedness: definitions before use, access ranks, "
                   "block bindings, constant regions in bounds")

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        check_module(mod)
        return mod
