"""The metadata's `flops` of a function: counted in integers when every loop has a constant
extent, as an expression of the sizes otherwise; both count each float operation once per
lane and per iteration of the loops around it."""

from __future__ import annotations

from tirc.backends.op_count import constant_flop_count, flop_count, flops_text
from tirc.frontend import parse

PROGRAM = """\
@I.ir_module
class Module:
    @T.prim_func
    def fixed(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            B[i] = T.float32(0.0)
            for k in range(4):
                B[i] = B[i] + A[i, k] * T.float32(2.0)
        for i in range(2):
            B[T.Ramp(i * 4, 1, 4)] = B[T.Ramp(i * 4, 1, 4)] * T.Broadcast(T.float32(3.0), 4)

    @T.prim_func
    def sized(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n, 4), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in range(n):
            for k in range(4):
                B[i] = B[i] + A[i, k] * T.float32(2.0)
"""


def test_constant_extents_count_in_integers() -> None:
    mod = parse(PROGRAM)
    body = mod["fixed"].body
    # 8 * 4 iterations of (+, *), and 2 iterations of a 4-lane *
    assert constant_flop_count(body) == 8 * 4 * 2 + 2 * 4
    assert flops_text(body) == 72
    assert flop_count(body).dtype.bits == 64


def test_a_symbolic_extent_gives_an_expression() -> None:
    body = parse(PROGRAM)["sized"].body
    assert constant_flop_count(body) is None
    assert flops_text(body) == "n * 8"
