"""tirc.ir.method_code_cache: a dataclass's methods compiled from the saved table behave as
freshly compiled ones; the table survives a save and a reload, is not written under
`sys.dont_write_bytecode`, and a damaged file only means compiling again."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from tirc.ir import method_code_cache as cache
from tirc.ir.lean_dataclass import dataclass as lean_dataclass


@pytest.fixture
def table_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty table kept in `tmp_path` instead of the package's `__pycache__`."""
    path = tmp_path / "dataclass-methods.marshal"
    monkeypatch.setattr(cache, "_FILE", path)
    monkeypatch.setattr(cache, "_table", None)
    monkeypatch.setattr(cache, "_used", {})
    monkeypatch.setattr(cache, "_added", False)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return path


def make_point(decorate: object = lean_dataclass) -> type:
    """A frozen dataclass with a default, a factory and `__post_init__`: every kind of line
    the standard `__init__` text has."""

    @decorate(frozen=True)  # type: ignore[operator]
    class Point:
        x: int
        y: int = 2
        tags: tuple[str, ...] = dataclasses.field(default_factory=tuple)

        def __post_init__(self) -> None:
            object.__setattr__(self, "tags", (*self.tags, "made"))

    return Point


def check_point(point_class: type) -> None:
    """The class's methods do what the standard decorator's do."""
    p = point_class(1)
    assert (p.x, p.y, p.tags) == (1, 2, ("made",))
    assert p == point_class(1, 2) and hash(p) == hash(point_class(1, 2))
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'x'"):
        p.x = 3
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'y'"):
        del p.y
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        point_class()
    standard = make_point(dataclasses.dataclass)
    assert point_class.__init__.__annotations__ == standard.__init__.__annotations__


def test_saved_methods_are_reused_and_behave_alike(table_file: Path) -> None:
    check_point(make_point())
    assert not table_file.exists()
    cache.save()
    saved = table_file.read_bytes()
    assert len(cache._load()) >= 3  # __init__, __setattr__, __delattr__ at least
    cache._table = None  # a new process: the table comes from the file
    compiled = []
    real_compile = compile
    monkey = pytest.MonkeyPatch()
    monkey.setattr("builtins.compile", lambda *a, **k: compiled.append(a) or real_compile(*a, **k))
    try:
        check_point(make_point())
    finally:
        monkey.undo()
    assert compiled == []
    cache.save()
    assert table_file.read_bytes() == saved  # nothing new: nothing written


def test_nothing_written_without_bytecode_writing(table_file: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    check_point(make_point())
    cache.save()
    assert not table_file.exists()


def test_a_damaged_table_is_compiled_again(table_file: Path) -> None:
    table_file.write_bytes(b"\x00not marshal data")
    check_point(make_point())
    cache.save()
    cache._table = None
    assert cache._load()


def test_a_compile_saves_the_table_for_the_next(tmp_path: Path) -> None:
    """Through the `tirc` script, whose fast exit skips exit handlers: the table is written."""
    script = Path(sys.executable).with_name("tirc")
    source = tmp_path / "k.tir"
    source.write_text('@T.prim_func\ndef k(A: T.Buffer((4,), "float32")):\n'
                      "    for i in range(4):\n        A[i] = T.float32(0)\n")
    code = ("import sys, runpy\n"
            "from tirc.ir import method_code_cache as c\n"
            "c._table = {}\n"
            f"c._FILE = __import__('pathlib').Path({str(tmp_path / 't.marshal')!r})\n"
            f"sys.argv = ['tirc', {str(source)!r}, '--emit', 'tir', '-o', '-']\n"
            f"runpy.run_path({str(script)!r}, run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin"}, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "t.marshal").stat().st_size > 1000
