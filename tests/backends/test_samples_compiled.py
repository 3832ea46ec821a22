"""Every loop-level sample compiled at -O0 and -O3 through the default pipeline, run through
tirc.runtime at each of its sizes (dynamic samples: several sizes from one library), and equal
to the NumPy reference within the dtype's tolerance."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import tirc.runtime as rt

ROOT = Path(__file__).resolve().parents[2]


def _references() -> ModuleType:
    """samples/references.py, loaded by path under the name the sample tests use."""
    name = "tirc_sample_references"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "samples" / "references.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


REFS = _references()
LEVELS = ["-O0", "-O3"]


def _compile(sample: Any, level: str, out: Path) -> Any:
    from click.testing import CliRunner
    from tirc.cli.main import cli

    res = CliRunner().invoke(cli, [str(sample.path), level, "-o", str(out)], prog_name="tirc")
    assert res.exit_code == 0, res.output
    return rt.load(out)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", sorted(s.name for s in REFS.LOOP_SAMPLES))
def test_compiled_sample_matches_numpy(name: str, level: str, tmp_path: Path) -> None:
    sample = REFS.BY_NAME[name]
    lib = _compile(sample, level, tmp_path / f"{name}.so")
    fn = lib[sample.func]
    for sizes in sample.compiled_sizes:
        inputs = sample.make_inputs(sizes, np.random.default_rng(0))
        got = fn(*inputs)
        got = list(got) if isinstance(got, tuple) else [got]
        problem = REFS.mismatch(got, sample.reference(*inputs))
        assert problem is None, f"{name} {level} at {sizes}: {problem}"
