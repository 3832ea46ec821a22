"""`tirc passes`: every registered pass with its one-line description and options."""

from __future__ import annotations

import dataclasses

import click
from tirc.passes.registry import all_passes


def pass_lines() -> list[str]:
    """One line per pass: name, description, and `{option=default}` when it has options."""
    passes = all_passes()
    width = max((len(n) for n in passes), default=0)
    lines = []
    for name, cls in passes.items():
        options = [f"{f.name.replace('_', '-')}={f.default!r}"
                   for f in dataclasses.fields(cls)
                   if f.init and f.name != "span" and f.default is not dataclasses.MISSING]
        suffix = f"  {{{', '.join(options)}}}" if options else ""
        lines.append(f"{name:<{width}}  {cls.description}{suffix}")
    return lines


@click.command("passes")
def passes_command() -> None:
    """List every pass with its description."""
    for line in pass_lines():
        click.echo(line)
