"""Text -> syntax tree: the cached Lark LALR parser, Python-style indentation, syntax errors.

Lark's exceptions (unexpected tokens and characters, bad dedents) become one CompileError with
a human message at the offending place (`expected ':'`, `unexpected indent`, ...).
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterator
from copy import copy
from pathlib import Path
from typing import Any

from lark import Lark, Token
from lark.common import LexerConf
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError
from lark.indenter import Indenter
from lark.lexer import BasicLexer, ContextualLexer, LexerState
from tirc.frontend import syntax as S
from tirc.frontend.transformer import ToSyntax
from tirc.ir.diagnostics import CompileError
from tirc.ir.span import Span

GRAMMAR = Path(__file__).with_name("tirscript.lark")

_OPEN = {"LPAR": "(", "LSQB": "[", "LBRACE": "{"}
_CLOSE = {"RPAR": ")", "RSQB": "]", "RBRACE": "}"}
_MATCH = {"RPAR": "LPAR", "RSQB": "LSQB", "RBRACE": "LBRACE"}


class IndentError(Exception):
    """A dedent to a column that matches no enclosing block."""

    def __init__(self, token: Token) -> None:
        super().__init__("unindent does not match any outer indentation level")
        self.token = token


class TirIndenter(Indenter):
    """Python indentation as _INDENT/_DEDENT tokens; remembers open brackets for messages."""

    NL_type = "_NEWLINE"
    OPEN_PAREN_types = list(_OPEN)
    CLOSE_PAREN_types = list(_CLOSE)
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8

    def __init__(self) -> None:
        super().__init__()
        self.open_parens: list[Token] = []
        self.bad_close: Token | None = None
        self.last: Token | None = None

    def process(self, stream: Any) -> Any:
        self.paren_level = 0
        self.indent_level = [0]
        self.open_parens = []
        self.bad_close = None
        self.last = None
        return self._process(stream)

    def handle_NL(self, token: Token) -> Any:
        if self.open_parens:
            return
        yield token
        indent_str = token.rsplit("\n", 1)[1]
        indent = indent_str.count(" ") + indent_str.count("\t") * self.tab_len
        if indent > self.indent_level[-1]:
            self.indent_level.append(indent)
            yield Token.new_borrow_pos(self.INDENT_type, indent_str, token)
        else:
            while indent < self.indent_level[-1]:
                self.indent_level.pop()
                yield Token.new_borrow_pos(self.DEDENT_type, indent_str, token)
            if indent != self.indent_level[-1]:
                raise IndentError(token)

    def _process(self, stream: Any) -> Any:
        token = None
        for token in stream:
            if token.type == self.NL_type:
                yield from self.handle_NL(token)
                continue
            if token.type in _OPEN:
                self.open_parens.append(token)
            elif token.type in _CLOSE:
                if self.open_parens and self.open_parens[-1].type == _MATCH[token.type]:
                    self.open_parens.pop()
                else:
                    self.bad_close = token
            self.paren_level = len(self.open_parens)
            self.last = token
            yield token
        while len(self.indent_level) > 1:
            self.indent_level.pop()
            yield Token.new_borrow_pos(self.DEDENT_type, "", token) if token else \
                Token(self.DEDENT_type, "", 0, 1, 1, 1, 1, 0)


class RootFirstLexer(ContextualLexer):
    """Lark's contextual lexer, trying first the one lexer of all terminals.

    The contextual lexer builds a lexer per parser state's set of acceptable terminals (about
    150 sets), each compiling its own regular expression on the state's first token: most of a
    small file's parse. Here a token is matched by the lexer of all terminals first and kept
    when the parser state accepts its type; only otherwise (a `*` that must be STAR, not MULOP;
    a keyword used as a name) is the state's own lexer built and used. The tokens are the
    same: both lexers try terminals in one order, so when the first terminal to match among all
    is acceptable it is also the first among the state's.
    """

    def __init__(self, conf: LexerConf, states: dict[int, Collection[str]],
                 always_accept: Collection[str] = ()) -> None:
        self._extra = frozenset(conf.ignore) | frozenset(always_accept)
        self._conf = copy(conf)
        self._conf.skip_validation = True  # the root lexer checks every terminal once
        self._states = states
        self._accepts: dict[int, frozenset[str]] = {}  # filled as the parser reaches states
        self._by_names: dict[frozenset[str], BasicLexer] = {}
        self.root_lexer = BasicLexer(conf)

    def _accepted(self, state: int) -> frozenset[str]:
        """The terminals parser state `state` accepts (with the ignored ones), found once per
        state the parser reaches (a file reaches a few dozen of the grammar's ~500)."""
        names = self._accepts.get(state)
        if names is None:
            names = self._accepts[state] = frozenset(self._states[state]) | self._extra
        return names

    def _state_lexer(self, state: int) -> BasicLexer:
        names = self._accepted(state)
        lexer = self._by_names.get(names)
        if lexer is None:
            conf = copy(self._conf)
            conf.terminals = [t for t in self._conf.terminals if t.name in names]
            lexer = self._by_names[names] = BasicLexer(conf)
        return lexer

    def lex(self, lexer_state: LexerState, parser_state: Any) -> Iterator[Token]:
        root = self.root_lexer
        try:
            while True:
                ctr, last = lexer_state.line_ctr, lexer_state.last_token
                saved = (ctr.char_pos, ctr.line, ctr.column, ctr.line_start_pos)
                try:
                    token = root.next_token(lexer_state, parser_state)
                    if token.type in self._accepted(parser_state.position):
                        yield token
                        continue
                except UnexpectedCharacters:
                    pass
                ctr.char_pos, ctr.line, ctr.column, ctr.line_start_pos = saved
                lexer_state.last_token = last
                yield self._state_lexer(parser_state.position).next_token(lexer_state,
                                                                          parser_state)
        except EOFError:
            pass
        except UnexpectedCharacters as e:  # as Lark's: name the token, if any terminal matches
            try:
                last_token = lexer_state.last_token
                token = root.next_token(lexer_state, parser_state)
                raise UnexpectedToken(token, e.allowed, state=parser_state,
                                      token_history=[last_token],
                                      terminals_by_name=root.terminals_by_name)
            except UnexpectedCharacters:
                raise e from None


_lock = threading.Lock()
_parser: Lark | None = None
_indenter: TirIndenter | None = None


def get_parser() -> Lark:
    """The Lark parser, built once per process (LALR, positions kept for spans); Lark caches
    the grammar analysis in a temporary file, which makes later processes start faster."""
    global _parser, _indenter
    if _parser is None:
        _indenter = TirIndenter()
        _parser = Lark(GRAMMAR.read_text(), parser="lalr", lexer="contextual",
                       postlex=_indenter, propagate_positions=True, maybe_placeholders=True,
                       start=["start", "expr_input"], cache=True,
                       _plugins={"ContextualLexer": RootFirstLexer})
    return _parser


def parse_syntax(text: str, filename: str) -> list[S.Stmt]:
    """Parse a whole file into syntax statements; raises CompileError on a syntax error."""
    if not text.endswith("\n"):
        text += "\n"
    _check_first_indent(text, filename)
    tree = _run(text, filename, "start")
    return _transform(tree, ToSyntax(filename), filename)


def _check_first_indent(text: str, filename: str) -> None:
    """The indenter only sees indentation after a newline: check the first statement's."""
    for i, raw in enumerate(text.splitlines(), 1):
        stripped = raw.lstrip(" \t\f")
        if not stripped or stripped.startswith("#") or stripped.startswith("\\"):
            continue
        if stripped != raw:
            col = len(raw) - len(stripped) + 1
            raise CompileError("unexpected indent", Span(filename, i, col, i, col + 1))
        return


def parse_expr_text(text: str, filename: str, line: int, col: int) -> S.Expr:
    """Parse an expression written inside a string literal (a symbolic dim `"n * 2"`)."""
    tree = _run(text, filename, "expr_input", line - 1, col - 1)
    return _transform(tree, ToSyntax(filename, line - 1, col - 1), filename)


def _transform(tree: Any, transformer: ToSyntax, filename: str) -> Any:
    try:
        try:
            return transformer.transform(tree)
        except VisitError as e:
            raise e.orig_exc from None
    except RecursionError:
        raise CompileError("program is nested too deeply", Span(filename, 1, 1, 1, 2)) from None


def _run(text: str, filename: str, start: str, dline: int = 0, dcol: int = 0) -> Any:
    parser = get_parser()
    with _lock:
        try:
            return parser.parse(text, start=start)
        except IndentError as e:
            tok = e.token
            line, col = tok.end_line, tok.end_column
            raise CompileError(str(e), _span(filename, line + dline, col, 1, dcol, line)) \
                from None
        except UnexpectedInput as e:
            msg, line, col, width = _describe(e, parser, _indenter)
            raise CompileError(msg, _span(filename, line + dline, col, width, dcol, line)) \
                from None
        except RecursionError:
            raise CompileError("program is nested too deeply",
                               Span(filename, 1, 1, 1, 2)) from None


def _span(filename: str, line: int, col: int, width: int, dcol: int, raw_line: int) -> Span:
    col = col + dcol if raw_line == 1 else col
    return Span(filename, line, col, line, col + max(1, width))


# ---- messages -----------------------------------------------------------------------------

_EXPR_START = {"NAME", "DEC_NUMBER", "LPAR", "STRING", "FLOAT_NUMBER"}
_FRIENDLY = {
    "NAME": "a name", "STRING": "a string", "LONG_STRING": "a string",
    "DEC_NUMBER": "a number", "HEX_NUMBER": "a number", "OCT_NUMBER": "a number",
    "BIN_NUMBER": "a number", "FLOAT_NUMBER": "a number", "IMAG_NUMBER": "a number",
    "_NEWLINE": "end of line", "$END": "end of file", "_INDENT": "an indented block",
    "_DEDENT": "end of block", "AUGOP": "'+='", "ADDOP": "'+' or '-'", "MULOP": "'*'",
}


def _terminal_text(name: str, parser: Lark) -> str:
    if name in _FRIENDLY:
        return _FRIENDLY[name]
    try:
        pattern = parser.get_terminal(name).pattern
    except KeyError:
        return name.lower()
    if pattern.type == "str":
        return f"'{pattern.value}'"
    return name.lower()


def _token_text(tok: Token) -> str:
    if tok.type in ("_NEWLINE", "$END", "_INDENT", "_DEDENT"):
        return _FRIENDLY[tok.type]
    if tok.type == "NAME":
        return f"name '{tok}'"
    if tok.type in ("STRING", "LONG_STRING"):
        return "string"
    if tok.type.endswith("NUMBER"):
        return f"number '{tok}'"
    return f"'{tok}'"


def _describe(e: UnexpectedInput, parser: Lark,
              ind: TirIndenter | None) -> tuple[str, int, int, int]:
    """(message, line, column, width) for a Lark syntax error."""
    if isinstance(e, UnexpectedCharacters):
        ch = e.char
        if ch in "\"'":
            return "unterminated string", e.line, e.column, 1
        return f"unexpected character {ch!r}", e.line, e.column, 1
    if not isinstance(e, UnexpectedToken):
        return "invalid syntax", getattr(e, "line", 1) or 1, getattr(e, "column", 1) or 1, 1
    tok = e.token
    expected = set(e.accepts or e.expected or ())
    line, col = _tok_pos(tok)
    width = max(1, len(str(tok))) if tok.type not in ("_NEWLINE", "$END") else 1
    if ind is not None and tok.type in _CLOSE:
        bracket = _bracket_error(tok, ind)
        if bracket:
            return bracket, line, col, 1
    if ind is not None and ind.open_parens and (tok.type == "$END" or tok.line is None
                                                or tok.line > ind.open_parens[-1].line):
        op = ind.open_parens[-1]
        return f"'{op}' was never closed", op.line, op.column, 1
    if tok.type == "_INDENT":
        return "unexpected indent", tok.end_line, tok.end_column, 1
    if expected == {"_INDENT"}:
        return "expected an indented block", *_next_line_pos(tok), 1
    if "COLON" in expected and tok.type in ("_NEWLINE", "$END"):
        return "expected ':'", line, col, 1
    what = _expected_text(expected, parser)
    head = f"unexpected {_token_text(tok)}"
    return (f"{head}, expected {what}" if what else head), line, col, width


def _bracket_error(tok: Token, ind: TirIndenter) -> str | None:
    """`unmatched ')'` or `closing ']' does not match '('` for a bad closing bracket."""
    if ind.bad_close is not tok and ind.last is tok:
        return None  # the bracket matched; the error is about something else
    if not ind.open_parens:
        return f"unmatched '{tok}'"
    top = ind.open_parens[-1]
    if top.type != _MATCH[tok.type]:
        return f"closing '{tok}' does not match '{top}'"
    return None


def _expected_text(expected: set[str], parser: Lark) -> str:
    if _EXPR_START <= expected:
        return "an expression"
    names = sorted(expected - {"_NEWLINE", "_DEDENT", "$END"})
    if not names or len(names) > 3:
        return ""
    texts = [_terminal_text(n, parser) for n in names]
    return texts[0] if len(texts) == 1 else ", ".join(texts[:-1]) + " or " + texts[-1]


def _tok_pos(tok: Token) -> tuple[int, int]:
    if tok.line is None:
        return 1, 1
    return tok.line, tok.column


def _next_line_pos(tok: Token) -> tuple[int, int]:
    """Where the line after a block header starts (for `expected an indented block`)."""
    if tok.type in ("_DEDENT", "_NEWLINE") and tok.end_line is not None:
        return tok.end_line, tok.end_column
    return _tok_pos(tok)
