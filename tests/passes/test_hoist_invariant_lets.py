"""hoist-invariant-lets: an invariant let moves in front of its loop and the function computes
what it did (interpreted before and after, and compiled at -O0 and -O3), also where the loop
does not run; a bucketed SDDMM searches each output position once per entry, not per feature."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tirc.driver import build, lower
from tirc.frontend import parse
from tirc.ir import intrinsics as intrin
from tirc.ir.expr import Call
from tirc.ir.stmt import For, LetStmt
from tirc.ir.visitor import Visitor, any_node, post_order_visit
from tirc.passes.hoist_invariant_lets import HoistInvariantLets
from tirc.runtime import load

from tests.lowering_support import assert_same_results, run_on_text
from tests.sparse_support import SDDMM, compile_library, csr32, matrices

GUARDED = '''
@T.prim_func
def guarded(a: T.handle, b: T.handle, m: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (8,), "int32")
    B = T.match_buffer(b, (8, n), "float32")
    M = T.match_buffer(m, (8,), "int32")
    for i in range(8):
        for k in range(n):
            if M[i] > 0:
                p: T.int32 = A[i] * 3 + M[i]
                q: T.int32 = p - 1
                B[i, k] = B[i, k] + T.Cast("float32", q) * T.Cast("float32", k)
'''

# The let reads an element past the end of A when the loop does not run (n == 0): hoisted
# unconditionally it would read out of bounds.
EMPTY = '''
@T.prim_func
def empty(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for k in range(n):
        last: T.float32 = A[n - 1]
        B[k] = B[k] + last
'''


def _lets_directly_in_loops(mod: object) -> list[str]:
    """Names of the let variables that are the first statement of some loop's body."""
    out: list[str] = []

    def visit(n: object) -> None:
        if isinstance(n, For) and isinstance(n.body, LetStmt):
            out.append(n.body.var.name)

    post_order_visit(mod["guarded"].body, visit)  # type: ignore[index]
    return out


def test_the_chain_moves_and_the_results_stay() -> None:
    before, after, _ = run_on_text(HoistInvariantLets(), GUARDED)
    assert _lets_directly_in_loops(before) == []  # under the guard, inside the loop
    text = after.script()
    assert text.index("p: T.int32") < text.index("for k in range(n)")
    assert text.index("q: T.int32") < text.index("for k in range(n)")
    assert "if n > 0:" in text
    for n in (0, 1, 5):
        assert_same_results(before, after, "guarded", {"n": n})


def test_nothing_is_evaluated_when_the_loop_does_not_run() -> None:
    before, after, _ = run_on_text(HoistInvariantLets(), EMPTY)
    assert "if n > 0:" in after.script()
    for n in (0, 1, 4):
        assert_same_results(before, after, "empty", {"n": n})


@pytest.mark.parametrize("opt", [0, 3])
def test_compiled_equals_numpy(tmp_path: Path, opt: int) -> None:
    lib = load(build(parse(GUARDED), tmp_path / "g.so", "llvm", opt))
    rng = np.random.default_rng(0)
    for n in (0, 1, 9):
        a = rng.integers(-5, 5, 8).astype("int32")
        m = rng.integers(-1, 2, 8).astype("int32")
        b = rng.standard_normal((8, n)).astype("float32")
        q = (a * 3 + m - 1).astype("float32")
        want = b + np.where(m[:, None] > 0, q[:, None] * np.arange(n, dtype="float32"), 0)
        lib.guarded(a, b, m)
        np.testing.assert_allclose(b, want, rtol=1e-5)


HYB = SDDMM + '''
@S.schedule("sddmm")
def _(sch):
    sp = sch.get_sparse_iteration("sddmm")
    sch.decompose_format(sp, "hyb", buckets=(1, 4), col_parts=2)
'''


class _FeatureSearches(Visitor):
    """Counts the position searches that run inside a feature loop (over `k`)."""

    def __init__(self) -> None:
        self.loops: list[str] = []
        self.count = 0

    def visit_For(self, s: For) -> None:
        self.loops.append(s.loop_var.name)
        self.generic_visit(s)
        self.loops.pop()

    def visit_Call(self, e: Call) -> None:
        if e.op == intrin.LOWER_BOUND and any(name.startswith("k") for name in self.loops):
            self.count += 1
        self.generic_visit(e)


def _feature_searches(node: object) -> int:
    v = _FeatureSearches()
    v.visit(node)
    return v.count


def test_bucketed_sddmm_searches_once_per_entry(tmp_path: Path) -> None:
    """At -O3 no search runs inside a bucket's feature loop (only in its entry loop); -O0
    keeps them there; both agree with NumPy."""
    o3 = lower(parse(HYB), "llvm", 3)["sddmm"]
    o0 = lower(parse(HYB), "llvm", 0)["sddmm"]
    assert any_node(o3.body, lambda n: isinstance(n, Call) and n.op == intrin.LOWER_BOUND)
    assert _feature_searches(o3.body) == 0
    assert _feature_searches(o0.body) == 8  # each bucket's store and load
    (tmp_path / "h.tir").write_text(HYB)
    for opt in ("-O0", "-O3"):
        lib = compile_library(tmp_path / "h.tir", tmp_path / f"h{opt}.so", opt)
        for name, a in {**matrices(), "dense": csr32(np.ones((9, 7)))}.items():
            m, n = a.shape
            rng = np.random.default_rng(1)
            x, y = rng.random((m, 8), np.float32), rng.random((n, 8), np.float32)
            rows = np.repeat(np.arange(m), np.diff(a.indptr))
            out = a.copy()
            out.data[:] = np.nan
            lib.sddmm(x, y, out)
            want = np.einsum("ek,ek->e", x[rows], y[a.indices])
            np.testing.assert_allclose(out.data, want, rtol=1e-5, err_msg=f"{name} {opt}")
