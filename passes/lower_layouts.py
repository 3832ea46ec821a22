"""lower-layouts: every buffer with a layout becomes flat storage, every access its offset.

A buffer `A` of logical shape `(K, N)` with a layout (`layout="S[(K, N // 16, 16):(16,
16 * K, 1)]"`, B of a matmul packed in panels) becomes a 1-D buffer of its storage size, sharing
`A.data`, and each access `A[i, j]` becomes `A[offset(i, j)]`: the layout maps the logical
index to a place on each axis, and the place's coordinates, over the storage axes, give the
offset (`tirc.ir.layout.storage` defines the storage; `tirc.ir.layout.lowering` builds the
expressions). Symbols in a layout are the function's symbolic sizes of the same name.

- Memory (`m`): the offset; a `ComposeLayout` swizzles it (a `bitwise_xor` intrinsic).
  Replicas on `m` are copies: a store writes every copy (its value bound once by a `let`),
  a load reads the base one.
- CPU threads (`tid`): the storage holds one chunk of `span(m)` elements per worker, worker `t`
  at `t * span(m)`. Inside a `parallel` loop (the outermost one, which is the OpenMP region;
  its iteration `v - min` is the worker), each access must be made by its owner: the pass
  proves `owner(index) == v - min` with the loop bounds it knows, and rewrites the `tid`
  coordinate to `v - min`; when it cannot prove it, the access is a compile error (it would
  touch another worker's chunk). Outside parallel loops the code runs on one thread and may
  access every worker's chunk (to combine per-worker results, say). Replicas on `tid` are
  not supported.
- Device axes (`gpuid`, mesh axes), GPU thread axes and memory axes other than `m`: an error
  for a target that cannot run them (`llvm`: multi-device execution and GPU threads do not
  exist there; `cuda`: not implemented yet); without a target the buffer keeps its layout (it
  stays in the IR and prints) and a note says so.
- Parameters with a layout: `buffer_map` takes the flat buffer, so the entry point checks and
  the caller passes the physical storage, a 1-D array of the storage size.
- What the layout assumes but cannot be proved at compile time (`N % 16 == 0` for the panel
  layout above to group by `(K, N)`, or a layout size equal to the buffer's element count) is
  checked by an `assert` where the buffer is defined.
Blocks are lowered first (as flatten-buffers does); a block's match_buffer may view a buffer
with a layout (its accesses become the source's) but may not have a layout of its own.
Run this pass after lower-blocks and before flatten-buffers.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tirc.ir.arith import Analyzer
from tirc.ir.buffer import Buffer, Range
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var, binop
from tirc.ir.function import PrimFunc
from tirc.ir.layout import ComposeLayout, LayoutError, TileLayout
from tirc.ir.layout.lowering import LoweredLayout, e_add, lower_buffer_layout
from tirc.ir.layout.storage import tile_of
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.printer import print_node
from tirc.ir.span import Span
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    Block,
    BufferStore,
    For,
    ForKind,
    LetStmt,
    Stmt,
    seq,
)
from tirc.ir.visitor import Mutator, post_order_visit
from tirc.passes.lower_blocks import has_blocks, lower_blocks
from tirc.passes.pass_base import PassContext, PrimFuncPass

CPU_THREAD_AXIS = "tid"


def layout_buffers(func: PrimFunc) -> list[Buffer]:
    """Every buffer of `func` (parameters and body) that carries a layout."""
    found: dict[Buffer, None] = {}

    def visit(node: Any) -> None:
        bufs: list[Any] = []
        if isinstance(node, (BufferLoad, BufferStore, Allocate)):
            bufs = [node.buffer]
        elif isinstance(node, Block):
            bufs = list(node.alloc_buffers) + [m.buffer for m in node.match_buffers]
        elif isinstance(node, AttrStmt) and isinstance(node.node, Buffer):
            bufs = [node.node]
        for b in bufs:
            if b.layout is not None:
                found[b] = None

    for b in func.buffer_map.values():
        if b.layout is not None:
            found[b] = None
    post_order_visit(func.body, visit)
    return list(found)


def _reject_matched_layouts(body: Stmt) -> None:
    """A block's match_buffer views a region through the source's own indexing; a layout of
    its own would be dropped when blocks are lowered, so it is an error."""

    def visit(node: Any) -> None:
        if isinstance(node, Block):
            for m in node.match_buffers:
                if m.buffer.layout is not None:
                    raise _error(f"match_buffer '{m.buffer.name}' of block '{node.name}' has a "
                                 f"layout; only allocated and parameter buffers can have one",
                                 m.buffer.span or node.span)

    post_order_visit(body, visit)


def size_symbols(func: PrimFunc) -> dict[str, PrimExpr]:
    """The function's symbolic sizes by name: scalar parameters and variables in shapes."""
    out: dict[str, PrimExpr] = {p.name: p for p in func.params if p not in func.buffer_map}
    shapes: list[Any] = []
    for b in func.buffer_map.values():
        shapes += [*b.shape, *b.strides, b.elem_offset]

    def visit(node: Any) -> None:
        if isinstance(node, Allocate):
            shapes.extend(node.buffer.shape)
        elif isinstance(node, Block):
            for b in node.alloc_buffers:
                shapes.extend(b.shape)

    post_order_visit(func.body, visit)
    for dim in shapes:
        post_order_visit(dim, lambda n: out.setdefault(n.name, n) if isinstance(n, Var) else None)
    return out


def _target_kind(target: Any) -> str | None:
    if target is None:
        return None
    kind = getattr(target, "kind", None)
    return str(kind) if kind is not None else str(target).split()[0]


def _error(message: str, span: Span | None) -> CompileError:
    return CompileError(f"lower-layouts: {message}", span)


class _Lowerer(Mutator):
    """Rewrites the accesses of layout buffers; knows loop bounds and the current worker."""

    def __init__(self, func: PrimFunc, ctx: PassContext) -> None:
        self.func = func
        self.ctx = ctx
        self.kind = _target_kind(ctx.target)
        self.env = size_symbols(func)
        self.plans: dict[Buffer, tuple[LoweredLayout, Buffer] | None] = {}
        self.analyzer = Analyzer()
        self.worker: tuple[Var, PrimExpr] | None = None

    # ---- one buffer ------------------------------------------------------------------

    def plan_of(self, buf: Buffer) -> tuple[LoweredLayout, Buffer] | None:
        """The lowering and the flat buffer of `buf`, or None when it stays as it is."""
        if buf not in self.plans:
            self.plans[buf] = self._plan(buf) if buf.layout is not None else None
        return self.plans[buf]

    def flat_of(self, buf: Buffer) -> Buffer:
        plan = self.plan_of(buf)
        return buf if plan is None else plan[1]

    def _plan(self, buf: Buffer) -> tuple[LoweredLayout, Buffer] | None:
        layout = buf.layout
        where = buf.span or self.func.span
        if not isinstance(layout, (TileLayout, ComposeLayout)):
            raise _error(f"buffer '{buf.name}' has a layout tirc cannot read: {layout!r}", where)
        offset_free = buf.elem_offset is None or (
            isinstance(buf.elem_offset, IntImm) and buf.elem_offset.value == 0)
        if buf.strides or not offset_free:
            raise _error(f"buffer '{buf.name}' has both a layout and strides or an offset; "
                         "the layout alone must say where elements live", where)
        if self._unsupported_axes(buf, layout, where):
            return None
        try:
            low = lower_buffer_layout(layout, buf.shape, self.env)
        except LayoutError as e:
            raise _error(f"buffer '{buf.name}' with layout {layout}: {e}", where) from None
        flat = Buffer(name=buf.name, shape=(low.size,), dtype=buf.dtype, data=buf.data,
                      scope=buf.scope, align=buf.align, offset_factor=buf.offset_factor,
                      span=buf.span)
        return low, flat

    def _unsupported_axes(self, buf: Buffer, layout: Any, where: Span | None) -> bool:
        """Raise for axes the target cannot run; True when the buffer must stay as it is."""
        tile = tile_of(layout)
        placed = {it.axis for it in tile.shard} | {a for a in tile.axes() if a.name in
                                                   tile.offsets}
        for axis in tile.axes():
            how = "sharded" if axis in placed else "replicated"
            if axis.is_device:
                problem = (f"buffer '{buf.name}' is {how} over device axis '{axis.name}'; "
                           f"multi-device execution is not supported on target {self.kind}")
            elif axis.is_thread and axis.name != CPU_THREAD_AXIS:
                problem = (f"buffer '{buf.name}' is {how} over GPU thread axis '{axis.name}'; "
                           + ("target llvm has no GPU threads (CPU workers are 'tid')"
                              if self.kind == "llvm" else
                              f"lowering GPU thread layouts is not implemented for target "
                              f"{self.kind}"))
            elif axis.is_memory and axis.name != "m":
                problem = (f"buffer '{buf.name}' uses memory axis '{axis.name}', which target "
                           f"{self.kind} does not have")
            else:
                continue
            if self.kind is None:
                self.ctx.note(f"lower-layouts: buffer {buf.name} in {self.func.name} keeps its "
                              f"layout {layout}: axis '{axis.name}' needs a target that has it")
                return True
            raise _error(problem, where)
        if any(it.axis.name == CPU_THREAD_AXIS for it in tile.replica):
            raise _error(f"buffer '{buf.name}' is replicated over '{CPU_THREAD_AXIS}' "
                         f"(layout {layout}); replicas on CPU workers are not supported", where)
        return False

    def require(self, buf: Buffer, body: Stmt) -> Stmt:
        """`body` behind asserts for what the layout of `buf` assumes at run time."""
        plan = self.plan_of(buf)
        if plan is None:
            return body
        low = plan[0]
        for cond, text in reversed(low.requirements):
            body = AssertStmt(cond, f"lower-layouts: buffer '{buf.name}' with layout "
                                    f"{low.layout} needs {text}", body, span=buf.span)
        return body

    # ---- scopes ----------------------------------------------------------------------

    def visit_For(self, s: For) -> Any:
        outer = self.worker
        with self.analyzer.scope():
            self.analyzer.bind(s.loop_var, Range(s.min, s.extent))
            if s.kind is ForKind.PARALLEL and outer is None:
                self.worker = (s.loop_var, s.min)
            try:
                return self.generic_visit(s)
            finally:
                self.worker = outer

    def visit_LetStmt(self, s: LetStmt) -> Any:
        value = self.visit(s.value)
        with self.analyzer.scope():
            if value.dtype.is_int and value.dtype.lanes == 1:
                self.analyzer.bind(s.var, value)
            body = self.visit(s.body)
        if value is s.value and body is s.body:
            return s
        return s.replace(value=value, body=body)

    def visit_Allocate(self, s: Allocate) -> Any:
        flat = self.flat_of(s.buffer)
        body = self.require(s.buffer, self.visit(s.body))
        init = self.visit(s.init)
        if flat is s.buffer and body is s.body and init is s.init:
            return s
        return s.replace(buffer=flat, body=body, init=init)

    def visit_AttrStmt(self, s: AttrStmt) -> Any:
        node = self.flat_of(s.node) if isinstance(s.node, Buffer) else self.visit(s.node)
        value, body = self.visit(s.value), self.visit(s.body)
        if node is s.node and value is s.value and body is s.body:
            return s
        return s.replace(node=node, value=value, body=body)

    # ---- accesses --------------------------------------------------------------------

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        indices = self.visit(e.indices)
        plan = self.plan_of(e.buffer)
        if plan is None:
            return e if indices is e.indices else e.replace(indices=indices)
        low, flat = plan
        place = self.owned_place(low, e.buffer, indices, e.span)
        return BufferLoad(flat, (low.offset(place),), e.dtype, span=e.span)

    def visit_BufferStore(self, s: BufferStore) -> Any:
        indices = self.visit(s.indices)
        value = self.visit(s.value)
        plan = self.plan_of(s.buffer)
        if plan is None:
            if indices is s.indices and value is s.value:
                return s
            return s.replace(indices=indices, value=value)
        low, flat = plan
        place = self.owned_place(low, s.buffer, indices, s.span)
        copies = low.copies()
        if len(copies) == 1:
            return BufferStore(flat, value, (low.offset(place),), span=s.span)
        v = Var(f"{s.buffer.name}_value", value.dtype)
        stores = []
        for delta in copies:
            copy = {a: e_add(place[a], delta[a]) if a in place else delta[a]
                    for a in place.keys() | delta.keys()}
            stores.append(BufferStore(flat, v, (low.offset(copy),), span=s.span))
        return LetStmt(v, value, seq(*stores), span=s.span)

    def owned_place(self, low: LoweredLayout, buf: Buffer, indices: tuple[PrimExpr, ...],
                    span: Span | None) -> dict[str, PrimExpr]:
        """The place of `buf[indices]`; inside a parallel loop its worker must be the owner."""
        try:
            place = low.place(indices)
        except LayoutError as e:
            raise _error(f"access to buffer '{buf.name}': {e}", span) from None
        if CPU_THREAD_AXIS not in place or self.worker is None:
            return place
        var, lo = self.worker
        iteration = var if isinstance(lo, IntImm) and lo.value == 0 else binop("sub", var, lo)
        owner = place[CPU_THREAD_AXIS]
        if not self.analyzer.can_prove(binop("eq", owner, iteration)):
            access = f"{buf.name}[{', '.join(print_node(i) for i in indices)}]"
            raise _error(f"{access} belongs to worker {print_node(owner)} (layout "
                         f"{low.layout}), but runs in worker {print_node(iteration)} of the "
                         f"parallel loop over '{var.name}'; inside a parallel loop, a buffer "
                         f"sharded over '{CPU_THREAD_AXIS}' is accessed only by its owner",
                         span)
        place[CPU_THREAD_AXIS] = iteration
        return place


@dataclass(frozen=True)
class LowerLayouts(PrimFuncPass):
    """Buffers with a layout to flat storage; accesses to offsets, `tid` to worker ownership."""

    name: ClassVar[str] = "lower-layouts"
    description: ClassVar[str] = ("buffer layouts -> flat storage and physical offsets; CPU "
                                  "worker (tid) ownership checked (before flatten-buffers)")

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        if not layout_buffers(func):
            return func
        _reject_matched_layouts(func.body)
        body = lower_blocks(func.body) if has_blocks(func.body) else func.body
        lowerer = _Lowerer(func, ctx)
        buffer_map = {p: lowerer.flat_of(b) for p, b in func.buffer_map.items()}
        body = lowerer.visit(body)
        for b in reversed(list(func.buffer_map.values())):
            body = lowerer.require(b, body)
        if body is func.body and all(buffer_map[p] is b for p, b in func.buffer_map.items()):
            return func
        return func.replace(buffer_map=buffer_map, body=body)  # type: ignore[return-value]
