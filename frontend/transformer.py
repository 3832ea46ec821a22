"""Lark parse tree -> syntax tree (frontend/syntax.py), one callback per grammar rule."""

from __future__ import annotations

import ast as _pyast
import warnings
from typing import Any

from lark import Token, Transformer, v_args
from tirc.frontend import syntax as S
from tirc.ir.span import Span


def _is_tok(x: Any, *types: str) -> bool:
    return isinstance(x, Token) and (not types or x.type in types)


@v_args(meta=True)
class ToSyntax(Transformer):
    """Builds syntax nodes with spans in `filename` from Lark's tree."""

    def __init__(self, filename: str, dline: int = 0, dcol: int = 0) -> None:
        super().__init__()
        self.filename = filename
        self.dline = dline  # offsets for text parsed out of a string literal
        self.dcol = dcol

    # ---- spans --------------------------------------------------------------------------

    def _at(self, line: int, col: int) -> tuple[int, int]:
        return line + self.dline, (col + self.dcol if line == 1 else col)

    def span(self, meta: Any) -> Span:
        if getattr(meta, "empty", True):
            return Span(self.filename, *self._at(1, 1), *self._at(1, 1))
        return Span(self.filename, *self._at(meta.line, meta.column),
                    *self._at(meta.end_line, meta.end_column))

    def tok_span(self, tok: Token) -> Span:
        return Span(self.filename, *self._at(tok.line, tok.column),
                    *self._at(tok.end_line, tok.end_column))

    def name(self, meta: Any, ch: list) -> S.Name:
        return S.Name(self.span(meta), str(ch[0]))

    # ---- module and statements ----------------------------------------------------------

    def _stmts(self, items: list) -> list[S.Stmt]:
        out: list[S.Stmt] = []
        for it in items:
            if isinstance(it, list):
                out.extend(it)
            elif isinstance(it, S.Stmt):
                out.append(it)
        return out

    def start(self, meta: Any, ch: list) -> list[S.Stmt]:
        return self._stmts(ch)

    def expr_input(self, meta: Any, ch: list) -> S.Expr:
        return next(c for c in ch if isinstance(c, S.Expr))

    def simple_stmt(self, meta: Any, ch: list) -> list[S.Stmt]:
        return [c for c in ch if isinstance(c, S.Stmt)]

    def suite(self, meta: Any, ch: list) -> list[S.Stmt]:
        return self._stmts(ch)

    def expr_stmt(self, meta: Any, ch: list) -> S.Stmt:
        return S.ExprStmt(self.span(meta), ch[0])

    def assign(self, meta: Any, ch: list) -> S.Stmt:
        targets, value = ch[:-1], ch[-1]
        return S.Assign(self.span(meta), targets[-1], value, list(targets[:-1]))

    def annassign(self, meta: Any, ch: list) -> S.Stmt:
        return S.AnnAssign(self.span(meta), ch[0], ch[1], ch[2])

    def augassign(self, meta: Any, ch: list) -> S.Stmt:
        return S.AugAssign(self.span(meta), ch[0], str(ch[1])[:-1], ch[2])

    def pass_stmt(self, meta: Any, ch: list) -> S.Stmt:
        return S.Pass(self.span(meta))

    def break_stmt(self, meta: Any, ch: list) -> S.Stmt:
        return S.LoopJump(self.span(meta), "break")

    def continue_stmt(self, meta: Any, ch: list) -> S.Stmt:
        return S.LoopJump(self.span(meta), "continue")

    def return_stmt(self, meta: Any, ch: list) -> S.Stmt:
        return S.Return(self.span(meta), ch[0])

    def del_stmt(self, meta: Any, ch: list) -> S.Stmt:
        return S.UnsupportedStmt(self.span(meta), "'del'")

    def global_stmt(self, meta: Any, ch: list) -> S.Stmt:
        return S.UnsupportedStmt(self.span(meta), "'global' and 'nonlocal'")

    def raise_stmt(self, meta: Any, ch: list) -> S.Stmt:
        return S.UnsupportedStmt(self.span(meta), "'raise'")

    def try_stmt(self, meta: Any, ch: list) -> S.Stmt:
        return S.UnsupportedStmt(self.span(meta), "'try'")

    def assert_stmt(self, meta: Any, ch: list) -> S.Stmt:
        return S.Assert(self.span(meta), ch[0], ch[1])

    def dotted_name(self, meta: Any, ch: list) -> tuple[str, Span]:
        return ".".join(str(t) for t in ch), self.span(meta)

    def import_name_as(self, meta: Any, ch: list) -> S.ImportName:
        return S.ImportName(str(ch[0]), str(ch[1]) if ch[1] is not None else None,
                            self.span(meta))

    def import_names(self, meta: Any, ch: list) -> list[S.ImportName]:
        return [c for c in ch if isinstance(c, S.ImportName)]

    def import_from(self, meta: Any, ch: list) -> S.Stmt:
        level = len(str(ch[0])) if _is_tok(ch[0], "DOTS") else 0
        (module, module_span), names = [c for c in ch if not _is_tok(c, "DOTS")]
        return S.ImportFrom(self.span(meta), module, module_span, names, level)

    def import_name(self, meta: Any, ch: list) -> S.Stmt:
        mods = [c[0] for c in ch if isinstance(c, tuple)]
        return S.Import(self.span(meta), mods)

    def decorator(self, meta: Any, ch: list) -> S.Expr:
        return ch[0]

    def decorated(self, meta: Any, ch: list) -> S.Stmt:
        *decos, target = ch
        target.decorators = decos
        target.span = self.span(meta)
        return target

    def funcdef(self, meta: Any, ch: list) -> S.Stmt:
        name, params, returns, body = ch
        return S.FunctionDef(self.span(meta), str(name), self.tok_span(name), params or [],
                             returns, body)

    def parameters(self, meta: Any, ch: list) -> list[S.Param]:
        return [c for c in ch if isinstance(c, S.Param)]

    def param(self, meta: Any, ch: list) -> S.Param:
        return S.Param(str(ch[0]), ch[1], ch[2], self.span(meta))

    def star_param(self, meta: Any, ch: list) -> S.Param:
        names = [c for c in ch if _is_tok(c, "NAME")]
        return S.Param(str(names[0]) if names else "*", None, None, self.span(meta), star=True)

    def classdef(self, meta: Any, ch: list) -> S.Stmt:
        name, args, body = ch
        bases = args or []
        return S.ClassDef(self.span(meta), str(name), self.tok_span(name), bases, body)

    def if_stmt(self, meta: Any, ch: list) -> S.Stmt:
        test, body, *rest = ch
        orelse = rest[-1]
        for elif_span, etest, ebody in reversed(rest[:-1]):
            orelse = [S.If(elif_span, etest, ebody, orelse)]
        return S.If(self.span(meta), test, body, orelse)

    def elif_clause(self, meta: Any, ch: list) -> tuple[Span, S.Expr, list[S.Stmt]]:
        return self.span(meta), ch[0], ch[1]

    def else_clause(self, meta: Any, ch: list) -> list[S.Stmt]:
        return ch[0]

    def while_stmt(self, meta: Any, ch: list) -> S.Stmt:
        return S.While(self.span(meta), ch[0], ch[1], ch[2])

    def for_stmt(self, meta: Any, ch: list) -> S.Stmt:
        return S.For(self.span(meta), ch[0], ch[1], ch[2], ch[3])

    def targetlist(self, meta: Any, ch: list) -> S.Expr:
        elts = [c for c in ch if isinstance(c, S.Expr)]
        if len(elts) == 1 and not _trailing_comma(meta, elts[0]):
            return elts[0]
        return S.Tuple(self.span(meta), elts)

    def with_stmt(self, meta: Any, ch: list) -> S.Stmt:
        return S.With(self.span(meta), list(ch[:-1]), ch[-1])

    def with_item(self, meta: Any, ch: list) -> S.WithItem:
        return S.WithItem(ch[0], ch[1])

    def async_stmt(self, meta: Any, ch: list) -> S.Stmt:
        return S.UnsupportedStmt(self.span(meta), "'async'")

    # ---- expressions --------------------------------------------------------------------

    def tuple(self, meta: Any, ch: list) -> S.Expr:
        return S.Tuple(self.span(meta), [c for c in ch if isinstance(c, S.Expr)])

    def list(self, meta: Any, ch: list) -> S.Expr:
        return S.List(self.span(meta), [c for c in ch if isinstance(c, S.Expr)])

    def dict(self, meta: Any, ch: list) -> S.Expr:
        pairs = [c for c in ch if isinstance(c, tuple)]
        return S.Dict(self.span(meta), [k for k, _ in pairs], [v for _, v in pairs])

    def key_value(self, meta: Any, ch: list) -> tuple[S.Expr, S.Expr]:
        return ch[0], ch[1]

    def set(self, meta: Any, ch: list) -> S.Expr:
        return S.Unsupported(self.span(meta), "set literals")

    def comprehension(self, meta: Any, ch: list) -> S.Expr:
        return S.Unsupported(self.span(meta), "comprehensions")

    def comp_for(self, meta: Any, ch: list) -> None:
        return None

    def ifexp(self, meta: Any, ch: list) -> S.Expr:
        return S.Unsupported(self.span(meta),
                             "conditional expressions (use T.Select or T.if_then_else)")

    def lambdef(self, meta: Any, ch: list) -> S.Expr:
        params = ch[1] or []
        return S.Lambda(self.span(meta), params, ch[2])

    def lambda_params(self, meta: Any, ch: list) -> list[S.Name]:
        return [S.Name(self.tok_span(t), str(t)) for t in ch if _is_tok(t, "NAME")]

    def or_test(self, meta: Any, ch: list) -> S.Expr:
        return S.BoolOp(self.span(meta), "or", ch)

    def and_test(self, meta: Any, ch: list) -> S.Expr:
        return S.BoolOp(self.span(meta), "and", ch)

    def not_test(self, meta: Any, ch: list) -> S.Expr:
        return S.UnaryOp(self.span(meta), "not", ch[0])

    def comparison(self, meta: Any, ch: list) -> S.Expr:
        return S.Compare(self.span(meta), ch[0], list(ch[1::2]), list(ch[2::2]))

    def comp_op(self, meta: Any, ch: list) -> str:
        return " ".join(str(t) for t in ch)

    def _chain(self, meta: Any, ch: list) -> S.Expr:
        left = ch[0]
        for i in range(1, len(ch), 2):
            right = ch[i + 1]
            left = S.BinOp(left.span.merge(right.span), str(ch[i]), left, right)
        return left

    expr = xor_expr = and_expr = shift_expr = arith_expr = term = _chain

    def power(self, meta: Any, ch: list) -> S.Expr:
        return S.BinOp(self.span(meta), "**", ch[0], ch[2])

    def unary(self, meta: Any, ch: list) -> S.Expr:
        return S.UnaryOp(self.span(meta), str(ch[0]), ch[1])

    def call(self, meta: Any, ch: list) -> S.Expr:
        func, args = ch
        if isinstance(args, S.Unsupported):
            return args
        pos: list[S.Expr] = []
        kws: list[S.Keyword] = []
        for a in args or []:
            if isinstance(a, S.Keyword):
                kws.append(a)
            elif kws:
                pos.append(S.Unsupported(a.span, "positional argument after keyword arguments"))
            else:
                pos.append(a)
        return S.Call(self.span(meta), func, pos, kws)

    def arguments(self, meta: Any, ch: list) -> list:
        return [c for c in ch if c is not None]

    def argument(self, meta: Any, ch: list) -> Any:
        value, default = ch
        if default is None:
            return value
        if not isinstance(value, S.Name):
            return S.Unsupported(value.span, "keyword argument that is not a name")
        return S.Keyword(value.id, default, self.span(meta))

    def star_arg(self, meta: Any, ch: list) -> S.Expr:
        star, value = ch
        if str(star) == "*":
            return S.Starred(self.span(meta), value)
        return S.Unsupported(self.span(meta), "'**' arguments")

    def subscript(self, meta: Any, ch: list) -> S.Expr:
        value, items = ch
        if len(items) == 1 and isinstance(items[0], S.Tuple):
            return S.Subscript(self.span(meta), value, list(items[0].elts))
        return S.Subscript(self.span(meta), value, items)

    def subscripts(self, meta: Any, ch: list) -> list[S.Expr]:
        return [c for c in ch if isinstance(c, S.Expr)]

    def slice(self, meta: Any, ch: list) -> S.Expr:
        ch = list(ch) + [None] * (3 - len(ch))
        return S.Slice(self.span(meta), ch[0], ch[1], ch[2])

    def attribute(self, meta: Any, ch: list) -> S.Expr:
        return S.Attribute(self.span(meta), ch[0], str(ch[1]), self.tok_span(ch[1]))

    def int_number(self, meta: Any, ch: list) -> S.Expr:
        return S.Constant(self.span(meta), int(str(ch[0]).replace("_", ""), 0), "int")

    def float_number(self, meta: Any, ch: list) -> S.Expr:
        return S.Constant(self.span(meta), float(str(ch[0]).replace("_", "")), "float")

    def imag_number(self, meta: Any, ch: list) -> S.Expr:
        return S.Unsupported(self.span(meta), "complex numbers")

    def strings(self, meta: Any, ch: list) -> S.Expr:
        parts: list[str] = []
        for tok in ch:
            text = str(tok)
            prefix = text[: len(text) - len(text.lstrip("ubfrUBFR"))].lower()
            if "f" in prefix or "b" in prefix:
                return S.Unsupported(self.span(meta), f"'{prefix}' string literals")
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # invalid escapes such as "\8"
                    parts.append(_pyast.literal_eval(text))
            except (ValueError, SyntaxError):
                return S.Unsupported(self.span(meta), "malformed string literal")
        return S.Constant(self.span(meta), "".join(parts), "str")

    def const_none(self, meta: Any, ch: list) -> S.Expr:
        return S.Constant(self.span(meta), None, "none")

    def const_true(self, meta: Any, ch: list) -> S.Expr:
        return S.Constant(self.span(meta), True, "bool")

    def const_false(self, meta: Any, ch: list) -> S.Expr:
        return S.Constant(self.span(meta), False, "bool")

    def ellipsis(self, meta: Any, ch: list) -> S.Expr:
        return S.Unsupported(self.span(meta), "'...'")


def _trailing_comma(meta: Any, last: S.Expr) -> bool:
    """True when a one-element target list ends with a comma (`a, = ...`)."""
    return (meta.end_line, meta.end_column) != (last.span.end_line, last.span.end_col)
