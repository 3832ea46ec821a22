"""After every graph pass, the module prints as .tir that parses back to an equal module."""

from __future__ import annotations

import pytest
from graph_support import SAMPLES
from tirc.frontend import parse, parse_file
from tirc.ir import structural_equal
from tirc.ir.target import parse_target
from tirc.passes.pipeline import default_pipeline
from tirc.passes.registry import get_pass


@pytest.mark.parametrize("sample", ["mlp.tir", "transformer_block.tir", "mlp_dps.tir",
                                    "sparse/gcn_layer.tir"])
def test_every_graph_pass_output_round_trips(sample: str) -> None:
    mod = parse_file(SAMPLES / sample)
    steps = default_pipeline(parse_target("llvm"), 3)
    for name in steps[steps.index("normalize"): steps.index("megakernel-runtime") + 1]:
        mod = get_pass(name)(mod)
        text = mod.script()
        again = parse(text)
        assert structural_equal(mod, again), f"after {name}"
        assert again.script() == text, f"after {name}"
