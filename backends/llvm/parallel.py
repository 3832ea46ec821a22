"""`parallel` loops as OpenMP regions: an outlined worker called through `GOMP_parallel`.

The caller packs every value the loop body uses into a struct `{i32 error, ptr message,
begin, extent, captured...}` and calls `GOMP_parallel(worker, &struct, 0, 0)` (0 threads: the
OpenMP default). Each worker takes a static chunk `[tid * chunk, min(extent, (tid + 1) * chunk))`
with `chunk = ceil(extent / num_threads)` from `omp_get_thread_num`/`omp_get_num_threads`; a loop
annotated `"parallel.chunk": c` instead hands out chunks of c iterations to whichever worker
asks next (an atomic counter at the end of the struct), so iterations of uneven cost (sparse
rows) balance, and a worker that the OS deschedules holds up only its current chunk.
Parallel loops nested inside run serially. A loop annotated `"parallel.team"` (the megakernel
runtime's region) asks for `extent` threads and runs its body exactly once on every thread of
the team, with the loop variable the thread number (the body reads the team size with
`tirc.omp_num_threads()`; a team may be smaller than asked for), so a barrier inside the body
meets every thread. The caller passes a message buffer of its own (on its stack) in the struct;
the first worker to fail claims the error slot with a compare-and-swap and copies its thread's
message into that buffer, so no other thread writes it and no thread's buffer is read after the
region; after the region the caller moves the message into its own thread's error buffer.
A team's workers find their region's error word through the thread-local `tirc.team_error`,
so that a worker waiting on an event gives up when another one has failed (no hang).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir
from tirc.backends.llvm.context import ERROR_BUFFER_SIZE, ModuleContext, as_ptr
from tirc.backends.llvm.outline import captured_vars, pack, unpack
from tirc.backends.llvm.types import I8, I32, I64, PTR, VOID
from tirc.ir.attrs import PARALLEL_CHUNK, PARALLEL_TEAM
from tirc.ir.stmt import For

if TYPE_CHECKING:
    from tirc.backends.llvm.function import FunctionCodegen

ERROR, MESSAGE, BEGIN, EXTENT, FIRST_CAPTURED = range(5)


def _worker_fail(slot: ir.Value, ty: ir.LiteralStructType, team: bool):
    """A worker's failure: the first to fail records its code and copies its message into
    the caller's buffer; later failures only return. In a team (a megakernel, whose workers
    wait on each other) the others see the error word set while they wait (events.py) and
    stop; the failing worker clears its `tirc.team_error`."""

    def on_fail(cg: FunctionCodegen, code: ir.Value) -> None:
        b = cg.b
        err = b.gep(slot, [ir.Constant(I32, 0), ir.Constant(I32, ERROR)], source_etype=ty)
        msg = b.gep(slot, [ir.Constant(I32, 0), ir.Constant(I32, MESSAGE)], source_etype=ty)
        claimed = b.cmpxchg(err, ir.Constant(I32, 0), code, "acq_rel", "monotonic")
        with b.if_then(b.extract_value(claimed, 1)):
            dest = b.load(msg, typ=PTR)
            b.call(cg.ctx.snprintf(), [dest, ir.Constant(I64, ERROR_BUFFER_SIZE),
                                       cg.ctx.string("%s"), cg.ctx.error_buffer])
        if team:
            b.store(ir.Constant(PTR, None), cg.ctx.team_error)
        b.ret_void()

    return on_fail


def omp_thread_num(ctx: ModuleContext, b: ir.IRBuilder) -> ir.Value:
    """This thread's number in the current OpenMP team (0 outside a parallel region)."""
    ctx.uses_openmp = True
    return b.call(ctx.declare("omp_get_thread_num", ir.FunctionType(I32, [])), [])


def omp_num_threads(ctx: ModuleContext, b: ir.IRBuilder) -> ir.Value:
    """The size of the current OpenMP team (1 outside a parallel region)."""
    ctx.uses_openmp = True
    return b.call(ctx.declare("omp_get_num_threads", ir.FunctionType(I32, [])), [])


def team_size(ctx: ModuleContext, b: ir.IRBuilder, extent: ir.Value,
              signed: bool) -> ir.Value:
    """Threads to start: the extent when it is smaller than the default team, else 0 (the
    default). A one-iteration loop then runs on the calling thread alone, and no thread waits
    on a core that another process holds."""
    i64 = ir.IntType(64)
    max_threads = b.call(ctx.declare("omp_get_max_threads", ir.FunctionType(I32, [])), [])
    n = extent
    if n.type.width < 64:
        n = b.sext(n, i64) if signed else b.zext(n, i64)
    small = b.and_(b.icmp_signed(">=", n, ir.Constant(i64, 1)),
                   b.icmp_signed("<", n, b.sext(max_threads, i64)))
    return b.select(small, b.trunc(n, I32), ir.Constant(I32, 0))


def _dynamic_chunks(inner: FunctionCodegen, data: ir.Value, ty: ir.LiteralStructType,
                    counter: int, begin: ir.Value, n: ir.Value, size: int,
                    run: Callable[[list[tuple[str, ir.Value]]], None]) -> None:
    """The worker's loop: take the next `size` iterations from the shared counter until none
    are left, running each chunk with `run(bounds)`."""
    b = inner.b
    ity = n.type
    addr = b.gep(data, [ir.Constant(I32, 0), ir.Constant(I32, counter)], inbounds=True,
                 source_etype=ty)
    head = b.append_basic_block("chunk.next")
    body = b.append_basic_block("chunk.run")
    done = b.append_basic_block("chunk.done")
    b.branch(head)
    b.position_at_end(head)
    start = b.atomic_rmw("add", addr, ir.Constant(ity, size), "monotonic")
    b.cbranch(b.icmp_signed("<", start, n), body, done)
    b.position_at_end(body)
    stop = b.add(start, ir.Constant(ity, size))
    stop = b.select(b.icmp_signed("<", stop, n), stop, n)
    run([("begin", b.add(begin, start)), ("end", b.add(begin, stop))])
    b.branch(head)
    b.position_at_end(done)


def emit_parallel_for(cg: FunctionCodegen, s: For) -> None:
    """Emit `s` (a parallel loop, outside any other parallel loop) as an OpenMP region."""
    ctx, b = cg.ctx, cg.b
    loop_ty = s.loop_var.dtype
    signed = loop_ty.kind != "uint"
    begin = cg.expr_as(s.min, loop_ty)
    extent = cg.expr_as(s.extent, loop_ty)
    loop_ir_ty = begin.type
    narrow = loop_ir_ty.width < 32
    if narrow:
        # a loop over int8/int16 (or their unsigned kin) shares its range out in 32 bits: the
        # thread numbers and the chunk arithmetic do not fit the loop's own type
        widen = b.sext if signed else b.zext
        begin, extent = widen(begin, I32), widen(extent, I32)
    captured = captured_vars(s.body, cg.env)
    values = [cg.env[v] for v in captured]
    ity = begin.type
    ty = ir.LiteralStructType([I32, PTR, ity, ity, *[v.type for v in values], ity])
    counter = FIRST_CAPTURED + len(values)
    slot = cg.alloca(ty, 8)
    message = cg.alloca(ir.ArrayType(I8, ERROR_BUFFER_SIZE), 1)
    pack(b, slot, ty, ERROR, [ir.Constant(I32, 0), message, begin, extent, *values,
                              ir.Constant(ity, 0)])

    worker = ir.Function(ctx.module, ir.FunctionType(VOID, [PTR]),
                         name=ctx.unique_name(f"{cg.fn.name}.parallel"))
    worker.linkage = "internal"
    data = worker.args[0]
    data.name = "data"
    team = bool(s.annotations.get(PARALLEL_TEAM))
    inner = cg.child(worker, {}, _worker_fail(data, ty, team), cg.parallel_depth + 1)
    wb = inner.b
    lo_begin, n, *loaded = unpack(wb, data, ty, BEGIN, 2 + len(values))
    inner.env.update(zip(captured, loaded))
    tid, nth = omp_thread_num(ctx, wb), omp_num_threads(ctx, wb)
    if ity != I32:
        widen_w = wb.sext if signed else wb.zext
        tid, nth = widen_w(tid, ity), widen_w(nth, ity)
    one = ir.Constant(ity, 1)
    chunk = wb.sdiv(wb.sub(wb.add(n, nth), one), nth) if signed else \
        wb.udiv(wb.sub(wb.add(n, nth), one), nth)
    start = wb.mul(tid, chunk)
    stop = wb.add(start, chunk)
    less = wb.icmp_signed("<", stop, n) if signed else wb.icmp_unsigned("<", stop, n)
    stop = wb.select(less, stop, n)
    if team:
        start, stop = tid, wb.add(tid, one)
        error_word = wb.gep(data, [ir.Constant(I32, 0), ir.Constant(I32, ERROR)],
                            source_etype=ty)
        wb.store(error_word, ctx.team_error)

    def chunk(body_cg: FunctionCodegen, args: list[ir.Value]) -> None:
        lo, hi = args[0], args[1]
        if narrow:
            lo, hi = body_cg.b.trunc(lo, loop_ir_ty), body_cg.b.trunc(hi, loop_ir_ty)
        body_cg.serial_loop(s.loop_var, lo, hi, lambda: body_cg.stmt(s.body))

    # The chunk runs in its own function so that its buffer pointers can be noalias; not a
    # team's (a megakernel's workers share event counters and hand data over through them).
    dynamic = s.annotations.get(PARALLEL_CHUNK)
    if isinstance(dynamic, int) and dynamic > 0 and not team:
        _dynamic_chunks(inner, data, ty, counter, lo_begin, n, dynamic,
                        lambda bounds: inner.outline(f"{cg.fn.name}.chunk", captured, bounds,
                                                     chunk))
    else:
        bounds = [("begin", wb.add(lo_begin, start)), ("end", wb.add(lo_begin, stop))]
        inner.outline(f"{cg.fn.name}.chunk", captured, bounds, chunk, noalias=not team)
    if team:
        wb.store(ir.Constant(PTR, None), ctx.team_error)
    inner.finish(None)

    gomp = ctx.declare("GOMP_parallel", ir.FunctionType(VOID, [PTR, PTR, I32, I32]))
    ctx.uses_openmp = True
    if team:
        asked = b.trunc(extent, I32) if extent.type.width > 32 else extent
        threads = b.select(b.icmp_signed(">=", asked, ir.Constant(asked.type, 1)), asked,
                           ir.Constant(asked.type, 1))
        threads = b.zext(threads, I32) if threads.type.width < 32 else threads
    else:
        threads = team_size(ctx, b, extent, signed)
    b.call(gomp, [as_ptr(worker), slot, threads, ir.Constant(I32, 0)])
    (err,) = unpack(b, slot, ty, ERROR, 1)
    failed = b.icmp_signed("!=", err, ir.Constant(I32, 0))
    with b.if_then(failed, likely=False):
        ctx.set_error(b, "%s", [message])
        cg.fail(err)
