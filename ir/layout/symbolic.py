"""Integer expressions over named symbols, for symbolic extents, strides and offsets.

A `Sym` is a polynomial with integer coefficients whose atoms are names (`K`) or opaque
floor-division and modulo terms (`N // 16`). Its normal form makes structural equality decide
equality of polynomials, which is what canonicalize, group and tile need when they compare
strides and test divisibility. Constants stay plain ints: every operation here returns an int
when its result is constant, so fully concrete layouts never see a `Sym`.

Names are integers; `//` and `%` are floor division and modulo (a `/` in layout text also means
floor division). The helpers `add`, `mul`, `floordiv` and `mod` also accept other operand types
(for example `tirc.ir.expr` nodes) and then fall back to Python's operators, skipping the
identities `x + 0` and `x * 1` so that generated index expressions stay small.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Union

from tirc.ir.layout.errors import LayoutError
from tirc.ir.lean_dataclass import dataclass

Value = Union[int, "Sym"]


@dataclass(frozen=True)
class OpAtom:
    """An opaque `lhs // rhs` or `lhs % rhs` that the polynomial form cannot resolve."""

    op: str
    lhs: Value
    rhs: Value

    def __str__(self) -> str:
        return f"{_operand(self.lhs)} {self.op} {_operand(self.rhs)}"


Atom = str | OpAtom
Monomial = tuple[Atom, ...]


def _atom_key(atom: Atom) -> tuple[int, str]:
    return (0, atom) if isinstance(atom, str) else (1, str(atom))


def _mono_key(mono: Monomial) -> tuple[int, list[tuple[int, str]]]:
    return (-len(mono), [_atom_key(a) for a in mono])


@dataclass(frozen=True)
class Sym:
    """A non-constant polynomial: `terms` pairs sorted monomials with non-zero coefficients."""

    terms: tuple[tuple[Monomial, int], ...]

    @staticmethod
    def var(name: str) -> Sym:
        """The symbol `name`."""
        if not name.isidentifier():
            raise LayoutError(f"invalid symbol name {name!r}")
        return Sym((((name,), 1),))

    def names(self) -> frozenset[str]:
        """Every symbol name that occurs in the expression."""
        out: set[str] = set()
        for mono, _ in self.terms:
            for atom in mono:
                if isinstance(atom, str):
                    out.add(atom)
                else:
                    for side in (atom.lhs, atom.rhs):
                        if isinstance(side, Sym):
                            out |= side.names()
        return frozenset(out)

    def __str__(self) -> str:
        return format_value(self)

    def __repr__(self) -> str:
        return f"Sym({format_value(self)!r})"

    def __add__(self, other: Any) -> Any:
        return add(self, other) if is_value(other) else NotImplemented

    def __radd__(self, other: Any) -> Any:
        return add(other, self) if is_value(other) else NotImplemented

    def __sub__(self, other: Any) -> Any:
        return sub(self, other) if is_value(other) else NotImplemented

    def __rsub__(self, other: Any) -> Any:
        return sub(other, self) if is_value(other) else NotImplemented

    def __mul__(self, other: Any) -> Any:
        return mul(self, other) if is_value(other) else NotImplemented

    def __rmul__(self, other: Any) -> Any:
        return mul(other, self) if is_value(other) else NotImplemented

    def __floordiv__(self, other: Any) -> Any:
        return floordiv(self, other) if is_value(other) else NotImplemented

    def __rfloordiv__(self, other: Any) -> Any:
        return floordiv(other, self) if is_value(other) else NotImplemented

    def __mod__(self, other: Any) -> Any:
        return mod(self, other) if is_value(other) else NotImplemented

    def __rmod__(self, other: Any) -> Any:
        return mod(other, self) if is_value(other) else NotImplemented

    def __neg__(self) -> Value:
        return mul(-1, self)


def is_value(x: Any) -> bool:
    """True for the layout value types: a Python int (not bool) or a `Sym`."""
    return (isinstance(x, int) and not isinstance(x, bool)) or isinstance(x, Sym)


def as_value(x: Any, what: str = "value") -> Value:
    """Coerce an int, a `Sym` or an integer constant node (anything with an int `.value`)."""
    if is_value(x):
        return x
    inner = getattr(x, "value", None)
    if isinstance(inner, int) and not isinstance(inner, bool):
        return inner
    raise LayoutError(f"{what} must be an integer or a symbolic expression, got {x!r}")


def _terms(v: Value) -> dict[Monomial, int]:
    if isinstance(v, Sym):
        return dict(v.terms)
    return {(): v} if v else {}


def _build(terms: Mapping[Monomial, int]) -> Value:
    items = sorted(((m, c) for m, c in terms.items() if c), key=lambda t: _mono_key(t[0]))
    if not items:
        return 0
    if len(items) == 1 and items[0][0] == ():
        return items[0][1]
    return Sym(tuple(items))


def _atom(atom: OpAtom) -> Sym:
    return Sym((((atom,), 1),))


def add(a: Any, b: Any) -> Any:
    """`a + b`, folded for layout values and skipping `+ 0` for other types."""
    if isinstance(b, int) and b == 0:
        return a
    if isinstance(a, int) and a == 0:
        return b
    if not (is_value(a) and is_value(b)):
        return a + b
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    out = _terms(a)
    for mono, c in _terms(b).items():
        out[mono] = out.get(mono, 0) + c
    return _build(out)


def sub(a: Any, b: Any) -> Any:
    """`a - b`."""
    if is_value(b):
        return add(a, mul(-1, b))
    return a - b


def mul(a: Any, b: Any) -> Any:
    """`a * b`, folded for layout values and skipping `* 1` for other types."""
    for x, y in ((a, b), (b, a)):
        if isinstance(x, int) and not isinstance(x, bool):
            if x == 0:
                return 0
            if x == 1:
                return y
    if not (is_value(a) and is_value(b)):
        return a * b
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    out: dict[Monomial, int] = {}
    for ma, ca in _terms(a).items():
        for mb, cb in _terms(b).items():
            mono = tuple(sorted(ma + mb, key=_atom_key))
            out[mono] = out.get(mono, 0) + ca * cb
    return _build(out)


def _exact_quotient(a: Value, b: Sym) -> Value | None:
    """`a / b` when it is a polynomial (assuming `b != 0`), else None."""
    if a == 0:
        return 0
    lead_mono, lead_c = b.terms[0]
    if len(b.terms) == 1:
        out: dict[Monomial, int] = {}
        for mono, c in _terms(a).items():
            rest = list(mono)
            for atom in lead_mono:
                if atom not in rest:
                    return None
                rest.remove(atom)
            if c % lead_c:
                return None
            out[tuple(rest)] = c // lead_c
        return _build(out)
    ca = _terms(a).get(lead_mono, 0)
    if ca == 0 or ca % lead_c:
        return None
    k = ca // lead_c
    return k if sub(a, mul(b, k)) == 0 else None


def floordiv(a: Any, b: Any) -> Any:
    """Floor division; exact on polynomials where possible, an opaque atom otherwise."""
    if isinstance(b, int) and b == 1:
        return a
    if not (is_value(a) and is_value(b)):
        return a // b
    if isinstance(b, int):
        if b == 0:
            raise LayoutError(f"division of {format_value(a)} by zero")
        if isinstance(a, int):
            return a // b
        quot: dict[Monomial, int] = {}
        rem: dict[Monomial, int] = {}
        for mono, c in _terms(a).items():
            quot[mono], rem[mono] = divmod(c, b)
        r = _build(rem)
        return add(_build(quot), r // b if isinstance(r, int) else _floordiv_atom(r, b))
    exact = _exact_quotient(a, b)
    return exact if exact is not None else _atom(OpAtom("//", a, b))


def _floordiv_atom(a: Sym, b: int) -> Value:
    """`a // b` for a remainder `a` (no coefficient divisible by `b`): `(x // c) // b` is
    `x // (c * b)` for positive divisors, so nested divisions take one canonical form."""
    lone = _lone_atom(a)
    if lone is not None and lone.op == "//" and isinstance(lone.rhs, int) and lone.rhs > 0 < b:
        return floordiv(lone.lhs, lone.rhs * b)
    return _atom(OpAtom("//", a, b))


def mod(a: Any, b: Any) -> Any:
    """Floor modulo; 0 when divisibility is provable, an opaque atom when undecided."""
    if isinstance(b, int) and b == 1:
        return 0
    if not (is_value(a) and is_value(b)):
        return a % b
    if isinstance(b, int):
        if b == 0:
            raise LayoutError(f"modulo of {format_value(a)} by zero")
        if isinstance(a, int):
            return a % b
        r = _build({mono: c % b for mono, c in _terms(a).items()})
        return r % b if isinstance(r, int) else _atom(OpAtom("%", r, b))
    if _exact_quotient(a, b) is not None:
        return 0
    return _atom(OpAtom("%", a, b))


def _lone_atom(v: Sym) -> OpAtom | None:
    if len(v.terms) == 1:
        mono, c = v.terms[0]
        if c == 1 and len(mono) == 1 and isinstance(mono[0], OpAtom):
            return mono[0]
    return None


def prove_equal(a: Value, b: Value) -> bool:
    """True when `a == b` holds for every value of the symbols (polynomial identity)."""
    return sub(a, b) == 0


def divides(d: Value, x: Value) -> bool:
    """True when `x % d == 0` is provable."""
    return mod(x, d) == 0


def substitute(v: Value, env: Mapping[str, Any]) -> Any:
    """Replace symbols by `env` values (ints, `Sym`s or expression nodes); others stay."""
    if isinstance(v, int):
        return v
    total: Any = 0
    for mono, c in v.terms:
        term: Any = c
        for atom in mono:
            term = mul(term, _substitute_atom(atom, env))
        total = add(total, term)
    return total


def _substitute_atom(atom: Atom, env: Mapping[str, Any]) -> Any:
    if isinstance(atom, str):
        return env[atom] if atom in env else Sym.var(atom)
    lhs, rhs = substitute(atom.lhs, env), substitute(atom.rhs, env)
    return floordiv(lhs, rhs) if atom.op == "//" else mod(lhs, rhs)


def _operand(v: Value) -> str:
    """`v` as an operand of `//` or `%`: parenthesized unless a name or non-negative int."""
    if isinstance(v, int):
        return str(v) if v >= 0 else f"({v})"
    if len(v.terms) == 1 and v.terms[0][1] == 1 and len(v.terms[0][0]) == 1:
        atom = v.terms[0][0][0]
        if isinstance(atom, str):
            return atom
    return f"({format_value(v)})"


def format_value(v: Value) -> str:
    """The value in the layout notation's expression syntax (parses back to an equal value)."""
    if isinstance(v, int):
        return str(v)
    pieces: list[str] = []
    for i, (mono, c) in enumerate(v.terms):
        first = i == 0
        bare = len(mono) == 1 and abs(c) == 1 and not (first and c < 0)
        factors = [str(a) if isinstance(a, str) or bare else f"({a})" for a in mono]
        body = " * ".join(factors)
        if not mono:
            text = str(abs(c))
        elif abs(c) == 1:
            text = body
        else:
            text = f"{abs(c)} * {body}"
        if first:
            pieces.append(f"-{text}" if c < 0 else text)
        else:
            pieces.append(f" - {text}" if c < 0 else f" + {text}")
    return "".join(pieces)


def is_atomic(v: Value) -> bool:
    """True when `v` prints as a single token (an int or a bare name)."""
    if isinstance(v, int):
        return True
    return len(v.terms) == 1 and v.terms[0][1] == 1 and isinstance(v.terms[0][0][0], str) and (
        len(v.terms[0][0]) == 1
    )


def sort_key(v: Value) -> tuple[int, int, str]:
    """A deterministic total order on values (ints first, by value)."""
    return (0, v, "") if isinstance(v, int) else (1, 0, format_value(v))
