"""The launch plan in the metadata: grids as shape expressions, arguments, workspaces."""

from __future__ import annotations

from gpu_support import sample_module
from tirc.driver import compile_ptx
from tirc.frontend import parse


def _plan(mod, name: str) -> dict:
    meta = compile_ptx(mod, "cuda -arch=sm_90").metadata
    return next(f for f in meta["functions"] if f["name"] == name)


def test_grid_from_the_shapes() -> None:
    plan = _plan(sample_module("matmul_tiled"), "matmul_tiled")
    (launch,) = plan["launches"]
    assert launch == {
        "kernel": "matmul_tiled_kernel", "grid": ["(n + 15) // 16", "(m + 15) // 16", 1],
        "block": [16, 16, 1], "shared_bytes": 0,
        "args": [{"kind": "buffer", "param": "a", "index": 0},
                 {"kind": "buffer", "param": "b", "index": 1},
                 {"kind": "buffer", "param": "c", "index": 2},
                 {"kind": "expr", "expr": "k", "dtype": "int64"},
                 {"kind": "expr", "expr": "m", "dtype": "int64"},
                 {"kind": "expr", "expr": "n", "dtype": "int64"}]}
    assert plan["vars"] == {"m": {"dtype": "int64", "from": "a.shape[0]"},
                            "k": {"dtype": "int64", "from": "a.shape[1]"},
                            "n": {"dtype": "int64", "from": "b.shape[1]"}}
    flags = [(p["name"], p["input"], p["output"]) for p in plan["params"]]
    assert flags == [("a", True, False), ("b", True, False), ("c", False, True)]


def test_scalar_parameter_and_workspace() -> None:
    plan = _plan(parse("""
@T.prim_func
def two(a: T.handle, b: T.handle, alpha: T.float32):
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    W = T.alloc_buffer((n,), "float32")
    for bx in T.thread_binding(n, thread="blockIdx.x"):
        for tx in T.thread_binding(1, thread="threadIdx.x"):
            W[bx] = A[bx] * alpha
    for bx in T.thread_binding(n, thread="blockIdx.x"):
        for tx in T.thread_binding(1, thread="threadIdx.x"):
            B[bx] = W[bx] + T.float32(1)
"""), "two")
    assert plan["workspaces"] == [{"name": "W", "dtype": "float32", "bytes": "n * 4"}]
    first, second = plan["launches"]
    assert first["args"] == [{"kind": "buffer", "param": "a", "index": 0},
                             {"kind": "workspace", "name": "W"},
                             {"kind": "param", "param": "alpha"},
                             {"kind": "expr", "expr": "n", "dtype": "int64"}]
    assert second["args"][:2] == [{"kind": "buffer", "param": "b", "index": 1},
                                  {"kind": "workspace", "name": "W"}]


def test_a_parameter_elem_offset_nothing_binds_is_passed_as_zero() -> None:
    """TVM's KV-cache kernels declare `elem_offset=pages_elem_offset` on a parameter; an
    argument's elements start at its data pointer (make-entry binds it to 0 on the CPU), so
    the kernel that reads it gets 0."""
    plan = _plan(parse("""
@T.prim_func
def copy(a: T.handle, b: T.handle):
    n = T.int64()
    off = T.int64()
    A = T.match_buffer(a, (n,), "float32", elem_offset=off)
    B = T.match_buffer(b, (n,), "float32")
    for bx in T.thread_binding(n, thread="blockIdx.x"):
        for tx in T.thread_binding(1, thread="threadIdx.x"):
            B[bx] = A[bx]
"""), "copy")
    (launch,) = plan["launches"]
    assert {"kind": "expr", "expr": "0", "dtype": "int64"} in launch["args"]
