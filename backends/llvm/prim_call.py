"""Direct calls between loop functions in LLVM: each called function (`tirc.internal`, see
tirc.ir.prim_call) is an internal C function `<ret> name(ptr..., scalars...)` returning its
value (void when it has none), called directly (`tirc.call_prim`).

Failures inside one (a failed assert, an allocation, a bounds check) set the message as
everywhere, store the code in a thread-local word `tirc.call_error` and return; the caller
checks that word after each call and fails with the code (clearing it). `T.ret(v)` returns `v`
from the function it is in: from an internal function its value, from an entry point's
compute part the code 0 (make-entry has stored the value in the result tensor first).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir
from tirc.backends.llvm.context import ModuleContext
from tirc.backends.llvm.types import I32, PTR, VOID, reg_type
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import DType
from tirc.ir.expr import Call, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.prim_call import call_arguments, callee_of

if TYPE_CHECKING:
    from tirc.backends.llvm.function import FunctionCodegen

INT32 = DType("int", 32)


def _llvm_type(dt: DType) -> ir.Type:
    return PTR if dt.is_handle else reg_type(dt)


def call_error(ctx: ModuleContext) -> ir.GlobalVariable:
    """The thread-local failure code of the last direct call (0 when none failed)."""
    g = ctx.module.globals.get("tirc.call_error")
    if g is None:
        g = ir.GlobalVariable(ctx.module, I32, name="tirc.call_error")
        g.linkage = "internal"
        g.storage_class = "thread_local"
        g.initializer = ir.Constant(I32, 0)
    return g


def declare_internal(ctx: ModuleContext, func: PrimFunc) -> ir.Function:
    """The LLVM function of an internal loop function (declared before any body is emitted,
    so that calls, recursive ones included, find it)."""
    ret = _llvm_type(func.ret_dtype) if func.ret_dtype is not None else VOID
    fnty = ir.FunctionType(ret, [_llvm_type(p.dtype) for p in func.params])
    fn = ir.Function(ctx.module, fnty, name=ctx.unique_name(func.name))
    fn.linkage = "internal"
    for p, arg in zip(func.params, fn.args):
        arg.name = p.name
    ctx.prim_functions[func.name] = fn
    return fn


def _zero(t: ir.Type) -> ir.Constant:
    return ir.Constant(t, None)


def _internal_fail(cg: FunctionCodegen, code: ir.Value) -> None:
    """The failure handler of an internal function: record the code, return."""
    cg.b.store(code, call_error(cg.ctx))
    ret = cg.fn.function_type.return_type
    if isinstance(ret, ir.VoidType):
        cg.b.ret_void()
    else:
        cg.b.ret(_zero(ret))


def emit_internal(ctx: ModuleContext, func: PrimFunc, codegen: type[FunctionCodegen],
                  buffers: dict[Var, Buffer]) -> None:
    """The body of an internal loop function declared by `declare_internal`, emitted by
    `codegen` (the function code generator class; `buffers` by their data variables)."""
    fn = ctx.prim_functions[func.name]
    cg = codegen(ctx, fn, dict(zip(func.params, fn.args)), _internal_fail, buffers=buffers)
    cg.ret_dtype = func.ret_dtype
    cg.stmt(func.body)
    ret = fn.function_type.return_type
    cg.finish(None if isinstance(ret, ir.VoidType) else _zero(ret))


class PrimCalls:
    """Mixed into the function code generator: `tirc.call_prim` and `ret`."""

    ctx: ModuleContext
    b: ir.IRBuilder
    fn: ir.Function
    env: dict[Var, ir.Value]
    parallel_depth: int
    ret_dtype: DType | None = None  # the value an internal function returns
    expr: Callable[[PrimExpr], ir.Value]
    expr_as: Callable[[PrimExpr, DType], ir.Value]
    fail: Callable[[int | ir.Value], None]

    def call_call_prim(self, e: Call) -> ir.Value:
        """`Module.f(args)`: call f's internal function; fail if it failed."""
        name = callee_of(e)
        fn = self.ctx.prim_functions.get(name or "")
        if fn is None:
            raise CompileError(f"codegen: call of '{name}', which is not a loop function of "
                               "this module in its direct-call form (run make-entry)", e.span)
        args = []
        for a, t in zip(call_arguments(e), fn.function_type.args):
            args.append(self.expr(a) if t == PTR else self.expr_as(a, a.dtype))
        value = self.b.call(fn, args)
        slot = call_error(self.ctx)
        code = self.b.load(slot)
        with self.b.if_then(self.b.icmp_signed("!=", code, ir.Constant(I32, 0)),
                            likely=False):
            self.b.store(ir.Constant(I32, 0), slot)
            self.fail(code)
        return ir.Constant(I32, 0) if isinstance(fn.function_type.return_type, ir.VoidType) \
            else value

    def builtin_ret(self, e: Call) -> ir.Value:
        """`T.ret(v)`: return from the function being emitted; code after it is unreachable."""
        if self.parallel_depth:
            raise CompileError("'return' inside a parallel loop is not supported (the loop's "
                               "iterations run on several threads)", e.span)
        dt = self.ret_dtype or INT32
        self.b.ret(self.expr_as(e.args[0], dt))
        self.b.position_at_end(self.fn.append_basic_block("after_return"))
        return ir.Constant(I32, 0)
