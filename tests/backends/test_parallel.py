"""Parallel loops: OpenMP regions with static chunks, extents that don't divide, nested
parallel loops run serially, per-worker allocations, and errors raised inside a worker."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest
from backend_support import EXACT, build_library, elementwise, emit, func, i64
from tirc.ir import For, ForKind, IRModule, Var, make_buffer
from tirc.ir.dtype import dtype
from tirc.ir.expr import Call, IntImm, StringImm, cast, const
from tirc.ir.stmt import Allocate, AssertStmt, AttrStmt, BufferStore, seq
from tirc.runtime import TircError

I64 = dtype("int64")
I32 = dtype("int32")


def _nested() -> Any:
    """out[i, j] = i * 100 + j with both loops parallel (the inner one runs serially)."""
    m, n = Var("m", I64), Var("n", I64)
    out = make_buffer("Out", (m * n,), "int64")
    i, j = Var("i", I64), Var("j", I64)
    inner = For(j, i64(0), n, ForKind.PARALLEL, BufferStore(out, i * 100 + j, (i * n + j,)))
    body = For(i, i64(0), m, ForKind.PARALLEL, inner)
    f = func("nested", [out], body, scalars=(m, n))
    return f


def _worker_scratch() -> Any:
    """Each row goes through a per-iteration stack buffer inside the parallel loop."""
    x, out = make_buffer("X", (i64(64 * 32),), "float32"), make_buffer("Out", (i64(64 * 32),),
                                                                        "float32")
    tmp = make_buffer("row", (i64(32),), "float32", scope="local")
    i, j, k = Var("i", I64), Var("j", I64), Var("k", I64)
    fill = For(j, i64(0), i64(32), ForKind.SERIAL,
               BufferStore(tmp, x.vload(i * 32 + 31 - j), (j,)))
    back = For(k, i64(0), i64(32), ForKind.SERIAL,
               BufferStore(out, tmp.vload(k), (i * 32 + k,)))
    body = Allocate(tmp, AttrStmt(tmp, "storage_kind", StringImm("stack"), seq(fill, back)))
    return func("reverse_rows", [x, out], For(i, i64(0), i64(64), ForKind.PARALLEL, body))


def _failing_worker() -> Any:
    x, out = make_buffer("X", (i64(1000),), "float32"), make_buffer("Out", (i64(1000),),
                                                                     "float32")
    i = Var("i", I64)
    body = AssertStmt(x.vload(i) >= const(0.0), "negative input inside a parallel loop",
                      BufferStore(out, x.vload(i), (i,)))
    return func("parallel_assert", [x, out], For(i, i64(0), i64(1000), ForKind.PARALLEL, body))


def _failing_everywhere() -> Any:
    """Every iteration may fail, with one of two messages: under load many workers fail in
    the same region, and the caller must report exactly one of their messages."""
    x, out = make_buffer("X", (i64(4096),), "float32"), make_buffer("Out", (i64(4096),),
                                                                     "float32")
    i = Var("i", I64)
    store = BufferStore(out, x.vload(i), (i,))
    body = AssertStmt(x.vload(i) >= const(0.0), "negative input inside a parallel loop",
                      AssertStmt(x.vload(i) < const(100.0), "input of 100 or more", store))
    return func("fail_everywhere", [x, out], For(i, i64(0), i64(4096), ForKind.PARALLEL, body))


def _offset_loop() -> Any:
    """A parallel loop with a nonzero start and an int32 loop variable."""
    out = make_buffer("Out", (i64(50),), "int32")
    i = Var("i", I32)
    return func("offset_loop", [out], For(i, IntImm(7, I32), IntImm(37, I32), ForKind.PARALLEL,
                                          BufferStore(out, i * 2, (cast("int64", i),))))


FUNCS = [
    elementwise("par_scale", ["float32"], "float32", lambda x: x * 3.0 + 1.0, Var("n", I64),
                kind=ForKind.PARALLEL),
    _nested(), _worker_scratch(), _failing_worker(), _offset_loop(), _failing_everywhere(),
]


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return build_library(FUNCS, tmp_path_factory.mktemp("par") / "par.so", 2, target=EXACT)


@pytest.mark.parametrize("n", [0, 1, 3, 1001, 100_000])
def test_parallel_elementwise_any_extent(lib: Any, n: int) -> None:
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    np.testing.assert_array_equal(lib.par_scale(x), x * np.float32(3) + np.float32(1))


def test_nested_parallel_runs_serially_inside(lib: Any) -> None:
    out = np.zeros(13 * 7, np.int64)
    lib.nested(out, 13, 7)
    want = (np.arange(13)[:, None] * 100 + np.arange(7)[None, :]).reshape(-1)
    np.testing.assert_array_equal(out, want)


def test_per_worker_allocation(lib: Any) -> None:
    x = np.arange(64 * 32, dtype=np.float32)
    np.testing.assert_array_equal(lib.reverse_rows(x).reshape(64, 32),
                                  x.reshape(64, 32)[:, ::-1])


def test_error_inside_worker_reaches_caller(lib: Any) -> None:
    x = np.ones(1000, np.float32)
    x[777] = -1
    with pytest.raises(TircError, match="^negative input inside a parallel loop$"):
        lib.parallel_assert(x, np.zeros(1000, np.float32))
    lib.parallel_assert(np.ones(1000, np.float32), np.zeros(1000, np.float32))


def test_loop_with_offset_start(lib: Any) -> None:
    out = np.zeros(50, np.int32)
    lib.offset_loop(out)
    want = np.zeros(50, np.int32)
    want[7:44] = np.arange(7, 44) * 2
    np.testing.assert_array_equal(out, want)


def test_ir_calls_gomp_parallel_once_per_outer_loop() -> None:
    text = emit(IRModule({"nested": FUNCS[1]}), "ll", None, 0).decode()
    assert text.count("call void @GOMP_parallel(") == 1
    assert "@omp_get_thread_num()" in text and "@omp_get_num_threads()" in text


def test_threads_really_run_in_parallel(tmp_path: Any) -> None:
    """With OMP_NUM_THREADS=2 each worker records its thread number: both take part."""
    out = make_buffer("Out", (i64(2),), "int32")
    i = Var("i", I64)
    tid = Call("tirc.omp_thread_num", (), I32)
    body = For(i, i64(0), i64(2), ForKind.PARALLEL, BufferStore(out, tid + 1, (i,)))
    path = tmp_path / "tid.so"
    emit(IRModule({"tids": func("tids", [out], body)}), "so", None, 0, path)
    script = textwrap.dedent(f"""
        import numpy as np, tirc.runtime as rt
        out = np.zeros(2, np.int32)
        rt.load({str(path)!r}).tids(out)
        print(sorted(out.tolist()))
    """)
    env = dict(os.environ, OMP_NUM_THREADS="2")
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.stdout.strip() == "[1, 2]", proc.stderr


STRESS = """
import sys, threading
import numpy as np, tirc.runtime as rt
lib = rt.load(sys.argv[1])
messages = {"negative input inside a parallel loop", "input of 100 or more"}
bad = []

def hammer(seed):
    rng = np.random.default_rng(seed)
    out = np.zeros(4096, np.float32)
    for k in range(150):
        x = rng.choice(np.array([-1.0, 1.0, 200.0], np.float32), 4096)
        if k % 3 == 0:
            x = np.ones(4096, np.float32)
            lib.fail_everywhere(x, out)
            continue
        try:
            lib.fail_everywhere(x, out)
            bad.append("no error")
        except rt.TircError as exc:
            if str(exc) not in messages:
                bad.append(repr(str(exc)))

threads = [threading.Thread(target=hammer, args=(s,)) for s in range(4)]
for t in threads: t.start()
for t in threads: t.join()
print(len(bad), bad[:3])
"""


def test_errors_of_many_failing_workers_under_load(lib: Any) -> None:
    """Oversubscribed (8 OpenMP threads per caller, 4 callers at once, on this machine's
    cores), every worker failing: each call reports one whole message of one worker."""
    env = dict(os.environ, OMP_NUM_THREADS="8")
    proc = subprocess.run([sys.executable, "-c", STRESS, lib.path], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "0 []", proc.stdout + proc.stderr
