"""decompose_format: a CSR matrix becomes ELL buckets (hyb with column partitions, ell) or BSR.
The generated conversion routines run in the interpreter (every nonzero lands exactly once,
in the bucket its row run picks; the blocks hold the matrix), the decomposed iteration agrees
with the CSR one in the sparse-form and lowered interpreters, for a CSR operand (SpMM) and a
CSR output (SDDMM), and the compiled library converts and computes when called with the CSR
matrix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter import InterpreterError, run_prim_func
from tirc.ir.printer import print_module
from tirc.runtime.sparse_plan import run_plan

from tests.sparse_support import (
    SDDMM,
    SDDMM_ACCUMULATE,
    SPMM,
    compile_library,
    interpret,
    lowered,
    matrices,
    scheduled,
)

CALLS = {
    "hyb": 'sch.decompose_format(sp, "hyb", buckets=(1, 2, 4))',
    "hyb_parts": 'sch.decompose_format(sp, "hyb", buckets=(1, 4), col_parts=3)',
    "ell": 'sch.decompose_format(sp, "ell", width=3)',
    "bsr": 'sch.decompose_format(sp, "bsr", block=(2, 3))',
}
NAMES = ["karate", "power_law", "empty_rows", "no_nonzeros", "elasticity_fem"]


def _schedule(name: str, call: str) -> str:
    return f'''
@S.schedule("{name}")
def _(sch):
    sp = sch.get_sparse_iteration("{name}")
    {call}
'''


class _Interpreted:
    """A module's function called like a library function (`.raw`), by the interpreter."""

    def __init__(self, func: object) -> None:
        self.func = func

    def raw(self, *args: object) -> None:
        run_prim_func(self.func, list(args))


def _plan(mod, func: str, a) -> dict:
    plan = mod.functions[func].attrs["tirc.sparse_plan"]
    functions = {name: _Interpreted(f) for name, f in mod.functions.items()}
    return run_plan(plan, functions, (a.data, a.indptr, a.indices), a.shape)


def _check_buckets(plan: dict, arrays: dict, a) -> None:
    """Every nonzero lands once (padding repeats a coordinate of its row with value 0, and
    for a sparse output mask 0), each bucket holds the row runs whose length picks it, inside
    its column partition."""
    widths, parts = plan["widths"], plan["parts"]
    lengths = np.diff(a.indptr)
    seen = []
    for q in range(len(widths) * parts):
        p, b = divmod(q, len(widths))
        w = widths[b]
        rows, cols = arrays[plan["rows"][q]], arrays[plan["cols"][q]]
        lo, hi = p * a.shape[1] // parts, (p + 1) * a.shape[1] // parts
        assert ((cols >= lo) & (cols < hi)).all()
        if parts == 1 and b < len(widths) - 1:
            low = widths[b - 1] if b else 0
            assert sorted(rows) == list(np.nonzero((lengths > low) & (lengths <= w))[0])
        if plan["vals"]:
            vals = arrays[plan["vals"][q]]
            for r, row in enumerate(rows):
                for t in range(w):
                    col = int(cols[r * w + t])
                    assert col in a.indices[a.indptr[row]:a.indptr[row + 1]]
                    if vals[r * w + t] != 0:
                        seen.append((int(row), col, float(vals[r * w + t])))
        if plan["masks"]:
            _check_mask(arrays[plan["masks"][q]].reshape(-1, w), cols.reshape(-1, w), rows,
                        seen)
    coo = a.tocoo()
    if plan["vals"]:
        want = [(r, c, v) for r, c, v in zip(coo.row.tolist(), coo.col.tolist(),
                                            coo.data.astype(float).tolist()) if v != 0]
        assert sorted(seen) == sorted(want)
    else:
        assert sorted(seen) == sorted(zip(coo.row.tolist(), coo.col.tolist()))


def _check_mask(mask, cols, rows, seen: list) -> None:
    """A sparse output's bucket: each row's real entries (mask 1) come first, then its
    padding (mask 0, repeating the last real coordinate); no row is all padding."""
    for r, row in enumerate(rows):
        real = int(mask[r].sum())
        assert real >= 1 and (mask[r, :real] == 1).all() and (mask[r, real:] == 0).all()
        assert (cols[r, real:] == cols[r, real - 1]).all()
        seen.extend((int(row), int(c)) for c in cols[r, :real])


def _check_blocks(plan: dict, arrays: dict, a) -> None:
    bm, bn = plan["block"]
    bindptr, bindices = arrays[plan["block_indptr"]], arrays[plan["block_indices"]]
    blocks = arrays[plan["block_vals"]]
    m, n = a.shape
    dense = np.zeros((-(-m // bm) * bm, -(-n // bn) * bn), np.float32)
    for ib in range(bindptr.size - 1):
        cols = bindices[bindptr[ib]:bindptr[ib + 1]]
        assert (np.diff(cols) > 0).all()
        for q, jb in zip(range(bindptr[ib], bindptr[ib + 1]), cols):
            dense[ib * bm:ib * bm + bm, jb * bn:jb * bn + bn] = blocks[q]
    np.testing.assert_array_equal(dense[:m, :n], a.toarray())
    stored = np.zeros_like(dense, bool)
    stored[np.repeat(np.arange(m), np.diff(a.indptr)), a.indices] = True
    assert int(stored.reshape(dense.shape[0] // bm, bm, -1, bn).any(axis=(1, 3)).sum()) == \
        bindices.size


def _spmm_args(a, feat: int = 3) -> list:
    m, n = a.shape
    b = np.random.default_rng(0).random((n, feat), np.float32)
    return [a.data, b, np.zeros((m, feat), np.float32), a.indptr, a.indices, m, n, feat, a.nnz]


def _raw(func, base: list, arrays: dict) -> list:
    """`base` (the CSR function's arguments) and the plan's, in the decomposed order."""
    names = [p.name for p in func.params]
    by_name = dict(zip(names, base))
    by_name.update(arrays)
    return [by_name[n] for n in names]


@pytest.mark.parametrize("fmt", sorted(CALLS))
@pytest.mark.parametrize("name", NAMES)
def test_decomposed_spmm_keeps_meaning(fmt: str, name: str) -> None:
    a = matrices()[name]
    decomposed = lowered(parse(SPMM + _schedule("spmm", CALLS[fmt])), "apply-schedules")
    plan = decomposed.functions["spmm"].attrs["tirc.sparse_plan"]
    arrays = _plan(decomposed, "spmm", a)
    (_check_blocks if fmt == "bsr" else _check_buckets)(plan, arrays, a)
    base = _spmm_args(a)
    want = interpret(parse(SPMM), "spmm", base)[2]
    args = _raw(decomposed.functions["spmm"], base, arrays)
    got = interpret(decomposed, "spmm", args)[2]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    low = lowered(decomposed, "lower-sparse-iterations")
    np.testing.assert_allclose(interpret(low, "spmm", args)[2], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fmt", ["hyb", "hyb_parts", "ell"])
@pytest.mark.parametrize("name", NAMES)
def test_decomposed_sddmm_writes_the_csr_output(fmt: str, name: str) -> None:
    a = matrices()[name]
    decomposed = lowered(parse(SDDMM + _schedule("sddmm", CALLS[fmt])), "apply-schedules")
    plan = decomposed.functions["sddmm"].attrs["tirc.sparse_plan"]
    assert plan["vals"] == []
    arrays = _plan(decomposed, "sddmm", a)
    _check_buckets(plan, arrays, a)
    m, n = a.shape
    rng = np.random.default_rng(1)
    x, y = rng.random((m, 4), np.float32), rng.random((n, 4), np.float32)
    base = [x, y, np.full(a.nnz, np.nan, np.float32), a.indptr, a.indices, m, n, 4, a.nnz]
    want = interpret(parse(SDDMM), "sddmm", base)[2]
    args = _raw(decomposed.functions["sddmm"], base, arrays)
    np.testing.assert_allclose(interpret(decomposed, "sddmm", args)[2], want, rtol=1e-6)
    low = lowered(decomposed, "lower-sparse-iterations")
    np.testing.assert_allclose(interpret(low, "sddmm", args)[2], want, rtol=1e-6)


@pytest.mark.parametrize("fmt", ["hyb", "hyb_parts", "ell"])
def test_an_accumulating_sparse_output_adds_each_entry_once(fmt: str) -> None:
    """A sparse output that adds into its own values (no init): a padded entry that computed
    would add its row's last element twice, even run serially."""
    decomposed = lowered(parse(SDDMM_ACCUMULATE + _schedule("sddmm", CALLS[fmt])),
                         "apply-schedules")
    low = lowered(decomposed, "lower-sparse-iterations")
    for a in matrices().values():
        arrays = _plan(decomposed, "sddmm", a)
        m, n = a.shape
        rng = np.random.default_rng(4)
        x, y = rng.random((m, 4), np.float32), rng.random((n, 4), np.float32)
        base = [x, y, a.data.copy(), a.indptr, a.indices, m, n, 4, a.nnz]
        rows = np.repeat(np.arange(m), np.diff(a.indptr))
        want = a.data + np.einsum("ek,ek->e", x[rows], y[a.indices])
        np.testing.assert_allclose(interpret(parse(SDDMM_ACCUMULATE), "sddmm", base)[2], want,
                                   rtol=1e-5, atol=1e-6)
        args = _raw(decomposed.functions["sddmm"], base, arrays)
        for mod in (decomposed, low):
            np.testing.assert_allclose(interpret(mod, "sddmm", args)[2], want, rtol=1e-5,
                                       atol=1e-6)


@pytest.mark.parametrize("fmt", ["hyb", "hyb_parts", "ell"])
def test_default_scheduled_sddmm_buckets_do_not_race(fmt: str) -> None:
    """The default schedule runs each bucket's (row, slot) pairs in parallel; the interpreter
    checks those loops for data races. Padding writes nothing, so none is reported, and the
    result is the CSR one. Fed all-ones masks (padding that writes, as before masks), the
    interpreter reports the race: two slots of one row writing one element of C."""
    mod = scheduled(parse(SDDMM + _schedule("sddmm", CALLS[fmt])))
    func = mod.functions["sddmm"]
    plan = func.attrs["tirc.sparse_plan"]
    for a in matrices().values():
        arrays = _plan(mod, "sddmm", a)
        m, n = a.shape
        rng = np.random.default_rng(1)
        x, y = rng.random((m, 4), np.float32), rng.random((n, 4), np.float32)
        base = [x, y, np.full(a.nnz, np.nan, np.float32), a.indptr, a.indices, m, n, 4, a.nnz]
        want = interpret(parse(SDDMM), "sddmm", base)[2]
        got = interpret(mod, "sddmm", _raw(func, base, arrays))[2]
        np.testing.assert_allclose(got, want, rtol=1e-6)
        padded = sum(int((arrays[k] == 0).sum()) for k in plan["masks"])
        if not padded:
            continue
        arrays.update({k: np.ones_like(arrays[k]) for k in plan["masks"]})
        with pytest.raises(InterpreterError, match=r"data race in T\.parallel loop .* both "
                                                   r"write C\["):
            interpret(mod, "sddmm", _raw(func, base, arrays))


@pytest.mark.parametrize("fmt", ["hyb", "hyb_parts", "bsr"])
def test_compiled_library_plans_from_the_csr_matrix(fmt: str, tmp_path: Path) -> None:
    (tmp_path / "d.tir").write_text(SPMM + _schedule("spmm", CALLS[fmt]))
    lib = compile_library(tmp_path / "d.tir", tmp_path / "d.so")
    for a in matrices().values():
        b = np.random.default_rng(1).random((a.shape[1], 4), np.float32)
        np.testing.assert_allclose(lib.spmm(a, b), a.toarray() @ b, rtol=1e-5, atol=1e-5)


def test_compiled_sddmm_with_buckets(tmp_path: Path) -> None:
    """The default schedule runs each bucket's (row, slot) pairs in parallel; padding writes
    nothing (the bucket's mask), so no two threads write one element of C."""
    (tmp_path / "d.tir").write_text(SDDMM + _schedule("sddmm", CALLS["hyb_parts"]))
    lib = compile_library(tmp_path / "d.tir", tmp_path / "d.so")
    for a in matrices().values():
        m, n = a.shape
        rng = np.random.default_rng(2)
        x, y = rng.random((m, 4), np.float32), rng.random((n, 4), np.float32)
        out = a.copy()
        out.data[:] = np.nan
        lib.sddmm(x, y, out)
        rows = np.repeat(np.arange(m), np.diff(a.indptr))
        np.testing.assert_allclose(out.data, np.einsum("ek,ek->e", x[rows], y[a.indices]),
                                   rtol=1e-5)


@pytest.mark.parametrize("src,call,message", [
    (SDDMM, 'sch.decompose_format(sp, "bsr", block=(2, 2))', "\"bsr\" needs the CSR axis"),
    (SPMM, 'sch.decompose_format(sp, "coo")', "unsupported format 'coo'"),
    (SPMM, 'sch.decompose_format(sp, "ell")', "\"ell\" needs width="),
    (SPMM, 'sch.decompose_format(sp, "hyb", buckets=(4, 2))', "increasing positive widths"),
    (SPMM, 'sch.decompose_format(sp, "hyb", col_parts=0)', "positive number of column"),
    (SPMM, 'sch.decompose_format(sp, "bsr", block=4)', "needs block=\\(rows, cols\\)"),
])
def test_bad_decompositions_are_diagnostics(src: str, call: str, message: str) -> None:
    name = "sddmm" if src is SDDMM else "spmm"
    with pytest.raises(CompileError, match=message):
        lowered(parse(src + _schedule(name, call)))



def _loops_of(bucket: str, then: str) -> str:
    return CALLS["hyb"] + f'''
    blk = sch.get_block("spmm_{bucket}")
    i, j, k = sch.get_loops(blk)
    {then}'''


def test_rows_of_the_chunked_bucket_are_not_parallel(tmp_path: Path) -> None:
    """The last bucket holds a long row as several chunks that add into the same outputs, so
    its rows are a reduction: running them in parallel is refused (it would race), running
    the other buckets' rows in parallel, or the last bucket's features, is not."""
    ok = lowered(parse(SPMM + _schedule("spmm", _loops_of("b1", "sch.parallel(i)"))),
                 "apply-schedules")
    assert "for i1 in T.parallel(" in print_module(ok)
    with pytest.raises(CompileError, match="loop i2 carries a dependence .*reduction variable "
                                           "vi2 of block \"spmm_b2\""):
        lowered(parse(SPMM + _schedule("spmm", _loops_of("b2", "sch.parallel(i)"))),
                "apply-schedules")
    features = _loops_of("b2", "sch.reorder(k, i, j)\n    sch.parallel(k)")
    (tmp_path / "d.tir").write_text(SPMM + _schedule("spmm", features))
    lib = compile_library(tmp_path / "d.tir", tmp_path / "d.so")
    for a in matrices().values():
        b = np.random.default_rng(3).random((a.shape[1], 4), np.float32)
        np.testing.assert_allclose(lib.spmm(a, b), a.toarray() @ b, rtol=1e-5, atol=1e-5)
