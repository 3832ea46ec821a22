"""Paged attention on the GPU: the template's block-form kernels (decode with soft-cap and a
sliding window, causal append; grouped-query heads) lowered with their `target="cuda"`
schedules (a request per thread block, a query head per thread) run in the GPU interpreter and
agree with NumPy, and their PTX passes ptxas for sm_80 and sm_90."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from gpu_support import lower, require_ptxas
from tirc.driver import compile_ptx
from tirc.frontend import parse, parse_file
from tirc.ir.interpreter.gpu import GPUInterpreter

from tests.e2e.test_paged_attention import HERE, TEMPLATE, _case, _variant

CASES = [("paged_decode_gpu", {"group": 4}),
         ("paged_decode_gpu", {"group": 2, "soft_cap": 0.5, "window": 6}),
         ("paged_append_causal_gpu", {"group": 2}),
         ("paged_append_causal_gpu", {"group": 1, "window": 5})]


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{kw}" for n, kw in CASES])
def test_gpu_lowered_attention_agrees_with_numpy(name: str, kw: dict) -> None:
    v = _variant(name, **kw)
    args, want = _case(v, seed=3)
    mod = lower(parse(TEMPLATE.render(v)))
    GPUInterpreter(mod).call(v.name, *args)
    np.testing.assert_allclose(args[-1].astype(np.float64), want, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", ["paged_decode_gpu", "paged_append_causal_gpu"])
def test_attention_ptx_passes_ptxas(name: str, arch: str, tmp_path: Path) -> None:
    exe = require_ptxas()
    result = compile_ptx(parse_file(HERE / f"{name}.tir"), f"cuda -arch={arch}")
    ptx = tmp_path / f"{name}.ptx"
    ptx.write_text(result.ptx)
    done = subprocess.run([exe, f"-arch={arch}", str(ptx), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
