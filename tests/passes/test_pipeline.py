"""Default pipelines and `--passes` specs: names to pass objects, with options and errors."""

from __future__ import annotations

import pytest
from tirc.ir.target import parse_target
from tirc.passes.pipeline import (
    PipelineError,
    build_pipeline,
    default_pipeline,
    make_pass,
    parse_option_value,
    split_spec,
)
from tirc.passes.registry import all_passes


def test_default_pipeline_holds_only_registered_passes_and_starts_with_verify() -> None:
    for level in range(4):
        for target in ("llvm", "cuda -arch=sm_90"):
            names = default_pipeline(parse_target(target), level)
            assert names[0] == "verify"
            assert all(n in all_passes() for n in names)


def test_higher_levels_add_passes() -> None:
    o0 = default_pipeline(parse_target("llvm"), 0)
    o3 = default_pipeline(parse_target("llvm"), 3)
    assert set(o0) <= set(o3)
    if "simplify" in all_passes():
        assert "simplify" not in o0 and "simplify" in o3


def test_split_spec_keeps_options_together() -> None:
    assert split_spec("a, b{x=1,y=2} ,c") == ["a", "b{x=1,y=2}", "c"]
    assert split_spec("") == []


def test_unknown_pass_suggests_close_names() -> None:
    with pytest.raises(PipelineError) as err:
        make_pass("verfy")
    assert str(err.value) == ("unknown pass 'verfy'; did you mean 'verify'? "
                              "('tirc passes' lists them all)")


def test_unknown_pass_without_close_names() -> None:
    with pytest.raises(PipelineError) as err:
        make_pass("zzzzzzzz")
    assert str(err.value) == "unknown pass 'zzzzzzzz' ('tirc passes' lists them all)"


def test_unknown_option() -> None:
    with pytest.raises(PipelineError) as err:
        make_pass("verify{depth=3}")
    assert str(err.value) == "pass 'verify' has no option 'depth' (options: none)"


def test_unclosed_options() -> None:
    with pytest.raises(PipelineError, match="missing '}'"):
        make_pass("verify{depth=3")


def test_build_pipeline_leaves_out_disabled_passes() -> None:
    assert [p.name for p in build_pipeline(["verify", "verify"])] == ["verify", "verify"]
    assert build_pipeline(["verify"], disabled=["verify"]) == []
    with pytest.raises(PipelineError, match="unknown pass 'verifyy'"):
        build_pipeline(["verify"], disabled=["verifyy"])


def test_option_values_take_the_field_type() -> None:
    assert parse_option_value("8", "int", "p", "n") == 8
    assert parse_option_value("0.5", "float", "p", "x") == 0.5
    assert parse_option_value("true", "bool", "p", "b") is True
    assert parse_option_value("0", "bool", "p", "b") is False
    assert parse_option_value("fast", "str", "p", "mode") == "fast"
    with pytest.raises(PipelineError) as err:
        parse_option_value("eight", "int", "unroll", "max-extent")
    assert str(err.value) == "option 'max-extent' of pass 'unroll' wants an int, got 'eight'"
