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
- `thread_order="reverse"` runs the threads of each phase in reverse order; `check_races`
  runs both orders and reports a difference in any output, which can only come from threads
  of one phase touching the same memory (a missing barrier).

    GPUInterpreter(mod).call("row_sum", a, b)        # a host function, arrays in place
    check_races(mod, "row_sum", [a, b])              # both orders agree, else InterpreterError
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from tirc.ir import intrinsics as intrin
from tirc.ir.expr import Call, StringImm
from tirc.ir.function import PrimFunc
from tirc.ir.gpu.threads import BLOCK_TAGS, THREAD_TAGS, is_barrier
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
from tirc.ir.loop_jumps import escaping_loop_jumps
from tirc.ir.module import IRModule
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
from tirc.ir.visitor import post_order_visit

SHARED_SCOPES = ("shared", "shared.dyn")
# The intrinsic-table rules this interpreter runs itself (Intrinsic.interpreted): a kernel
# launch runs the kernel's blocks, their threads in lockstep.
GPU_RULES = ("launch",)

Gen = Callable[[Env], Iterator[int]]


def _has_barrier(s: Stmt) -> bool:
    found = []
    post_order_visit(s, lambda n: found.append(n) if isinstance(n, Evaluate) and is_barrier(n)
                     else None)
    return bool(found)


def _garbage(dtype: np.dtype, size: int) -> np.ndarray:
    if dtype.kind == "f":
        return np.full(size, np.nan, dtype=dtype)
    if dtype.kind == "b":
        return np.ones(size, dtype=dtype)
    return np.full(size, -7, dtype=dtype) if dtype.kind == "i" else np.full(size, 7, dtype=dtype)


def _gen_jumps_caught(body: Gen) -> Gen:
    """A loop body (with a barrier) catching the jumps that target its loop; its generator
    returns True after a break."""

    def run(env: Env) -> Iterator[int]:
        try:
            yield from body(env)
        except BreakLoop:
            return True  # type: ignore[misc]
        except ContinueLoop:
            pass
        return False  # type: ignore[misc]

    return run  # type: ignore[return-value]


class SpmdCompiler(StmtCompiler):
    """Compiles a kernel body for one thread: thread-bound loops read the thread's index,
    shared buffers come from the block; statements with barriers become generators that
    yield at each barrier."""

    def __init__(self, cpf: CompiledPrimFunc, max_while: int) -> None:
        super().__init__(cpf.ex, max_while)
        self.tag_slots = {tag: self.slots.new(tag) for tag in (*BLOCK_TAGS, *THREAD_TAGS)}
        self.block_slot = self.slots.new("block shared memory")
        self.sites: dict[int, int] = {}

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

            def plain(env: Env) -> Iterator[int]:
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

        def wait(env: Env) -> Iterator[int]:
            yield site

        return wait

    def g_SeqStmt(self, s: SeqStmt) -> Gen:
        parts = [self.gen(x) for x in s.seq]

        def run(env: Env) -> Iterator[int]:
            for p in parts:
                yield from p(env)

        return run

    def g_For(self, s: For) -> Gen:
        k = self.slots.of(s.loop_var)
        fmin, fext = self.ex.compile(s.min), self.ex.compile(s.extent)
        body = self.gen(s.body)
        if s.kind == ForKind.THREAD_BINDING:
            tslot = self.tag_slot(s)

            def bound(env: Env) -> Iterator[int]:
                v = env[tslot]
                if v < fext(env):
                    env[k] = v
                    yield from body(env)

            return bound

        if escaping_loop_jumps(s.body):
            body = _gen_jumps_caught(body)

        def loop(env: Env) -> Iterator[int]:
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

        def branch(env: Env) -> Iterator[int]:
            if cond(env):
                yield from then(env)
            elif other is not None:
                yield from other(env)

        return branch

    def g_While(self, s: While) -> Gen:
        cond, body, limit = self.ex.compile(s.condition), self.gen(s.body), self.max_while
        if escaping_loop_jumps(s.body):
            body = _gen_jumps_caught(body)

        def loop(env: Env) -> Iterator[int]:
            n = 0
            while cond(env):
                n += 1
                if n > limit:
                    raise InterpreterError(f"while loop ran more than {limit} iterations")
                if (yield from body(env)):
                    return

        return loop

    def g_LetStmt(self, s: LetStmt) -> Gen:
        k, value, body = self.slots.of(s.var), self.ex.compile(s.value), self.gen(s.body)

        def let(env: Env) -> Iterator[int]:
            env[k] = value(env)
            yield from body(env)

        return let

    def g_AttrStmt(self, s: AttrStmt) -> Gen:
        return self.gen(s.body)

    def g_AssertStmt(self, s: AssertStmt) -> Gen:
        cond, body, message, span = self.ex.compile(s.condition), self.gen(s.body), s.message, \
            s.span

        def check(env: Env) -> Iterator[int]:
            if not cond(env):
                raise InterpreterError(message, span)
            yield from body(env)

        return check

    def g_Allocate(self, s: Allocate) -> Gen:
        dslot = self.slots.of(s.buffer.data)
        body = self.gen(s.body)
        get = self._shared(s) if s.buffer.scope in SHARED_SCOPES else \
            self._allocator(s.buffer, s.init)

        def allocate(env: Env) -> Iterator[int]:
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
        self.body = self.spmd.gen(func.body)
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
        threads = list(itertools.product(range(tz_n), range(ty_n), range(tx_n)))
        if self.reverse:
            threads.reverse()
        running: list[Iterator[int]] = []
        for tz, ty, tx in threads:
            t_env = list(block_env)
            for tag, v in zip(THREAD_TAGS, (tx, ty, tz)):
                t_env[tags[tag]] = v
            running.append(self.body(t_env))
        phase = 0
        while running:
            waiting: list[tuple[Iterator[int], int]] = []
            done = 0
            for g in running:
                try:
                    waiting.append((g, next(g)))
                except StopIteration:
                    done += 1
                except ReturnValue:
                    pass  # an early `return` (a failed bounds check): exits release barriers
            if waiting and done:
                raise InterpreterError(
                    f"kernel {self.func.name}, block {index}: {done} thread(s) finished while "
                    f"{len(waiting)} wait at a barrier (phase {phase}): a divergent barrier")
            if len({site for _, site in waiting}) > 1:
                raise InterpreterError(
                    f"kernel {self.func.name}, block {index}: the threads reached different "
                    f"barriers (phase {phase}): a divergent barrier")
            running = [g for g, _ in waiting]
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
