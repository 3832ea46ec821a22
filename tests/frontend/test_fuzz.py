"""Random mutations of real programs never crash the frontend: only CompileError, quickly."""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

import pytest
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples").glob("*.tir"))
TOKEN = re.compile(r"\s+|\w+|\"[^\"\n]*\"|.")
EXTRA_TOKENS = ["\n", "    ", "\t", "(", ")", "[", "]", "{", "}", ":", ",", "=", "lambda", "@",
                '"', "'", "\\", "\n    ", "T.block", "T.grid", "R.dataflow", "with", "for",
                "in", "if", "else", "not", "-", "**", "//", "%", "T.int64()", "1.5", "None"]
CHARS = list("()[]{}:,.=+-*/%<>!@#\"'\\ \t\n_aZ09") + ["é", "\r"]
PROGRAMS = 1000  # each with 1-3 edits: about 2000 mutations
SEED = 20240601


def _texts() -> list[str]:
    texts = [p.read_text() for p in SAMPLES]
    return sorted(texts, key=len)[: max(4, len(texts) * 2 // 3)]  # the smaller ones: faster


def mutate(rng: random.Random, text: str, vocab: list[str]) -> str:
    """One to three random edits: delete, insert or replace a character or a token."""
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(6)
        if kind == 0 and text:
            i = rng.randrange(len(text))
            text = text[:i] + text[i + 1:]
        elif kind == 1:
            i = rng.randrange(len(text) + 1)
            text = text[:i] + rng.choice(CHARS) + text[i:]
        else:
            toks = TOKEN.findall(text)
            if not toks:
                continue
            i = rng.randrange(len(toks))
            if kind == 2:
                del toks[i]
            elif kind == 3:
                toks.insert(i, rng.choice(vocab))
            elif kind == 4:
                toks[i] = rng.choice(vocab)
            else:
                toks.insert(i, toks[rng.randrange(len(toks))])
            text = "".join(toks)
    return text


def test_mutated_samples_give_diagnostics_not_crashes() -> None:
    texts = _texts()
    if not texts:
        pytest.skip("no samples")
    vocab = sorted({t for text in texts for t in TOKEN.findall(text) if t.strip()}) + EXTRA_TOKENS
    rng = random.Random(SEED)
    rejected = accepted = 0
    slowest = 0.0
    for _ in range(PROGRAMS):
        text = mutate(rng, rng.choice(texts), vocab)
        start = time.perf_counter()
        try:
            parse(text, "fuzz.tir")
            accepted += 1
        except CompileError as err:
            rejected += 1
            assert err.diagnostics, text
            for d in err.diagnostics:
                assert d.span is None or d.span.line >= 1 and d.span.col >= 1, (d, text)
        slowest = max(slowest, time.perf_counter() - start)
    # Most mutations break the program; some (e.g. in comments) don't.
    assert rejected > PROGRAMS // 2 and accepted > 0
    assert slowest < 5.0  # a hang guard, not a benchmark
