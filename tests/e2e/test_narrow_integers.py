"""Loops, indices and guards in integer types that wrap (int8, int16, the unsigned ones) and
casts that narrow: the library at -O0, -O1 and -O3 equals the interpreter. Each program is
one an optimization used to get wrong: a guard whose lanes are not contiguous once the type
wraps (vectorize), a guard hoisted out of a loop as if it were linear (unswitch-guards), a
flat offset computed in the loops' int8 (flatten-buffers), a narrowing cast whose bound kept
one end (the simplifier), and a parallel loop over a uint8 variable (codegen)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from difftest.builds import compile_module, interpret_loop, loop_labels, run_loop
from difftest.harness import Build, Checker, text_programs

PROGRAMS = '''
@T.prim_func
def vector_guard(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
    for i in T.vectorized(16):
        if T.Cast("uint8", i) * T.uint8(16) + T.uint8(16) < T.uint8(40):
            B[i] = A[i]

@T.prim_func
def vector_guard_int8(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
    for i in T.vectorized(T.int8(16)):
        if i * T.int8(16) + T.int8(16) < T.int8(40):
            B[i] = A[i]

@T.prim_func
def hoisted_guard(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32")):
    for o in range(4):
        for j in T.serial(T.int8(16)):
            if j * T.int8(16) + T.Cast("int8", o) < T.int8(40):
                B[o * 16 + T.Cast("int32", j)] = A[o * 16 + T.Cast("int32", j)]

@T.prim_func
def int8_loops_2d(A: T.Buffer((8, 32), "int32"), B: T.Buffer((256,), "int32")):
    for i in T.serial(T.int8(8)):
        for j in T.serial(T.int8(32)):
            B[T.Cast("int32", i) * 32 + T.Cast("int32", j)] = A[i, j]

@T.prim_func
def narrowing_cast(A: T.Buffer((4,), "int64"), B: T.Buffer((4,), "int32")):
    for i in range(4):
        B[i] = T.Select(T.Cast("int32", T.max(A[i], T.int64(0))) >= 0, 1, 0)

@T.prim_func
def parallel_uint8(A: T.Buffer((255,), "int32"), B: T.Buffer((255,), "int32")):
    for i in T.parallel(T.uint8(255)):
        B[i] = A[i] + 1
'''


def _args(shapes: list[tuple[tuple[int, ...], str]]):  # noqa: ANN202 (a factory)
    def make(rng: np.random.Generator) -> list[np.ndarray]:
        out = []
        for shape, dt in shapes:
            if dt == "int64":
                out.append(np.array([5, 2**31, 2**32 + 7, 3 * 2**31], dtype=np.int64))
            else:
                out.append(rng.integers(-1000, 1000, size=shape).astype(dt))
        return out
    return make


ARGS = {
    "vector_guard": _args([((16,), "int32"), ((16,), "int32")]),
    "vector_guard_int8": _args([((16,), "int32"), ((16,), "int32")]),
    "hoisted_guard": _args([((64,), "int32"), ((64,), "int32")]),
    "int8_loops_2d": _args([((8, 32), "int32"), ((256,), "int32")]),
    "narrowing_cast": _args([((4,), "int64"), ((4,), "int32")]),
    "parallel_uint8": _args([((255,), "int32"), ((255,), "int32")]),
}


@pytest.mark.parametrize("level", [0, 1, 3])
def test_wrapping_integers_compile_as_the_interpreter_runs_them(level: int,
                                                                tmp_path: Path) -> None:
    checker = Checker(tmp_path, compile_module, interpret_loop, run_loop, loop_labels)
    report = checker.check(text_programs(PROGRAMS, ARGS), [Build(level)])
    assert report.programs == len(ARGS)
    assert not report.findings, [str(f) for f in report.findings]
