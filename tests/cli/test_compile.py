"""`tirc FILE ...` in-process through click's runner: options, dumps, errors, exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
import tirc.backends
from cli_inputs import ADD_ONE, REGION_OUT_OF_BOUNDS, SCHEDULE, SYNTAX_ERROR
from tirc.cli.source_format import format_source
from tirc.frontend import parse
from tirc.passes.pass_base import PassContext
from tirc.passes.registry import all_passes
from tirc.passes.verify import Verify


@pytest.fixture
def src(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """add_one.tir in a fresh working directory; its name as given on the command line."""
    monkeypatch.chdir(tmp_path)
    Path("add_one.tir").write_text(ADD_ONE)
    return "add_one.tir"


def test_emit_tir_to_stdout(invoke, src: str) -> None:
    r = invoke(src, "--passes=verify", "--emit", "tir", "-o", "-")
    assert r.exit_code == 0, r.output
    assert r.stdout == parse(ADD_ONE, src).script()
    assert r.stderr == ""


def test_default_output_is_tir_on_stdout(invoke, src: str) -> None:
    r = invoke(src, "--passes=verify")
    assert r.exit_code == 0, r.output
    assert r.stdout == ADD_ONE


def test_output_file_and_kind_from_suffix(invoke, src: str) -> None:
    r = invoke(src, "--passes=verify", "-o", "out.tir")
    assert r.exit_code == 0, r.output
    assert Path("out.tir").read_text() == ADD_ONE
    assert r.stdout == ""


def test_print_after_goes_to_stderr_headed_by_the_pass(invoke, src: str) -> None:
    r = invoke(src, "--passes=verify,lower-blocks", "--print-after", "verify", "-o", "out.tir")
    assert r.exit_code == 0, r.output
    assert r.stderr == format_source("# IR after verify\n" + ADD_ONE)


def test_print_before_and_after_all(invoke, src: str) -> None:
    r = invoke(src, "--passes=verify,lower-blocks", "--print-before", "lower-blocks",
               "--print-after-all", "-o", "out.tir")
    assert r.exit_code == 0, r.output
    headers = [line for line in r.stderr.splitlines() if line.startswith("# IR ")]
    assert headers == ["# IR after verify", "# IR before lower-blocks",
                       "# IR after lower-blocks"]
    lowered = Path("out.tir").read_text()
    assert r.stderr.endswith(format_source("# IR after lower-blocks\n" + lowered))
    assert "T.block" not in lowered


def test_every_dump_is_a_valid_tir_file(invoke, src: str) -> None:
    r = invoke(src, "--passes=verify,lower-blocks", "--print-after-all",
               "--dump-dir", "dumps", "-o", "out.tir")
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    names = sorted(p.name for p in Path("dumps").iterdir())
    assert names == ["001-after-verify.tir", "002-after-lower-blocks.tir"]
    for name in names:
        text = (Path("dumps") / name).read_text()
        header = text.split("\n", 1)[0]
        assert format_source(header + "\n" + parse(text, name).script()) == text
        assert invoke("fmt", "--check", f"dumps/{name}").exit_code == 0


def test_print_changed_skips_passes_that_change_nothing(invoke, src: str) -> None:
    r = invoke(src, "--passes=verify,lower-blocks,verify", "--print-changed", "-o", "out.tir")
    assert r.exit_code == 0, r.output
    assert [line for line in r.stderr.splitlines() if line.startswith("# IR ")] == [
        "# IR after lower-blocks"]


def test_time_passes_table(invoke, src: str) -> None:
    r = invoke(src, "--passes=verify,lower-blocks", "--time-passes", "-o", "out.tir")
    assert r.exit_code == 0, r.output
    assert "pass timing" in r.stderr
    assert "lower-blocks" in r.stderr and "total" in r.stderr


def test_verbose_progress(invoke, src: str) -> None:
    r = invoke(src, "--passes=verify", "-v", "-o", "out.tir")
    assert r.exit_code == 0, r.output
    lines = r.stderr.splitlines()
    assert lines[0] == "tirc: running verify"
    assert lines[-1] == "tirc: wrote out.tir (tir)"


def test_disable_pass(invoke, src: str) -> None:
    r = invoke(src, "--passes=verify,lower-blocks", "--disable-pass", "lower-blocks",
               "--print-after-all", "-o", "out.tir")
    assert r.exit_code == 0, r.output
    assert [line for line in r.stderr.splitlines() if line.startswith("# IR ")] == [
        "# IR after verify"]
    assert Path("out.tir").read_text() == ADD_ONE


def test_pass_config_reaches_the_passes(invoke, src: str, monkeypatch) -> None:
    seen: list[PassContext] = []
    monkeypatch.setattr(Verify, "run", lambda self, mod, ctx: seen.append(ctx) or mod)
    r = invoke(src, "--passes=verify", "--pass-config", "unroll.max-extent=8",
               "--pass-config", "schedule.seed=b=c", "-O3", "--target", "llvm -mcpu=znver5",
               "-o", "-")
    assert r.exit_code == 0, r.output
    ctx = seen[0]
    assert ctx.config == {"unroll.max-extent": "8", "schedule.seed": "b=c"}
    assert ctx.opt_level == 3
    assert (ctx.target.kind, ctx.target.mcpu) == ("llvm", "znver5")


def test_unknown_pass_config_key_is_an_error_with_a_suggestion(invoke, src: str) -> None:
    r = invoke(src, "--pass-config", "unrol.max-extent=8", "-o", "-")
    assert (r.exit_code, r.stdout) == (1, "")
    assert r.stderr == ("tirc: error: unknown pass config key 'unrol.max-extent'; did you mean "
                        "'unroll.max-extent'? ('tirc passes -v' lists each option with its "
                        "key)\n")


def test_json_target(invoke, src: str, monkeypatch) -> None:
    seen: list[PassContext] = []
    monkeypatch.setattr(Verify, "run", lambda self, mod, ctx: seen.append(ctx) or mod)
    r = invoke(src, "--passes=verify", "--target", '{"kind": "cuda", "arch": "sm_90"}')
    assert r.exit_code == 0, r.output
    assert (seen[0].target.kind, seen[0].target.arch) == ("cuda", "sm_90")


def test_default_pipeline_runs(invoke, src: str) -> None:
    r = invoke(src, "-O0", "--print-after-all", "-o", "out.tir")
    assert r.exit_code == 0, r.output
    assert r.stderr.startswith("# IR after verify\n")


def test_schedule_files_are_merged(invoke, src: str) -> None:
    Path("sched.tir").write_text(SCHEDULE)
    r = invoke(src, "--passes=verify", "--schedule", "sched.tir", "-o", "-")
    assert r.exit_code == 0, r.output
    assert 'sch.get_block("B")' in r.stdout


def test_schedule_file_with_a_function_is_an_error(invoke, src: str) -> None:
    Path("sched.tir").write_text(ADD_ONE)
    r = invoke(src, "--passes=verify", "--schedule", "sched.tir", "-o", "-")
    assert r.exit_code == 1
    assert "error: a --schedule file may hold only schedules, not functions" in r.stderr


# ---- errors ------------------------------------------------------------------------------


def test_missing_input(invoke, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    r = invoke("x.tir")
    assert (r.exit_code, r.stderr) == (1, "tirc: error: no such file: x.tir\n")


def test_unknown_pass_lists_close_matches(invoke, src: str) -> None:
    r = invoke(src, "--passes=verify,lower-blcks")
    assert r.exit_code == 1
    assert r.stderr == ("tirc: error: unknown pass 'lower-blcks'; did you mean 'lower-blocks'? "
                        "('tirc passes' lists them all)\n")


def test_unknown_print_after_pass(invoke, src: str) -> None:
    r = invoke(src, "--print-after", "verfy")
    assert r.exit_code == 1
    assert r.stderr.startswith("tirc: error: unknown pass 'verfy'; did you mean 'verify'?")


def test_bad_target(invoke, src: str) -> None:
    r = invoke(src, "--target", "rocm")
    assert r.exit_code == 1
    assert r.stderr == ("tirc: error: bad --target: unknown target kind 'rocm' "
                        "(expected one of: llvm, cuda)\n")


def test_bad_pass_config(invoke, src: str) -> None:
    r = invoke(src, "--passes=verify", "--pass-config", "novalue")
    assert (r.exit_code, r.stderr) == (
        1, "tirc: error: --pass-config wants KEY=VALUE, got 'novalue'\n")


def test_opt_level_out_of_range_is_a_usage_error(invoke, src: str) -> None:
    r = invoke(src, "-O4")
    assert r.exit_code == 2
    assert "-O" in r.stderr and "0<=x<=3" in r.stderr


def test_unknown_output_suffix(invoke, src: str) -> None:
    r = invoke(src, "-o", "out.xyz")
    assert r.exit_code == 1
    assert r.stderr.startswith("tirc: error: cannot tell what to emit from the name 'out.xyz'")
    assert not Path("out.xyz").exists()


def test_backend_kinds_without_a_backend(invoke, src: str, monkeypatch) -> None:
    monkeypatch.delattr(tirc.backends, "emit", raising=False)
    r = invoke(src, "--passes=verify", "-o", "out.so")
    assert (r.exit_code, r.stderr) == (1, "tirc: error: --emit so is not supported yet\n")
    assert not Path("out.so").exists()


def test_backend_emit_is_called(invoke, src: str, monkeypatch) -> None:
    calls = []

    def fake_emit(mod, kind, target, opt_level, out_path=None):
        calls.append((kind, str(target), opt_level, out_path))
        return b"\x7fELF fake"

    monkeypatch.setattr(tirc.backends, "emit", fake_emit, raising=False)
    r = invoke(src, "--passes=verify", "-o", "out.so", "-O1")
    assert r.exit_code == 0, r.output
    assert Path("out.so").read_bytes() == b"\x7fELF fake"
    assert Path("out.so").stat().st_mode & 0o100
    r = invoke(src, "--passes=verify", "--emit", "obj", "-o", "-", "--target", "llvm -mcpu=znver4")
    assert r.exit_code == 0, r.output
    assert r.stdout_bytes == b"\x7fELF fake"
    assert calls == [("so", "llvm", 1, "out.so"), ("obj", "llvm -mcpu=znver4", 2, None)]


def test_backend_without_out_path_parameter(invoke, src: str, monkeypatch) -> None:
    monkeypatch.setattr(tirc.backends, "emit", lambda mod, kind, target, opt: "; ll text\n",
                        raising=False)
    r = invoke(src, "--passes=verify", "-o", "out.ll")
    assert r.exit_code == 0, r.output
    assert Path("out.ll").read_text() == "; ll text\n"


def test_backend_not_implemented_kind(invoke, src: str, monkeypatch) -> None:
    def no_ptx(mod, kind, target, opt_level):
        raise NotImplementedError("no NVPTX backend")

    monkeypatch.setattr(tirc.backends, "emit", no_ptx, raising=False)
    r = invoke(src, "--passes=verify", "-o", "out.ptx")
    assert (r.exit_code, r.stderr) == (
        1, "tirc: error: --emit ptx is not supported yet (no NVPTX backend)\n")


def test_user_error_prints_the_diagnostic_with_a_caret(invoke, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("clear.tir").write_text(REGION_OUT_OF_BOUNDS)
    r = invoke("clear.tir", "--passes=verify", "-o", "out.tir")
    assert r.exit_code == 1
    assert r.stderr == (
        "clear.tir:7:22: error: region [0:130] of buffer 'A' is outside its extent 128 in "
        "dimension 0\n"
        "            T.writes(A[0:130])\n"
        "                     ^~~~~~~~\n")
    assert not Path("out.tir").exists()


def test_syntax_error_exit_status_and_location(invoke, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("broken.tir").write_text(SYNTAX_ERROR)
    r = invoke("broken.tir", "-o", "out.tir")
    assert r.exit_code == 1
    assert r.stderr.startswith("broken.tir:3:")
    assert "Traceback" not in r.stderr
    assert "    for i in range(8)\n" in r.stderr


def test_internal_error_hides_the_traceback(invoke, src: str, monkeypatch) -> None:
    def boom(self, mod, ctx):
        raise RuntimeError("boom")

    monkeypatch.setattr(Verify, "run", boom)
    r = invoke(src, "--passes=verify", "-o", "out.tir")
    assert r.exit_code == 2
    assert r.stderr == ("tirc: internal compiler error: RuntimeError: boom\n"
                        "note: rerun with --debug for a traceback\n")
    assert not Path("out.tir").exists()


def test_internal_error_with_debug_shows_the_traceback(invoke, src: str, monkeypatch) -> None:
    def boom(self, mod, ctx):
        raise RuntimeError("boom")

    monkeypatch.setattr(Verify, "run", boom)
    r = invoke(src, "--passes=verify", "--debug")
    assert r.exit_code == 2
    assert r.stderr.startswith("Traceback (most recent call last):")
    assert r.stderr.endswith("RuntimeError: boom\ntirc: internal compiler error: "
                             "RuntimeError: boom\n")


def test_error_keeps_the_old_output(invoke, src: str, monkeypatch) -> None:
    Path("out.tir").write_text("old\n")

    def boom(self, mod, ctx):
        raise RuntimeError("boom")

    monkeypatch.setattr(Verify, "run", boom)
    r = invoke(src, "--passes=verify", "-o", "out.tir")
    assert r.exit_code == 2
    assert Path("out.tir").read_text() == "old\n"
    assert sorted(p.name for p in Path(".").iterdir()) == ["add_one.tir", "out.tir"]


# ---- the command group -------------------------------------------------------------------


def test_help_lists_subcommands_and_compile_options(invoke) -> None:
    r = invoke("--help")
    assert r.exit_code == 0
    for word in ("fmt", "passes", "compile", "--print-after", "-MD", "--emit", "--target"):
        assert word in r.stdout


def test_explicit_compile_subcommand(invoke, src: str) -> None:
    r = invoke("compile", src, "--passes=verify")
    assert (r.exit_code, r.stdout) == (0, ADD_ONE)


def test_version(invoke) -> None:
    r = invoke("--version")
    assert r.exit_code == 0
    assert r.stdout.startswith("tirc ")


def test_passes_lists_every_pass(invoke) -> None:
    r = invoke("passes")
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(all_passes())
    for line, cls in zip(lines, all_passes().values()):
        assert cls.description in line


def test_depfile_lists_schedule_files_and_their_imports(invoke, src: str) -> None:
    Path("sched.tir").write_text(SCHEDULE)
    r = invoke(src, "--passes=verify", "--schedule", "sched.tir", "-o", "out.tir", "-MD")
    assert r.exit_code == 0, r.output
    assert Path("out.d").read_text() == (
        "out.tir: \\\n  add_one.tir \\\n  sched.tir\n\nsched.tir:\n")
