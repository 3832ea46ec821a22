"""Parsing the layout notation: a small tokenizer and a recursive-descent parser.

Grammar (`T.` prefixes optional, `@ Axis.name` or `@name`, a `/` means floor division)::

    layout    := "TileLayout" "(" tile ")"
               | "ComposeLayout" "(" int "," int "," int "," tile_arg ["," inner_kw] ")"
               | "ComposeLayout" "(" "SwizzleLayout" "(" int "," int "," int ["," inner_kw]
                 ")" "," tile_arg ")"
               | tile
    tile_arg  := "TileLayout" "(" tile ")" | tile
    tile      := part (("+" | "-") part)*         at most one S[...]; R[...] parts concatenate
    part      := "S" "[" spec "]" | "R" "[" spec "]" | term ["@" axis]      (an offset)
    spec      := values [":" strides]             extents only means row-major on m
    values    := "(" [expr ("," expr)* [","]] ")" | expr ("," expr)*
    strides   := "(" [stride ("," stride)* [","]] ")" | stride
    stride    := expr ["@" axis]                  "@" applies to the whole expression
    expr      := term (("+" | "-") term)*
    term      := factor (("*" | "/" | "//" | "%") factor)*
    factor    := INT | NAME | "(" expr ")" | "-" factor
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NoReturn, TypeVar

from tirc.ir.layout.axes import MEMORY, Axis, get_axis
from tirc.ir.layout.errors import LayoutError
from tirc.ir.layout.iters import Iter
from tirc.ir.layout.swizzle import ComposeLayout
from tirc.ir.layout.symbolic import Sym, Value, add, floordiv, mod, mul, sub
from tirc.ir.layout.tile_layout import TileLayout

_T = TypeVar("_T")
_TOKEN = re.compile(r"(?P<int>\d+)|(?P<name>[A-Za-z_]\w*)|(?P<op>//|[-+*/%()\[\]:,@.=])")


def parse_layout(text: str) -> TileLayout | ComposeLayout:
    """Parse the short notation or the TVMScript form of a tile or compose layout."""
    parser = _Parser(text)
    try:
        layout = parser.layout()
    except RecursionError:
        raise LayoutError(f"layout text is nested too deeply: {text[:60]!r}...") from None
    parser.expect_end()
    return layout


def parse_value(text: str) -> Value:
    """Parse an integer expression over symbol names, e.g. `N // 16 * K`."""
    parser = _Parser(text)
    try:
        value = parser.expr()
    except RecursionError:
        raise LayoutError(f"expression is nested too deeply: {text[:60]!r}...") from None
    parser.expect_end()
    return value


class _Parser:
    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise LayoutError(f"a layout to parse must be a string, got {type(text).__name__}")
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        while True:
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos == len(text):
                break
            match = _TOKEN.match(text, pos)
            if match is None:
                self.fail(f"unexpected character {text[pos]!r}", pos)
            kind = match.lastgroup or "op"
            self.tokens.append((kind, match.group(), pos))
            pos = match.end()
        self.tokens.append(("end", "", len(text)))
        self.i = 0

    # ---- token helpers --------------------------------------------------------------------

    def fail(self, message: str, pos: int | None = None) -> NoReturn:
        at = self.tokens[self.i][2] if pos is None else pos
        caret = " " * at + "^"
        raise LayoutError(
            f"layout parse error at position {at}: {message}\n  {self.text}\n  {caret}", at
        )

    def peek(self, ahead: int = 0) -> tuple[str, str, int]:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def accept(self, text: str) -> bool:
        kind, tok, _ = self.peek()
        if kind != "end" and tok == text:
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> None:
        if not self.accept(text):
            self.fail(f"expected {text!r}, found {self.describe()}")

    def expect_end(self) -> None:
        if self.peek()[0] != "end":
            self.fail(f"unexpected {self.describe()} after the layout")

    def describe(self) -> str:
        kind, tok, _ = self.peek()
        return "end of text" if kind == "end" else repr(tok)

    def keyword(self, name: str, then: str) -> bool:
        """Consume `[T.]name` when followed by `then`."""
        skip = 2 if self.peek()[1] == "T" and self.peek(1)[1] == "." else 0
        if self.peek(skip)[1] == name and self.peek(skip)[0] == "name" and (
            self.peek(skip + 1)[1] == then
        ):
            self.i += skip + 1
            return True
        return False

    # ---- layouts --------------------------------------------------------------------------

    def layout(self) -> TileLayout | ComposeLayout:
        if self.keyword("ComposeLayout", "("):
            self.expect("(")
            return self.compose()
        return self.tile_arg()

    def tile_arg(self) -> TileLayout:
        if self.keyword("TileLayout", "("):
            self.expect("(")
            tile = self.tile()
            self.expect(")")
            return tile
        return self.tile()

    def compose(self) -> ComposeLayout:
        inner: bool | None = None
        if self.keyword("SwizzleLayout", "("):
            self.expect("(")
            per_element, swizzle_len, atom_len = self.swizzle_ints()
            if self.accept(",") and self.peek()[1] != ")":
                inner = self.inner_kw()
            self.expect(")")
        else:
            per_element, swizzle_len, atom_len = self.swizzle_ints()
        self.expect(",")
        tile = self.tile_arg()
        if self.accept(",") and self.peek()[1] == "swizzle_inner":
            if inner is not None:
                self.fail("swizzle_inner is given twice")
            inner = self.inner_kw()
            self.accept(",")
        self.expect(")")
        return ComposeLayout(per_element, swizzle_len, atom_len, tile,
                             True if inner is None else inner)

    def swizzle_ints(self) -> tuple[int, int, int]:
        values = []
        for k in range(3):
            if k:
                self.expect(",")
            pos = self.peek()[2]
            value = self.expr()
            if not isinstance(value, int):
                self.fail("swizzle parameters must be integers", pos)
            values.append(value)
        return values[0], values[1], values[2]

    def inner_kw(self) -> bool:
        if not (self.peek()[1] == "swizzle_inner" and self.peek(1)[1] == "="):
            self.fail(f"expected 'swizzle_inner=...', found {self.describe()}")
        self.i += 2
        tok = self.peek()[1]
        if tok not in ("True", "False"):
            self.fail(f"expected True or False, found {self.describe()}")
        self.i += 1
        return tok == "True"

    def tile(self) -> TileLayout:
        shard: list[Iter] | None = None
        replica: list[Iter] = []
        offsets: list[tuple[str, Value]] = []
        negate = False
        while True:
            pos = self.peek()[2]
            if self.keyword("S", "["):
                if shard is not None:
                    self.fail("a layout has one S[...]; this is a second one", pos)
                if negate:
                    self.fail("S[...] cannot be subtracted", pos)
                shard = self.spec()
            elif self.keyword("R", "["):
                if negate:
                    self.fail("R[...] cannot be subtracted", pos)
                replica += self.spec()
            else:
                value = self.term()
                axis = self.axis_suffix() or MEMORY
                offsets.append((axis.name, mul(-1, value) if negate else value))
            if self.accept("+"):
                negate = False
            elif self.accept("-"):
                negate = True
            else:
                break
        return TileLayout(shard or (), replica, offsets)

    def spec(self) -> list[Iter]:
        self.expect("[")
        pos = self.peek()[2]
        extents = self.values(self.expr)
        strides = None
        if self.accept(":"):
            strides = self.values(self.stride)
        self.expect("]")
        if strides is not None and len(strides) != len(extents):
            self.fail(f"{len(extents)} extents but {len(strides)} strides", pos)
        try:
            if strides is None:
                return list(TileLayout.row_major(extents).shard)
            return [Iter(e, s, axis) for e, (s, axis) in zip(extents, strides)]
        except LayoutError as err:
            self.fail(str(err), pos)

    def values(self, item: Callable[[], _T]) -> list[_T]:
        if self.accept("("):
            items: list[_T] = []
            while not self.accept(")"):
                items.append(item())
                if not self.accept(","):
                    self.expect(")")
                    break
            return items
        items = [item()]
        while self.peek()[1] == "," and self.peek()[0] == "op":
            self.i += 1
            items.append(item())
        return items

    def stride(self) -> tuple[Value, Axis]:
        value = self.expr()
        return value, self.axis_suffix() or MEMORY

    def axis_suffix(self) -> Axis | None:
        if not self.accept("@"):
            return None
        if self.peek()[1] == "Axis" and self.peek(1)[1] == ".":
            self.i += 2
        kind, name, pos = self.peek()
        if kind != "name":
            self.fail(f"expected an axis name after '@', found {self.describe()}")
        self.i += 1
        try:
            return get_axis(name)
        except LayoutError as err:
            self.fail(str(err), pos)

    # ---- integer expressions --------------------------------------------------------------

    def expr(self) -> Value:
        value = self.term()
        while True:
            if self.accept("+"):
                value = add(value, self.term())
            elif self.accept("-"):
                value = sub(value, self.term())
            else:
                return value

    def term(self) -> Value:
        value = self.factor()
        while True:
            op = self.peek()[1] if self.peek()[0] == "op" else ""
            if op not in ("*", "/", "//", "%"):
                return value
            pos = self.peek()[2]
            self.i += 1
            rhs = self.factor()
            try:
                value = mul(value, rhs) if op == "*" else (
                    mod(value, rhs) if op == "%" else floordiv(value, rhs)
                )
            except LayoutError as err:
                self.fail(str(err), pos)

    def factor(self) -> Value:
        kind, tok, pos = self.peek()
        if self.accept("-"):
            return mul(-1, self.factor())
        if self.accept("("):
            value = self.expr()
            self.expect(")")
            return value
        if kind == "int":
            self.i += 1
            return int(tok)
        if kind == "name":
            if tok in ("S", "R") and self.peek(1)[1] == "[":
                self.fail(f"{tok}[...] cannot appear inside an expression")
            self.i += 1
            return Sym.var(tok)
        self.fail(f"expected a number, a name or '(', found {self.describe()}")
