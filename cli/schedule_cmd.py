"""`tirc schedule FILE`: the default schedule of each loop function, as `@S.schedule` text.

The schedule rules schedule every loop function without a schedule of its own (at -O1 and
above); this command prints, per function, the schedule they apply, with the rule that took
each block and the named decisions in comments: paste a schedule into the source file to keep
it, or edit it (a decision's `decision=` value, a tile size) and keep that. Functions of the
file print with their own name; kernels the graph passes make (`fused_matmul_add_relu`) are
named as the compiler makes them; a function the rules leave as it is (no block they take) is
named in a comment only. `--passes` style options are not taken: the module is
compiled as `tirc FILE -O<N> --target <T>` would compile it, up to the default schedule.
"""

from __future__ import annotations

import click
from tirc.cli.diagnostics_output import reported_errors
from tirc.ir.target import TargetError, parse_target


def schedule_text(path: str, opt_level: int, target: str | None,
                  include_dirs: tuple[str, ...] = ()) -> str:
    """The default schedules of the file's loop functions, as .tir text."""
    from tirc.cli.compile_cmd import read_module
    from tirc.cli.diagnostics_output import fail
    from tirc.ir.printer import print_node
    from tirc.passes.schedule_rules.api import prepare, rule_traces

    try:
        tgt = parse_target(target)
    except TargetError as exc:
        raise fail(f"bad --target: {exc}") from None
    mod = prepare(read_module(path, include_dirs), tgt, opt_level)
    traces = rule_traces(mod, tgt)
    blocks = []
    for name, trace in traces.items():
        lines = [f"# {name}: {trace.summary()}"]
        lines += [f"#   {d.describe()}" for d in trace.decisions.values()]
        if not trace.applied:  # nothing to paste (a sparse format's generated conversion)
            blocks.append(lines[0] + "\n")
            continue
        blocks.append("\n".join(lines) + "\n" + print_node(trace.schedule))
    if not blocks:
        return "# no loop function gets a default schedule\n"
    return "\n\n".join(blocks)


@click.command("schedule")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("-O", "opt_level", type=click.IntRange(1, 3), default=2, show_default=True,
              metavar="1-3", help="Optimisation level the file is compiled at.")
@click.option("--target", metavar="T", help='Target: "llvm ..." or "cuda -arch=sm_90".')
@click.option("-I", "include_dirs", multiple=True, metavar="DIR",
              help="Search DIR for imported .tir files.")
@click.option("--debug", is_flag=True, help="Show a traceback for internal compiler errors.")
def schedule_command(file: str, opt_level: int, target: str | None,
                     include_dirs: tuple[str, ...], debug: bool) -> None:
    """Print the default schedule of each loop function of FILE as @S.schedule text."""
    with reported_errors(debug):
        click.echo(schedule_text(file, opt_level, target, include_dirs), nl=False)
