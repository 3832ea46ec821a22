"""The differential harness: random programs, the reference interpreter's results, and the
compiled libraries' results at every level, which must be equal.

Many programs go into one module, printed and parsed back (the frontend is part of what is
checked, and the printed text must parse to an equal module), then compiled once per level into
one shared object, since compiling dominates the cost. A function whose compile fails is found
by compiling the functions one by one, so one bad program does not hide the others.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tirc.frontend import parse
from tirc.ir import IRModule, PrimFunc, structural_equal
from tirc.ir.diagnostics import CompileError
from tirc.ir.loop_jumps import contains_loop_jump
from tirc.ir.prim_call import called_functions

from difftest.values import Info, random_input, tolerance

LEVELS = (0, 1, 2, 3)


@dataclass(frozen=True)
class Build:
    """One way of compiling: an -O level and optionally a megakernel mode (graph functions),
    run-time bounds checks, the GPU pipeline run in the GPU interpreter, or PTX for the
    architecture `cuda` (sm_XX) run on a real GPU."""

    level: int
    megakernel: str | None = None
    gpu: bool = False
    bounds_check: bool = False
    cuda: str | None = None
    scheduled: bool = False  # only the module's schedules applied, run in the interpreter

    def __str__(self) -> str:
        if self.scheduled:
            return "interp-scheduled"
        extra = f" -fmegakernel={self.megakernel}" if self.megakernel else ""
        extra += " -fbounds-check" if self.bounds_check else ""
        where = "gpu-interp " if self.gpu else f"cuda-{self.cuda} " if self.cuda else ""
        return where + f"-O{self.level}{extra}"


@dataclass(frozen=True)
class Finding:
    """One disagreement: which program, how it was built, and what went wrong."""

    seed: int
    build: str
    kind: str        # "wrong", "run-error", "compile-error", "round-trip", "reference"
    detail: str

    def __str__(self) -> str:
        return f"seed {self.seed} [{self.build}] {self.kind}: {self.detail}"


@dataclass
class Program:
    """A generated function: its name, its module-level function, and how to call it."""

    seed: int
    name: str
    func: Any
    args: Callable[[np.random.Generator], list[Any]]
    outputs: dict[str, Info] = field(default_factory=dict)
    schedule: Any = None  # an @S.schedule of the function (tirc.ir.schedule.Schedule)
    # When set, the call must fail at run time (a size check, a match_cast) in the reference
    # and in every build, with one message; these are its results' shapes and dtypes as
    # declared (a GPU host function takes them as arguments).
    fails: tuple[tuple[tuple[int, ...], str], ...] | None = None
    # Other functions of the module that the function calls (a graph function's kernels),
    # by name; they go into every module the program is in.
    helpers: dict[str, Any] = field(default_factory=dict)


@dataclass
class Report:
    """The outcome of a batch: programs checked, builds made, findings."""

    programs: int = 0
    builds: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def add(self, other: Report) -> None:
        self.programs += other.programs
        self.builds = list(dict.fromkeys(self.builds + other.builds))
        self.findings += other.findings


def loop_args(func: PrimFunc, sizes: dict[str, int]) -> Callable[[np.random.Generator],
                                                                  list[Any]]:
    """Random arrays for a loop function's buffer parameters at the given symbolic sizes."""
    shapes = []
    for p in func.params:
        buf = func.buffer_map[p]
        shape = tuple(d.value if hasattr(d, "value") and not hasattr(d, "name")
                      else sizes[d.name] for d in buf.shape)
        shapes.append((shape, str(buf.dtype)))

    def make(rng: np.random.Generator) -> list[Any]:
        return [random_input(shape, dt, rng) for shape, dt in shapes]

    return make


def round_trip(mod: IRModule) -> IRModule:
    """`mod` printed and parsed back; raises when the parsed module does not print the same
    text (`print(parse(print(m))) == print(m)`) or, for loop functions, is not structurally
    equal (graph calls are put in canonical form by GraphBuilder but only by `normalize` after
    parsing, so those compare as text)."""
    text = mod.script()
    back = parse(text)
    if back.script() != text:
        raise AssertionError("printed text parses to a module that prints differently")
    loops = [name for name, f in mod.functions.items() if isinstance(f, PrimFunc)]
    if not all(structural_equal(mod[name], back[name]) for name in loops):
        raise AssertionError("printed text parses to a different loop function")
    return back


def compare(name: str, want: Sequence[np.ndarray], got: Sequence[np.ndarray],
            infos: dict[str, Info], labels: Sequence[str]) -> str | None:
    """None when every array agrees (exactly where the values are exact), else what differs."""
    for label, w, g in zip(labels, want, got):
        info = infos.get(label)
        rtol, atol = tolerance(info) if info is not None else (0.0, 0.0)
        if w.shape != g.shape or w.dtype != g.dtype:
            return f"{name}: {label} has shape {g.shape} {g.dtype}, expected {w.shape} {w.dtype}"
        wf, gf = w.astype(np.float64), g.astype(np.float64)
        bad = ~np.isclose(gf, wf, rtol=rtol, atol=atol, equal_nan=True)
        if info is not None and info.undefined_nan:
            bad &= ~np.isnan(wf)
        if bad.any():
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            return (f"{name}: {label}{list(at)} = {g[at]!r}, expected {w[at]!r} "
                    f"({int(bad.sum())} of {bad.size} elements differ)")
    return None


def short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


class Checker:
    """Runs batches of programs through the interpreter and the builds, collecting findings.

    `run_build(lib, calls)` runs each (name, args, expected results) call on a build and
    gives, per call, the resulting arrays or a message saying how the call failed (an
    exception, a crash); the expected results give destination-passing calls their shapes.
    """

    def __init__(self, workdir: Path, compile_module: Callable[[IRModule, Build, Path], Any],
                 reference: Callable[[IRModule, str, list[Any]], list[np.ndarray]],
                 run_build: Callable[[Any, list[tuple[str, list[Any], list[np.ndarray]]]],
                                     list[list[np.ndarray] | str]],
                 labels: Callable[[Any], list[str]]) -> None:
        self.workdir = workdir
        self.compile_module = compile_module
        self.reference = reference
        self.run_build = run_build
        self.labels = labels
        self.count = 0
        self.errors: dict[str, str] = {}  # the reference's error of each program that fails

    def check(self, programs: list[Program], builds: Iterable[Build]) -> Report:
        report = Report(programs=len(programs))
        mod = IRModule({name: f for p in programs
                        for name, f in [*p.helpers.items(), (p.name, p.func)]},
                       schedules=tuple(p.schedule for p in programs if p.schedule is not None))
        try:
            mod = round_trip(mod)
        except Exception as exc:  # noqa: BLE001 (a finding, whatever it is)
            return self._one_by_one(programs, builds, report, "round-trip", exc)
        want: dict[str, tuple[list[Any], list[np.ndarray]]] = {}
        self.errors = {}
        for p in programs:
            args = p.args(np.random.default_rng(p.seed))
            try:
                got = self.reference(mod, p.name, [a.copy() for a in args])
            except Exception as exc:  # noqa: BLE001
                if p.fails is None:
                    report.findings.append(Finding(p.seed, "interpreter", "reference",
                                                   short(exc)))
                    continue
                self.errors[p.name] = short(exc)
                got = [np.zeros(shape, dt) for shape, dt in p.fails]
            else:
                if p.fails is not None:
                    report.findings.append(Finding(p.seed, "interpreter", "reference",
                                                   "returned, but a run-time check must fail"))
                    continue
            want[p.name] = (args, got)
        live = [p for p in programs if p.name in want]
        for build in builds:
            report.builds.append(str(build))
            self._check_build(mod, live, build, want, report)
        return report

    def _one_by_one(self, programs: list[Program], builds: Iterable[Build], report: Report,
                    kind: str, exc: BaseException) -> Report:
        if len(programs) == 1:
            report.findings.append(Finding(programs[0].seed, "frontend", kind, short(exc)))
            return report
        for p in programs:
            report.add(self.check([p], builds))
        report.programs = len(programs)
        return report

    def _compile(self, mod: IRModule, build: Build) -> Any:
        self.count += 1
        return self.compile_module(mod, build, self.workdir / f"m{self.count}")

    def _check_build(self, mod: IRModule, programs: list[Program], build: Build,
                     want: dict[str, tuple[list[Any], list[np.ndarray]]], report: Report) -> None:
        if build.gpu or build.cuda:
            # a function whose loops jump, or that calls another loop function directly, is a
            # CPU function (or a graph function calling one): GPU builds refuse it, by design
            programs = [p for p in programs if not any(
                _cpu_only(mod[name]) for name in [*p.helpers, p.name])]
            if not programs:
                return
        names = {p.name for p in programs}
        sub = IRModule({name: mod[name] for p in programs for name in [*p.helpers, p.name]},
                       schedules=tuple(s for s in mod.schedules if s.func_name in names))
        try:
            lib = self._compile(sub, build)
        except Exception as exc:  # noqa: BLE001
            if len(programs) == 1:
                kind = "compile-error" if not isinstance(exc, CompileError) else "rejected"
                detail = short(exc) if not isinstance(exc, CompileError) else \
                    exc.diagnostics[0].message[:300]
                report.findings.append(Finding(programs[0].seed, str(build), kind, detail))
                return
            for p in programs:
                self._check_build(mod, [p], build, want, report)
            return
        calls = [(p.name, [a.copy() for a in want[p.name][0]], want[p.name][1])
                 for p in programs]
        results = self.run_build(lib, calls)
        for p, got in zip(programs, results):
            if p.name in self.errors:
                failure = failed_alike(self.errors[p.name], got, build)
                if failure is not None:
                    report.findings.append(Finding(p.seed, str(build), "wrong", failure))
                continue
            if isinstance(got, str):
                report.findings.append(Finding(p.seed, str(build), "run-error", got))
                continue
            diff = compare(p.name, want[p.name][1], got, p.outputs, self.labels(mod[p.name]))
            if diff is not None:
                report.findings.append(Finding(p.seed, str(build), "wrong", diff))


def _cpu_only(func: Any) -> bool:
    """Whether a function's loops jump or it calls a loop function directly (GPU builds
    refuse both, by design)."""
    return contains_loop_jump(func) or (isinstance(func, PrimFunc) and
                                        bool(called_functions(func.body)))


LOCATION = re.compile(r"^[^\s:]*:\d+:\d+: ")


def _message(text: str) -> str:
    """An error's message without its exception class and source location (the reference
    parses the printed module, a build compiles it from a file)."""
    text = text.split(": ", 1)[1] if ": " in text else text
    return LOCATION.sub("", text)


def failed_alike(want: str, got: list[np.ndarray] | str, build: Build) -> str | None:
    """None when a build failed as the reference did: a CPU build with its message (a
    megakernel, the GPU name the sizes without their values; a failed match_cast's message is
    tirc's own in the compiled code), else what went wrong."""
    if not isinstance(got, str):
        return f"returned results where the reference failed: {want}"
    if got.startswith(("the call crashed", "the call did not return", "cannot load")):
        return f"{got} where the reference failed: {want}"
    if build.gpu or build.cuda or build.megakernel:
        return None
    w, g = _message(want), _message(got)
    if "match_cast of" in w and "match_cast of" in g:
        return None
    if g != w[:len(g)] or not g:
        return f"failed with '{g}', the reference with '{w}'"
    return None


def format_report(report: Report, title: str) -> str:
    lines = [f"{title}: {report.programs} programs, builds {', '.join(report.builds)}; "
             f"{len(report.findings)} findings"]
    lines += [f"  {f}" for f in report.findings]
    return "\n".join(lines)


def describe_failure() -> str:
    return traceback.format_exc(limit=3)


def text_programs(text: str, args: dict[str, Callable[[np.random.Generator], list[Any]]],
                  seed: int = 0) -> list[Program]:
    """Programs from `.tir` text (a regression test's minimal program): one per named function,
    with its argument maker."""
    mod = parse(text)
    return [Program(seed, name, mod[name], make) for name, make in args.items()]
