"""The `tirc` command: compiling is the default command; `fmt`, `passes`, `run`, `tune` are
subcommands.

`tirc FILE ...` and `tirc compile FILE ...` are the same; `tirc --help` shows both the
subcommands and the compile options.
"""

from __future__ import annotations

import click
from tirc.cli.compile_cmd import compile_command
from tirc.cli.fmt_cmd import fmt_command
from tirc.cli.passes_cmd import passes_command
from tirc.cli.run_cmd import run_command
from tirc.cli.tune_cmd import tune_command

DEFAULT_COMMAND = "compile"


class DefaultCommandGroup(click.Group):
    """A group whose first argument, when it is not a subcommand, goes to `compile`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        group_only = {"--help", "-h", "--version"}
        if args and args[0] not in self.commands and args[0] not in group_only:
            args = [DEFAULT_COMMAND, *args]
        return super().parse_args(ctx, args)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_help(ctx, formatter)
        command = self.commands[DEFAULT_COMMAND]
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


cli.add_command(compile_command)
cli.add_command(fmt_command)
cli.add_command(passes_command)
cli.add_command(run_command)
cli.add_command(tune_command)


def main() -> None:
    """Entry point of the `tirc` console script."""
    cli(prog_name="tirc")


if __name__ == "__main__":
    main()
