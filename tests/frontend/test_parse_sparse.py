"""SparseTIR's spellings: axes, sparse buffers and sparse iterations parse, print back, and bad
ones get diagnostics at their place."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tirc.frontend import parse
from tirc.ir import structural_equal
from tirc.ir.diagnostics import CompileError
from tirc.ir.printer import print_module
from tirc.ir.sparse import AxisKind, SparseBuffer, SparseIteration

HEAD = '''from tvm.script import tir as T

@T.prim_func
def f(a: T.handle, b: T.handle, indptr: T.handle, indices: T.handle, m: T.int32, n: T.int32,
      nnz: T.int32):
    I = T.dense_fixed(m)
    J = T.sparse_variable(I, (n, nnz), (indptr, indices), "int32")
'''  # the body continues on line 8

ALL_AXES = '''@T.prim_func
def g(a: T.handle, b: T.handle, p0: T.handle, p1: T.handle, x1: T.handle, x2: T.handle,
      m: T.int32, n: T.int32, nnz: T.int32, nnz2: T.int32):
    I = T.dense_fixed(m)
    R = T.dense_variable(I, (n, nnz), p0, "int32")
    E = T.sparse_fixed(I, (n, 4), x1, "int32")
    J = T.sparse_variable(I, (n, nnz2), (p1, x2), "int32")
    A = T.match_sparse_buffer(a, (I, R), "float32")
    B = T.match_sparse_buffer(b, (I, E), "float16")
    with T.iter([I, T.fuse(E)], "SS", "copy") as [i, e]:
        B[i, e] = T.float16(1)
    with T.sp_iter([I, R, J], "SRR", "sum") as [i, r, j]:
        A[i, r] = A[i, r] + T.float32(1)
'''


def test_every_axis_kind_and_its_arrays() -> None:
    mod = parse(ALL_AXES.replace("T.fuse(E)", "E"))
    f = mod.functions["g"]
    bufs = {b.name: b for b in f.buffer_map.values()}
    assert bufs["R_indptr"].shape[0].a.name == "m"  # type: ignore[attr-defined]
    assert bufs["E_indices"].dtype.bits == 32
    a = bufs["A"]
    assert isinstance(a, SparseBuffer)
    assert [ax.kind for ax in a.axes] == [AxisKind.DENSE_FIXED, AxisKind.DENSE_VARIABLE]
    assert isinstance(f.body.seq[0], SparseIteration)  # type: ignore[attr-defined]
    text = print_module(mod)
    assert "R = T.dense_variable(I, (n, nnz), p0, \"int32\")" in text
    assert "E = T.sparse_fixed(I, (n, 4), x1, \"int32\")" in text
    again = parse(text)
    assert structural_equal(mod.functions["g"], again.functions["g"])


def test_iter_is_an_alias_of_sp_iter() -> None:
    a = parse(HEAD + '''    A = T.match_sparse_buffer(a, (I, J), "float32")
    with T.iter([I, J], "SS", "x") as [i, j]:
        A[i, j] = T.float32(0)
''')
    assert "T.sp_iter([I, J], \"SS\", \"x\") as [i, j]" in print_module(a)


def test_allocated_sparse_buffers_and_nested_iterations_print_back() -> None:
    mod = parse(HEAD + '''    A = T.match_sparse_buffer(a, (I, J), "float32")
    top = T.alloc_sparse_buffer((I,), "float32", "global")
    pair = T.alloc_sparse_buffer((I, J), "float16")
    with T.sp_iter([I], "S", "rows") as [i]:
        with T.sp_iter([J], "R", "row_max") as [j]:
            with T.init():
                top[i] = T.float32(0)
            top[i] = T.max(top[i], A[i, j])
        with T.sp_iter([J], "S", "copy") as [j]:
            pair[i, j] = T.float16(A[i, j] - top[i])
''')
    text = print_module(mod)
    assert 'top = T.alloc_sparse_buffer((I,), "float32")' in text
    assert 'pair = T.alloc_sparse_buffer((I, J), "float16")' in text
    assert structural_equal(mod.functions["f"], parse(text).functions["f"])


def test_iteration_annotations_print_back_and_reach_the_lowered_block() -> None:
    from tirc.passes.sparse.lower_sparse_iterations import lower_sparse

    mod = parse(HEAD + '''    A = T.match_sparse_buffer(a, (I, J), "float32")
    with T.iter([I, J], "SS", "prep") as [i, j]:
        T.iter_attr({"preprocess": True})
        A[i, j] = T.float32(1)
''')
    text = print_module(mod)
    assert 'T.iter_attr({"preprocess": True})' in text
    assert structural_equal(mod.functions["f"], parse(text).functions["f"])
    lowered = print_module(mod.replace(functions={"f": lower_sparse(mod.functions["f"])}))
    assert 'T.block_attr({"preprocess": True})' in lowered


def test_attach_prints_back() -> None:
    mod = parse(HEAD + '''    D = T.dense_fixed(n)
    K = T.sparse_variable(D, (n, nnz), (a, b), "int32")
    with T.sp_iter([I, J, T.attach(K, J)], "SRR", "x") as [i, j, k]:
        pass
''')
    text = print_module(mod)
    assert 'T.sp_iter([I, J, T.attach(K, J)], "SRR", "x") as [i, j, k]' in text
    assert structural_equal(mod.functions["f"], parse(text).functions["f"])


def test_sparse_buffer_layouts_print_back() -> None:
    mod = parse(HEAD + '''    A = T.match_sparse_buffer(a, (I, J), "float32", layout="S[nnz:1]")
    t = T.alloc_sparse_buffer((I,), "float32", layout="S[m:1]")
    with T.sp_iter([I, J], "SR", "x") as [i, j]:
        with T.init():
            t[i] = T.float32(0)
        t[i] = t[i] + A[i, j]
''')
    text = print_module(mod)
    assert 'T.match_sparse_buffer(a, (I, J), "float32", layout="S[nnz:1]")' in text, text
    assert 'T.alloc_sparse_buffer((I,), "float32", layout="S[m:1]")' in text
    assert structural_equal(mod.functions["f"], parse(text).functions["f"])


BAD = {
    "kinds_length": ('''    A = T.match_sparse_buffer(a, (I, J), "float32")
    with T.sp_iter([I, J], "S", "x") as [i, j]:
        A[i, j] = T.float32(0)
''', 9, 28, "the iteration kinds must be one S or R per axis (2 axes), got \"S\""),
    "child_first": ('''    A = T.match_sparse_buffer(a, (I, J), "float32")
    with T.sp_iter([J, I], "SS", "x") as [j, i]:
        A[i, j] = T.float32(0)
''', 9, 43, "axis J is iterated before its parent I"),
    "not_an_axis": ('''    A = T.match_sparse_buffer(a, (I, m), "float32")
''', 8, 38, "expected an axis (T.dense_fixed, T.sparse_variable, ...)"),
    "handle_twice": ('''    A = T.match_sparse_buffer(indptr, (I, J), "float32")
''', 8, 31, "parameter 'indptr' is already matched to a buffer"),
    "spatial_under_reduction": ('''    K = T.sparse_variable(J, (n, nnz), (a, b), "int32")
    with T.sp_iter([I, J, K], "SRS", "x") as [i, j, k]:
        pass
''', 9, 53, "spatial axis K depends on the reduction axis J"),
    "wrong_names": ('''    with T.sp_iter([I, J], "SS", "x") as [i]:
        pass
''', 8, 42, "expected 2 iteration variable names"),
    "rank": ('''    A = T.match_sparse_buffer(a, (I, J), "float32")
    with T.sp_iter([I, J], "SS", "x") as [i, j]:
        A[i] = T.float32(0)
''', 10, 9, "buffer 'A' has 2 dimensions, indexed with 1"),
    "alloc_scope": ('''    t = T.alloc_sparse_buffer((I, J), "float32", "shared")
''', 8, 50, "unsupported: a sparse buffer outside global memory"),
    "alloc_axes": ('''    t = T.alloc_sparse_buffer(I, "float32")
''', 8, 31, "T.alloc_sparse_buffer takes its axes as a tuple, such as (I, J)"),
    "iter_attr_twice": ('''    with T.iter([I], "S", "x") as [i]:
        T.iter_attr({"a": 1})
        T.iter_attr({"b": 2})
''', 10, 9, "T.iter_attr appears twice in this iteration"),
    "attach_sparse_parent": ('''    K = T.sparse_variable(J, (n, nnz), (a, b), "int32")
    with T.sp_iter([I, J, T.attach(K, J)], "SSS", "x") as [i, j, k]:
        pass
''', 9, 36, "T.attach: axis K must be attached to a dense_fixed axis"),
    "attach_length": ('''    D = T.dense_fixed(nnz)
    K = T.sparse_variable(D, (n, nnz), (a, b), "int32")
    with T.sp_iter([I, J, T.attach(K, J)], "SSS", "x") as [i, j, k]:
        pass
''', 10, 27, "T.attach: the parent of K, D, and J differ in length"),
    "attach_order": ('''    D = T.dense_fixed(n)
    K = T.sparse_variable(D, (n, nnz), (a, b), "int32")
    with T.sp_iter([I, T.attach(K, J), J], "SSS", "x") as [i, k, j]:
        pass
''', 10, 63, "axis K is iterated before its parent J"),
    # SparseTIR's fusedmm starts a row maximum from the row's first element
    "init_reads_reduction": ('''    A = T.match_sparse_buffer(a, (I, J), "float32")
    B = T.match_sparse_buffer(b, (I,), "float32")
    with T.iter([I, J], "SR", "row_max") as [i, j]:
        with T.init():
            B[i] = A[i, j]
        B[i] = T.max(B[i], A[i, j])
''', 11, 9, "unsupported: the init of iteration 'row_max' reads the reduction variable j"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_sparse_programs_get_diagnostics(case: str) -> None:
    body, line, col, message = BAD[case]
    with pytest.raises(CompileError) as info:
        parse(HEAD + body, "t.tir")
    diags = info.value.diagnostics
    assert any(d.span is not None and (d.span.line, d.span.col) == (line, col)
               and message in d.message for d in diags), [(d.span, d.message) for d in diags]


def test_printing_does_not_depend_on_the_hash_seed() -> None:
    """The sizes a sparse function declares print in parameter order: the printer once took
    them from a set, and the text changed from one process to the next."""
    sample = Path(__file__).resolve().parents[2] / "samples" / "attention" / \
        "paged_decode_sparse.tir"
    code = ("import sys; from tirc.frontend import parse_file; from tirc.ir.printer import "
            f"print_module; sys.stdout.write(print_module(parse_file({str(sample)!r})))")
    texts = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
             for seed in range(4)}
    assert len(texts) == 1
    (text,) = texts
    assert text.index("num_pages = T.int32()") < text.index("nnz_pages = T.int32()")
