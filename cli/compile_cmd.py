"""`tirc FILE ...`: parse, run the pass pipeline, emit, and write a dependency file."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import click
from tirc.cli.depfile import dependency_rule
from tirc.cli.diagnostics_output import fail, print_diagnostics, reported_errors
from tirc.cli.emit import EMIT_SUFFIXES, emit, kind_from_output
from tirc.cli.output_file import STDOUT, write_output
from tirc.ir.diagnostics import CompileError, Diagnostic
from tirc.ir.module import IRModule
from tirc.ir.target import Target, TargetError, parse_target
from tirc.passes import instruments as inst
from tirc.passes.manager import Instrument, run_pipeline
from tirc.passes.pass_base import PassContext
from tirc.passes.pipeline import (
    PipelineError,
    build_pipeline,
    check_pass_name,
    default_pipeline,
    split_spec,
)


@dataclass
class CompileOptions:
    """Everything the compile command was asked to do (one field per command-line option)."""

    file: str
    output: str | None = None
    emit_kind: str | None = None
    include_dirs: tuple[str, ...] = ()
    passes: str | None = None
    print_before: tuple[str, ...] = ()
    print_after: tuple[str, ...] = ()
    print_after_all: bool = False
    print_changed: bool = False
    time_passes: bool = False
    verify_each: bool = False
    dump_dir: str | None = None
    pass_config: tuple[str, ...] = ()
    disable_pass: tuple[str, ...] = ()
    write_deps: bool = False
    dep_file: str | None = None
    dep_target: str | None = None
    opt_level: int = 2
    target: str | None = None
    schedules: tuple[str, ...] = ()
    libs: tuple[str, ...] = ()
    lib_dirs: tuple[str, ...] = ()
    megakernel: str | None = None
    megakernel_watchdog: str | None = None
    blas: bool = False
    mesh: str | None = None
    no_uneven_shards: bool = False
    report_collectives: bool = False
    no_default_schedule: bool = False
    tuned: str | None = None
    tuned_any_cpu: bool = False
    verbose: int = 0
    debug: bool = False


def read_module(path: str, include_dirs: tuple[str, ...]) -> IRModule:
    """Parse `path` with the frontend; a missing file is a user error, not a traceback."""
    if not Path(path).is_file():
        raise fail(f"no such file: {path}")
    from tirc.frontend import parse_file

    return parse_file(path, include_dirs=include_dirs)


def add_schedules(mod: IRModule, paths: tuple[str, ...], include_dirs: tuple[str, ...]) -> IRModule:
    """Merge the schedules of `--schedule` files into `mod` (and their files into sources).

    A schedule file imports the functions it schedules (`from kernels import matmul`); it may
    not define functions of its own.
    """
    for path in paths:
        extra = read_module(path, include_dirs)
        own = [f for f in extra.functions.values() if f.span is not None and f.span.file == path]
        if own:
            raise CompileError(Diagnostic(
                "error", "a --schedule file may hold only schedules, not functions", own[0].span))
        sources = tuple(dict.fromkeys(mod.sources + (extra.sources or (path,))))
        mod = mod.replace(schedules=mod.schedules + extra.schedules,  # type: ignore[assignment]
                          sources=sources)
    return mod


def pass_config(items: tuple[str, ...]) -> dict[str, str]:
    """`KEY=VALUE` strings into a dictionary."""
    config: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise fail(f"--pass-config wants KEY=VALUE, got '{item}'")
        config[key] = value
    return config


MEGAKERNEL_MODES = ("static", "dynamic")


def megakernel_config(mode: str | None, watchdog: str | None) -> dict[str, str]:
    """`-fmegakernel=MODE` and `-fmegakernel-watchdog=SECONDS` as the pass-config keys
    `megakernel` and `megakernel.watchdog`; bad values are user errors."""
    config: dict[str, str] = {}
    if mode is not None:
        if mode not in MEGAKERNEL_MODES:
            raise fail(f"-fmegakernel wants 'static' or 'dynamic', got '{mode}'")
        config["megakernel"] = mode
    if watchdog is not None:
        if not watchdog.isdigit() or int(watchdog) < 1:
            raise fail(f"-fmegakernel-watchdog wants a positive whole number of seconds, "
                       f"got '{watchdog}'")
        config["megakernel.watchdog"] = str(int(watchdog))
    return config


def make_instruments(opts: CompileOptions) -> list[Instrument]:
    """The instruments the printing/timing/verifying options ask for, in a fixed order."""
    for name in (*opts.print_before, *opts.print_after):
        check_pass_name(name)
    sink = inst.DumpSink(dump_dir=opts.dump_dir)
    found: list[Instrument] = []
    if opts.verbose >= 1:
        found.append(inst.Progress())
    if opts.print_before:
        found.append(inst.PrintBefore(opts.print_before, sink))
    if opts.print_after_all or opts.verbose >= 3:
        found.append(inst.PrintAfterAll(sink))
    elif opts.print_after:
        found.append(inst.PrintAfter(opts.print_after, sink))
    if opts.print_changed:
        found.append(inst.PrintChanged(sink))
    if opts.time_passes or opts.verbose >= 2:
        found.append(inst.TimePasses())
    if opts.verify_each:
        found.append(inst.VerifyEach())
    if opts.report_collectives:
        from tirc.passes.dist.report import ReportCollectives

        found.append(ReportCollectives())
    return found


def sharding_config(opts: CompileOptions) -> dict[str, str]:
    """`--mesh SHAPE` and `-fno-uneven-shards` as the pass-config keys of propagate-sharding."""
    config: dict[str, str] = {}
    if opts.mesh:
        config["sharding.mesh"] = opts.mesh
    if opts.no_uneven_shards:
        config["sharding.uneven"] = "0"
    return config


def output_plan(opts: CompileOptions) -> tuple[str, str]:
    """The emit kind and the output path (`-` for stdout) from `--emit`, `-o` and the input."""
    implied = kind_from_output(opts.output)
    kind = opts.emit_kind or implied
    if kind is None:
        special = opts.output is not None and Path(opts.output).exists() and \
            not Path(opts.output).is_file()
        if opts.output not in (None, STDOUT) and not special:
            raise fail(f"cannot tell what to emit from the name '{opts.output}'; "
                       f"pass --emit ({', '.join(EMIT_SUFFIXES)})")
        kind = "tir"
    output = opts.output
    if output is None:
        output = STDOUT if kind == "tir" else Path(opts.file).with_suffix(EMIT_SUFFIXES[kind]).name
    return kind, output


def write_depfile(opts: CompileOptions, mod: IRModule, output: str, kind: str) -> None:
    """The `-MD`/`-MF` Make rule naming every `.tir` file read."""
    if output == STDOUT:
        default_target = Path(opts.file).with_suffix(EMIT_SUFFIXES[kind]).name
    else:
        default_target = output
    target = opts.dep_target or default_target
    dep_path = opts.dep_file or str(Path(default_target).with_suffix(".d"))
    deps = list(mod.sources) or [opts.file]
    if opts.tuned is not None:
        deps.append(opts.tuned)
    write_output(dep_path, dependency_rule(target, deps))


def blas_link(opts: CompileOptions) -> tuple[tuple[str, ...], tuple[str, ...], dict[str, str]]:
    """`-fblas`: the libraries to link and the pass config for BLAS matmuls; without a CBLAS,
    a warning and the tiled loops."""
    if not opts.blas:
        return opts.libs, opts.lib_dirs, {}
    from tirc.passes.graph.blas_library import NO_BLAS, blas_library

    found = blas_library()
    if found is None:
        sys.stderr.write(f"tirc: warning: {NO_BLAS}\n")
        return opts.libs, opts.lib_dirs, {}
    return opts.libs + (found.name,), opts.lib_dirs + (found.lib_dir,), {"blas": "1"}


def tuned_config(opts: CompileOptions, target: Target) -> dict[str, str]:
    """`--tuned FILE`: the best recorded decisions for this machine as the pass config entry
    `schedule.decisions`; a warning names the records left out for another CPU."""
    if opts.tuned is None:
        return {}
    if not Path(opts.tuned).is_file():
        raise fail(f"no such file: {opts.tuned}")
    import json

    from tirc.passes.schedule.tuned_option import DECISIONS_CONFIG
    from tirc.tune.machine import this_machine
    from tirc.tune.records import tuned_config as best_decisions

    kind = "cuda" if target.is_gpu else "llvm"
    chosen, other = best_decisions(opts.tuned, this_machine(), opts.tuned_any_cpu, kind)
    if other and not opts.tuned_any_cpu:
        sys.stderr.write(f"tirc: warning: {opts.tuned}: {other} run(s) measured on another CPU "
                         "left out (--tuned-any-cpu uses them)\n")
    return {DECISIONS_CONFIG: json.dumps(chosen, sort_keys=True)} if chosen else {}


def compile_file(opts: CompileOptions) -> None:
    """The whole compile: read, transform, emit, write (atomically, only if all went well)."""
    kind, output = output_plan(opts)
    try:
        target: Target = parse_target(opts.target)
    except TargetError as exc:
        raise fail(f"bad --target: {exc}") from None
    try:
        specs = split_spec(opts.passes) if opts.passes is not None else \
            default_pipeline(target, opts.opt_level, opts.megakernel)
        passes = build_pipeline(specs, opts.disable_pass)
        instruments = make_instruments(opts)
    except PipelineError as exc:
        raise fail(str(exc)) from None
    libs, lib_dirs, blas = blas_link(opts)
    ctx = PassContext(opt_level=opts.opt_level, target=target,
                      config={**pass_config(opts.pass_config), **blas,
                              **({"schedule.default": "none"} if opts.no_default_schedule else {}),
                              **tuned_config(opts, target),
                              **megakernel_config(opts.megakernel, opts.megakernel_watchdog),
                              **sharding_config(opts)},
                      instruments=instruments,
                      disabled=set(opts.disable_pass))
    mod = read_module(opts.file, opts.include_dirs)
    mod = add_schedules(mod, opts.schedules, opts.include_dirs)
    try:
        mod = run_pipeline(mod, passes, ctx)
    finally:
        if ctx.warnings:
            print_diagnostics(ctx.warnings)
    data = emit(mod, kind, target, opts.opt_level, None if output == STDOUT else output,
                libs=libs, lib_dirs=lib_dirs)
    write_output(output, data, executable=kind == "so")
    if opts.write_deps or opts.dep_file:
        write_depfile(opts, mod, output, kind)
    if opts.verbose >= 1:
        sys.stderr.write(f"tirc: wrote {'stdout' if output == STDOUT else output} ({kind})\n")


@click.command("compile")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("-o", "output", metavar="OUT", help="Output file; '-' is stdout.")
@click.option("--emit", "emit_kind", type=click.Choice(list(EMIT_SUFFIXES)),
              help="What to write (default: from the -o suffix, else tir).")
@click.option("-I", "include_dirs", multiple=True, metavar="DIR",
              help="Search DIR for imported .tir files.")
@click.option("--passes", metavar="A,B,C",
              help="Run these passes instead of the default pipeline (name{opt=value} sets "
                   "options).")
@click.option("--print-before", multiple=True, metavar="NAME",
              help="Dump the IR before each run of pass NAME.")
@click.option("--print-after", multiple=True, metavar="NAME",
              help="Dump the IR after each run of pass NAME.")
@click.option("--print-after-all", is_flag=True, help="Dump the IR after every pass.")
@click.option("--print-changed", is_flag=True,
              help="Dump the IR after each pass that changed it, with the pass's notes.")
@click.option("--time-passes", is_flag=True, help="Print a table of time spent per pass.")
@click.option("--verify-each", is_flag=True,
              help="Check well-formedness of the input and after every pass.")
@click.option("--dump-dir", metavar="DIR",
              help="Write dumps as numbered .tir files into DIR instead of stderr.")
@click.option("--pass-config", multiple=True, metavar="KEY=VALUE",
              help="A setting for passes (PassContext.config).")
@click.option("--disable-pass", multiple=True, metavar="NAME",
              help="Leave pass NAME out of the pipeline.")
@click.option("-MD", "write_deps", is_flag=True, help="Write a Make dependency file.")
@click.option("-MF", "dep_file", metavar="FILE",
              help="Name of the dependency file (default: OUT with a .d suffix).")
@click.option("-MT", "dep_target", metavar="TARGET",
              help="Target of the dependency rule (default: OUT).")
@click.option("-O", "opt_level", type=click.IntRange(0, 3), default=2, metavar="0-3",
              show_default=True,
              help="Optimisation level, -O0 to -O3.")
@click.option("--target", metavar="T",
              help='Target: "llvm -mcpu=znver5", "cuda -arch=sm_90", or a JSON dict.')
@click.option("--schedule", "schedules", multiple=True, metavar="FILE",
              help="Apply the schedules in FILE.")
@click.option("-l", "libs", multiple=True, metavar="NAME",
              help="Link the library libNAME.so, which defines external functions "
                   "(R.call_dps_packed); repeatable.")
@click.option("-L", "lib_dirs", multiple=True, metavar="DIR",
              help="Search DIR for -l libraries (also the run path of the .so); repeatable.")
@click.option("-fmegakernel", "megakernel", metavar="static|dynamic",
              help="Run each graph function's kernels as one megakernel (tasks synchronised "
                   "by event tensors) with a static or dynamic schedule.")
@click.option("-fmegakernel-watchdog", "megakernel_watchdog", metavar="SECONDS",
              help="Make a megakernel task that waits longer than SECONDS fail the call, "
                   "naming the task and event, instead of hanging.")
@click.option("-fblas", "blas", is_flag=True,
              help="Compute float32 matmuls with a CBLAS (scipy-openblas32: pip install "
                   "'tirc[blas]', or a system one), linked in; without one, the tiled loops.")
@click.option("--mesh", metavar="SHAPE",
              help="Run distributed functions on a mesh of this shape instead of the declared "
                   "one: 4, 2x2, or mesh[0]=2x2 for one of several meshes.")
@click.option("-fno-uneven-shards", "no_uneven_shards", is_flag=True,
              help="Make a split that does not divide a dimension evenly an error.")
@click.option("--report-collectives", is_flag=True,
              help="List each collective the compiler inserted, with its line and bytes "
                   "(on stderr).")
@click.option("-fno-default-schedule", "no_default_schedule", is_flag=True,
              help="Give loop functions without a schedule of their own none (no schedule "
                   "rules; pass config schedule.default=none).")
@click.option("--tuned", metavar="FILE",
              help="Build with the best schedule decisions recorded in FILE by `tirc tune` "
                   "(records measured on this CPU).")
@click.option("--tuned-any-cpu", is_flag=True,
              help="With --tuned: use records measured on another CPU too.")
@click.option("-v", "--verbose", count=True,
              help="More detail: -v progress, -vv pass times, -vvv the IR after every pass.")
@click.option("--debug", is_flag=True, help="Show a traceback for internal compiler errors.")
def compile_command(file: str, **kwargs: object) -> None:
    """Compile FILE: parse it, run the pass pipeline and write the result."""
    opts = CompileOptions(file=file, **kwargs)  # type: ignore[arg-type]
    with reported_errors(opts.debug):
        compile_file(opts)
