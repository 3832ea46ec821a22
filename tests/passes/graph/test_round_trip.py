"""After every graph pass, the module prints as .tir that parses back to an equal module."""

from __future__ import annotations

import pytest
from graph_support import SAMPLES
from tirc.frontend import parse, parse_file
from tirc.ir import structural_equal
from tirc.passes.graph.graph_pipeline import graph_steps
from tirc.passes.registry import get_pass


@pytest.mark.parametrize("sample", ["mlp.tir", "transformer_block.tir", "mlp_dps.tir",
                                    "sparse/gcn_layer.tir"])
def test_every_graph_pass_output_round_trips(sample: str) -> None:
    mod = parse_file(SAMPLES / sample)
    for name in graph_steps(3):
        mod = get_pass(name)(mod)
        text = mod.script()
        again = parse(text)
        assert structural_equal(mod, again), f"after {name}"
        assert again.script() == text, f"after {name}"
