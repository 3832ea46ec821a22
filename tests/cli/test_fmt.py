"""`tirc fmt`: print, rewrite in place, and check the canonical format."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_inputs import ADD_ONE, ADD_ONE_MESSY, LIB, SCHEDULE, SYNTAX_ERROR, USES_LIB
from tirc.frontend import parse


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("good.tir").write_text(ADD_ONE)
    Path("messy.tir").write_text(ADD_ONE_MESSY)
    Path("broken.tir").write_text(SYNTAX_ERROR)


def test_prints_formatted_text(invoke, files) -> None:
    r = invoke("fmt", "messy.tir")
    assert r.exit_code == 0, r.output
    assert r.stdout == parse(ADD_ONE_MESSY, "messy.tir").script()
    assert Path("messy.tir").read_text() == ADD_ONE_MESSY


def test_formatting_is_idempotent(invoke, files) -> None:
    once = invoke("fmt", "messy.tir").stdout
    Path("once.tir").write_text(once)
    assert invoke("fmt", "once.tir").stdout == once


def test_check_accepts_formatted_files(invoke, files) -> None:
    r = invoke("fmt", "--check", "good.tir")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")


def test_check_names_unformatted_files(invoke, files) -> None:
    r = invoke("fmt", "--check", "good.tir", "messy.tir")
    assert r.exit_code == 1
    assert r.stderr == "tirc: messy.tir is not formatted\n"
    assert Path("messy.tir").read_text() == ADD_ONE_MESSY


def test_in_place(invoke, files) -> None:
    r = invoke("fmt", "-i", "messy.tir", "good.tir")
    assert (r.exit_code, r.stdout) == (0, "")
    assert Path("messy.tir").read_text() == parse(ADD_ONE_MESSY, "messy.tir").script()
    assert invoke("fmt", "--check", "messy.tir").exit_code == 0


def test_syntax_error_is_reported_and_other_files_still_formatted(invoke, files) -> None:
    r = invoke("fmt", "-i", "broken.tir", "messy.tir")
    assert r.exit_code == 1
    assert r.stderr.startswith("broken.tir:3:")
    assert Path("broken.tir").read_text() == SYNTAX_ERROR
    assert invoke("fmt", "--check", "messy.tir").exit_code == 0


def test_missing_file(invoke, files) -> None:
    r = invoke("fmt", "none.tir")
    assert (r.exit_code, r.stderr) == (1, "tirc: error: no such file: none.tir\n")


def test_in_place_and_check_conflict(invoke, files) -> None:
    r = invoke("fmt", "-i", "--check", "good.tir")
    assert r.exit_code == 2
    assert "-i and --check cannot be combined" in r.stderr


def test_imports_stay_imports(invoke, files) -> None:
    Path("lib.tir").write_text(LIB)
    Path("main.tir").write_text(USES_LIB)
    r = invoke("fmt", "-i", "main.tir")
    assert r.exit_code == 0, r.output
    text = Path("main.tir").read_text()
    assert text.startswith("# from tvm.script import ir as I\n# from tvm.script import tir as T\n"
                           "\nfrom lib import add_one\n\n\n@I.ir_module\nclass Module:\n"
                           "    @T.prim_func\n    def zero(")
    assert "def add_one" not in text
    assert Path("lib.tir").read_text() == LIB
    assert invoke("fmt", "--check", "main.tir").exit_code == 0


def test_schedule_file_keeps_only_its_schedules(invoke, files) -> None:
    Path("add_one.tir").write_text(ADD_ONE)
    Path("sched.tir").write_text(SCHEDULE)
    r = invoke("fmt", "sched.tir")
    assert r.exit_code == 0, r.output
    assert r.stdout.endswith("from add_one import add_one\n\n\n@I.ir_module\nclass Module:\n"
                             "    pass\n\n\n" + SCHEDULE.split("\n\n\n", 1)[1])


def test_fmt_converts_between_spellings(invoke, tmp_path: Path) -> None:
    """`tirc fmt --syntax=tirx|classic` prints a file in either spelling; the module is the
    same, and without the option a file keeps the spelling it is written in."""
    from tirc.ir import structural_equal

    src = tmp_path / "m.tir"
    src.write_text(MATMUL_CLASSIC)
    tirx = invoke("fmt", "--syntax=tirx", src)
    assert tirx.exit_code == 0, tirx.stdout
    assert 'with T.sblock("C"):' in tirx.stdout and "@T.prim_func(s_tir=True)" in tirx.stdout
    (tmp_path / "x.tir").write_text(tirx.stdout)
    kept = invoke("fmt", tmp_path / "x.tir")
    assert kept.stdout == tirx.stdout
    back = invoke("fmt", "--syntax=classic", tmp_path / "x.tir")
    assert 'with T.block("C"):' in back.stdout and "s_tir" not in back.stdout
    assert structural_equal(parse(back.stdout, "b.tir"), parse(tirx.stdout, "t.tir"))


MATMUL_CLASSIC = '''from tvm.script import tir as T


@T.prim_func
def mm(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32"),
       C: T.Buffer((4, 4), "float32")):
    for i, j, k in T.grid(4, 4, 4):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
'''
