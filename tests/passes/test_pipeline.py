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


CPU, GPU = parse_target("llvm"), parse_target("cuda -arch=sm_90")


def test_every_step_of_every_pipeline_is_a_registered_pass() -> None:
    from tirc.passes.pipeline import pipeline_steps

    for level in range(4):
        for target in (CPU, GPU):
            for mode in (None, "static"):
                for step in pipeline_steps(target, level, mode):
                    assert step.name in all_passes(), step.name
                    assert step.why.strip()


def test_the_pipelines_in_order() -> None:
    assert default_pipeline(CPU, 0) == [
        "verify", "static-check", "apply-schedules", "inline-calls", "normalize",
        "propagate-sharding", "lower-sharding", "legalize-ops", "lower-sparse-iterations",
        "annotate-op-pattern", "fuse-tir", "dead-code-elim", "memory-plan", "megakernel",
        "lower-graph",
        "megakernel-runtime", "bounds-check", "lower-init", "lower-blocks", "compact-buffers",
        "lower-layouts", "flatten-buffers", "inject-vthread", "storage-rewrite", "make-entry"]
    o2 = default_pipeline(CPU, 2)
    assert o2[o2.index("annotate-op-pattern") + 1:o2.index("memory-plan")] == [
        "fold-constants", "fuse-ops", "fuse-tir", "dead-code-elim", "default-schedule"]
    assert o2[o2.index("flatten-buffers"):] == [
        "flatten-buffers", "simplify", "inject-vthread", "hoist-invariant-lets", "unswitch-guards",
        "speculate-guards", "vectorize", "unroll", "simplify", "storage-rewrite", "make-entry"]
    assert default_pipeline(CPU, 2, "dynamic") == o2  # the CPU megakernel reads the config
    gpu_mk = default_pipeline(GPU, 0, "static")
    assert gpu_mk[:gpu_mk.index("lower-init")] == [
        "verify", "static-check", "apply-schedules", "inline-calls", "normalize",
        "propagate-sharding", "lower-sharding", "legalize-ops", "lower-sparse-iterations",
        "annotate-op-pattern",
        "fold-constants", "fuse-ops", "fuse-tir", "dead-code-elim", "megakernel-gpu-tiles",
        "memory-plan", "megakernel", "megakernel-gpu", "gpu-lower-cross-thread-reduction"]
    assert gpu_mk[gpu_mk.index("lower-init"):gpu_mk.index("lower-layouts")] == [
        "lower-init", "lower-blocks", "compact-buffers"]
    assert gpu_mk[-2:] == ["gpu-split-host-device", "verify-gpu"]
    assert default_pipeline(GPU, 0)[-3:] == ["gpu-split-host-device", "gpu-bounds-record",
                                             "verify-gpu"]


def test_optional_steps_are_the_optimisations_o0_leaves_out() -> None:
    """What -O0 leaves out is optional (fuse-tir, which lower-graph needs once a module has
    fused groups, runs at every level); -O0 still runs a few optimisations (memory planning,
    compact buffers and storage rewriting make its code usable, and bisection may skip them).
    A step's flag is its pass's (`Pass.optional`)."""
    from tirc.passes.pipeline import pipeline_steps
    from tirc.passes.registry import pass_class

    for target in (CPU, GPU):
        o0 = default_pipeline(target, 0)
        for level in (1, 2, 3):
            for step in pipeline_steps(target, level):
                assert step.optional == pass_class(step.name).optional
                if step.name not in o0:
                    assert step.optional, step.name
    kept = {s.name for s in pipeline_steps(CPU, 0) if s.optional}
    assert kept == {"compact-buffers", "memory-plan", "storage-rewrite"}
    gpu_kept = {s.name for s in pipeline_steps(GPU, 0) if s.optional}
    assert gpu_kept == {"compact-buffers", "memory-plan"}


def test_options_from_the_pass_config_apply_where_the_spec_leaves_the_default() -> None:
    from tirc.passes.pass_base import PassContext

    ctx = PassContext(config={"unroll.max-extent": "8"})
    assert make_pass("unroll").configured(ctx).max_extent == 8  # type: ignore[attr-defined]
    spec = make_pass("unroll{max-extent=4}").configured(ctx)
    assert spec.max_extent == 4  # type: ignore[attr-defined]
    assert make_pass("vectorize{max-lanes=4}").max_lanes == 4  # type: ignore[attr-defined]
    with pytest.raises(PipelineError, match="option 'max-lanes' of pass 'vectorize' must be at "
                       "least 1, got 0"):
        make_pass("vectorize{max-lanes=0}")
    with pytest.raises(PipelineError, match="option 'max-extent' of pass 'unroll' wants an "
                       "int, got 'x'"):
        make_pass("unroll{max-extent=x}")
