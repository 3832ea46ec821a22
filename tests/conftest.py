"""Shared test fixtures: running `tirc` in-process (click) or as a real subprocess.

Helper modules beside this file (`cli_inputs`, `ir_strategies`) import by name from any test
folder: pyproject puts tests/ on the path.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import settings

# The suite is reproducible: hypothesis draws the same examples on every run, so a CI result
# never depends on luck. `--hypothesis-profile=explore` draws fresh examples (and more of
# them) to look for new failures; each one found becomes an @example of its test.
settings.register_profile("default", derandomize=True, database=None)
settings.register_profile("explore", max_examples=1000)
settings.load_profile("default")

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


def tirc_executable() -> str | None:
    """The `tirc` console script of the running interpreter's environment."""
    beside = Path(sys.executable).parent / "tirc"
    return str(beside) if beside.exists() else shutil.which("tirc")


@pytest.fixture
def run_tirc() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the installed `tirc` command with arguments; returns the finished process."""
    exe = tirc_executable()
    if exe is None:
        pytest.skip("the tirc console script is not installed")

    def run(*args: str, cwd: str | Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([exe, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                              timeout=120)

    return run


@pytest.fixture
def invoke() -> Callable[..., Result]:
    """Run `tirc` in-process through click's test runner (stdout and stderr kept apart)."""
    from tirc.cli.main import cli

    def run(*args: str, input: str | bytes | None = None) -> Result:
        return CliRunner().invoke(cli, [str(a) for a in args], prog_name="tirc", input=input)

    return run
