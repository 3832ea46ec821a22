"""`make demo`: every sample formatted, interpreted and compiled, each checked against NumPy.

For each sample of `samples/`: parse it and check that its printed form parses back to an equal
module and prints identically; run it in the reference interpreter on random inputs and compare
with the NumPy reference of `references.py`; compile it with the `tirc` command to a shared
object, call it through `tirc.runtime` at every compiled size, compare, and time one call.
Prints a table; the exit status is 1 when any check fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent


def load_references() -> ModuleType:
    """samples/references.py, loaded by path: the samples folder is not a package."""
    name = "tirc_sample_references"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / "references.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


REFS = load_references()


@dataclass
class Outcome:
    """One cell of the table: passed, failed, or not applicable; with a short text."""

    status: str  # "ok", "FAIL" or "n/a"
    text: str
    detail: str = ""

    def cell(self) -> str:
        colour = {"ok": "green", "FAIL": "bold red", "n/a": "yellow"}[self.status]
        return f"[{colour}]{self.text}[/{colour}]"


def _guard(what: str, fn: Callable[[], Outcome]) -> Outcome:
    """Run one check; an exception becomes a failed cell whose detail names it."""
    try:
        return fn()
    except Exception as exc:  # any failure of a check is reported in the table, not raised
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return Outcome("FAIL", "FAIL", f"{what}: {type(exc).__name__}: {first}")


def check_format(sample: Any) -> Outcome:
    """Parse, print, parse the printed text again: equal modules and identical text."""
    from tirc.frontend import parse, parse_file
    from tirc.ir import structural_equal
    from tirc.ir.printer import print_module

    module = parse_file(str(sample.path))
    text = print_module(module)
    again = parse(text, filename=f"{sample.name}.printed.tir")
    if print_module(again) != text:
        return Outcome("FAIL", "FAIL", "format: printing the reparsed text gives other text")
    if not structural_equal(again, module):
        return Outcome("FAIL", "FAIL", "format: parse(print(m)) is not structurally equal to m")
    return Outcome("ok", f"ok ({len(text.splitlines())} lines)")


def check_interpreter(sample: Any) -> Outcome:
    """Run the sample in the reference interpreter at its small sizes; compare with NumPy."""
    from tirc.frontend import parse_file
    from tirc.ir.interpreter import Interpreter

    interp = Interpreter(parse_file(str(sample.path)), externs=sample.externs)
    inputs = sample.inputs(sample.interp_sizes)
    expected = sample.expected(inputs)
    start = time.perf_counter()
    if sample.level == "loop":
        args = sample.arguments(inputs, expected)
        interp.call(sample.func, *args)
        got = sample.output_values(args)
    else:
        got = [np.asarray(interp.call(sample.func, *inputs))]
    seconds = time.perf_counter() - start
    problem = REFS.mismatch(got, expected)
    if problem:
        return Outcome("FAIL", "FAIL", f"interpreter at {_sizes(sample.interp_sizes)}: {problem}")
    return Outcome("ok", f"ok ({_sizes(sample.interp_sizes)}, {seconds:.2f} s)")


def tirc_command() -> list[str]:
    """The `tirc` command installed beside this Python (the virtual environment's)."""
    beside = Path(sys.executable).with_name("tirc")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("tirc")
    return [found] if found else [sys.executable, "-m", "tirc.cli.main"]


def backend_available() -> bool:
    """True once the CPU backend and the runtime loader are installed."""
    try:
        import tirc.runtime as runtime
    except ImportError:
        return False
    return (hasattr(runtime, "load") and importlib.util.find_spec("tirc.backends.llvm")
            is not None)


def extern_library(sample: Any, out_dir: Path) -> list[str]:
    """The `-l`/`-L` options for a sample whose `R.call_dps_packed` functions are in a C file
    beside it (`NAME_extern.c`), built here into `libNAME_extern.so` with `cc -shared -fPIC`;
    no options for other samples."""
    source = sample.path.with_name(f"{sample.name}_extern.c")
    if not source.exists():
        return []
    from tirc.backends.link import c_compiler

    lib = f"{sample.name}_extern"
    subprocess.run([*c_compiler(), "-shared", "-fPIC", "-O2", "-o",
                    str(out_dir / f"lib{lib}.so"), str(source)],
                   capture_output=True, text=True, timeout=120, check=True)
    return ["-l", lib, "-L", str(out_dir)]


def compile_sample(sample: Any, out_dir: Path, opt: str) -> tuple[Path | None, str]:
    """`tirc SAMPLE -o OUT.so -O<n>` (with `-l`/`-L` for a C library the sample calls); the
    library path, or None and the compiler's message."""
    out = out_dir / f"{sample.name}{opt}.so"
    try:
        link = extern_library(sample, out_dir)
    except subprocess.CalledProcessError as exc:
        return None, f"cannot build the C library: {exc.stderr.strip() or exc}"
    proc = subprocess.run([*tirc_command(), str(sample.path), "-o", str(out), opt, *link],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        return None, (proc.stderr.strip() or proc.stdout.strip() or f"exit {proc.returncode}")
    return out, ""


def time_call(fn: Callable[[], Any], budget: float = 0.2) -> float:
    """Seconds per call: the fastest of repeated timings within a small time budget."""
    best = float("inf")
    deadline = time.perf_counter() + budget
    while True:
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
        if time.perf_counter() > deadline:
            return best


def check_compiled(sample: Any, out_dir: Path, opt: str) -> tuple[Outcome, str]:
    """Compile, load, run at every compiled size and compare; the cell and a timing text."""
    import tirc.runtime as runtime

    lib_path, message = compile_sample(sample, out_dir, opt)
    if lib_path is None:
        first = message.splitlines()[0] if message else ""
        if sample.level == "graph":
            return Outcome("n/a", "not yet (graph)", f"compile (graph level): {first}"), ""
        return Outcome("FAIL", "FAIL", f"compile: {first}"), ""
    lib = runtime.load(lib_path)
    if sample.func not in lib:
        if sample.level == "graph":
            return Outcome("n/a", "not yet (graph)", f"{sample.func} not in the library"), ""
        return Outcome("FAIL", "FAIL", f"compile: {sample.func} not in {lib_path.name}"), ""
    fn = lib[sample.func]
    for sizes in sample.compiled_sizes:
        inputs = sample.inputs(sizes)
        expected = sample.expected(inputs)
        args = sample.arguments(inputs, expected) if sample.level == "loop" else list(inputs)
        result = fn(*args)
        got = sample.output_values(args) if sample.level == "loop" else [np.asarray(result)]
        problem = REFS.mismatch(got, expected)
        if problem:
            return Outcome("FAIL", "FAIL", f"compiled at {_sizes(sizes)}: {problem}"), ""
    seconds = time_call(lambda: fn(*args))
    count = len(sample.compiled_sizes)
    text = f"ok ({count} sizes)" if count > 1 else "ok"
    return Outcome("ok", text), f"{seconds * 1e6:.1f} µs ({_sizes(sizes)})"


def _sizes(sizes: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sizes.items()) or "static"


def main(argv: list[str] | None = None) -> int:
    """Check every sample (or those named) and print the table; 1 when any check fails."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="samples to run (default: all)")
    parser.add_argument("-O", dest="opt", default="3", choices="0123",
                        help="optimisation level of compiled runs (default 3)")
    ns = parser.parse_args(argv)
    unknown = [n for n in ns.names if n not in REFS.BY_NAME]
    if unknown:
        parser.error(f"unknown sample {', '.join(unknown)} (have: {', '.join(REFS.BY_NAME)})")
    samples = [REFS.BY_NAME[n] for n in ns.names] if ns.names else list(REFS.SAMPLES)
    console = Console()
    if not console.is_terminal:
        console = Console(width=110)  # a log or a pipe: wide enough for one line a sample
    opt = f"-O{ns.opt}"
    table = Table(title="tirc samples, checked against NumPy")
    for column in ("sample", "format", "interpreter", f"compiled {opt}", "time / call"):
        table.add_column(column)
    have_backend = backend_available()
    details: list[str] = []
    failed = False
    with tempfile.TemporaryDirectory(prefix="tirc-demo-") as tmp:
        for sample in samples:
            with console.status(f"checking {sample.file}"):
                fmt = _guard("format", lambda s=sample: check_format(s))
                interp = _guard("interpreter", lambda s=sample: check_interpreter(s))
                compiled, timing = Outcome("n/a", "not built"), ""
                if have_backend:
                    try:
                        compiled, timing = check_compiled(sample, Path(tmp), opt)
                    except Exception as exc:  # a crash is this sample's failure, not the demo's
                        compiled = Outcome("FAIL", "FAIL", f"run: {type(exc).__name__}: {exc}")
            cells = (fmt, interp, compiled)
            failed |= any(c.status == "FAIL" for c in cells)
            details += [f"{'error' if c.status == 'FAIL' else 'note'}: {sample.name}: {c.detail}"
                        for c in cells if c.detail]
            table.add_row(sample.name, *(c.cell() for c in cells), timing)
    console.print(table)
    for line in details:
        console.print(line, markup=False, highlight=False)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
