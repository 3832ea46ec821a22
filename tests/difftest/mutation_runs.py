"""Mutated programs that compile, run: the reference interpreter's results against the
library built with the same options (scripts/pipeline_fuzz.py --run).

A mutated program has no generator that knows its values, so the run takes what it can: an
entry function (the graph function, else an exported loop function) whose parameters are
tensors of constant or symbolic sizes (given small values), not too large in all, or a loop
function's integer and float scalars, gets random inputs (small multiples of 1/8, small
integers; a scalar named like a size takes its value); where the interpreter fails (an
index out of bounds, a division by zero), takes too long, returns a NaN (its fill of float
storage nothing wrote: a read of it is undefined) or other results when integer storage
starts with another value, the program is skipped, except that an access out of bounds
must make a build with -fbounds-check fail too. Otherwise
every result (for a loop function, every buffer after the call) must agree: integers and
bools exactly, floats as rounded values of magnitude 100 (rtol 1e-5, atol 1e-3: a program
may call transcendental functions or sum in another order).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tirc.ir import IntImm, IRModule, PrimFunc, Var

from difftest.values import Info, random_input

MAX_ELEMENTS = 1 << 14   # all parameters together
SIZES = (3, 4, 1, 5)  # the values of symbolic sizes, in order of first use
INTERPRETER_SECONDS = 10


@dataclass(frozen=True)
class RunOutcome:
    """"agree", "skipped" (with why), "wrong" or "run-error" (with what differed), or
    "race": the interpreter found a data race that compiled without a diagnostic (the static
    check sees only some; a program to look at, not a failure by itself)."""

    result: str
    detail: str = ""


class _Slow(Exception):
    """The interpreter ran past INTERPRETER_SECONDS."""


@contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    """Raise _Slow in the main thread after `seconds`."""
    def expire(signum: int, frame: Any) -> None:
        raise _Slow

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _numpy_dtype(dt: str) -> bool:
    """Whether numpy has the dtype (not a vector, a handle, bfloat16 or float8)."""
    try:
        np.dtype(dt)
    except TypeError:
        return False
    return dt not in ("", "void", "handle") and "x" not in dt


def _shape(shape: Any, sizes: dict[str, int]) -> tuple[int, ...] | None:
    """A shape of constants and symbolic sizes (given values from SIZES, the same for one
    name everywhere), or None for any other expression."""
    if shape is None:
        return None
    out = []
    for d in shape:
        if isinstance(d, IntImm):
            out.append(int(d.value))
        elif isinstance(d, Var):
            out.append(sizes.setdefault(d.name, SIZES[len(sizes) % len(SIZES)]))
        else:
            return None
    return tuple(out)


Spec = tuple[tuple[int, ...] | None, str]  # a tensor's shape and dtype; a scalar's dtype


def entry(mod: IRModule) -> tuple[str, str, list[Spec], dict[str, int]] | None:
    """(name in the module, exported name, what each parameter takes, the symbolic sizes'
    values) of the function to run, or None when none fits: a loop function's scalar
    parameters may be integers (a size's value where one is named so) or floats."""
    from tirc.ir.graph import Function, TensorSInfo

    graphs = sorted(((n, f) for n, f in mod.functions.items() if isinstance(f, Function)),
                    key=lambda nf: nf[0] != "main")  # main first: the one surely exported
    loops = [(n, f) for n, f in mod.functions.items() if isinstance(f, PrimFunc) and
             not getattr(f, "private", False)]
    for name, func in graphs + ([] if graphs else loops):
        specs: list[Spec] = []
        sizes: dict[str, int] = {}
        for p in func.params:
            if isinstance(func, PrimFunc):
                buf = func.buffer_map.get(p)
                if buf is None and (p.dtype.is_int or p.dtype.is_float) and p.dtype.lanes == 1:
                    specs.append((None, str(p.dtype)))
                    continue
                shape = _shape(buf.shape, sizes) if buf is not None else None
                dt = str(buf.dtype) if buf is not None else ""
            else:
                sinfo = p.struct_info
                shape = _shape(getattr(sinfo, "shape", None), sizes) \
                    if isinstance(sinfo, TensorSInfo) else None
                dt = str(getattr(sinfo, "dtype", ""))
            if shape is None or not _numpy_dtype(dt):
                break
            specs.append((shape, dt))
        else:
            tensors = [s for s, _ in specs if s is not None]
            if tensors and sum(int(np.prod(s)) for s in tensors) <= MAX_ELEMENTS:
                return name, str(func.attrs.get("global_symbol", name)), specs, sizes
    return None


def _arg(spec: Spec, name: str, sizes: dict[str, int], rng: np.random.Generator) -> Any:
    """An argument for a parameter: a random tensor, or a scalar (a size's value)."""
    shape, dt = spec
    if shape is not None:
        return _input(shape, dt, rng)
    if dt.startswith(("int", "uint")):
        return sizes.get(name, int(rng.integers(1, 5)))
    return float(rng.integers(-8, 9)) / 4


def _input(shape: tuple[int, ...], dt: str, rng: np.random.Generator) -> np.ndarray:
    """Random data of any dtype: the generators' inputs, small integers of the other
    integer dtypes (not negative when unsigned)."""
    kind = np.dtype(dt).kind
    if kind in "iu" and dt not in ("int32", "int8", "uint8"):
        return rng.integers(0 if kind == "u" else -8, 9, size=shape).astype(dt)
    if kind == "f" and dt not in ("float32", "float16"):
        return (rng.integers(-32, 33, size=shape) / 8).astype(dt)
    return random_input(shape, dt, rng)


def _must_fail(mod: IRModule, seed: int, symbol: str, args: list[Any], build: Any,
               graph: bool, error: str, workdir: Path) -> RunOutcome:
    """An access the interpreter found out of bounds: the -fbounds-check build must fail
    too (the check is before every access it cannot prove in bounds), not return."""
    from difftest import builds as B

    try:
        lib = B.compile_module(mod, build, workdir / f"m{seed}")
    except Exception as exc:  # noqa: BLE001 (emit succeeded; a failing .so build is a bug)
        return RunOutcome("run-error", f"the library did not build: {type(exc).__name__}: "
                                       f"{str(exc)[:200]}")
    result = (B.run_graph if graph else B.run_loop)(lib, [(symbol, _copies(args), [])])[0]
    if isinstance(result, str) and "has no function" in result:
        return RunOutcome("skipped", "the entry is not exported (a private function)")
    if isinstance(result, str) and "out-of-bounds" in result:
        return RunOutcome("agree", "out of bounds")
    what = "returned results" if not isinstance(result, str) else f"failed otherwise: {result}"
    return RunOutcome("wrong", f"the interpreter: {error[:200]}; the -fbounds-check build "
                               f"{what[:200]}")


def _reads_unwritten_ints(interpret: Any, want: list[Any]) -> bool:
    """Whether the results change when new integer storage starts with another value than
    the interpreter's 0 (a read of elements nothing wrote: undefined, unlike a float's NaN
    not visible in the results)."""
    from tirc.ir.interpreter import stmt

    stmt.UNWRITTEN_INT = 0x5A
    try:
        again = interpret()
    finally:
        stmt.UNWRITTEN_INT = 0
    return any(not (isinstance(a, np.ndarray) and isinstance(w, np.ndarray) and
                    np.array_equal(a, w, equal_nan=a.dtype.kind == "f"))
               for a, w in zip(again, want))


def _copies(args: list[Any]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def run_mutated(seed: int, text: str, level: int, bounds_check: bool,
                megakernel: str | None, workdir: Path) -> RunOutcome:
    """Interpret and build `text` (which compiled) and compare the results."""
    from tirc.frontend import parse
    from tirc.ir.graph import Function
    from tirc.ir.interpreter import Interpreter

    from difftest import builds as B
    from difftest.harness import Build, compare

    if "device_mesh" in text:
        return RunOutcome("skipped", "a distributed program (its library needs a mesh)")
    mod = parse(text, "mutated.tir")
    found = entry(mod)
    if found is None:
        return RunOutcome("skipped", f"no entry function taking tensors ({MAX_ELEMENTS} "
                                     "elements at most)")
    name, symbol, specs, sizes = found
    rng = np.random.default_rng(seed)
    func = mod[name]
    args = [_arg(spec, p.name, sizes, rng) for spec, p in zip(specs, func.params)]
    tensors = [k for k, (shape, _) in enumerate(specs) if shape is not None]
    graph = isinstance(func, Function)
    def interpret() -> list[Any]:
        if graph:
            got = Interpreter(mod).call(name, *_copies(args))
            return list(got) if isinstance(got, tuple) else [got]
        out = _copies(args)
        Interpreter(mod).call(name, *out)
        return [out[k] for k in tensors]

    try:
        with _deadline(INTERPRETER_SECONDS):
            want = interpret()
            if _reads_unwritten_ints(interpret, want):
                return RunOutcome("skipped", "a read of integer storage nothing wrote")
    except _Slow:
        return RunOutcome("skipped", "the interpreter is too slow")
    except Exception as exc:  # noqa: BLE001 (the interpreter refused these inputs)
        if "data race in" in str(exc):  # one the static check did not see: to look at
            return RunOutcome("race", str(exc)[:300])
        if not (bounds_check and "out-of-bounds" in str(exc)):
            return RunOutcome("skipped", f"the interpreter failed: {type(exc).__name__}")
        return _must_fail(mod, seed, symbol, args, Build(level, megakernel if graph else None,
                                                         bounds_check=True),
                          graph, str(exc), workdir)
    if any(not isinstance(w, np.ndarray) for w in want):
        return RunOutcome("skipped", "a result that is not a tensor")
    if any(w.dtype.kind == "f" and np.isnan(w).any() for w in want):
        # the interpreter's fill of storage nothing wrote (or a NaN of the inputs' making)
        return RunOutcome("skipped", "NaN in the interpreter's results")
    build = Build(level, megakernel if graph else None, bounds_check=bounds_check)
    try:
        lib = B.compile_module(mod, build, workdir / f"m{seed}")
    except Exception as exc:  # noqa: BLE001 (emit succeeded; a failing .so build is a bug)
        return RunOutcome("run-error", f"the library did not build: {type(exc).__name__}: "
                                       f"{str(exc)[:200]}")
    run = B.run_graph if graph else B.run_loop
    result = run(lib, [(symbol, _copies(args), want)])[0]
    if isinstance(result, str) and "has no function" in result:
        return RunOutcome("skipped", "the entry is not exported (a private function)")
    if isinstance(result, str):
        return RunOutcome("run-error", result)
    if not graph:
        result = [result[k] for k in tensors]
    labels = [f"out{k}" for k in range(len(want))]
    infos = {label: Info(str(w.dtype), 100.0, 0, True) if w.dtype.kind == "f"
             else Info("int32", 0.0) for label, w in zip(labels, want)}
    diff = compare(name, want, result, infos, labels)
    return RunOutcome("agree") if diff is None else RunOutcome("wrong", diff)
