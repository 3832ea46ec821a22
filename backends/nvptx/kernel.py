"""One device kernel to NVPTX LLVM IR, reusing the CPU backend's expression and statement code.

`KernelCodegen` mixes the CPU backend's StmtCodegen (loops, stores, control flow, expressions,
casts, vectors) and BuiltinCalls (bit operations, event atomics) and changes what differs on
the GPU:
- a thread-bound loop reads its index from a special register (`%tid.x`, `%ctaid.x`) instead
  of looping; a loop shorter than the launch extent is guarded;
- `shared` buffers are `addrspace(3)` globals (one dynamic shared array with offsets when a
  kernel needs more than 48 KiB), `local` buffers allocas;
- `T.tvm_storage_sync("shared")` is `barrier.cta.sync.aligned.all 0` (bar.sync 0);
- float math goes through tirc.backends.nvptx.math (no libm on the device);
- a failed assertion traps (a kernel has no error code to return); a failed bounds check
  never reaches the backend as one: gpu-bounds-record made it a store into the call's error
  record and a `return`, which exits the thread;
- event waits, notifications and atomic adds (a megakernel's counters) are GPU-scope PTX
  atomics (tirc.backends.nvptx.events), not the CPU's.
The kernel is a `ptx_kernel` function taking generic pointers and scalars in parameter order.
"""

from __future__ import annotations

from llvmlite import ir
from tirc.backends.llvm.builtins import BuiltinCalls
from tirc.backends.llvm.context import ModuleContext
from tirc.backends.llvm.memory import const_int
from tirc.backends.llvm.numbering import NumberingBuilder
from tirc.backends.llvm.search import SearchCalls
from tirc.backends.llvm.stmt import StmtCodegen
from tirc.backends.llvm.types import (
    I8,
    I32,
    PTR,
    VOID,
    bf16_round,
    elem_align,
    from_memory,
    mem_type,
)
from tirc.backends.nvptx.address_space import SHARED, sreg_intrinsic
from tirc.backends.nvptx.events import OPS as EVENT_OPS
from tirc.backends.nvptx.events import emit_gpu_event
from tirc.backends.nvptx.math import FLOAT_MATH, emit_float_math
from tirc.backends.nvptx.warp import OPS as WARP_OPS
from tirc.backends.nvptx.warp import emit_warp
from tirc.ir import intrinsics as intrin
from tirc.ir.analysis.storage import storage_size
from tirc.ir.arith import construct
from tirc.ir.attrs import GLOBAL_SYMBOL, NOALIAS
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import Call, IntImm, StringImm, Var
from tirc.ir.function import PrimFunc
from tirc.ir.gpu.arch import STATIC_SHARED_LIMIT
from tirc.ir.gpu.launch import SHARED_ALIGN, launch_extents, shared_bytes
from tirc.ir.intrinsics import MATH_INTRINSICS
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.stmt import Allocate, AttrStmt, For, ForKind

DYNAMIC_SHARED = "tirc_dynamic_shared"
KERNEL_CC = "ptx_kernel"


@dataclass(frozen=True)
class KernelInfo:
    """What the launch of a generated kernel needs to know."""

    name: str
    dynamic_shared: int  # bytes of dynamic shared memory to launch with (0: static only)
    static_shared: int


def _const_bytes(buf: Buffer) -> int:
    size = construct.fold(storage_size(buf))
    if not isinstance(size, IntImm):
        raise CompileError(f"codegen: device buffer '{buf.name}' needs a constant size",
                           buf.span)
    return max(1, size.value) * buf.dtype.bytes


class KernelCodegen(BuiltinCalls, SearchCalls, StmtCodegen):
    """Emits the body of one kernel (see the module docstring)."""

    def __init__(self, ctx: ModuleContext, fn: ir.Function, env: dict[Var, ir.Value],
                 func: PrimFunc, dynamic: bool) -> None:
        self.ctx = ctx
        self.fn = fn
        self.env = dict(env)
        self.func = func
        self.parallel_depth = 0
        self.launch = launch_extents(func.body)
        self.dynamic = dynamic
        self.dynamic_offset = 0
        self.entry_block = fn.append_basic_block("entry")
        self.b = NumberingBuilder(fn.append_basic_block("body"))

    # ---- hooks of StmtCodegen ----------------------------------------------------------

    def fail(self, code: int | ir.Value) -> None:
        trap = self.ctx.declare("llvm.trap", ir.FunctionType(VOID, []))
        self.b.call(trap, [])
        self.b.unreachable()

    def guard(self, ok: ir.Value, fmt: str, values: object, code: int) -> None:
        """Continue when `ok` holds, else trap (no message buffer on the device)."""
        ok_bb = self.b.append_basic_block("check.ok")
        fail_bb = self.b.append_basic_block("check.fail")
        self.b.cbranch(ok, ok_bb, fail_bb)
        self.b.position_at_end(fail_bb)
        self.fail(code)
        self.b.position_at_end(ok_bb)

    def alloca(self, ty: ir.Type, align: int) -> ir.Value:
        with self.b.goto_block(self.entry_block):
            slot = self.b.alloca(ty)
        slot.align = align
        slot.type = PTR
        return slot

    def emit_parallel_for(self, s: For) -> None:
        raise CompileError(f"codegen: loop '{s.loop_var.name}' is parallel inside GPU kernel "
                           f"'{self.func.name}'; bind it to a thread axis instead", s.span)

    def emit_compute_scope(self, s: AttrStmt) -> None:
        self.stmt(s.body)

    def finish(self) -> None:
        self.b.ret_void()
        with self.b.goto_block(self.entry_block):
            self.b.branch(self.fn.blocks[1])

    # ---- thread indices --------------------------------------------------------------

    def thread_index(self, tag: str) -> ir.Value:
        fn = self.ctx.declare(sreg_intrinsic(tag), ir.FunctionType(I32, []))
        return self.b.call(fn, [])

    def stmt_For(self, s: For) -> None:
        if s.kind != ForKind.THREAD_BINDING:
            super().stmt_For(s)
            return
        tag = s.thread_tag or ""
        dt = s.loop_var.dtype
        index = self.thread_index(tag)
        value = index if dt.bits == 32 else self.b.zext(index, ir.IntType(dt.bits)) \
            if dt.bits > 32 else self.b.trunc(index, ir.IntType(dt.bits))
        old = self.env.get(s.loop_var)
        self.env[s.loop_var] = value
        launch = self.launch.get(tag)
        with self.jump_barrier(f"a loop bound to {tag}"):
            if launch is not None and const_int(s.extent) != const_int(launch):
                ok = self.b.icmp_unsigned("<", value, self.expr_as(s.extent, dt))
                with self.b.if_then(ok):
                    self.stmt(s.body)
            else:
                self.stmt(s.body)
        if old is None:
            del self.env[s.loop_var]
        else:
            self.env[s.loop_var] = old

    # ---- device storage --------------------------------------------------------------

    def stmt_Allocate(self, s: Allocate) -> None:
        buf = s.buffer
        if s.init is not None:
            raise CompileError(f"codegen: event tensor '{buf.name}' inside a GPU kernel is not "
                               "supported", s.span)
        nbytes = _const_bytes(buf)
        ety = mem_type(buf.dtype)
        count = max(1, nbytes // max(1, buf.dtype.bytes))
        if buf.scope in ("shared", "shared.dyn"):
            ptr = self._shared(buf, ety, count, nbytes)
        elif buf.scope in ("local", "warp"):
            ptr = self.alloca(ir.ArrayType(ety, count), max(16, elem_align(buf.dtype)))
        else:
            raise CompileError(f"codegen: buffer '{buf.name}' of scope '{buf.scope}' cannot be "
                               f"allocated inside GPU kernel '{self.func.name}'", s.span)
        self.env[buf.data] = ptr
        self.stmt(s.body)
        del self.env[buf.data]

    def _shared(self, buf: Buffer, ety: ir.Type, count: int, nbytes: int) -> ir.Value:
        if self.dynamic:
            arr = self.ctx.module.globals.get(DYNAMIC_SHARED)
            if arr is None:
                arr = ir.GlobalVariable(self.ctx.module, ir.ArrayType(I8, 0), DYNAMIC_SHARED,
                                        addrspace=SHARED)
                arr.linkage = "external"
                arr.align = SHARED_ALIGN
            offset = self.dynamic_offset
            self.dynamic_offset += -(-nbytes // SHARED_ALIGN) * SHARED_ALIGN
            base = ir.FormattedConstant(
                PTR, f"addrspacecast (ptr addrspace({SHARED}) @{DYNAMIC_SHARED} to ptr)")
            return self.b.gep(base, [ir.Constant(ir.IntType(64), offset)], source_etype=I8)
        name = self.ctx.unique_name(f"{self.func.name}.{buf.name}")
        g = ir.GlobalVariable(self.ctx.module, ir.ArrayType(ety, count), name, addrspace=SHARED)
        g.linkage = "internal"
        g.initializer = ir.Constant(ir.ArrayType(ety, count), ir.Undefined)
        g.align = SHARED_ALIGN
        return ir.FormattedConstant(PTR, f'addrspacecast (ptr addrspace({SHARED}) '
                                         f'{g.get_reference()} to ptr)')

    # ---- calls -----------------------------------------------------------------------

    def builtin_tvm_storage_sync(self, e: Call) -> ir.Value:
        scope = e.args[0].value if e.args and isinstance(e.args[0], StringImm) else "shared"
        if scope in ("shared", "shared.dyn"):
            fn = self.ctx.declare("llvm.nvvm.barrier.cta.sync.aligned.all",
                                  ir.FunctionType(VOID, [I32]))
            self.b.call(fn, [ir.Constant(I32, 0)])
        elif scope == "warp":
            fn = self.ctx.declare("llvm.nvvm.bar.warp.sync", ir.FunctionType(VOID, [I32]))
            self.b.call(fn, [ir.Constant(I32, -1)])
        else:
            raise CompileError(f"codegen: T.tvm_storage_sync(\"{scope}\") is not supported on "
                               "the GPU (only \"shared\" and \"warp\")", e.span)
        return ir.Constant(I32, 0)

    def builtin_ret(self, e: Call) -> ir.Value:
        """`return` in a kernel (gpu-bounds-record's, after a failed check): the thread exits,
        which releases any barrier the other threads of its block wait at."""
        self.b.ret_void()
        self.b.position_at_end(self.fn.append_basic_block("after_return"))
        return ir.Constant(I32, 0)

    def expr_Call(self, e: Call) -> ir.Value:
        if e.op in EVENT_OPS:
            return emit_gpu_event(self, e)
        if e.op in WARP_OPS:
            return emit_warp(self, e)
        if e.op in FLOAT_MATH and e.dtype.is_float:
            args = [self.expr_as(a, e.dtype) for a in e.args]
            out = emit_float_math(self.ctx, self.b, e.op, args)
            if out is not None:
                return bf16_round(self.b, out) if e.dtype.kind == "bfloat" else out
        if e.op in MATH_INTRINSICS and e.dtype.is_float:
            # the CPU's math table would call libm, which a kernel cannot
            raise CompileError(f"codegen: unsupported intrinsic T.{e.op}", e.span)
        if e.op in (intrin.CALL_EXTERN, intrin.CALL_PURE_EXTERN):
            callee = e.args[0].value if e.args and isinstance(e.args[0], StringImm) else "?"
            raise CompileError(f"codegen: T.{e.op} of '{callee}' inside a GPU kernel: tirc links "
                               "no device code of other libraries, so a kernel can only call "
                               "what tirc compiles (call it from the host part instead)", e.span)
        return super().expr_Call(e)


def _param_type(v: Var) -> ir.Type:
    return PTR if v.dtype.is_handle else mem_type(v.dtype)


def emit_kernel(ctx: ModuleContext, func: PrimFunc) -> KernelInfo:
    """Add `func` (a kernel made by gpu-split-host-device) to the module as a PTX entry."""
    name = str(func.attrs.get(GLOBAL_SYMBOL, func.name))
    if name in ctx.module.globals:
        raise CompileError(f"codegen: two kernels are named '{name}'", func.span)
    fn = ir.Function(ctx.module, ir.FunctionType(VOID, [_param_type(p) for p in func.params]),
                     name=name)
    fn.calling_convention = KERNEL_CC
    env: dict[Var, ir.Value] = {}
    noalias = bool(func.attrs.get(NOALIAS, False))
    converts: list[tuple[Var, ir.Argument]] = []
    for p, arg in zip(func.params, fn.args):
        arg.name = p.name
        buf = func.buffer_map.get(p)
        if buf is not None:
            env[buf.data] = arg
            env[p] = arg
            if noalias:
                arg.add_attribute("noalias")
            align = elem_align(buf.dtype)
            if align > 1:
                arg.attributes.align = align
        elif p.dtype.is_handle:
            env[p] = arg
        else:
            converts.append((p, arg))
    smem = shared_bytes(func.body)
    dynamic = smem > STATIC_SHARED_LIMIT
    cg = KernelCodegen(ctx, fn, env, func, dynamic)
    for p, arg in converts:
        cg.env[p] = from_memory(cg.b, arg, p.dtype)
    cg.stmt(func.body)
    cg.finish()
    return KernelInfo(name, cg.dynamic_offset if dynamic else 0, 0 if dynamic else smem)

