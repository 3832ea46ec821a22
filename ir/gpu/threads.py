"""The GPU vocabulary: thread tags, launch regions, barriers, launch calls.

A *launch region* is an outermost thread-bound loop of a function: everything under it runs on
the device as one kernel, in SPMD form (every thread of every block runs the whole region; a
thread-bound loop binds its variable to the thread's index instead of iterating). The host
part of a GPU function launches each region with `T.call_intrin("int32", "tirc.launch_kernel",
"name", grid_x, grid_y, grid_z, block_x, block_y, block_z, args...)` after split-host-device.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from tirc.ir.expr import Call, IntImm, PrimExpr, StringImm
from tirc.ir.intrinsics import LAUNCH_KERNEL, STORAGE_SYNC
from tirc.ir.node import Node
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    While,
)

BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
ALL_TAGS = BLOCK_TAGS + THREAD_TAGS
VTHREAD_TAGS = ("vthread", "vthread.x", "vthread.y", "vthread.z")

# Storage scopes that live on the device only, one copy per block (shared) or thread (local).
DEVICE_SCOPES = ("shared", "shared.dyn", "local", "warp")

WARP_SIZE = 32  # the lanes of an NVIDIA warp
# TVM's warp shuffles by the PTX `shfl.sync` mode each is (CUDA's __shfl*_sync), and TVM's
# activemask: the calls where a warp's threads meet.
WARP_SHUFFLES = {"tvm_warp_shuffle": "idx", "tvm_warp_shuffle_up": "up",
                 "tvm_warp_shuffle_down": "down", "tvm_warp_shuffle_xor": "bfly"}
WARP_ACTIVEMASK = "tvm_warp_activemask"


def width_ok(width: int) -> bool:
    """A shuffle's width cuts the warp into segments: a power of two from 1 to 32."""
    return 0 < width <= WARP_SIZE and width & (width - 1) == 0


def shfl_clamp_low_bits(mode: str) -> int:
    """The low bits of `shfl.sync`'s c operand, `((32 - width) << 8) | these`, as CUDA's
    __shfl*_sync sets them: the segment's last lane, except for `up` (its first)."""
    return 0 if mode == "up" else WARP_SIZE - 1


def is_thread_loop(s: Any) -> bool:
    """A loop bound to a GPU index (`T.thread_binding`)."""
    return isinstance(s, For) and s.kind == ForKind.THREAD_BINDING


def is_vthread_loop(s: Any) -> bool:
    """A loop bound to a virtual thread (inject-vthread makes it a plain loop)."""
    return is_thread_loop(s) and s.thread_tag in VTHREAD_TAGS


def is_block_tag(tag: str | None) -> bool:
    return tag in BLOCK_TAGS


def is_barrier(s: Any) -> bool:
    """`T.tvm_storage_sync("shared")` (or another scope) as a statement."""
    return isinstance(s, Evaluate) and isinstance(s.value, Call) and s.value.op == STORAGE_SYNC


def barrier(span: Any = None) -> Stmt:
    """A block-wide barrier over shared memory."""
    from tirc.ir.dtype import INT32

    return Evaluate(Call(STORAGE_SYNC, (StringImm("shared"),), INT32), span=span)


def is_launch(s: Any) -> bool:
    return isinstance(s, Evaluate) and isinstance(s.value, Call) and s.value.op == LAUNCH_KERNEL


def children(s: Stmt) -> list[Stmt]:
    """The statements directly inside `s`."""
    if isinstance(s, SeqStmt):
        return list(s.seq)
    if isinstance(s, IfThenElse):
        return [s.then_case] + ([s.else_case] if s.else_case is not None else [])
    if isinstance(s, (For, While, LetStmt, AttrStmt, Allocate, AssertStmt)):
        return [s.body]
    if isinstance(s, BlockRealize):
        return [s.block]
    if isinstance(s, Block):
        return ([s.init] if s.init is not None else []) + [s.body]
    return []


def walk_stmts(s: Stmt) -> Iterator[Stmt]:
    """Every statement under `s` (included), parents before children."""
    yield s
    for c in children(s):
        yield from walk_stmts(c)


def launch_regions(s: Stmt) -> list[For]:
    """The outermost thread-bound loops under `s`, in program order."""
    if is_thread_loop(s):
        return [s]  # type: ignore[list-item]
    out: list[For] = []
    for c in children(s):
        out.extend(launch_regions(c))
    return out


def regions_with_storage(s: Stmt, around: tuple[Allocate, ...] = ()
                         ) -> list[tuple[For, tuple[Allocate, ...]]]:
    """Each launch region with the device-scope allocations that enclose it in host code."""
    if is_thread_loop(s):
        return [(s, around)]  # type: ignore[list-item]
    if isinstance(s, Allocate) and s.buffer.scope in DEVICE_SCOPES:
        around = (*around, s)
    out: list[tuple[For, tuple[Allocate, ...]]] = []
    for c in children(s):
        out.extend(regions_with_storage(c, around))
    return out


def thread_loops(s: Stmt) -> list[For]:
    """Every thread-bound loop under `s` (included)."""
    return [x for x in walk_stmts(s) if is_thread_loop(x)]  # type: ignore[misc]


def has_barrier(s: Stmt) -> bool:
    return any(is_barrier(x) for x in walk_stmts(s))


def repeatable_copy(body: Stmt) -> bool:
    """Whether running `body` for every value of its loop in each thread, as the reference
    interpreter runs a nested binding of one thread axis, leaves what running it for the
    thread's own value leaves, given that it does not use the thread's index: no store reads
    the storage it writes, and no call is evaluated for its effects (a copy: every thread
    writes the same values)."""
    from tirc.ir.expr import BufferLoad
    from tirc.ir.stmt import BufferStore
    from tirc.ir.visitor import any_node

    def breaks(n: Node) -> bool:
        if isinstance(n, Evaluate):
            return not isinstance(n.value, IntImm)
        if isinstance(n, BufferStore):
            return any_node((n.value, n.indices), lambda m: isinstance(m, BufferLoad)
                            and m.buffer.data is n.buffer.data)
        return False

    return not any_node(body, breaks)


def const_value(e: PrimExpr) -> int | None:
    return e.value if isinstance(e, IntImm) else None


def map_regions(s: Stmt, fn: Callable[[For], Stmt]) -> Stmt:
    """`s` with each launch region replaced by `fn(region)` (host code is rebuilt around it)."""
    from tirc.ir.visitor import Mutator

    class _Regions(Mutator):
        def visit_For(self, f: For) -> Any:
            if is_thread_loop(f):
                return fn(f)
            return self.generic_visit(f)

        def generic_visit(self, n: Node) -> Any:
            if not isinstance(n, Stmt):
                return n  # expressions hold no launch regions
            return super().generic_visit(n)

    return _Regions().visit(s)
