"""`@T.prim_func def f(...)`: parameters, buffer matching, function attributes, root block."""

from __future__ import annotations

from typing import Any

from tirc.frontend import syntax as S
from tirc.frontend.builder_buffer import buffer_from_args, declare_buffer
from tirc.frontend.builder_sparse import SPARSE_DECLARATIONS
from tirc.frontend.builder_sparse import declare as declare_sparse
from tirc.frontend.builder_stmt import ALLOC_SCOPES, LoopBuilder
from tirc.frontend.context import BuildError, Context
from tirc.frontend.prim_calls import return_dtype
from tirc.frontend.scope import Scope
from tirc.frontend.signature import Args, Sig, check_call
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, DType, DTypeError
from tirc.ir.expr import Call, Var, const
from tirc.ir.function import PrimFunc
from tirc.ir.intrinsics import RET
from tirc.ir.loop_jumps import loop_jump_errors
from tirc.ir.stmt import Block, BlockRealize, Evaluate, For, ForKind, Stmt
from tirc.ir.visitor import post_order_visit


class PrimFuncBuilder:
    """Builds one loop function; errors are reported and the function is still returned
    when its header could be built, so later functions see its name."""

    def __init__(self, ctx: Context, fn: S.FunctionDef, module: Any = None) -> None:
        self.ctx = ctx
        self.fn = fn
        self.scope = Scope(ctx, S.assigned_names(fn.body))
        self.lb = LoopBuilder(ctx, self.scope)
        self.lb.eb.module = module
        self.params: list[Var] = []
        self.buffer_map: dict[Var, Buffer] = {}
        self.handles: dict[str, Var] = {}  # T.handle parameters by name
        self.attrs: dict[str, Any] = {}
        self.root_allocs: list[Buffer] = []
        self.saw_func_attr = False

    def build(self) -> PrimFunc:
        fn = self.fn
        self.declare_scalars()
        before = dict(self.scope.frames[-1])
        for p in fn.params:
            try:
                self.param(p)
            except BuildError:
                self.scope.poison(p.name)
        self.lb.signature_sizes = {
            k: v for k, v in self.scope.frames[-1].items()
            if k not in before and isinstance(v, Var) and v.dtype.is_int
            and all(v is not q for q in self.params)}
        ret = return_dtype(fn.returns)
        if fn.returns is not None and ret is None and not (
                isinstance(fn.returns, S.Constant) and fn.returns.kind == "none"):
            self.ctx.report("the result type of a loop function is a dtype such as T.int32",
                            fn.returns.span)
        elif ret is not None and (ret.lanes != 1 or ret.is_handle or ret.kind == "void"):
            self.ctx.report(f"unsupported: a loop function returning {ret} (a scalar number "
                            "or bool)", fn.returns.span)
        self.lb.ret_dtype = ret
        body = self.lb.body(fn.body, hook=self.hook, frame=False)
        ret = self.lb.ret_dtype  # declared, or set by the first `return` of an unannotated one
        if ret is not None:
            self.check_returns(body)
        for message, span in loop_jump_errors(body):
            self.ctx.report(message, span)
        body = self.with_root(body)
        # The buffer map follows parameter order, however the buffers were declared.
        bmap = {p: self.buffer_map[p] for p in self.params if p in self.buffer_map}
        return PrimFunc(fn.name, tuple(self.params), bmap, body, self.attrs,
                        span=fn.span, ret_dtype=ret)

    def check_returns(self, body: Stmt) -> None:
        """`return` leaves the function from serial code only: not from a loop whose
        iterations run at once (parallel, vectorized, thread-bound) nor from a block."""

        def visit(node: Any) -> None:
            if isinstance(node, (For, Block)) and (
                    isinstance(node, Block) or node.kind not in (ForKind.SERIAL,
                                                                 ForKind.UNROLLED)):
                where = "a block" if isinstance(node, Block) else f"a {node.kind.value} loop"
                for r in _returns(node.body):
                    self.ctx.report(f"unsupported: 'return' inside {where} (its iterations "
                                    "do not run one after another)", r.span)

        post_order_visit(body, visit)

    # ---- parameters -----------------------------------------------------------------------

    def declare_scalars(self) -> None:
        """Scalar parameters are in scope from the start: TVM prints a buffer parameter
        whose shape names one (`A: T.Buffer(("m",), ...)`) before it (`m: T.int32`)."""
        self.scalars: dict[str, Var] = {}
        for p in self.fn.params:
            name = S.dotted(p.annotation) if p.annotation is not None else None
            if p.star or name is None or not name.startswith("T.") or name == "T.handle":
                continue
            try:
                dt = DType.parse(name[2:])
            except DTypeError:
                continue
            var = Var(p.name, dt, span=p.span)
            self.scalars[p.name] = var
            self.scope.define(p.name, var, p.span)

    def param(self, p: S.Param) -> None:
        ctx = self.ctx
        if p.star:
            ctx.unsupported("'*' parameters", p.span)
        if p.default is not None:
            ctx.unsupported("default parameter values", p.default.span)
        ann = p.annotation
        if ann is None:
            ctx.error(f"parameter '{p.name}' needs a type: T.Buffer(...), T.handle or a dtype "
                      "such as T.int32", p.span)
        name = S.dotted(ann.func) if isinstance(ann, S.Call) else \
            S.dotted(ann.value) if isinstance(ann, S.Subscript) else S.dotted(ann)
        if name == "T.Buffer":
            if isinstance(ann, S.Call):
                buf = declare_buffer(self.lb.eb, p.name, ann, "T.Buffer")
            elif isinstance(ann, S.Subscript):
                buf = buffer_from_args(self.lb.eb, p.name, ann, "T.Buffer",
                                       Args(list(ann.items), {}))
            else:
                ctx.error("T.Buffer needs a shape and a dtype: T.Buffer((n,), \"float32\")",
                          ann.span)
            handle = Var(p.name, HANDLE, span=p.span)
            self.params.append(handle)
            self.buffer_map[handle] = buf
            self.scope.define(p.name, buf, p.span)
            return
        if name == "T.handle":
            if isinstance(ann, S.Call):  # `T.handle("float32", "global")`: a typed pointer
                a = check_call(ctx, ann, "T.handle", Sig(0, 0, ("dtype", "storage_scope"),
                                                         positional_kw=True))
                if "dtype" in a.kw:
                    self.lb.eb.dtype_arg(a.kw["dtype"])
            var = Var(p.name, HANDLE, span=p.span)
            self.handles[p.name] = var
        else:
            if name is None or not name.startswith("T.") or isinstance(ann, S.Subscript):
                ctx.error("a parameter type is T.Buffer(...), T.handle or a dtype such as "
                          "T.int32", ann.span)
            if p.name in self.scalars:
                self.params.append(self.scalars[p.name])
                return
            try:
                dt = DType.parse(name[2:])
            except DTypeError:
                ctx.error(f"unknown dtype '{name[2:]}'", ann.span)
            var = Var(p.name, dt, span=p.span)
        self.params.append(var)
        self.scope.define(p.name, var, p.span)

    # ---- top-level declarations -----------------------------------------------------------

    def hook(self, s: S.Stmt) -> bool:
        if isinstance(s, S.ExprStmt) and S.call_name(s.value) == "T.func_attr":
            call = s.value
            assert isinstance(call, S.Call)
            a = check_call(self.ctx, call, "T.func_attr", Sig(1, 1))
            if self.saw_func_attr:
                self.ctx.error("T.func_attr appears twice in this function", call.span)
            self.saw_func_attr = True
            self.attrs.update(self.lb.eb.attr_dict(a.pos[0]))
            return True
        if not (isinstance(s, S.Assign) and isinstance(s.target, S.Name)
                and isinstance(s.value, S.Call) and not s.more_targets):
            return False
        name = S.dotted(s.value.func)
        if name == "T.match_buffer":
            self.match_buffer(s.target, s.value)
            return True
        if name in SPARSE_DECLARATIONS:
            declare_sparse(self, s.target, s.value, name)
            return True
        if name in ALLOC_SCOPES and name != "T.decl_buffer":
            buf = declare_buffer(self.lb.eb, s.target.id, s.value, name,
                                 scope=ALLOC_SCOPES[name])
            self.scope.define(s.target.id, buf, s.target.span)
            self.root_allocs.append(buf)
            return True
        return False

    def match_buffer(self, target: S.Name, call: S.Call) -> None:
        ctx = self.ctx
        if not call.args:
            ctx.error("T.match_buffer needs a T.handle parameter and a shape", call.span)
        first = call.args[0]
        if isinstance(first, S.Subscript):
            ctx.error("T.match_buffer of a region is only allowed inside a block", first.span)
        handle = self.handles.get(first.id) if isinstance(first, S.Name) else None
        if handle is None:
            if isinstance(first, S.Name):
                self.scope.require(first.id, first.span)
            ctx.error("T.match_buffer needs a T.handle parameter", first.span)
        if handle in self.buffer_map:
            ctx.error(f"parameter '{first.id}' is already matched to a buffer",  # type: ignore
                      first.span)
        buf = declare_buffer(self.lb.eb, target.id, call, "T.match_buffer", skip=1)
        self.buffer_map[handle] = buf
        self.scope.define(target.id, buf, target.span)

    def with_root(self, body: Stmt) -> Stmt:
        """Top-level T.alloc_buffer's go to the root block (implicit unless written)."""
        if not self.root_allocs:
            return body
        allocs = tuple(self.root_allocs)
        if isinstance(body, BlockRealize) and body.block.name == "root" \
                and not body.block.iter_vars:
            blk = body.block
            return body.replace(block=blk.replace(alloc_buffers=allocs + blk.alloc_buffers))
        root = Block("root", (), (), (), body, None, allocs, span=self.fn.span)
        return BlockRealize((), const(True).with_span(self.fn.span), root,  # type: ignore
                            span=self.fn.span)


def _returns(node: Stmt) -> list[Evaluate]:
    """The `T.ret` statements under `node`."""
    found: list[Evaluate] = []

    def visit(n: Any) -> None:
        if isinstance(n, Evaluate) and isinstance(n.value, Call) and n.value.op == RET:
            found.append(n)

    post_order_visit(node, visit)
    return found


def build_prim_func(ctx: Context, fn: S.FunctionDef, module: Any = None) -> PrimFunc:
    """The PrimFunc of `@T.prim_func def ...` (errors are reported into `ctx`); `module`
    names the module's functions (for direct calls between loop functions)."""
    return PrimFuncBuilder(ctx, fn, module).build()
