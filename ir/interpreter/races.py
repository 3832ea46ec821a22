"""Data races in the reference interpreter: iterations of a parallel loop that touch the same
element, one of them writing.

The interpreter runs `T.parallel`, `T.vectorized` and thread-bound loops serially, so a race
would otherwise go unseen (and the serial order give a plausible answer). While one such loop
instance runs, every load and store compiled inside its body records the element it touches
(its storage and flat offset) with the current iteration; an element touched by two
iterations, one of them writing, is an InterpreterError naming the loop, the buffer, the
element and the two iterations. Only accesses inside such loops pay for this: their closures
are compiled with the recording step, all others without.

What is private to an iteration is never a race: storage allocated inside the loop; for a loop
bound to `blockIdx.*`, buffers in a per-block scope (shared, warp, local, wmma fragments: each
GPU block has its own copy) and, for a virtual thread, the same scopes (virtual threads run
in one hardware thread, which writes the block's tile they share once: TVM's inject-vthread
leaves a statement that does not use the virtual thread's index out of the unrolling, and
MetaSchedule writes its shared tiles inside the `vthread` loop); for a loop bound to
`threadIdx.*`, buffers in a per-thread scope (local). Event tensors are not tracked. Loops
whose iterations synchronise are not tracked: a body with events, atomics or an OpenMP
barrier (the megakernel's workers); a thread loop with a barrier (`T.tvm_storage_sync`)
inside or with an inner loop bound to its own tag (a cooperative fetch, whose threads the
storage-sync pass separates by barriers), or one bound to a reduction variable of a block
inside it (a cross-thread reduction).
A barrier does not synchronise GPU blocks: a `blockIdx` loop stays tracked.
"""

from __future__ import annotations

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
    """One running instance of a parallel loop: its current iteration and what each
    iteration touched so far (the first iteration to touch an element, and whether it wrote)."""

    name: str
    tracking: Tracking
    span: Span | None
    iteration: int = 0
    touched: dict[tuple[int, int], tuple[int, bool]] = field(default_factory=dict)
    private: set[int] = field(default_factory=set)


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

    def touch(self, buf: Buffer, storage: np.ndarray, offset: Any, write: bool,
              indices: Callable[[], list[Any]]) -> None:
        """Record an access of `buf` at `offset` (an array of them for a vector access);
        `indices` gives its indices for the message of a race."""
        key_base = id(storage)
        offsets = offset.reshape(-1).tolist() if isinstance(offset, np.ndarray) else [offset]
        for run in self.active:
            if key_base in run.private or run.tracking.owns(buf.scope):
                continue
            touched, now = run.touched, run.iteration
            for lane, off in enumerate(offsets):
                key = (key_base, int(off))
                seen = touched.get(key)
                if seen is None:
                    touched[key] = (now, write)
                elif seen[0] != now and (write or seen[1]):
                    element = _element(indices(), lane, len(offsets))
                    raise _race(run, f"{buf.name}[{element}]", seen, write)
                elif write and not seen[1]:
                    touched[key] = (seen[0], True)


def _element(indices: list[Any], lane: int, lanes: int) -> str:
    """The indices of the lane'th element a (vector) access touches."""
    picked = [i[lane] if isinstance(i, np.ndarray) and i.size == lanes else i for i in indices]
    return format_index(picked)


def _race(run: LoopRun, element: str, seen: tuple[int, bool], write: bool
          ) -> InterpreterError:
    kind = run.tracking.kind
    loop = f"{KIND_SPELLING.get(kind, kind)} loop '{run.name}'"
    where = f" at {run.span}" if run.span is not None else ""
    now, before = f"{run.name} = {run.iteration}", f"{run.name} = {seen[0]}"
    if write and seen[1]:
        what = f"iterations {before} and {now} both write {element}"
    elif write:
        what = f"iteration {now} writes {element}, which iteration {before} reads"
    else:
        what = f"iteration {now} reads {element}, which iteration {before} writes"
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
    if any_node(loop.body, lambda n: (isinstance(n, Call) and n.op == intrin.STORAGE_SYNC)
                or _binds(n, tag)):
        return None
    if isinstance(loop, For) and _reduces_across(loop):
        return None
    return Tracking("thread_binding", THREAD_PRIVATE_SCOPES)


def races_of(env: Env, slot: int) -> Races:
    """The call's race tracker (made on first use)."""
    races = env[slot]
    if isinstance(races, Unset):
        races = env[slot] = Races()
    return races
