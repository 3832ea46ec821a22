"""Shared by the tuning tests: a small matmul with a sampled schedule, and a measurer whose
times are a fixed function of the decisions (so a search is repeatable and has a known best)."""

from __future__ import annotations

import textwrap
from typing import Any

from tirc.frontend import parse
from tirc.ir.module import IRModule
from tirc.tune.builder import Prepared, prepare
from tirc.tune.machine import Machine
from tirc.tune.records import Trial
from tirc.tune.tasks import Task

MACHINE = Machine(cpu="Test CPU", cores=2, mhz=2000.0, vector_bits=256, fma=True,
                  caches={"L1d": 32768, "L2": 1048576})

MATMUL = textwrap.dedent('''
    @T.prim_func
    def mm(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"),
           C: T.Buffer((64, 64), "float32")):
        T.func_attr({"global_symbol": "mm", "tir.noalias": True})
        for i, j, k in T.grid(64, 64, 64):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


    @S.schedule("mm", target="llvm")
    def mm_sched(sch):
        b = sch.get_block("C")
        i, j, k = sch.get_loops(b)
        ti0, ti1 = sch.sample_perfect_tile(i, n=2, max_innermost_factor=16)
        tj0, tj1 = sch.sample_perfect_tile(j, n=2, max_innermost_factor=32)
        i0, i1 = sch.split(i, factors=[ti0, ti1])
        j0, j1 = sch.split(j, factors=[tj0, tj1])
        u = sch.sample_categorical([0, 1], [0.5, 0.5])
        sch.reorder(i0, j0, k, i1, j1)
        sch.parallel(i0)
        sch.vectorize(j1)
    ''')


def matmul_module() -> IRModule:
    return parse(MATMUL, "mm.tir")


def synthetic_seconds(decisions: dict[str, Any]) -> float:
    """Fastest at tile_i = (8, 8), tile_j = (2, 32), u = 1."""
    ti, tj, u = decisions["tile_i"], decisions["tile_j"], decisions["u"]
    return 1e-3 * (1 + abs(ti[1] - 8) + abs(tj[1] - 32) / 4 + (1 - u))


class FakeMeasurer:
    """Prepares for real (in this process); 'measures' with synthetic_seconds."""

    def __init__(self) -> None:
        self.measured: list[dict[str, Any]] = []   # in the search
        self.final: list[dict[str, Any]] = []      # re-measured at the end
        self.listeners: list[Any] = []

    def prepare(self, task: Task, jobs: list[tuple[dict[str, Any], int]]) -> list[Prepared]:
        return [prepare(task.space, given, seed, MACHINE) for given, seed in jobs]

    def measure(self, task: Task, cands: list[Prepared], phase: str = "search",
                repeats: int | None = None) -> list[Trial]:
        out = []
        for p in cands:
            (self.final if phase == "final" else self.measured).append(p.decisions)
            t = Trial(task.workload, task.name, task.target, task.dims, p.decisions, "ok",
                      [synthetic_seconds(p.decisions)], phase=phase)
            out.append(t)
            for listener in self.listeners:
                listener(task, t)
        return out

    def remeasure(self, task: Task, trials: list[Trial], repeats: int) -> list[Trial]:
        out = []
        for t in trials:
            self.final.append(t.decisions)
            out.append(Trial(task.workload, task.name, task.target, task.dims, t.decisions,
                             "ok", [synthetic_seconds(t.decisions)] * repeats, phase="final"))
        return out

    def close(self) -> None:
        """Nothing to release."""
