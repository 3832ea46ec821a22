"""`--target` strings and JSON dicts parse into the same Target."""

from __future__ import annotations

import pytest
from tirc.ir.target import Target, TargetError, host_target, parse_target


def test_llvm_string() -> None:
    t = parse_target("llvm -mcpu=znver5 -mattr=+avx512f,+fma -mtriple=x86_64-linux-gnu")
    assert t == Target("llvm", mcpu="znver5", mattr=("+avx512f", "+fma"),
                       triple="x86_64-linux-gnu")
    assert not t.is_gpu


def test_cuda_string() -> None:
    t = parse_target("cuda -arch=sm_90")
    assert (t.kind, t.arch, t.is_gpu) == ("cuda", "sm_90", True)


def test_json_form_equals_string_form() -> None:
    text = '{"kind": "llvm", "mcpu": "znver5", "mattr": ["+avx512f"]}'
    assert parse_target(text) == parse_target("llvm -mcpu=znver5 -mattr=+avx512f")
    assert parse_target({"kind": "cuda", "arch": "sm_80"}) == parse_target("cuda -arch=sm_80")


def test_cuda_with_host() -> None:
    t = parse_target({"kind": "cuda", "arch": "sm_90", "host": {"kind": "llvm"}})
    assert t.host == Target("llvm")


def test_string_form_round_trips() -> None:
    for text in ("llvm -mcpu=znver5 -mattr=+avx2,+fma", "cuda -arch=sm_90", "llvm",
                 "llvm -mtriple=aarch64-linux-gnu"):
        assert str(parse_target(text)) == text
        assert parse_target(parse_target(text).to_json()) == parse_target(text)


def test_unknown_options_are_kept() -> None:
    t = parse_target("llvm -opt-level=3")
    assert t.options == {"opt-level": "3"}
    assert str(t) == "llvm -opt-level=3"


def test_default_is_the_host() -> None:
    assert parse_target(None) == host_target() == Target("llvm")


@pytest.mark.parametrize("spec, message", [
    ("rocm", "unknown target kind 'rocm' (expected one of: llvm, cuda)"),
    ("llvm mcpu", "target option 'mcpu' is not of the form -key=value"),
    ("llvm -arch=sm_90", "target option 'arch' applies to cuda targets, not llvm"),
    ("cuda -arch=90", "cuda arch '90' should look like sm_90"),
    ('{"kind": "llvm"', "target is not valid JSON: Expecting ',' delimiter"),
    ("[1]", "unknown target kind '[1]' (expected one of: llvm, cuda)"),
    ('{"kind": "llvm", "mcpu": 3}', "target option 'mcpu' must be a string"),
    ("  ", "empty target"),
])
def test_bad_targets(spec: str, message: str) -> None:
    with pytest.raises(TargetError) as err:
        parse_target(spec)
    assert str(err.value) == message
