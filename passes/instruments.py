"""The instruments behind `--print-*`, `--time-passes`, `--verify-each`, `--stop-after` and
`--opt-bisect-limit`.

Each is an `Instrument` (tirc.passes.manager) that the pipeline runner calls around every
pass. Dumps go through a `DumpSink`: to a stream, each headed by `# IR after <pass>`, or into
a directory as numbered `.tir` files; either way every dump is itself a valid `.tir` file
(`--print-changed=diff` writes unified diffs instead, `.diff` files in a directory).
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TextIO

from tirc.ir.diagnostics import CompileError, Diagnostic
from tirc.ir.module import IRModule
from tirc.passes.manager import Instrument, PassRun
from tirc.passes.pass_base import Pass, PassContext
from tirc.passes.verify import verify_module


def note_lines(note: str, label: str = "note") -> list[str]:
    """A note as comment lines (`# note: ...`, its further lines indented), so that a dump
    with notes is still a valid .tir file."""
    first, *rest = note.splitlines() or [""]
    return [f"# {label}: {first}"] + [f"#   {line}".rstrip() for line in rest]


class DumpSink:
    """Where IR dumps go: a text stream (stderr by default) or numbered files in a folder.

    `layout` lays out each dump's text (the CLI passes the source formatter, so that dumps are
    what `tirc fmt` writes); by default the printer's text is written as it is.
    """

    def __init__(self, stream: TextIO | None = None, dump_dir: str | Path | None = None,
                 layout: Callable[[str], str] | None = None) -> None:
        self.stream = stream
        self.dump_dir = Path(dump_dir) if dump_dir is not None else None
        self.layout = layout
        self.count = 0
        self.written: list[Path] = []

    def dump(self, when: str, pass_name: str, mod: IRModule, notes: Iterable[str] = ()) -> None:
        """Write `mod` headed by `# IR <when> <pass_name>` and any notes as comments."""
        header = [f"# IR {when} {pass_name}"] + [line for n in notes for line in note_lines(n)]
        text = "\n".join(header) + "\n" + mod.script()
        if not text.endswith("\n"):
            text += "\n"
        if self.layout is not None:
            text = self.layout(text)
        self.count += 1
        if self.dump_dir is not None:
            self.dump_dir.mkdir(parents=True, exist_ok=True)
            path = self.dump_dir / f"{self.count:03d}-{when}-{pass_name}.tir"
            path.write_text(text)
            self.written.append(path)
        else:
            stream = self.stream or sys.stderr
            stream.write(text)
            stream.flush()

    def lay_out(self, text: str) -> str:
        """`text` as this sink writes a module (through `layout` when there is one)."""
        return self.layout(text) if self.layout is not None else text

    def diff(self, pass_name: str, before: str, after: str, notes: Iterable[str] = ()) -> None:
        """Write the unified diff from `before` to `after` (printed modules), headed by
        `# IR after <pass_name> (diff)` and any notes as comments."""
        header = [f"# IR after {pass_name} (diff)"] + [f"# note: {n}" for n in notes]
        lines = difflib.unified_diff(before.splitlines(keepends=True),
                                     after.splitlines(keepends=True),
                                     f"before {pass_name}", f"after {pass_name}")
        text = "\n".join(header) + "\n" + "".join(
            line if line.endswith("\n") else line + "\n" for line in lines)
        self.count += 1
        if self.dump_dir is not None:
            self.dump_dir.mkdir(parents=True, exist_ok=True)
            path = self.dump_dir / f"{self.count:03d}-after-{pass_name}.diff"
            path.write_text(text)
            self.written.append(path)
        else:
            stream = self.stream or sys.stderr
            stream.write(text)
            stream.flush()

    def note(self, pass_name: str, notes: Iterable[str]) -> None:
        """Notes of a pass that left the module unchanged (no dump to attach them to)."""
        stream = self.stream or sys.stderr
        for n in notes:
            stream.write("\n".join(note_lines(n, f"note ({pass_name})")) + "\n")
        stream.flush()


class PrintBefore(Instrument):
    """`--print-before NAME`: the module before each run of the named passes."""

    def __init__(self, names: Iterable[str], sink: DumpSink) -> None:
        self.names = set(names)
        self.sink = sink

    def before_pass(self, p: Pass, mod: IRModule, ctx: PassContext) -> None:
        if p.name in self.names:
            self.sink.dump("before", p.name, mod)


class PrintAfter(Instrument):
    """`--print-after NAME`: the module after each run of the named passes."""

    def __init__(self, names: Iterable[str], sink: DumpSink) -> None:
        self.names = set(names)
        self.sink = sink

    def after_pass(self, p: Pass, before: IRModule, after: IRModule, ctx: PassContext,
                   run: PassRun) -> None:
        if p.name in self.names:
            self.sink.dump("after", p.name, after, run.notes)


class PrintAfterAll(Instrument):
    """`--print-after-all`: the module after every pass."""

    def __init__(self, sink: DumpSink) -> None:
        self.sink = sink

    def after_pass(self, p: Pass, before: IRModule, after: IRModule, ctx: PassContext,
                   run: PassRun) -> None:
        self.sink.dump("after", p.name, after, run.notes)


class PrintChanged(Instrument):
    """`--print-changed`: the module after each pass whose printed text changed, with notes;
    `--print-changed=diff` (`diff=True`): a unified diff against the module before the pass
    instead (both laid out as the sink lays out a dump)."""

    def __init__(self, sink: DumpSink, diff: bool = False) -> None:
        self.sink = sink
        self.diff = diff
        self.text_before = ""
        self._laid_out: tuple[str, str] = ("", "")  # (printed, laid out) of the last module

    def before_pass(self, p: Pass, mod: IRModule, ctx: PassContext) -> None:
        self.text_before = mod.script()

    def after_pass(self, p: Pass, before: IRModule, after: IRModule, ctx: PassContext,
                   run: PassRun) -> None:
        text_after = after.script() if after is not before else self.text_before
        if text_after == self.text_before:
            if run.notes:
                self.sink.note(p.name, run.notes)
        elif self.diff:
            self.sink.diff(p.name, self._lay_out(self.text_before), self._lay_out(text_after),
                           run.notes)
        else:
            self.sink.dump("after", p.name, after, run.notes)

    def _lay_out(self, text: str) -> str:
        """The sink's layout of a printed module, remembered for the next pass's diff."""
        if self._laid_out[0] != text:
            self._laid_out = (text, self.sink.lay_out(text))
        return self._laid_out[1]


class StopAfter(Instrument):
    """`--stop-after NAME`: end the pipeline after the first run of pass NAME (or where it
    would have run, when bisection skipped it); `stopped` says whether it did."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.stopped = False

    def should_stop(self, p: Pass, ctx: PassContext) -> bool:
        self.stopped = self.stopped or p.name == self.name
        return self.stopped


class OptBisect(Instrument):
    """`--opt-bisect-limit N`, as LLVM's: only the first N optional passes (`Pass.optional`,
    the optimisations) run; every other pass always does. Each optional pass is numbered
    and reported on the stream as `BISECT: running pass (K) NAME` or
    `BISECT: NOT running pass (K) NAME`; a negative limit runs them all (and reports them)."""

    def __init__(self, limit: int, stream: TextIO | None = None) -> None:
        self.limit = limit
        self.stream = stream
        self.count = 0

    def should_run(self, p: Pass, ctx: PassContext) -> bool:
        if not p.optional:
            return True
        self.count += 1
        run = self.limit < 0 or self.count <= self.limit
        stream = self.stream or sys.stderr
        stream.write(f"BISECT: {'running' if run else 'NOT running'} pass ({self.count}) "
                     f"{p.name}\n")
        stream.flush()
        return run


class Progress(Instrument):
    """`-v`: one line per pass with its time, so a slow or failing step is easy to spot."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream

    def before_pass(self, p: Pass, mod: IRModule, ctx: PassContext) -> None:
        stream = self.stream or sys.stderr
        stream.write(f"tirc: running {p.name}\n")
        stream.flush()

    def after_pass(self, p: Pass, before: IRModule, after: IRModule, ctx: PassContext,
                   run: PassRun) -> None:
        stream = self.stream or sys.stderr
        changed = "changed" if after is not before else "unchanged"
        stream.write(f"tirc: {p.name} done in {run.seconds * 1e3:.2f} ms ({changed})\n")
        stream.flush()

    def phase_started(self, name: str) -> None:
        """A backend step (tirc.backends.phases) starts: LLVM, code generation, the link."""
        stream = self.stream or sys.stderr
        stream.write(f"tirc: running {name}\n")
        stream.flush()

    def phase_done(self, name: str, seconds: float) -> None:
        stream = self.stream or sys.stderr
        stream.write(f"tirc: {name} done in {seconds * 1e3:.2f} ms\n")
        stream.flush()


class TimePasses(Instrument):
    """`--time-passes`: a table of the time spent in each pass, printed at the end of the
    pipeline, or (`at_exit=False`) by whoever also times the backend's steps into it."""

    def __init__(self, stream: TextIO | None = None, at_exit: bool = True) -> None:
        self.stream = stream
        self.at_exit = at_exit
        self.times: dict[str, list[float]] = {}

    def after_pass(self, p: Pass, before: IRModule, after: IRModule, ctx: PassContext,
                   run: PassRun) -> None:
        self.times.setdefault(p.name, []).append(run.seconds)

    def phase_started(self, name: str) -> None:
        """Backend steps are timed as rows of their own (tirc.backends.phases)."""

    def phase_done(self, name: str, seconds: float) -> None:
        self.times.setdefault(name, []).append(seconds)

    def exit_pipeline(self, mod: IRModule, ctx: PassContext) -> None:
        if self.at_exit:
            self.print_table()

    def print_table(self) -> None:
        from rich.console import Console  # only --time-passes needs rich

        console = Console(file=self.stream or sys.stderr, highlight=False)
        console.print(self.table())

    def table(self) -> Any:
        """Pass, runs, total milliseconds and share of the total, slowest first."""
        from rich.table import Table

        total = sum(sum(t) for t in self.times.values()) or 1e-12
        table = Table(title="pass timing")
        table.add_column("pass or step")
        table.add_column("runs", justify="right")
        table.add_column("ms", justify="right")
        table.add_column("%", justify="right")
        rows = sorted(self.times.items(), key=lambda kv: -sum(kv[1]))
        for k, (name, times) in enumerate(rows):
            t = sum(times)
            table.add_row(name, str(len(times)), f"{t * 1e3:.2f}", f"{100 * t / total:.1f}",
                          end_section=k == len(rows) - 1)
        table.add_row("total", "", f"{total * 1e3:.2f}", "100.0", style="bold")
        return table


class VerifyEach(Instrument):
    """`--verify-each`: check well-formedness of the input and after every pass.

    A failure names the pass that broke the module, followed by the verifier's findings.
    """

    def enter_pipeline(self, mod: IRModule, ctx: PassContext) -> None:
        _raise_if_broken(mod, "the input module is not well-formed")

    def after_pass(self, p: Pass, before: IRModule, after: IRModule, ctx: PassContext,
                   run: PassRun) -> None:
        _raise_if_broken(after, f"the module is not well-formed after pass '{p.name}'")


def _raise_if_broken(mod: IRModule, headline: str) -> None:
    problems = verify_module(mod)
    if problems:
        raise CompileError([Diagnostic("error", headline), *problems])
