"""The linker tirc chooses: gold when it may (no `$CC`, no external functions to require), the
default linker when gold is absent or refuses; every choice gives a library that works."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from backend_support import elementwise, emit
from tirc.backends import link
from tirc.backends.link import link_shared
from tirc.ir import ForKind, IRModule, Var
from tirc.ir.dtype import dtype
from tirc.runtime import load


def _object(tmp_path: Path) -> bytes:
    n = Var("n", dtype("int64"))
    f = elementwise("axpy", ["float32", "float32"], "float32", lambda x, y: x * 2.0 + y, n,
                    kind=ForKind.SERIAL)
    return emit(IRModule({"axpy": f}), "obj", None, 2, tmp_path / "m.o")


def _works(path: Path) -> None:
    x, y = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
    np.testing.assert_array_equal(load(path).axpy(x, y), x * 2 + 1)


def test_gold_only_when_tirc_chooses_and_no_symbol_is_required(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(link, "_gold_available", lambda: True)
    assert link._faster_linker(()) == ["-fuse-ld=gold"]
    assert link._faster_linker(("env_relu",)) == []  # gold lacks --require-defined
    monkeypatch.setenv("CC", "cc")
    assert link._faster_linker(()) == []
    monkeypatch.delenv("CC")
    monkeypatch.setattr(link, "_gold_available", lambda: False)
    assert link._faster_linker(()) == []


@pytest.mark.skipif(shutil.which("ld.gold") is None, reason="no gold linker here")
def test_a_library_linked_by_gold_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CC", raising=False)
    link_shared(_object(tmp_path), tmp_path / "m.so")
    assert b"gold" in (tmp_path / "m.so").read_bytes()  # gold writes its name in .note
    _works(tmp_path / "m.so")


def test_a_refused_faster_linker_falls_back_to_the_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(link, "_faster_linker", lambda externs: ["-fuse-ld=no-such-linker"])
    link_shared(_object(tmp_path), tmp_path / "m.so")
    _works(tmp_path / "m.so")
