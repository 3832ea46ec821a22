"""The installed package is the source tree: every folder of a layer that holds Python modules
is a package listed in pyproject.toml, so a wheel (a non-editable install) has all of tirc.

A missing entry does not show in the suite, which runs from an editable install whose finder
maps whole folders; it showed on the device machine, where tirc is installed from a wheel and
`tirc.passes.schedule_rules` was missing."""

from __future__ import annotations

import pytest
from test_layering import LAYERS, ROOT

tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later


def test_every_source_folder_is_a_listed_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    on_disk = {".".join(["tirc", *init.parent.relative_to(ROOT).parts])
               for layer in LAYERS for init in (ROOT / layer).rglob("__init__.py")}
    assert on_disk - listed == set(), "add these to [tool.setuptools] packages"
    assert listed - on_disk == set(), "these listed packages have no folder"
    assert all(config["package-dir"][f"tirc.{layer}"] == layer for layer in LAYERS)


def test_every_source_folder_has_an_init() -> None:
    """A folder of modules without __init__.py would be a namespace package, left out of the
    wheel silently."""
    bare = [str(folder.relative_to(ROOT)) for layer in LAYERS
            for folder in [ROOT / layer, *(ROOT / layer).rglob("*")]
            if folder.is_dir() and "__pycache__" not in folder.parts
            and any(folder.glob("*.py")) and not (folder / "__init__.py").exists()]
    assert bare == []
