"""The GPU interpreter: runs GPU-lowered IR as the device would, threads in lockstep.

After gpu-split-host-device a module has host functions, whose bodies launch kernels with
`tirc.launch_kernel` calls, and kernels in SPMD form: every thread of every block runs the
whole kernel body; a thread-bound loop binds its variable to the thread's index (and runs its
body only when the index is inside the loop's extent) instead of iterating. This interpreter
runs a kernel block by block; within a block, all threads run up to the next barrier
(`T.tvm_storage_sync`), one after another, then all of them continue to the next barrier, and
so on: exactly the guarantees a barrier gives. So shared-memory code (reductions, tiles) is
checked for meaning without a GPU:
- shared buffers are one array per block, local buffers one per thread; shared memory starts
  as NaN (or -7 for integers), as uninitialised device memory would not be zero;
- all threads of a block must reach the same barrier, or none: otherwise an InterpreterError
  (a divergent barrier would hang or misbehave on the device);
- a thread that leaves the kernel early (`return`, which gpu-bounds-record puts after a
  failed bounds check) stops there and no barrier waits for it, as PTX's `exit` releases
  the barriers the exiting threads hold up;
- warp shuffles (`T.tvm_warp_shuffle`, `_up`, `_down`, `_xor`) and `T.tvm_warp_activemask`
  are meeting points of a warp (32 threads by linear index `tx + ty*bx + tz*bx*by`): each
  thread stops there with its operands; once every lane its mask names has arrived (or has
  exited, as PTX's `shfl.sync` waits for the non-exited lanes), each gets the value its source
  lane gave (PTX's rule for the mode and width); activemask gives the lanes at the call, after
  the warp's pending shuffles, so that lanes behind catch up. What the device leaves undefined
  is an InterpreterError: a mask leaving out the caller or naming a lane at a barrier (or
  at another warp call: a deadlock), lanes giving different masks, a read of a lane that is
  not there, a width that is not a power of two up to 32, a warp size other than 32. A warp
  call is taken out of its statement into a let of its own first; one in a statement other
  than a store, evaluate, let, if condition or for bound (a while condition) is refused
  (tirc.ir.interpreter.warp);
- `thread_order="reverse"` runs the threads of each phase in reverse order; `check_races`
  runs both orders and reports a difference in any output, which can only come from threads
  of one phase touching the same memory (a missing barrier).

    GPUInterpreter(mod).call("row_sum", a, b)        # a host function, arrays in place
    check_races(mod, "row_sum", [a, b])              # both orders agree, else InterpreterError
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Generator, Sequence
from typing import Any

import numpy as np
from tirc.ir import intrinsics as intrin
from tirc.ir.expr import Call, StringImm
from tirc.ir.function import PrimFunc
from tirc.ir.gpu.threads import (
    BLOCK_TAGS,
    THREAD_TAGS,
    WARP_ACTIVEMASK,
    WARP_SIZE,
    is_barrier,
    width_ok,
)
from tirc.ir.interpreter.prim_func import DEFAULT_MAX_WHILE, CompiledPrimFunc
from tirc.ir.interpreter.stmt import Run, StmtCompiler
from tirc.ir.interpreter.values import (
    BreakLoop,
    ContinueLoop,
    Env,
    InterpreterError,
    ReturnValue,
    np_dtype,
)
from tirc.ir.interpreter.warp import (
    FULL_MASK,
    BlockState,
    HoistWarpCalls,
    WarpOffer,
    is_warp_call,
)
from tirc.ir.loop_jumps import escaping_loop_jumps
from tirc.ir.module import IRModule
from tirc.ir.span import Span
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    While,
)
from tirc.ir.visitor import any_node

SHARED_SCOPES = ("shared", "shared.dyn")
# The intrinsic-table rules this interpreter runs itself (Intrinsic.interpreted): a kernel
# launch runs the kernel's blocks, their threads in lockstep.
GPU_RULES = ("launch",)
# A statement run as a generator: it yields a barrier's site or a WarpOffer, and receives the
# warp call's result by `send`.
Thread = Generator[Any, Any, Any]
Gen = Callable[[Env], Thread]


def _has_barrier(s: Stmt) -> bool:
    """Whether `s` holds a barrier or a warp call: a thread stops there, so `s` runs as a
    generator."""
    return any_node(s, lambda n: is_barrier(n) or is_warp_call(n))



def _garbage(dtype: np.dtype, size: int) -> np.ndarray:
    if dtype.kind == "f":
        return np.full(size, np.nan, dtype=dtype)
    if dtype.kind == "b":
        return np.ones(size, dtype=dtype)
    return np.full(size, -7, dtype=dtype) if dtype.kind == "i" else np.full(size, 7, dtype=dtype)


def _gen_jumps_caught(body: Gen) -> Gen:
    """A loop body (with a barrier) catching the jumps that target its loop; its generator
    returns True after a break."""

    def run(env: Env) -> Thread:
        try:
            yield from body(env)
        except BreakLoop:
            return True
        except ContinueLoop:
            pass
        return False

    return run


class SpmdCompiler(StmtCompiler):
    """Compiles a kernel body for one thread: thread-bound loops read the thread's index,
    shared buffers come from the block; statements with barriers become generators that
    yield at each barrier."""

    def __init__(self, cpf: CompiledPrimFunc, max_while: int) -> None:
        super().__init__(cpf.ex, max_while)
        self.tag_slots = {tag: self.slots.new(tag) for tag in (*BLOCK_TAGS, *THREAD_TAGS)}
        self.block_slot = self.slots.new("block shared memory")
        self.sites: dict[int, int] = {}
        self.warp_sites = itertools.count()

    def tag_slot(self, s: For) -> int:
        """The slot of a thread-bound loop's hardware index (virtual threads have none)."""
        slot = self.tag_slots.get(s.thread_tag or "")
        if slot is None:
            raise InterpreterError(f"loop '{s.loop_var.name}' is bound to '{s.thread_tag}', "
                                   "which is not a hardware thread axis (virtual threads are "
                                   "serialized by the inject-vthread pass)", s.span)
        return slot

    # ---- closures (no barrier inside) ------------------------------------------------

    def s_For(self, s: For) -> Run:
        if s.kind != ForKind.THREAD_BINDING:
            return super().s_For(s)
        k, tslot = self.slots.of(s.loop_var), self.tag_slot(s)
        fext = self.ex.compile(s.extent)
        body = self.compile(s.body)

        def bind(env: Env) -> None:
            v = env[tslot]
            if v < fext(env):
                env[k] = v
                body(env)

        return bind

    def s_Allocate(self, s: Allocate) -> Run:
        if s.buffer.scope not in SHARED_SCOPES:
            return super().s_Allocate(s)
        get = self._shared(s)
        body = self.compile(s.body)
        dslot = self.slots.of(s.buffer.data)

        def allocate(env: Env) -> None:
            env[dslot] = get(env)
            body(env)

        return allocate

    def _shared(self, s: Allocate) -> Callable[[Env], np.ndarray]:
        """The block's one array for a shared allocation (made by the first thread there)."""
        size_fns = [self.ex.compile(d) for d in s.buffer.shape]
        dtype = np_dtype(s.buffer.dtype)
        key, bslot = id(s), self.block_slot

        def get(env: Env) -> np.ndarray:
            shared = env[bslot]
            if key not in shared:
                shared[key] = _garbage(dtype, int(np.prod([int(f(env)) for f in size_fns])))
            return shared[key]

        return get

    # ---- generators (a barrier inside) -------------------------------------------------

    def gen(self, s: Stmt) -> Gen:
        if not _has_barrier(s):
            run = self.compile(s)

            def plain(env: Env) -> Thread:
                run(env)
                return
                yield  # pragma: no cover - makes this a generator

            return plain
        method = getattr(self, "g_" + type(s).__name__, None)
        if method is None:
            raise InterpreterError(f"the GPU interpreter cannot run a barrier inside "
                                   f"{type(s).__name__}", s.span)
        return method(s)

    def g_Evaluate(self, s: Evaluate) -> Gen:
        site = self.sites.setdefault(id(s), len(self.sites))

        def wait(env: Env) -> Thread:
            yield site

        return wait

    def g_SeqStmt(self, s: SeqStmt) -> Gen:
        parts = [self.gen(x) for x in s.seq]

        def run(env: Env) -> Thread:
            for p in parts:
                yield from p(env)

        return run

    def g_For(self, s: For) -> Gen:
        k = self.slots.of(s.loop_var)
        fmin, fext = self.ex.compile(s.min), self.ex.compile(s.extent)
        body = self.gen(s.body)
        if s.kind == ForKind.THREAD_BINDING:
            tslot = self.tag_slot(s)

            def bound(env: Env) -> Thread:
                v = env[tslot]
                if v < fext(env):
                    env[k] = v
                    yield from body(env)

            return bound

        if escaping_loop_jumps(s.body):
            body = _gen_jumps_caught(body)

        def loop(env: Env) -> Thread:
            lo = fmin(env)
            for v in range(lo, lo + fext(env)):
                env[k] = v
                if (yield from body(env)):
                    return

        return loop

    def g_IfThenElse(self, s: IfThenElse) -> Gen:
        cond = self.ex.compile(s.condition)
        then = self.gen(s.then_case)
        other = self.gen(s.else_case) if s.else_case is not None else None

        def branch(env: Env) -> Thread:
            if cond(env):
                yield from then(env)
            elif other is not None:
                yield from other(env)

        return branch

    def g_While(self, s: While) -> Gen:
        cond, body, limit = self.ex.compile(s.condition), self.gen(s.body), self.max_while
        if escaping_loop_jumps(s.body):
            body = _gen_jumps_caught(body)

        def loop(env: Env) -> Thread:
            n = 0
            while cond(env):
                n += 1
                if n > limit:
                    raise InterpreterError(f"while loop ran more than {limit} iterations")
                if (yield from body(env)):
                    return

        return loop

    def g_LetStmt(self, s: LetStmt) -> Gen:
        k, body = self.slots.of(s.var), self.gen(s.body)
        if is_warp_call(s.value):
            offer = self._warp_offer(s.value, s.span)

            def meet(env: Env) -> Thread:
                env[k] = yield offer(env)
                yield from body(env)

            return meet
        value = self.ex.compile(s.value)

        def let(env: Env) -> Thread:
            env[k] = value(env)
            yield from body(env)

        return let

    def _warp_offer(self, call: Call, span: Span | None) -> Callable[[Env], WarpOffer]:
        """A thread's offer at a warp call: its operands, the width and warp size checked."""
        site, op = next(self.warp_sites), call.op  # one per place (a node may be shared)
        span = call.span or span
        if op == WARP_ACTIVEMASK:
            return lambda env: WarpOffer(site, op, span)
        if len(call.args) != 5:
            raise InterpreterError(f"T.{op} takes 5 operands (mask, value, lane or delta, "
                                   f"width, warp size), not {len(call.args)}", span)
        fmask, fvalue, fb, fwidth, fsize = (self.ex.compile(a) for a in call.args)
        where = WarpOffer(site, op, span).where()

        def offer(env: Env) -> WarpOffer:
            width, size = int(fwidth(env)), int(fsize(env))
            if size != WARP_SIZE:
                raise InterpreterError(f"{where}: warp size {size}; CUDA's warps have "
                                       f"{WARP_SIZE} threads", span)
            if not width_ok(width):
                raise InterpreterError(f"{where}: width {width} is not a power of two from 1 "
                                       f"to {WARP_SIZE}", span)
            return WarpOffer(site, op, span, int(fmask(env)) & FULL_MASK, fvalue(env),
                             int(fb(env)), width)

        return offer

    def g_AttrStmt(self, s: AttrStmt) -> Gen:
        return self.gen(s.body)

    def g_AssertStmt(self, s: AssertStmt) -> Gen:
        cond, body, message, span = self.ex.compile(s.condition), self.gen(s.body), s.message, \
            s.span

        def check(env: Env) -> Thread:
            if not cond(env):
                raise InterpreterError(message, span)
            yield from body(env)

        return check

    def g_Allocate(self, s: Allocate) -> Gen:
        dslot = self.slots.of(s.buffer.data)
        body = self.gen(s.body)
        get = self._shared(s) if s.buffer.scope in SHARED_SCOPES else \
            self._allocator(s.buffer, s.init)

        def allocate(env: Env) -> Thread:
            env[dslot] = get(env)
            yield from body(env)

        return allocate


class CompiledKernel:
    """A kernel compiled once; `launch` runs it over a grid of blocks."""

    def __init__(self, func: PrimFunc, thread_order: str, max_while: int) -> None:
        if thread_order not in ("forward", "reverse"):
            raise ValueError(f"thread_order must be 'forward' or 'reverse', not {thread_order!r}")
        self.func = func
        self.reverse = thread_order == "reverse"
        self.cpf = CompiledPrimFunc(func, max_while)
        self.spmd = SpmdCompiler(self.cpf, max_while)
        # The body with its warp calls in lets of their own (kept: sites are node ids).
        self.hoisted = HoistWarpCalls().visit(func.body)
        self.body = self.spmd.gen(self.hoisted)
        self.grid: tuple[int, int, int] = (1, 1, 1)
        self.block: tuple[int, int, int] = (1, 1, 1)
        # The argument binding of CompiledPrimFunc, then the whole grid instead of the body.
        self.cpf.body = self._run_grid

    def launch(self, grid: Sequence[int], block: Sequence[int], args: Sequence[Any]) -> None:
        if any(int(g) < 0 for g in grid) or any(int(b) <= 0 for b in block):
            raise InterpreterError(f"kernel {self.func.name}: bad launch shape grid "
                                   f"{tuple(grid)} block {tuple(block)}")
        self.grid = tuple(int(g) for g in grid)  # type: ignore[assignment]
        self.block = tuple(int(b) for b in block)  # type: ignore[assignment]
        self.cpf(*args)

    def _run_grid(self, env: Env) -> None:
        gx, gy, gz = self.grid
        for bz, by, bx in itertools.product(range(gz), range(gy), range(gx)):
            self._run_block(env, (bx, by, bz))

    def _run_block(self, env: Env, index: tuple[int, int, int]) -> None:
        tags = self.spmd.tag_slots
        block_env = list(env)
        block_env[self.spmd.block_slot] = {}
        for tag, v in zip(BLOCK_TAGS, index):
            block_env[tags[tag]] = v
        tx_n, ty_n, tz_n = self.block
        threads: dict[int, Thread] = {}  # by linear index, in the order they run
        for tz, ty, tx in itertools.product(range(tz_n), range(ty_n), range(tx_n)):
            t_env = list(block_env)
            for tag, v in zip(THREAD_TAGS, (tx, ty, tz)):
                t_env[tags[tag]] = v
            threads[tx + (ty + tz * ty_n) * tx_n] = self.body(t_env)
        order = list(reversed(threads)) if self.reverse else list(threads)
        block = BlockState(f"kernel {self.func.name}, block {index}", len(order))
        resume: dict[int, Any] = dict.fromkeys(order)  # runnable threads: what each is sent
        phase = 0
        while True:
            for t in order:
                if t not in resume:
                    continue
                try:
                    stop = threads[t].send(resume.pop(t))
                except StopIteration:
                    block.finished += 1
                    block.gone.add(t)
                    continue
                except ReturnValue:  # an early `return` (a failed bounds check): exits
                    block.gone.add(t)  # release barriers and warp calls
                    continue
                if isinstance(stop, WarpOffer):
                    block.at_warp[t] = stop
                else:
                    block.at_barrier[t] = stop
            if block.at_warp:
                resume = block.meet_warps()
                continue
            waiting = block.at_barrier
            if not waiting:
                return
            if block.finished:
                raise InterpreterError(
                    f"{block.name}: {block.finished} thread(s) finished while "
                    f"{len(waiting)} wait at a barrier (phase {phase}): a divergent barrier")
            if len(set(waiting.values())) > 1:
                raise InterpreterError(
                    f"{block.name}: the threads reached different barriers (phase {phase}): "
                    "a divergent barrier")
            resume, block.at_barrier = dict.fromkeys(waiting), {}
            phase += 1



def _launch_call(s: Evaluate) -> Call | None:
    v = s.value
    return v if isinstance(v, Call) and v.op == intrin.LAUNCH_KERNEL else None


class _HostCompiler(StmtCompiler):
    """Host statements: `tirc.launch_kernel` calls run kernels; the rest as usual."""

    def __init__(self, cpf: CompiledPrimFunc, gpu: GPUInterpreter) -> None:
        super().__init__(cpf.ex, gpu.max_while)
        self.gpu = gpu
        self.storage = {p: b.data for p, b in cpf.func.buffer_map.items()}

    def s_Evaluate(self, s: Evaluate) -> Run:
        call = _launch_call(s)
        if call is None:
            return super().s_Evaluate(s)
        name = call.args[0]
        if not isinstance(name, StringImm):
            raise InterpreterError("tirc.launch_kernel needs the kernel's name first", s.span)
        dims = [self.ex.compile(d) for d in call.args[1:7]]
        # A handle parameter stands for its buffer's storage.
        args = [self.ex.compile(self.storage.get(a, a)) for a in call.args[7:]]
        gpu, kernel_name = self.gpu, name.value

        def launch(env: Env) -> None:
            shape = [int(f(env)) for f in dims]
            gpu.kernel(kernel_name).launch(shape[:3], shape[3:], [f(env) for f in args])

        return launch


class GPUInterpreter:
    """Runs the host functions of a GPU-lowered module (see the module docstring)."""

    def __init__(self, mod: IRModule, thread_order: str = "forward",
                 max_while_iterations: int = DEFAULT_MAX_WHILE) -> None:
        self.mod = mod
        self.thread_order = thread_order
        self.max_while = max_while_iterations
        self._kernels: dict[str, CompiledKernel] = {}
        self._hosts: dict[str, CompiledPrimFunc] = {}

    def kernel(self, name: str) -> CompiledKernel:
        compiled = self._kernels.get(name)
        if compiled is None:
            func = self.mod.functions.get(name)
            if not isinstance(func, PrimFunc):
                raise InterpreterError(f"no kernel named '{name}' in the module")
            compiled = CompiledKernel(func, self.thread_order, self.max_while)
            self._kernels[name] = compiled
        return compiled

    def call(self, name: str, *args: Any) -> None:
        """Run host function `name` on numpy arrays (in place), launching its kernels."""
        host = self._hosts.get(name)
        if host is None:
            func = self.mod.functions.get(name)
            if not isinstance(func, PrimFunc):
                raise InterpreterError(f"no loop function named '{name}' in the module")
            host = CompiledPrimFunc(func, self.max_while)
            host.body = _HostCompiler(host, self).compile(func.body)
            self._hosts[name] = host
        host(*args)

    def launch(self, kernel: str, grid: Sequence[int], block: Sequence[int],
               *args: Any) -> None:
        """Run one kernel directly over `grid` blocks of `block` threads."""
        self.kernel(kernel).launch(grid, block, args)


def run_gpu_func(mod: IRModule, name: str, args: Sequence[Any],
                 thread_order: str = "forward") -> None:
    """Run host function `name` of a GPU-lowered module on `args`, in place."""
    GPUInterpreter(mod, thread_order).call(name, *args)


def check_races(mod: IRModule, name: str, args: Sequence[Any]) -> None:
    """Run `name` with threads in forward and in reverse order (on copies, then on `args`);
    raise InterpreterError when any array ends up different: threads of one phase then touch
    the same memory, which a barrier must separate."""
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_gpu_func(mod, name, copies, "reverse")
    run_gpu_func(mod, name, args, "forward")
    for k, (a, b) in enumerate(zip(args, copies)):
        if isinstance(a, np.ndarray) and not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
            bad = int(np.sum(a != b))
            raise InterpreterError(f"{name}: argument {k} differs between forward and reverse "
                                   f"thread order in {bad} element(s): threads of one phase "
                                   "share memory without a barrier between them")


__all__ = ["CompiledKernel", "GPUInterpreter", "InterpreterError", "check_races",
           "run_gpu_func"]
