"""A fixed batch of mutated samples through the whole pipeline (scripts/pipeline_fuzz.py runs
many more): each compiles or gets a diagnostic, never an internal error."""

from __future__ import annotations

from pathlib import Path

import pytest
from difftest.mutations import corpus, run_one

PROGRAMS = corpus(max_chars=1700)  # the short samples: the batch stays a few seconds


@pytest.mark.parametrize(("target", "seeds"), [(None, range(0, 24)),
                                               ("cuda -arch=sm_90", range(1000, 1008))])
def test_mutated_samples_compile_or_get_a_diagnostic(target: str | None, seeds: range) -> None:
    outcomes = [run_one(seed, PROGRAMS, target) for seed in seeds]
    internal = [f"seed {o.seed} ({o.source}, {o.options}): {o.detail}" for o in outcomes
                if o.result == "internal error"]
    assert not internal, "\n".join(internal)
    assert any(o.result == "ok" for o in outcomes)  # the batch still reaches the backends


RUNNABLE = """\
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((4, 3), "float32"), B: T.Buffer((4,), "int32"), C: T.Buffer((4,), "float32")):
    for i, j in T.grid(4, 3):
        with T.block("s"):
            vi, vj = T.axis.remap("SR", [i, j])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + A[vi, vj] * T.Cast("float32", T.truncmod(B[vi] - 5, 3))
"""

SYMBOLIC = """\
from tvm.script import tir as T

@T.prim_func
def h(a: T.handle, m: T.int64):
    n = T.int64()
    A = T.match_buffer(a, (n, m), "float32")
    for i, j in T.grid(n, m):
        with T.block("s"):
            vi, vj = T.axis.remap("SS", [i, j])
            A[vi, vj] = A[vi, vj] * T.Cast("float32", m)
"""

OUT_OF_BOUNDS = """\
from tvm.script import tir as T

@T.prim_func
def k(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "int32"), C: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("s"):
            vi = T.axis.spatial(4, i)
            C[vi] = A[B[vi] + 9]
"""

UNDEFINED = """\
from tvm.script import tir as T

@T.prim_func
def g(C: T.Buffer((4,), "float32")):
    S = T.alloc_buffer((4,), "float32")
    for i in range(4):
        with T.block("s"):
            vi = T.axis.spatial(4, i)
            C[vi] = S[vi] * T.float32(2)
"""


def test_a_mutated_program_that_compiles_is_run_against_the_interpreter(tmp_path: Path) -> None:
    """`pipeline_fuzz --run`: a program with tensor parameters (constant or symbolic sizes)
    runs in the interpreter and compiled, and the results agree; an access the interpreter
    finds out of bounds fails the -fbounds-check build too; one reading storage nothing
    wrote (undefined: the interpreter's NaN in a result, or results that change with the
    value new integer storage starts with) is skipped."""
    from difftest.mutation_runs import entry, run_mutated
    from tirc.frontend import parse

    assert entry(parse(RUNNABLE))[2] == [((4, 3), "float32"), ((4,), "int32"), ((4,), "float32")]
    assert entry(parse(SYMBOLIC))[2:] == ([((3, 4), "float32"), (None, "int64")],
                                          {"n": 3, "m": 4})
    assert run_mutated(2, SYMBOLIC, 3, False, None, tmp_path).result == "agree"
    assert run_mutated(1, RUNNABLE, 2, True, None, tmp_path).result == "agree"
    oob = run_mutated(1, OUT_OF_BOUNDS, 2, True, None, tmp_path)
    assert (oob.result, oob.detail) == ("agree", "out of bounds")  # the checked build failed
    undefined = run_mutated(1, UNDEFINED, 0, False, None, tmp_path)
    assert (undefined.result, undefined.detail) == ("skipped", "NaN in the interpreter's results")
    ints = UNDEFINED.replace('"float32"', '"int32"').replace("T.float32(2)", "2")
    undefined = run_mutated(1, ints, 0, False, None, tmp_path)
    assert (undefined.result, undefined.detail) == ("skipped", "a read of integer storage "
                                                               "nothing wrote")
