"""A seeded generator of random elementwise loop functions over scalar expressions.

Where `loop_programs` varies the structure of loop nests, this varies what is computed in
them: integer arithmetic in every width and signedness (int8 to int64, uint8 to uint64),
float16/32/64, bool, casts between them, comparisons, selects, bitwise operations and shifts,
`min`/`max`, both rounding modes of division and modulo, and rounding and math functions,
stored (some under conditions on computed values) by serial, parallel, vectorized, unrolled
or split loops whose variable is int32, int64, int16, int8 or uint8, and read at the loop
variable or at a permutation of it computed in its type. A third of the int32 programs also
use idioms users write (from a stream of their own): loops from a non-zero start or with a
step, over an extent passed as a scalar parameter, or a `while` over a counter in a scratch
buffer; indices chosen per element (`T.if_then_else`); floats rounded through bfloat16.
Three programs of ten also use bit-level operations (from a third stream): left shifts by the
width or more (0, or any amount in a wrapping type), right shifts of a constant past the width,
and `T.reinterpret` between the signed and unsigned integers of one width and from the absolute
value of an exact float to the integer of its width. A quarter read some inputs through a
strided view of their storage (`T.decl_buffer(..., data=A0.data, strides=[s], elem_offset=o)`,
a fourth stream). A quarter bind names (a fifth stream): `T.Let(body, where={t: value})` inside
expressions, and `t = T.bind(value)` before the stores, the names read by what follows.
It checks the simplifier, the vectorizer and the code generator on the semantics the
interpreter defines: narrow and unsigned integers wrap, a shift by the width or more gives 0
(or the sign). Divisors are made odd (`T.bitwise_or(b, 1)`): a division by zero is an error in
the interpreter.

Every value stays where all builds must agree:
- int32 and int64 arithmetic never overflows (compiled code takes signed overflow of those as
  undefined, as C and TVM do): each node's range is tracked and an operation that could leave
  the dtype is not drawn;
- floats are exact (small multiples of 1/8 whose sums and products fit the mantissa) wherever
  they feed something that jumps at a threshold (a comparison, a cast to an integer, a floor);
  transcendentals and divisions make them inexact, and such outputs compare with a tolerance;
- a float is cast to an integer type only when its value is known to lie inside that type
  and be finite: in three programs of ten, float inputs also hold nan, inf, -inf and -0.0,
  which comparisons, `min`/`max`, selects and casts to bool must treat as the interpreter
  does.
`expr_case(seed)` is deterministic in its seed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import numpy as np
from tirc.frontend import parse

from difftest.harness import Program
from difftest.values import Info

INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOATS = ("float16", "float32", "float64")
MANTISSA = {"bfloat16": 8, "float16": 11, "float32": 24, "float64": 53}
FLOAT_LIMIT = {"float16": 1000.0, "float32": 1e6, "float64": 1e9}
EXTENTS = (1, 3, 7, 16, 33, 64)
LOOP_DTYPES = ("int32", "int32", "int32", "int32", "int64", "int16", "int8", "uint8")
MAX_DEPTH = 4


def int_range(dt: str) -> tuple[int, int]:
    """The values of integer dtype `dt`."""
    bits = int(dt.lstrip("uint"))
    if dt.startswith("u"):
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def wraps(dt: str) -> bool:
    """Whether overflow of `dt` is defined (wraps) rather than undefined (int32, int64)."""
    return dt not in ("int32", "int64")


@dataclass(frozen=True)
class Val:
    """A generated expression: its text, dtype and what is known of its values (an integer
    range, or a float's magnitude bound, granularity 2**-frac and exactness)."""

    text: str
    dtype: str
    lo: float = 0
    hi: float = 0
    frac: int = 0
    exact: bool = True
    finite: bool = True  # False: may be inf or nan (lo, hi bound the finite values)

    @property
    def mag(self) -> float:
        return max(abs(self.lo), abs(self.hi))


def _float_exact(dt: str, mag: float, frac: int) -> bool:
    return math.log2(max(mag, 1.0)) + frac <= MANTISSA[dt] - 1


class _Gen:
    """One program's expressions, drawn from one random stream."""

    def __init__(self, rng: random.Random, inputs: list[tuple[str, str]], specials: bool,
                 extent: int, loop_dtype: str, extra: random.Random | None = None,
                 bits: random.Random | None = None,
                 views: tuple[random.Random, dict[str, tuple[str, int]]] | None = None,
                 lets: random.Random | None = None) -> None:
        self.rng = rng
        self.inputs = inputs
        self.specials = specials
        self.extent = extent
        self.loop_dtype = loop_dtype
        self.extra = extra  # the idioms' own stream (None: the program has none)
        self.bits = bits  # the bit-level operations' own stream (None: the program has none)
        # the views' stream and, per input, the name and extent of its strided view
        self.views = views
        self.lets = lets  # the lets' own stream (None: the program binds no names)
        self.scope: list[Val] = []  # let-bound names in scope (a Val whose text is the name)
        self.bound = 0

    # ---- leaves

    def leaf(self, dt: str) -> Val:
        named = [v for v in self.scope if v.dtype == dt]
        if named and self.lets is not None and self.lets.random() < 0.6:
            return self.lets.choice(named)
        r = self.rng.random()
        same = [(name, d) for name, d in self.inputs if d == dt]
        if same and r < 0.6:
            name, _ = self.rng.choice(same)
            return self.load(name, dt)
        if r < 0.75 and dt in INTS:
            text = "i" if dt == self.loop_dtype else f'T.Cast("{dt}", i)'
            return Val(text, dt, 0, self.extent - 1)
        if r < 0.9 and self.inputs:
            name, src = self.rng.choice(self.inputs)
            return self.cast(self.load(name, src), dt)
        return self.constant(dt)

    def load(self, name: str, dt: str) -> Val:
        at = f"{name}[{self.index()}]"
        if self.views is not None and name in self.views[1] and self.views[0].random() < 0.5:
            view, extent = self.views[1][name]
            i = "i" if self.loop_dtype == "int32" else 'T.Cast("int32", i)'
            at = f"{view}[T.min({i}, {extent - 1})]"
        if dt == "bool":
            return Val(at, dt, 0, 1)
        if dt in FLOATS:
            return Val(at, dt, -4.0, 4.0, 3, finite=not self.specials)
        lo, hi = int_range(dt)
        return Val(at, dt, lo, hi)

    def index(self) -> str:
        """`i`, or now and then a permutation of the elements computed in the loop variable's
        type, `(i * 7 + 3) % n` (which may wrap in int8 or uint8; the modulo keeps it in
        bounds), or with the idioms a mirror chosen per element, `T.if_then_else(i < c, i,
        n - 1 - i)`."""
        if self.extra is not None and self.loop_dtype == "int32" and self.extra.random() < 0.2:
            c = self.extra.randint(0, self.extent)
            return f"T.if_then_else(i < {c}, i, {self.extent - 1} - i)"
        if self.rng.random() >= 0.2:
            return "i"
        k, c = self.rng.choice((3, 5, 7, 11)), self.rng.randint(0, 9)
        if self.loop_dtype == "int32":
            return f"(i * {k} + {c}) % {self.extent}"
        ldt = self.loop_dtype
        return f"(i * T.{ldt}({k}) + T.{ldt}({c})) % T.{ldt}({self.extent})"

    def constant(self, dt: str) -> Val:
        rng = self.rng
        if dt == "bool":
            v = rng.random() < 0.5
            return Val(f"T.bool({v})", dt, int(v), int(v))
        if dt in FLOATS:
            v = rng.randint(-24, 24) / 8
            return Val(f"T.{dt}({v!r})", dt, v, v, 3 if v != int(v) else 0)
        lo, hi = int_range(dt)
        pick = rng.random()
        if pick < 0.2:
            v = rng.choice([lo, hi, lo + 1, hi - 1])
        elif pick < 0.4:
            v = rng.choice([b for b in (1, 2, 3, 7, 8, 16, 31, 32, 63, 64) if b <= hi])
        else:
            v = rng.randint(max(lo, -20), min(hi, 20))
        return Val(f"T.{dt}({v})", dt, v, v)

    # ---- casts

    def cast(self, v: Val, dt: str) -> Val:
        """`v` as `dt`, where the cast is defined; otherwise a constant of `dt` (with the
        idioms, a float may go through bfloat16 on its way)."""
        if v.dtype == dt:
            return v
        if self.extra is not None and v.dtype in FLOATS and dt in FLOATS and \
                self.extra.random() < 0.5:
            return self.cast(self.bfloat16(v), dt)
        text = f'T.Cast("{dt}", {v.text})'
        if dt == "bool":
            if v.dtype in FLOATS and not v.exact:
                return self.constant(dt)
            return Val(text, dt, 0, 1)
        if v.dtype == "bool":
            return Val(text, dt, 0, 1)
        if dt in FLOATS:
            if v.dtype in FLOATS:
                exact = v.exact and _float_exact(dt, v.mag, v.frac) and v.mag <= FLOAT_LIMIT[dt]
                if v.mag > FLOAT_LIMIT[dt]:
                    return self.constant(dt)
                return Val(text, dt, v.lo, v.hi, v.frac, exact, v.finite)
            if v.mag > FLOAT_LIMIT[dt]:
                return self.constant(dt)
            return Val(text, dt, v.lo, v.hi, 0, _float_exact(dt, v.mag, 0))
        lo, hi = int_range(dt)
        if v.dtype in FLOATS:
            # float to int: only exact finite values inside the target (else undefined)
            if not (v.exact and v.finite) or v.lo < lo or v.hi > hi:
                return self.constant(dt)
            return Val(text, dt, math.trunc(v.lo), math.trunc(v.hi))
        if lo <= v.lo and v.hi <= hi:
            return Val(text, dt, v.lo, v.hi)
        return Val(text, dt, lo, hi)  # a narrowing or sign-changing cast wraps

    def bfloat16(self, v: Val) -> Val:
        """`v` rounded to bfloat16 (8 significant bits) and back to float32, or two such
        values added or multiplied in bfloat16; exact where the bits suffice."""
        if v.mag > FLOAT_LIMIT["float32"]:
            return v
        a = f'T.Cast("bfloat16", {v.text})'
        exact = v.exact and _float_exact("bfloat16", v.mag, v.frac)
        if self.extra is not None and self.extra.random() < 0.5:
            op = self.extra.choice(("+", "*"))
            c = self.extra.randint(-16, 16) / 4
            mag = v.mag + abs(c) if op == "+" else v.mag * abs(c)
            frac = max(v.frac, 2) if op == "+" else v.frac + 2
            exact = exact and _float_exact("bfloat16", mag, frac)
            return Val(f'T.Cast("float32", {a} {op} T.bfloat16({c!r}))', "float32", -mag, mag,
                       frac, exact, v.finite)
        return Val(f'T.Cast("float32", {a})', "float32", v.lo, v.hi, v.frac, exact, v.finite)

    # ---- expressions

    def expr(self, dt: str, depth: int) -> Val:
        if self.lets is not None and depth >= 2 and self.lets.random() < 0.2:
            return self.let(dt, depth)
        if depth <= 0 or self.rng.random() < 0.2:
            return self.leaf(dt)
        if dt == "bool":
            return self.boolean(depth)
        if dt in FLOATS:
            return self.floating(dt, depth)
        return self.integer(dt, depth)

    def bind(self, depth: int) -> tuple[str, Val]:
        """A new name for a random expression (of the lets' choosing dtype), put in scope:
        the name and the bound value."""
        assert self.lets is not None
        vdt = self.lets.choice(INTS + FLOATS + ("bool",))
        value = self.expr(vdt, depth)
        name = f"t{self.bound}"
        self.bound += 1
        self.scope.append(Val(name, vdt, value.lo, value.hi, value.frac, value.exact,
                              value.finite))
        return name, value

    def let(self, dt: str, depth: int) -> Val:
        """`T.Let(body, where={t: value})`: the body of dtype `dt` may read `t` (any number
        of times, in a select's untaken arm too)."""
        name, value = self.bind(depth - 1)
        body = self.expr(dt, depth - 1)
        self.scope.pop()
        return Val(f"T.Let({body.text}, where={{{name}: {value.text}}})", dt, body.lo,
                   body.hi, body.frac, body.exact, body.finite)

    def boolean(self, depth: int) -> Val:
        rng = self.rng
        r = rng.random()
        if r < 0.6:
            dt = rng.choice(INTS + FLOATS)
            a, b = self.expr(dt, depth - 1), self.expr(dt, depth - 1)
            if dt in FLOATS and not (a.exact and b.exact):
                return self.constant("bool")
            op = rng.choice(("<", "<=", ">", ">=", "==", "!="))
            return Val(f"{a.text} {op} {b.text}", "bool", 0, 1)
        if r < 0.8:
            a, b = self.boolean(depth - 1), self.boolean(depth - 1)
            op = rng.choice(("and", "or"))
            return Val(f"({a.text}) {op} ({b.text})", "bool", 0, 1)
        a = self.boolean(depth - 1)
        return Val(f"not ({a.text})", "bool", 0, 1)

    def select(self, dt: str, depth: int) -> Val:
        c = self.boolean(depth - 1)
        a, b = self.expr(dt, depth - 1), self.expr(dt, depth - 1)
        fn = self.rng.choice(("T.Select", "T.if_then_else"))
        return Val(f"{fn}({c.text}, {a.text}, {b.text})", dt, min(a.lo, b.lo),
                   max(a.hi, b.hi), max(a.frac, b.frac), a.exact and b.exact,
                   a.finite and b.finite)

    def integer(self, dt: str, depth: int) -> Val:
        rng = self.rng
        lo_t, hi_t = int_range(dt)
        if self.bits is not None and self.bits.random() < 0.25:
            out = self.bit_level(dt, depth)
            if out is not None:
                return out
        for _ in range(8):
            r = rng.random()
            if r < 0.1:
                return self.select(dt, depth)
            if r < 0.2:
                src = rng.choice(INTS + FLOATS + ("bool",))
                return self.cast(self.expr(src, depth - 1), dt)
            a, b = self.expr(dt, depth - 1), self.expr(dt, depth - 1)
            op = rng.choice(("+", "-", "*", "//", "%", "T.truncdiv", "T.truncmod", "T.min",
                             "T.max", "&", "|", "^", "~", "<<", ">>"))
            out = _int_op(op, a, b, dt)
            if out is None:
                continue
            lo, hi = out
            if lo < lo_t or hi > hi_t:
                if not wraps(dt):
                    continue  # signed overflow of int32/int64: undefined, not drawn
                lo, hi = lo_t, hi_t
            return Val(_int_text(op, a, b), dt, lo, hi)
        return self.leaf(dt)

    def bit_level(self, dt: str, depth: int) -> Val | None:
        """A shift past the width or a reinterpretation of bits, of dtype `dt` (None: not
        drawn for `dt`). A shift by the width or more gives 0 (`<<`) or the sign (`>>`) at
        every level; a float's bits are taken only where its value is exact and finite, and of
        its absolute value (the sign of a zero is not something the builds agree on)."""
        bits = self.bits
        assert bits is not None
        width = int(dt.lstrip("uint"))
        lo_t, hi_t = int_range(dt)
        form = bits.choice(("shl", "shl", "shr", "int", "float"))
        if form in ("shl", "shr") and (form == "shr" or bits.random() < 0.5 or not wraps(dt)):
            a = self.expr(dt, depth - 1)
            c = bits.choice([k for k in (width, width + 1, 2 * width - 1, 2 * width, 63, 64, 100)
                             if width <= k <= hi_t])
            if form == "shl":
                return Val(f"({a.text} << T.{dt}({c}))", dt, 0, 0)
            return Val(f"({a.text} >> T.{dt}({c}))", dt, -1 if a.lo < 0 else 0, 0)
        if form == "shl":
            # a wrapping type: any amount from 0 to twice the width, the value wraps
            a, b = self.expr(dt, depth - 1), self.expr(dt, depth - 1)
            return Val(f"({a.text} << T.bitwise_and({b.text}, T.{dt}({2 * width - 1})))", dt,
                       lo_t, hi_t)
        if form == "int":
            src = dt[1:] if dt.startswith("u") else "u" + dt
            a = self.expr(src, depth - 1)
            lo, hi = (a.lo, a.hi) if lo_t <= a.lo and a.hi <= hi_t else (lo_t, hi_t)
            return Val(f'T.reinterpret("{dt}", {a.text})', dt, lo, hi)
        src = f"float{width}"
        if src not in FLOATS:
            return None
        a = self.expr(src, depth - 1)
        if not (a.exact and a.finite):
            return None
        return Val(f'T.reinterpret("{dt}", T.fabs({a.text}))', dt, max(lo_t, 0), hi_t)

    def floating(self, dt: str, depth: int) -> Val:
        rng = self.rng
        limit = FLOAT_LIMIT[dt]
        for _ in range(8):
            r = rng.random()
            if r < 0.1:
                return self.select(dt, depth)
            if r < 0.2:
                src = rng.choice(INTS + FLOATS + ("bool",))
                return self.cast(self.expr(src, depth - 1), dt)
            a = self.expr(dt, depth - 1)
            if r < 0.5:
                fn = rng.choice(("T.floor", "T.ceil", "T.trunc", "T.round", "T.fabs", "-",
                                 "T.exp", "T.sqrt", "T.tanh"))
                out = _float_unary(fn, a, dt)
                if out is not None:
                    return out
                continue
            b = self.expr(dt, depth - 1)
            op = rng.choice(("+", "-", "*", "/", "T.min", "T.max"))
            if op in ("+", "-"):
                mag, frac = a.mag + b.mag, max(a.frac, b.frac)
            elif op == "*":
                mag, frac = a.mag * b.mag, a.frac + b.frac
            elif op == "/":
                # a divisor at least 1 in magnitude, so the quotient stays bounded
                den = f"(T.fabs({b.text}) + T.{dt}(1))"
                return Val(f"{a.text} / {den}", dt, -a.mag, a.mag, 0, False,
                           a.finite and b.finite)
            else:
                return Val(f"{op}({a.text}, {b.text})", dt, min(a.lo, b.lo),
                           max(a.hi, b.hi), max(a.frac, b.frac), a.exact and b.exact,
                           a.finite and b.finite)
            if mag > limit:
                continue
            exact = a.exact and b.exact and _float_exact(dt, mag, frac)
            return Val(f"({a.text} {op} {b.text})", dt, -mag, mag, frac, exact,
                       a.finite and b.finite)
        return self.leaf(dt)



def _int_op(op: str, a: Val, b: Val, dt: str) -> tuple[float, float] | None:
    """The exact range of `a op b` before any wrap (None: not drawn for these operands)."""
    lo_t, hi_t = int_range(dt)
    if op == "+":
        return a.lo + b.lo, a.hi + b.hi
    if op == "-":
        return a.lo - b.hi, a.hi - b.lo
    if op == "*":
        corners = [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
        return min(corners), max(corners)
    if op in ("//", "%", "T.truncdiv", "T.truncmod"):
        # the divisor is `b | 1` (odd, never 0); the quotient is bounded by the dividend
        if not wraps(dt) and a.lo <= lo_t:
            return None  # INT_MIN // -1 overflows
        if op in ("//", "T.truncdiv"):
            return min(a.lo, -a.hi, 0), max(a.hi, -a.lo, 0)
        m = max(abs(b.lo), abs(b.hi))
        return -m, m
    if op in ("T.min", "T.max"):
        return min(a.lo, b.lo), max(a.hi, b.hi)
    if op in ("&", "|", "^", "~"):
        return lo_t, hi_t  # bitwise results: anywhere in the dtype (never an overflow)
    # shifts: left by 0..bits-1 of a value that stays in range; right by anything
    bits = int(dt.lstrip("uint"))
    if op == "<<":
        if not (0 <= b.lo and b.hi < bits):
            return None
        corners = [x * (1 << s) for x in (a.lo, a.hi) for s in (int(b.lo), int(b.hi))]
        if wraps(dt):
            return min(corners), max(corners)
        return (min(corners), max(corners)) if a.lo >= 0 else None
    return min(a.lo, 0), max(a.hi, 0)


def _int_text(op: str, a: Val, b: Val) -> str:
    if op == "~":
        return f"~({a.text})"
    divisor = op in ("//", "%", "T.truncdiv", "T.truncmod")
    # a divisor is made odd, so never zero (a division by zero is an interpreter error)
    rhs = f"T.bitwise_or({b.text}, T.{b.dtype}(1))" if divisor else b.text
    if op.startswith("T."):
        return f"{op}({a.text}, {rhs})"
    return f"({a.text} {op} {rhs})"


def _float_unary(fn: str, a: Val, dt: str) -> Val | None:
    """`fn(a)` where it is defined and bounded (None: not drawn)."""
    if fn in ("T.floor", "T.ceil", "T.trunc", "T.round"):
        if not a.exact:
            return None
        return Val(f"{fn}({a.text})", dt, math.floor(a.lo), math.ceil(a.hi), 0, True, a.finite)
    if fn == "T.fabs":
        return Val(f"T.fabs({a.text})", dt, 0, a.mag, a.frac, a.exact, a.finite)
    if fn == "-":
        return Val(f"-({a.text})", dt, -a.hi, -a.lo, a.frac, a.exact, a.finite)
    if fn == "T.exp":
        if a.mag > 8:
            return None
        return Val(f"T.exp({a.text})", dt, 0, math.exp(a.mag), 0, False, a.finite)
    if fn == "T.sqrt":
        return Val(f"T.sqrt(T.fabs({a.text}))", dt, 0, math.sqrt(a.mag) + 1, 0, False,
                   a.finite)
    return Val(f"T.tanh({a.text})", dt, -1, 1, 0, False, a.finite)


@dataclass
class ExprProgram:
    """A generated function with its extent and what its outputs hold."""

    func: object
    text: str
    outputs: dict[str, Info]
    specials: bool  # float inputs hold nan, inf and -0.0 among their values
    scalars: dict[str, int] = field(default_factory=dict)  # scalar parameters' values


def random_expr_program(seed: int) -> ExprProgram:
    """The function of `seed`: inputs of random dtypes, one to three outputs each computed by
    a random expression over the inputs and the loop variable, in a random loop."""
    rng = random.Random(seed)
    n = rng.choice(EXTENTS)
    dtypes = INTS + FLOATS + ("bool",)
    inputs = [(f"A{k}", rng.choice(dtypes)) for k in range(rng.randint(1, 3))]
    specials = rng.random() < 0.3
    kind = rng.choice(("range", "T.serial", "T.parallel", "T.vectorized", "T.unroll", "split"))
    loop_dtype = "int32" if kind == "split" else rng.choice(LOOP_DTYPES)
    # A third of the programs use the idioms (their own stream, so the other programs are
    # those the seed always gave): another loop form, mirrored indices, bfloat16 roundings.
    extra = random.Random(seed * 7919 + 29)
    idioms = loop_dtype == "int32" and extra.random() < 0.35
    # Three in ten use bit-level operations (a third stream, for the same reason).
    bits = random.Random(seed * 7907 + 13)
    # A quarter read inputs through strided views of their storage (a fourth stream).
    view_rng = random.Random(seed * 3571 + 7)
    views, decls = _views(view_rng, inputs, n) if view_rng.random() < 0.25 else ({}, [])
    # A quarter bind names: `T.Let` in expressions and `t = T.bind(v)` before stores (a fifth
    # stream).
    lets = random.Random(seed * 6007 + 11)
    gen = _Gen(rng, inputs, specials, n, loop_dtype, extra if idioms else None,
               bits if bits.random() < 0.3 else None, (view_rng, views) if views else None,
               lets if lets.random() < 0.25 else None)
    outputs, lines, infos = [], [], {}
    for k in range(rng.randint(1, 3)):
        if gen.lets is not None and gen.lets.random() < 0.4:
            name, value = gen.bind(gen.lets.randint(1, 3))
            lines.append(f"{name} = T.bind({value.text})")
        dt = rng.choice(dtypes)
        v = gen.expr(dt, rng.randint(1, MAX_DEPTH))
        name = f"B{k}"
        outputs.append((name, dt))
        if rng.random() < 0.25:
            # a store under a condition on computed values (the output keeps its input
            # values where the condition is false)
            lines += [f"if {gen.boolean(2).text}:", f"    {name}[i] = {v.text}"]
        else:
            lines.append(f"{name}[i] = {v.text}")
        infos[name] = Info("int32", 0.0) if v.exact or dt not in FLOATS else \
            Info("float16" if dt == "float16" else "float32", max(v.mag, 1.0), rounded=True)
    params = ", ".join(f'{name}: T.Buffer(({n},), "{dt}")' for name, dt in inputs + outputs)
    scalars: dict[str, int] = {}
    if idioms and kind != "split":
        body, scalars = _idiom_loop(extra, kind, n, lines)
    else:
        body = _loop(rng, kind, n, loop_dtype, lines)
    params = "".join(f"{name}: T.int32, " for name in scalars) + params
    body = "".join(line + "\n" for line in decls) + body
    text = f"@T.prim_func\ndef expr_{seed}({params}):\n{body}"
    func = parse(text)[f"expr_{seed}"]
    return ExprProgram(func, text, infos, specials, scalars)


def _views(rng: random.Random, inputs: list[tuple[str, str]], n: int
           ) -> tuple[dict[str, tuple[str, int]], list[str]]:
    """Strided views of some inputs' storage: for input `A0`, `V0` of `m` elements `s` apart
    from element `o` on (inside A0's n). Returns each input's view name and extent, and the
    declarations."""
    views: dict[str, tuple[str, int]] = {}
    decls = []
    for name, dt in inputs:
        if rng.random() < 0.5:
            continue
        stride, offset = rng.choice((1, 2, 3)), rng.randint(0, n - 1)
        extent = (n - 1 - offset) // stride + 1
        view = "V" + name[1:]
        views[name] = (view, extent)
        decls.append(f'    {view} = T.decl_buffer(({extent},), "{dt}", data={name}.data, '
                     f"strides=[{stride}], elem_offset={offset})")
    return views, decls


def _idiom_loop(rng: random.Random, kind: str, n: int, lines: list[str]
                ) -> tuple[str, dict[str, int]]:
    """The stores in a loop users write that the plain forms miss: a non-zero start
    (`T.serial(2, n)`), a step (`range(1, n, 3)`), an extent passed as a scalar parameter
    (`range(m)`, m <= n), or a `while` over a counter in a scratch buffer whose value a let
    binds (before or after the counter moves on). Returns the text and the scalars' values."""
    form = rng.choice(("start", "step", "param", "while"))
    lo, step = rng.randint(1, 3), rng.choice((1, 2, 3))
    indent = ["        " + line for line in lines]
    if form == "start":
        return "\n".join([f"    for i in {kind}({lo}, {n}):"] + indent) + "\n", {}
    if form == "step":
        return "\n".join([f"    for i in range({lo}, {n}, {step + 1}):"] + indent) + "\n", {}
    m = rng.randint(0, n)
    if form == "param":
        return "\n".join([f"    for i in {kind}(m):"] + indent) + "\n", {"m": m}
    bound = rng.choice((str(n), "m"))
    move = [f"        c[0] = c[0] + {step}"]
    head = ['    c = T.alloc_buffer((1,), "int32")', f"    c[0] = {lo - 1}",
            f"    while c[0] < {bound}:", "        i = c[0]"]
    body = indent + move if rng.random() < 0.5 else move + indent
    return "\n".join(head + body) + "\n", {"m": m} if bound == "m" else {}


def _loop(rng: random.Random, kind: str, n: int, loop_dtype: str, lines: list[str]) -> str:
    """The loop around the stores: serial, parallel, vectorized, unrolled (over a loop
    variable of `loop_dtype`), or split in two with a guard when the factor does not divide
    the extent."""
    if kind == "split":
        factor = rng.choice((2, 4, 8, 16))
        inner = rng.choice(("range", "T.vectorized", "T.unroll"))
        outer = rng.choice(("range", "T.parallel"))
        head = [f"    for io in {outer}({-(-n // factor)}):",
                f"        for ii in {inner}({factor}):",
                f"            i = io * {factor} + ii"]
        if n % factor:
            head.append(f"            if i < {n}:")
            pad = "                "
        else:
            pad = "            "
        return "\n".join(head + [pad + line for line in lines]) + "\n"
    if loop_dtype != "int32":
        kind = "T.serial" if kind == "range" else kind
        return "\n".join([f"    for i in {kind}(T.{loop_dtype}({n})):"]
                         + ["        " + line for line in lines]) + "\n"
    return "\n".join([f"    for i in {kind}({n}):"] + ["        " + line for line in lines]) \
        + "\n"


def expr_args(func: object, specials: bool, scalars: dict[str, int] | None = None) -> object:
    """Random arguments for the function (its scalar parameters, first, at `scalars`' values;
    they are 0-d arrays, as the runtime and the interpreter take them): integers anywhere in
    their dtype (the wrap-around and the sign are what is checked), floats multiples of 1/8 in
    [-4, 4] (with nan, inf, -inf and -0.0 among them when `specials`), random bools."""
    scalars = scalars or {}
    params = [(func.buffer_map[p].shape[0].value, str(func.buffer_map[p].dtype))  # type: ignore
              for p in func.params if p in func.buffer_map]  # type: ignore[attr-defined]
    values = [np.array(scalars[p.name], np.int32)  # type: ignore[attr-defined]
              for p in func.params if p not in func.buffer_map]  # type: ignore

    def make(rng: np.random.Generator) -> list[np.ndarray]:
        out = [v.copy() for v in values]
        for n, dt in params:
            if dt == "bool":
                out.append(rng.integers(0, 2, size=n).astype(np.bool_))
            elif dt in FLOATS:
                vals = rng.integers(-32, 33, size=n) / 8
                if specials:
                    odd = np.array([np.nan, np.inf, -np.inf, -0.0])
                    vals = np.where(rng.random(n) < 0.3, rng.choice(odd, size=n), vals)
                out.append(vals.astype(dt))
            else:
                info = np.iinfo(dt)
                edges = np.array([info.min, info.max, 0, 1, -1 if info.min < 0 else 2],
                                 dtype=dt)
                vals = rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)
                small = rng.integers(max(info.min, -9), min(info.max, 9) + 1, size=n).astype(dt)
                pick = rng.integers(0, 3, size=n)
                out.append(np.where(pick == 0, vals, np.where(
                    pick == 1, small, rng.choice(edges, size=n))).astype(dt))
        return out

    return make


def expr_case(seed: int) -> Program:
    """The program of `seed` as the harness takes it."""
    prog = random_expr_program(seed)
    return Program(seed, prog.func.name, prog.func,  # type: ignore[attr-defined]
                   expr_args(prog.func, prog.specials, prog.scalars), prog.outputs)
