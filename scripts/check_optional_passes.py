"""Check what `--opt-bisect-limit` relies on: with only the first N optional passes
(`Pass.optional`) run, for every N, every sample still compiles and computes numpy's result.

    python scripts/check_optional_passes.py [cpu] [gpu] [gpu-megakernel]   (default: all three)

`cpu`: every sample (all but mlp_dps, which needs its C library) at -O3 through the `tirc`
command, and the graph samples with -fmegakernel=static and =dynamic, each library called
through tirc.runtime. `gpu`: the GPU samples and the graph samples through the GPU pipeline at
-O2, run by the tests' fake CUDA driver in the GPU interpreter. `gpu-megakernel`: mlp.tir and
the megakernel benchmark's chain through the GPU megakernel pipeline (static on one SM,
dynamic on three). Prints each failure and a count; exit status 1 when there is one. Run it
after marking a pass optional (or not); it takes about half an hour on two busy cores.
"""

from __future__ import annotations

import io
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import numpy as np  # noqa: E402
from tirc.passes import instruments as inst  # noqa: E402
from tirc.passes.manager import run_pipeline  # noqa: E402
from tirc.passes.pass_base import PassContext  # noqa: E402
from tirc.passes.pipeline import build_pipeline  # noqa: E402

OUT = Path(tempfile.mkdtemp(prefix="tirc-optional-"))


def outputs(result: Any) -> list[Any]:
    return list(result) if isinstance(result, tuple) else [result]


def check_cpu(report: Callable[..., None]) -> None:
    """Every sample through the command line, at every limit."""
    import tirc.runtime as rt
    from click.testing import CliRunner
    from script_modules import sample_references
    from tirc.cli.main import cli

    refs = sample_references()

    def tirc(*args: str) -> Any:
        return CliRunner().invoke(cli, list(args), prog_name="tirc")

    configs = [(s, ("-O3",)) for s in refs.SAMPLES if s.name != "mlp_dps"]
    configs += [(s, ("-O3", f"-fmegakernel={mode}")) for s in refs.GRAPH_SAMPLES
                if s.name != "mlp_dps" for mode in ("static", "dynamic")]
    for sample, flags in configs:
        every = tirc(str(sample.path), *flags, "--opt-bisect-limit=-1", "-o", str(OUT / "a.so"))
        count = every.stderr.count("BISECT:")
        for limit in range(count):
            so = OUT / f"{sample.name}-{len(list(OUT.iterdir()))}.so"
            r = tirc(str(sample.path), *flags, f"--opt-bisect-limit={limit}", "-o", str(so))
            if r.exit_code != 0:
                report(sample.name, flags, limit, r.stderr[-300:])
                continue
            fn = rt.load(so)[sample.func]
            inputs = sample.inputs(sample.compiled_sizes[0], seed=1)
            want = sample.expected(inputs)
            if sample.level == "loop":
                args = sample.arguments(inputs, want)
                fn(*args)
                got = sample.output_values(args)
            else:
                got = outputs(fn(*inputs))
            problem = refs.mismatch(got, want)
            if problem is not None:
                report(sample.name, flags, limit, problem)
        print(f"{sample.name} {' '.join(flags)}: {count} limits", flush=True)


def _bisected(mod: Any, names: list[str], ctx: PassContext, limit: int) -> tuple[Any, int]:
    """`mod` through `names` with the first `limit` optional passes; how many there are."""
    stream = io.StringIO()
    ctx.instruments = [inst.OptBisect(limit, stream)]
    out = run_pipeline(mod, build_pipeline(names), ctx)
    return out, len(re.findall("BISECT:", stream.getvalue()))


def check_gpu(report: Callable[..., None]) -> None:
    """GPU and graph samples through the GPU pipeline, run in the GPU interpreter."""
    from gpu_support import GRAPH_SAMPLES, SAMPLE_REFS, SAMPLES, FakeDriver, sample_module
    from tirc.backends.nvptx import compile_ptx, cuda_target
    from tirc.frontend import parse_file
    from tirc.passes.gpu.pipeline import gpu_pipeline
    from tirc.runtime.cuda import load_ptx

    target = cuda_target("cuda -arch=sm_90")
    cases = [("loop", s) for s in SAMPLES] + [("graph", s) for s in GRAPH_SAMPLES]
    for kind, sample in cases:
        mod = sample_module(sample.name) if kind == "loop" else parse_file(str(sample.path))
        _, count = _bisected(mod, gpu_pipeline(2), PassContext(2, target), -1)
        for limit in range(count):
            try:
                low, _ = _bisected(mod, gpu_pipeline(2), PassContext(2, target), limit)
                path = OUT / f"{sample.name}{limit}.ptx"
                path.write_text(compile_ptx(low, target, 2).ptx)
                fn = load_ptx(path, FakeDriver(low))[sample.func]
                if kind == "loop":
                    inputs = sample.inputs(sample.interp_sizes)
                    want = sample.reference(*inputs)
                    args = sample.arguments(inputs, want)
                    fn(*args)
                    problem = None if sample.matches(args, want) else "wrong result"
                else:
                    inputs = sample.inputs(sample.compiled_sizes[0], seed=1)
                    problem = SAMPLE_REFS.mismatch(outputs(fn(*inputs)),
                                                   sample.expected(inputs))
            except Exception as exc:  # a failing build is a finding, reported with the rest
                problem = f"{type(exc).__name__}: {str(exc)[:300]}"
            if problem is not None:
                report(sample.name, "cuda", limit, problem)
        print(f"{sample.name} cuda: {count} limits", flush=True)


def check_gpu_megakernel(report: Callable[..., None]) -> None:
    """The GPU megakernel pipeline on mlp.tir and the benchmark chain."""
    from gpu_support import FakeDriver
    from graph_support import interpret, random_inputs
    from script_modules import megakernel_benchmark
    from tirc.backends.nvptx import compile_ptx
    from tirc.frontend import parse, parse_file
    from tirc.ir.target import parse_target
    from tirc.passes.megakernel.gpu_runtime import megakernel_gpu_steps
    from tirc.runtime.cuda import load_ptx

    class Device(FakeDriver):
        sms = 1

        def sm_count(self) -> int:
            return self.sms

    target = parse_target("cuda -arch=sm_90")
    graphs = {"mlp": parse_file(str(ROOT / "samples" / "mlp.tir")),
              "chain": parse(megakernel_benchmark().source(2, 64))}
    steps = megakernel_gpu_steps(2)
    for name, graph in graphs.items():
        args = random_inputs(graph, {"n": 3})
        want = interpret(graph, args)
        for mode in ("static", "dynamic"):
            def ctx(mode: str = mode) -> PassContext:
                return PassContext(2, target, config={"megakernel": mode})

            _, count = _bisected(graph, steps, ctx(), -1)
            for limit in range(count):
                try:
                    low, _ = _bisected(graph, steps, ctx(), limit)
                    path = OUT / f"mk-{name}{limit}.ptx"
                    path.write_text(compile_ptx(low, target).ptx)
                    device = Device(low)
                    device.sms = 1 if mode == "static" else 3  # the interpreter runs blocks
                    got = outputs(load_ptx(path, device)["main"](*args))  # one by one
                    right = all(np.allclose(g, w, rtol=1e-4, atol=1e-4)
                                for g, w in zip(got, want))
                    problem = None if right else "wrong result"
                except Exception as exc:  # a failing build is a finding
                    problem = f"{type(exc).__name__}: {str(exc)[:300]}"
                if problem is not None:
                    report(name, f"cuda -fmegakernel={mode}", limit, problem)
            print(f"{name} cuda -fmegakernel={mode}: {count} limits", flush=True)


CHECKS = {"cpu": check_cpu, "gpu": check_gpu, "gpu-megakernel": check_gpu_megakernel}


def main(argv: list[str]) -> int:
    failures: list[tuple[Any, ...]] = []

    def report(*finding: Any) -> None:
        failures.append(finding)
        print("FAILED", *finding, flush=True)

    for name in argv or list(CHECKS):
        CHECKS[name](report)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
