"""Command-line conventions: '-' for stdin and stdout, @response files, --color, -Werror,
several inputs with -o a folder (or one output per input, as `cc -c`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_inputs import ADD_ONE, SYNTAX_ERROR


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    Path("a.tir").write_text(ADD_ONE)
    Path("b.tir").write_text(ADD_ONE.replace("add_one", "add_two"))
    return tmp_path


def test_stdin_to_stdout(invoke, here) -> None:
    r = invoke("-", "--passes=verify", "-o", "-", input=ADD_ONE)
    assert r.exit_code == 0, r.output
    assert "def add_one(" in r.stdout
    r = invoke("-", "--emit", "so", "-o", "-", input=ADD_ONE)
    assert r.exit_code == 0 and r.stdout_bytes.startswith(b"\x7fELF")
    r = invoke("-", "--emit", "so", input=ADD_ONE)  # named after stdin, as cc's a.out
    assert r.exit_code == 0 and Path("stdin.so").exists()


def test_stdin_errors_name_stdin(invoke, here) -> None:
    r = invoke("-", input=SYNTAX_ERROR)
    assert r.exit_code == 1 and r.stderr.startswith("<stdin>:3:")


def test_response_files(invoke, here) -> None:
    Path("flags.rsp").write_text("# options for the build\n--emit so  -O3 \n@more.rsp\n")
    Path("more.rsp").write_text("'-o' out/\n")
    r = invoke("a.tir", "b.tir", "@flags.rsp")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in Path("out").iterdir()) == ["a.so", "b.so"]
    r = invoke("a.tir", "@missing.rsp")
    assert r.exit_code == 2 and "cannot read response file 'missing.rsp'" in r.stderr
    Path("loop.rsp").write_text("@loop.rsp\n")
    assert "nest more than 16 deep" in invoke("@loop.rsp").stderr


def test_several_inputs(invoke, here) -> None:
    r = invoke("a.tir", "b.tir", "--emit", "ll")
    assert r.exit_code == 0, r.output
    assert Path("a.ll").exists() and Path("b.ll").exists()
    r = invoke("a.tir", "b.tir", "-o", "x.so")
    assert (r.exit_code, r.stderr.count("error")) == (1, 1)
    assert "-o x.so names one file, but there are several inputs" in r.stderr
    Path("bad.tir").write_text(SYNTAX_ERROR)
    r = invoke("bad.tir", "a.tir", "--emit", "h", "-o", "hdr/")
    assert r.exit_code == 1 and r.stderr.startswith("bad.tir:3:")
    assert [p.name for p in Path("hdr").iterdir()] == ["a.h"]


def test_color(invoke, here) -> None:
    r = invoke("--color=always", "none.tir")
    assert r.exit_code == 1 and "\x1b[" in r.stderr and "no such file: none.tir" in r.stderr
    r = invoke("none.tir", "--color=never")
    assert r.stderr == "tirc: error: no such file: none.tir\n"
    r = invoke("fmt", "--color=always", "none.tir")
    assert "\x1b[" in r.stderr


def test_werror(invoke, here, monkeypatch) -> None:
    from tirc.passes.graph import blas_library

    monkeypatch.setattr(blas_library, "blas_library", lambda: None)
    r = invoke("a.tir", "-o", "a.so", "-fblas")
    assert r.exit_code == 0 and r.stderr.startswith("tirc: warning: ")
    r = invoke("a.tir", "-o", "w.so", "-fblas", "-Werror")
    assert r.exit_code == 1 and r.stderr.startswith("tirc: error: ")
    assert r.stderr.rstrip().endswith("[-Werror]") and not Path("w.so").exists()
