"""Code generation for one LLVM function: allocas, failure returns, and outlined regions.

Every generated function keeps an `entry` block for allocas and branches from it to the body
when finished. Failures (`fail(code)`) return the code from an `i32` function; a parallel
worker instead records the code (and its thread's message) for the caller to report.
The compute part of an entry point (`tirc.compute_scope`) is outlined into an internal
function whose buffer pointers are `noalias` and aligned, so LLVM may vectorize freely. So is
each megakernel task kind (`tirc.task_function`, pointers without `noalias`: other threads
write its data across its waits) and the compute inside it (`tirc.task_compute`), into
functions LLVM may not inline: the worker stays small, and LLVM optimises one kernel at a time
instead of one function holding every kernel of the graph (whose optimisation time grows
faster than its size: 54 s instead of 9 s for the 8-layer chain of benchmarks/megakernel.py).
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir
from tirc.backends.llvm import parallel
from tirc.backends.llvm.builtins import BuiltinCalls
from tirc.backends.llvm.context import ModuleContext
from tirc.backends.llvm.dltensor import DLTensorIntrinsics
from tirc.backends.llvm.extern_call import ExternCalls
from tirc.backends.llvm.numbering import NumberingBuilder
from tirc.backends.llvm.outline import captured_vars
from tirc.backends.llvm.prim_call import PrimCalls
from tirc.backends.llvm.search import SearchCalls
from tirc.backends.llvm.stmt import StmtCodegen
from tirc.backends.llvm.types import I32, PTR, elem_align
from tirc.ir.attrs import TASK_COMPUTE
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import Call, StringImm, Var
from tirc.ir.intrinsics import GPU, SCALABLE, intrinsic
from tirc.ir.stmt import AttrStmt, For

FailHandler = Callable[["FunctionCodegen", ir.Value], None]


def return_code(cg: FunctionCodegen, code: ir.Value) -> None:
    """The failure handler of an `i32` function: return the error code."""
    cg.b.ret(code)


class FunctionCodegen(DLTensorIntrinsics, ExternCalls, BuiltinCalls, SearchCalls, PrimCalls,
                      StmtCodegen):
    """Emits statements into one LLVM function."""

    def __init__(self, ctx: ModuleContext, fn: ir.Function, env: dict[Var, ir.Value],
                 on_fail: FailHandler = return_code, parallel_depth: int = 0,
                 buffers: dict[Var, Buffer] | None = None) -> None:
        self.ctx = ctx
        self.fn = fn
        self.env = dict(env)
        self.on_fail = on_fail
        self.parallel_depth = parallel_depth
        # Buffers by their data variable, for pointer attributes of outlined functions.
        self.buffers: dict[Var, Buffer] = dict(buffers or {})
        self.entry_block = fn.append_basic_block("entry")
        self.b = NumberingBuilder(fn.append_basic_block("body"))

    def fail(self, code: int | ir.Value) -> None:
        value = ir.Constant(I32, code) if isinstance(code, int) else code
        self.on_fail(self, value)

    def expr_Call(self, e: Call) -> ir.Value:
        """A call; one of a GPU-only or scalable-vector intrinsic is an error at its place."""
        info = intrinsic(e.op)
        if info is not None and info.device == GPU:
            raise CompileError(f"T.{e.op} is a GPU intrinsic: it has no meaning in a CPU build "
                               "(compile for a CUDA target)", e.span)
        if info is not None and info.device == SCALABLE:
            raise CompileError(f"T.{e.op} needs a scalable-vector (SVE) target; "
                               "this CPU target has fixed-width vectors", e.span)
        return super().expr_Call(e)

    def alloca(self, ty: ir.Type, align: int) -> ir.Value:
        with self.b.goto_block(self.entry_block):
            slot = self.b.alloca(ty)
        slot.align = align
        slot.type = PTR  # an opaque pointer, like every other pointer this backend makes
        return slot

    def finish(self, ret: ir.Value | None) -> None:
        """Return `ret` (or nothing) from the end of the body and close the entry block."""
        if ret is None:
            self.b.ret_void()
        else:
            self.b.ret(ret)
        body = self.fn.blocks[1]
        with self.b.goto_block(self.entry_block):
            self.b.branch(body)

    def child(self, fn: ir.Function, env: dict[Var, ir.Value], on_fail: FailHandler,
              parallel_depth: int) -> FunctionCodegen:
        return FunctionCodegen(self.ctx, fn, env, on_fail, parallel_depth, self.buffers)

    def call_omp_thread_num(self, e: Call) -> ir.Value:
        """`tirc.omp_thread_num()`: the OpenMP thread number of the running worker."""
        return parallel.omp_thread_num(self.ctx, self.b)

    def call_omp_num_threads(self, e: Call) -> ir.Value:
        """`tirc.omp_num_threads()`: how many workers run the current parallel loop."""
        return parallel.omp_num_threads(self.ctx, self.b)

    def emit_parallel_for(self, s: For) -> None:
        parallel.emit_parallel_for(self, s)

    def emit_compute_scope(self, s: AttrStmt) -> None:
        """Outline the body into `<fn>.compute(ptr noalias ..., scalars...)` and call it."""
        self.outline(f"{self.fn.name}.compute", captured_vars(s.body, self.env), [],
                     lambda inner, extra: inner.stmt(s.body))

    def emit_task_scope(self, s: AttrStmt) -> None:
        """Outline a task into `<fn>.task.<kind>(...)`, or its compute into
        `<fn>.task.<kind>.compute(ptr noalias ...)`, never inlined."""
        kind = s.value.value if isinstance(s.value, StringImm) else "task"
        compute = s.key == TASK_COMPUTE
        self.outline(f"{self.fn.name}.compute" if compute else f"{self.fn.name}.task.{kind}",
                     captured_vars(s.body, self.env), [],
                     lambda inner, extra: inner.stmt(s.body), inline=False, noalias=compute)

    def outline(self, name: str, captured: list[Var], extra: list[tuple[str, ir.Value]],
                emit: Callable[[FunctionCodegen, list[ir.Value]], None],
                inline: bool = True, noalias: bool = True) -> None:
        """Emit `emit(inner, extra_args)` into a new internal `i32` function taking the
        `captured` variables (buffer pointers `nonnull align <elem>`, and `noalias` unless
        `noalias=False`) and the `extra` values, call it here, and fail with its code if it
        fails. `inline=False` forbids LLVM to inline it back."""
        values = [self.env[v] for v in captured] + [v for _, v in extra]
        fnty = ir.FunctionType(I32, [v.type for v in values])
        fn = ir.Function(self.ctx.module, fnty, name=self.ctx.unique_name(name))
        fn.linkage = "internal"
        if not inline:
            fn.attributes.add("noinline")
        for var, arg in zip(captured, fn.args):
            arg.name = var.name
            if var.dtype.is_handle and var in self.buffers:
                if noalias:
                    arg.add_attribute("noalias")
                arg.add_attribute("nonnull")
                align = elem_align(self.buffers[var].dtype)
                if align > 1:
                    arg.attributes.align = align
        extra_args = list(fn.args[len(captured):])
        for (arg_name, _), arg in zip(extra, extra_args):
            arg.name = arg_name
        inner = self.child(fn, dict(zip(captured, fn.args)), return_code, self.parallel_depth)
        emit(inner, extra_args)
        inner.finish(ir.Constant(I32, 0))
        code = self.b.call(fn, values)
        failed = self.b.icmp_signed("!=", code, ir.Constant(I32, 0))
        with self.b.if_then(failed, likely=False):
            self.fail(code)
