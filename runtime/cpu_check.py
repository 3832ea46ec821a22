"""Refusing a library built for CPU features this machine lacks, before any of its code runs.

A library's metadata lists, under `target.needs`, the `/proc/cpuinfo` flags of the features its
code may use (the CPU it was compiled for). Loading it on a CPU without one of them would die on
an illegal instruction at some later call; the loader checks first and says what is missing.
Where `/proc/cpuinfo` is not there (not Linux), nothing is checked.
"""

from __future__ import annotations

import platform
from functools import cache
from typing import Any

from tirc.runtime.errors import TircError

CPUINFO = "/proc/cpuinfo"


@cache
def cpu_flags() -> frozenset[str] | None:
    """This machine's CPU feature flags (from the first `flags` line), or None if unknown."""
    try:
        with open(CPUINFO, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "flags":
                    return frozenset(value.split())
    except OSError:
        return None
    return None


def check_cpu(path: str, metadata: dict[str, Any],
              flags: frozenset[str] | None = None) -> None:
    """Raise TircError when the library at `path` needs features this CPU does not have."""
    target = metadata.get("target") or {}
    needs = target.get("needs") or []
    if not needs or platform.machine().lower() not in ("x86_64", "amd64"):
        return
    have = cpu_flags() if flags is None else flags
    if have is None:
        return
    missing = [n for n in needs if n not in have]
    if missing:
        raise TircError(f"'{path}' was compiled for CPU '{target.get('cpu')}' and uses "
                        f"{', '.join(missing)}, which this CPU does not have; rebuild it with "
                        "the default target (x86-64-v3) or --target \"llvm -mcpu=<this CPU>\"")
