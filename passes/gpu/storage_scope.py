"""gpu-storage-scope: put `shared` and `local` buffers inside the kernels that use them.

lower-blocks opens a root block's `T.alloc_buffer(..., scope="shared")` at the top of the
function, outside the thread-bound loops; on the GPU such a buffer exists once per block
(shared) or per thread (local), inside the kernel. This pass moves each device-scope allocation
that sits in host code into every launch region that uses it (a fresh copy of the buffer for
each further region), just inside the region's blockIdx loops, so that every block starts with
its own storage. It also checks, for every allocation inside a region:
- the scope is a device scope: a `global` allocation inside a kernel is an error (the device
  cannot allocate global memory), with a hint to allocate it outside the thread-bound loops;
- the size is a constant (shared memory is laid out at compile time, local memory is
  registers or the stack);
- a kernel that reads a device-scope buffer also writes it (or hands its pointer to an
  intrinsic): the storage lasts one launch, so a value left by another kernel is gone.
Device-scope allocations no region uses are dropped. The backend maps the scopes to NVPTX
address spaces: global 1, shared 3, local 5 (see tirc.backends.nvptx.address_space).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from tirc.ir import intrinsics as intrin
from tirc.ir.analysis.storage import storage_size
from tirc.ir.arith import construct
from tirc.ir.attrs import STORAGE_KIND
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import BufferLoad, Call, IntImm, Var
from tirc.ir.function import PrimFunc
from tirc.ir.gpu.threads import (
    DEVICE_SCOPES,
    is_block_tag,
    is_thread_loop,
    launch_regions,
    walk_stmts,
)
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.node import Node
from tirc.ir.rebind import used_vars
from tirc.ir.stmt import Allocate, AttrStmt, BufferStore, For, Stmt
from tirc.ir.visitor import post_order_visit, substitute
from tirc.passes.pass_base import PassContext, PrimFuncPass


def strip_storage_kind(body: Stmt, buf: Buffer) -> Stmt:
    """The body of an Allocate without storage-rewrite's `storage_kind` attribute."""
    if isinstance(body, AttrStmt) and body.key == STORAGE_KIND and body.node is buf:
        return body.body
    return body


def check_kernel_allocations(region: Stmt) -> None:
    """Every allocation inside a launch region has a device scope and a constant size."""
    for s in walk_stmts(region):
        if not isinstance(s, Allocate):
            continue
        buf = s.buffer
        if buf.scope not in DEVICE_SCOPES and buf.scope != "event":
            raise CompileError(
                f"gpu-storage-scope: buffer '{buf.name}' is allocated in {buf.scope} memory "
                "inside a kernel; give it scope=\"shared\" or \"local\", or allocate it "
                "outside the thread-bound loops", s.span or buf.span)
        if not isinstance(construct.fold(storage_size(buf)), IntImm):
            raise CompileError(
                f"gpu-storage-scope: {buf.scope} buffer '{buf.name}' has a symbolic size; "
                "device buffers need a constant size", s.span or buf.span)


def _hands_out(call: Call, data: Var) -> bool:
    """Whether `call` is given the pointer `data` (bare, or as `T.address_of` of an element),
    through which an intrinsic such as a tensor-core store may write; reading an element as a
    value argument (`T.exp(S[i])`) is not."""
    if call.op == intrin.ADDRESS_OF and any(
            isinstance(a, BufferLoad) and a.buffer.data is data for a in call.args):
        return True

    def mentions(e: object) -> bool:
        if e is data:
            return True
        if isinstance(e, BufferLoad):  # an element's value, not the pointer
            return any(mentions(i) for i in e.indices)
        if isinstance(e, Call):  # a nested call is looked at on its own
            return False
        if isinstance(e, tuple):
            return any(mentions(x) for x in e)
        if isinstance(e, Node):
            return any(mentions(v) for _, v in e.node_fields())
        return False

    return any(mentions(a) for a in call.args)


def _never_written(region: Stmt, data: Var) -> BufferLoad | None:
    """A load of the buffer behind `data` in a region that neither stores to it nor hands its
    pointer to a call (an intrinsic such as a tensor-core store may write through it)."""
    loads: list[BufferLoad] = []
    written = False

    def visit(n: object) -> None:
        nonlocal written
        if isinstance(n, BufferLoad) and n.buffer.data is data:
            loads.append(n)
        elif isinstance(n, BufferStore) and n.buffer.data is data:
            written = True
        elif isinstance(n, Call) and _hands_out(n, data):
            written = True

    post_order_visit(region, visit)
    return None if written or not loads else loads[0]


def check_written_in_kernel(region: Stmt, buf: Buffer) -> None:
    """A device-scope buffer a kernel reads is written in that kernel: shared and local memory
    live for one launch, so a value stored in another kernel is gone (a schedule that computes
    a shared cache in one kernel and reads it in the next would read garbage)."""
    load = _never_written(region, buf.data)
    if load is not None:
        raise CompileError(
            f"gpu-storage-scope: {buf.scope} buffer '{buf.name}' is read in a kernel that never "
            f"writes it; {buf.scope} memory lasts one kernel launch, so the kernel would read "
            "garbage (compute the buffer in the kernel that reads it, e.g. compute_at under "
            "that kernel's loops)", load.span or buf.span)


def _fresh(buf: Buffer) -> Buffer:
    return dataclasses.replace(buf, data=Var(buf.data.name, buf.data.dtype))


def _inject(region: For, buffers: list[Buffer]) -> Stmt:
    """Open the buffers just inside the region's blockIdx loops (or around the region)."""
    def wrap(body: Stmt) -> Stmt:
        for buf in reversed(buffers):
            body = Allocate(buf, body, span=buf.span)
        return body

    def descend(s: Stmt) -> Stmt:
        if is_thread_loop(s) and is_block_tag(s.thread_tag):
            assert isinstance(s, For)
            inner = s.body
            if is_thread_loop(inner) and is_block_tag(inner.thread_tag):  # type: ignore[attr-defined]
                return s.replace(body=descend(inner))  # type: ignore[return-value]
            return s.replace(body=wrap(inner))  # type: ignore[return-value]
        return wrap(s)

    return descend(region)


class _Mover:
    """Removes device allocations from host code and re-opens them inside the regions."""

    def __init__(self) -> None:
        self.seen: dict[Buffer, int] = {}

    def host(self, s: Stmt, pending: list[Allocate]) -> Stmt:
        if is_thread_loop(s):
            return self.region(s, pending)  # type: ignore[arg-type]
        if isinstance(s, Allocate) and s.buffer.scope in DEVICE_SCOPES:
            return self.host(strip_storage_kind(s.body, s.buffer), [*pending, s])
        if not any(is_thread_loop(x) for x in walk_stmts(s)):
            return s
        changes = {}
        for f in dataclasses.fields(s):
            value = getattr(s, f.name)
            if isinstance(value, Stmt):
                changes[f.name] = self.host(value, pending)
            elif isinstance(value, tuple) and value and all(isinstance(v, Stmt) for v in value):
                changes[f.name] = tuple(self.host(v, pending) for v in value)
        return dataclasses.replace(s, **changes)

    def region(self, region: For, pending: list[Allocate]) -> Stmt:
        names = used_vars(region)
        mine: list[Buffer] = []
        mapping: dict[object, object] = {}
        for a in pending:
            if a.buffer.data not in names:
                continue
            n = self.seen.get(a.buffer, 0)
            self.seen[a.buffer] = n + 1
            buf = a.buffer
            if n > 0:
                buf = _fresh(a.buffer)
                mapping[a.buffer] = buf
                mapping[a.buffer.data] = buf.data
            check_written_in_kernel(region, a.buffer)
            mine.append(buf)
        if mapping:
            region = substitute(region, mapping)
        out = _inject(region, mine) if mine else region
        check_kernel_allocations(out)
        return out


def place_device_storage(func: PrimFunc) -> PrimFunc:
    """`func` with its device-scope allocations inside the kernels (see the docstring)."""
    if not launch_regions(func.body):
        return func
    body = _Mover().host(func.body, [])
    return func if body is func.body else func.replace(body=body)  # type: ignore[return-value]


@dataclass(frozen=True)
class GPUStorageScope(PrimFuncPass):
    """Move shared/local buffers into the kernels that use them (see the module docstring)."""

    name: ClassVar[str] = "gpu-storage-scope"
    description: ClassVar[str] = ("move shared/local allocations into the kernels that use "
                                  "them; check device allocations")

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        return place_device_storage(func)
