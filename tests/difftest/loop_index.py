"""Stages of the random loop functions from a stream of their own (one program in five gets
one, after every other stage): integer division and remainder of values that go negative, in
index expressions and in values, where flooring and truncating differ.

- `div_index`: out[vi, vj] = src[vi, q(vj)] with q(j) = op(a * j + e * vi + b, c) + d (op
  one of floordiv, floormod, truncdiv, truncmod; b and c of either sign), or q of an int32
  input element instead of j (a data-dependent index), sometimes divided again; d shifts
  the indices computed here exactly into the row, so every load is in bounds;
- `guarded`: the same index shifted only part of the way, its load under
  `T.if_then_else(0 <= q and q < L and side, src[vi, q], pad)` (or nested `T.if_then_else`s):
  the untaken side is out of bounds, which TVM never evaluates; `side` is a further
  condition (`floormod(vj, 2) == 0`, `vi < 1`, a `truncmod` test) that is not about bounds;
- `select_side`: `T.Select(side, src[vi, q1], src[vi, q2])`, both loads in bounds (a Select
  evaluates both operands), the condition a division or remainder of negative values;
- `div_value`: int32 out = op(src - k, c) of input values in [-8, 8], c of either sign;
- `rotate`: out[vi, floormod(vj + s, n)] = src[vi, vj] (s of either sign, n the row's
  length, maybe symbolic): a store through a remainder, each element written once, so a
  parallel or vectorized loop over vj does not race.

Every stage runs in a random nest (`gen.emit`: split, fused, vectorized, parallel loops).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tirc.ir import BufferStore, IntImm, IterKind, PrimExpr, Var, binop, cast
from tirc.ir import expr as E
from tirc.ir.dtype import dtype

from difftest.values import INPUT_INFO, Info

if TYPE_CHECKING:
    from difftest.loop_programs import Dim, _Gen

DIV_OPS = ("floordiv", "floormod", "truncdiv", "truncmod")
WIDTHS = (1, 2, 3, 4, 5, 7, 8, 12, 16)


def stage_index(gen: _Gen) -> None:
    """One of the stages above, drawn from `gen.rng` (the stage's own stream)."""
    pick = gen.rng.choice((stage_div_index, stage_guarded, stage_select_side,
                           stage_div_value, stage_rotate))
    pick(gen)


def divide(op: str, x: int, c: int) -> int:
    """`op` of Python ints as TVM defines it (floor: toward minus infinity; trunc: toward
    zero, the remainder taking the sign of the dividend)."""
    if op == "floordiv":
        return x // c
    if op == "floormod":
        return x % c
    q = abs(x) // abs(c)
    q = -q if (x < 0) != (c < 0) else q
    return q if op == "truncdiv" else x - c * q


def _divisor(gen: _Gen) -> int:
    return gen.rng.choice((2, 3, 4, 5, -2, -3, 7))


def _index(gen: _Gen, rows: Dim, width: Dim, vi: Var, vj: Var
           ) -> tuple[PrimExpr, list[int]]:
    """q = op(a * x + e * vi + b, c) of x = vj, or of x an element of a new int32 input at
    (vi, vj) (values in [-8, 8]), sometimes divided again (op2(q + b2, c2)); and q's values
    over every x (and every vi; e is 0 unless the rows are static)."""
    r = gen.rng
    idx = gen.index
    op, c = r.choice(DIV_OPS), _divisor(gen)
    a, b = r.choice((1, 1, -1, 2, 3)), r.randint(-9, 4)
    e = r.choice((0, 0, 1, -1, 2)) if rows.static else 0
    x: PrimExpr
    if r.random() < 0.3:
        ids = gen.tensor((rows, width), "int32", INPUT_INFO["int32"], "in")
        x, xs = cast(str(idx), ids.buf.vload(vi, vj)), range(-8, 9)
    else:
        x, xs = vj, range(width.value or width.expr.value)
    inner = binop("add", binop("mul", x, IntImm(a, idx)), IntImm(b, idx))
    ys = range(rows.expr.value) if e else range(1)
    if e:
        inner = binop("add", inner, binop("mul", vi, IntImm(e, idx)))
    q = binop(op, inner, IntImm(c, idx))
    values = [divide(op, a * v + e * y + b, c) for v in xs for y in ys]
    if r.random() < 0.35:
        op2, c2, b2 = r.choice(DIV_OPS), _divisor(gen), r.randint(-5, 2)
        q = binop(op2, binop("add", q, IntImm(b2, idx)), IntImm(c2, idx))
        values = [divide(op2, v + b2, c2) for v in values]
    return q, values


def _shifted(gen: _Gen, q: PrimExpr, d: int) -> PrimExpr:
    return binop("add", q, IntImm(d, gen.index)) if d else q


def _setup(gen: _Gen) -> tuple[Dim, Dim, Var, Var]:
    """The rows (any dim of the program) and a static width, with the block's variables."""
    from difftest.loop_programs import Dim

    rows = gen.dim()
    width = Dim(IntImm(gen.rng.choice(WIDTHS), gen.index), 0)
    return rows, width, Var("vi", gen.index), Var("vj", gen.index)


def _pad(dt: str, k: int) -> PrimExpr:
    return IntImm(k, dtype(dt)) if dt == "int32" else E.const(k / 2, dt)


def stage_div_index(gen: _Gen) -> None:
    """out[vi, vj] = src[vi, q + d], every q + d in [0, L)."""
    from difftest.loop_programs import Dim

    r = gen.rng
    dt = r.choice(("float32", "float32", "int32"))
    rows, width, vi, vj = _setup(gen)
    q, values = _index(gen, rows, width, vi, vj)
    d = -min(values) + r.choice((0, 0, 1))
    length = Dim(IntImm(max(values) + d + 1 + r.choice((0, 1)), gen.index), 0)
    src = gen.input((rows, length), dt)
    out = gen.tensor((rows, width), dt, src.info, "out")
    gen.emit(out, [vi, vj], (rows, width), [IterKind.SPATIAL] * 2,
             BufferStore(out.buf, src.buf.vload(vi, _shifted(gen, q, d)), (vi, vj)))


def _side(gen: _Gen, vi: Var, vj: Var) -> PrimExpr:
    """A condition that is not about bounds."""
    idx = gen.index
    pick = gen.rng.randrange(3)
    if pick == 0:
        return binop("eq", binop("floormod", vj, IntImm(2, idx)), IntImm(0, idx))
    if pick == 1:
        return binop("lt", vi, IntImm(1, idx))
    shifted = binop("sub", vj, IntImm(gen.rng.randint(1, 5), idx))
    return binop("ne", binop("truncmod", shifted, IntImm(3, idx)), IntImm(0, idx))


def stage_guarded(gen: _Gen) -> None:
    """out[vi, vj] = T.if_then_else(0 <= q' < L [and side], src[vi, q'], pad), q' = q + d
    with some q' outside [0, L): the load runs only where the condition holds."""
    from difftest.loop_programs import Dim

    r = gen.rng
    dt = r.choice(("float32", "int32"))
    rows, width, vi, vj = _setup(gen)
    q, values = _index(gen, rows, width, vi, vj)
    d = -min(values) + r.randint(-2, 1)
    top = max(values) + d
    length = Dim(IntImm(max(1, top + 1 + r.randint(-2, 0)), gen.index), 0)
    src = gen.input((rows, length), dt)
    at = _shifted(gen, q, d)
    zero = IntImm(0, gen.index)
    low, high = binop("le", zero, at), binop("lt", at, length.expr)
    pad = _pad(dt, r.randint(-3, 3))
    load = src.buf.vload(vi, at)
    if r.random() < 0.3:
        inner = E.call("if_then_else", high, load, pad, dt=dt)
        value = E.call("if_then_else", low, inner, pad, dt=dt)
    else:
        cond = binop("and", low, high)
        if r.random() < 0.5:
            side = _side(gen, vi, vj)
            cond = binop("and", side, cond) if r.random() < 0.5 else binop("and", cond, side)
        value = E.call("if_then_else", cond, load, pad, dt=dt)
    out = gen.tensor((rows, width), dt, src.info.with_(mag=max(src.info.mag, 2.0)), "out")
    gen.emit(out, [vi, vj], (rows, width), [IterKind.SPATIAL] * 2,
             BufferStore(out.buf, value, (vi, vj)))


def stage_select_side(gen: _Gen) -> None:
    """out[vi, vj] = T.Select(op(vj + b, c) cmp k [and side], src[vi, q1], src[vi, q2]), both
    indices shifted into the row (a Select evaluates both operands)."""
    from difftest.loop_programs import Dim

    r = gen.rng
    dt = r.choice(("float32", "int32"))
    rows, width, vi, vj = _setup(gen)
    q1, v1 = _index(gen, rows, width, vi, vj)
    q2, v2 = _index(gen, rows, width, vi, vj)
    d1, d2 = -min(v1), -min(v2)
    length = Dim(IntImm(max(max(v1) + d1, max(v2) + d2) + 1, gen.index), 0)
    src = gen.input((rows, length), dt)
    idx = gen.index
    op, c = r.choice(DIV_OPS), _divisor(gen)
    test = binop(op, binop("add", vj, IntImm(r.randint(-7, 2), idx)), IntImm(c, idx))
    cond = binop(r.choice(("lt", "eq", "ge")), test, IntImm(r.randint(-2, 1), idx))
    if r.random() < 0.4:
        cond = binop("and", cond, _side(gen, vi, vj))
    value = E.select(cond, src.buf.vload(vi, _shifted(gen, q1, d1)),
                     src.buf.vload(vi, _shifted(gen, q2, d2)))
    out = gen.tensor((rows, width), dt, src.info, "out")
    gen.emit(out, [vi, vj], (rows, width), [IterKind.SPATIAL] * 2,
             BufferStore(out.buf, value, (vi, vj)))


def stage_div_value(gen: _Gen) -> None:
    """int32 out[v] = op(src[v] - k, c) (op of values of either sign), or of two of them."""
    r = gen.rng
    src = gen.source("int32")
    if src.info.mag > 1e6:
        return
    dims = src.dims
    iv = [Var(f"v{k}", gen.index) for k in range(len(dims))]
    op, c = r.choice(DIV_OPS), _divisor(gen)
    x = binop("sub", src.buf.vload(*iv), IntImm(r.randint(-3, 3), dtype("int32")))
    value = binop(op, x, IntImm(c, dtype("int32")))
    mag = src.info.mag + 3 if op in ("floordiv", "truncdiv") else abs(c)
    if r.random() < 0.4:
        op2, c2 = r.choice(DIV_OPS), _divisor(gen)
        value = binop("add", value, binop(op2, src.buf.vload(*iv), IntImm(c2, dtype("int32"))))
        mag += src.info.mag + abs(c2)
    out = gen.tensor(dims, "int32", Info("int32", mag), "out")
    gen.emit(out, iv, dims, [IterKind.SPATIAL] * len(dims),
             BufferStore(out.buf, value, tuple(iv)))


def stage_rotate(gen: _Gen) -> None:
    """out[vi, floormod(vj + s, n)] = src[vi, vj] * k, a row rotated by s (either sign)."""
    r = gen.rng
    dt = r.choice(("float32", "int32"))
    src = gen.source(dt, rank=2)
    rows, cols = src.dims
    vi, vj = Var("vi", gen.index), Var("vj", gen.index)
    shift = binop("add", vj, IntImm(r.choice((-3, -1, 1, 2, 5)), gen.index))
    at = binop("floormod", shift, cols.expr)
    k = r.choice((1, 2, -1))
    value = binop("mul", src.buf.vload(vi, vj), _pad(dt, 2 * k) if dt != "int32" else
                  IntImm(k, dtype(dt)))
    out = gen.tensor((rows, cols), dt, src.info.with_(mag=src.info.mag * 2), "out")
    gen.emit(out, [vi, vj], (rows, cols), [IterKind.SPATIAL] * 2,
             BufferStore(out.buf, value, (vi, at)))
