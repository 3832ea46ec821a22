"""`tirc fmt`: a source formatter (comments, blank lines, imports and spelling kept), tested as
black and ruff-format are: idempotent, and parse(format(x)) == parse(x) for every `.tir` file
in the tree, plus random programs and random re-spacings of real ones."""

from __future__ import annotations

import io
import random
import subprocess
import tokenize
from pathlib import Path

import pytest
from cli_inputs import ADD_ONE, ADD_ONE_MESSY, SCHEDULE, SYNTAX_ERROR
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ir_strategies import ir_modules
from tirc.cli.source_format import format_source
from tirc.frontend import parse
from tirc.ir import IRModule, structural_equal
from tirc.ir.diagnostics import CompileError

ROOT = Path(__file__).resolve().parents[2]
TREE_FILES = sorted(p.relative_to(ROOT).as_posix() for p in
                    (ROOT / f for f in subprocess.run(
                        ["git", "ls-files", "*.tir"], cwd=ROOT, capture_output=True, text=True,
                        check=False).stdout.split()) if p.exists())

COMMENTED = '''# A file a person wrote: comments, a blank-line structure, real imports.
from tvm.script import tir as T


@T.prim_func
def add_one(A: T.Buffer((8,), "float32"),   B: T.Buffer((8,),"float32")):
    # one block per element
    for i in T.serial(8):   # serial on purpose
        with T.block('B'):
            vi = T.axis.spatial(8, i)

            B[vi] = A[vi] + T.float32(1)
'''


def _parsed(text: str, path: str) -> IRModule | list[str]:
    """The module tirc parses from `text`, or its error messages (positions aside)."""
    try:
        return parse(text, path)
    except CompileError as err:
        return [d.message for d in err.diagnostics]


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("good.tir").write_text(format_source(COMMENTED))
    Path("messy.tir").write_text(COMMENTED)
    Path("broken.tir").write_text(SYNTAX_ERROR)


def test_keeps_comments_imports_blank_lines_and_spelling(invoke, files) -> None:
    r = invoke("fmt", "messy.tir")
    assert r.exit_code == 0, r.output
    assert r.stdout == (
        "# A file a person wrote: comments, a blank-line structure, real imports.\n"
        "from tvm.script import tir as T\n\n\n"
        "@T.prim_func\n"
        'def add_one(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):\n'
        "    # one block per element\n"
        "    for i in T.serial(8):  # serial on purpose\n"
        "        with T.block('B'):\n"
        "            vi = T.axis.spatial(8, i)\n\n"
        "            B[vi] = A[vi] + T.float32(1)\n")
    assert Path("messy.tir").read_text() == COMMENTED


def test_wraps_at_the_line_length(invoke, files) -> None:
    wide = invoke("fmt", "messy.tir").stdout
    narrow = invoke("fmt", "--line-length", "60", "messy.tir").stdout
    code = [line for line in narrow.splitlines() if not line.startswith("#")]
    assert max(map(len, wide.splitlines())) > 60
    assert max(map(len, code)) <= 60
    assert ('def add_one(\n    A: T.Buffer((8,), "float32"),\n'
            '    B: T.Buffer((8,), "float32"),\n):') in narrow
    assert structural_equal(parse(narrow, "n.tir"), parse(COMMENTED, "c.tir"))


def test_check_accepts_formatted_and_names_unformatted(invoke, files) -> None:
    r = invoke("fmt", "--check", "good.tir")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")
    r = invoke("fmt", "--check", "good.tir", "messy.tir")
    assert (r.exit_code, r.stderr) == (1, "tirc: messy.tir is not formatted\n")
    assert Path("messy.tir").read_text() == COMMENTED


def test_diff_shows_the_change(invoke, files) -> None:
    r = invoke("fmt", "--diff", "messy.tir")
    assert r.exit_code == 1
    assert "-    for i in T.serial(8):   # serial on purpose\n" \
           "+    for i in T.serial(8):  # serial on purpose\n" in r.stdout


def test_in_place(invoke, files) -> None:
    r = invoke("fmt", "-i", "messy.tir", "good.tir")
    assert (r.exit_code, r.stdout) == (0, "")
    assert Path("messy.tir").read_text() == Path("good.tir").read_text()


def test_stdin_to_stdout(invoke, files) -> None:
    r = invoke("fmt", "-", input=COMMENTED)
    assert (r.exit_code, r.stdout) == (0, format_source(COMMENTED))


def test_syntax_error_is_reported_and_other_files_still_formatted(invoke, files) -> None:
    r = invoke("fmt", "-i", "broken.tir", "messy.tir")
    assert r.exit_code == 1
    assert r.stderr.startswith(
        "broken.tir:3:22: error: syntax error: Expected `:`, found newline\n")
    assert "    for i in range(8)\n" in r.stderr
    assert Path("broken.tir").read_text() == SYNTAX_ERROR
    assert invoke("fmt", "--check", "messy.tir").exit_code == 0


def test_missing_file(invoke, files) -> None:
    r = invoke("fmt", "none.tir")
    assert (r.exit_code, r.stderr) == (1, "tirc: error: no such file: none.tir\n")


def test_in_place_and_check_conflict(invoke, files) -> None:
    r = invoke("fmt", "-i", "--check", "good.tir")
    assert r.exit_code == 2
    assert "-i cannot be combined with --check or --diff" in r.stderr


def test_every_file_in_the_tree_is_formatted(invoke) -> None:
    """The samples and every lit input pass `--check` (as the README's own example runs it)."""
    r = invoke("fmt", "--check", *(str(ROOT / f) for f in TREE_FILES))
    assert (r.exit_code, r.stderr) == (0, "")
    assert len(TREE_FILES) > 50


@pytest.mark.parametrize("name", TREE_FILES)
def test_formatting_is_idempotent_and_keeps_meaning(name: str) -> None:
    path = ROOT / name
    text = path.read_text()
    once = format_source(text, str(path))
    assert format_source(once, str(path)) == once
    squeezed = format_source(text, str(path), line_length=40)
    assert format_source(squeezed, str(path), line_length=40) == squeezed
    before, after = _parsed(text, str(path)), _parsed(squeezed, str(path))
    if isinstance(before, list):
        assert after == before
    else:
        assert isinstance(after, IRModule) and structural_equal(after, before)


def _respaced(text: str, rng: random.Random) -> str:
    """`text` with random extra spaces between two tokens of a line (never at a line's start,
    inside a string or a comment): the same program, laid out worse."""
    skip = (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER)
    inserts: dict[int, list[int]] = {}
    prev = None
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type not in skip and prev is not None and prev.type not in skip and \
                prev.end[0] == tok.start[0] and rng.random() < 0.3:
            inserts.setdefault(tok.start[0], []).append(tok.start[1])
        prev = tok
    lines = text.splitlines(keepends=True)
    for row, cols in inserts.items():
        line = lines[row - 1]
        for col in sorted(cols, reverse=True):
            line = line[:col] + " " * rng.randint(1, 3) + line[col:]
        lines[row - 1] = line
    return "".join(lines)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([f for f in TREE_FILES if f.startswith("samples/")]),
       st.integers(0, 2**32 - 1))
def test_respaced_samples_format_back(name: str, seed: int) -> None:
    text = (ROOT / name).read_text()
    messy = _respaced(text, random.Random(seed))
    assert messy != text or seed == 0
    assert format_source(messy, name) == text


@settings(max_examples=20, deadline=None)
@given(ir_modules())
def test_printed_random_modules_format_and_parse_back(mod: IRModule) -> None:
    printed = mod.script()
    text = format_source(printed)
    assert format_source(text) == text
    assert structural_equal(parse(text, "m.tir"), parse(printed, "p.tir"))


def test_messy_input_from_the_cli_inputs(invoke, tmp_path: Path) -> None:
    (tmp_path / "m.tir").write_text(ADD_ONE_MESSY)
    out = format_source(ADD_ONE_MESSY)
    assert out.startswith("from tvm.script import tir as T\n\n\n@T.prim_func\n")
    assert structural_equal(parse(out, "a.tir"), parse(ADD_ONE_MESSY, "b.tir"))


def test_schedule_file_keeps_only_its_schedules(invoke, files) -> None:
    Path("add_one.tir").write_text(ADD_ONE)
    Path("sched.tir").write_text(SCHEDULE)
    r = invoke("fmt", "--syntax=classic", "sched.tir")
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
