"""The gather rule: sparse kernels with no schedule, or a schedule that only decomposes the
format, get parallel rows and vector features from the default schedule. Each scheduled
function computes what the unscheduled one does (reference interpreter, several matrices and
feature counts, a tail of the vector width among them), its printed schedule re-applied as a
user's gives the same function, and the compiled library agrees with SciPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tirc.frontend import parse
from tirc.ir.printer import print_node
from tirc.ir.stmt import For, ForKind
from tirc.ir.structural import first_difference, structural_equal
from tirc.ir.target import parse_target
from tirc.ir.visitor import any_node
from tirc.passes.manager import run_pipeline
from tirc.passes.pass_base import PassContext
from tirc.passes.pipeline import build_pipeline
from tirc.passes.schedule_rules.api import schedule_function

from tests.sparse_support import SDDMM, SPMM, compile_library, interpret, lowered, matrices

FORMATS = {
    "csr": "",
    "hyb": 'sch.decompose_format(sp, "hyb", buckets=(1, 2, 4))',
    "hyb_parts": 'sch.decompose_format(sp, "hyb", buckets=(1, 4), col_parts=3)',
    "ell": 'sch.decompose_format(sp, "ell", width=3)',
    "bsr": 'sch.decompose_format(sp, "bsr", block=(2, 3))',
}
NAMES = ["karate", "power_law", "empty_rows", "no_nonzeros"]


def _program(src: str, name: str, call: str) -> str:
    if not call:
        return src
    return src + f'''
@S.schedule("{name}")
def _(sch):
    sp = sch.get_sparse_iteration("{name}")
    {call}
'''


def _spmm_args(a, feat: int) -> list:
    m, n = a.shape
    b = np.random.default_rng(1).random((n, feat), np.float32)
    return [a.data, b, np.full((m, feat), np.nan, np.float32), a.indptr, a.indices, m, n,
            feat, a.nnz]


def _loops(func, kind: ForKind) -> int:
    count = 0

    def visit(n: object) -> bool:
        nonlocal count
        count += isinstance(n, For) and n.kind == kind
        return False

    any_node(func.body, visit)
    return count


def _scheduled(src: str, name: str, call: str):
    """(the lowered function, its default schedule, the trace)."""
    low = lowered(parse(_program(src, name, call)))
    func = low.functions[name]
    new, trace = schedule_function(func, "llvm")
    return low, func, new, trace


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_spmm_gets_parallel_rows_and_vector_features(fmt: str) -> None:
    low, func, new, trace = _scheduled(SPMM, "spmm", FORMATS[fmt])
    assert trace.applied and all(rule in ("gather", "injective") for rule, _ in trace.applied), \
        trace.summary()
    assert any(rule == "gather" for rule, _ in trace.applied)
    assert _loops(new, ForKind.PARALLEL) >= 1 and _loops(new, ForKind.VECTORIZED) >= 1
    again = run_pipeline(parse(print_node(func) + "\n\n" + print_node(trace.schedule)),
                         build_pipeline(["apply-schedules"]),
                         PassContext(target=parse_target("llvm")))["spmm"]
    assert structural_equal(again.body, new.body), first_difference(again.body, new.body)
    if fmt != "csr":
        return  # the decomposed function's arguments come from its plan (test_decompose_format)
    scheduled = low.replace(functions={**low.functions, "spmm": new})
    for name in NAMES:
        a = matrices()[name]
        for feat in (4, 37):
            args = _spmm_args(a, feat)
            want = interpret(low, "spmm", args)[2]
            np.testing.assert_allclose(interpret(scheduled, "spmm", args)[2], want,
                                       rtol=1e-5, atol=1e-5)


def test_sddmm_gets_vector_partial_sums() -> None:
    low, func, new, trace = _scheduled(SDDMM, "sddmm", "")
    assert [rule for rule, _ in trace.applied] == ["gather"], trace.summary()
    assert _loops(new, ForKind.PARALLEL) == 1 and _loops(new, ForKind.VECTORIZED) == 2
    scheduled = low.replace(functions={**low.functions, "sddmm": new})
    for name in NAMES:
        a = matrices()[name]
        m, n = a.shape
        rng = np.random.default_rng(2)
        for feat in (4, 37):
            x, y = rng.random((m, feat), np.float32), rng.random((n, feat), np.float32)
            args = [x, y, np.full(a.nnz, np.nan, np.float32), a.indptr, a.indices, m, n, feat,
                    a.nnz]
            np.testing.assert_allclose(interpret(scheduled, "sddmm", args)[2],
                                       interpret(low, "sddmm", args)[2], rtol=1e-5)


def test_chunked_bucket_runs_its_features_in_parallel() -> None:
    """The last bucket's rows are a reduction (a long row is several chunks of it): the rule
    runs its feature chunks in parallel instead."""
    _, _, new, trace = _scheduled(SPMM, "spmm", FORMATS["hyb"])
    text = print_node(trace.schedule)
    assert "i2, j2, k2 = sch.get_loops(spmm_b2)" in text
    assert "sch.parallel(i2)" not in text and "sch.parallel(i1)" in text
    assert "sch.reorder(k2_0, i2, j2, k2_1)" in text and "sch.parallel(k2_0)" in text


@pytest.mark.parametrize("fmt", ["csr", "hyb", "hyb_parts", "bsr"])
def test_compiled_default_schedule_agrees_with_scipy(fmt: str, tmp_path: Path) -> None:
    (tmp_path / "d.tir").write_text(_program(SPMM, "spmm", FORMATS[fmt]))
    lib = compile_library(tmp_path / "d.tir", tmp_path / "d.so")
    for a in matrices().values():
        for feat in (4, 37):
            b = np.random.default_rng(1).random((a.shape[1], feat), np.float32)
            np.testing.assert_allclose(lib.spmm(a, b), a.toarray() @ b, rtol=1e-5, atol=1e-5)


def test_a_format_only_schedule_leaves_the_loops_to_the_default_schedule() -> None:
    """decompose_format alone does not count as the function's schedule: default-schedule
    still schedules its loops; a schedule that also touches a loop keeps exactly that."""
    steps = "apply-schedules,lower-sparse-iterations,default-schedule"
    mod = lowered(parse(_program(SPMM, "spmm", FORMATS["hyb"])), steps)
    assert _loops(mod.functions["spmm"], ForKind.PARALLEL) == 4
    own = FORMATS["hyb"] + '''
    blk = sch.get_block("spmm_b0")
    i, j, k = sch.get_loops(blk)
    sch.parallel(i)'''
    mod = lowered(parse(_program(SPMM, "spmm", own)), steps)
    assert _loops(mod.functions["spmm"], ForKind.PARALLEL) == 1
    assert _loops(mod.functions["spmm"], ForKind.VECTORIZED) == 0


SCATTER = '''
@T.prim_func
def scatter(idx: T.Buffer((64,), "int32"), x: T.Buffer((64, 40), "float32"),
            out: T.Buffer((16, 40), "float32")):
    for i, k in T.grid(64, 40):
        with T.block("put"):
            vi, vk = T.axis.remap("SS", [i, k])
            out[T.floormod(idx[vi], 16), vk] = out[T.floormod(idx[vi], 16), vk] + x[vi, vk]
'''


def test_a_scatter_keeps_its_index_loop_serial(tmp_path: Path) -> None:
    """`out[idx[i], k] += x[i, k]` written as a spatial block: a duplicate index makes two
    rows write one element, so the rule keeps the loop over i serial (in the interpreter's
    order) and runs only the feature chunks in parallel; the compiled result equals the
    serial one for an index array full of duplicates."""
    func = parse(SCATTER)["scatter"]
    new, trace = schedule_function(func, "llvm")
    text = print_node(trace.schedule)
    assert trace.summary() == "gather on put"
    assert "sch.parallel(i)" not in text and "sch.reorder(k_0, i, k_1)" in text
    (tmp_path / "s.tir").write_text(SCATTER)
    lib = compile_library(tmp_path / "s.tir", tmp_path / "s.so")
    rng = np.random.default_rng(5)
    idx = rng.integers(0, 3, 64).astype(np.int32)  # three rows, each written ~21 times
    x = rng.random((64, 40), np.float32)
    out = rng.random((16, 40), np.float32)
    want = out.astype(np.float64)
    for i in range(64):
        want[idx[i]] += x[i]
    lib.scatter(idx, x, out)
    np.testing.assert_allclose(out, want, rtol=1e-5)


def test_a_scatter_in_a_split_nest_is_left_serial() -> None:
    """A scatter whose nest the rule cannot reshape (a split index) is still taken, and left
    serial: the fallback rule would have run its outer loop in parallel."""
    split = SCATTER.replace("for i, k in T.grid(64, 40):", "for i0, i1, k in T.grid(8, 8, 40):")
    split = split.replace('vi, vk = T.axis.remap("SS", [i, k])',
                          "vi = T.axis.spatial(64, i0 * 8 + i1)\n"
                          "            vk = T.axis.spatial(40, k)")
    new, trace = schedule_function(parse(split)["scatter"], "llvm")
    assert trace.summary() == "gather on put"
    assert _loops(new, ForKind.PARALLEL) == 0


def test_a_one_dimensional_scatter_is_neither_parallel_nor_vector(tmp_path: Path) -> None:
    """`out[idx[i]] += x[i]`: vector lanes that store to one element race like threads, so
    the loop over i is neither vectorized nor parallel, and the compiled sum is exact."""
    src = '''
@T.prim_func
def scatter(idx: T.Buffer((64,), "int32"), x: T.Buffer((64,), "float32"),
            out: T.Buffer((16,), "float32")):
    for i in range(64):
        with T.block("put"):
            vi = T.axis.remap("S", [i])
            out[T.floormod(idx[vi], 16)] = out[T.floormod(idx[vi], 16)] + x[vi]
'''
    new, trace = schedule_function(parse(src)["scatter"], "llvm")
    assert trace.summary() == "gather on put"
    assert _loops(new, ForKind.PARALLEL) == 0 and _loops(new, ForKind.VECTORIZED) == 0
    (tmp_path / "s.tir").write_text(src)
    lib = compile_library(tmp_path / "s.tir", tmp_path / "s.so")
    idx = np.arange(64, dtype=np.int32) % 2
    x = np.ones(64, np.float32)
    out = np.zeros(16, np.float32)
    lib.scatter(idx, x, out)
    np.testing.assert_array_equal(out[:2], [32.0, 32.0])


def test_a_gpu_scatter_keeps_its_index_loop_in_each_thread() -> None:
    """On the GPU, the loop that picks the written element runs inside each thread, the
    features over the grid: the GPU interpreter gives the same result in both thread orders
    (a duplicate index bound to threads makes them differ) and the serial result."""
    from gpu_support import lower
    from tirc.ir.interpreter.gpu import check_races

    src = SCATTER.replace("out[T.floormod(idx[vi], 16), vk] + x[vi, vk]", "x[vi, vk]")
    func = parse(src)["scatter"]
    _, trace = schedule_function(func, parse_target("cuda -arch=sm_80"))
    assert trace.summary() == "gpu-scatter on put"
    rng = np.random.default_rng(6)
    idx = rng.integers(0, 3, 64).astype(np.int32)
    x = rng.random((64, 40), np.float32)
    out = np.zeros((16, 40), np.float32)
    want = out.copy()
    for i in range(64):
        want[idx[i]] = x[i]
    args = [idx, x, out]
    check_races(lower(src), "scatter", args)
    np.testing.assert_array_equal(args[2], want)
