"""Parallel loops annotated `"parallel.chunk": c` hand out chunks of c iterations to whichever
worker asks next: every iteration runs exactly once whatever the extent, chunk size and team
size, errors inside a chunk reach the caller, and the annotation comes through the schedule
primitive and the pass pipeline."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.sparse_support import compile_library

SOURCE = '''
@T.prim_func
def count(n: T.int32, hits: T.handle, x: T.handle):
    H = T.match_buffer(hits, (n,), "int32")
    X = T.match_buffer(x, (n,), "float32")
    for i in T.parallel(n, annotations={"parallel.chunk": CHUNK}):
        assert X[i] >= T.float32(0), "negative input inside a chunk"
        H[i] = H[i] + 1
        for k in range(i % 7 * 50):
            X[i] = X[i] + T.float32(1)


@T.prim_func
def ragged(a: T.handle, indptr: T.handle, out: T.handle, m: T.int32, nnz: T.int32):
    A = T.match_buffer(a, (nnz,), "float32")
    P = T.match_buffer(indptr, (m + 1,), "int32")
    O = T.match_buffer(out, (m,), "float32")
    for i in range(m):
        with T.block("row"):
            vi = T.axis.spatial(m, i)
            O[vi] = T.float32(0)
            for q in range(P[vi], P[vi + 1]):
                O[vi] = O[vi] + A[q]


@S.schedule("ragged")
def _(sch):
    row = sch.get_block("row")
    (i,) = sch.get_loops(row)
    sch.parallel(i)
    sch.annotate(i, "parallel.chunk", 3)
'''


@pytest.fixture(scope="module", params=[1, 5, 64])
def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp(f"chunks{request.param}")
    (d / "k.tir").write_text(SOURCE.replace("CHUNK", str(request.param)))
    return compile_library(d / "k.tir", d / "k.so")


@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_every_iteration_runs_once(lib, n: int) -> None:
    hits = np.zeros(n, np.int32)
    x = np.zeros(n, np.float32)
    lib.count(n, hits, x)
    np.testing.assert_array_equal(hits, np.ones(n, np.int32))
    np.testing.assert_array_equal(x, (np.arange(n) % 7 * 50).astype(np.float32))


def test_an_error_inside_a_chunk_reaches_the_caller(lib) -> None:
    from tirc.runtime import TircError

    x = np.zeros(100, np.float32)
    x[77] = -1
    with pytest.raises(TircError, match="negative input inside a chunk"):
        lib.count(100, np.zeros(100, np.int32), x)


def test_scheduled_chunks_balance_uneven_rows(lib) -> None:
    rng = np.random.default_rng(0)
    lengths = (rng.pareto(1.2, 500) * 3).astype(np.int32)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    a = rng.random(int(indptr[-1]), np.float32)
    want = np.add.reduceat(np.append(a, 0), indptr[:-1]) * (lengths > 0)
    np.testing.assert_allclose(lib.ragged(a, indptr, m=500, nnz=a.size), want, rtol=1e-5)


def test_the_annotation_reaches_the_backend(tmp_path: Path) -> None:
    (tmp_path / "k.tir").write_text(SOURCE.replace("CHUNK", "4"))
    tirc = Path(sys.executable).with_name("tirc")
    ll = subprocess.run([str(tirc), str(tmp_path / "k.tir"), "--emit", "ll", "-o", "-", "-O3"],
                        capture_output=True, text=True, check=True).stdout
    assert ll.count("atomicrmw add") >= 2  # one per annotated parallel loop


def test_a_team_of_one_and_of_many(tmp_path: Path) -> None:
    (tmp_path / "k.tir").write_text(SOURCE.replace("CHUNK", "2"))
    script = textwrap.dedent(f'''
        import numpy as np, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from tests.sparse_support import compile_library
        lib = compile_library({str(tmp_path / "k.tir")!r}, {str(tmp_path / "k.so")!r})
        hits = np.zeros(999, np.int32)
        lib.count(999, hits, np.zeros(999, np.float32))
        assert (hits == 1).all()
    ''')
    for threads in ("1", "3"):
        env = {**os.environ, "OMP_NUM_THREADS": threads}
        subprocess.run([sys.executable, "-c", script], env=env, check=True)
