"""`tirc SAMPLE --print-after=fuse-ops` shows the fused groups: the dump parses back, and the
MLP and the transformer block call the expected number of kernels after fusion."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from graph_support import SAMPLES, kernel_calls
from tirc.frontend import parse
from tirc.ir.graph import Function


def fused_dump(invoke: Callable[..., Result], sample: str, tmp_path: Path) -> str:
    """The module as `--print-after=fuse-ops` prints it (stderr, headed by the pass)."""
    r = invoke(SAMPLES / sample, "--print-after=fuse-ops", "-o", tmp_path / "out.so")
    assert r.exit_code == 0, r.stderr
    assert r.stderr.startswith("# IR after fuse-ops\n")
    return r.stderr.split("# IR after", 2)[1].split("\n", 1)[1]


@pytest.mark.parametrize("sample,kernels,groups", [
    ("mlp.tir", 3, {"fused_matmul_bias_relu": 2, "fused_matmul1_add_relu": 3,
                    "fused_matmul2_add1": 2}),
    ("transformer_block.tir", 16, {"fused_matmul_add1": 2, "fused_matmul1_multiply_add": 3,
                                   "fused_matmul3_silu_multiply1": 3,
                                   "fused_matmul4_add1": 2}),
])
def test_print_after_fuse_ops_shows_the_groups(invoke: Callable[..., Result], tmp_path: Path,
                                               sample: str, kernels: int,
                                               groups: dict[str, int]) -> None:
    mod = parse(fused_dump(invoke, sample, tmp_path))
    assert len(kernel_calls(mod)) == kernels
    primitive = {n: f for n, f in mod.functions.items()
                 if isinstance(f, Function) and f.attrs.get("Primitive")}
    for name, size in groups.items():
        assert len(kernel_calls(mod, name)) == size, name
    assert set(groups) <= set(primitive)
