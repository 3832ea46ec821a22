"""Layout algebra laws, checked by brute force over small random layouts (hypothesis)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tirc.ir.layout import Iter, LayoutError, Sym, TileLayout, parse_layout, parse_value
from tirc.ir.layout.symbolic import add, floordiv, mod, substitute

AXES = ("m", "laneid", "warpid")
FAST = settings(max_examples=120, deadline=None)

iters = st.builds(Iter, st.integers(1, 4), st.integers(0, 8), st.sampled_from(AXES))
replicas = st.builds(Iter, st.integers(1, 3), st.integers(0, 8), st.sampled_from(AXES))
offsets = st.dictionaries(st.sampled_from(AXES), st.integers(-3, 9), max_size=2)


@st.composite
def layouts(draw: st.DrawFn, max_iters: int = 4) -> TileLayout:
    return TileLayout(
        draw(st.lists(iters, min_size=1, max_size=max_iters)),
        draw(st.lists(replicas, max_size=2)),
        draw(offsets),
    )


@st.composite
def shaped_layouts(draw: st.DrawFn, rank: int) -> tuple[TileLayout, list[int]]:
    """A layout whose iters come in one run per dim of a random shape (so it groups)."""
    shape, shard = [], []
    for _ in range(rank):
        dim = draw(st.sampled_from((1, 2, 3, 4, 6)))
        outer = draw(st.sampled_from([d for d in range(1, dim + 1) if dim % d == 0]))
        for extent in (outer, dim // outer):
            shard.append(Iter(extent, draw(st.integers(0, 8)), draw(st.sampled_from(AXES))))
        shape.append(dim)
    layout = TileLayout(shard, draw(st.lists(replicas, max_size=1)), draw(offsets))
    return layout, shape


def norm(place: dict[str, Any] | Iterable[tuple[str, Any]]) -> tuple[tuple[str, Any], ...]:
    """A place with zero coordinates dropped (an absent axis means coordinate 0)."""
    items = place.items() if isinstance(place, dict) else place
    return tuple(sorted((a, v) for a, v in items if v != 0))


def norm_image(places: Iterable[Iterable[tuple[str, Any]]]) -> frozenset:
    return frozenset(norm(p) for p in places)


def coords(shape: Sequence[int]) -> Iterable[tuple[int, ...]]:
    return itertools.product(*(range(d) for d in shape))


def replica_sums(reps: Sequence[Iter]) -> list[dict[str, int]]:
    out = []
    for digits in itertools.product(*(range(int(it.extent)) for it in reps)):
        total: dict[str, int] = {}
        for it, d in zip(reps, digits):
            total[it.axis.name] = total.get(it.axis.name, 0) + d * int(it.stride)
        out.append(total)
    return out


def plus(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: a.get(k, 0) + b.get(k, 0) for k in a.keys() | b.keys()}


# ---- canonical form ------------------------------------------------------------------------


@FAST
@given(layouts())
def test_canonicalize_keeps_the_map_and_is_idempotent(layout: TileLayout) -> None:
    canon = layout.canonicalize()
    assert canon.size() == layout.size()
    for axis in AXES:
        assert canon.span(axis) == layout.span(axis)
    for c in range(int(layout.size())):
        assert norm(canon.apply(c)) == norm(layout.apply(c))
        assert norm_image(canon.image(c)) == norm_image(layout.image(c))
    assert canon.canonicalize().structural_equal(canon)
    assert canon == layout and hash(canon) == hash(layout)


def thread_view(place: Iterable[tuple[str, Any]]) -> tuple[int, int]:
    p = dict(place)
    return p.get("m", 0), p.get("laneid", 0) + 32 * p.get("warpid", 0) + p.get("tx", 0)


@FAST
@given(layouts())
def test_gpu_canonicalize_fuses_lane_and_warp_into_tx(layout: TileLayout) -> None:
    fused = layout.canonicalize("cuda")
    assert fused.canonicalize("cuda").structural_equal(fused)
    for c in range(int(layout.size())):
        want = {thread_view(p) for p in layout.image(c)}
        assert {thread_view(p) for p in fused.image(c)} == want


# ---- printing ------------------------------------------------------------------------------


@FAST
@given(layouts())
def test_printing_round_trips(layout: TileLayout) -> None:
    assert parse_layout(str(layout)).structural_equal(layout)
    assert parse_layout(layout.script()).structural_equal(layout)
    canon = layout.canonicalize("cuda")
    assert parse_layout(str(canon)).structural_equal(canon)


# ---- group ---------------------------------------------------------------------------------


def factorizations(n: int, parts: int) -> list[list[int]]:
    if parts == 1:
        return [[n]]
    return [[d, *rest] for d in range(1, n + 1) if n % d == 0
            for rest in factorizations(n // d, parts - 1)]


@FAST
@given(layouts(), st.integers(1, 3), st.randoms(use_true_random=False))
def test_group_then_apply_equals_flatten_then_split(layout: TileLayout, rank: int,
                                                    rnd: Any) -> None:
    shape = rnd.choice(factorizations(int(layout.size()), rank))
    try:
        grouped, seps = layout.group(shape)
    except LayoutError:
        return
    assert len(seps) == len(shape) + 1 and seps[0] == 0 and seps[-1] == len(grouped.shard)
    for d, dim in enumerate(shape):
        assert math.prod(int(it.extent) for it in grouped.shard[seps[d]:seps[d + 1]]) == dim
    for coord in coords(shape):
        flat = 0
        for c, dim in zip(coord, shape):
            flat = flat * dim + c
        digits: list[int] = []
        for d, c in enumerate(coord):
            run = grouped.shard[seps[d]:seps[d + 1]]
            for k, it in enumerate(run):
                inner = math.prod(int(x.extent) for x in run[k + 1:])
                digits.append(c // inner % int(it.extent) if k else c // inner)
        assert norm(grouped.apply(*digits)) == norm(layout.apply(flat))
        assert layout.apply(*coord, shape=shape) == layout.apply(flat)


# ---- tile and direct sum -------------------------------------------------------------------


@FAST
@given(st.integers(1, 2).flatmap(lambda r: st.tuples(shaped_layouts(r), shaped_layouts(r))))
def test_tile_law(pair: tuple[tuple[TileLayout, list[int]], tuple[TileLayout, list[int]]]) -> None:
    (inner, inner_shape), (outer, outer_shape) = pair
    tiled = inner.tile(outer, outer_shape, inner_shape)
    inner_c, outer_c = inner.canonicalize(), outer.canonicalize()
    scaled_axes = {it.axis.name for it in inner_c.group(inner_shape)[0].shard}
    scale = {a: int(inner_c.span(a)) if a in scaled_axes else 1 for a in AXES}
    full = [o * i for o, i in zip(outer_shape, inner_shape)]
    reps = replica_sums(inner_c.replica + outer_c.replica)
    for xo in coords(outer_shape):
        f_outer = plus(outer.apply(*xo, shape=outer_shape), {})
        shard_part = plus(f_outer, {a: -v for a, v in outer.offsets.items()})
        for xi in coords(inner_shape):
            base = plus(inner.apply(*xi, shape=inner_shape), outer.offsets)
            base = plus(base, {a: v * scale[a] for a, v in shard_part.items()})
            x = [o * n + i for o, i, n in zip(xo, xi, inner_shape)]
            assert norm(tiled.apply(*x, shape=full)) == norm(base)
            want = {norm(plus(base, r)) for r in reps}
            assert norm_image(tiled.image(*x, shape=full)) == want


@FAST
@given(st.integers(1, 2).flatmap(lambda r: st.tuples(shaped_layouts(r), shaped_layouts(r))))
def test_direct_sum_law(pair: tuple[tuple[TileLayout, list[int]],
                                    tuple[TileLayout, list[int]]]) -> None:
    (right, right_shape), (left, left_shape) = pair
    total = right.direct_sum(left, left_shape, right_shape)
    full = [a * b for a, b in zip(left_shape, right_shape)]
    for xa in coords(left_shape):
        for xb in coords(right_shape):
            want = plus(left.apply(*xa, shape=left_shape), right.apply(*xb, shape=right_shape))
            x = [a * n + b for a, b, n in zip(xa, xb, right_shape)]
            assert norm(total.apply(*x, shape=full)) == norm(want)


# ---- slice ---------------------------------------------------------------------------------


@st.composite
def sliced_cases(draw: st.DrawFn) -> tuple[TileLayout, list[int], list[tuple[int, int]]]:
    layout, shape = draw(st.integers(1, 2).flatmap(shaped_layouts))
    region = []
    for dim in shape:
        begin = draw(st.integers(0, dim - 1))
        region.append((begin, draw(st.integers(begin + 1, dim))))
    return layout, shape, region


@settings(max_examples=250, deadline=None)
@given(sliced_cases())
def test_slice_agrees_with_the_original_on_the_region(
        case: tuple[TileLayout, list[int], list[tuple[int, int]]]) -> None:
    layout, shape, region = case
    try:
        sliced = layout.slice(shape, region)
    except LayoutError:
        return
    extents = [end - begin for begin, end in region]
    assert sliced.size() == math.prod(extents)
    for y in coords(extents):
        x = [b + v for (b, _), v in zip(region, y)]
        assert norm(sliced.apply(*y, shape=extents)) == norm(layout.apply(*x, shape=shape))
        assert norm_image(sliced.image(*y, shape=extents)) == norm_image(
            layout.image(*x, shape=shape))


def test_slice_succeeds_where_expressible() -> None:
    """Rows run over (4, 2):(1@laneid, 16): a row range is a tile layout when it has one
    element or starts on an even row with an even length (18 of 36); columns always are."""
    layout = parse_layout("S[(4, 2, 4):(1@laneid, 16, 2)] + R[2:1@warpid]")
    done = 0
    for region in itertools.product(
        [(b, e) for b in range(8) for e in range(b + 1, 9)], [(0, 4), (1, 3), (2, 3)]
    ):
        try:
            sliced = layout.slice([8, 4], list(region))
        except LayoutError:
            continue
        done += 1
        extents = [e - b for b, e in region]
        for y in coords(extents):
            x = [b + v for (b, _), v in zip(region, y)]
            assert sliced.apply(*y, shape=extents) == layout.apply(*x, shape=[8, 4])
    assert done == 18 * 3


# ---- packing -------------------------------------------------------------------------------


@FAST
@given(layouts(), st.integers(1, 4))
def test_unpack_then_pack(layout: TileLayout, n: int) -> None:
    unpacked = layout.unpack(n)
    for c in range(int(layout.size())):
        for k in range(n):
            want = dict(layout.apply(c))
            want["m"] = want.get("m", 0) * n + k
            assert norm(unpacked.apply(c * n + k)) == norm(want)
    assert unpacked.pack(n) == layout


# ---- symbolic values -----------------------------------------------------------------------

NAMES = ("a", "b")


@st.composite
def expressions(draw: st.DrawFn, depth: int = 3) -> tuple[Any, str]:
    """A random integer expression as (value, text)."""
    if depth == 0 or draw(st.booleans()):
        if draw(st.booleans()):
            n = draw(st.integers(-6, 9))
            return n, f"({n})"
        name = draw(st.sampled_from(NAMES))
        return Sym.var(name), name
    op = draw(st.sampled_from(("+", "-", "*", "//", "%")))
    lhs, lt = draw(expressions(depth - 1))
    if op in ("//", "%"):
        if draw(st.booleans()):
            d = draw(st.integers(1, 8))
            rhs, rt = d, str(d)
        else:
            name = draw(st.sampled_from(NAMES))
            rhs, rt = Sym.var(name), name
    else:
        rhs, rt = draw(expressions(depth - 1))
    value = {"+": lambda: lhs + rhs, "-": lambda: lhs - rhs, "*": lambda: lhs * rhs,
             "//": lambda: floordiv(lhs, rhs), "%": lambda: mod(lhs, rhs)}[op]()
    return value, f"({lt} {op} {rt})"


@settings(max_examples=300, deadline=None)
@given(expressions(), st.integers(1, 7), st.integers(1, 7))
@example((floordiv(add(2, floordiv(Sym.var("a"), 2)), 2), "(((2) + (a // 2)) // 2)"), 1, 1)
def test_symbolic_arithmetic_matches_integers(expr: tuple[Any, str], a: int, b: int) -> None:
    value, text = expr
    assert substitute(value, {"a": a, "b": b}) == eval(text, {}, {"a": a, "b": b})
    assert parse_value(text) == value
    assert parse_value(str(value)) == value
