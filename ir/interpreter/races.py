"""Data races in the reference interpreter: iterations of a parallel loop that touch the same
element, one of them writing, unless the outcome cannot depend on their order.

The interpreter runs `T.parallel`, `T.vectorized` and thread-bound loops serially, so a race
would otherwise go unseen (and the serial order give a plausible answer). While one such loop
instance runs, every load and store compiled inside its body records the element it touches
(its storage and flat offset) with the current iteration; an element touched by two
iterations, one of them writing, is an InterpreterError naming the loop, the buffer, the
element and the two iterations, unless no order of the iterations could change what anyone
reads or what the element ends with:
- every write to the element in the loop instance stores one value, bit for bit (so a float
  -0.0 and 0.0 differ; a NaN is the same value as a NaN of the same bits, as a copied NaN
  is), and
- every read sees that value whatever the order: it follows a write of the element by its own
  iteration, or the element already held that value before the loop (a read by an iteration
  that did not write the element first could see the value from before the loop as well as
  another iteration's write).
So every thread of a block copying the whole tile into shared memory (MetaSchedule's design
spaces before their cooperative-fetch postprocessing) and then reading it is not a race, as on
the device; threads writing different values, or reading an element another thread writes
without writing it first, are. The values cost only the writes inside tracked loops: each
keeps the value stored (the element's value before the loop is read once, at its first write).
Only accesses inside such loops pay for this: their closures are compiled with the recording
step, all others without.

What is private to an iteration is never a race: storage allocated inside the loop; for a loop
bound to `blockIdx.*`, buffers in a per-block scope (shared, warp, local, wmma fragments: each
GPU block has its own copy) and, for a virtual thread, the same scopes (virtual threads run
in one hardware thread, which writes the block's tile they share once: TVM's inject-vthread
leaves a statement that does not use the virtual thread's index out of the unrolling, and
MetaSchedule writes its shared tiles inside the `vthread` loop); for a loop bound to
`threadIdx.*`, buffers in a per-thread scope (local). Event tensors are not tracked. Loops
whose iterations synchronise are not tracked: a body with events, atomics or an OpenMP
barrier (the megakernel's workers); a thread loop with an inner loop bound to its own tag
(a cooperative fetch, whose threads the storage-sync pass separates by barriers), or one
bound to a reduction variable of a block inside it (a cross-thread reduction).
A thread loop with a barrier (`T.tvm_storage_sync`) written inside is checked by the same
rule, with another message: the interpreter runs its threads one after another, so threads
that share data across the barrier would see it before it is written or after it is
overwritten (the GPU interpreter runs them in step); each thread reading its own writes is
fine. A barrier does not synchronise GPU blocks: a `blockIdx` loop stays tracked.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import field
from typing import Any

import numpy as np
from tirc.ir import intrinsics as intrin
from tirc.ir.attrs import PARALLEL_TEAM, VIRTUAL_THREAD
from tirc.ir.buffer import Buffer
from tirc.ir.expr import Call, Var
from tirc.ir.gpu.threads import BLOCK_TAGS
from tirc.ir.interpreter.values import Env, InterpreterError, Unset, format_index
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.span import Span
from tirc.ir.stmt import AttrStmt, BlockRealize, For, ForKind, IterKind
from tirc.ir.visitor import any_node

KIND_SPELLING = {"parallel": "T.parallel", "vectorized": "T.vectorized",
                 "thread_binding": "thread-bound"}
# A thread-bound loop with a barrier in its body: the interpreter runs its iterations one
# after another, so threads that share data across the barrier would see it too early or too
# late; such sharing is refused (the GPU interpreter runs the threads in step).
BARRIER = "barrier"

# Storage scopes with one copy per GPU block, and one copy per thread.
BLOCK_PRIVATE_SCOPES = ("shared", "warp", "local", "wmma")
THREAD_PRIVATE_SCOPES = ("local",)

# Calls by which iterations synchronise (or update memory atomically on purpose).
SYNC = (intrin.EVENT_WAIT, intrin.EVENT_WAIT_WATCHDOG, intrin.EVENT_NOTIFY, intrin.ATOMIC_ADD,
        intrin.OMP_BARRIER)


@dataclass(frozen=True)
class Tracking:
    """How one loop is checked: its kind as printed and the storage scopes private to each of
    its iterations."""

    kind: str
    private_scopes: tuple[str, ...] = ()

    def owns(self, scope: str) -> bool:
        """Whether each iteration has its own copy of buffers in `scope`."""
        return any(scope == s or scope.startswith(s + ".") for s in self.private_scopes)


@dataclass
class LoopRun:
    """One running instance of a parallel loop: its current iteration and, for each element
    its iterations touched so far, an `Element` record (a list, updated in place)."""

    name: str
    tracking: Tracking
    span: Span | None
    iteration: int = 0
    touched: dict[tuple[int, int], list[Any]] = field(default_factory=dict)
    private: set[int] = field(default_factory=set)


# The fields of an element's record in LoopRun.touched: the first iteration to touch it, the
# last one, the last one to write it (None: none yet), the one value every write stored so far
# (NOTHING before any write, MIXED once two differ), whether an iteration read it before
# writing it itself, and its value before the loop (read at the first write).
FIRST, LAST, WRITER, VALUE, COLD, BEFORE = range(6)
NOTHING, MIXED = object(), object()
READ = object()  # the value `touch` is given for a load


class Races:
    """The parallel loops running now, innermost last (one per call of a function)."""

    def __init__(self) -> None:
        self.active: list[LoopRun] = []

    def enter(self, name: str, tracking: Tracking, span: Span | None) -> LoopRun:
        run = LoopRun(name, tracking, span)
        self.active.append(run)
        return run

    def leave(self, run: LoopRun) -> None:
        self.active.remove(run)

    def allocated(self, storage: np.ndarray) -> None:
        """Storage allocated inside the running loops is private to their iterations."""
        for run in self.active:
            run.private.add(id(storage))

    def touch(self, buf: Buffer, storage: np.ndarray, offset: Any, value: Any,
              indices: Callable[[], list[Any]]) -> None:
        """Record an access of `buf` at `offset` (an array of them for a vector access), before
        it happens: a store of `value`, or a load when `value` is READ; `indices` gives its
        indices for the message of a race."""
        key_base = id(storage)
        offsets = offset.reshape(-1).tolist() if isinstance(offset, np.ndarray) else [offset]
        write = value is not READ
        values = _lane_values(value, len(offsets)) if write else ()
        for run in self.active:
            if key_base in run.private or run.tracking.owns(buf.scope):
                continue
            touched, now = run.touched, run.iteration
            for lane, off in enumerate(offsets):
                key = (key_base, int(off))
                e = touched.get(key)
                if e is None:
                    touched[key] = [now, now, now, values[lane], False, _held(storage, off)] \
                        if write else [now, now, None, NOTHING, True, None]
                    continue
                last, writer, held = e[LAST], e[WRITER], e[VALUE]
                e[LAST] = now
                if write:
                    if held is NOTHING:
                        e[VALUE], e[BEFORE] = values[lane], _held(storage, off)
                    elif held is not MIXED and not same_bits(held, values[lane]):
                        e[VALUE] = MIXED
                    e[WRITER] = now
                elif writer != now:
                    e[COLD] = True
                if e[FIRST] != now and e[VALUE] is not NOTHING and (
                        e[VALUE] is MIXED or e[COLD] and not same_bits(e[BEFORE], e[VALUE])):
                    element = _element(indices(), lane, len(offsets))
                    raise _race(run, f"{buf.name}[{element}]", e, (last, writer, held),
                                values[lane] if write else READ)


def _lane_values(value: Any, lanes: int) -> list[Any]:
    """The value a store writes to each of its `lanes` offsets (a vector's lanes, or one
    scalar or vector element copied to every offset)."""
    if lanes > 1 and isinstance(value, np.ndarray) and value.ndim and len(value) == lanes:
        return list(value)
    return [value] * lanes


def _held(storage: np.ndarray, off: int) -> Any:
    """The element at `off` now (a copy, for a row of vector lanes)."""
    held = storage[off]
    return held.copy() if isinstance(held, np.ndarray) else held


def same_bits(a: Any, b: Any) -> bool:
    """Whether two stored values are the same bits: -0.0 and 0.0 differ, NaNs of equal bits
    are the same (what makes concurrent stores of them indistinguishable)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        x = np.asarray(a)
        y = np.asarray(b, dtype=x.dtype)
        return x.shape == y.shape and x.tobytes() == y.tobytes()
    if a == b:
        return bool(a != 0) or math.copysign(1.0, a) == math.copysign(1.0, b)
    return a != a and b != b and np.asarray(a).tobytes() == np.asarray(b).tobytes()


def _element(indices: list[Any], lane: int, lanes: int) -> str:
    """The indices of the lane'th element a (vector) access touches."""
    picked = [i[lane] if isinstance(i, np.ndarray) and i.size == lanes else i for i in indices]
    return format_index(picked)


def _show(value: Any) -> str:
    """A stored value as a race's message shows it."""
    return str(value.tolist()) if isinstance(value, np.ndarray) else str(value)


def _race(run: LoopRun, element: str, e: list[Any], before: tuple[int, int | None, Any],
          value: Any) -> InterpreterError:
    """The error for the current access (`value`: what it stores, or READ) of an element
    whose record `e` fails the rule; `before` holds the record's LAST, WRITER and VALUE
    before the access."""
    kind = run.tracking.kind
    loop = f"{KIND_SPELLING.get(kind, kind)} loop '{run.name}'"
    where = f" at {run.span}" if run.span is not None else ""
    name, (last, writer, held) = run.name, before
    now = f"{name} = {run.iteration}"
    if value is not READ and writer is not None and writer != run.iteration:
        what = f"iterations {name} = {writer} and {now} both write {element}"
        if held is MIXED:
            what += ", different values"
        elif e[VALUE] is MIXED:
            what += f", different values ({_show(held)} and {_show(value)})"
        else:
            what += (f", and an iteration reads it before writing it, which could see "
                     f"{_show(e[BEFORE])} from before the loop")
    elif value is not READ:
        reader = last if last != run.iteration else e[FIRST]
        what = f"iteration {now} writes {element}, which iteration {name} = {reader} reads"
        if e[VALUE] is not MIXED:
            what += f" (it held {_show(e[BEFORE])}, {_show(value)} written)"
    else:
        what = f"iteration {now} reads {element}, which iteration {name} = {writer} writes"
        if e[VALUE] is not MIXED:
            what += f" (it held {_show(e[BEFORE])}, {_show(e[VALUE])} written)"
    if kind == BARRIER:
        return InterpreterError(
            f"the reference interpreter runs the iterations of thread-bound loop '{name}'"
            f"{where} one after another, so it cannot honour the barrier "
            f"(T.tvm_storage_sync) its threads share data across: {what}; run the function "
            "with the GPU interpreter (tirc.ir.interpreter.gpu), which runs the threads in "
            "step between barriers", run.span)
    return InterpreterError(f"data race in {loop}{where}: {what}", run.span)


def _thread_tag(loop: For | AttrStmt) -> str:
    if isinstance(loop, For):
        return loop.thread_tag or ""
    if loop.key == VIRTUAL_THREAD:
        return "vthread"
    return loop.node.name if isinstance(loop.node, Var) else ""


def _binds(n: Any, tag: str) -> bool:
    return isinstance(n, For) and n.kind == ForKind.THREAD_BINDING and n.thread_tag == tag


def _reduces_across(loop: For) -> bool:
    """Whether the loop's variable feeds a reduction variable of a block inside it: a
    cross-thread reduction, whose threads' partial results the lowering combines (TVM's
    LowerCrossThreadReduction), so its threads update the one output on purpose."""
    var = loop.loop_var

    def feeds(n: Any) -> bool:
        if not isinstance(n, BlockRealize):
            return False
        return any(iv.kind == IterKind.REDUCE and any_node(v, lambda x: x is var)
                   for iv, v in zip(n.block.iter_vars, n.iter_values))

    return any_node(loop.body, feeds)


def tracking_of(loop: For | AttrStmt) -> Tracking | None:
    """How the loop's iterations are checked, or None when they are not (a sequential loop,
    or iterations that synchronise)."""
    if isinstance(loop, For):
        if loop.kind not in (ForKind.PARALLEL, ForKind.VECTORIZED, ForKind.THREAD_BINDING):
            return None
        if loop.annotations.get(PARALLEL_TEAM):
            return None
    if any_node(loop.body, lambda n: isinstance(n, Call) and n.op in SYNC):
        return None
    if isinstance(loop, For) and loop.kind != ForKind.THREAD_BINDING:
        return Tracking(loop.kind.name.lower())
    tag = _thread_tag(loop)
    if tag in BLOCK_TAGS or tag.startswith("vthread"):
        return Tracking("thread_binding", BLOCK_PRIVATE_SCOPES)
    if any_node(loop.body, lambda n: _binds(n, tag)):
        return None
    if isinstance(loop, For) and _reduces_across(loop):
        return None
    if any_node(loop.body, lambda n: isinstance(n, Call) and n.op == intrin.STORAGE_SYNC):
        return Tracking(BARRIER, THREAD_PRIVATE_SCOPES)
    return Tracking("thread_binding", THREAD_PRIVATE_SCOPES)


def races_of(env: Env, slot: int) -> Races:
    """The call's race tracker (made on first use)."""
    races = env[slot]
    if isinstance(races, Unset):
        races = env[slot] = Races()
    return races
