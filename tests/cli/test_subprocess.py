"""The installed `tirc` command as a real process: exit codes, dumps, depfiles, atomic output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cli_inputs import ADD_ONE, LIB, USES_LIB
from tirc.cli.source_format import format_source


def test_version(run_tirc) -> None:
    r = run_tirc("--version")
    assert r.returncode == 0
    assert r.stdout.startswith("tirc 0.")


def test_passes_and_print_after(run_tirc, tmp_path: Path) -> None:
    (tmp_path / "add_one.tir").write_text(ADD_ONE)
    r = run_tirc("add_one.tir", "--passes=verify,lower-blocks", "--print-after", "verify",
                 "--emit", "tir", "-o", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr == format_source("# IR after verify\n" + ADD_ONE)
    assert "T.block" not in r.stdout and "B[i] = A[i] + T.float32(1.0)" in r.stdout


def test_missing_file_exit_status(run_tirc, tmp_path: Path) -> None:
    r = run_tirc("nope.tir", cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", "tirc: error: no such file: nope.tir\n")


def test_usage_error_exit_status(run_tirc, tmp_path: Path) -> None:
    (tmp_path / "add_one.tir").write_text(ADD_ONE)
    r = run_tirc("add_one.tir", "--no-such-option", cwd=tmp_path)
    assert r.returncode == 2
    assert "No such option" in r.stderr and "--no-such-option" in r.stderr


def _dir_with_odd_name(tmp_path: Path) -> Path:
    lib_dir = tmp_path / "my libs$1"
    lib_dir.mkdir()
    (lib_dir / "lib.tir").write_text(LIB)
    (tmp_path / "main.tir").write_text(USES_LIB)
    return lib_dir


def test_depfile_names_imported_files_in_valid_make_syntax(run_tirc, tmp_path: Path) -> None:
    _dir_with_odd_name(tmp_path)
    r = run_tirc("main.tir", "-I", "my libs$1", "--passes=verify", "-o", "out.tir",
                 "-MD", "-MF", "deps.d", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    dep_text = (tmp_path / "deps.d").read_text()
    assert dep_text.startswith("out.tir: \\\n")
    assert "my\\ libs$$1/lib.tir" in dep_text
    # make reads it, and finds both files as prerequisites of out.tir.
    (tmp_path / "check.mk").write_text("include deps.d\nout.tir:\n\t@echo $^\n")
    make = subprocess.run(["make", "-s", "-B", "-f", "check.mk", "out.tir"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert make.returncode == 0, make.stderr
    prereqs = [Path(p).name for p in make.stdout.split()]
    assert prereqs[0] == "main.tir" and prereqs[-1] == "lib.tir"


def test_md_default_names_and_target(run_tirc, tmp_path: Path) -> None:
    _dir_with_odd_name(tmp_path)
    r = run_tirc("main.tir", "-I", "my libs$1", "--passes=verify", "-o", "build.tir", "-MD",
                 "-MT", "all objs", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    dep_text = (tmp_path / "build.d").read_text()
    assert dep_text.startswith("all\\ objs: \\\n")


def test_failed_compile_leaves_no_output_and_no_depfile(run_tirc, tmp_path: Path) -> None:
    (tmp_path / "bad.tir").write_text(ADD_ONE.replace("A[vi] + ", "A[vi, vi] + "))
    (tmp_path / "out.tir").write_text("old\n")
    r = run_tirc("bad.tir", "--passes=verify", "-o", "out.tir", "-MD", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.startswith("bad.tir:")
    assert "Traceback" not in r.stderr
    assert (tmp_path / "out.tir").read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.tir", "out.tir"]


def test_output_through_a_pipe_arrives_whole(run_tirc, tmp_path: Path) -> None:
    """The process leaves without the interpreter's teardown (cli.main.exit_now), after
    flushing: everything written to standard output reaches the reader."""
    (tmp_path / "add_one.tir").write_text(ADD_ONE)
    assert run_tirc("add_one.tir", "--emit", "ll", "-o", "f.ll", cwd=tmp_path).returncode == 0
    r = run_tirc("add_one.tir", "--emit", "ll", "-o", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == (tmp_path / "f.ll").read_text() and len(r.stdout) > 1000


def test_exit_now_keeps_sys_exit_codes() -> None:
    """exit_now(code) ends the process as sys.exit(code) would: None is 0, a number is itself,
    a message goes to standard error with status 1."""
    for code, status, err in (("None", 0, ""), ("3", 3, ""), ("'stop here'", 1, "stop here\n")):
        r = subprocess.run([sys.executable, "-c", "import sys; sys.stdout.write('kept'); "
                            f"from tirc.cli.main import exit_now; exit_now({code})"],
                           capture_output=True, text=True, timeout=60)
        assert (r.returncode, r.stdout, r.stderr) == (status, "kept", err)
