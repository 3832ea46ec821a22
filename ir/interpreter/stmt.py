"""Statements of the reference interpreter, compiled once into Python closures.

Semantics follow TensorIR: a block binds its iteration variables to their values (checked
against their domains), is skipped when its predicate is false, and runs its `init` when every
reduction variable is at the minimum of its domain. Every loop kind runs serially, thread
bindings (loops and `thread_extent` attributes) included; a parallel, vectorized or
thread-bound loop whose iterations touch the same element, one of them writing, is a data race
unless no order of them could change a value (tirc.ir.interpreter.races). Float allocations
start as NaN (compiled storage starts as garbage, so a read before the first write shows),
integer ones as zeros, event tensors at their `init` value.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from tirc.ir import intrinsics as ir_intrinsics
from tirc.ir.attrs import THREAD_EXTENT, VIRTUAL_THREAD
from tirc.ir.buffer import Buffer
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, Var
from tirc.ir.interpreter import sparse
from tirc.ir.interpreter.buffer import storage_of
from tirc.ir.interpreter.expr import ExprCompiler
from tirc.ir.interpreter.races import Tracking, races_of, tracking_of
from tirc.ir.interpreter.values import (
    BreakLoop,
    ContinueLoop,
    Env,
    Fn,
    InterpreterError,
    np_dtype,
)
from tirc.ir.loop_jumps import escaping_loop_jumps
from tirc.ir.span import Span
from tirc.ir.sparse.buffer import SparseBuffer
from tirc.ir.sparse.iteration import SparseIteration
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    IterKind,
    LetStmt,
    MatchBufferRegion,
    SeqStmt,
    Stmt,
    While,
)
from tirc.ir.visitor import post_order_visit

# What an integer element of new storage holds before anything writes it (a float's is NaN);
# a caller may set another value to see whether a program reads such elements (undefined:
# scripts/pipeline_fuzz.py --run interprets twice with two values).
UNWRITTEN_INT = 0

Run = Callable[[Env], None]

THREAD_ATTRS = (THREAD_EXTENT, VIRTUAL_THREAD)


def _noop(env: Env) -> None:
    return None


def _check_address_views(s: LetStmt) -> None:
    """A pointer bound to `T.address_of(A[i])` is viewed only by buffers of A's dtype: the
    interpreter's view is A's storage itself, in its element type."""
    v = s.value
    if not (isinstance(v, Call) and v.op == ir_intrinsics.ADDRESS_OF
            and isinstance(v.args[0], BufferLoad)):
        return
    source = v.args[0].buffer

    def check(node: object) -> None:
        if isinstance(node, (BufferLoad, BufferStore)) and node.buffer.data is s.var \
                and node.buffer.dtype.element() != source.dtype.element():
            raise InterpreterError(
                f"buffer {node.buffer.name} views T.address_of({source.name}[...]) as "
                f"{node.buffer.dtype.element()}, not {source.name}'s {source.dtype.element()}; "
                f"the interpreter cannot reinterpret storage", node.span)

    post_order_visit(s.body, check)


def _jumps_caught(body: Run) -> Callable[[Env], bool]:
    """`body` catching the jumps that target its loop: True after a break, else False."""

    def run(env: Env) -> bool:
        try:
            body(env)
        except BreakLoop:
            return True
        except ContinueLoop:
            pass
        return False

    return run


class StmtCompiler:
    """Compiles the statements of one function into closures over one environment."""

    def __init__(self, ex: ExprCompiler, max_while_iterations: int) -> None:
        self.ex = ex
        self.slots = ex.slots
        self.max_while = max_while_iterations

    def compile(self, s: Stmt) -> Run:
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise InterpreterError(f"the interpreter cannot run {type(s).__name__}")
        return method(s)

    def s_SeqStmt(self, s: SeqStmt) -> Run:
        fns = [self.compile(x) for x in s.seq]
        if not fns:
            return _noop
        if len(fns) == 1:
            return fns[0]

        def seq(env: Env) -> None:
            for f in fns:
                f(env)

        return seq

    def s_BufferStore(self, s: BufferStore) -> Run:
        fns = [self.ex.compile(i) for i in s.indices]
        if isinstance(s.buffer, SparseBuffer):
            return sparse.store_fn(self.ex.buffers, s.buffer, fns, self.ex.compile(s.value),
                                   s.span, s.indices)
        vector = any(i.dtype.lanes > 1 for i in s.indices)
        return self.ex.buffers.store_fn(s.buffer, fns, self.ex.compile(s.value), vector, s.span)

    def s_Evaluate(self, s: Evaluate) -> Run:
        f = self.ex.compile(s.value)

        def evaluate(env: Env) -> None:
            f(env)

        return evaluate

    def s_LetStmt(self, s: LetStmt) -> Run:
        _check_address_views(s)
        k = self.slots.of(s.var)
        fv = self.ex.compile(s.value)
        body = self.compile(s.body)

        def let(env: Env) -> None:
            env[k] = fv(env)
            body(env)

        return let

    def s_AssertStmt(self, s: AssertStmt) -> Run:
        fc = self.ex.compile(s.condition)
        body = self.compile(s.body)
        message, span = s.message, s.span

        def check(env: Env) -> None:
            if not fc(env):
                raise InterpreterError(message, span)
            body(env)

        return check

    def s_IfThenElse(self, s: IfThenElse) -> Run:
        fc = self.ex.compile(s.condition)
        then = self.compile(s.then_case)
        other = self.compile(s.else_case) if s.else_case is not None else _noop

        def branch(env: Env) -> None:
            if fc(env):
                then(env)
            else:
                other(env)

        return branch

    def s_While(self, s: While) -> Run:
        fc = self.ex.compile(s.condition)
        body = self.compile(s.body)
        limit = self.max_while
        if escaping_loop_jumps(s.body):
            body = _jumps_caught(body)

        def loop(env: Env) -> None:
            n = 0
            while fc(env):
                n += 1
                if n > limit:
                    raise InterpreterError(f"while loop ran more than {limit} iterations")
                if body(env):
                    return

        return loop

    def s_For(self, s: For) -> Run:
        fmin, fext = self.ex.compile(s.min), self.ex.compile(s.extent)
        tracking = tracking_of(s)
        if tracking is None:
            body = self.compile(s.body)
            if escaping_loop_jumps(s.body):
                return self._jumping_loop(s.loop_var, fmin, fext, _jumps_caught(body))
            return self._loop(s.loop_var, fmin, fext, body)
        return self._tracked_loop(s.loop_var, fmin, fext, s.body, tracking, s.span)

    def _tracked_loop(self, var: Var, fmin: Fn, fext: Fn, body_stmt: Stmt, tracking: Tracking,
                      span: Span | None) -> Run:
        """A loop whose iterations must be independent: while it runs, the accesses of its
        body are recorded, and two iterations touching one element (one writing) are a
        data race (tirc.ir.interpreter.races)."""
        buffers = self.ex.buffers
        buffers.tracking += 1
        try:
            body = self.compile(body_stmt)
        finally:
            buffers.tracking -= 1
        k = self.slots.of(var)
        rslot = buffers.races_slot()
        name = var.name

        def loop(env: Env) -> None:
            lo = fmin(env)
            races = races_of(env, rslot)
            run = races.enter(name, tracking, span)
            try:
                for v in range(lo, lo + fext(env)):
                    env[k] = v
                    run.iteration = v
                    body(env)
            finally:
                races.leave(run)

        return loop

    def _loop(self, var: Var, fmin: Fn, fext: Fn, body: Run) -> Run:
        k = self.slots.of(var)

        def loop(env: Env) -> None:
            lo = fmin(env)
            for v in range(lo, lo + fext(env)):
                env[k] = v
                body(env)

        return loop

    def _jumping_loop(self, var: Var, fmin: Fn, fext: Fn, body: Callable[[Env], bool]) -> Run:
        """A serial loop whose body breaks or continues it (`body` says True to leave)."""
        k = self.slots.of(var)

        def loop(env: Env) -> None:
            lo = fmin(env)
            for v in range(lo, lo + fext(env)):
                env[k] = v
                if body(env):
                    return

        return loop

    def s_AttrStmt(self, s: AttrStmt) -> Run:
        if s.key in THREAD_ATTRS and isinstance(s.node, Var):
            zero = self.ex.compile(IntImm(0, s.node.dtype))
            tracking = tracking_of(s)
            if tracking is not None:
                return self._tracked_loop(s.node, zero, self.ex.compile(s.value), s.body,
                                          tracking, s.span)
            return self._loop(s.node, zero, self.ex.compile(s.value), self.compile(s.body))
        return self.compile(s.body)

    def s_Allocate(self, s: Allocate) -> Run:
        alloc = self._allocator(s.buffer, s.init)
        body = self.compile(s.body)
        dslot = self.slots.of(s.buffer.data)

        def allocate(env: Env) -> None:
            old = env[dslot]
            env[dslot] = alloc(env)
            body(env)
            env[dslot] = old

        return allocate

    def _allocator(self, buf: Buffer, init: PrimExpr | None) -> Callable[[Env], np.ndarray]:
        """A closure making fresh storage for `buf` (NaN for floats, zeros for integers, or
        `init` for event tensors)."""
        if isinstance(buf, SparseBuffer):
            buf = sparse.storage_buffer(buf)
        dim_fns = [self.ex.compile(d) for d in buf.shape]
        stride_fns = [self.ex.compile(s) for s in buf.strides] if buf.strides else None
        dtype = np.dtype(np.int32) if buf.scope == "event" else np_dtype(buf.dtype)
        init_fn = self.ex.compile(init) if init is not None else None
        name = buf.name
        layout = self.ex.buffers.layout_map_fn(buf) if buf.layout is not None else None
        lanes = buf.dtype.lanes

        def alloc(env: Env) -> np.ndarray:
            dims = [int(f(env)) for f in dim_fns]
            if any(d < 0 for d in dims):
                raise InterpreterError(f"allocation of {name} with negative shape {dims}")
            size = layout(env).size if layout is not None else math.prod(dims)
            if stride_fns is not None and layout is None:  # up to the last element's offset
                strides = [int(f(env)) for f in stride_fns]
                size = 0 if 0 in dims else \
                    1 + sum((d - 1) * s for d, s in zip(dims, strides))
            if lanes > 1:  # vector elements: one row of lanes per element
                return np.zeros((size, lanes), dtype=dtype)
            if init_fn is None:
                return np.full(size, np.nan, dtype=dtype) if dtype.kind == "f" \
                    else np.full(size, UNWRITTEN_INT, dtype=dtype)
            return np.full(size, init_fn(env), dtype=dtype)

        if not self.ex.buffers.tracking:
            return alloc
        rslot = self.ex.buffers.races_slot()

        def private_alloc(env: Env) -> np.ndarray:
            storage = alloc(env)
            races_of(env, rslot).allocated(storage)
            return storage

        return private_alloc

    def s_SparseIteration(self, s: SparseIteration) -> Run:
        return sparse.compile_iteration(self, s)

    # ---- blocks ----------------------------------------------------------------------

    def s_BlockRealize(self, s: BlockRealize) -> Run:
        block = s.block
        pred = None
        if not (isinstance(s.predicate, IntImm) and s.predicate.value):
            pred = self.ex.compile(s.predicate)
        values = [self.ex.compile(v) for v in s.iter_values]
        if len(values) != len(block.iter_vars):
            raise InterpreterError(f"block '{block.name}' binds {len(values)} values to "
                                   f"{len(block.iter_vars)} iteration variables")
        bind = self._binder(block, values)
        allocs = [(self.slots.of(b.data), self._allocator(b, None)) for b in block.alloc_buffers]
        matches = [self._matcher(m) for m in block.match_buffers]
        init = self._init(block)
        body = self.compile(block.body)

        def realize(env: Env) -> None:
            if pred is not None and not pred(env):
                return
            bind(env)
            for slot, alloc in allocs:
                env[slot] = alloc(env)
            for match in matches:
                match(env)
            if init is not None:
                init(env)
            body(env)

        return realize

    def _binder(self, block: Block, values: list[Fn]) -> Run:
        """Bind the iteration variables, checking each value against its domain."""
        items = []
        for iv, fv in zip(block.iter_vars, values):
            lo = iv.dom.min.value if isinstance(iv.dom.min, IntImm) else self.ex.compile(iv.dom.min)
            ext = (iv.dom.extent.value if isinstance(iv.dom.extent, IntImm)
                   else self.ex.compile(iv.dom.extent))
            items.append((self.slots.of(iv.var), fv, lo, ext, iv.var.name))
        name, span = block.name, block.span

        def bind(env: Env) -> None:
            for slot, fv, lo, ext, var_name in items:
                v = fv(env)
                low = lo if isinstance(lo, int) else lo(env)
                high = low + (ext if isinstance(ext, int) else ext(env))
                if not low <= v < high:
                    raise InterpreterError(f"block '{name}': iteration variable {var_name} = {v} "
                                           f"is outside its domain [{low}, {high})", span)
                env[slot] = v

        return bind

    def _init(self, block: Block) -> Run | None:
        """Run `init` when every reduction variable is at its domain minimum."""
        if block.init is None:
            return None
        init = self.compile(block.init)
        conds = []
        for iv in block.iter_vars:
            if iv.kind == IterKind.REDUCE:
                conds.append((self.slots.of(iv.var), self.ex.compile(iv.dom.min)))

        def maybe_init(env: Env) -> None:
            for slot, fmin in conds:
                if env[slot] != fmin(env):
                    return
            init(env)

        return maybe_init

    def _matcher(self, m: MatchBufferRegion) -> Run:
        """Set up a block-local buffer viewing a region of another (`T.match_buffer`)."""
        buf, src = m.buffer, m.source.buffer
        src_geometry = self.ex.buffers.geometry_fn(src)
        mins = [self.ex.compile(r.min) for r in m.source.region]
        exts = [self.ex.compile(r.extent) for r in m.source.region]
        gslot = self.ex.buffers.make_dynamic(buf)
        dst_slot = self.slots.of(buf.data)
        src_slot = self.slots.of(src.data)
        ndim = len(buf.shape)
        checks = self._declared_geometry(buf)

        def match(env: Env) -> None:
            dims, strides, base = src_geometry(env)
            lows = [int(f(env)) for f in mins]
            extents = [int(f(env)) for f in exts]
            if ndim > len(extents) or any(e != 1 for e in extents[:len(extents) - ndim]):
                raise InterpreterError(
                    f"match_buffer {buf.name}: region of {src.name} does not fit rank {ndim}")
            for lo, ext, d in zip(lows, extents, dims):
                if lo < 0 or lo + ext > d:
                    raise InterpreterError(f"match_buffer {buf.name}: region [{lo}, {lo + ext}) "
                                           f"is outside {src.name} (extent {d})")
            offset = base + sum(lo * s for lo, s in zip(lows, strides))
            geo = (tuple(extents[len(extents) - ndim:]), tuple(strides[len(strides) - ndim:]),
                   offset)
            env[dst_slot] = storage_of(env, src_slot, src)
            env[gslot] = geo
            checks(env, geo)

        return match

    def _declared_geometry(self, buf: Buffer) -> Callable[[Env, tuple], None]:
        """Bind or check the shape/strides/elem_offset a matched buffer declares; one that
        declares no strides views its region with the source's, contiguous or not, as
        lower-blocks and TVM's LowerMatchBuffer rewrite its accesses."""
        items: list[tuple[str, int, PrimExpr]] = []
        for k, d in enumerate(buf.shape):
            items.append(("dims", k, d))
        for k, st in enumerate(buf.strides):
            items.append(("strides", k, st))
        if buf.elem_offset is not None:
            items.append(("offset", 0, buf.elem_offset))
        binders = [(kind, k, e, self.slots.of(e) if isinstance(e, Var) else None,
                    None if isinstance(e, Var) else self.ex.compile(e)) for kind, k, e in items]

        def check(env: Env, geo: tuple) -> None:
            dims, strides, offset = geo
            bound: set[int] = set()  # a variable named twice is bound once, then checked
            for kind, k, e, slot, fn in binders:
                actual = dims[k] if kind == "dims" else strides[k] if kind == "strides" else offset
                if slot is not None and slot in bound and int(env[slot]) != actual:
                    raise InterpreterError(f"match_buffer {buf.name}: {kind} {k} is {actual}, "
                                           f"declared {e.name} = {int(env[slot])}")
                if slot is not None:
                    bound.add(slot)
                    env[slot] = actual
                elif fn is not None and int(fn(env)) != actual:
                    raise InterpreterError(f"match_buffer {buf.name}: {kind} {k} is {actual}, "
                                           f"declared {int(fn(env))}")

        return check

