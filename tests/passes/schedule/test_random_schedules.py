"""Random sequences of primitives on a three-stage kernel: every schedule that applies
computes what the original does (and every one that does not is a diagnostic)."""

from __future__ import annotations

import random

import numpy as np
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter import run_prim_func
from tirc.passes.schedule.apply import ApplySchedules
from tirc.passes.verify import Verify

KERNEL = '''
@T.prim_func
def f(A: T.Buffer((12, 10), "float32"), W: T.Buffer((10, 6), "float32"),
      D: T.Buffer((12, 6), "float32")):
    B = T.alloc_buffer((12, 10), "float32")
    C = T.alloc_buffer((12, 6), "float32")
    for i, j in T.grid(12, 10):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j, k in T.grid(12, 6, 10):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + B[vi, vk] * W[vk, vj]
    for i, j in T.grid(12, 6):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = T.max(C[vi, vj], T.float32(0))
'''

OPS = ("split", "reorder", "fuse", "parallel", "vectorize", "unroll", "compute_at",
       "reverse_compute_at", "inline", "cache_read", "cache_write", "decompose", "rfactor",
       "blockize")


def random_schedule(rng: random.Random) -> list[str]:
    lines = ['b = sch.get_block("B")', 'c = sch.get_block("C")', 'd = sch.get_block("D")',
             "ci, cj, ck = sch.get_loops(c)"]
    loops = ["ci", "cj", "ck"]
    for n in range(rng.randint(1, 6)):
        op, lp = rng.choice(OPS), rng.choice(loops)
        if op == "split":
            lines.append(f"x{n}, y{n} = sch.split({lp}, factors=[None, {rng.randint(2, 5)}])")
            loops += [f"x{n}", f"y{n}"]
        elif op == "reorder":
            lines.append(f"sch.reorder({', '.join(rng.sample(loops, 2))})")
        elif op == "fuse":
            lines.append(f"f{n} = sch.fuse({', '.join(rng.sample(loops, 2))})")
            loops.append(f"f{n}")
        elif op in ("parallel", "vectorize", "unroll"):
            lines.append(f"sch.{op}({lp})")
        elif op == "compute_at":
            lines.append(f"sch.compute_at(b, {lp})")
        elif op == "reverse_compute_at":
            lines.append(f"sch.reverse_compute_at(d, {lp})")
        elif op == "inline":
            lines.append(rng.choice(["sch.compute_inline(b)", "sch.reverse_compute_inline(d)"]))
        elif op == "cache_read":
            lines.append(f"r{n} = sch.cache_read(c, {rng.randint(0, 2)}, \"local\")")
        elif op == "cache_write":
            lines.append(f"w{n} = sch.cache_write(c, 0, \"local\")")
        elif op == "decompose":
            lines.append(f"i{n} = sch.decompose_reduction(c, {lp})")
        elif op == "rfactor":
            lines.append(f"rf{n} = sch.rfactor({lp}, {rng.randint(0, 2)})")
        else:
            lines.append(f"o{n} = sch.blockize({lp})")
    return lines


def test_random_schedules_keep_meaning():
    rng = random.Random(7)
    applied = 0
    for trial in range(60):
        text = KERNEL + '\n@S.schedule("f")\ndef _(sch):\n' + "".join(
            f"    {line}\n" for line in random_schedule(rng))
        mod = parse(text, "f.tir")
        try:
            after = ApplySchedules()(mod)
        except CompileError:
            continue
        applied += 1
        Verify()(after)
        data = np.random.default_rng(trial)
        args = [data.standard_normal((12, 10)).astype("float32"),
                data.standard_normal((10, 6)).astype("float32"), np.zeros((12, 6), "float32")]
        expected = [a.copy() for a in args]
        run_prim_func(mod["f"], expected)  # type: ignore[arg-type]
        run_prim_func(after["f"], args)  # type: ignore[arg-type]
        np.testing.assert_allclose(args[2], expected[2], rtol=1e-4, atol=1e-4, err_msg=text)
    assert applied >= 15
