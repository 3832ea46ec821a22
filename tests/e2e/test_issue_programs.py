"""Every wrong program of issue 16 is diagnosed at compile time, and those whose fault is an
access out of bounds are also trapped at run time under -fbounds-check (built with the static
check left out, so that the run-time check is what catches them): the call fails with code -5
and a message naming the place, the buffer, the indices and the shape, never garbage or a
crash. Valid programs give the same results with and without -fbounds-check, also inside
parallel and vectorized loops and megakernels, for every value of a symbolic size.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from tirc.cli.main import cli
from tirc.runtime import TircError, load


def compile_tir(tmp: Path, name: str, text: str, *flags: str) -> tuple[int, str, Path]:
    """`tirc NAME.tir -o NAME.so FLAGS...`: exit code, stderr, and the library's path."""
    (tmp / f"{name}.tir").write_text(text)
    out = f"{name}{''.join(f.strip('-=') for f in flags)}.so"
    here = os.getcwd()
    os.chdir(tmp)  # messages name the file as given: f.tir
    try:
        r = CliRunner().invoke(cli, [f"{name}.tir", "-o", out, *flags])
    finally:
        os.chdir(here)
    return r.exit_code, r.stderr, tmp / out


def zeros(*shape: int) -> np.ndarray:
    return np.zeros(shape, np.float32)


def grid_program(name: str, a: str, b: str, loops: str, block: str) -> str:
    return f'''@T.prim_func
def {name}(A: T.Buffer({a}, "float32"), B: T.Buffer({b}, "float32")):
    for {loops}:
        with T.block("B"):
{block}
'''


# name, text, what the compiler says, the arguments of a call, what that call's check says
OUT_OF_BOUNDS = [
    ("last_columns", grid_program("f", "(16, 16)", "(16, 16)", "i, j in T.grid(16, 16)", """\
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj + 2]"""),
     "f.tir:6:25: error: out-of-bounds read of A[vi, vj + 2]: the index in dimension 1 "
     "reaches 17 at j = 15", [zeros(16, 16), zeros(16, 16)],
     "f.tir:6:25: out-of-bounds read of A[0, 16], shape (16, 16)"),
    ("modulo", grid_program("f", "(16,)", "(32,)", "i in range(32)", """\
            vi = T.axis.spatial(32, i)
            B[vi] = A[(vi * 7) % 32]"""),
     "f.tir:6:21: error: out-of-bounds read of A[vi * 7 % 32]: the index in dimension 0 "
     "reaches 31 at i = 9", [zeros(16), zeros(32)],
     "f.tir:6:21: out-of-bounds read of A[21], shape (16,)"),
    ("far_row", grid_program("f", "(16, 16)", "(16, 16)", "i, j in T.grid(16, 16)", """\
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi + 4000, vj] = A[vi, vj]"""),
     "f.tir:6:13: error: out-of-bounds write to B[vi + 4000, vj]: the index in dimension 0 "
     "reaches 4015 at i = 15", [zeros(16, 16), zeros(16, 16)],
     "f.tir:6:13: out-of-bounds write to B[4000, 0], shape (16, 16)"),
    ("far_negative", grid_program("f", "(16,)", "(16,)", "i in range(16)", """\
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi - 100000000]"""),
     "f.tir:6:21: error: out-of-bounds read of A[vi - 100000000]: the index in dimension 0 "
     "reaches -100000000 at i = 0", [zeros(16), zeros(16)],
     "f.tir:6:21: out-of-bounds read of A[-100000000], shape (16,)"),
    ("square_binding", grid_program("f", "(14,)", "(14,)", "i, j in T.grid(5, 4)", """\
            v = T.axis.spatial(14, i * i + j)
            B[v] = A[v] + T.float32(1)"""),
     "f.tir:5:36: error: block 'B': iteration variable 'v' is bound to i * i + j, which "
     "reaches 19 at i = 4, j = 3, outside its domain [0, 14)", [zeros(14), zeros(14)],
     "f.tir:5:36: block 'B': v = 16 is outside its domain [0, 14)"),
]

RACES = [
    ("parallel_reduction", '''@T.prim_func
def f(A: T.Buffer((1024,), "float32"), B: T.Buffer((1,), "float32")):
    for k in T.parallel(1024):
        with T.block("B"):
            vk = T.axis.reduce(1024, k)
            with T.init():
                B[0] = T.float32(0)
            B[0] = B[0] + A[vk]
''', 'f.tir:3:5: error: T.parallel: loop k carries a dependence (it is bound to reduction '
     'variable vk of block "B")'),
    ("parallel_adds", '''@T.prim_func
def f(A: T.Buffer((1024,), "float32"), B: T.Buffer((1,), "float32")):
    for i in T.parallel(1024):
        B[0] = B[0] + A[i]
''', "f.tir:3:5: error: T.parallel: loop i carries a dependence: every iteration of i writes "
     "B[0], which every iteration reads"),
]

NO_INIT = '''@T.prim_func
def f(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 16):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            B[vi] = B[vi] + A[vi, vk]
'''


@pytest.mark.parametrize("case", OUT_OF_BOUNDS, ids=[c[0] for c in OUT_OF_BOUNDS])
def test_out_of_bounds_diagnosed_at_compile_time(case: tuple[Any, ...], tmp_path: Path) -> None:
    _, text, message, _, _ = case
    code, stderr, out = compile_tir(tmp_path, "f", text)
    assert code == 1 and stderr.startswith(message), stderr
    assert not out.exists()


@pytest.mark.parametrize("level", ["-O0", "-O3"])
@pytest.mark.parametrize("case", OUT_OF_BOUNDS, ids=[c[0] for c in OUT_OF_BOUNDS])
def test_out_of_bounds_trapped_at_run_time(case: tuple[Any, ...], level: str,
                                           tmp_path: Path) -> None:
    _, text, _, args, message = case
    code, stderr, out = compile_tir(tmp_path, "f", text, "--disable-pass", "static-check",
                                    "-fbounds-check", level)
    assert code == 0, stderr
    with pytest.raises(TircError) as err:
        load(out).f(*args)
    assert err.value.code == -5
    if level == "-O0":
        assert str(err.value) == message
    else:
        # -O3 runs the rows in parallel: the first worker to fail reports its own element
        pattern = re.sub(r"\\\[.*?\\\]", lambda m: re.sub(r"\d+", r"\\d+", m.group()),
                         re.escape(message))
        assert re.fullmatch(pattern, str(err.value)), str(err.value)


@pytest.mark.parametrize("case", RACES, ids=[c[0] for c in RACES])
def test_races_diagnosed_at_compile_time(case: tuple[str, str, str], tmp_path: Path) -> None:
    _, text, message = case
    code, stderr, _ = compile_tir(tmp_path, "f", text)
    assert code == 1 and stderr.startswith(message), stderr


def test_missing_init_is_a_warning_and_an_error_under_werror(tmp_path: Path) -> None:
    code, stderr, out = compile_tir(tmp_path, "f", NO_INIT)
    assert code == 0 and stderr.startswith("f.tir:4:9: warning: reduction block 'B' has no "
                                           "T.init"), stderr
    a = np.ones((8, 16), np.float32)
    b = np.full(8, 100, np.float32)
    load(out).f(a, b)
    np.testing.assert_array_equal(b, 116)  # what the warning says: it adds to B's values
    code, stderr, _ = compile_tir(tmp_path, "f", NO_INIT, "-Werror")
    assert code == 1 and stderr.startswith("f.tir:4:9: error: reduction block 'B' has no "
                                           "T.init"), stderr


SYMBOLIC = '''@T.prim_func
def f(a: T.handle, b: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (T.int64(32),), "float32")
    for i in T.parallel(4):
        for j in T.vectorized(8):
            with T.block("B"):
                vi = T.axis.spatial(32, i * 8 + j)
                B[vi] = A[(vi * 7) % 32]
'''


@pytest.mark.parametrize("level", ["-O0", "-O3"])
def test_symbolic_size_checked_in_parallel_and_vector_loops(level: str, tmp_path: Path) -> None:
    """In bounds for n = 32 (the same result as without the checks), out of bounds for 16."""
    code, stderr, checked = compile_tir(tmp_path, "f", SYMBOLIC, "-fbounds-check", level)
    assert code == 0, stderr
    _, _, plain = compile_tir(tmp_path, "f", SYMBOLIC, level)
    a = np.arange(32, dtype=np.float32)
    want, got = zeros(32), zeros(32)
    load(plain).f(a, want)
    load(checked).f(a, got)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, a[(np.arange(32) * 7) % 32])
    with pytest.raises(TircError) as err:
        load(checked).f(a[:16], got)
    assert err.value.code == -5
    assert str(err.value).startswith("f.tir:10:25: out-of-bounds read of A[")
    assert str(err.value).endswith("], shape (16,)")


TAKE = '''@R.function
def main(x: R.Tensor((8, 4), "float32"),
         idx: R.Tensor((3,), "int32")) -> R.Tensor((3, 4), "float32"):
    with R.dataflow():
        y = R.take(x, idx, axis=0)
        z = R.nn.relu(y)
        R.output(z)
    return z
'''


@pytest.mark.parametrize("flags", [(), ("-fmegakernel=static",), ("-fmegakernel=dynamic",)])
def test_graph_take_with_an_index_out_of_range(flags: tuple[str, ...], tmp_path: Path) -> None:
    code, stderr, out = compile_tir(tmp_path, "take", TAKE, "-fbounds-check", *flags)
    assert code == 0, stderr
    lib = load(out)
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    np.testing.assert_array_equal(lib.main(x, np.array([1, 7, 0], np.int32)), x[[1, 7, 0]])
    with pytest.raises(TircError) as err:
        lib.main(x, np.array([1, 9, 0], np.int32))
    assert err.value.code == -5 and "out-of-bounds read of x[9, 0], shape (8, 4)" in str(err.value)


NO_HANG = """
import sys, numpy as np
from tirc.runtime import TircError, load
lib = load(sys.argv[1])
x = np.arange(32, dtype=np.float32).reshape(8, 4)
for rep in range(20):
    try:
        lib.main(x, np.array([1, 9, 0], np.int32))
        sys.exit("no error")
    except TircError as err:
        assert err.code == -5, err
    assert np.array_equal(lib.main(x, np.array([1, 7, 0], np.int32)), x[[1, 7, 0]])
print("ok")
"""


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_a_failing_megakernel_task_stops_every_worker(mode: str, tmp_path: Path) -> None:
    """A task that fails (here a bounds check) makes the workers waiting on it give up: the
    call returns the task's error at 1, 2 and 5 threads, and the next call works."""
    code, stderr, out = compile_tir(tmp_path, "take", TAKE, "-fbounds-check",
                                    f"-fmegakernel={mode}")
    assert code == 0, stderr
    for threads in ("1", "2", "5"):
        env = {**os.environ, "OMP_NUM_THREADS": threads}
        run = subprocess.run([sys.executable, "-c", NO_HANG, str(out)], capture_output=True,
                             text=True, timeout=120, env=env)
        assert run.stdout.strip() == "ok", (threads, run.stdout, run.stderr)
