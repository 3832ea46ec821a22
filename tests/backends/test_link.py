"""The linker tirc chooses: gold when it may (no `$CC`, no external functions to require), the
default linker when gold is absent or refuses; every choice gives a library that works. And
how outputs are written: atomically, with the umask's permissions, and in place into what is
not a regular file."""

from __future__ import annotations

import os
import shutil
import stat
import threading
from pathlib import Path

import numpy as np
import pytest
from backend_support import elementwise, emit
from click.testing import CliRunner
from tirc.backends import link
from tirc.backends.link import link_shared, write_atomic
from tirc.cli.main import cli
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


def _read_fifo(path: Path, out: list[bytes]) -> threading.Thread:
    """A reader of the named pipe `path`, collecting what is written into `out`."""
    def read() -> None:
        with open(path, "rb") as f:
            out.append(f.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


def test_an_output_that_is_not_a_regular_file_is_written_in_place(tmp_path: Path) -> None:
    """`-o /dev/null` (or a named pipe) must not be renamed over: that replaced the device
    with a regular file for every kind but `--emit tir`."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    got: list[bytes] = []
    reader = _read_fifo(pipe, got)
    write_atomic(pipe, b"data")
    reader.join(timeout=10)
    assert got == [b"data"] and stat.S_ISFIFO(pipe.stat().st_mode)


@pytest.mark.parametrize("kind", ["asm", "so", "ll"])
def test_the_cli_writes_every_kind_into_a_named_pipe(tmp_path: Path, kind: str) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    src = tmp_path / "f.tir"
    src.write_text('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n'
                   "    for i in range(4):\n        A[i] = A[i] + T.float32(1.0)\n")
    got: list[bytes] = []
    reader = _read_fifo(pipe, got)
    result = CliRunner().invoke(cli, [str(src), "--emit", kind, "-o", str(pipe)])
    reader.join(timeout=30)
    assert result.exit_code == 0, result.output
    assert got and got[0] and stat.S_ISFIFO(pipe.stat().st_mode)


def test_an_executable_output_gets_the_x_bits_the_umask_allows(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "m.so", b"x", executable=True)
        write_atomic(tmp_path / "m.s", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "m.so").stat().st_mode) == 0o750
    assert stat.S_IMODE((tmp_path / "m.s").stat().st_mode) == 0o640
