"""Helpers for schedule tests: apply a `.tir` text's schedules, print a function, compare
the scheduled and original functions on random inputs with the reference interpreter."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.function import PrimFunc
from tirc.ir.interpreter import run_prim_func
from tirc.ir.module import IRModule
from tirc.ir.printer import print_function, print_module
from tirc.ir.structural import structural_equal
from tirc.passes.pass_base import PassContext
from tirc.passes.schedule.apply import ApplySchedules
from tirc.passes.verify import Verify


def random_args(func: PrimFunc, seed: int = 0, sizes: dict[str, int] | None = None
                ) -> list[Any]:
    """Random arrays for the buffer parameters (symbolic dims from `sizes`)."""
    rng = np.random.default_rng(seed)
    out: list[Any] = []
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is None:
            out.append((sizes or {})[p.name])
            continue
        shape = tuple(int(getattr(d, "value", None) if hasattr(d, "value")
                          else (sizes or {})[d.name]) for d in buf.shape)
        dt = str(buf.dtype)
        if dt.startswith("float"):
            out.append(rng.standard_normal(shape).astype(dt))
        else:
            out.append(rng.integers(-8, 8, shape).astype(dt))
    return out


@dataclass
class Scheduled:
    """A module before and after apply-schedules."""

    before: IRModule
    after: IRModule

    def text(self, name: str) -> str:
        """The printed scheduled function (4-space indents from column 0)."""
        return "\n".join(print_function(self.after[name])) + "\n"  # type: ignore[arg-type]

    def check_same(self, name: str, seeds: tuple[int, ...] = (0, 1), rtol: float = 1e-5,
                   sizes: dict[str, int] | None = None) -> None:
        """The scheduled function is well-formed (verify), computes what the original does
        on random inputs, and its printed text parses back to an equal module."""
        Verify()(self.after, PassContext())
        reparsed = parse(print_module(self.after), "printed.tir")
        assert structural_equal(reparsed, self.after), print_module(self.after)
        f0, f1 = self.before[name], self.after[name]
        assert isinstance(f0, PrimFunc) and isinstance(f1, PrimFunc)
        for seed in seeds:
            a0 = random_args(f0, seed, sizes)
            a1 = [x.copy() if isinstance(x, np.ndarray) else x for x in a0]
            run_prim_func(f0, a0)
            run_prim_func(f1, a1)
            for x, y in zip(a0, a1):
                if isinstance(x, np.ndarray):
                    np.testing.assert_allclose(y, x, rtol=rtol, atol=rtol)


def apply_text(text: str, ctx: PassContext | None = None) -> Scheduled:
    mod = parse(text, "sched.tir")
    return Scheduled(mod, ApplySchedules()(mod, ctx or PassContext()))


def schedule_error(text: str) -> str:
    """The rendered diagnostics of applying the text's schedules (which must fail)."""
    mod = parse(text, "sched.tir")
    with pytest.raises(CompileError) as info:
        ApplySchedules()(mod, PassContext())
    return str(info.value)


@pytest.fixture
def sched() -> Callable[[str], Scheduled]:
    return apply_text


@pytest.fixture
def sched_error() -> Callable[[str], str]:
    return schedule_error


def apply_file(path: str) -> Scheduled:
    from tirc.frontend import parse_file

    mod = parse_file(path)
    return Scheduled(mod, ApplySchedules()(mod, PassContext()))


@pytest.fixture
def sched_file() -> Callable[[str], Scheduled]:
    return apply_file
