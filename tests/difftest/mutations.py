"""Programs people write, changed a little at random, through the whole pipeline.

A mutation is one or two edits that keep most programs parseable: a number, a dtype or a loop
kind replaced, a loop bound to a GPU thread, a line deleted or repeated, a buffer name swapped
for another in one access; three in ten seeds get one more edit from a stream of their own
(`mutate_ops`: an operator swapped for a kin, a number negated, a spatial iterator made a
reduction or back). Whatever comes out must either compile or get a CompileError (a
`file:line:col` diagnostic); any other exception is an internal error of the compiler. The
frontend's own fuzzing (tests/frontend/test_fuzz.py) stops at the parser; this goes on
through the passes and the backends, at a random -O level, with -fbounds-check and
-fmegakernel now and then, for the CPU or for CUDA.
"""

from __future__ import annotations

import random
import re
import traceback
from dataclasses import dataclass
from pathlib import Path

from tirc.ir.diagnostics import CompileError

ROOT = Path(__file__).resolve().parents[2]
NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")
DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "int32", "int64", "uint8",
          "bool")
LOOP_KINDS = ("range", "T.serial", "T.parallel", "T.vectorized", "T.unroll")
THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "blockIdx.x", "vthread.x")


def corpus(max_chars: int = 6000, folders: tuple[Path, ...] = ()) -> list[tuple[str, str]]:
    """(path, text) of the samples and the `.tir` files of `folders`, the short ones."""
    paths = sorted((ROOT / "samples").rglob("*.tir"))
    for folder in folders:
        paths += sorted(folder.rglob("*.tir"))
    texts = [(str(p), p.read_text()) for p in paths]
    return [(p, t) for p, t in texts if len(t) <= max_chars]


# Operators swapped by `mutate_ops`: each for one of the others in its row.
SWAPS = ((" // ", " % "), ("T.floordiv(", "T.truncdiv(", "T.floormod(", "T.truncmod("),
         (" + ", " - ", " * "), ("T.Select(", "T.if_then_else("), ("T.max(", "T.min("),
         (" < ", " <= ", " > ", " >= ", " == ", " != "))


def _replace(text: str, m: re.Match[str], new: str) -> str:
    return text[:m.start()] + new + text[m.end():]


def mutate(rng: random.Random, text: str) -> str:
    """One or two random edits of `text` (see the module docstring)."""
    for _ in range(rng.randint(1, 2)):
        kind = rng.randrange(7)
        lines = text.split("\n")
        if kind == 0:
            found = list(NUMBER.finditer(text))
            if found:
                m = rng.choice(found)
                v = int(m.group())
                text = _replace(text, m, str(rng.choice(
                    [0, 1, 2, 3, 7, v + 1, max(v - 1, 0), v * 2, v // 2, 1024])))
        elif kind == 1:
            found = [m for d in DTYPES for m in re.finditer(f'"{d}"', text)]
            if found:
                text = _replace(text, rng.choice(found), f'"{rng.choice(DTYPES)}"')
        elif kind == 2:
            found = [m for k in LOOP_KINDS for m in re.finditer(rf"in {re.escape(k)}\(", text)]
            if found:
                text = _replace(text, rng.choice(found), f"in {rng.choice(LOOP_KINDS)}(")
        elif kind == 3:
            found = list(re.finditer(r"in (range|T\.serial|T\.parallel)\(([^(),]*)\)", text))
            if found:
                m = rng.choice(found)
                text = _replace(text, m, f'in T.thread_binding({m.group(2)}, '
                                         f'thread="{rng.choice(THREAD_TAGS)}")')
        elif kind == 4:
            i = rng.randrange(len(lines))
            if lines[i].strip() and not lines[i].lstrip().startswith(("def ", "@", "class ")):
                del lines[i]
                text = "\n".join(lines)
        elif kind == 5:
            i = rng.randrange(len(lines))
            if lines[i].strip() and not lines[i].rstrip().endswith(":"):
                lines.insert(i, lines[i])
                text = "\n".join(lines)
        else:
            names = sorted(set(re.findall(r"\b([A-Z][A-Za-z_0-9]*)\[", text)))
            if len(names) >= 2:
                a, b = rng.sample(names, 2)
                text = _replace(text, rng.choice(list(re.finditer(rf"\b{a}\[", text))), f"{b}[")
    return text


def mutate_ops(rng: random.Random, text: str) -> str:
    """One edit from a stream of its own (the other edits of a seed stay as they were): an
    operator swapped for a kin (flooring and truncating division and remainder, +/-/*,
    Select and if_then_else, max and min, comparisons), a number negated, or an iterator
    kind of `T.axis.remap` flipped (spatial and reduction)."""
    kind = rng.randrange(3)
    if kind == 0:
        row = rng.choice(SWAPS)
        found = [m for op in row for m in re.finditer(re.escape(op), text)]
        if found:
            m = rng.choice(found)
            text = _replace(text, m, rng.choice([op for op in row if op != m.group()]))
    elif kind == 1:
        found = [m for m in NUMBER.finditer(text) if m.group() != "0"]
        if found:
            m = rng.choice(found)
            text = _replace(text, m, f"-{m.group()}")
    else:
        found = list(re.finditer(r'T\.axis\.remap\("([SR]+)"', text))
        if found:
            m = rng.choice(found)
            kinds = list(m.group(1))
            k = rng.randrange(len(kinds))
            kinds[k] = "R" if kinds[k] == "S" else "S"
            text = text[:m.start(1)] + "".join(kinds) + text[m.end(1):]
    return text


@dataclass(frozen=True)
class Outcome:
    """What one mutated program did: "parse error", "compile error", "ok", or "internal
    error" with the exception and where it was raised."""

    seed: int
    source: str
    text: str
    options: str
    result: str
    detail: str = ""
    level: int = 0
    bounds_check: bool = False
    megakernel: str | None = None


def run_one(seed: int, programs: list[tuple[str, str]], target: str | None = None) -> Outcome:
    """Mutate a program drawn by `seed` and build it (an LLVM module for the CPU, PTX for a
    cuda `target`) with options drawn by the same seed."""
    import tirc.driver as driver
    from tirc.frontend import parse

    rng = random.Random(seed)
    source, original = rng.choice(programs)
    text = mutate(rng, original)
    ops = random.Random(seed * 7919 + 13)
    if ops.random() < 0.3:
        text = mutate_ops(ops, text)
    level = rng.choice([0, 1, 2, 3])
    config = {"bounds-check": "1"} if rng.random() < 0.3 else {}
    megakernel = rng.choice([None, "static", "dynamic"]) if "@R.function" in text else None
    if target is not None and megakernel is not None:
        config = {}  # -fbounds-check with a GPU megakernel is refused by the command
    options = f"-O{level}" + (" -fbounds-check" if config else "") + \
        (f" -fmegakernel={megakernel}" if megakernel else "")
    try:
        mod = parse(text, "mutated.tir")
    except CompileError:
        return Outcome(seed, source, text, options, "parse error")
    try:
        driver.emit(mod, "ll" if target is None else "ptx", target, level, config=config,
                    megakernel=megakernel)
    except CompileError:
        return Outcome(seed, source, text, options, "compile error")
    except Exception as exc:  # noqa: BLE001 - any other exception is the finding
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        return Outcome(seed, source, text, options, "internal error",
                       f"{type(exc).__name__}: {exc} ({frame.filename}:{frame.lineno})")
    return Outcome(seed, source, text, options, "ok", "", level, bool(config), megakernel)
