"""The `tirc` command: compiling is the default command; `fmt`, `passes`, `run`, `schedule` and
`tune` are subcommands.

`tirc FILE ...` and `tirc compile FILE ...` are the same; `tirc --help` shows both the
subcommands and the compile options. `@FILE` anywhere reads more arguments from FILE.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys

import click
from tirc.cli.response_files import ResponseFileError, expand_response_files

DEFAULT_COMMAND = "compile"
# Each subcommand and where it lives: imported only when it runs (or for --help), so that a
# compile does not load what `run` or `fmt` need.
COMMANDS = {
    "compile": "tirc.cli.compile_cmd:compile_command",
    "fmt": "tirc.cli.fmt_cmd:fmt_command",
    "passes": "tirc.cli.passes_cmd:passes_command",
    "run": "tirc.cli.run_cmd:run_command",
    "schedule": "tirc.cli.schedule_cmd:schedule_command",
    "tune": "tirc.cli.tune_cmd:tune_command",
}
# Commands after which the process may leave without tearing the interpreter down: they leave
# no threads, child processes or exit handlers behind (`run` may finalise MPI, `tune` a pool).
FAST_EXIT_COMMANDS = frozenset({"compile", "fmt", "passes"})
# The cyclic garbage collector's first threshold for a command-line run: the default (700 new
# container objects) collects a few hundred times during a compile, mostly while modules load
# and build their classes, and finds almost nothing (IR nodes are immutable trees, and garbage
# without cycles is freed at once whatever the threshold); each collection walks every young
# object, about 0.2 us each. 200 000 (mypy raises it likewise) leaves samples/matmul.tir with
# no collection (20 000: six, 25 ms of CPU time) and halves the time collecting for
# samples/attention/decoder_layer.tir -O3 (180 -> 90 ms), its peak memory unchanged (189 MB).
# Cycles are still collected.
GC_THRESHOLD = 200_000


class DefaultCommandGroup(click.Group):
    """A group whose first argument, when it is not a subcommand, goes to `compile`; its
    subcommands load on first use."""

    resolved: str | None = None  # the subcommand that ran (or was last looked up)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = COMMANDS.get(cmd_name)
        if where is None:
            return None
        module, _, attr = where.partition(":")
        type(self).resolved = cmd_name
        command: click.Command = getattr(importlib.import_module(module), attr)
        return command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            args = expand_response_files(list(args))
        except ResponseFileError as exc:
            raise click.UsageError(str(exc)) from None
        group_only = {"--help", "-h", "--version"}
        if args and args[0] not in COMMANDS and args[0] not in group_only:
            args = [DEFAULT_COMMAND, *args]
        return super().parse_args(ctx, args)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_help(ctx, formatter)
        command = self.get_command(ctx, DEFAULT_COMMAND)
        assert command is not None
        with click.Context(command, info_name=ctx.info_name, parent=None) as sub:
            formatter.write_paragraph()
            formatter.write_text("Compiling (tirc FILE [OPTIONS], the default command):")
            command.format_usage(sub, formatter)
            command.format_options(sub, formatter)


@click.group(cls=DefaultCommandGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(None, "--version", package_name="tirc", prog_name="tirc",
                      message="%(prog)s %(version)s")  # looked up only when asked for
def cli() -> None:
    """tirc: a compiler for tensor programs written in .tir (TVMScript)."""



def main() -> None:
    """Entry point of the `tirc` console script. After a compile, `fmt` or `passes` the process
    exits at once (`exit_now`), skipping the interpreter's teardown: about 45 ms of a 0.7 s
    compile, spent freeing what the process is about to drop anyway. The garbage collector
    runs less often (GC_THRESHOLD)."""
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    try:
        cli(prog_name="tirc")
        code: object = 0
    except SystemExit as exc:
        if DefaultCommandGroup.resolved not in FAST_EXIT_COMMANDS:
            raise
        code = exc.code
    if DefaultCommandGroup.resolved not in FAST_EXIT_COMMANDS:
        return
    exit_now(code)


def exit_now(code: object) -> None:
    """End the process with `code` as `sys.exit(code)` would (None is 0, a message is printed
    and is 1), flushing the standard streams first but freeing nothing, as LLVM's tools do
    (`-disable-free`). The dataclass methods this run compiled are saved for the next
    (`tirc.ir.method_code_cache`), which an exit handler would otherwise do."""
    cache = sys.modules.get("tirc.ir.method_code_cache")
    if cache is not None:
        cache.save()
    if code is not None and not isinstance(code, int):
        sys.stderr.write(f"{code}\n")
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: what was lost is lost either way
            code = code or 1
    os._exit(code or 0)


if __name__ == "__main__":
    main()
