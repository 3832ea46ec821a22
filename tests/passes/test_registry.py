"""The pass registry: every Pass subclass of tirc.passes is registered under its own name, a
name is registered once, passes load only when asked for, and every pass has its lit test."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tirc.passes
from tirc.passes import registry
from tirc.passes.pass_base import Pass, PrimFuncPass
from tirc.passes.registry import (
    PASSES,
    RegistryError,
    UnknownPassError,
    all_passes,
    get_pass,
    pass_class,
)

KEBAB = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
LIT_PASSES = Path(__file__).resolve().parents[1] / "lit" / "passes"


def _every_pass_class() -> dict[str, type[Pass]]:
    """Every concrete Pass subclass defined in a module of tirc.passes, by `module:Class`."""
    found: dict[str, type[Pass]] = {}
    for info in pkgutil.walk_packages(tirc.passes.__path__, prefix="tirc.passes."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Pass) and cls not in (Pass, PrimFuncPass) and \
                    cls.__module__ == info.name and cls.name:
                found[f"{info.name}:{cls.__name__}"] = cls
    return found


def test_every_pass_in_the_tree_is_registered_under_its_name() -> None:
    classes = _every_pass_class()
    assert sorted(classes) == sorted(PASSES.values())
    for where, cls in classes.items():
        assert PASSES[cls.name] == where


def test_every_key_is_its_pass_name() -> None:
    for key, cls in all_passes().items():
        assert key == cls.name


def test_a_name_registered_twice_is_an_error() -> None:
    with pytest.raises(RegistryError, match="pass 'unroll' is registered twice"):
        registry._table((("unroll", "tirc.passes.unroll:Unroll"),
                         ("unroll", "tirc.passes.vectorize:Vectorize")))


def test_a_line_naming_another_pass_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PASSES, "unroll", "tirc.passes.vectorize:Vectorize")
    with pytest.raises(RegistryError, match="whose pass is 'vectorize'"):
        pass_class("unroll")


def test_every_name_is_kebab_case() -> None:
    for key in PASSES:
        assert KEBAB.match(key), key


def test_every_pass_has_a_one_line_description() -> None:
    for key, cls in all_passes().items():
        assert cls.description.strip(), f"pass '{key}' has no description"
        assert "\n" not in cls.description, f"pass '{key}' has a multi-line description"


def test_every_pass_has_its_lit_test() -> None:
    for name in PASSES:
        path = LIT_PASSES / f"{name}.tir"
        assert path.exists(), f"pass '{name}' has no lit test {path}"
        run = next(line for line in path.read_text().splitlines() if "RUN:" in line)
        assert re.search(rf"--passes[= ]'?[^ ]*\b{re.escape(name)}\b", run), run


def test_get_pass() -> None:
    assert get_pass("verify").name == "verify"
    assert get_pass("unroll", max_extent=8).max_extent == 8  # type: ignore[attr-defined]
    with pytest.raises(UnknownPassError):
        get_pass("no-such-pass")


def test_a_pipeline_imports_only_the_passes_it_runs() -> None:
    code = ("import sys\nfrom tirc.passes.pipeline import build_pipeline\n"
            "build_pipeline(['unroll'])\n"
            "print(' '.join(m for m in sys.modules if m.startswith('tirc.passes.')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.split()
    assert "tirc.passes.unroll" in loaded
    assert not [m for m in loaded if m.startswith(("tirc.passes.gpu", "tirc.passes.graph",
                                                   "tirc.passes.megakernel",
                                                   "tirc.passes.schedule"))], loaded
