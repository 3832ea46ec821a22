"""Forms TVM 0.27 prints for the LLM kernels it generates (paged KV cache, attention, RoPE):
each parses, prints back to the same IR, and means what TVM means; the forms tirc refuses
say so at their place."""

from __future__ import annotations

import numpy as np
import pytest
from frontend_support import round_trip
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter import Interpreter
from tirc.ir.printer import print_module
from tirc.ir.stmt import BlockRealize
from tirc.ir.visitor import post_order_visit


def _error(src: str) -> str:
    with pytest.raises(CompileError) as info:
        parse(src, "k.tir")
    d = info.value.diagnostics[0]
    return f"{d.span.line}:{d.span.col}: {d.message}"


MERGE = """
@T.prim_func
def merge(V: T.Buffer(("N", "H"), "float32"), S: T.Buffer((N,), "float32")):
    N, H = T.int32(), T.int32()
    for n, h in T.grid(N, H):
        S[n] = S[n] + V[n, h]
"""


def test_a_size_from_a_shape_string_declared_again_is_that_size() -> None:
    """TVM prints an int32 size as `"N"` in the first shape naming it and `N = T.int32()`
    in the body: one variable, as TVM's parser reads it."""
    mod = round_trip(MERGE)
    f = mod["merge"]
    v, s = (f.buffer_map[p] for p in f.params)
    assert s.shape[0] is v.shape[0]
    out = np.ones(3, np.float32)
    Interpreter(mod).call("merge", np.arange(6, dtype=np.float32).reshape(3, 2), out)
    np.testing.assert_array_equal(out, [2, 6, 10])


def test_a_size_declared_again_with_another_dtype_is_an_error() -> None:
    assert _error(MERGE.replace("N, H = T.int32(), T.int32()",
                                "N, H = T.int64(), T.int32()")) == (
        "4:12: 'N' is a size of dtype int32 from the parameters' shapes, declared here as int64")


def test_a_size_no_shape_string_created_declared_twice_is_a_redefinition() -> None:
    src = MERGE.replace("N, H = T.int32(), T.int32()", "N, H = T.int32(), T.int32()\n"
                        "    M = T.int32()\n    M = T.int32()")
    assert _error(src) == "6:5: redefinition of 'M'"


FORWARD = """
@T.prim_func
def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.sblock("row"):
            vi = T.axis.spatial(4, i)
            count = T.Buffer((1,), "int32")
            T.reads(A[vi, 0:count[0]])
            T.writes(B[vi])
            count = T.sblock_alloc_buffer((1,), "int32")
            count[0] = 3
            B[vi] = T.float32(0)
            for k in range(count[0]):
                B[vi] = B[vi] + A[vi, k]
"""


def test_a_block_buffer_declared_ahead_of_its_regions_is_the_allocation() -> None:
    """TVM declares a block's buffer with `T.Buffer` before the regions that name it, then
    allocates it: the regions name the allocation, and tirc prints it back so."""
    mod = round_trip(FORWARD)
    blocks: list = []
    post_order_visit(mod["f"].body, lambda n: blocks.append(n.block)
                     if isinstance(n, BlockRealize) else None)
    (blk,) = blocks
    (count,) = blk.alloc_buffers
    uses: list = []
    post_order_visit(blk.reads, lambda n: uses.append(n) if getattr(n, "buffer", None)
                     is not None and n.buffer.name == "count" else None)
    assert uses and all(u.buffer is count for u in uses)
    assert 'count = T.Buffer((1,), "int32")\n                T.reads(' in print_module(mod)
    out = np.zeros(4, np.float32)
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    Interpreter(mod).call("f", a, out)
    np.testing.assert_array_equal(out, a[:, :3].sum(1))


def test_a_block_buffer_declared_ahead_with_another_dtype_is_a_redefinition() -> None:
    src = FORWARD.replace('T.sblock_alloc_buffer((1,), "int32")',
                          'T.sblock_alloc_buffer((1,), "int64")')
    assert _error(src) == "10:13: redefinition of 'count'"


BARRIER = """
@T.prim_func
def f(A: T.Buffer((32,), "float32")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        if T.tvm_thread_invariant(A[0] > T.float32(0)):
            A[tx] = A[tx] + T.float32(1)
        T.tvm_storage_sync("shared", LOAD, BLOCKS)
"""


def test_storage_sync_with_its_global_barrier_operands_at_their_defaults() -> None:
    """TVM 0.27 prints `T.tvm_storage_sync("shared", T.bool(False), -1)`; the operands of a
    barrier across blocks at their defaults are the block barrier. `T.tvm_thread_invariant`
    (TVM's mark of a condition every thread computes alike) is its condition."""
    mod = round_trip(BARRIER.replace("LOAD", "T.bool(False)").replace("BLOCKS", "-1"))
    text = print_module(mod)
    assert 'T.tvm_storage_sync("shared")' in text
    assert "if A[0] > T.float32(0.0):" in text


@pytest.mark.parametrize("load, blocks, where", [
    ("T.bool(True)", "-1", "7:38: unsupported: T.tvm_storage_sync with is_load other than "
     "False (a barrier across blocks)"),
    ("T.bool(False)", "4", "7:53: unsupported: T.tvm_storage_sync with num_blocks other than "
     "-1 (a barrier across blocks)")])
def test_a_barrier_across_blocks_is_refused(load: str, blocks: str, where: str) -> None:
    assert _error(BARRIER.replace("LOAD", load).replace("BLOCKS", blocks)) == where
