"""`Node.replace` (tirc.ir.node.replace_fields) copies a plain node's fields instead of calling
its generated `__init__`: the copy must equal what `dataclasses.replace` gives, field for
field, for every node of random functions; nodes with their own `__init__` or a
`__post_init__` still go through it, and an unknown field is still an error."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from ir_strategies import prim_funcs
from tirc.ir.dist.mesh import DeviceMesh, MeshError
from tirc.ir.expr import BinOp, IntImm, Var
from tirc.ir.function import PrimFunc
from tirc.ir.node import Node, replace_fields
from tirc.ir.span import Span
from tirc.ir.visitor import post_order_visit


def _same(a: Node, b: Node) -> bool:
    """Same class, same value of every field (by identity), span included."""
    return type(a) is type(b) and all(
        getattr(a, f.name) is getattr(b, f.name) for f in dataclasses.fields(a))


@settings(max_examples=30, deadline=None)
@given(prim_funcs())
def test_replace_equals_dataclasses_replace(func: PrimFunc) -> None:
    nodes: list[Node] = []
    post_order_visit(func, nodes.append)
    span = Span("f.tir", 3, 4, 3, 9)
    for node in nodes:
        fields = [f.name for f in dataclasses.fields(node) if f.name != "span"]
        for name in fields[:1]:
            value = getattr(node, name)
            assert _same(node.replace(**{name: value}), dataclasses.replace(node, **{name: value}))
        copy = node.with_span(span)
        assert copy is not node and copy.span is span
        assert all(getattr(copy, name) is getattr(node, name) for name in fields)


def test_a_changed_field_is_the_new_value_and_the_original_is_untouched() -> None:
    x = Var("x")
    e = BinOp("add", x, IntImm(1), x.dtype)
    f = e.replace(b=IntImm(2))
    assert f.b == IntImm(2) and e.b == IntImm(1) and f.a is x
    assert f == BinOp("add", x, IntImm(2), x.dtype)
    assert hash(f) == hash(BinOp("add", x, IntImm(2), x.dtype))


def test_unknown_field_is_an_error() -> None:
    x = Var("x")
    with pytest.raises(TypeError):
        replace_fields(BinOp("add", x, x, x.dtype), {"c": x})


def test_a_node_with_post_init_is_rebuilt_through_it() -> None:
    """DeviceMesh checks and normalises its fields in `__post_init__`: a copy runs it."""
    mesh = DeviceMesh((2, 2))
    assert mesh.replace(shape=(4, 1)).shape == (4, 1)
    with pytest.raises(MeshError, match="2 axes but 3 axis names"):
        mesh.replace(axis_names=("d0", "d1", "d2"))
