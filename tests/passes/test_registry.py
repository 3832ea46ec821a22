"""The pass registry: keys are the passes' names, and every pass describes itself."""

from __future__ import annotations

import re

import pytest
from tirc.passes.registry import UnknownPassError, all_passes, get_pass

KEBAB = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def test_every_key_is_its_pass_name() -> None:
    for key, cls in all_passes().items():
        assert key == cls.name


def test_every_name_is_kebab_case() -> None:
    for key in all_passes():
        assert KEBAB.match(key), key


def test_every_pass_has_a_one_line_description() -> None:
    for key, cls in all_passes().items():
        assert cls.description.strip(), f"pass '{key}' has no description"
        assert "\n" not in cls.description, f"pass '{key}' has a multi-line description"


def test_the_foundation_passes_are_registered() -> None:
    assert "verify" in all_passes()


def test_get_pass() -> None:
    assert get_pass("verify").name == "verify"
    with pytest.raises(UnknownPassError):
        get_pass("no-such-pass")
