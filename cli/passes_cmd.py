"""`tirc passes`: every registered pass with its one-line description and options.

`-v` lists each option on a line of its own: its type, default, what it does, and the
`--pass-config` key that also sets it.
"""

from __future__ import annotations

import click
from tirc.passes.pass_base import option_fields, option_type
from tirc.passes.registry import all_passes


def _kebab(name: str) -> str:
    return name.replace("_", "-")


def pass_lines(verbose: bool = False) -> list[str]:
    """One line per pass: name, description, and `{option=default}` when it has options; with
    `verbose`, a line per option after it."""
    passes = all_passes()
    width = max((len(n) for n in passes), default=0)
    lines = []
    for name, cls in passes.items():
        fields = option_fields(cls)
        options = [f"{_kebab(f.name)}={f.default!r}" for f in fields]
        suffix = f"  {{{', '.join(options)}}}" if options and not verbose else ""
        lines.append(f"{name:<{width}}  {cls.description}{suffix}")
        if not verbose:
            continue
        for f in fields:
            doc = f.metadata.get("doc", "")
            key = f.metadata.get("config")
            alias = f" (--pass-config {key}=...)" if key else ""
            lines.append(f"    {_kebab(f.name)}: {option_type(f)} = {f.default!r}"
                         f"{'  ' + doc if doc else ''}{alias}")
    return lines


@click.command("passes")
@click.option("-v", "--verbose", is_flag=True,
              help="List each option: type, default, meaning and its --pass-config key.")
def passes_command(verbose: bool) -> None:
    """List every pass with its description (and options)."""
    for line in pass_lines(verbose):
        click.echo(line)
