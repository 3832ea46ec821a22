"""Every schedule rule, CPU and GPU: it takes the block of its kind (recognised from iteration
kinds and regions), the scheduled function computes what the unscheduled one does (the
reference interpreter; the GPU interpreter in lockstep, both thread orders, after the GPU
pipeline), and the schedule it prints, applied to the unscheduled function as a user's
@S.schedule, gives the same function."""

from __future__ import annotations

import numpy as np
import pytest
from rule_programs import CASES, PROGRAMS, Case
from tirc.frontend import parse
from tirc.ir.function import PrimFunc
from tirc.ir.interpreter import Interpreter
from tirc.ir.interpreter.gpu import check_races
from tirc.ir.module import IRModule
from tirc.ir.printer import print_node
from tirc.ir.structural import first_difference, structural_equal
from tirc.ir.target import parse_target
from tirc.passes.manager import run_pipeline
from tirc.passes.pass_base import PassContext
from tirc.passes.pipeline import build_pipeline
from tirc.passes.schedule_rules.api import schedule_function

CUDA = parse_target("cuda -arch=sm_80")
MOD = parse(PROGRAMS)


def inputs(func: PrimFunc, sizes: dict[str, int], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for p in func.params:
        buf = func.buffer_map[p]
        shape = [sizes[d.name] if hasattr(d, "name") else d.value for d in buf.shape]
        out.append(rng.standard_normal(shape).astype(buf.dtype.numpy_name()))
    return out


def run(mod: IRModule, name: str, args: list[np.ndarray]) -> list[np.ndarray]:
    out = [a.copy() for a in args]
    Interpreter(mod).call(name, *out)
    return out


def reapplied(case: Case, target: str, text: str) -> PrimFunc:
    """The unscheduled function with the printed schedule applied as a user's."""
    func_text = print_node(MOD[case.func])
    mod = parse(func_text + "\n\n" + text)
    out = run_pipeline(mod, build_pipeline(["apply-schedules"]),
                       PassContext(target=parse_target(target)))
    return out[case.func]


@pytest.mark.parametrize("case", CASES, ids=[c.func for c in CASES])
def test_cpu_rule_takes_its_block_and_keeps_meaning(case: Case) -> None:
    func = MOD[case.func]
    new, trace = schedule_function(func, "llvm")
    assert case.cpu in trace.applied, trace.summary()
    args = inputs(func, case.sizes)
    want = run(MOD, case.func, args)
    got = run(IRModule({case.func: new}), case.func, args)
    for k in case.outputs:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-5)
    again = reapplied(case, "llvm", print_node(trace.schedule))
    assert structural_equal(again.body, new.body), first_difference(again.body, new.body)


@pytest.mark.parametrize("case", CASES, ids=[c.func for c in CASES])
def test_gpu_rule_takes_its_block_and_keeps_meaning(case: Case) -> None:
    func = MOD[case.func]
    new, trace = schedule_function(func, CUDA)
    assert case.gpu in trace.applied, trace.summary()
    again = reapplied(case, "cuda", print_node(trace.schedule))
    assert structural_equal(again.body, new.body), first_difference(again.body, new.body)
    from gpu_support import lower

    lowered = lower(IRModule({case.func: func}))
    args = inputs(func, case.sizes)
    want = run(MOD, case.func, args)
    got = [a.copy() for a in args]
    check_races(lowered, case.func, got)
    for k in case.outputs:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-4)
