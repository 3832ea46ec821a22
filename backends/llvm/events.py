"""Event-tensor synchronisation on the CPU: int32 counters updated with atomics.

`T.event_notify(E[i], count)` is an `atomicrmw sub` with release ordering (the task's writes
become visible to whoever sees the counter reach 0). `T.event_wait(E[i])` loads the counter
with acquire ordering until it is <= 0; while it is not, it spins with the x86 `pause`
instruction (`llvm.x86.sse2.pause`, elsewhere nothing), doubling the pauses between loads up to
MAX_BACKOFF (back-off, so waiting workers leave the memory bus and a sibling hyperthread alone;
a small cap, since a pause takes about 27 ns on Zen 4 and every pause past the moment the
counter reaches 0 is latency on the megakernel's critical path), and after YIELD_AFTER loads
also calling `sched_yield` before each load (with more threads than cores, the awaited worker
may be waiting for a core).
`tirc.event_wait_watchdog(E[i], seconds, "task"[, "E", i])` waits the same way, but after
`seconds` of wall-clock time fails the call with "megakernel watchdog: task T waited more than
S s on E[i] (counter C)" instead of hanging. `tirc.atomic_add(E[i], v)` returns the old value
(the dynamic scheduler's queue), `tirc.omp_max_threads()` the OpenMP default team size, and
`tirc.omp_barrier()` waits for the other threads of the team (`GOMP_barrier`: the megakernel
runtime fills its counters inside the region and meets there before any task runs).
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from llvmlite.ir import instructions
from tirc.backends.llvm.types import I32, I64, PTR, mem_type
from tirc.ir import intrinsics as intrin
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import BufferLoad, Call, StringImm

OPS = (intrin.EVENT_WAIT, intrin.EVENT_NOTIFY, intrin.EVENT_WAIT_WATCHDOG, intrin.ATOMIC_ADD,
       intrin.OMP_MAX_THREADS, intrin.OMP_BARRIER)
MAX_BACKOFF = 8
YIELD_AFTER = 512
# Error code of a watchdog timeout (the entry point returns it).
ERR_WATCHDOG = -4


def _address(cg: Any, e: Call) -> ir.Value:
    elem = e.args[0] if e.args else None
    if not isinstance(elem, BufferLoad) or not elem.buffer.dtype.is_int:
        raise CompileError(f"codegen: {e.op} expects an element of an event tensor", e.span)
    index = cg.flat_index(elem.buffer, elem.indices)
    return cg.element_address(elem.buffer, cg.expr(index), index.dtype)


def _pause(cg: Any) -> None:
    triple = str(cg.ctx.module.triple or "")
    if triple and not triple.startswith(("x86_64", "i686", "i386")):
        return
    fn = cg.ctx.declare("llvm.x86.sse2.pause", ir.FunctionType(ir.VoidType(), []))
    cg.b.call(fn, [])


def _load_acquire(b: ir.IRBuilder, addr: ir.Value, ty: ir.IntType) -> ir.Value:
    load = instructions.LoadAtomicInstr(b.block, addr, "acquire", ty.width // 8, "", typ=ty)
    b._insert(load)
    return load


def emit_event(cg: Any, e: Call) -> ir.Value:
    """Code for one of OPS; `cg` is the function code generator."""
    if e.op == intrin.OMP_BARRIER:
        cg.ctx.uses_openmp = True
        cg.b.call(cg.ctx.declare("GOMP_barrier", ir.FunctionType(ir.VoidType(), [])), [])
        return ir.Constant(I32, 0)
    if e.op == intrin.OMP_MAX_THREADS:
        cg.ctx.uses_openmp = True
        return cg.b.call(cg.ctx.declare("omp_get_max_threads", ir.FunctionType(I32, [])), [])
    addr = _address(cg, e)
    ty = mem_type(e.args[0].dtype)
    b = cg.b
    if e.op in (intrin.EVENT_NOTIFY, intrin.ATOMIC_ADD):
        count = cg.expr_as(e.args[1], e.args[0].dtype) if len(e.args) > 1 else \
            ir.Constant(ty, 1)
        if e.op == intrin.ATOMIC_ADD:
            return b.atomic_rmw("add", addr, count, "acq_rel")
        b.atomic_rmw("sub", addr, count, "release")
        return ir.Constant(I32, 0)
    _wait(cg, e, addr, ty)
    return ir.Constant(I32, 0)


def _wait(cg: Any, e: Call, addr: ir.Value, ty: ir.IntType) -> None:
    b = cg.b
    zero = ir.Constant(ty, 0)
    ready = b.append_basic_block("event.ready")
    slow = b.append_basic_block("event.slow")
    first = _load_acquire(b, addr, ty)
    b.cbranch(b.icmp_signed("<=", first, zero), ready, slow)
    # Slow path: back-off loop. `delay` pauses, then reload; double delay up to MAX_BACKOFF.
    b.position_at_end(slow)
    watchdog = e.op == intrin.EVENT_WAIT_WATCHDOG
    time_fn = cg.ctx.declare("time", ir.FunctionType(I64, [PTR])) if watchdog else None
    start = b.call(time_fn, [ir.Constant(PTR, None)]) if time_fn is not None else None
    head = b.append_basic_block("event.wait")
    spin = b.append_basic_block("event.pause")
    check = b.append_basic_block("event.check")
    before = b.block
    b.branch(head)
    b.position_at_end(head)
    delay = b.phi(I32)
    delay.add_incoming(ir.Constant(I32, 1), before)
    loads = b.phi(I32)
    loads.add_incoming(ir.Constant(I32, 0), before)
    b.branch(spin)
    b.position_at_end(spin)
    k = b.phi(I32)
    k.add_incoming(ir.Constant(I32, 0), head)
    _pause(cg)
    k1 = b.add(k, ir.Constant(I32, 1))
    k.add_incoming(k1, spin)
    b.cbranch(b.icmp_signed("<", k1, delay), spin, check)
    b.position_at_end(check)
    value = _load_acquire(b, addr, ty)
    more = b.append_basic_block("event.more")
    b.cbranch(b.icmp_signed("<=", value, zero), ready, more)
    b.position_at_end(more)
    # After a long wait, give the core away: with more threads than cores the worker we wait
    # for may be descheduled.
    long_wait = b.icmp_signed(">=", loads, ir.Constant(I32, YIELD_AFTER))
    with b.if_then(long_wait, likely=False):
        b.call(cg.ctx.declare("sched_yield", ir.FunctionType(I32, [])), [])
    counted = b.select(long_wait, loads, b.add(loads, ir.Constant(I32, 1)))
    doubled = b.shl(delay, ir.Constant(I32, 1))
    capped = b.select(b.icmp_signed(">", doubled, ir.Constant(I32, MAX_BACKOFF)),
                      ir.Constant(I32, MAX_BACKOFF), doubled)
    if time_fn is not None and start is not None:
        seconds = cg.expr_as(e.args[1], e.args[1].dtype)
        seconds = b.sext(seconds, I64) if seconds.type != I64 else seconds
        elapsed = b.sub(b.call(time_fn, [ir.Constant(PTR, None)]), start)
        ok = b.icmp_signed("<=", elapsed, seconds)
        task = e.args[2].value if len(e.args) > 2 and isinstance(e.args[2], StringImm) else "?"
        elem = e.args[0]
        if len(e.args) > 4 and isinstance(e.args[3], StringImm):
            # The event tensor's own name and index (its counters may live in a workspace).
            name, idx = e.args[3].value, cg.expr(e.args[4])
        else:
            name = getattr(elem.buffer, "name", "?") if isinstance(elem, BufferLoad) else "?"
            index = cg.flat_index(elem.buffer, elem.indices) \
                if isinstance(elem, BufferLoad) else None
            idx = cg.expr(index) if index is not None else ir.Constant(I64, 0)
        idx = b.sext(idx, I64) if idx.type != I64 else idx
        fmt = (f"megakernel watchdog: task {task} waited more than %lld s on {name}[%lld] "
               "(counter %d)")
        cg.guard(ok, fmt, [seconds, idx, value], ERR_WATCHDOG)
    delay.add_incoming(capped, b.block)
    loads.add_incoming(counted, b.block)
    b.branch(head)
    b.position_at_end(ready)
