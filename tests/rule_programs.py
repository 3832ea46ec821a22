"""Loop functions, one or more per schedule rule, for the rule tests: each names the rule
(and block) the default schedule must give it on the CPU and on the GPU, and the symbolic
sizes to run it at."""

from __future__ import annotations

from dataclasses import dataclass, field

PROGRAMS = """
@T.prim_func
def matmul_bias(a: T.handle, W: T.Buffer((32, 48), "float32"), b: T.Buffer((48,), "float32"),
                c: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n, 32), "float32")
    C = T.match_buffer(c, (n, 48), "float32")
    M = T.alloc_buffer((n, 48), "float32")
    for i, j, k in T.grid(n, 48, 32):
        with T.block("M"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                M[vi, vj] = T.float32(0)
            M[vi, vj] = M[vi, vj] + A[vi, vk] * W[vk, vj]
    for i, j in T.grid(n, 48):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.max(M[vi, vj] + b[vj], T.float32(0))


@T.prim_func
def batch_mm(A: T.Buffer((3, 20, 16), "float32"), B: T.Buffer((3, 16, 24), "float32"),
             C: T.Buffer((3, 20, 24), "float32")):
    for b, i, j, k in T.grid(3, 20, 24, 16):
        with T.block("C"):
            vb, vi, vj, vk = T.axis.remap("SSSR", [b, i, j, k])
            with T.init():
                C[vb, vi, vj] = T.float32(0)
            C[vb, vi, vj] = C[vb, vi, vj] + A[vb, vi, vk] * B[vb, vk, vj]


@T.prim_func
def matmul_k(a: T.handle, b: T.handle, C: T.Buffer((24, 40), "float32")):
    k = T.int64()
    A = T.match_buffer(a, (24, k), "float32")
    B = T.match_buffer(b, (k, 40), "float32")
    for i, j, r in T.grid(24, 40, k):
        with T.block("C"):
            vi, vj, vr = T.axis.remap("SSR", [i, j, r])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vr] * B[vr, vj]


@T.prim_func
def gemv_cols(x: T.Buffer((1, 64), "float32"), W: T.Buffer((64, 96), "float32"),
              y: T.Buffer((1, 96), "float32")):
    for i, j, k in T.grid(1, 96, 64):
        with T.block("y"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                y[vi, vj] = T.float32(0)
            y[vi, vj] = y[vi, vj] + x[vi, vk] * W[vk, vj]


@T.prim_func
def gemv_rows(A: T.Buffer((24, 80), "float32"), x: T.Buffer((80,), "float32"),
              y: T.Buffer((24,), "float32")):
    for i, k in T.grid(24, 80):
        with T.block("y"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                y[vi] = T.float32(0)
            y[vi] = y[vi] + A[vi, vk] * x[vk]


@T.prim_func
def softmax(a: T.handle, p: T.handle):
    m = T.int64()
    A = T.match_buffer(a, (m, 70), "float32")
    P = T.match_buffer(p, (m, 70), "float32")
    mx = T.alloc_buffer((m,), "float32")
    e = T.alloc_buffer((m, 70), "float32")
    s = T.alloc_buffer((m,), "float32")
    for i, k in T.grid(m, 70):
        with T.block("mx"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                mx[vi] = T.min_value("float32")
            mx[vi] = T.max(mx[vi], A[vi, vk])
    for i, k in T.grid(m, 70):
        with T.block("e"):
            vi, vk = T.axis.remap("SS", [i, k])
            e[vi, vk] = T.exp(A[vi, vk] - mx[vi])
    for i, k in T.grid(m, 70):
        with T.block("s"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                s[vi] = T.float32(0)
            s[vi] = s[vi] + e[vi, vk]
    for i, k in T.grid(m, 70):
        with T.block("p"):
            vi, vk = T.axis.remap("SS", [i, k])
            P[vi, vk] = e[vi, vk] / s[vi]


@T.prim_func
def row_sum(a: T.handle, b: T.handle):
    m = T.int64()
    n = T.int64()
    A = T.match_buffer(a, (m, n), "float32")
    B = T.match_buffer(b, (m,), "float32")
    for i, k in T.grid(m, n):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def col_sum(A: T.Buffer((30, 200), "float32"), B: T.Buffer((200,), "float32")):
    for k, j in T.grid(30, 200):
        with T.block("B"):
            vk, vj = T.axis.remap("RS", [k, j])
            with T.init():
                B[vj] = T.float32(0)
            B[vj] = B[vj] + A[vk, vj]


@T.prim_func
def transpose_add(a: T.handle, b: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n, 24), "float32")
    B = T.match_buffer(b, (24, n), "float32")
    for i, j in T.grid(24, n):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vj, vi] + T.float32(1)


@T.prim_func
def conv(x: T.handle, W: T.Buffer((8, 4, 3, 3), "float32"), y: T.handle):
    n = T.int64()
    X = T.match_buffer(x, (n, 4, 10, 10), "float32")
    Y = T.match_buffer(y, (n, 8, 8, 8), "float32")
    for b, f, oh, ow, rc, ry, rx in T.grid(n, 8, 8, 8, 4, 3, 3):
        with T.block("Y"):
            vb, vf, voh, vow, vrc, vry, vrx = T.axis.remap("SSSSRRR",
                                                           [b, f, oh, ow, rc, ry, rx])
            with T.init():
                Y[vb, vf, voh, vow] = T.float32(0)
            Y[vb, vf, voh, vow] = Y[vb, vf, voh, vow] + \\
                X[vb, vrc, voh + vry, vow + vrx] * W[vf, vrc, vry, vrx]


@T.prim_func
def smear(a: T.Buffer((8,), "float32"), c: T.Buffer((12,), "float32")):
    for i, k in T.grid(8, 5):
        with T.block("s"):
            vi = T.axis.spatial(12, i + k)
            c[vi] = c[vi] + a[i] * T.float32(k + 1)
"""


@dataclass(frozen=True)
class Case:
    """A function, the rule and block the CPU and GPU default schedules give it, the sizes to
    run it at, and which of its parameters are outputs."""

    func: str
    cpu: tuple[str, str]
    gpu: tuple[str, str]
    sizes: dict[str, int] = field(default_factory=dict)
    outputs: tuple[int, ...] = (-1,)


CASES = [
    Case("matmul_bias", ("matmul", "M"), ("gpu-matmul", "M"), {"n": 11}),
    Case("batch_mm", ("matmul", "C"), ("gpu-matmul", "C")),
    Case("matmul_k", ("matmul", "C"), ("gpu-matmul", "C"), {"k": 13}),
    Case("gemv_cols", ("matvec", "y"), ("gpu-matvec", "y")),
    Case("gemv_rows", ("matvec", "y"), ("gpu-matvec", "y")),
    Case("softmax", ("norm", "mx"), ("gpu-norm", "mx"), {"m": 3}),
    Case("row_sum", ("reduction", "B"), ("gpu-reduction", "B"), {"m": 3, "n": 45}),
    Case("col_sum", ("reduction", "B"), ("gpu-reduction", "B")),
    Case("transpose_add", ("injective", "B"), ("gpu-injective", "B"), {"n": 19}),
    Case("conv", ("conv", "Y"), ("gpu-reduction", "Y"), {"n": 2}),
    Case("smear", ("fallback", "s"), ("gpu-fallback", "s")),
]
