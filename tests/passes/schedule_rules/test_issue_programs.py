"""Issue 15's programs, which the hand-built default schedule computed wrongly at -O1 and
above (a segfault, NaN, inf; a wrong float16 dot product), and variants of them: each at -O0
to -O3 equals NumPy and the reference interpreter. All programs are one module, so each -O
level is one build."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tirc.backends import build
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter
from tirc.ir.target import parse_target
from tirc.passes.manager import run_pipeline
from tirc.passes.pass_base import PassContext
from tirc.passes.pipeline import build_pipeline, default_pipeline
from tirc.runtime import load

PROGRAMS = """
@T.prim_func
def l2norm(X: T.Buffer((16, 100), "float32"), Y: T.Buffer((16, 100), "float32")):
    S = T.alloc_buffer((16,), "float32")
    for i, k in T.grid(16, 100):
        with T.block("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = T.float32(1e-6)
            S[vi] = S[vi] + X[vi, vk] * X[vi, vk]
    for i, j in T.grid(16, 100):
        with T.block("Y"):
            vi, vj = T.axis.remap("SS", [i, j])
            Y[vi, vj] = X[vi, vj] / T.sqrt(S[vi])


@T.prim_func
def dot16(A: T.Buffer((8, 256), "float16"), B: T.Buffer((256,), "float16"),
          C: T.Buffer((8,), "float16")):
    acc = T.alloc_buffer((8,), "float32")
    for i, k in T.grid(8, 256):
        with T.block("acc"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                acc[vi] = T.float32(0)
            acc[vi] = acc[vi] + T.cast(A[vi, vk], "float32") * T.cast(B[vk], "float32")
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = T.cast(acc[vi], "float16")


@T.prim_func
def column_sums(X: T.Buffer((37, 50), "float32"), S: T.Buffer((50,), "float32")):
    for i, j in T.grid(37, 50):
        with T.block("S"):
            vi, vj = T.axis.remap("RS", [i, j])
            with T.init():
                S[vj] = T.float32(0.5)
            S[vj] = S[vj] + X[vi, vj]


@T.prim_func
def two_buffers(A: T.Buffer((9, 70), "float32"), B: T.Buffer((9, 70), "float32"),
                C: T.Buffer((9,), "float32")):
    for i, k in T.grid(9, 70):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + A[vi, vk] * B[vi, vk]


@T.prim_func
def int8_rows(A: T.Buffer((6, 33), "int8"), W: T.Buffer((33,), "int8"),
              C: T.Buffer((6,), "int32")):
    for i, k in T.grid(6, 33):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = 3
            C[vi] = C[vi] + T.cast(A[vi, vk], "int32") * T.cast(W[vk], "int32")


@T.prim_func
def half_columns(a: T.handle, s: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n, 40), "float16")
    S = T.match_buffer(s, (40,), "float32")
    for i, j in T.grid(n, 40):
        with T.block("S"):
            vi, vj = T.axis.remap("RS", [i, j])
            with T.init():
                S[vj] = T.float32(0)
            S[vj] = S[vj] + T.cast(A[vi, vj], "float32")


@T.prim_func
def rows_then_scale(a: T.handle, y: T.handle):
    m = T.int64()
    n = T.int64()
    A = T.match_buffer(a, (m, n), "float32")
    Y = T.match_buffer(y, (m, n), "float32")
    M = T.alloc_buffer((m,), "float32")
    for i, k in T.grid(m, n):
        with T.block("M"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                M[vi] = T.float32(1)
            M[vi] = T.max(M[vi], A[vi, vk])
    for i, j in T.grid(m, n):
        with T.block("Y"):
            vi, vj = T.axis.remap("SS", [i, j])
            Y[vi, vj] = A[vi, vj] / M[vi]
"""


def _expected(name: str, args: list[np.ndarray]) -> list[np.ndarray]:
    """NumPy's results (computed in float64, cast to each output's dtype)."""
    a = [x.astype(np.float64) for x in args]
    if name == "l2norm":
        s = 1e-6 + (a[0] * a[0]).sum(axis=1)
        return [a[0] / np.sqrt(s)[:, None]]
    if name == "dot16":
        return [(a[0] @ a[1]).astype(np.float16)]
    if name == "column_sums":
        return [0.5 + a[0].sum(axis=0)]
    if name == "two_buffers":
        return [(a[0] * a[1]).sum(axis=1)]
    if name == "int8_rows":
        return [3 + args[0].astype(np.int64) @ args[1].astype(np.int64)]
    if name == "half_columns":
        return [a[0].sum(axis=0)]
    m = np.maximum(1.0, a[0].max(axis=1))
    return [a[0] / m[:, None]]


# (An empty reduction is left out: a block's init runs on its first reduction iteration, so
# with none the output is not written at -O0, while the default schedule's init block writes
# it.)
SIZES = {"half_columns": [(1, 40), (5, 40), (33, 40)],
         "rows_then_scale": [(3, 1), (4, 17), (2, 64)]}
OUTPUTS = {"l2norm": 1, "dot16": 2, "column_sums": 1, "two_buffers": 2, "int8_rows": 2,
           "half_columns": 1, "rows_then_scale": 1}


def _inputs(func, shape: tuple[int, ...] | None, rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for p in func.params:
        buf = func.buffer_map[p]
        dims = [getattr(d, "value", None) for d in buf.shape]
        if shape is not None and None in dims:
            dims = list(shape) if len(dims) == len(shape) else [shape[-1]]
        dt = buf.dtype.numpy_name()
        if dt.startswith("int"):
            out.append(rng.integers(-100, 100, dims).astype(dt))
        else:
            out.append((rng.standard_normal(dims) + (3 if dt == "float32" else 0)).astype(dt))
    return out


@pytest.fixture(scope="module")
def libraries(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    target = parse_target("llvm")
    out = {}
    for opt in range(4):
        mod = run_pipeline(parse(PROGRAMS), build_pipeline(default_pipeline(target, opt)),
                           PassContext(opt_level=opt, target=target))
        path = tmp_path_factory.mktemp("issue15") / f"programs_O{opt}.so"
        build(mod, path, target, opt)
        out[opt] = path
    return out


@pytest.mark.parametrize("opt", range(4))
@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_program_equals_numpy_and_the_interpreter(libraries: dict[int, Path], name: str,
                                                  opt: int) -> None:
    mod = parse(PROGRAMS)
    func = mod[name]
    lib = load(libraries[opt])
    rng = np.random.default_rng(opt)
    for shape in SIZES.get(name, [None]):
        args = _inputs(func, shape, rng)
        n_in = len(args) - 1 if name in ("half_columns", "rows_then_scale") else OUTPUTS[name]
        inputs = args[:n_in]
        compiled = [a.copy() for a in args]
        getattr(lib, name)(*compiled)
        interpreted = [a.copy() for a in args]
        Interpreter(mod).call(name, *interpreted)
        want = _expected(name, inputs)
        dt = args[-1].dtype
        tol = 1e-2 if dt == np.float16 else 1e-4
        for got in (compiled[-1], interpreted[-1]):
            if dt.kind == "i":
                np.testing.assert_array_equal(got, want[0])
            else:
                np.testing.assert_allclose(got.astype(np.float64), want[0], rtol=tol,
                                           atol=tol, err_msg=f"{name} -O{opt} {shape}")
