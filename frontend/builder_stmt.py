"""Loop-level statements: syntax -> Stmt (stores, lets, loops, if/while, allocations, ...).

A statement that scopes over the rest of its block (a let, `T.decl_buffer`, an event tensor,
`T.launch_thread`, `assert`) is built as a wrapper that receives the statements after it as
its body. Blocks (`with T.block`) are in builder_block.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from tirc.frontend import syntax as S
from tirc.frontend.builder_buffer import declare_buffer, event_tensor, keyword_form, region
from tirc.frontend.builder_expr import BIN_OPS, ExprBuilder, access_dtype, literal_value
from tirc.frontend.builder_sparse import ITERATION_CALLS, build_iteration
from tirc.frontend.context import TOO_DEEP, BuildError, Context, spanned
from tirc.frontend.loop_heads import LoopHead, launch_thread, loop_header, stepped_loop
from tirc.frontend.prim_calls import is_module_call, prim_call
from tirc.frontend.scope import EnvThread, Scope
from tirc.frontend.signature import Sig, check_call
from tirc.frontend.stmt_calls import STMT_CALLS, attr_dict
from tirc.frontend.storage import allocate, buffer_view
from tirc.ir import intrinsics as intrin
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, DType, DTypeError
from tirc.ir.expr import (
    Broadcast,
    Call,
    IntImm,
    PrimExpr,
    StringImm,
    Var,
    cast,
    const,
)
from tirc.ir.gpu.threads import ALL_TAGS, VTHREAD_TAGS, repeatable_copy
from tirc.ir.loop_jumps import escaping_loop_jumps, jump_kind
from tirc.ir.rebind import rebind, uses_any
from tirc.ir.span import Span
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    While,
)
from tirc.ir.structural import same_expr

Wrapper = Callable[[Stmt], Stmt]
Hook = Callable[[S.Stmt], bool]
INT32 = DType("int", 32)

ALLOC_SCOPES = {"T.alloc_buffer": None, "T.sblock_alloc_buffer": None, "T.alloc_local": "local",
                "T.alloc_shared": "shared"}
BLOCK_ONLY = ("T.reads", "T.writes", "T.where", "T.block_attr", "T.sblock_attr", "T.axis.remap",
              "T.axis.spatial", "T.axis.reduce", "T.axis.opaque", "T.axis.scan", "T.axis.S",
              "T.axis.R")


# Thread axes a loop inside a loop bound to the same one shares (TVM's UnifyThreadBinding).
UNIFIED_TAGS = VTHREAD_TAGS + ALL_TAGS

# Declarations that can also scope over an indented body with `with ... as name:`.
SCOPED_DECLARATIONS = ("T.decl_buffer", "T.event_tensor", "T.LetStmt")


class LoopBuilder:
    """Builds the statements of one loop function."""

    def __init__(self, ctx: Context, scope: Scope) -> None:
        self.ctx = ctx
        self.scope = scope
        self.eb = ExprBuilder(ctx, scope)
        self.loop_dom: dict[Var, tuple[PrimExpr, PrimExpr]] = {}
        self.ret_dtype: DType | None = None  # the function's result dtype (`-> T.int32`)
        self.unbound: set[Var] = set()  # `x = T.int32()` in the body, not yet given by T.Bind
        self.signature_sizes: dict[str, Var] = {}  # sizes a parameter's shape string created
        self.vthreads: dict[str, LoopHead] = {}  # the loop around bound to each thread tag
        self.reducer: Any = None  # T.comm_reducer for the next T.tvm_thread_allreduce
        self.block_bindings: dict[Var, PrimExpr] = {}  # each block iteration variable's value

    # ---- sequences ----------------------------------------------------------------------

    def body(self, stmts: list[S.Stmt], hook: Hook | None = None, frame: bool = True) -> Stmt:
        """A statement list in a new scope frame (or the current one)."""
        if frame:
            with self.scope.frame():
                return self._body(stmts, hook)
        return self._body(stmts, hook)

    def _body(self, stmts: list[S.Stmt], hook: Hook | None) -> Stmt:
        parts: list[tuple[Stmt | Wrapper, Span]] = []
        for s in stmts:
            try:
                if hook is not None and hook(s):
                    continue
                result = self.stmt(s)
            except BuildError:
                self.poison_targets(s)
                continue
            except RecursionError:
                self.ctx.report(TOO_DEEP, s.span)
                self.poison_targets(s)
                continue
            if result is not None:
                parts.append((result, s.span))
        return fold(parts, stmts[0].span if stmts else None)

    def poison_targets(self, s: S.Stmt) -> None:
        """After a failed definition, silence later uses of the names it would define."""
        targets: list[S.Expr] = []
        if isinstance(s, (S.Assign, S.AnnAssign)):
            targets = [s.target]
        for t in targets:
            for e in t.elts if isinstance(t, S.Tuple) else [t]:
                if isinstance(e, S.Name):
                    self.scope.poison(e.id)

    # ---- statements ---------------------------------------------------------------------

    def stmt(self, s: S.Stmt) -> Stmt | Wrapper | None:
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            self.ctx.unsupported(_stmt_what(s), s.span)
        return method(s)

    def stmt_Pass(self, s: S.Pass) -> None:
        return None

    def stmt_UnsupportedStmt(self, s: S.UnsupportedStmt) -> None:
        self.ctx.unsupported(s.what, s.span)

    def stmt_ExprStmt(self, s: S.ExprStmt) -> Stmt | Wrapper | None:
        v = s.value
        if isinstance(v, S.Constant) and v.kind == "str":
            return None  # a docstring
        if isinstance(v, S.Call) and isinstance(v.func, S.Attribute) and v.func.attr == "vstore":
            buf, idx = self.eb.vector_access(v, "vstore")
            if len(v.args) != 2:
                self.ctx.error(f"{buf.name}.vstore takes the indices and the value", v.span)
            value = self.typed_value(v.args[1], access_dtype(buf, idx), "store",
                                     f"into buffer '{buf.name}' of dtype {buf.dtype}")
            return BufferStore(buf, value, idx, span=s.span)
        if is_module_call(self.eb, v):
            return Evaluate(prim_call(self.eb, v, statement=True), span=s.span)  # type: ignore[arg-type]
        name = S.call_name(v)
        if name is not None:
            assert isinstance(v, S.Call)
            handler = STMT_CALLS.get(name)
            if handler is not None:
                return handler(self, v)
            if name in BLOCK_ONLY or name == "T.init":
                self.ctx.error(f"{name} is only allowed directly inside a block", v.span)
            if name == "T.func_attr":
                self.ctx.error("T.func_attr is only allowed at the top of a function", v.span)
        return Evaluate(self.eb.expr(v), span=s.span)

    def stmt_Assign(self, s: S.Assign) -> Stmt | Wrapper | None:
        if s.more_targets:
            self.ctx.unsupported("chained assignment", s.span)
        t = s.target
        if isinstance(t, S.Subscript):
            return self.store(t, s.value, s.span)
        name = S.call_name(s.value)
        if isinstance(t, S.Tuple):
            sizes = S.declared_sizes(t, s.value)
            if sizes is not None:  # `m, n = T.int32(), T.int32()`, as TVM prints sizes
                for target, call in sizes:
                    if self.declaration(target, call, S.call_name(call) or "") is not _NOTHING:
                        self.ctx.unsupported("tuple assignment of this declaration",
                                             call.span)
                return _NOTHING
            if name in BLOCK_ONLY:
                self.ctx.error(f"{name} is only allowed directly inside a block", s.value.span)
            self.ctx.unsupported("tuple assignment in a loop function", t.span)
        if not isinstance(t, S.Name):
            self.ctx.error("cannot assign to this expression", t.span)
        if name is not None:
            assert isinstance(s.value, S.Call)
            decl = self.declaration(t, s.value, name)
            if decl is not None:
                return decl
        value = self.eb.expr(s.value)
        return self.let(t, Var(t.id, value.dtype, span=t.span), value, s.span)

    def declaration(self, t: S.Name, call: S.Call, name: str) -> Stmt | Wrapper | None:
        """`x = T.<declaration>(...)`: symbolic vars, buffers, thread vars. None if `call`
        is an ordinary value; a declaration that binds without a statement defines `t` and
        returns None after marking it in scope."""
        if name == "T.decl_buffer":
            call = keyword_form(call)
        if name == "T.decl_buffer" and _has_data(call):
            # A declaration over existing storage (TVM's DeclBuffer): an alias, no allocation.
            call, bind = self.data_expression(t, call)
            buf = declare_buffer(self.eb, t.id, call, name, alias=True)
            self.scope.define(t.id, buf, t.span)
            return bind
        if name in ALLOC_SCOPES or name == "T.decl_buffer":
            buf = declare_buffer(self.eb, t.id, call, name, scope=ALLOC_SCOPES.get(name))
            self.scope.define(t.id, buf, t.span)
            return lambda body: Allocate(buf, body, span=call.span)
        if name in ("T.allocate", "T.allocate_const"):
            return allocate(self, t, call, name)
        if isinstance(call.func, S.Attribute) and call.func.attr == "view":
            buf = buffer_view(self.eb, t.id, call)
            self.scope.define(t.id, buf, t.span)
            return _NOTHING
        if name == "T.event_tensor":
            buf, init = event_tensor(self.eb, t.id, call)
            self.scope.define(t.id, buf, t.span)
            return lambda body: Allocate(buf, body, init, span=call.span)
        if name == "T.match_buffer":
            self.ctx.error("T.match_buffer is only allowed at the top of a function or a block",
                           call.span)
        if name in BLOCK_ONLY:
            self.ctx.error(f"{name} is only allowed directly inside a block", call.span)
        if name == "T.env_thread":
            a = check_call(self.ctx, call, name, Sig(1, 1))
            tag = self.eb.str_literal(a.pos[0], "the thread tag")
            self.scope.define(t.id, EnvThread(Var(t.id, INT32, span=t.span), tag), t.span)
            return _NOTHING
        if name == "T.launch_thread":
            return launch_thread(self, call, t)
        if name == "T.meta_var":
            # A name for a value written once and used several times (TVMScript evaluates
            # it in Python): each use is that value.
            a = check_call(self.ctx, call, name, Sig(1, 1))
            self.scope.define(t.id, self.eb.expr(a.pos[0]), t.span)
            return _NOTHING
        if name in ("T.bind", "T.Bind"):
            # TVM main's binding: `x = T.bind(value)` (or with a dtype) is `x = value`.
            a = check_call(self.ctx, call, name, Sig(1, 2))
            if len(a.pos) == 2:
                ann = a.pos[1]
                is_str = isinstance(ann, S.Constant) and ann.kind == "str"
                dt = self.eb.dtype_arg(ann) if is_str else self.annotation_dtype(ann)
                if dt is None:
                    self.ctx.error(f"{name} takes a dtype such as T.int32 second", ann.span)
                value = self.typed_value(a.pos[0], dt, "bind", f"to '{t.id}' of dtype {dt}")
            else:
                value = self.eb.expr(a.pos[0])
            return self.let(t, Var(t.id, value.dtype, span=t.span), value, call.span)
        if name == "T.Buffer":
            buf = declare_buffer(self.eb, t.id, call, name, alias=True)
            self.scope.define(t.id, buf, t.span)
            return _NOTHING
        if name.startswith("T.") and S.is_size_declaration(call):  # T.int32(is_size_var=True)
            dt = self.symbolic_dtype(name, call)
            if dt is not None and self.reuses_signature_size(t, dt, call):
                return _NOTHING
            if dt is not None:
                var = Var(t.id, dt, span=t.span)
                self.scope.define(t.id, var, t.span)
                self.unbound.add(var)
                return _NOTHING
        return None

    def reuses_signature_size(self, t: S.Name, dt: DType, call: S.Call) -> bool:
        """`n = T.int32()` naming a size a parameter's shape string created (`"n"`, as TVM
        prints an int32 size) declares that size again, as TVM's parser reads it: the same
        variable, of the same dtype."""
        old = self.signature_sizes.get(t.id)
        if old is None or self.scope.lookup(t.id) is not old:
            return False
        if old.dtype != dt:
            self.ctx.error(f"'{t.id}' is a size of dtype {old.dtype} from the parameters' "
                           f"shapes, declared here as {dt}", call.span)
        return True

    def data_expression(self, t: S.Name, call: S.Call) -> tuple[S.Call, Wrapper]:
        """`data=` of a pointer expression (`data=T.address_of(A[i, 0])`, as TVM's inliner
        writes): the pointer is bound to a new handle variable `<t>_data`, which the buffer
        views. The call with `data=` naming it, and the binding (nothing for a plain name or
        `B.data`)."""
        node = next(k.value for k in call.keywords if k.name == "data")
        if isinstance(node, S.Name) or (isinstance(node, S.Attribute) and node.attr == "data"):
            return call, _NOTHING
        value = self.eb.expr(node)
        if not value.dtype.is_handle or value.dtype.lanes != 1:
            self.ctx.error(f"data= must be a pointer (a handle), got {value.dtype}", node.span)
        var = Var(f"{t.id}_data", HANDLE, span=node.span)
        key = f"{t.id}.data"  # a scope key no written name can be
        self.scope.define(key, var, node.span)
        ref = S.Name(node.span, key)
        keywords = [dataclasses.replace(k, value=ref) if k.name == "data" else k
                    for k in call.keywords]
        return dataclasses.replace(call, keywords=keywords), \
            lambda body: LetStmt(var, value, body, span=node.span)

    def symbolic_dtype(self, name: str, call: S.Call) -> DType | None:
        """The dtype of `n = T.int64()`, or None when `name` is no dtype."""
        try:
            dt = DType.parse(name[2:])
        except DTypeError:
            return None
        if not (dt.is_int or dt.is_float) or dt.lanes != 1:
            self.ctx.error(f"a declared variable is an integer or a float, not {dt}", call.span)
        return dt

    def let(self, t: S.Name, var: Var, value: PrimExpr, span: Span) -> Wrapper:
        self.scope.define(t.id, var, t.span)
        return lambda body: LetStmt(var, value, body, span=span)

    def stmt_AnnAssign(self, s: S.AnnAssign) -> Wrapper:
        t = s.target
        if not isinstance(t, S.Name):
            self.ctx.unsupported("an annotated assignment to this target", t.span)
        dt = self.annotation_dtype(s.annotation)
        if s.value is None:
            self.ctx.unsupported("a declaration without a value", s.span)
        if dt is None:
            value = self.eb.expr(s.value)
            dt = value.dtype
        else:
            value = self.typed_value(s.value, dt, "assign", f"to '{t.id}' of dtype {dt}")
        return self.let(t, Var(t.id, dt, span=t.span), value, s.span)

    def annotation_dtype(self, ann: S.Expr) -> DType | None:
        """The dtype of a variable annotation: `T.float32`, `T.let[T.int32]`,
        `T.handle("float32")` or TVM's `T.Ptr[T.float32]` (a pointer: the handle dtype); None
        for a bare `T.let`, whose dtype is the value's."""
        if isinstance(ann, S.Subscript) and S.dotted(ann.value) == "T.let":
            if len(ann.items) != 1:
                self.ctx.error("write T.let[<dtype>]", ann.span)
            ann = ann.items[0]
        elif S.dotted(ann) == "T.let":
            return None
        if isinstance(ann, S.Subscript) and S.dotted(ann.value) == "T.Ptr":
            element = S.dotted(ann.items[0]) if ann.items else None
            scope = ann.items[1:]
            if (element is None or not element.startswith("T.") or len(scope) > 1
                    or any(not (isinstance(x, S.Constant) and x.kind == "str") for x in scope)):
                self.ctx.error('write T.Ptr[<dtype>] or T.Ptr[<dtype>, "<storage scope>"]',
                               ann.span)
            self.eb.parse_dtype(element[2:], ann.items[0])
            return HANDLE
        if isinstance(ann, S.Call) and S.dotted(ann.func) == "T.handle":
            check_call(self.ctx, ann, "T.handle", Sig(0, 2, ("dtype", "storage_scope"),
                                                         positional_kw=False))
            return HANDLE
        name = S.dotted(ann)
        if name is None or not name.startswith("T."):
            self.ctx.error("a variable annotation is a dtype such as T.float32", ann.span)
        return self.eb.parse_dtype(name[2:], ann)

    def typed_value(self, node: S.Expr, dt: DType, verb: str, target: str) -> PrimExpr:
        """`node` as a value of dtype `dt`: literals adapt, anything else must match.
        Messages read "cannot <verb> ... <target>" ("store", "into buffer 'A' of ...")."""
        lit = literal_value(node)
        if isinstance(lit, (bool, int, float)) and not isinstance(lit, str):
            if isinstance(lit, float) and not dt.is_float:
                self.ctx.error(f"cannot {verb} a float literal {target}", node.span)
            return spanned(const(lit, dt), node.span)
        value = self.eb.expr(node)
        if value.dtype == dt:
            return value
        if value.dtype == dt.element() and dt.lanes > 1:
            return Broadcast(value, dt.lanes, dt, span=node.span)
        self.ctx.error(f"cannot {verb} a value of dtype {value.dtype} {target}", node.span,
                       note=f'convert it explicitly, T.Cast("{dt}", ...): tirc does not cast '
                            "on assignment as TVM's parser does")

    def store(self, t: S.Subscript, value_node: S.Expr, span: Span) -> Stmt:
        buf = self.eb.buffer(t.value)
        idx = self.eb.indices(buf, t)
        want = access_dtype(buf, idx)
        value = self.typed_value(value_node, want, "store",
                                 f"into buffer '{buf.name}' of dtype {buf.dtype}")
        return BufferStore(buf, value, idx, span=span)

    def stmt_AugAssign(self, s: S.AugAssign) -> Stmt:
        if not isinstance(s.target, S.Subscript):
            self.ctx.unsupported("augmented assignment to a variable (variables are "
                                 "immutable; use a buffer)", s.span)
        if s.op not in BIN_OPS:
            self.ctx.unsupported(f"operator '{s.op}='", s.span)
        value = S.BinOp(s.span, s.op, s.target, s.value)
        return self.store(s.target, value, s.span)

    def stmt_Assert(self, s: S.Assert) -> Wrapper:
        cond = self.eb.condition(s.test, "an assertion")
        msg = self.assert_message(s.msg) if s.msg is not None else ""
        return lambda body: AssertStmt(cond, msg, body, span=s.span)

    def assert_message(self, node: S.Expr) -> str:
        """An assertion's message: a string, or TVM 0.27's `("ValueError", ["part", ...])`
        (an error kind and message parts, which TVM prints for every assert); the parts are
        joined. The kind is not kept: a failing assert is an error of the call whatever it
        names (docs/language.md)."""
        if not isinstance(node, S.Tuple):
            return self.eb.str_literal(node, "the assertion message")
        if len(node.elts) != 2 or not isinstance(node.elts[1], (S.List, S.Tuple)):
            self.ctx.error('the assertion message must be a string or ("Kind", ["part", ...])',
                           node.span)
        kind = self.eb.str_literal(node.elts[0], "the assertion's error kind")
        if not kind.isidentifier():
            self.ctx.error(f'"{kind}" is not an error kind such as "ValueError"',
                           node.elts[0].span)
        parts = node.elts[1].elts  # type: ignore[attr-defined]
        return "".join(self.eb.str_literal(p, "a part of the assertion message") for p in parts)

    def stmt_Return(self, s: S.Return) -> Stmt:
        if s.value is None:
            self.ctx.unsupported("'return' without a value in a loop function", s.span)
        return self.return_stmt(s.value, s.span)

    def return_stmt(self, node: S.Expr, span: Span, dt: DType | None = None,
                    dt_span: Span | None = None) -> Stmt:
        """`return value` / `T.ret(value)`: the value, of the function's declared result
        dtype, as the `ret` intrinsic; `dt` is the dtype `T.ret(..., dtype=)` names, which
        must be that result dtype (or sets it, without a `->` annotation)."""
        if dt is not None and self.ret_dtype is None:
            self.ret_dtype = dt
        elif dt is not None and dt != self.ret_dtype:
            self.ctx.error(f"T.ret: dtype {dt} is not the function's result dtype "
                           f"{self.ret_dtype}", dt_span or span)
        if self.ret_dtype is None:
            # no `->` annotation (TVM reads none either): the first value returned sets the
            # result dtype, which later returns must have
            first = self.eb.expr(node)
            if first.dtype.lanes != 1 or first.dtype.is_handle:
                self.ctx.error(f"unsupported: a loop function returning {first.dtype} (a "
                               "scalar number or bool)", span)
            self.ret_dtype = first.dtype
            return Evaluate(spanned(Call(intrin.RET, (first,), first.dtype), span), span=span)
        value = self.typed_value(node, self.ret_dtype, "return",
                                 f"from a function returning {self.ret_dtype}")
        return Evaluate(spanned(Call(intrin.RET, (value,), self.ret_dtype), span), span=span)

    def stmt_LoopJump(self, s: S.LoopJump) -> Stmt:
        op = intrin.BREAK_LOOP if s.kind == "break" else intrin.CONTINUE_LOOP
        return self.loop_jump(op, s.span)

    def loop_jump(self, op: str, span: Span) -> Stmt:
        """`break` / `continue` (or TVM's `T.break_loop()` / `T.continue_loop()`): the jump
        intrinsic as a statement. Where it may stand (a serial loop, not across a block) is
        checked over the whole function (tirc.ir.loop_jumps)."""
        return Evaluate(Call(op, (), INT32, span=span), span=span)

    def stmt_FunctionDef(self, s: S.FunctionDef) -> None:
        self.ctx.unsupported("nested function definitions", s.span)

    def stmt_ClassDef(self, s: S.ClassDef) -> None:
        self.ctx.unsupported("class definitions inside a function", s.span)

    def stmt_ImportFrom(self, s: S.ImportFrom) -> None:
        self.ctx.unsupported("imports inside a function", s.span)

    stmt_Import = stmt_ImportFrom

    # ---- control flow -------------------------------------------------------------------

    def stmt_If(self, s: S.If) -> Stmt:
        try:
            cond = self.eb.condition(s.test, "the condition of 'if'", truthy=True)
        except BuildError:
            self.body(s.body)
            if s.orelse:
                self.body(s.orelse)
            raise
        then = self.body(s.body)
        other = self.body(s.orelse) if s.orelse is not None else None
        return IfThenElse(cond, then, other, span=s.span)

    def stmt_While(self, s: S.While) -> Stmt:
        if s.orelse is not None:
            self.ctx.unsupported("'else' after 'while'", s.span)
        try:
            cond = self.eb.condition(s.test, "the condition of 'while'", truthy=True)
        except BuildError:
            self.body(s.body)
            raise
        return While(cond, self.body(s.body), span=s.span)

    def stmt_For(self, s: S.For) -> Stmt:
        if s.orelse is not None:
            self.ctx.unsupported("'else' after 'for'", s.span)
        try:
            loops = loop_header(self, s)
        except BuildError:
            with self.scope.frame():
                self.poison_loop_targets(s.target)
                self.body(s.body, frame=False)
            raise
        unified, same_axis = self.unified_threads(loops)
        opened = {h.extra["thread_tag"]: h for h in loops if h.var not in unified
                  and h.var not in same_axis and h.kind == ForKind.THREAD_BINDING
                  and h.extra.get("thread_tag") in UNIFIED_TAGS}
        outer = dict(self.vthreads)
        with self.scope.frame():
            for head in loops:
                var = unified.get(head.var, head.var)
                self.scope.define(head.var.name, var, head.var.span)
                self.loop_dom[head.var] = (head.min, head.extent)
            if isinstance(s.target, S.Name) and len(loops) > 1:
                self.scope.define(s.target.id, tuple(unified.get(h.var, h.var) for h in loops),
                                  s.target.span)
            self.vthreads.update(opened)
            try:
                body = self.body(s.body, frame=False)
            finally:
                self.vthreads = outer
        loops = [h for h in loops if h.var not in unified]
        if len(loops) > 1:
            for jump in escaping_loop_jumps(body):
                if jump_kind(jump) == intrin.BREAK_LOOP:
                    # Python would leave the whole nest, TVM the innermost loop: refuse
                    self.ctx.report(f"'break' directly inside a loop nest of one 'for' over "
                                    f"{len(loops)} loops is ambiguous (write the loops one "
                                    "'for' each)", jump.span)
        for head in reversed(loops):
            outer_var = same_axis.get(head.var)
            if outer_var is not None and (uses_any(body, {outer_var})
                                          or not repeatable_copy(body)):
                body = rebind(body, {head.var: outer_var})  # the thread's own index
                continue
            var, lo, extent, body = stepped_loop(head, body)
            body = For(var, lo, extent, head.kind, body, span=s.span, **head.extra)
        return body

    def unified_threads(self, loops: list[LoopHead]) -> tuple[dict[Var, Var], dict[Var, Var]]:
        """Loops bound to a thread axis that a loop around them is bound to already, which
        TVM's UnifyThreadBinding makes that loop's index: a virtual thread's (its range must
        be the same) maps to the outer variable before its body is read (the first result).
        A block or thread axis's over the same range (the second) becomes the outer index
        once its body is read, unless that body is a plain copy not using the outer index
        (MetaSchedule's cooperative fetch), which the reference interpreter runs whole in each
        thread and gpu-thread-binding unifies; over another range it is left to that pass."""
        out: dict[Var, Var] = {}
        same_axis: dict[Var, Var] = {}
        for head in loops:
            tag = head.extra.get("thread_tag") if head.kind == ForKind.THREAD_BINDING else None
            outer = self.vthreads.get(tag) if tag in UNIFIED_TAGS else None
            if outer is None:
                continue
            same = same_expr(outer.extent, head.extent) and same_expr(outer.min, head.min)
            if tag in ALL_TAGS:
                if same:
                    same_axis[head.var] = outer.var
                continue
            if not same:
                self.ctx.error(f"loop '{head.var.name}' is bound to {tag} inside loop "
                               f"'{outer.var.name}', bound to it too with another range; "
                               "TVM makes them one index, so their extents must be the same",
                               head.var.span)
            out[head.var] = outer.var
        return out, same_axis

    def poison_loop_targets(self, target: S.Expr) -> None:
        for e in target.elts if isinstance(target, S.Tuple) else [target]:
            if isinstance(e, S.Name):
                self.scope.poison(e.id)

    # ---- with -----------------------------------------------------------------------------

    def stmt_With(self, s: S.With) -> Stmt | None:
        if len(s.items) != 1:
            self.ctx.unsupported("several context managers in one 'with'", s.span)
        item = s.items[0]
        name = S.call_name(item.context)
        call = item.context
        if name in ("T.block", "T.sblock"):
            from tirc.frontend.builder_block import build_block

            if item.target is not None:
                self.ctx.unsupported(f"'with {name}(...) as'", item.target.span)
            assert isinstance(call, S.Call)
            return build_block(self, s, call, name)
        if name == "T.init":
            self.ctx.error("T.init is only allowed directly inside a block", call.span)
        if name in ITERATION_CALLS:
            assert isinstance(call, S.Call)
            return build_iteration(self, s, call, name, item.target)
        if name == "T.attr":
            assert isinstance(call, S.Call)
            return self.attr(s, call)
        if name == "T.realize":
            assert isinstance(call, S.Call)
            return self.realize(s, call)
        if name == "T.launch_thread":
            assert isinstance(call, S.Call)
            if item.target is None and call.args and isinstance(call.args[0], S.Name):
                with self.scope.frame():  # `with T.launch_thread(tx, n):` (tx from env_thread)
                    wrap = launch_thread(self, call, None)
                    body = self.body(s.body, frame=False)
                return wrap(body)
            if not isinstance(item.target, S.Name):
                self.ctx.error("write `with T.launch_thread(\"threadIdx.x\", n) as tx:`",
                               call.span)
            with self.scope.frame():
                wrap = launch_thread(self, call, item.target)
                body = self.body(s.body, frame=False)
            assert wrap is not None
            return wrap(body)
        if name in SCOPED_DECLARATIONS:
            assert isinstance(call, S.Call)
            return self.scoped_declaration(s, call, name, item.target)
        if name is not None and name.startswith("R."):
            self.ctx.error(f"{name} is only allowed in a graph function", call.span)
        self.ctx.unsupported(f"'with' over {name or 'this expression'}", call.span)

    def scoped_declaration(self, s: S.With, call: S.Call, name: str,
                           target: S.Expr | None) -> Stmt:
        """`with T.decl_buffer(...) as B:` (or T.event_tensor, `with T.LetStmt(v) as x:`):
        a declaration whose scope ends with the indented body."""
        if not isinstance(target, S.Name):
            self.ctx.error(f"write `with {name}(...) as name:`", call.span)
        with self.scope.frame():
            if name == "T.LetStmt":
                a = check_call(self.ctx, call, name, Sig(1, 1))
                value = self.eb.expr(a.pos[0])
                wrap = self.let(target, Var(target.id, value.dtype, span=target.span), value,
                                s.span)
            else:
                decl = self.declaration(target, call, name)
                assert callable(decl)
                wrap = decl
            body = self.body(s.body, frame=False)
        return wrap(body)

    def realize(self, s: S.With, call: S.Call) -> Stmt:
        """`with T.realize(B[0:n], "scope"):` (TVM's form before storage flattening): the
        storage of B, declared with T.Buffer and no data, over the body."""
        a = check_call(self.ctx, call, "T.realize", Sig(1, 3, ("condition",)))
        reg = region(self.eb, a.pos[0])
        buf = reg.buffer
        if not all(isinstance(r.min, IntImm) and r.min.value == 0 for r in reg.region):
            self.ctx.unsupported("T.realize of a region that does not start at 0",
                                 a.pos[0].span)
        if len(a.pos) > 1:
            scope = self.eb.str_literal(a.pos[1], "the storage scope")
            if scope not in ("", buf.scope):
                self.ctx.unsupported("T.realize in another scope than its buffer's",
                                     a.pos[1].span)
        cond = a.get(2, "condition")
        if cond is not None and literal_value(cond) is not True:
            self.ctx.unsupported("T.realize with a condition", cond.span)
        return Allocate(buf, self.body(s.body), span=s.span)

    def attr(self, s: S.With, call: S.Call) -> Stmt:
        if len(call.args) == 1 and not call.keywords and isinstance(call.args[0], S.Dict):
            return attr_dict(self, call.args[0], call)(self.body(s.body))  # TVM 0.27's form
        launch = self.thread_extent_attr(call)
        if launch is not None:
            return launch(self.body(s.body))
        if call.args and S.call_name(call.args[0]) == "T.comm_reducer":
            from tirc.frontend.allreduce import reducer_attr

            # TVM's lowered reduction keeps `with T.attr(T.comm_reducer(...), "reduce_scope",
            # ...)` around its warp shuffles: the reducer for an allreduce in the body, else
            # nothing
            return reducer_attr(self, call)(self.body(s.body))
        node, key, value = self.attr_parts(call)
        return AttrStmt(node, key, value, self.body(s.body), span=s.span)

    def thread_extent_attr(self, call: S.Call) -> Wrapper | None:
        """`T.attr(T.iter_var(tx, T.Range(0, n), "ThreadIndex", "threadIdx.x"),
        "thread_extent", n)` after `tx = T.int32()` (TVM's lowered form of a thread launch):
        a thread-bound loop of `tx` over what follows, as `T.launch_thread`. None for any
        other attribute."""
        node = call.args[0] if call.args else None
        if S.call_name(node) != "T.iter_var" or len(call.args) != 3 or \
                literal_value(call.args[1]) != "thread_extent":
            return None
        assert isinstance(node, S.Call)
        a = check_call(self.ctx, node, "T.iter_var", Sig(4, 4))
        target, dom, kind_node, tag_node = a.pos
        var = self.scope.require(target.id, target.span) if isinstance(target, S.Name) else None
        if not isinstance(var, Var) or var not in self.unbound:
            self.ctx.error("T.iter_var of a thread extent takes a variable declared as "
                           "tx = T.int32() and not bound yet", target.span)
        if self.eb.str_literal(kind_node, "the iteration kind") != "ThreadIndex":
            self.ctx.unsupported("a thread extent over an iter_var that is not a ThreadIndex",
                                 kind_node.span)
        tag = self.eb.str_literal(tag_node, "the thread tag")
        extent = self.eb.index(call.args[2], "the thread extent")
        if var.dtype != extent.dtype:
            extent = cast(var.dtype, extent)
        if not (isinstance(dom, S.Constant) and dom.kind == "none"):
            self.check_thread_range(dom, extent)
        self.unbound.discard(var)
        zero = IntImm(0, var.dtype, span=call.span)
        self.loop_dom[var] = (zero, extent)
        return lambda body: For(var, zero, extent, ForKind.THREAD_BINDING, body,
                                thread_tag=tag, span=call.span)

    def check_thread_range(self, dom: S.Expr, extent: PrimExpr) -> None:
        """The iter_var's `T.Range(0, n)` must be the launch's extent."""
        r = check_call(self.ctx, dom, "T.Range", Sig(2, 2)) if isinstance(dom, S.Call) and \
            S.call_name(dom) == "T.Range" else None
        if r is None:
            self.ctx.error("the domain of a thread iter_var is T.Range(0, extent) or None",
                           dom.span)
        lo, hi = (self.eb.index(x, "the thread range") for x in r.pos)
        if not (isinstance(lo, IntImm) and lo.value == 0) or not same_expr(
                cast(extent.dtype, hi), extent):
            self.ctx.error("the domain of a thread iter_var is T.Range(0, extent) with the "
                           "attribute's extent", dom.span)

    def attr_parts(self, call: S.Call) -> tuple[Any, str, PrimExpr]:
        """(node, key, value) of `T.attr(node, key, value)`."""
        a = check_call(self.ctx, call, "T.attr", Sig(3, 3))
        node_arg = a.pos[0]
        node: Any
        if isinstance(node_arg, S.Constant) and node_arg.kind == "str":
            node = str(node_arg.value)
        elif isinstance(node_arg, S.Constant) and node_arg.kind == "none":
            node = None
        elif isinstance(node_arg, S.Name) and isinstance(self.scope.lookup(node_arg.id), Buffer):
            node = self.scope.lookup(node_arg.id)
        else:
            node = self.eb.expr(node_arg)
        key = self.eb.str_literal(a.pos[1], "the attribute key")
        v = a.pos[2]
        value = StringImm(str(v.value), span=v.span) if isinstance(v, S.Constant) and \
            v.kind == "str" else self.eb.expr(v)
        return node, key, value


def _has_data(call: S.Call) -> bool:
    return any(k.name == "data" and not (isinstance(k.value, S.Constant)
                                         and k.value.kind == "none") for k in call.keywords)


def _nothing(body: Stmt) -> Stmt:
    return body


_NOTHING: Wrapper = _nothing


def fold(parts: list[tuple[Stmt | Wrapper, Span]], span: Span | None) -> Stmt:
    """Statements and wrappers in order -> one statement; a wrapper takes the rest."""
    tail: list[Stmt] = []
    for part, pspan in reversed(parts):
        if isinstance(part, Stmt):
            tail.append(part)
            continue
        if part is _NOTHING:
            continue
        rest = _seq(list(reversed(tail)), pspan)
        tail = [part(rest)]
    return _seq(list(reversed(tail)), span)


def _seq(stmts: list[Stmt], span: Span | None) -> Stmt:
    """One statement for a list; an empty body is `T.evaluate(0)`, as in TVM."""
    if not stmts:
        return Evaluate(IntImm(0, INT32, span=span), span=span)
    if len(stmts) == 1:
        return stmts[0]
    flat: list[Stmt] = []
    for s in stmts:
        flat.extend(s.seq if isinstance(s, SeqStmt) else [s])
    if len(flat) == 1:
        return flat[0]
    if flat and flat[0].span is not None:
        span = flat[0].span.merge(flat[-1].span)
    return SeqStmt(tuple(flat), span=span)


def _stmt_what(s: S.Stmt) -> str:
    return f"{type(s).__name__} statements"


