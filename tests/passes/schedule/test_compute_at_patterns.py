"""compute_at and reverse_compute_at over many access patterns and tilings: every schedule
that applies computes what the original does; every one that cannot is a diagnostic."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter import run_prim_func
from tirc.passes.schedule.apply import ApplySchedules
from tirc.passes.verify import Verify

# How the consumer C (of extent M) reads the producer's B (of extent 24).
PATTERNS = {
    "point": (24, "B[vi]"),
    "stride": (12, "B[vi * 2]"),
    "pair": (12, "B[vi * 2] + B[vi * 2 + 1]"),
    "halo": (24, "B[T.max(vi - 1, 0)] + B[vi] + B[T.min(vi + 1, 23)]"),
    "shift": (20, "B[vi + 4]"),
    "half": (24, "B[vi // 2]"),
    "quad": (6, "B[vi * 4] + B[vi * 4 + 3]"),
}


def kernel(m: int, read: str) -> str:
    return f'''
@T.prim_func
def f(A: T.Buffer((24,), "float32"), C: T.Buffer(({m},), "float32")):
    B = T.alloc_buffer((24,), "float32")
    for i in range(24):
        with T.block("B"):
            vi = T.axis.spatial(24, i)
            B[vi] = A[vi] * T.float32(2) + T.float32(1)
    for i in range({m}):
        with T.block("C"):
            vi = T.axis.spatial({m}, i)
            C[vi] = {read}
'''


def run(text: str) -> bool:
    """Apply the schedule; False when it is refused with a diagnostic, else check meaning."""
    mod = parse(text, "f.tir")
    try:
        after = ApplySchedules()(mod)
    except CompileError as e:
        assert "error:" in str(e)
        return False
    Verify()(after)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(24).astype("float32")
    m = after["f"].buffer_map[after["f"].params[1]].shape[0].value  # type: ignore[union-attr]
    want = [a.copy(), np.zeros(m, "float32")]
    got = [a.copy(), np.zeros(m, "float32")]
    run_prim_func(mod["f"], want)  # type: ignore[arg-type]
    run_prim_func(after["f"], got)  # type: ignore[arg-type]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6, err_msg=text)
    return True


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_compute_at_patterns(pattern: str):
    m, read = PATTERNS[pattern]
    applied = 0
    for factor in (1, 2, 3, 4, 5, 7):
        applied += run(kernel(m, read) + f'''
@S.schedule("f")
def _(sch):
    b = sch.get_block("B")
    c = sch.get_block("C")
    i, = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, {factor}])
    sch.compute_at(b, i0)
''')
    assert applied == 6  # compute_at recomputes what it needs, so every tiling applies


EXPECTED_REVERSE = {
    # pattern: the producer tile sizes reverse_compute_at accepts (the consumer's reads of
    # one instance must fall inside one tile, and the tiles must share out the instances)
    "point": {1, 2, 3, 4, 5, 6, 7, 8},
    "stride": {1, 2, 3, 4, 5, 6, 7, 8},
    "pair": {2, 4, 6, 8},
    "halo": set(),
    "shift": {1, 2, 3, 4, 5, 6, 7, 8},
    "half": {1, 2, 3, 4, 5, 6, 7, 8},
    "quad": {4, 8},
}


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_reverse_compute_at_patterns(pattern: str):
    m, read = PATTERNS[pattern]
    accepted = set()
    for factor, inner in itertools.product(range(1, 9), (False, True)):
        nest, target = f"i0, i1 = sch.split(i, factors=[None, {factor}])", "i0"
        if inner:
            nest, target = f"i0, i1, i2 = sch.split(i, factors=[None, 2, {factor}])", "i1"
        if run(kernel(m, read) + f'''
@S.schedule("f")
def _(sch):
    b = sch.get_block("B")
    c = sch.get_block("C")
    i, = sch.get_loops(b)
    {nest}
    sch.reverse_compute_at(c, {target})
''') and not inner:
            accepted.add(factor)
    assert accepted == EXPECTED_REVERSE[pattern]
