"""sample_perfect_tile and sample_categorical: deterministic per seed, replayable."""

from __future__ import annotations

import math
import textwrap

import pytest
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.passes.pass_base import PassContext
from tirc.passes.schedule.apply import ApplySchedules
from tirc.passes.schedule.runner import run_schedule
from tirc.passes.schedule.state import ScheduleState

MATMUL = '''
@T.prim_func
def matmul(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"),
           C: T.Buffer((64, 64), "float32")):
    for i, j, k in T.grid(64, 64, 64):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
'''

SAMPLED = '''
b = sch.get_block("C")
i, j, k = sch.get_loops(b)
t0, t1, t2 = sch.sample_perfect_tile(i, n=3, max_innermost_factor=8)
io, im, ii = sch.split(i, factors=[t0, t1, t2])
u = sch.sample_categorical([0, 16, 64], [0.2, 0.3, 0.5])
sch.annotate(b, "unroll_max", u)
'''


def schedule(body: str) -> str:
    return MATMUL + '\n@S.schedule("matmul")\ndef _(sch):\n' + textwrap.indent(
        textwrap.dedent(body).strip(), "    ") + "\n"


def decisions(seed: int, body: str = SAMPLED) -> list:
    mod = parse(schedule(body), "s.tir")
    state = ScheduleState(mod["matmul"], seed)  # type: ignore[arg-type]
    run_schedule(mod["matmul"], mod.schedules[0], state=state)  # type: ignore[arg-type]
    return state.decisions


def test_same_seed_same_schedule():
    first = decisions(3)
    assert first == decisions(3)
    tile = first[0][1]
    assert first[0][0] == "sample_perfect_tile" and len(tile) == 3
    assert math.prod(tile) == 64 and tile[2] <= 8
    assert first[1][0] == "sample_categorical" and first[1][1] in (0, 1, 2)


def test_seeds_explore_the_space():
    tiles = {tuple(decisions(seed)[0][1]) for seed in range(12)}
    assert len(tiles) > 3
    assert all(math.prod(t) == 64 and t[2] <= 8 for t in tiles)


def test_seed_from_pass_config():
    mod = parse(schedule(SAMPLED), "s.tir")

    def text(seed: str) -> str:
        return ApplySchedules()(mod, PassContext(config={"schedule.seed": seed})).script()

    assert len({text(str(seed)) for seed in range(6)}) > 1
    assert text("4") == text("4")


def test_decisions_replay(sched):
    body = SAMPLED.replace("max_innermost_factor=8)", "max_innermost_factor=8, "
                           "decision=[2, 4, 8])").replace("[0.2, 0.3, 0.5])",
                                                          "[0.2, 0.3, 0.5], decision=1)")
    r = sched(schedule(body))
    out = r.text("matmul")
    assert "for i_0, i_1, i_2, j, k in T.grid(2, 4, 8, 64, 64):" in out
    assert 'T.block_attr({"unroll_max": 16})' in out


def test_sampling_errors(sched_error):
    msg = sched_error(schedule('''
        b = sch.get_block("C")
        i, j, k = sch.get_loops(b)
        t0, t1 = sch.sample_perfect_tile(i, n=2, decision=[4, 4])
    '''))
    assert "error: sample_perfect_tile: decision [4, 4] does not multiply to the loop extent " \
        "64" in msg
    msg = sched_error(schedule('''
        u = sch.sample_categorical([1, 2], [0.5, 0.5], decision=2)
    '''))
    assert "error: sample_categorical: decision 2 is not an index into the 2 candidates" in msg
    msg = sched_error(schedule('''
        u = sch.sample_categorical([1, 2], [0.5])
    '''))
    assert "error: sample_categorical: probs must list one probability per candidate (2)" in msg
    bad = parse(schedule('b = sch.get_block("C")'), "s.tir")

    with pytest.raises(CompileError, match="pass config schedule.seed must be an integer"):
        ApplySchedules()(bad, PassContext(config={"schedule.seed": "x"}))


def test_tvm_trace_with_keyword_arguments_replays(sched):
    """A schedule written as TVM prints a trace (keyword arguments, sampled values fed to
    later primitives, decisions fixed) replays to the schedule it describes."""
    r = sched(schedule('''
        b0 = sch.get_block(name="C", func_name="matmul")
        l1, l2, l3 = sch.get_loops(block=b0)
        v4, v5 = sch.sample_perfect_tile(loop=l1, n=2, max_innermost_factor=16, decision=[4, 16])
        l6, l7 = sch.split(loop=l1, factors=[v4, v5], preserve_unit_iters=True)
        v8 = sch.sample_categorical(candidates=[0, 16], probs=[0.5, 0.5], decision=1)
        sch.annotate(block_or_loop=b0, ann_key="meta_schedule.unroll_explicit", ann_val=v8)
        sch.reorder(l6, l2, l7, l3)
        sch.parallel(loop=l6)
        b9 = sch.cache_write(block=b0, write_buffer_index=0, storage_scope="local")
        sch.reverse_compute_at(block=b9, loop=l2, preserve_unit_loops=True, index=-1)
        b10 = sch.decompose_reduction(block=b0, loop=l7)
    '''))
    out = r.text("matmul")
    assert '''\
    for i_0 in T.parallel(4):
        for j in range(64):
            for i_1_init in range(16):
                with T.block("C_init"):''' in out
    assert 'T.block_attr({"meta_schedule.unroll_explicit": 16})' in out
    assert '''\
            for ax0, ax1 in T.grid(16, 1):
                with T.block("C_local"):
                    v0 = T.axis.spatial(64, i_0 * 16 + ax0)
                    v1 = T.axis.spatial(64, j + ax1)''' in out
    r.check_same("matmul", seeds=(0,))
