"""The `tirc` command: compiling is the default command; `fmt`, `passes`, `run`, `schedule` and
`tune` are subcommands.

`tirc FILE ...` and `tirc compile FILE ...` are the same; `tirc --help` shows both the
subcommands and the compile options. `@FILE` anywhere reads more arguments from FILE.
"""

from __future__ import annotations

import importlib

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


class DefaultCommandGroup(click.Group):
    """A group whose first argument, when it is not a subcommand, goes to `compile`; its
    subcommands load on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = COMMANDS.get(cmd_name)
        if where is None:
            return None
        module, _, attr = where.partition(":")
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
    """Entry point of the `tirc` console script."""
    cli(prog_name="tirc")


if __name__ == "__main__":
    main()
