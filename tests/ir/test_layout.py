"""Layout algebra: every worked example of LAYOUTS.md, plus parsing, printing and errors."""

from __future__ import annotations

import pytest
from tirc.ir.layout import (
    AxisKind,
    ComposeLayout,
    Iter,
    LayoutError,
    Sym,
    TileLayout,
    get_axis,
    parse_layout,
    parse_value,
    register_device_axis,
)
from tirc.ir.layout.symbolic import substitute

TC = "S[(8,2,4,2):(4@laneid,1@warpid,1@laneid,1)] + R[2:4@warpid] + 5@warpid"


def L(text: str) -> TileLayout:
    layout = parse_layout(text)
    assert isinstance(layout, TileLayout)
    return layout


# ---- LAYOUTS.md worked examples ----------------------------------------------------------------


def test_tensor_core_example_apply_and_image() -> None:
    layout = L(TC)
    assert layout.apply(7, 15, shape=(8, 16)) == {"laneid": 31, "warpid": 6, "m": 1}
    assert layout.image(7, 15, shape=(8, 16)) == {
        (("laneid", 31), ("m", 1), ("warpid", 6)),
        (("laneid", 31), ("m", 1), ("warpid", 10)),
    }
    for i in range(8):
        for j in range(16):
            want = {"laneid": 4 * i + (j % 8) // 2, "warpid": j // 8 + 5, "m": j % 2}
            assert layout.apply(i, j, shape=(8, 16)) == want
            assert layout.apply(i * 16 + j) == want


@pytest.mark.parametrize(("text", "canonical"), [
    ("S[(8,8,8,4,2):(512,64,8,2,1)]", "S[4096:1]"),
    ("S[(8,2,3,6):(6,24,6,1)]", "S[(8, 2, 18):(6, 24, 1)]"),
    ("S[(8,4):(4@laneid,1)]", "S[(8, 4):(4@laneid, 1)]"),
])
def test_canonicalize_examples(text: str, canonical: str) -> None:
    assert str(L(text).canonicalize()) == canonical
    assert L(text) == L(canonical)


def test_group_example() -> None:
    grouped, seps = L("S[(32,2):(1@laneid,1)]").group([8, 8])
    assert grouped.structural_equal(L("S[(8,4,2):(4@laneid,1@laneid,1)]"))
    assert seps == [0, 1, 3]


def test_tile_example() -> None:
    tiled = L("S[(2,4):(1,2)]").tile(L("S[(8,8):(8,1)]"), [8, 8], [2, 4])
    assert tiled.structural_equal(L("S[(8,2,32):(64,1,2)]"))


def test_slice_example() -> None:
    sliced = L("S[(8,8):(8,1)]").slice([64], [(5, 8)])
    assert str(sliced) == "S[3:1] + 5"


def test_swizzle_example() -> None:
    layout = ComposeLayout(3, 3, 3, L("S[(8,64):(64,1)]"))
    for i in range(8):
        for j in range(64):
            assert layout.apply(i, j, shape=(8, 64)) == {"m": 64 * i + (j ^ ((i & 7) << 3))}
    assert sorted(layout.apply(c)["m"] for c in range(512)) == list(range(512))


def test_size_and_span() -> None:
    layout = L(TC)
    assert layout.size() == 128
    assert layout.size("laneid") == 32
    assert layout.size("warpid") == 2
    assert layout.span("laneid") == 32
    assert layout.span("warpid") == 1 + 1 + 4 + 5
    assert layout.span() == 2
    assert L("S[(8,4,2):(4@laneid,1@laneid,1)]").span() == 2
    assert L("S[(32,4):(1@laneid,1@warpid)]").span() == 1
    assert L("S[64:1] + 3").span("m") == 67


# ---- canonical form and equality ---------------------------------------------------------------


def test_canonicalize_drops_units_and_zero_offsets() -> None:
    assert str(L("S[(1,4,1):(7,1,3)] + 0@laneid").canonicalize()) == "S[4:1]"
    assert str(L("S[(1,1):(5@laneid,3)]").canonicalize()) == "S[1:1@laneid]"
    assert str(L("S[4:1] + R[1:8@warpid]").canonicalize()) == "S[4:1]"


def test_replica_order_does_not_matter() -> None:
    a = L("S[4:1] + R[(2, 2):(4@warpid, 1@laneid)]")
    b = L("S[4:1] + R[(2, 2):(1@laneid, 4@warpid)]")
    assert a == b and hash(a) == hash(b)
    assert not a.structural_equal(b)
    assert str(a.canonicalize()) == str(b.canonicalize())


def test_equality_and_hash() -> None:
    assert L("S[(8,8):(8,1)]") == L("S[64:1]")
    assert len({L("S[(8,8):(8,1)]"), L("S[64:1]"), L("S[(2,32):(32,1)]")}) == 1
    assert L("S[64:1]") != L("S[64:2]")
    assert L("S[64:1] + 1") != L("S[64:1]")
    assert L("S[64:1]") != "S[64:1]"


def test_canonicalize_is_idempotent_on_examples() -> None:
    for text in (TC, "S[(8,2,3,6):(6,24,6,1)]", "S[(1,1):(5@laneid,3)]"):
        once = L(text).canonicalize()
        assert once.canonicalize().structural_equal(once)
        once = L(text).canonicalize("cuda")
        assert once.canonicalize("cuda").structural_equal(once)


def test_gpu_fusion_of_thread_axes() -> None:
    fused = L(TC).canonicalize("cuda")
    assert str(fused) == "S[(8, 2, 4, 2):(4@tx, 32@tx, 1@tx, 1)] + R[2:128@tx] + 160@tx"
    for c in range(128):
        base = L(TC).apply(c)
        assert fused.apply(c)["tx"] == base["laneid"] + 32 * base["warpid"]
    assert str(L("S[(4,32):(1@wid_in_wg,1@laneid)]").canonicalize("cuda")) == "S[128:1@tid_in_wg]"
    assert str(L("S[(2,4):(1@wgid,1@wid_in_wg)]").canonicalize("cuda")) == "S[8:1@warpid]"
    assert str(L("S[(4,32):(1@warpid,1@laneid)]").canonicalize("cuda -arch=sm_90")) == (
        "S[128:1@tx]"
    )
    assert str(L("S[32:1@laneid]").canonicalize("cuda")) == "S[32:1@laneid]"
    assert str(L("S[(4,32):(1@warpid,1@laneid)]").canonicalize("llvm")) == (
        "S[(4, 32):(1@warpid, 1@laneid)]"
    )
    assert str(L("S[(4,32):(1@warpid,1@laneid)]").canonicalize()) == (
        "S[(4, 32):(1@warpid, 1@laneid)]"
    )


def test_block_and_thread_axes_mix_without_hanging() -> None:
    layout = L("S[(16, 128):(1@bx, 1@tx)] + 3@bx")
    assert layout.canonicalize("cuda").structural_equal(layout)
    assert L("S[(16, 4, 32):(1@bx, 1@warpid, 1@laneid)]").canonicalize("cuda").structural_equal(
        L("S[(16, 128):(1@bx, 1@tx)]")
    )
    tiled = L("S[(16, 128):(1@bx, 1@tx)]").tile(L("S[2:1@bx]"), [2], [2048])
    assert tiled == L("S[(32, 128):(1@bx, 1@tx)]")
    assert layout.slice([16, 128], [(2, 4), (0, 64)]) == L("S[(2, 64):(1@bx, 1@tx)] + 5@bx")


def test_conflicting_scopes_are_left_unfused() -> None:
    layout = L("S[(2, 4, 32):(1@wgid, 1@warpid, 1@laneid)]")
    assert layout.canonicalize("cuda").structural_equal(layout)


# ---- group, tile, direct sum, slice ------------------------------------------------------------


def test_group_errors_are_clear() -> None:
    with pytest.raises(LayoutError, match="cannot be grouped by shape"):
        L("S[(6,4):(4,1)]").group([4, 6])
    with pytest.raises(LayoutError, match="more elements than the shape"):
        L("S[64:1]").group([8, 4])
    with pytest.raises(LayoutError, match="cannot be grouped"):
        L("S[16:1]").group([8, 4])
    with pytest.raises(LayoutError, match="positive"):
        L("S[16:1]").group([16, 0])


def test_group_keeps_size_one_dims() -> None:
    grouped, seps = L("S[(4, 8):(8, 1)]").group([1, 4, 1, 8, 1])
    assert seps[-1] == len(grouped.shard)
    assert len(seps) == 6
    assert grouped == L("S[(4, 8):(8, 1)]")


def test_tile_scales_outer_by_inner_span_per_axis() -> None:
    inner = L("S[(8,4,2):(4@laneid,1@laneid,1)]")
    outer = L("S[(2,2):(1@warpid,1)]")
    tiled = inner.tile(outer, [2, 2], [8, 8])
    for wo in range(2):
        for jo in range(2):
            for i in range(8):
                for j in range(8):
                    got = tiled.apply(wo * 8 + i, jo * 8 + j, shape=(16, 16))
                    base = inner.apply(i, j, shape=(8, 8))
                    assert got == {"laneid": base["laneid"], "warpid": wo,
                                   "m": base["m"] + 2 * jo}
    with pytest.raises(LayoutError, match="equal rank"):
        inner.tile(outer, [4], [8, 8])


def test_direct_sum() -> None:
    right = L("S[(4, 4):(1@laneid, 4@laneid)]")
    left = L("S[(2, 2):(16@laneid, 1)] + 1")
    total = right.direct_sum(left, [2, 2], [4, 4])
    for a0 in range(2):
        for a1 in range(2):
            for b0 in range(4):
                for b1 in range(4):
                    got = total.apply(a0 * 4 + b0, a1 * 4 + b1, shape=(8, 8))
                    assert got == {"laneid": 16 * a0 + b0 + 4 * b1, "m": a1 + 1}


def test_slice_two_dims_and_failures() -> None:
    layout = L("S[(8, 16):(16, 1)]")
    sliced = layout.slice([8, 16], [(2, 4), (4, 12)])
    assert sliced == L("S[(2, 8):(16, 1)] + 36")
    rows = L("S[(4, 8):(100, 4)]")
    halves = rows.slice([32], [(6, 10)])
    assert str(halves) == "S[(2, 2):(76, 4)] + 24"
    assert [halves.apply(c) for c in range(4)] == [rows.apply(c) for c in range(6, 10)]
    with pytest.raises(LayoutError, match="not expressible"):
        rows.slice([32], [(6, 11)])
    with pytest.raises(LayoutError, match="not expressible"):
        L("S[(4, 8):(1@laneid, 4)]").slice([32], [(6, 10)])
    with pytest.raises(LayoutError, match="outside"):
        layout.slice([8, 16], [(2, 9), (0, 16)])
    with pytest.raises(LayoutError, match="outside"):
        layout.slice([8, 16], [(2, 2), (0, 16)])
    assert layout.slice([8, 16], [range(1, 2), range(0, 16)]) == L("S[16:1] + 16")


def test_slice_halves_need_room_for_the_carry() -> None:
    layout = L("S[(2, 2, 4):(100, 10, 1)]")
    with pytest.raises(LayoutError):
        layout.slice([16], [(6, 10)])
    ok = layout.slice([16], [(2, 6)])
    assert [ok.apply(c)["m"] for c in range(4)] == [layout.apply(c)["m"] for c in range(2, 6)]


def test_storage_drops_thread_and_device_parts() -> None:
    assert str(L(TC).storage()) == "S[2:1]"
    register_device_axis("dp")
    assert str(L("S[(4, 8, 2):(1@dp, 1@laneid, 1)] + 3@dp + 2").storage()) == "S[2:1] + 2"


def test_unpack_pack_broadcast() -> None:
    layout = L("S[(8,4,2):(4@laneid,1@laneid,1)] + 2")
    unpacked = layout.unpack(2)
    assert str(unpacked) == "S[(8, 4, 2, 2):(4@laneid, 1@laneid, 2, 1)] + 4"
    for c in range(64):
        for k in range(2):
            want = layout.apply(c)
            want["m"] = want["m"] * 2 + k
            assert unpacked.apply(c * 2 + k) == want
    assert unpacked.pack(2).structural_equal(L("S[(8,4,2,1):(4@laneid,1@laneid,1,1)] + 2"))
    assert unpacked.pack(2) == layout
    assert L("S[(4, 2):(2, 1)]").pack(8) == L("S[1:1]")
    with pytest.raises(LayoutError, match="cannot pack"):
        L("S[(4, 2):(1, 4)]").pack(2)
    with pytest.raises(LayoutError, match="cannot pack"):
        L("S[8:1] + 1").pack(2)
    with pytest.raises(LayoutError, match="memory axis"):
        layout.unpack(2, "laneid")
    b = L("S[(4, 8):(8, 1)]").broadcast(3, 1)
    assert str(b) == "S[(4, 3, 8):(8, 0, 1)]"
    assert str(L("S[4:1]").broadcast(2)) == "S[(4, 2):(1, 0)]"
    assert str(L("S[4:1]").broadcast(2, 0, "laneid")) == "S[(2, 4):(0@laneid, 1)]"
    with pytest.raises(LayoutError, match="position"):
        L("S[4:1]").broadcast(2, 5)


# ---- swizzle -----------------------------------------------------------------------------------


def test_compose_layout_ops() -> None:
    layout = parse_layout("T.ComposeLayout(3, 3, 3, T.TileLayout(T.S[(8, 64):(64, 1)]))")
    assert isinstance(layout, ComposeLayout)
    assert str(layout) == "ComposeLayout(3, 3, 3, S[(8, 64):(64, 1)])"
    assert parse_layout(str(layout)) == layout
    assert parse_layout(layout.script()).structural_equal(layout)
    assert layout == ComposeLayout(3, 3, 3, L("S[512:1]"))
    assert layout != ComposeLayout(2, 3, 3, L("S[512:1]"))
    assert layout.size() == 512 and layout.span() == 512
    tiled = layout.tile(L("S[2:1]"), [2, 1], [8, 64])
    assert tiled == ComposeLayout(3, 3, 3, L("S[1024:1]"))
    sliced = layout.slice([8, 64], [(1, 2), (0, 64)])
    assert sliced.apply(0, 9, shape=(1, 64)) == layout.apply(1, 9, shape=(8, 64))
    assert layout.unpack(2).per_element == 4
    assert layout.unpack(2).pack(2) == layout
    inner = parse_layout("ComposeLayout(T.SwizzleLayout(3, 3, 3, swizzle_inner=False), S[512:1])")
    assert isinstance(inner, ComposeLayout) and not inner.swizzle_inner
    assert parse_layout(str(inner)).structural_equal(inner)
    assert parse_layout(inner.script()).structural_equal(inner)
    assert sorted(inner.apply(c)["m"] for c in range(512)) == list(range(512))
    with pytest.raises(LayoutError, match="atom_len"):
        ComposeLayout(3, 3, 2, L("S[512:1]"))
    with pytest.raises(LayoutError, match="bitwise"):
        layout.apply(Sym.var("i"))


# ---- parsing and printing ----------------------------------------------------------------------


@pytest.mark.parametrize(("text", "printed"), [
    (TC, "S[(8, 2, 4, 2):(4@laneid, 1@warpid, 1@laneid, 1)] + R[2:4@warpid] + 5@warpid"),
    ("S[4, 8]", "S[(4, 8):(8, 1)]"),
    ("S[(4, 8)]", "S[(4, 8):(8, 1)]"),
    ("S[64:1]", "S[64:1]"),
    ("S[64]", "S[64:1]"),
    ("S[(512,)]", "S[512:1]"),
    ("S[(8,):(2,)]", "S[8:2]"),
    ("S[64:1] + 5", "S[64:1] + 5"),
    ("S[64:1] + 2 + 3", "S[64:1] + 5"),
    ("S[64:1] - 3@laneid", "S[64:1] - 3@laneid"),
    ("S[8:4 @ Axis.laneid] + 4 @ Axis.laneid + 1 @ laneid", "S[8:4@laneid] + 5@laneid"),
    ("T.TileLayout(T.S[(8, 4, 2):(4 @ Axis.laneid, 1 @ Axis.laneid, 1)])",
     "S[(8, 4, 2):(4@laneid, 1@laneid, 1)]"),
    ("TileLayout(S[(64, 64, 4) : (64, 1, 64 * 64)])", "S[(64, 64, 4):(64, 1, 4096)]"),
    ("T.TileLayout(T.S[8:1] + T.R[4:8@warpid] + 1@warpid)",
     "S[8:1] + R[4:8@warpid] + 1@warpid"),
    ("R[2:4@warpid] + S[4:1]", "S[4:1] + R[2:4@warpid]"),
    ("S[4:1] + R[2:4@warpid] + R[2:1@laneid]", "S[4:1] + R[(2, 2):(4@warpid, 1@laneid)]"),
    ("S[()]", "S[()]"),
])
def test_parse_and_print(text: str, printed: str) -> None:
    layout = parse_layout(text)
    assert str(layout) == printed
    again = parse_layout(printed)
    assert again.structural_equal(layout)
    assert parse_layout(layout.script()).structural_equal(layout)


def test_parse_compose_forms() -> None:
    want = ComposeLayout(3, 3, 3, L("S[(8, 64):(64, 1)]"))
    for text in (
        "ComposeLayout(3, 3, 3, S[(8, 64):(64, 1)])",
        "T.ComposeLayout(3, 3, 3, T.TileLayout(T.S[(8, 64):(64, 1)]))",
        "ComposeLayout(3, 3, 3, TileLayout(S[(8,64):(64,1)]),)",
        "T.ComposeLayout(T.SwizzleLayout(3, 3, 3, swizzle_inner=True), T.TileLayout(T.S[8, 64]))",
    ):
        assert parse_layout(text).structural_equal(want), text


@pytest.mark.parametrize(("text", "message", "position"), [
    ("S[(8,2):(1,2)] + S[4:1]", "one S[...]", 17),
    ("S[(8,2:(1,2)]", "expected ')'", 6),
    ("S[4:1@foo]", "unknown axis 'foo'", 6),
    ("S[(4,2):(1)]", "2 extents but 1 strides", 2),
    ("S[0:1]", "positive", 2),
    ("S[4:1] +", "end of text", 8),
    ("S[4:1] $", "unexpected character", 7),
    ("S[4:1] S[4:1]", "after the layout", 7),
    ("ComposeLayout(3, K, 3, S[4:1])", "integers", 17),
    ("S[4:1] - R[2:1@laneid]", "subtracted", 9),
    ("S[4 // 0:1]", "zero", 4),
])
def test_parse_errors(text: str, message: str, position: int) -> None:
    with pytest.raises(LayoutError, match="parse error") as info:
        parse_layout(text)
    assert message in str(info.value)
    assert info.value.position == position
    assert f"position {position}" in str(info.value)


def test_layout_error_is_a_value_error() -> None:
    assert issubclass(LayoutError, ValueError)


# ---- symbolic values ---------------------------------------------------------------------------


def test_symbolic_layout() -> None:
    layout = L("S[(K, N/16, 16):(16, 16*K, 1)]")
    assert str(layout) == "S[(K, N // 16, 16):(16, 16 * K, 1)]"
    assert parse_layout(str(layout)).structural_equal(layout)
    assert layout.symbols() == {"K", "N"}
    assert layout.size() == parse_value("16 * K * (N // 16)")
    concrete = layout.substitute({"K": 4, "N": 64})
    assert concrete.structural_equal(L("S[(4, 4, 16):(16, 64, 1)]"))
    assert layout.substitute({"K": 4}).symbols() == {"N"}
    assert str(L("S[(K, 16):(16, 1)]").canonicalize()) == "S[(16 * K):1]"
    assert L("S[(K, 16):(16, 1)]") == L("S[16*K:1]")
    grouped, seps = L("S[16*K:1]").group([Sym.var("K"), 16])
    assert grouped.structural_equal(L("S[(K, 16):(16, 1)]")) and seps == [0, 1, 2]


def test_symbolic_apply_agrees_with_concrete() -> None:
    layout = L(TC)
    i = Sym.var("i")
    symbolic = layout.apply(i)
    for c in range(128):
        env = {"i": c}
        assert {k: substitute(v, env) for k, v in symbolic.items()} == layout.apply(c)


def test_symbolic_values_print_and_parse() -> None:
    for text in ("-(N // 16) + 3 * (N % 4) - K * N", "2 * ((N + 1) // 16)", "K // 4 // 2"):
        value = parse_value(text)
        assert parse_value(str(value)) == value
    assert parse_value("K // 4 // 2") == parse_value("K // 8")
    assert parse_value("(16 * K + 3) // 16") == Sym.var("K")
    assert parse_value("(16 * K + 3) % 16") == 3
    assert parse_value("(K * N) // K") == Sym.var("N")


def test_apply_on_expression_nodes() -> None:
    from tirc.ir import Var

    i, j = Var("i"), Var("j")
    out = L("S[(8, 16):(16, 1)] + 4").apply(i, j, shape=(8, 16))
    assert set(out) == {"m"}
    assert not isinstance(out["m"], int)


# ---- axes --------------------------------------------------------------------------------------


def test_axis_registry() -> None:
    assert get_axis("m").kind is AxisKind.MEMORY
    assert get_axis("laneid").kind is AxisKind.THREAD
    assert get_axis("laneid").scope == "warp"
    assert get_axis("tid").kind is AxisKind.THREAD
    assert get_axis("gpuid").kind is AxisKind.DEVICE
    assert register_device_axis("mesh_x") is get_axis("mesh_x")
    assert register_device_axis("mesh_x") is get_axis("mesh_x")
    with pytest.raises(LayoutError, match="already registered"):
        register_device_axis("laneid")
    with pytest.raises(LayoutError, match="unknown axis"):
        Iter(4, 1, "nope")


def test_device_axes_work_through_every_operation() -> None:
    register_device_axis("tp")
    layout = L("S[(4, 16):(1@tp, 1)]")
    assert layout.canonicalize().structural_equal(layout)
    assert layout.size("tp") == 4 and layout.span("tp") == 4
    tiled = layout.tile(L("S[2:1@gpuid]"), [2], [64])
    assert tiled == L("S[(2, 4, 16):(1@gpuid, 1@tp, 1)]")
    sliced = layout.slice([64], [(16, 48)])
    assert sliced == L("S[(2, 16):(1@tp, 1)] + 1@tp")
    assert str(layout.storage()) == "S[16:1]"
    assert parse_layout(str(layout)) == layout


def test_iter_validation() -> None:
    with pytest.raises(LayoutError, match="positive"):
        Iter(0, 1)
    with pytest.raises(LayoutError, match="integer"):
        Iter(2.5, 1)
    with pytest.raises(LayoutError, match="Iter"):
        TileLayout([(4, 1)])  # type: ignore[list-item]
    with pytest.raises(LayoutError, match="digit per shard iter"):
        L("S[(4, 4):(4, 1)]").apply(1, 2, 3)
    with pytest.raises(LayoutError, match="does not match shape"):
        L("S[(4, 4):(4, 1)]").apply(1, 2, shape=(16,))
