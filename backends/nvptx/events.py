"""Event-tensor synchronisation on the GPU: int32 counters in global memory, PTX atomics.

In a GPU megakernel (tirc.passes.megakernel.gpu_runtime) one thread of a block waits and
notifies for the whole block, with a block barrier (`bar.sync`) on the other side, so these
are single-thread operations at GPU scope:
- `T.event_wait(E[i])`: `ld.acquire.gpu` of the counter until it is <= 0; while it is not,
  `nanosleep` (sm_70+) with a back-off doubling from 32 ns to 1 us, so spinning blocks leave
  the memory system to the producers. The acquire load synchronises with the producers'
  release; the barrier after it extends that order to the block's other threads (PTX memory
  model: causality order is transitive through bar.sync).
- `T.event_notify(E[i], count)`: `fence.acq_rel.gpu` then `red.release.gpu.add.s32` of
  `-count`. The barrier before it orders every thread's writes of the task before the fence,
  which makes them visible at GPU scope before the counter changes (the release reduction
  alone would order only this thread's own writes in a strict reading of the model).
- `tirc.atomic_add(E[i], v)`: `atom.relaxed.gpu.add.s32`, returning the old value (the
  dynamic schedule's queue head; the data of a task is ordered by the events, not by it).
- `tirc.event_wait_watchdog(E[i], seconds, task)` waits as `event_wait` (no clock-based
  watchdog on the device; a hang shows as a kernel that does not finish).
All of it is inline PTX with a memory clobber, so LLVM neither moves memory accesses across it
nor drops a spin load.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from tirc.backends.llvm.events import _address
from tirc.backends.llvm.types import I32, VOID
from tirc.ir import intrinsics as intrin
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import Call

OPS = (intrin.EVENT_WAIT, intrin.EVENT_NOTIFY, intrin.EVENT_WAIT_WATCHDOG, intrin.ATOMIC_ADD)
FIRST_SLEEP_NS = 32
MAX_SLEEP_NS = 1024

LOAD_ACQUIRE = "ld.acquire.gpu.b32 $0, [$1];"
NANOSLEEP = "nanosleep.u32 $0;"
NOTIFY = "fence.acq_rel.gpu;\n\tred.release.gpu.add.s32 [$0], $1;"
ATOMIC_ADD = "atom.relaxed.gpu.add.s32 $0, [$1], $2;"


def _asm(cg: Any, ret: ir.Type, text: str, constraints: str, args: list[ir.Value]) -> ir.Value:
    """Call inline PTX `text` (with side effects) on `args`."""
    fty = ir.FunctionType(ret, [a.type for a in args])
    return cg.b.call(ir.InlineAsm(fty, text, constraints, side_effect=True), args)


def _load_acquire(cg: Any, addr: ir.Value) -> ir.Value:
    """One acquire load of the counter at `addr`, GPU scope."""
    return _asm(cg, I32, LOAD_ACQUIRE, "=r,l,~{memory}", [addr])


def emit_gpu_event(cg: Any, e: Call) -> ir.Value:
    """Code for one of OPS in a kernel; `cg` is the kernel code generator."""
    if not e.args or e.args[0].dtype.bits != 32 or not e.args[0].dtype.is_int:
        raise CompileError(f"codegen: {e.op} on the GPU needs an int32 event counter", e.span)
    addr = _address(cg, e)
    if e.op == intrin.EVENT_NOTIFY:
        count = cg.expr_as(e.args[1], e.args[0].dtype) if len(e.args) > 1 else \
            ir.Constant(I32, 1)
        _asm(cg, VOID, NOTIFY, "l,r,~{memory}", [addr, cg.b.neg(count)])
        return ir.Constant(I32, 0)
    if e.op == intrin.ATOMIC_ADD:
        value = cg.expr_as(e.args[1], e.args[0].dtype)
        return _asm(cg, I32, ATOMIC_ADD, "=r,l,r,~{memory}", [addr, value])
    _wait(cg, addr)
    return ir.Constant(I32, 0)


def _wait(cg: Any, addr: ir.Value) -> None:
    """Spin on the counter with acquire loads and a nanosleep back-off."""
    b = cg.b
    zero = ir.Constant(I32, 0)
    ready = b.append_basic_block("event.ready")
    slow = b.append_basic_block("event.wait")
    b.cbranch(b.icmp_signed("<=", _load_acquire(cg, addr), zero), ready, slow)
    before = b.block
    b.position_at_end(slow)
    delay = b.phi(I32)
    delay.add_incoming(ir.Constant(I32, FIRST_SLEEP_NS), before)
    _asm(cg, VOID, NANOSLEEP, "r,~{memory}", [delay])
    doubled = b.shl(delay, ir.Constant(I32, 1))
    cap = ir.Constant(I32, MAX_SLEEP_NS)
    delay.add_incoming(b.select(b.icmp_signed(">", doubled, cap), cap, doubled), slow)
    b.cbranch(b.icmp_signed("<=", _load_acquire(cg, addr), zero), ready, slow)
    b.position_at_end(ready)
