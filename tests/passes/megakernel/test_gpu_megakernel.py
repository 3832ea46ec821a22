"""The GPU megakernel (pass megakernel-gpu, NVPTX event codegen): its PTX passes ptxas for
sm_80 and sm_90 (usage in out/ptxas_megakernel_usage.txt) and has the synchronisation the PTX
memory model needs; the GPU-lowered program computes the graph function's result in the GPU
interpreter (threads in lockstep, both thread orders) and through the PTX loader with a fake
driver that runs it; the launch plan's grid is the device's SM count."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpu_support import FakeDriver, require_ptxas
from graph_support import interpret, random_inputs
from megakernel_support import SAMPLES, task_graph
from script_modules import megakernel_benchmark
from tirc.backends.nvptx import compile_ptx
from tirc.driver import lower
from tirc.frontend import parse, parse_file
from tirc.ir import CompileError, IRModule, PrimFunc
from tirc.ir.attrs import SM_COUNT
from tirc.ir.dtype import INT32
from tirc.ir.expr import IntImm, Var
from tirc.ir.interpreter.gpu import InterpreterError, check_races, run_gpu_func
from tirc.ir.stmt import Evaluate, For
from tirc.ir.target import parse_target
from tirc.ir.visitor import Mutator, post_order_visit, substitute
from tirc.passes.manager import run_pipeline
from tirc.passes.megakernel.interleave import check_interleavings
from tirc.passes.pass_base import PassContext
from tirc.passes.pipeline import build_pipeline, default_pipeline
from tirc.runtime.cuda import load_ptx

DIM = 64
REPORT = Path(__file__).resolve().parents[3] / "out" / "ptxas_megakernel_usage.txt"
_USAGE: dict[tuple[str, str, str], list[Any]] = {}


def chain(layers: int = 2) -> str:
    """A decode-like chain (benchmarks/megakernel.py at DIM wide): x @ W + b, GELU, RMS norm."""
    module = megakernel_benchmark()
    return module.source(layers, DIM)


def _source(name: str) -> IRModule:
    """The chain, or a sample file, parsed."""
    return parse(chain()) if name == "chain" else parse_file(SAMPLES / name)


def _gpu(name: str, mode: str, arch: str = "sm_80") -> IRModule:
    """The source compiled by the GPU megakernel pipeline (loop level, before codegen)."""
    return lower(_source(name), f"cuda -arch={arch}", 2, megakernel=mode)


def _with_sm_count(mod: IRModule, count: int) -> IRModule:
    """The host function with the runtime's SM count symbol fixed (for the interpreter)."""
    main = mod["main"]
    assert isinstance(main, PrimFunc)
    found: set[Var] = set()
    post_order_visit(main.body, lambda n: found.add(n) if isinstance(n, Var) and
                     n.name == SM_COUNT else None)
    assert found, "the megakernel's grid is not the SM count"
    body = substitute(main.body, {v: IntImm(count, INT32) for v in found})
    return mod.with_function("main", main.replace(body=body))


CASES = [("mlp.tir", "static", 1, 1), ("mlp.tir", "static", 1, 6), ("mlp.tir", "dynamic", 3, 5),
         ("chain", "static", 1, 2), ("chain", "dynamic", 2, 1)]


@pytest.mark.parametrize("name,mode,sms,n", CASES)
def test_gpu_lowered_megakernel_equals_numpy(name: str, mode: str, sms: int, n: int) -> None:
    """The init kernel and the persistent kernel, run in the GPU interpreter (one worker for
    the static schedule: the interpreter runs blocks one after another, so a static queue
    waiting on a later block's task would be reported as a deadlock), in forward and reverse
    thread order (a missing barrier between phases shows as a difference)."""
    graph = _source(name)
    mod = _with_sm_count(_gpu(name, mode), sms)
    args = random_inputs(graph, {"n": n})
    want = interpret(graph, args)
    outs = [np.zeros_like(w) for w in want]
    check_races(mod, "main", [a.copy() for a in args] + outs)
    for w, g in zip(want, outs):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_task_graph_survives_random_interleavings() -> None:
    """The task graph the GPU lowering runs: any order its events allow gives the result."""
    mod = task_graph("mlp.tir", "dynamic")
    func = mod["main"]
    assert isinstance(func, PrimFunc)
    graph = parse_file(SAMPLES / "mlp.tir")
    args = random_inputs(graph, {"n": 3})
    outs = [np.zeros_like(w) for w in interpret(graph, args)]
    assert check_interleavings(func, [*args, *outs], runs=2) == []


class _Device(FakeDriver):
    """The fake driver with a chosen SM count."""

    def __init__(self, sms: int, *lowered: IRModule) -> None:
        super().__init__(*lowered)
        self.sms = sms

    def sm_count(self) -> int:
        return self.sms


@pytest.mark.parametrize("mode,sms", [("static", 1), ("dynamic", 4)])
def test_loader_runs_the_megakernel_on_the_device_grid(tmp_path: Path, mode: str,
                                                        sms: int) -> None:
    """tirc.runtime's loader binds the grid to the driver's SM count and gets numpy's result."""
    mod = _gpu("mlp.tir", mode, "sm_90")
    path = tmp_path / "mk.ptx"
    path.write_text(compile_ptx(mod, "cuda -arch=sm_90").ptx)
    fake = _Device(sms, mod)
    lib = load_ptx(path, fake)
    graph = parse_file(SAMPLES / "mlp.tir")
    args = random_inputs(graph, {"n": 3})
    (want,) = interpret(graph, args)
    np.testing.assert_allclose(lib["main"](*args), want, rtol=1e-4, atol=1e-4)
    kernels = [(k, grid) for k, grid, _, _ in fake.launches]
    assert kernels == [("main_kernel0", (1, 1, 1)), ("main_kernel1", (sms, 1, 1))]


def _ptx(name: str, mode: str, arch: str) -> str:
    """The PTX text of a GPU megakernel build."""
    return compile_ptx(_gpu(name, mode, arch), f"cuda -arch={arch}").ptx


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name,mode", [("mlp.tir", "static"), ("mlp.tir", "dynamic"),
                                       ("chain", "static"), ("chain", "dynamic"),
                                       ("megakernel/moe_topk.tir", "static")])
def test_megakernel_ptx_passes_ptxas(name: str, mode: str, arch: str) -> None:
    """ptxas accepts the PTX; its registers, stack and spills go to REPORT."""
    require_ptxas()
    result = compile_ptx(_gpu(name, mode, arch), f"cuda -arch={arch}")
    usage = result.usage()
    kernels = [k["name"] for k in result.metadata["kernels"]]
    assert sorted(u.kernel for u in usage) == sorted(kernels) and len(kernels) == 2
    assert all(u.arch == arch and u.registers > 0 for u in usage)
    _USAGE[(name, mode, arch)] = usage
    lines = [f"{'sample':<26} {'mode':<8} {'arch':<6} {'kernel':<22} {'regs':>4} {'stack':>5} "
             f"{'spill st':>8} {'spill ld':>8} {'smem':>6}"]
    for (n, m, a), us in sorted(_USAGE.items()):
        lines += [f"{n:<26} {m:<8} {a:<6} {u.kernel:<22} {u.registers:>4} {u.stack:>5} "
                  f"{u.spill_stores:>8} {u.spill_loads:>8} {u.shared:>6}" for u in us]
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text("\n".join(lines) + "\n")


def _kernel_text(ptx: str, name: str) -> str:
    """One .entry of a PTX text, up to the next."""
    start = ptx.index(f".entry {name}(")
    end = ptx.find(".entry ", start + 1)
    return ptx[start:end if end >= 0 else len(ptx)]


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_megakernel_ptx_synchronises_as_the_memory_model_needs(mode: str) -> None:
    """FileCheck-style: the persistent kernel waits with acquire loads and nanosleep, notifies
    with a GPU-scope fence then a release reduction, and meets at block barriers; the
    dynamic one pops its queue with an atomic add; the launch plan runs the init kernel, then
    the megakernel on `tirc_sm_count` blocks."""
    ptx = _ptx("mlp.tir", mode, "sm_90")
    mk = _kernel_text(ptx, "main_kernel1")
    assert re.search(r"ld\.acquire\.gpu\.b32\s+%r\d+, \[%rd\d+\];", mk)
    assert re.search(r"nanosleep\.u32\s+%r\d+;", mk)
    assert re.search(r"fence\.acq_rel\.gpu;\s+red\.release\.gpu\.add\.s32\s+\[%rd\d+\], %r\d+;",
                     mk)
    assert re.search(r"bar(rier)?\.sync(\.aligned)?\s+0;", mk)
    assert ("atom.relaxed.gpu.add.s32" in mk) == (mode == "dynamic")
    init = _kernel_text(ptx, "main_kernel0")
    assert re.search(r"st(\.global)?\.[bsu]32\s+\[%rd\d+(\+\d+)?\], (%r\d+|\d+);", init)
    assert "ld.acquire" not in init and "red.release" not in init
    assert "//   launch main_kernel0 grid (1, 1, 1)" in ptx
    assert "//   launch main_kernel1 grid (tirc_sm_count, 1, 1)" in ptx
    assert "//   workspace megakernel_events: int32" in ptx


def test_thread_private_scratch_and_spread_work() -> None:
    """The vectorized loops are spread over threadIdx.x, the row reduction runs on thread 0;
    the matmul tiles accumulate in a global workspace (the CPU rules' accumulators, with
    `accumulators="global"`: a task cannot allocate), no shared memory."""
    text = _gpu("chain", "static").script()
    kernel = text.split("def main_kernel1")[1]
    assert 'scope="shared"' not in kernel and 'scope="local")' not in kernel.split("m0")[0]
    assert 'T.thread_binding(T.int64(64), thread="threadIdx.x")' in kernel
    assert "if t0 == 0:" in kernel
    # settle loops count first, then notify once with the count
    assert re.search(r"if settle\[0\] > 0:\s+T\.event_notify\(megakernel_events\[.*\], "
                     r"settle\[0\]\)", kernel)


class _DropNotifies(Mutator):
    """Remove every notification of the first task kind (a planted missing dependence)."""

    def __init__(self) -> None:
        self.first = True

    def visit_For(self, s: For) -> Any:
        if "task" not in s.annotations or not self.first:
            return self.generic_visit(s)
        self.first = False
        return s.replace(body=_NoNotify().visit(s.body))


class _NoNotify(Mutator):
    """Every event_notify statement -> a no-op."""

    def visit_Evaluate(self, s: Evaluate) -> Any:
        call = s.value
        return Evaluate(IntImm(0, INT32)) if getattr(call, "op", "") == "event_notify" else s


def test_gpu_program_waits_on_its_events() -> None:
    """With the first kind's notifications removed, the GPU program's waits never end: the
    interpreter (one worker, tasks in order) reports the unsatisfied wait."""
    steps = default_pipeline(parse_target("cuda"), 2, "static")
    ctx = PassContext(opt_level=2, target=parse_target("cuda -arch=sm_80"),
                      config={"megakernel": "static"})
    mod = run_pipeline(parse_file(SAMPLES / "mlp.tir"),
                       build_pipeline(steps[:steps.index("megakernel") + 1]), ctx)
    main = mod["main"]
    assert isinstance(main, PrimFunc)
    mod = mod.with_function("main", main.replace(body=_DropNotifies().visit(main.body)))
    mod = _with_sm_count(run_pipeline(mod, build_pipeline(steps[steps.index("megakernel-gpu"):]),
                                      ctx), 1)
    graph = parse_file(SAMPLES / "mlp.tir")
    args = random_inputs(graph, {"n": 2})
    outs = [np.zeros_like(w) for w in interpret(graph, args)]
    with pytest.raises(InterpreterError, match="deadlock or missing dependence: wait on "
                                                "megakernel_events"):
        run_gpu_func(mod, "main", [*args, *outs])


def test_cli_builds_a_gpu_megakernel(invoke: Any, tmp_path: Path) -> None:
    """`tirc --target cuda -fmegakernel=dynamic` runs the GPU megakernel pipeline."""
    out = tmp_path / "mlp.ptx"
    r = invoke(SAMPLES / "mlp.tir", "--target", "cuda -arch=sm_90", "-fmegakernel=dynamic",
               "--emit", "ptx", "-o", out)
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert "//   launch main_kernel1 grid (tirc_sm_count, 1, 1)" in text
    assert "atom.relaxed.gpu.add.s32" in text


def test_bad_thread_count_is_a_diagnostic() -> None:
    """A malformed thread cap is a CompileError naming the config key."""
    with pytest.raises(CompileError, match="megakernel.gpu-threads must be a multiple of 32"):
        lower(_source("mlp.tir"), "cuda", 2, megakernel="static",
              config={"megakernel.gpu-threads": "100"})
