"""`parallel` loops as OpenMP regions: an outlined worker called through `GOMP_parallel`.

The caller packs every value the loop body uses into a struct `{i32 error, ptr message,
begin, extent, captured...}` and calls `GOMP_parallel(worker, &struct, 0, 0)` (0 threads: the
OpenMP default). Each worker takes a static chunk `[tid * chunk, min(extent, (tid + 1) * chunk))`
with `chunk = ceil(extent / num_threads)` from `omp_get_thread_num`/`omp_get_num_threads`.
Parallel loops nested inside run serially. A loop annotated `"parallel.team"` (the megakernel
runtime's region) asks for `extent` threads and runs its body exactly once on every thread of
the team, with the loop variable the thread number (the body reads the team size with
`tirc.omp_num_threads()`; a team may be smaller than asked for), so a barrier inside the body
meets every thread. A failing worker stores its error code and the
address of its thread's message; the caller copies that message into its own thread's buffer.
A team's workers find their region's error word through the thread-local `tirc.team_error`,
so that a worker waiting on an event gives up when another one has failed (no hang).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir
from llvmlite.ir import instructions
from tirc.backends.llvm.context import ModuleContext, as_ptr
from tirc.backends.llvm.outline import captured_vars, pack, unpack
from tirc.backends.llvm.types import I32, PTR, VOID
from tirc.ir.attrs import PARALLEL_TEAM
from tirc.ir.stmt import For

if TYPE_CHECKING:
    from tirc.backends.llvm.function import FunctionCodegen

ERROR, MESSAGE, BEGIN, EXTENT, FIRST_CAPTURED = range(5)


def _store_relaxed(b: ir.IRBuilder, value: ir.Value, ptr: ir.Value, align: int) -> None:
    """An atomic monotonic store (llvmlite's store_atomic rejects opaque pointers)."""
    b._insert(instructions.StoreAtomicInstr(b.block, value, ptr, "monotonic", align))


def _worker_fail(slot: ir.Value, ty: ir.LiteralStructType, team: bool):
    """A failing worker stores its code and message. In a team (a megakernel, whose workers
    wait on each other) the first failure wins, and the others, seeing the error word set while
    they wait (events.py), stop without overwriting it."""
    def on_fail(cg: FunctionCodegen, code: ir.Value) -> None:
        b = cg.b
        err = b.gep(slot, [ir.Constant(I32, 0), ir.Constant(I32, ERROR)], source_etype=ty)
        msg = b.gep(slot, [ir.Constant(I32, 0), ir.Constant(I32, MESSAGE)], source_etype=ty)
        if team:
            first = b.cmpxchg(err, ir.Constant(I32, 0), code, "seq_cst", "seq_cst")
            with b.if_then(b.extract_value(first, 1)):
                _store_relaxed(b, cg.ctx.error_buffer, msg, 8)
            b.store(ir.Constant(PTR, None), cg.ctx.team_error)
        else:
            _store_relaxed(b, code, err, 4)
            _store_relaxed(b, cg.ctx.error_buffer, msg, 8)
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


def emit_parallel_for(cg: FunctionCodegen, s: For) -> None:
    """Emit `s` (a parallel loop, outside any other parallel loop) as an OpenMP region."""
    ctx, b = cg.ctx, cg.b
    loop_ty = s.loop_var.dtype
    begin = cg.expr_as(s.min, loop_ty)
    extent = cg.expr_as(s.extent, loop_ty)
    captured = captured_vars(s.body, cg.env)
    values = [cg.env[v] for v in captured]
    ity = begin.type
    ty = ir.LiteralStructType([I32, PTR, ity, ity, *[v.type for v in values]])
    slot = cg.alloca(ty, 8)
    pack(b, slot, ty, ERROR, [ir.Constant(I32, 0), ir.Constant(PTR, None), begin, extent,
                              *values])

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
    signed = loop_ty.kind != "uint"
    widen = wb.sext if signed else wb.zext
    if ity != I32:
        tid, nth = widen(tid, ity), widen(nth, ity)
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
    bounds = [("begin", wb.add(lo_begin, start)), ("end", wb.add(lo_begin, stop))]

    def chunk(body_cg: FunctionCodegen, args: list[ir.Value]) -> None:
        body_cg.serial_loop(s.loop_var, args[0], args[1], lambda: body_cg.stmt(s.body))

    # The chunk runs in its own function so that its buffer pointers can be noalias; not a
    # team's (a megakernel's workers share event counters and hand data over through them).
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
    err, msg = unpack(b, slot, ty, ERROR, 2)
    failed = b.icmp_signed("!=", err, ir.Constant(I32, 0))
    with b.if_then(failed, likely=False):
        elsewhere = b.icmp_unsigned("!=", msg, ctx.error_buffer)
        with b.if_then(elsewhere):
            ctx.set_error(b, "%s", [msg])
        cg.fail(err)
