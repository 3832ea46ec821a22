"""gpu-launch-dims: one extent per thread axis and kernel."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_support import lower
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.gpu.launch import launch_extents
from tirc.ir.gpu.threads import launch_regions
from tirc.ir.interpreter.gpu import check_races
from tirc.ir.printer import print_function
from tirc.passes.gpu.launch_dims import GPULaunchDims

TWO_EXTENTS = """
@T.prim_func
def f(A: T.Buffer((4, 64), "float32"), B: T.Buffer((4, 32), "float32")):
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            A[bx, tx] = T.float32(1)
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            B[bx, tx] = T.float32(2)
"""


def test_shorter_loop_gets_launch_extent_and_guard() -> None:
    out = GPULaunchDims()(parse(TWO_EXTENTS))
    lines = [x.strip() for x in print_function(out["f"])]
    assert lines.count('for tx in T.thread_binding(64, thread="threadIdx.x"):') == 2
    assert "if tx < 32:" in lines
    (region,) = launch_regions(out["f"].body)
    assert {k: v.value for k, v in launch_extents(region).items()} == \
        {"blockIdx.x": 4, "threadIdx.x": 64}


def test_guarded_kernel_writes_only_its_elements() -> None:
    a, b = np.zeros((4, 64), np.float32), np.full((4, 32), 7, np.float32)
    check_races(lower(TWO_EXTENTS), "f", [a, b])
    assert (a == 1).all() and (b == 2).all()


def test_different_symbolic_extents_are_an_error() -> None:
    with pytest.raises(CompileError) as info:
        GPULaunchDims()(parse("""
@T.prim_func
def f(a: T.handle, n: T.int32):
    m = T.int32()
    A = T.match_buffer(a, (m,), "float32")
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(m, thread="threadIdx.x"):
            A[tx] = T.float32(1)
        for tx in T.thread_binding(n, thread="threadIdx.x"):
            A[tx] = T.float32(2)
"""))
    assert info.value.diagnostics[0].message == (
        "gpu-launch-dims: loops bound to threadIdx.x in one kernel have different extents, and "
        "not all are constants (loop 'tx' and loop 'tx'); give them one extent")
