"""A graph reduction over an axis of size 0: the sum is 0 and the product 1 at every level.
The reduction block (and so its init) never runs; the kernel's `<name>_or_init` stage writes
the identity instead; the output's storage may be another tensor's, reused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from graph_support import compile_levels, interpret
from tirc.frontend import parse, parse_file
from tirc.ir.printer import print_module
from tirc.passes.graph.legalize_ops import LegalizeOps
from tirc.passes.pass_base import PassContext

# `c` and `d` are dead once `e` is computed: -O0's memory plan gave `s` their storage, and
# the sum over n = 0 read 144 where 96 is right.
REUSED = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, "n"), "float32"), z: R.Tensor((4, 3), "float32"),
             w: R.Tensor(("n", 5), "float32")):
        a = R.add(z, z)
        b = R.multiply(a, a)
        c = R.sum(b, axis=[1])
        d = R.add(c, c)
        s = R.sum(x, axis=[1])
        e = R.add(d, s)
        p = R.prod(x, axis=[1])
        m = R.matmul(x, w)
        return (e, p, m)
"""


def test_sum_product_and_matmul_over_an_empty_axis(tmp_path: Path) -> None:
    path, libs = compile_levels(REUSED, tmp_path, (0, 1, 3))
    mod = parse_file(path)
    z = np.full((4, 3), 2.0, dtype="float32")
    for n in (0, 3):
        x = np.ones((4, n), dtype="float32")
        w = np.ones((n, 5), dtype="float32")
        want = [2 * (4 * z * z).sum(axis=1) + x.sum(axis=1), x.prod(axis=1), x @ w]
        runs = {"interpreter": interpret(mod, [x, z, w])}
        runs.update({f"-O{level}": lib.main(x, z, w) for level, lib in libs.items()})
        for where, got in runs.items():
            for g, expected in zip(got, want):
                np.testing.assert_array_equal(np.asarray(g), expected, err_msg=f"{where}, n={n}")


def test_the_identity_stage_is_there_only_where_the_axis_may_be_empty() -> None:
    text = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, "n"), "float32"), y: R.Tensor(("n", 3), "float32")):
        s = R.sum(x, axis=[1])
        t = R.sum(y, axis=[1])
        return (s, t)
"""
    out = print_module(LegalizeOps()(parse(text), PassContext()))
    assert out.count('T.block("T_sum_or_init")') == 1
    stage = out[out.index('T.block("T_sum_or_init")'):]
    assert "T_sum[v_i0] = T.Select(n == T.int64(0), T.float32(0.0), T_sum_acc[v_i0])" in stage
