"""inject-vthread: virtual threads (`vthread`, `vthread.x/y/z`) become unrolled loops.

A loop bound to a virtual thread (`T.thread_binding(n, thread="vthread.x")`, or a schedule's
`sch.bind(l, "vthread.x")`) stands for `n` threads that run concurrently but share one hardware
thread, as in TVM. Each hardware thread runs the `n` virtual threads one after another, in an
unrolled loop (after `unroll`, each virtual thread's code is straight-line and its indices are
constants, so a local array indexed by it can live in registers):

- without a barrier inside, the loop becomes `for vt in T.unroll(n)` around its body, pushed
  inside any threadIdx/blockIdx loops directly under it, so that the launch structure stays;
- with barriers inside (`T.tvm_storage_sync`), the virtual threads must all reach a barrier
  before any passes it. The body is cut at its barriers, as TVM's InjectVirtualThread does:
  every barrier-free run of statements gets its own unrolled loop over the virtual threads,
  the barriers stay once; loops, conditions and lets around a barrier stay around it (their
  bounds and conditions must not depend on the virtual thread, or the barrier would diverge).
  An allocation inside the virtual-thread loop that spans a barrier is replicated, one copy per
  virtual thread: `r[i]` becomes `r[vt * size + i]` in a buffer `n` times larger.

The pass runs for every target, as TVM's default pipeline runs InjectVirtualThread for every
target: on the CPU a virtual-thread loop is the same unrolled loop (what the interpreter, which
runs it as a sequential loop, computes). A barrier has no meaning on the CPU (the interpreter
and the CPU backend run it as a no-op, so no cut would agree with both): on a CPU target a
barrier inside a virtual-thread loop is an error.

Nested virtual-thread loops are injected innermost first. The pass runs after flatten-buffers
(replicated buffers are 1-d) and before gpu-thread-binding, which knows only real thread axes.
Barriers between virtual threads must be written (`T.tvm_storage_sync("shared")`):
gpu-storage-sync runs afterwards, on the serialized code, so where virtual threads exchange
data through shared memory with no written barrier, the barrier it adds falls inside the
unrolled loop, where it does not separate them (as in TVM, which also injects first).
"""

from __future__ import annotations

from typing import Any, ClassVar

from tirc.ir.arith import construct
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import HANDLE
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var, binop, cast
from tirc.ir.function import PrimFunc
from tirc.ir.gpu.threads import has_barrier, is_barrier, is_thread_loop, is_vthread_loop
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.node import Node
from tirc.ir.rebind import uses_any
from tirc.ir.stmt import (
    Allocate,
    AttrStmt,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    While,
    seq,
)
from tirc.ir.visitor import Mutator, post_order_visit, substitute
from tirc.passes.pass_base import PassContext, PrimFuncPass


def _has_load(e: PrimExpr) -> bool:
    """Whether `e` reads memory (such a let cannot be substituted into its uses)."""
    found: list[Node] = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, BufferLoad) else None)
    return bool(found)


class _Replicate(Mutator):
    """Accesses to the buffers stored in `data` redirected to one virtual thread's copy."""

    def __init__(self, alloc: Buffer, new_data: Var, count: int, vt: Var) -> None:
        self.alloc = alloc
        self.data = alloc.data
        self.new_data = new_data
        self.size = alloc.shape[0]
        self.count = count
        self.vt = vt
        self.copies: dict[Buffer, Buffer] = {}

    def copy(self, buf: Buffer, span: Any) -> Buffer:
        """The replicated buffer standing for `buf` (the allocation or a view of it)."""
        if buf not in self.copies:
            if buf.ndim != 1 or buf.strides or buf.elem_offset is not None or \
                    buf.dtype != self.alloc.dtype:
                raise CompileError(f"inject-vthread: buffer '{buf.name}' is allocated per "
                                   "virtual thread and must be flat, of the allocation's dtype "
                                   "(run flatten-buffers first)", span)
            total = binop("mul", self.size, IntImm(self.count, self.size.dtype))
            shape = (construct.fold(total),)
            self.copies[buf] = buf.replace(data=self.new_data, shape=shape)
        return self.copies[buf]

    def index(self, idx: tuple[PrimExpr, ...], span: Any) -> tuple[PrimExpr, ...]:
        """The flat index `idx` in this virtual thread's copy: `vt * size + i`."""
        (i,) = idx
        base = binop("mul", cast(i.dtype, self.vt), cast(i.dtype, self.size))
        return (binop("add", base, i).with_span(span),)  # type: ignore[arg-type]

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        e = self.generic_visit(e)
        if e.buffer.data is not self.data:
            return e
        return e.replace(buffer=self.copy(e.buffer, e.span),
                         indices=self.index(e.indices, e.span))

    def visit_BufferStore(self, s: BufferStore) -> Any:
        s = self.generic_visit(s)
        if s.buffer.data is not self.data:
            return s
        return s.replace(buffer=self.copy(s.buffer, s.span),
                         indices=self.index(s.indices, s.span))


class _Injector:
    """Serializes the virtual threads of one loop (see the module docstring)."""

    def __init__(self, loop: For) -> None:
        self.loop = loop
        self.vt = loop.loop_var
        extent = construct.fold(loop.extent)
        if not isinstance(extent, IntImm) or extent.value <= 0:
            raise CompileError(f"inject-vthread: virtual-thread loop '{self.vt.name}' needs "
                               "a constant positive extent", loop.span)
        self.count = extent.value

    def error(self, s: Stmt, what: str) -> CompileError:
        """The diagnostic for a barrier under `what`, which varies with the virtual thread."""
        return CompileError(f"inject-vthread: {what} depends on virtual thread "
                            f"'{self.vt.name}' ({self.loop.thread_tag}) and encloses a barrier, "
                            "so the virtual threads would not all reach it", s.span)

    def serial(self, s: Stmt) -> Stmt:
        """Every virtual thread runs `s` in turn (pushed inside real thread loops)."""
        if is_thread_loop(s) and not is_vthread_loop(s):
            if uses_any(s.extent, {self.vt}):  # type: ignore[attr-defined]
                raise CompileError(f"inject-vthread: the extent of thread loop "
                                   f"'{s.loop_var.name}' depends on virtual thread "  # type: ignore[attr-defined]
                                   f"'{self.vt.name}'", s.span)
            return s.replace(body=self.serial(s.body))  # type: ignore[attr-defined,return-value]
        var = Var(self.vt.name, self.vt.dtype, span=self.vt.span)
        return For(var, self.loop.min, self.loop.extent, ForKind.UNROLLED,
                   substitute(s, {self.vt: var}), span=self.loop.span)

    def split(self, s: Stmt) -> Stmt:
        """`s`, which holds a barrier, with its barrier-free parts run by every virtual thread."""
        if not has_barrier(s):
            return self.serial(s)
        if is_barrier(s):
            return s
        if isinstance(s, SeqStmt):
            out: list[Stmt] = []
            run: list[Stmt] = []
            for c in s.seq:
                if has_barrier(c):
                    if run:
                        out.append(self.serial(seq(*run)))
                        run = []
                    out.append(self.split(c))
                else:
                    run.append(c)
            if run:
                out.append(self.serial(seq(*run)))
            return seq(*out)
        if isinstance(s, For):
            if uses_any((s.min, s.extent), {self.vt}):
                raise self.error(s, f"the range of loop '{s.loop_var.name}'")
            return s.replace(body=self.split(s.body))  # type: ignore[return-value]
        if isinstance(s, IfThenElse):
            if uses_any(s.condition, {self.vt}):
                raise self.error(s, "the condition of an if")
            other = self.split(s.else_case) if s.else_case is not None else None
            return s.replace(then_case=self.split(s.then_case), else_case=other)  # type: ignore[return-value]
        if isinstance(s, While):
            if uses_any(s.condition, {self.vt}):
                raise self.error(s, "the condition of a while loop")
            return s.replace(body=self.split(s.body))  # type: ignore[return-value]
        if isinstance(s, LetStmt):
            if not uses_any(s.value, {self.vt}):
                return s.replace(body=self.split(s.body))  # type: ignore[return-value]
            if _has_load(s.value):
                raise self.error(s, f"let '{s.var.name}', a memory load,")
            return self.split(substitute(s.body, {s.var: s.value}))
        if isinstance(s, AttrStmt):
            return s.replace(body=self.split(s.body))  # type: ignore[return-value]
        if isinstance(s, Allocate):
            return self.replicate(s)
        raise CompileError(f"inject-vthread: cannot cut a {type(s).__name__} at its "
                           "barriers", s.span)

    def replicate(self, s: Allocate) -> Stmt:
        """An allocation spanning a barrier: one copy per virtual thread."""
        buf = s.buffer
        if s.init is not None:
            raise CompileError(f"inject-vthread: event tensor '{buf.name}' inside "
                               f"virtual-thread loop '{self.vt.name}'", s.span)
        data = Var(buf.data.name, HANDLE, span=buf.data.span)
        rep = _Replicate(buf, data, self.count, self.vt)
        new = rep.copy(buf, s.span)
        body = rep.visit(s.body)
        return s.replace(buffer=new, body=self.split(body))  # type: ignore[return-value]


class _Inject(Mutator):
    """Serializes every virtual-thread loop; `cpu` refuses barriers inside one."""

    def __init__(self, cpu: bool) -> None:
        self.cpu = cpu

    def generic_visit(self, n: Node) -> Any:
        return super().generic_visit(n) if isinstance(n, Stmt) else n

    def visit_For(self, s: For) -> Any:
        if not is_vthread_loop(s):
            return self.generic_visit(s)
        if self.cpu and has_barrier(s.body):
            raise CompileError(f"inject-vthread: virtual-thread loop '{s.loop_var.name}' "
                               f"({s.thread_tag}) holds a barrier (T.tvm_storage_sync), which "
                               "has no meaning on the CPU target", s.span)
        body = self.visit(s.body)  # nested virtual threads first
        return _Injector(s).split(body)


def inject_virtual_threads(func: PrimFunc, cpu: bool = False) -> PrimFunc:
    """`func` with every virtual-thread loop serialized (see the module docstring); `cpu`:
    for a CPU target, where a barrier inside a virtual-thread loop is an error."""
    body = _Inject(cpu).visit(func.body)
    return func if body is func.body else func.replace(body=body)  # type: ignore[return-value]


@dataclass(frozen=True)
class InjectVirtualThread(PrimFuncPass):
    """Run virtual threads one after another in each thread (see the module docstring)."""

    name: ClassVar[str] = "inject-vthread"
    description: ClassVar[str] = ("vthread loops -> unrolled loops in each thread, cut at "
                                  "barriers, with per-virtual-thread copies of local storage")

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        cpu = ctx.target is not None and not ctx.target.is_gpu
        return inject_virtual_threads(func, cpu)
