"""Helpers for frontend tests: parsing a text and checking its printed form parses back."""

from __future__ import annotations

from tirc.frontend import parse
from tirc.ir import IRModule, structural_equal
from tirc.ir.printer import print_module


def round_trip(text: str) -> IRModule:
    """Parse `text`, check print/re-parse equality and a stable print; the parsed module."""
    mod = parse(text)
    printed = print_module(mod)
    again = parse(printed)
    assert structural_equal(mod, again), printed
    assert print_module(again) == printed
    return mod
