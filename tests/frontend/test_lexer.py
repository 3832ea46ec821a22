"""The parser's root-first lexer gives exactly the tokens and errors of Lark's contextual lexer."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from lark import Lark
from lark.exceptions import UnexpectedInput
from tirc.frontend.parser import GRAMMAR, RootFirstLexer, TirIndenter

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*ROOT.glob("samples/**/*.tir"), *ROOT.glob("tests/lit/**/*.tir")])


@cache
def parser(root_first: bool) -> Lark:
    """The tirc grammar with the root-first lexer, or with Lark's own contextual lexer."""
    plugins = {"ContextualLexer": RootFirstLexer} if root_first else {}
    return Lark(GRAMMAR.read_text(), parser="lalr", lexer="contextual", postlex=TirIndenter(),
                propagate_positions=True, maybe_placeholders=True,
                start=["start", "expr_input"], _plugins=plugins)


def outcome(text: str, root_first: bool) -> Any:
    """Every token (type, text, place) of the parse, or where and why it failed."""
    try:
        tree = parser(root_first).parse(text, start="start")
    except UnexpectedInput as err:
        expected = getattr(err, "expected", None) or getattr(err, "allowed", None)
        token = getattr(err, "token", None)
        return (type(err).__name__, err.line, err.column, sorted(expected or ()),
                token and (token.type, str(token)))
    except Exception as err:  # the indenter's errors
        return (type(err).__name__, str(err))
    return [(t.type, str(t), t.line, t.column, t.end_line, t.end_column)
            for t in tree.scan_values(lambda v: hasattr(v, "type"))]


def source(index: int) -> str:
    text = SOURCES[index % len(SOURCES)].read_text()
    return text if text.endswith("\n") else text + "\n"


def test_the_parser_uses_the_root_first_lexer() -> None:
    from tirc.frontend.parser import get_parser

    assert isinstance(get_parser().parser.lexer.lexer, RootFirstLexer)


def test_every_sample_and_lit_file_lexes_alike() -> None:
    assert len(SOURCES) > 100
    for path in SOURCES:
        text = source(SOURCES.index(path))
        assert outcome(text, True) == outcome(text, False), path


def test_a_star_that_is_not_a_product_and_a_keyword_as_a_name() -> None:
    text = "def f(*args, x, **kw):\n    return g(*args, match=x) * 2 ** 3\n"
    tokens = outcome(text, True)
    assert tokens == outcome(text, False)
    assert ("STAR", "*", 1, 7, 1, 8) in tokens


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 10_000),
       st.sampled_from(["", "*", ":", "(", ")", "\n", " ", "    ", "=", "if ", "T.", "'", "#"]))
def test_edited_sources_lex_and_fail_alike(index: int, at: int, insert: str) -> None:
    """A character cut or a fragment put in anywhere: the same tokens, or the same error."""
    text = source(index)
    at %= len(text)
    edited = text[:at] + insert + text[at + (insert == ""):]
    assert outcome(edited, True) == outcome(edited, False)
