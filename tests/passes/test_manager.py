"""The pipeline runner and its instruments: order, disabling, dumps, diffs, timing, verify-each,
bisection and stopping."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import pytest
from tirc.ir import (
    BufferStore,
    CompileError,
    FloatImm,
    For,
    ForKind,
    IntImm,
    IRModule,
    PrimFunc,
    Var,
    make_buffer,
)
from tirc.ir.dtype import dtype
from tirc.ir.printer import print_module
from tirc.passes import instruments as inst
from tirc.passes.manager import Instrument, PassRun, Sequential, run_pipeline
from tirc.passes.pass_base import Pass, PassContext, PrimFuncPass
from tirc.passes.registry import all_passes

HANDLE = dtype("handle")


@pytest.fixture(autouse=True)
def _registry_loaded() -> None:
    """Load the registry first, so the throwaway passes below never join it."""
    all_passes()


def sample_module() -> IRModule:
    a = make_buffer("A", (8,), "float32")
    h, i = Var("A", HANDLE), Var("i")
    body = For(i, IntImm(0), IntImm(8), ForKind.SERIAL, BufferStore(a, FloatImm(0.0), (i,)))
    return IRModule({"f": PrimFunc("f", (h,), {h: a}, body)})


def make_passes() -> dict[str, Pass]:
    """Throwaway passes: one renames the function, one only notes, one breaks the IR."""

    @dataclass(frozen=True)
    class Rename(PrimFuncPass):
        name = "t-rename"
        description = "rename every function to g"

        def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
            return func.replace(name="g")  # type: ignore[return-value]

    @dataclass(frozen=True)
    class Noter(Pass):
        name = "t-noter"
        description = "leave the module alone and say so"

        def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
            ctx.note("nothing to do here")
            return mod

    @dataclass(frozen=True)
    class Breaker(PrimFuncPass):
        name = "t-breaker"
        description = "store through an undefined variable"

        def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
            buf = func.buffers[0]
            return func.replace(  # type: ignore[return-value]
                body=BufferStore(buf, FloatImm(1.0), (Var("ghost"),)))

    return {"rename": Rename(), "noter": Noter(), "breaker": Breaker()}


class Recorder(Instrument):
    """Remembers every hook call."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def enter_pipeline(self, mod: IRModule, ctx: PassContext) -> None:
        self.calls.append("enter")

    def before_pass(self, p: Pass, mod: IRModule, ctx: PassContext) -> None:
        self.calls.append(f"before {p.name}")

    def after_pass(self, p: Pass, before: IRModule, after: IRModule, ctx: PassContext,
                   run: PassRun) -> None:
        self.calls.append(f"after {p.name} {list(run.notes)}")

    def exit_pipeline(self, mod: IRModule, ctx: PassContext) -> None:
        self.calls.append("exit")


def test_passes_run_in_order_with_hooks_and_notes() -> None:
    p = make_passes()
    rec = Recorder()
    out = run_pipeline(sample_module(), [p["noter"], p["rename"]],
                       PassContext(instruments=[rec]))
    assert list(out.functions.values())[0].name == "g"
    assert rec.calls == ["enter", "before t-noter", "after t-noter ['nothing to do here']",
                         "before t-rename", "after t-rename []", "exit"]


def test_disabled_pass_is_skipped() -> None:
    p = make_passes()
    mod = sample_module()
    out = run_pipeline(mod, [p["rename"]], PassContext(disabled={"t-rename"}))
    assert out is mod


def test_sequential_runs_each_pass_through_the_instruments() -> None:
    p = make_passes()
    rec = Recorder()
    run_pipeline(sample_module(), [Sequential((p["noter"], p["rename"]))],
                 PassContext(instruments=[rec]))
    assert [c for c in rec.calls if c.startswith("before")] == ["before t-noter",
                                                                 "before t-rename"]


def test_exit_hook_runs_when_a_pass_fails() -> None:
    p = make_passes()
    rec = Recorder()
    ctx = PassContext(instruments=[rec, inst.VerifyEach()])
    with pytest.raises(CompileError):
        run_pipeline(sample_module(), [p["breaker"]], ctx)
    assert rec.calls[-1] == "exit"


def test_print_after_dumps_valid_text_with_a_header() -> None:
    p = make_passes()
    stream = io.StringIO()
    sink = inst.DumpSink(stream)
    ctx = PassContext(instruments=[inst.PrintAfter(["t-rename"], sink),
                                   inst.PrintBefore(["t-rename"], sink)])
    out = run_pipeline(sample_module(), [p["noter"], p["rename"]], ctx)
    before = print_module(sample_module())
    assert stream.getvalue() == (f"# IR before t-rename\n{before}"
                                 f"# IR after t-rename\n{print_module(out)}")


def test_print_after_all_into_a_dump_dir(tmp_path: Path) -> None:
    p = make_passes()
    sink = inst.DumpSink(dump_dir=tmp_path / "dumps")
    ctx = PassContext(instruments=[inst.PrintAfterAll(sink)])
    out = run_pipeline(sample_module(), [p["noter"], p["rename"]], ctx)
    files = sorted(x.name for x in (tmp_path / "dumps").iterdir())
    assert files == ["001-after-t-noter.tir", "002-after-t-rename.tir"]
    text = (tmp_path / "dumps" / "001-after-t-noter.tir").read_text()
    assert text == "# IR after t-noter\n# note: nothing to do here\n" + print_module(
        sample_module())
    assert (tmp_path / "dumps" / "002-after-t-rename.tir").read_text() == \
        "# IR after t-rename\n" + print_module(out)


def test_print_changed_prints_only_changes_and_notes() -> None:
    p = make_passes()
    stream = io.StringIO()
    ctx = PassContext(instruments=[inst.PrintChanged(inst.DumpSink(stream))])
    out = run_pipeline(sample_module(), [p["noter"], p["rename"]], ctx)
    assert stream.getvalue() == ("# note (t-noter): nothing to do here\n"
                                 f"# IR after t-rename\n{print_module(out)}")


def test_time_passes_prints_a_table() -> None:
    p = make_passes()
    stream = io.StringIO()
    ctx = PassContext(instruments=[inst.TimePasses(stream)])
    run_pipeline(sample_module(), [p["noter"], p["rename"], p["noter"]], ctx)
    text = stream.getvalue()
    assert "pass timing" in text
    rows = {line.split("│")[1].strip(): line for line in text.splitlines() if "│" in line}
    assert set(rows) == {"t-noter", "t-rename", "total"}
    assert rows["t-noter"].split("│")[2].strip() == "2"


def test_verify_each_names_the_pass_that_broke_the_module() -> None:
    p = make_passes()
    ctx = PassContext(instruments=[inst.VerifyEach()])
    with pytest.raises(CompileError) as err:
        run_pipeline(sample_module(), [p["rename"], p["breaker"], p["noter"]], ctx)
    assert [d.message for d in err.value.diagnostics] == [
        "the module is not well-formed after pass 't-breaker'",
        "variable 'ghost' is used outside the scope that defines it",
    ]


def test_verify_each_checks_the_input_first() -> None:
    p = make_passes()
    broken = run_pipeline(sample_module(), [p["breaker"]])
    with pytest.raises(CompileError) as err:
        run_pipeline(broken, [p["rename"]], PassContext(instruments=[inst.VerifyEach()]))
    assert err.value.diagnostics[0].message == "the input module is not well-formed"


def test_progress_lines() -> None:
    p = make_passes()
    stream = io.StringIO()
    run_pipeline(sample_module(), [p["noter"], p["rename"]],
                 PassContext(instruments=[inst.Progress(stream)]))
    lines = stream.getvalue().splitlines()
    assert lines[0] == "tirc: running t-noter"
    assert lines[1].startswith("tirc: t-noter done in ") and lines[1].endswith("(unchanged)")
    assert lines[3].endswith("(changed)")


def test_a_pass_must_return_a_module() -> None:
    @dataclass(frozen=True)
    class Bad(Pass):
        name = "t-bad"
        description = "returns nothing"

        def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
            return None  # type: ignore[return-value]

    with pytest.raises(TypeError, match="pass 't-bad' returned NoneType"):
        run_pipeline(sample_module(), [Bad()])


def optional_rename() -> Pass:
    """A throwaway optional pass (an optimisation, as far as bisection knows)."""

    @dataclass(frozen=True)
    class OptionalRename(PrimFuncPass):
        name = "t-opt-rename"
        description = "rename every function to h"
        optional = True

        def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
            return func.replace(name="h")  # type: ignore[return-value]

    return OptionalRename()


def test_opt_bisect_counts_only_optional_passes() -> None:
    p = make_passes()
    opt = optional_rename()
    stream = io.StringIO()
    rec = Recorder()
    ctx = PassContext(instruments=[inst.OptBisect(1, stream), rec])
    out = run_pipeline(sample_module(), [p["noter"], opt, p["rename"], opt, opt], ctx)
    assert list(out.functions.values())[0].name == "g"  # the last rename ran, it is required
    assert stream.getvalue() == ("BISECT: running pass (1) t-opt-rename\n"
                                 "BISECT: NOT running pass (2) t-opt-rename\n"
                                 "BISECT: NOT running pass (3) t-opt-rename\n")
    assert [c for c in rec.calls if c.startswith("before")] == [
        "before t-noter", "before t-opt-rename", "before t-rename"]  # skipped: no hooks


def test_opt_bisect_without_a_limit_runs_everything() -> None:
    stream = io.StringIO()
    out = run_pipeline(sample_module(), [optional_rename()],
                       PassContext(instruments=[inst.OptBisect(-1, stream)]))
    assert list(out.functions.values())[0].name == "h"
    assert stream.getvalue() == "BISECT: running pass (1) t-opt-rename\n"


def test_stop_after_ends_the_pipeline_even_inside_a_sequential() -> None:
    p = make_passes()
    rec = Recorder()
    stop = inst.StopAfter("t-noter")
    ctx = PassContext(instruments=[rec, stop])
    out = run_pipeline(sample_module(), [Sequential((p["noter"], p["rename"])), p["rename"]],
                       ctx)
    assert list(out.functions.values())[0].name == "f" and stop.stopped
    assert rec.calls == ["enter", "before t-noter", "after t-noter ['nothing to do here']",
                         "exit"]


def test_stop_after_a_skipped_pass_stops_where_it_would_have_run() -> None:
    p = make_passes()
    ctx = PassContext(instruments=[inst.OptBisect(0, io.StringIO()),
                                   inst.StopAfter("t-opt-rename")])
    out = run_pipeline(sample_module(), [optional_rename(), p["rename"]], ctx)
    assert list(out.functions.values())[0].name == "f"


def test_print_changed_diff_shows_only_what_changed() -> None:
    p = make_passes()
    stream = io.StringIO()
    ctx = PassContext(instruments=[inst.PrintChanged(inst.DumpSink(stream), diff=True)])
    run_pipeline(sample_module(), [p["noter"], p["rename"]], ctx)
    text = stream.getvalue()
    assert text.startswith("# note (t-noter): nothing to do here\n"
                           "# IR after t-rename (diff)\n"
                           "--- before t-rename\n"
                           "+++ after t-rename\n"
                           "@@ ")
    changed = [line for line in text.splitlines()[5:] if line[:1] in "+-"]
    assert changed == ["-    def f(A: T.Buffer((8,), \"float32\")):",
                       "+    def g(A: T.Buffer((8,), \"float32\")):"]
