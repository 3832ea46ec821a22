"""The builders: candidates scheduled, estimated and compiled in a pool of worker processes.

Two kinds of job: `prepare` applies a candidate's decisions (a primitive's refusal discards it
here, before anything is built) and returns its decisions, its scheduled function and its
roofline estimate; `build` lowers a scheduled function through the rest of the pipeline and
writes a shared object. The pool has one worker per core; the tuner runs it only while the
runner is idle, so that builds never disturb a timing.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from tirc.ir.diagnostics import CompileError
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.passes.schedule.decisions import Decision
from tirc.tune.machine import Machine
from tirc.tune.roofline import Estimate, estimate
from tirc.tune.space import Space

SKIPPED_PASSES = ("apply-schedules", "default-schedule")  # the candidate is scheduled already


@dataclass
class Prepared:
    """A candidate after its decisions were applied (status "ok") or refused ("invalid")."""

    status: str
    decisions: dict[str, Any]
    taken: tuple[Decision, ...] = ()
    func: PrimFunc | None = None
    estimate: Estimate | None = None
    error: str = ""


@dataclass
class Built:
    """A compiled candidate: the library's path, or why it did not build."""

    status: str
    path: str = ""
    error: str = ""
    seconds: float = 0.0


def prepare(space: Space, given: Mapping[str, Any], seed: int, machine: Machine) -> Prepared:
    """Apply `given` (the rest drawn with `seed`) and estimate the result."""
    try:
        cand = space.apply(given, seed)
    except CompileError as e:
        return Prepared("invalid", dict(given), error=str(e).strip().splitlines()[0])
    try:
        est = estimate(cand.func, machine)
    except CompileError as e:
        return Prepared("invalid", cand.values, error=str(e).strip().splitlines()[0])
    return Prepared("ok", cand.values, cand.decisions, cand.func, est)


def build(func: PrimFunc, path: str, target: str, opt_level: int) -> Built:
    """Lower `func` (scheduled) through the default pipeline (but the scheduling steps) and
    write a library to `path`."""
    start = time.perf_counter()
    try:
        from tirc.driver import emit

        emit(IRModule(functions={func.name: func}), "so", target, opt_level, out_path=path,
             disabled=SKIPPED_PASSES)
    except CompileError as e:
        return Built("build_error", error=str(e).strip().splitlines()[0],
                     seconds=time.perf_counter() - start)
    except Exception as e:  # an internal error in one candidate is that candidate's failure
        return Built("build_error", error=f"{type(e).__name__}: {e}",
                     seconds=time.perf_counter() - start)
    return Built("ok", path, seconds=time.perf_counter() - start)


def _warm() -> None:
    """Import what the jobs need once per worker, before the first job arrives."""
    import tirc.backends  # noqa: F401
    import tirc.driver  # noqa: F401
    from tirc.passes.registry import all_passes

    all_passes()


class BuilderPool:
    """`workers` processes running prepare and build jobs."""

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self.pool: ProcessPoolExecutor | None = None

    def _get(self) -> ProcessPoolExecutor:
        if self.pool is None:
            ctx = multiprocessing.get_context("spawn")
            self.pool = ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=_warm)
        return self.pool

    def start(self) -> None:
        """Start the workers now (they import tirc while the tuner does other work)."""
        pool = self._get()
        for _ in range(self.workers):
            pool.submit(int)

    def prepare(self, space: Space, jobs: list[tuple[dict[str, Any], int]],
                machine: Machine) -> list[Prepared]:
        return self._run([(prepare, (space, given, seed, machine)) for given, seed in jobs],
                         lambda e: Prepared("invalid", {}, error=e))

    def build(self, jobs: list[tuple[PrimFunc, str]], target: str,
              opt_level: int) -> list[Built]:
        return self._run([(build, (func, path, target, opt_level)) for func, path in jobs],
                         lambda e: Built("build_error", error=e))

    def _run(self, calls: list[tuple[Any, tuple[Any, ...]]], failed: Any) -> list[Any]:
        """Results in order; a worker that dies (a crash in LLVM, say) fails only the jobs
        it took, and the pool is started again for the next batch."""
        pool = self._get()
        futures = [pool.submit(fn, *args) for fn, args in calls]
        out = []
        for f in futures:
            try:
                out.append(f.result())
            except Exception as e:
                out.append(failed(f"{type(e).__name__}: {e}"))
        if any(isinstance(f.exception(), BrokenProcessPool) for f in futures):
            self.close()
        return out

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None

