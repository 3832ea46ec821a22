"""Runs the lit suite (tests/lit/**/*.tir) once from pytest and reports each file as a test.

So one runner (`pytest tests`) reports everything. For one file on its own, with its
output: `.venv/bin/lit -v tests/lit/passes/verify.tir`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SUITE = "tirc"  # config.name in lit.cfg.py
TESTS = sorted(str(p.relative_to(HERE)) for p in HERE.rglob("*.tir")
               if not {"Inputs", "Output"} & set(p.relative_to(HERE).parts))


def _lit() -> str:
    beside = Path(sys.executable).parent / "lit"
    found = str(beside) if beside.exists() else shutil.which("lit")
    assert found is not None, "lit is not installed (pip install -e '.[test]')"
    return found


@pytest.fixture(scope="module")
def lit_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str | None]:
    """Each test file's outcome: None when it passed, 'skipped', or lit's failure report."""
    report = tmp_path_factory.mktemp("lit") / "results.xml"
    subprocess.run([_lit(), "-s", f"--xunit-xml-output={report}", str(HERE)],
                   capture_output=True, text=True, timeout=600)
    results: dict[str, str | None] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        folders = case.get("classname", "").split(".")[1:]
        key = "/".join([*folders, case.get("name", "")])
        failure = case.find("failure")
        if failure is not None:
            results[key] = failure.text or "failed"
        elif case.find("skipped") is not None:
            results[key] = "skipped"
        else:
            results[key] = None
    return results


@pytest.mark.parametrize("test", TESTS)
def test_lit(test: str, lit_results: dict[str, str | None]) -> None:
    assert test in lit_results, f"lit did not run {test}"
    outcome = lit_results[test]
    if outcome == "skipped":
        pytest.skip("unsupported here (lit REQUIRES/UNSUPPORTED)")
    if outcome is not None:
        pytest.fail(outcome, pytrace=False)
