"""Make dependency files (`-MD`, `-MF`, `-MT`): which `.tir` files an output was built from."""

from __future__ import annotations

from collections.abc import Iterable


def make_escape(path: str) -> str:
    """Escape a path for a Make rule: `$` doubles, spaces and `#` take a backslash."""
    return path.replace("$", "$$").replace("#", "\\#").replace(" ", "\\ ")


def dependency_rule(target: str, deps: Iterable[str]) -> str:
    """`target: dep1 dep2 ...` (one dependency a line), then an empty rule per extra file.

    The empty rules (as gcc's -MP) keep `make` working after an imported file is deleted.
    """
    unique = list(dict.fromkeys(deps))
    lines = [make_escape(target) + ":"]
    for dep in unique:
        lines[-1] += " \\"
        lines.append("  " + make_escape(dep))
    out = "\n".join(lines) + "\n"
    for dep in unique[1:]:
        out += f"\n{make_escape(dep)}:\n"
    return out
