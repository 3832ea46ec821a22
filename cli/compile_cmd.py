"""`tirc FILE ...`: parse, run the pass pipeline, emit, and write a dependency file."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import click
from tirc.backends import NotLoweredError
from tirc.backends.phases import Phases
from tirc.backends.symbols import ExportNames, library_name_from_path
from tirc.cli.depfile import dependency_rule
from tirc.cli.diagnostics_output import (
    EXIT_USER_ERROR,
    color_option,
    fail,
    print_diagnostics,
    report_warnings,
    reported_errors,
    set_color,
    set_werror,
    warn,
)
from tirc.cli.emit import EMIT_SUFFIXES, emit, kind_from_output
from tirc.cli.output_file import STDOUT, write_output
from tirc.cli.source_format import format_source
from tirc.cli.status_line import StatusLine
from tirc.ir.diagnostics import CompileError, Diagnostic
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.target import Target, TargetError, parse_target
from tirc.passes import instruments as inst
from tirc.passes.manager import Instrument, Sequential, run_pipeline
from tirc.passes.pass_base import Pass, PassContext
from tirc.passes.pipeline import (
    PipelineError,
    build_pipeline,
    check_config_keys,
    check_pass_name,
    default_pipeline,
    pass_spec,
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
    print_changed: str | None = None  # "full" or "diff"
    stop_after: str | None = None
    print_pipeline: bool = False
    opt_bisect_limit: int | None = None
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
    symbol_prefix: str | None = None
    march: str | None = None
    bounds_check: bool = False
    verbose: int = 0
    debug: bool = False


def read_module(path: str, include_dirs: tuple[str, ...]) -> IRModule:
    """Parse `path` (`-`: standard input) with the frontend; a missing file is a user error,
    not a traceback."""
    if path == STDIN:
        from tirc.frontend import parse

        return parse(sys.stdin.read(), "<stdin>", include_dirs=include_dirs)
    if not Path(path).is_file():
        raise fail(f"no such file: {path}")
    from tirc.frontend import parse_file

    return parse_file(path, include_dirs=include_dirs)


STDIN = "-"


def output_for(file: str, output: str | None, several: bool,
               emit_kind: str | None) -> str | None:
    """The `-o` of one input: as given for one input; for several, OUT is a folder (made when
    it ends in '/') that takes each input's own name, or each output goes beside its input."""
    if not several or output is None or output == STDOUT:
        return output
    if output.endswith("/"):
        Path(output).mkdir(parents=True, exist_ok=True)
    if not Path(output).is_dir():
        raise fail(f"-o {output} names one file, but there are several inputs; give a "
                   "folder (-o DIR/) or no -o (each output beside its input's name)")
    suffix = EMIT_SUFFIXES[emit_kind or "tir"]
    return str(Path(output) / Path(input_stem(file)).with_suffix(suffix).name)


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
    """The instruments the printing/timing/verifying/bisecting/stopping options ask for, in a
    fixed order."""
    for name in (*opts.print_before, *opts.print_after):
        check_pass_name(name)
    sink = inst.DumpSink(dump_dir=opts.dump_dir, layout=format_source)
    found: list[Instrument] = []
    if opts.opt_bisect_limit is not None:
        found.append(inst.OptBisect(opts.opt_bisect_limit))
    if opts.verbose >= 1:
        found.append(inst.Progress())
    if opts.print_before:
        found.append(inst.PrintBefore(opts.print_before, sink))
    if opts.print_after_all or opts.verbose >= 3:
        found.append(inst.PrintAfterAll(sink))
    elif opts.print_after:
        found.append(inst.PrintAfter(opts.print_after, sink))
    if opts.print_changed:
        found.append(inst.PrintChanged(sink, diff=opts.print_changed == "diff"))
    if opts.time_passes or opts.verbose >= 2:
        found.append(inst.TimePasses(at_exit=False))  # printed after the backend's steps
    if opts.verify_each:
        found.append(inst.VerifyEach())
    if opts.report_collectives:
        from tirc.passes.dist.report import ReportCollectives

        found.append(ReportCollectives())
    if opts.stop_after is not None:
        found.append(inst.StopAfter(opts.stop_after))
    return found


def sharding_config(opts: CompileOptions) -> dict[str, str]:
    """`--mesh SHAPE` and `-fno-uneven-shards` as the pass-config keys of propagate-sharding."""
    config: dict[str, str] = {}
    if opts.mesh:
        config["sharding.mesh"] = opts.mesh
    if opts.no_uneven_shards:
        config["sharding.uneven"] = "0"
    return config


def default_specs(opts: CompileOptions, target: Target) -> list[str]:
    """The default pipeline for the target, -O level and -fmegakernel, as pass specs."""
    return default_pipeline(target, opts.opt_level, opts.megakernel)


def chosen_passes(opts: CompileOptions, target: Target) -> list[Pass]:
    """The passes this compile runs, in order: `--passes` or the default pipeline, less
    `--disable-pass` ones (PipelineError for unknown names and options)."""
    specs = split_spec(opts.passes) if opts.passes is not None else default_specs(opts, target)
    return build_pipeline(specs, opts.disable_pass)


def flat_passes(passes: list[Pass]) -> list[Pass]:
    """`passes` with Sequential ones replaced by the passes they run."""
    return [q for p in passes for q in (flat_passes(list(p.passes)) if isinstance(p, Sequential)
                                        else [p])]


def check_stop_after(opts: CompileOptions, passes: list[Pass], kind: str) -> None:
    """`--stop-after NAME` names a pass of this pipeline, and the output is `.tir` text (the
    module stops short of what any backend compiles)."""
    if opts.stop_after is None:
        return
    check_pass_name(opts.stop_after)
    if opts.stop_after not in {p.name for p in flat_passes(passes)}:
        raise fail(f"--stop-after={opts.stop_after}: the pipeline does not run that pass "
                   "('tirc --print-pipeline' with the same options lists what it runs)")
    if kind != "tir":
        raise fail(f"--stop-after={opts.stop_after} ends the pipeline before code generation: "
                   f"only .tir text can be written, not --emit {kind} (use --emit tir or "
                   "-o FILE.tir)")


def lowering_hint(opts: CompileOptions, passes: list[Pass], target: Target, kind: str,
                  exc: NotLoweredError) -> str:
    """What the backend's NotLoweredError means for a pipeline the user chose (--passes or
    --disable-pass): such a pipeline runs exactly what it says (as LLVM's opt runs exactly its
    -passes), so no step is added behind the user's back; the message names every lowering
    step of the default pipeline that it leaves out."""
    ran = {p.name for p in flat_passes(passes)}
    missing = [p.name for p in flat_passes(build_pipeline(default_specs(opts, target)))
               if not p.optional and p.name not in ran]
    chosen = "--passes" if opts.passes is not None else "--disable-pass"
    steps = (f"; the default pipeline's lowering steps it leaves out: "
             f"{', '.join(dict.fromkeys(missing))}") if missing else ""
    return (f"{chosen} leaves the module unlowered for --emit {kind} ({exc.what}){steps}. "
            "Add them, or write the module as it is with --emit tir")


def input_stem(file: str) -> str:
    """The name outputs are named after: the input's, or `stdin` for `-`."""
    return "stdin.tir" if file == STDIN else file


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
        output = STDOUT if kind == "tir" else Path(input_stem(opts.file)).with_suffix(
            EMIT_SUFFIXES[kind]).name
    return kind, output


def write_depfile(opts: CompileOptions, mod: IRModule, output: str, kind: str) -> None:
    """The `-MD`/`-MF` Make rule naming every `.tir` file read."""
    if output == STDOUT:
        default_target = Path(input_stem(opts.file)).with_suffix(EMIT_SUFFIXES[kind]).name
    else:
        default_target = output
    target = opts.dep_target or default_target
    dep_path = opts.dep_file or str(Path(default_target).with_suffix(".d"))
    deps = list(mod.sources) or [opts.file]
    if opts.tuned is not None:
        deps.append(opts.tuned)
    write_output(dep_path, dependency_rule(target, deps))


def pipeline_config(opts: CompileOptions, blas: dict[str, str],
                    target: Target) -> dict[str, str]:
    """The pass config of a compile: --pass-config, -fblas (`blas`, from blas_link),
    -fmegakernel, -fno-default-schedule, -fbounds-check, --tuned (for `target`), --mesh and
    -fno-uneven-shards entries."""
    given = pass_config(opts.pass_config)
    if given:
        try:
            check_config_keys(given)
        except PipelineError as exc:
            raise fail(str(exc)) from None
    return {**given, **blas, **megakernel_config(opts.megakernel, opts.megakernel_watchdog),
            **({"schedule.default": "none"} if opts.no_default_schedule else {}),
            **({"bounds-check": "1"} if opts.bounds_check else {}),
            **tuned_config(opts, target), **sharding_config(opts)}


def blas_link(opts: CompileOptions) -> tuple[tuple[str, ...], tuple[str, ...], dict[str, str]]:
    """`-fblas`: the libraries to link and the pass config for BLAS matmuls; without a CBLAS,
    a warning and the tiled loops."""
    if not opts.blas:
        return opts.libs, opts.lib_dirs, {}
    from tirc.passes.graph.blas_library import NO_BLAS, blas_library

    found = blas_library()
    if found is None:
        warn(NO_BLAS)
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
        warn(f"{opts.tuned}: {other} run(s) measured on another CPU left out "
             "(--tuned-any-cpu uses them)")
    return {DECISIONS_CONFIG: json.dumps(chosen, sort_keys=True)} if chosen else {}


def with_march(target: Target, march: str | None) -> Target:
    """`-march=CPU`: the CPU target with `-mcpu=CPU` (`native`: this machine's)."""
    if march is None:
        return target
    if target.is_gpu:
        raise fail(f"-march={march} names a CPU, but the target is '{target}'")
    return dataclasses.replace(target, mcpu=march)


def compile_file(opts: CompileOptions) -> None:
    """The whole compile: read, transform, emit, write (atomically, only if all went well)."""
    kind, output = output_plan(opts)
    try:
        target: Target = parse_target(opts.target)
    except TargetError as exc:
        raise fail(f"bad --target: {exc}") from None
    target = with_march(target, opts.march)
    if not target.is_gpu and kind not in ("tir", "h"):
        from tirc.backends.llvm import cpu_choice

        cpu_choice(target)  # an unknown CPU or feature fails now, not after the passes
    try:
        passes = chosen_passes(opts, target)
        check_stop_after(opts, passes, kind)
        instruments = make_instruments(opts)
    except PipelineError as exc:
        raise fail(str(exc)) from None
    if opts.bounds_check and target.is_gpu and opts.megakernel:
        raise fail("-fbounds-check is not supported with -fmegakernel on GPU targets")
    names = ExportNames(library_name_from_path(input_stem(opts.file)), opts.symbol_prefix or "")
    libs, lib_dirs, blas = blas_link(opts)
    ctx = PassContext(opt_level=opts.opt_level, target=target,
                      config=pipeline_config(opts, blas, target),
                      instruments=instruments,
                      disabled=set(opts.disable_pass))
    mod = read_module(opts.file, opts.include_dirs)
    mod = add_schedules(mod, opts.schedules, opts.include_dirs)
    # The status line only where nothing else writes to the terminal's standard error.
    quiet = not any(isinstance(i, (inst.Progress, inst.PrintAfterAll, inst.PrintAfter,
                                   inst.PrintBefore, inst.PrintChanged)) for i in instruments)
    status = StatusLine(len(passes)) if quiet and StatusLine.wanted() else None
    if status is not None:
        ctx.instruments.append(status)
    listeners = [i for i in ctx.instruments if hasattr(i, "phase_done")]
    try:
        try:
            mod = run_pipeline(mod, passes, ctx)
        except BaseException:
            print_diagnostics(ctx.warnings)  # what the passes found before the error
            raise
        report_warnings(ctx.warnings)
        try:
            data = emit(mod, kind, target, opts.opt_level, None if output == STDOUT else output,
                        libs=libs, lib_dirs=lib_dirs, names=names, phases=Phases(listeners))
        except NotLoweredError as exc:
            if opts.passes is None and not opts.disable_pass:
                raise
            raise fail(lowering_hint(opts, passes, target, kind, exc)) from None
    finally:
        if status is not None:
            status.close()
    for i in instruments:
        if isinstance(i, inst.TimePasses):
            i.print_table()
    write_output(output, data, executable=kind == "so")
    if opts.write_deps or opts.dep_file:
        write_depfile(opts, mod, output, kind)
    if opts.verbose >= 1:
        sys.stderr.write(f"tirc: wrote {'stdout' if output == STDOUT else output} ({kind})\n")


def print_pipeline(opts: CompileOptions) -> None:
    """`--print-pipeline`: the passes this compile would run, in order, one `--passes` spec a
    line (name and options as they run), on standard output."""
    try:
        target = with_march(parse_target(opts.target), opts.march)
    except TargetError as exc:
        raise fail(f"bad --target: {exc}") from None
    try:
        passes = flat_passes(chosen_passes(opts, target))
    except PipelineError as exc:
        raise fail(str(exc)) from None
    # Options as the compile runs them: --pass-config, -fblas and -fmegakernel applied.
    ctx = PassContext(opt_level=opts.opt_level, target=target,
                      config=pipeline_config(opts, blas_link(opts)[2], target))
    specs = [pass_spec(p.configured(ctx)) for p in passes]  # every error before any output
    click.echo("\n".join(specs))


class CompileCommand(click.Command):
    """The compile command; `--print-changed` alone means `--print-changed=full`, so that its
    value is given only with '=' (as LLVM spells it) and never swallows the input file."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        args = ["--print-changed=full" if a == "--print-changed" else a for a in args]
        return super().parse_args(ctx, args)


@click.command("compile", cls=CompileCommand)
@click.argument("files", nargs=-1, metavar="FILES...", type=click.Path(dir_okay=False))
@click.option("-o", "output", metavar="OUT",
              help="Output file; '-' is stdout; a folder (DIR/) for several inputs.")
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
@click.option("--print-changed", type=click.Choice(["full", "diff"]), metavar="[=diff]",
              help="Dump the IR after each pass that changed it, with the pass's notes; "
                   "=diff: a unified diff against the IR before the pass instead.")
@click.option("--stop-after", metavar="NAME",
              help="Stop the pipeline after the first run of pass NAME and write the IR as it "
                   "is (.tir output only).")
@click.option("--print-pipeline", is_flag=True,
              help="Print the passes the target and -O level (and --passes, --disable-pass, "
                   "-fmegakernel) would run, one --passes spec a line, and exit.")
@click.option("--opt-bisect-limit", type=click.IntRange(min=-1), metavar="N",
              help="Run only the first N optional passes (the optimisations; lowering always "
                   "runs), reporting each as 'BISECT: running pass (K) NAME' or 'BISECT: NOT "
                   "running pass (K) NAME' on stderr; -1: all.")
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
              help='Target: "llvm -mcpu=znver5", "llvm -mcpu=native", "cuda -arch=sm_90", or a '
                   'JSON dict (default "llvm", for x86-64-v3).')
@click.option("-march", "march", metavar="CPU",
              help="Compile for CPU (an LLVM -mcpu name; 'native': this machine's CPU with all "
                   "its features). The default, x86-64-v3, runs on any x86-64 with AVX2.")
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
@click.option("--symbol-prefix", metavar="P",
              help="Put P before every exported C name (functions and the library's "
                   "last_error/metadata helpers); by default a function keeps its "
                   "global_symbol, 'main' becomes <input name>_main and the helpers are "
                   "<input name>_last_error/_metadata.")
@click.option("-fbounds-check", "bounds_check", is_flag=True,
              help="Check at run time every access not proved in bounds: an out-of-bounds "
                   "index makes the call fail (-5) naming the buffer, indices and line.")
@click.option("-v", "--verbose", count=True,
              help="More detail: -v progress, -vv pass times, -vvv the IR after every pass.")
@color_option
@click.option("-Werror", "werror", is_flag=True, help="Make every warning an error.")
@click.option("--debug", is_flag=True, help="Show a traceback for internal compiler errors.")
def compile_command(files: tuple[str, ...], color: str, werror: bool,
                    **kwargs: object) -> None:
    """Compile FILES ('-' is standard input): parse, run the pass pipeline, write the result.

    Several inputs compile one after the other into one output each (as `cc -c`); an error in
    one is reported and the others still compile (exit status 1)."""
    set_color(color)
    set_werror(werror)
    if kwargs.get("print_pipeline"):
        with reported_errors(bool(kwargs.get("debug"))):
            print_pipeline(CompileOptions(file=files[0] if files else STDIN,
                                          **kwargs))  # type: ignore[arg-type]
        return
    if not files:
        raise click.UsageError("Missing argument 'FILES...'.")
    with reported_errors(bool(kwargs.get("debug"))):
        outputs = [output_for(f, kwargs.get("output"), len(files) > 1,  # type: ignore[arg-type]
                              kwargs.get("emit_kind")) for f in files]  # type: ignore[arg-type]
    failed = False
    for file, output in zip(files, outputs):
        opts = CompileOptions(file=file, **{**kwargs, "output": output})  # type: ignore[arg-type]
        try:
            with reported_errors(opts.debug):
                compile_file(opts)
        except click.exceptions.Exit as done:
            if len(files) == 1 or done.exit_code != EXIT_USER_ERROR:
                raise
            failed = True
    if failed:
        raise click.exceptions.Exit(EXIT_USER_ERROR)
