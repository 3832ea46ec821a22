"""The primitives and checks the schedule rules brought: dispatch, add_unit_loop, bind of a
reduction loop to threads (a cross-thread reduction), the check that parallel iterations run
distinct block instances, and rfactor under a loop shared with other blocks."""

from __future__ import annotations

import textwrap

import numpy as np
from tirc.frontend import parse
from tirc.ir.interpreter.gpu import check_races

ROWS = '''
@T.prim_func
def rows(a: T.handle, b: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n, 48), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i, k in T.grid(n, 48):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(2)
            B[vi] = B[vi] + A[vi, vk]
'''

SMEAR = '''
@T.prim_func
def smear(a: T.Buffer((8,), "float32"), c: T.Buffer((12,), "float32")):
    for i, k in T.grid(8, 5):
        with T.block("s"):
            vi = T.axis.spatial(12, i + k)
            c[vi] = c[vi] + a[i] * T.float32(k + 1)
'''

NORM = '''
@T.prim_func
def norm(X: T.Buffer((6, 40), "float32"), Y: T.Buffer((6, 40), "float32")):
    S = T.alloc_buffer((6,), "float32")
    for i, k in T.grid(6, 40):
        with T.block("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = T.float32(1)
            S[vi] = S[vi] + X[vi, vk] * X[vi, vk]
    for i, j in T.grid(6, 40):
        with T.block("Y"):
            vi, vj = T.axis.remap("SS", [i, j])
            Y[vi, vj] = X[vi, vj] / S[vi]
'''


def schedule(kernel: str, func: str, body: str, target: str = "") -> str:
    t = f', target="{target}"' if target else ""
    return kernel + f'\n@S.schedule("{func}"{t})\ndef _(sch):\n' + textwrap.indent(
        textwrap.dedent(body).strip(), "    ") + "\n"


def test_dispatch_specialises_a_size_and_keeps_meaning(sched) -> None:
    r = sched(schedule(ROWS, "rows", '''
        sch.dispatch("n", 1)
        b1 = sch.get_block("B_n1")
        i, k = sch.get_loops(b1)
        sch.unroll(k)
        b = sch.get_block("B")
        i, k = sch.get_loops(b)
        sch.parallel(i)
    '''))
    text = r.text("rows")
    assert "if n == T.int64(1):" in text and 'with T.block("n_eq_1"):' in text
    assert 'T.block_attr({"tirc.variant": "n == 1"})' in text
    assert "for k in T.unroll(48):" in text and "for i in T.parallel(n):" in text
    for n in (1, 3):
        r.check_same("rows", sizes={"n": n})


def test_dispatch_errors(sched_error) -> None:
    msg = sched_error(schedule(ROWS, "rows", 'sch.dispatch("m", 1)'))
    assert 'error: dispatch: "m" is not a size variable or integer scalar parameter of ' \
        'function "rows" (it has: n)' in msg
    msg = sched_error(schedule(ROWS, "rows", 'sch.dispatch("n", 1.5)'))
    assert "error: dispatch: the value must be an integer, got 1.5" in msg


def test_add_unit_loop_gives_a_loop_to_bind(sched) -> None:
    r = sched(schedule(SMEAR, "smear", '''
        s = sch.get_block("s")
        i, k = sch.get_loops(s)
        u = sch.add_unit_loop(i)
        sch.bind(u, "threadIdx.x")
    ''', "cuda"))
    assert 'for u in T.thread_binding(1, thread="threadIdx.x"):' in r.text("smear")
    r.check_same("smear")


def test_parallel_iterations_must_run_distinct_instances(sched_error) -> None:
    # vi = i + k reaches element 1 from (i, k) = (1, 0) and (0, 1): two threads would add
    # (k alone is fine: for one i its iterations reach different elements)
    for prim in ('sch.parallel(i)', 'sch.bind(i, "threadIdx.x")'):
        msg = sched_error(schedule(SMEAR, "smear", f'''
            s = sch.get_block("s")
            i, k = sch.get_loops(s)
            {prim}
        '''))
        name = prim.split("(")[0].split(".")[1]
        assert f"error: {name}: different iterations of loop" in msg and \
            'may run the same instance of block "s"' in msg


def test_fused_and_split_loops_still_run_distinct_instances(sched) -> None:
    r = sched(schedule(NORM, "norm", '''
        y = sch.get_block("Y")
        i, j = sch.get_loops(y)
        f = sch.fuse(i, j)
        o, t = sch.split(f, factors=[None, 64])
        sch.bind(t, "threadIdx.x")
        sch.bind(o, "blockIdx.x")
    ''', "cuda"))
    assert 'thread="threadIdx.x"' in r.text("norm")
    r.check_same("norm")


def test_bind_of_a_reduction_loop_is_a_cross_thread_reduction(sched_error) -> None:
    text = schedule(ROWS, "rows", '''
        b = sch.get_block("B")
        i, k = sch.get_loops(b)
        ko, ki = sch.split(k, factors=[None, 20])
        sch.reorder(ki, ko)
        sch.bind(i, "blockIdx.x")
        sch.bind(ki, "threadIdx.x")
    ''', "cuda")
    from gpu_support import lower

    mod = lower(parse(text))
    kernel = "\n".join(mod.script().splitlines())
    assert 'scope="shared"' in kernel and kernel.count('T.tvm_storage_sync("shared")') >= 5
    x = np.random.default_rng(0).standard_normal((3, 48)).astype(np.float32)
    b = np.full(3, np.nan, np.float32)
    check_races(mod, "rows", [x, b])  # 20 threads: a tree over a non-power of two
    np.testing.assert_allclose(b, 2 + x.sum(axis=1), rtol=1e-5, atol=1e-5)
    for body, message in [
        ('sch.bind(k, "blockIdx.x")', "it can be bound to threadIdx.x/y/z (a cross-thread "
         "reduction), not blockIdx.x"),
        ('ko, ki = sch.split(k, factors=[None, 8])\nsch.bind(ki, "threadIdx.x")',
         'reduction loop k_0 of block "B" is outside loop k_1; the threads must finish each '
         "element's reduction together"),
    ]:
        msg = sched_error(schedule(ROWS, "rows", 'b = sch.get_block("B")\ni, k = '
                                   f'sch.get_loops(b)\n{body}', "cuda"))
        assert "error: bind: " in msg and message in msg


def test_rfactor_under_a_loop_other_blocks_share(sched) -> None:
    r = sched(schedule(NORM, "norm", '''
        s = sch.get_block("S")
        y = sch.get_block("Y")
        i, k = sch.get_loops(s)
        sch.reverse_compute_at(y, i)
        k0, k1 = sch.split(k, factors=[None, 16])
        rf = sch.rfactor(k1, factor_axis=1)
        sch.parallel(i)
    '''))
    text = r.text("norm")
    assert text.count("for i in T.parallel(6):") == 1 and 'T.block("S_rf")' in text
    r.check_same("norm")
