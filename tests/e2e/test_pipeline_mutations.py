"""A fixed batch of mutated samples through the whole pipeline (scripts/pipeline_fuzz.py runs
many more): each compiles or gets a diagnostic, never an internal error."""

from __future__ import annotations

import pytest
from difftest.mutations import corpus, run_one

PROGRAMS = corpus(max_chars=1700)  # the short samples: the batch stays a few seconds


@pytest.mark.parametrize(("target", "seeds"), [(None, range(0, 24)),
                                               ("cuda -arch=sm_90", range(1000, 1008))])
def test_mutated_samples_compile_or_get_a_diagnostic(target: str | None, seeds: range) -> None:
    outcomes = [run_one(seed, PROGRAMS, target) for seed in seeds]
    internal = [f"seed {o.seed} ({o.source}, {o.options}): {o.detail}" for o in outcomes
                if o.result == "internal error"]
    assert not internal, "\n".join(internal)
    assert any(o.result == "ok" for o in outcomes)  # the batch still reaches the backends
