"""Every pass dump is a valid `.tir` file: after each pass of the default pipeline, the printed
module parses back to an equal module and prints the same text again."""

from __future__ import annotations

from pathlib import Path

import pytest
from tirc.frontend import parse, parse_file
from tirc.ir import structural_equal
from tirc.ir.printer import print_module
from tirc.ir.structural import first_difference
from tirc.ir.target import host_target
from tirc.passes.pass_base import PassContext
from tirc.passes.pipeline import build_pipeline, default_pipeline

SAMPLES = sorted(Path(__file__).resolve().parents[2].joinpath("samples").glob("*.tir"))


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_every_dump_parses_back(path: Path) -> None:
    mod = parse_file(str(path))
    ctx = PassContext(opt_level=3, target=host_target())
    last_text, again = "", None
    for p in build_pipeline(default_pipeline(host_target(), 3)):
        try:
            mod = p(mod, ctx)
        except Exception as exc:  # a sample the pipeline cannot take yet is not this test's
            pytest.skip(f"{p.name} does not take {path.name} yet: {exc}")
        text = print_module(mod)
        if text != last_text:  # the same text parses to the same module: parse it once
            again = parse(text, f"<after {p.name}>")
            assert print_module(again) == text, f"after {p.name}"
            last_text = text
        assert structural_equal(again, mod), first_difference(mod, again)
