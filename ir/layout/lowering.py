"""Layouts lowered to index expressions: the physical form of a logical buffer access.

`lower_buffer_layout(layout, shape, env)` prepares one buffer: its storage axes and size as
expressions (the storage model of `storage`), and how a logical index splits into the
layout's digits. Then, for the index expressions of one access,
`place(indices)` gives the base coordinate on each axis (`{"tid": i, "m": 16 * k + j}`),
`copies()` the replica deltas added to it, and `offset(place)` the flat storage offset,
swizzled for a `ComposeLayout`.

Symbols of the layout (`K`, `N`) become the expressions `env` maps their names to (the
function's symbolic sizes). The index splits per dimension when the layout groups by the
buffer's shape, and over the row-major flattened index otherwise. A symbolic shape that
groups only when a size divides evenly (`S[(K, N // 16, 16):(16, 16 * K, 1)]` over `(K, N)`
needs `N % 16 == 0`) groups under that assumption, which is returned in `requirements` for the
caller to check at run time; so is a size equality that cannot be proved at compile time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any

from tirc.ir import intrinsics as intrin
from tirc.ir.dtype import DType
from tirc.ir.expr import BinOp, Call, Cast, IntImm, PrimExpr, Var, binop, const, index_dtype
from tirc.ir.layout.axes import MEMORY
from tirc.ir.layout.errors import LayoutError
from tirc.ir.layout.iters import Iter
from tirc.ir.layout.storage import (
    Layout,
    grouped_digits,
    storage_axes,
    tile_of,
)
from tirc.ir.layout.swizzle import ComposeLayout
from tirc.ir.layout.symbolic import (
    OpAtom,
    Sym,
    Value,
    floordiv,
    format_value,
    mod,
    mul,
    prove_equal,
    sub,
    substitute,
)
from tirc.ir.layout.symbolic import add as vadd
from tirc.ir.layout.tile_layout import TileLayout
from tirc.ir.lean_dataclass import dataclass

_VALUE_OPS = {"add": vadd, "sub": sub, "mul": mul, "floordiv": floordiv, "floormod": mod}


# ---- small folding constructors (the printed IR stays readable before simplify) ----------


def _int(e: PrimExpr) -> int | None:
    return e.value if isinstance(e, IntImm) and e.dtype.lanes == 1 else None


def e_add(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """a + b without `+ 0`, constants folded."""
    if _int(a) == 0:
        return b
    if _int(b) == 0:
        return a
    if _int(a) is not None and _int(b) is not None:
        return const(_int(a) + _int(b), index_dtype(a, b))  # type: ignore[operator]
    return binop("add", a, b)


def e_mul(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """a * b without `* 1`, `* 0` and constant products."""
    for x, y in ((a, b), (b, a)):
        if _int(x) == 1:
            return y
        if _int(x) == 0:
            return const(0, index_dtype(a, b))
    if _int(a) is not None and _int(b) is not None:
        return const(_int(a) * _int(b), index_dtype(a, b))  # type: ignore[operator]
    if _int(a) is not None:
        a, b = b, a
    return binop("mul", a, b)


def e_div(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """Floor division without `// 1`."""
    if _int(b) == 1:
        return a
    return binop("floordiv", a, b)


def e_mod(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """Floor modulo; `x % 1` is 0."""
    if _int(b) == 1:
        return const(0, index_dtype(a, b))
    return binop("floormod", a, b)


def split_index(x: PrimExpr, extents: Sequence[PrimExpr]) -> list[PrimExpr]:
    """Row-major digits of `x` over `extents`; the outermost digit keeps the quotient."""
    digits: list[PrimExpr] = [x] * len(extents)
    for k in range(len(extents) - 1, 0, -1):
        digits[k] = e_mod(x, extents[k])
        x = e_div(x, extents[k])
    if extents:
        digits[0] = x
    return digits


# ---- values <-> expressions ----------------------------------------------------------------


def value_expr(v: Value, env: Mapping[str, PrimExpr], dt: DType) -> PrimExpr:
    """A layout value as an index expression; its symbols become `env`'s expressions."""
    if isinstance(v, int):
        return const(v, dt)
    missing = sorted(v.names() - set(env))
    if missing:
        raise LayoutError(f"symbol '{missing[0]}' is not a symbolic size of the function")
    out = substitute(v, env)
    return out if isinstance(out, PrimExpr) else const(out, dt)


def expr_value(e: PrimExpr) -> Value | None:
    """An index expression as a layout value (names for variables), or None if it has none."""
    if isinstance(e, IntImm) and e.dtype.is_int:
        return e.value
    if isinstance(e, Var) and e.name.isidentifier():
        return Sym.var(e.name)
    if isinstance(e, Cast) and e.dtype.is_int:
        return expr_value(e.value)
    if isinstance(e, BinOp) and e.op in _VALUE_OPS:
        a, b = expr_value(e.a), expr_value(e.b)
        if a is None or b is None:
            return None
        try:
            return _VALUE_OPS[e.op](a, b)
        except LayoutError:
            return None
    return None


def _divisibility_candidates(tile: TileLayout) -> dict[str, int]:
    """Names `X` that the shard divides as `X // c`, with c: grouping may assume `X % c == 0`."""
    out: dict[str, int] = {}
    for it in tile.shard:
        if not isinstance(it.extent, Sym):
            continue
        for mono, _ in it.extent.terms:
            for atom in mono:
                if (isinstance(atom, OpAtom) and atom.op == "//" and isinstance(atom.rhs, int)
                        and isinstance(atom.lhs, Sym) and len(atom.lhs.names()) == 1
                        and atom.lhs == Sym.var(next(iter(atom.lhs.names())))):
                    name = next(iter(atom.lhs.names()))
                    out[name] = math.lcm(out.get(name, 1), atom.rhs)
    return out


# ---- one buffer ----------------------------------------------------------------------------


@dataclass
class LoweredLayout:
    """How the accesses of one buffer with a layout map to its flat storage."""

    layout: Layout
    shape: tuple[PrimExpr, ...]
    env: Mapping[str, PrimExpr]
    dtype: DType
    groups: list[tuple[Iter, ...]] | None
    axes: list[tuple[str, PrimExpr]]
    size: PrimExpr
    requirements: list[tuple[PrimExpr, str]] = field(default_factory=list)

    @property
    def tile(self) -> TileLayout:
        return tile_of(self.layout)

    def expr(self, v: Value) -> PrimExpr:
        return value_expr(v, self.env, self.dtype)

    def place(self, indices: Sequence[PrimExpr]) -> dict[str, PrimExpr]:
        """The base coordinate on each axis of the element at `indices`."""
        if len(indices) != len(self.shape):
            raise LayoutError(f"{len(indices)} indices for a buffer of {len(self.shape)} "
                              f"dimensions")
        if self.groups is not None:
            pairs = []
            for group, x in zip(self.groups, indices):
                digits = split_index(x, [self.expr(it.extent) for it in group])
                pairs += list(zip(group, digits))
        else:
            flat: PrimExpr = const(0, self.dtype)
            for x, d in zip(indices, self.shape):
                flat = e_add(e_mul(flat, d), x)
            shard = self.tile.shard
            pairs = list(zip(shard, split_index(flat, [self.expr(it.extent) for it in shard])))
        out: dict[str, PrimExpr] = {}
        for it, digit in pairs:
            term = e_mul(digit, self.expr(it.stride))
            name = it.axis.name
            out[name] = e_add(out[name], term) if name in out else term
        for axis, value in self.tile.offset:
            out[axis] = e_add(out[axis], self.expr(value)) if axis in out else self.expr(value)
        return out

    def copies(self) -> list[dict[str, PrimExpr]]:
        """The replica deltas {axis: delta}, one per copy, the base (no delta) first."""
        deltas: list[dict[str, PrimExpr]] = [{}]
        for it in self.tile.replica:
            if not isinstance(it.extent, int):
                raise LayoutError(f"replica extent {format_value(it.extent)} must be a constant")
            stride, name = self.expr(it.stride), it.axis.name
            grown = []
            for delta in deltas:
                for r in range(it.extent):
                    step = e_mul(const(r, self.dtype), stride)
                    grown.append({**delta, name: e_add(delta[name], step) if name in delta
                                  else step})
            deltas = grown
        return deltas

    def scales(self) -> dict[str, PrimExpr]:
        """Each storage axis's multiplier in the flat offset (`m` has 1)."""
        out: dict[str, PrimExpr] = {}
        scale = const(1, self.dtype)
        for name, length in reversed(self.axes):
            out[name] = scale
            scale = e_mul(scale, length)
        return out

    def offset(self, place: Mapping[str, PrimExpr]) -> PrimExpr:
        """The flat storage offset of a physical place, outermost storage axis first."""
        scale = self.scales()
        total: PrimExpr | None = None
        for name, _ in self.axes:
            if name not in place:
                continue
            value = place[name]
            if name == MEMORY.name and isinstance(self.layout, ComposeLayout):
                value = swizzle_expr(self.layout, value)
            term = e_mul(value, scale[name])
            total = term if total is None else e_add(total, term)
        return total if total is not None else const(0, self.dtype)


def swizzle_expr(layout: ComposeLayout, m: PrimExpr) -> PrimExpr:
    """`ComposeLayout.swizzle` as an index expression (XOR as a `bitwise_xor` intrinsic)."""
    if layout.swizzle_len == 0:
        return m
    dt = m.dtype
    unit = const(1 << layout.per_element, dt)
    x, low = e_div(m, unit), e_mod(m, unit)
    atom, width = const(1 << layout.atom_len, dt), const(1 << layout.swizzle_len, dt)
    if layout.swizzle_inner:
        key = e_mod(e_div(x, atom), width)
    else:
        key = e_mul(e_mod(x, width), atom)
    return e_add(e_mul(Call(intrin.BITWISE_XOR, (x, key), dt), unit), low)


def lower_buffer_layout(layout: Layout, shape: Sequence[PrimExpr],
                        env: Mapping[str, PrimExpr]) -> LoweredLayout:
    """Prepare the accesses of a buffer of `shape` stored with `layout` (see the module doc)."""
    shape = tuple(shape)
    dt = index_dtype(*shape) if shape else index_dtype()
    tile = tile_of(layout)
    axes = [(name, value_expr(length, env, dt)) for name, length in storage_axes(layout)]
    size: PrimExpr = const(1, dt)
    for _, length in axes:
        size = e_mul(size, length)
    low = LoweredLayout(layout, shape, env, dt, None, axes, size)
    dims = [expr_value(d) for d in shape]
    if all(d is not None for d in dims):
        _group(low, tile, dims)  # type: ignore[arg-type]
    if low.groups is None:
        _check_size(low, tile, dims)
    return low


def _group(low: LoweredLayout, tile: TileLayout, dims: list[Value]) -> None:
    low.groups = grouped_digits(tile, dims)
    if low.groups is not None:
        return
    assume = _divisibility_candidates(tile)
    if not assume:
        return
    env = {name: mul(c, floordiv(Sym.var(name), c)) for name, c in assume.items()}
    low.groups = grouped_digits(tile, [substitute(d, env) for d in dims])
    if low.groups is None:
        return
    for name, c in sorted(assume.items()):
        if name in low.env:
            cond = binop("eq", e_mod(low.env[name], const(c, low.env[name].dtype)), 0)
            low.requirements.append((cond, f"{name} % {c} == 0"))


def _check_size(low: LoweredLayout, tile: TileLayout, dims: list[Value | None]) -> None:
    """A flattened index needs as many layout elements as buffer elements."""
    size = tile.size()
    count: Any = 1
    for d in dims:
        count = None if d is None or count is None else mul(count, d)
    if count is not None and prove_equal(size, count):
        return
    if isinstance(size, int) and isinstance(count, int):
        raise LayoutError(f"layout {low.layout} holds {size} elements but the buffer has "
                          f"{count}")
    elements: PrimExpr = const(1, low.dtype)
    for d in low.shape:
        elements = e_mul(elements, d)
    cond = binop("eq", low.expr(size), elements)
    low.requirements.append((cond, f"{format_value(size)} == the buffer's element count"))
