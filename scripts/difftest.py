"""The long differential run: random loop, expression and graph functions, interpreted and
compiled at -O0..-O3 (graph functions also as static and dynamic megakernels), with
-fbounds-check, and run through the GPU pipeline in the GPU interpreter; every disagreement is
printed with its seed.

    .venv/bin/python scripts/difftest.py --count 10000 --jobs 2   # the figures in the note
    .venv/bin/python scripts/difftest.py --count 200 --kind graph --start 5000
    .venv/bin/python scripts/difftest.py --count 500 --kind expr   # scalar semantics, all dtypes
    .venv/bin/python scripts/difftest.py --count 2000 --kind schedule  # random @S.schedule
    .venv/bin/python scripts/difftest.py --count 500 --kind schedule --steps 25
    .venv/bin/python scripts/difftest.py --count 200 --kind calls  # kernels a graph calls
    .venv/bin/python scripts/difftest.py --count 500 --kind empty  # loop programs, sizes 0
    .venv/bin/python scripts/difftest.py --show loop 28           # print the program of a seed
    python scripts/difftest.py --cuda sm_90 --count 500           # PTX on a real GPU instead

The suite runs a small fixed batch of the same generators (tests/e2e/test_differential_*.py);
this script runs many more, in batches of one module per build, and ends with a table of
programs and findings per build. Exit status 1 when anything disagreed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from difftest import builds as B  # noqa: E402
from difftest.expr_programs import expr_case  # noqa: E402
from difftest.graph_calls import calls_case, calls_module  # noqa: E402
from difftest.graph_programs import graph_case  # noqa: E402
from difftest.harness import Build, Checker, Finding, Program, Report  # noqa: E402
from difftest.loop_programs import empty_loop_case, loop_case  # noqa: E402
from difftest.schedule_programs import random_schedule_case  # noqa: E402
from tirc.ir import IRModule  # noqa: E402

LOOP_BUILDS = [Build(0), Build(1), Build(2), Build(3), Build(3, bounds_check=True),
               Build(2, gpu=True)]
# A random schedule's function, scheduled, in the interpreter and compiled; the reference is
# the unscheduled function in the interpreter.
SCHEDULE_BUILDS = [Build(0, scheduled=True), Build(0), Build(3)]
GRAPH_BUILDS = [Build(0), Build(1), Build(2), Build(3), Build(2, "static"),
                Build(2, "dynamic"), Build(2, bounds_check=True), Build(2, gpu=True)]
KINDS = {
    "loop": (loop_case, LOOP_BUILDS, B.interpret_loop, B.run_loop, B.loop_labels, 100),
    "empty": (empty_loop_case, LOOP_BUILDS, B.interpret_loop, B.run_loop, B.loop_labels, 100),
    "graph": (graph_case, GRAPH_BUILDS, B.interpret_graph, B.run_graph, B.graph_labels, 40),
    "calls": (calls_case, GRAPH_BUILDS, B.interpret_graph, B.run_graph, B.graph_labels, 40),
    "expr": (expr_case, LOOP_BUILDS, B.interpret_loop, B.run_loop, B.loop_labels, 100),
    "schedule": (random_schedule_case, SCHEDULE_BUILDS, B.interpret_loop, B.run_loop,
                 B.loop_labels, 50),
}
STEPS: dict[str, int | None] = {"steps": None}  # --steps: primitives per random schedule


def programs(kind: str, chunk: range) -> tuple[list[Program], list[Finding]]:
    """The programs of a batch; for random schedules, those with a primitive that applied,
    and a finding for each primitive that failed with an internal error, not a diagnostic."""
    make = KINDS[kind][0]
    if kind != "schedule":
        return [p for p in (make(seed) for seed in chunk) if p is not None], []
    cases = [random_schedule_case(seed, STEPS["steps"]) for seed in chunk]
    found = [Finding(c.program.seed, "schedule", "internal-error", e.strip()[-300:])
             for c in cases for e in c.internal]
    return [c.program for c in cases if c.applied], found


def cuda_builds(arch: str) -> list[Build]:
    """The builds of a run on a real GPU: PTX for `arch` at -O1 and -O3 (the CPU builds and the
    GPU interpreter are the suite's and the default run's)."""
    return [Build(1, cuda=arch), Build(3, cuda=arch)]


def check_batch(kind: str, chunk: range, workdir: Path, cuda: str | None) -> Report:
    """One batch of seeds checked in a fresh directory; a harness bug becomes a finding."""
    _, builds, reference, run, labels, _ = KINDS[kind]
    if cuda:
        builds = cuda_builds(cuda)
    with tempfile.TemporaryDirectory(dir=workdir) as batch_dir:
        checker = Checker(Path(batch_dir), B.compile_module, reference, run, labels)
        try:
            batch, found = programs(kind, chunk)
            report = checker.check(batch, builds)
            report.programs = len(chunk)
            report.findings = found + report.findings
            return report
        except Exception as exc:  # noqa: BLE001 (a bug of the harness: say so, go on)
            return Report(len(chunk), [], [Finding(chunk.start, "harness", "harness-error",
                                                   f"seeds {chunk.start}..{chunk.stop - 1}: "
                                                   f"{type(exc).__name__}: {exc}"[:300])])


def run_kind(kind: str, seeds: range, workdir: Path, log: bool, cuda: str | None = None,
             jobs: int = 1) -> Report:
    """Every seed of `seeds` checked in batches, `jobs` batches at a time in separate
    processes; findings printed as each batch ends."""
    batch = KINDS[kind][5]
    chunks = [range(lo, min(lo + batch, seeds.stop))
              for lo in range(seeds.start, seeds.stop, batch)]
    total = Report()
    start = time.time()

    def record(report: Report) -> None:
        total.add(report)
        for f in report.findings:
            print(f"{kind} {f}", flush=True)
        if log:
            print(f"# {kind}: {total.programs} programs, {len(total.findings)} findings, "
                  f"{time.time() - start:.0f} s", file=sys.stderr, flush=True)

    if jobs <= 1:
        for chunk in chunks:
            record(check_batch(kind, chunk, workdir, cuda))
        return total
    with ProcessPoolExecutor(jobs) as pool:
        for report in pool.map(check_batch, [kind] * len(chunks), chunks,
                               [workdir] * len(chunks), [cuda] * len(chunks)):
            record(report)
    return total


def table(reports: dict[str, Report]) -> str:
    """Programs, and programs with a finding, per kind and build."""
    lines = [f"{'kind':6} {'build':28} {'programs':>9} {'wrong':>6} {'errors':>7}"]
    for kind, report in reports.items():
        per_build: dict[str, Counter[str]] = {b: Counter() for b in report.builds}
        for f in report.findings:
            per_build.setdefault(f.build, Counter())[
                "wrong" if f.kind == "wrong" else "errors"] += 1
        for build, counts in per_build.items():
            lines.append(f"{kind:6} {build:28} {report.programs:>9} {counts['wrong']:>6} "
                         f"{counts['errors']:>7}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1000, help="programs in all (default 1000)")
    ap.add_argument("--kind", choices=("both", "loop", "empty", "graph", "expr", "schedule",
                                       "calls"),
                    default="both",
                    help="both: loop and graph functions; empty: the loop functions with "
                         "symbolic sizes, run with every size 0; expr: scalar expressions in every "
                         "dtype (tests/difftest/expr_programs.py); schedule: random "
                         "schedules of random loop functions "
                         "(tests/difftest/schedule_programs.py); calls: graph functions "
                         "calling their module's loop functions, through call_tir, "
                         "call_tir_inplace and the memory-planned forms, with R.print "
                         "(tests/difftest/graph_calls.py)")
    ap.add_argument("--steps", type=int, default=None,
                    help="--kind schedule: primitives tried per schedule (default: 1 to 10, "
                         "drawn from the seed)")
    ap.add_argument("--graph-share", type=float, default=0.3,
                    help="share of graph functions when --kind both (default 0.3)")
    ap.add_argument("--start", type=int, default=100_000,
                    help="first seed (default 100000, past the suite's seeds)")
    ap.add_argument("--show", nargs=2, metavar=("KIND", "SEED"),
                    help="print the program of one seed and exit")
    ap.add_argument("--cuda", metavar="ARCH",
                    help="build PTX for ARCH (sm_90, ...) and run it on the GPU instead of the "
                         "CPU builds and the GPU interpreter")
    ap.add_argument("--jobs", type=int, default=1,
                    help="batches checked at once, each in its own process (default 1)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    args = ap.parse_args(argv)
    STEPS["steps"] = args.steps
    if args.show:
        kind, seed = args.show[0], int(args.show[1])
        if kind == "schedule":
            print(random_schedule_case(seed, args.steps).text())
            return 0
        if kind == "calls":
            print(calls_module(seed)[0])
            return 0
        program = KINDS[kind][0](seed)
        print(IRModule({program.name: program.func}).script())
        return 0
    graphs = round(args.count * args.graph_share)
    counts = {args.kind: args.count} if args.kind != "both" else \
        {"graph": graphs, "loop": args.count - graphs}
    reports: dict[str, Report] = {}
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="difftest") as tmp:
        for kind, count in counts.items():
            if count:
                reports[kind] = run_kind(kind, range(args.start, args.start + count),
                                         Path(tmp), not args.quiet, args.cuda, args.jobs)
    print(table(reports))
    found = sum(len(r.findings) for r in reports.values())
    print(f"{sum(r.programs for r in reports.values())} programs, seeds from {args.start}, "
          f"{found} findings, {time.time() - start:.0f} s")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
