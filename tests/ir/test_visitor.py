"""tirc.ir.visitor: inside `remembered_walks`, `post_order_visit` and `any_node` visit the same
nodes in the same order as a fresh walk, for a whole function and for every subtree of it,
including subtrees that occur more than once."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from ir_strategies import prim_funcs
from tirc.ir.expr import IntImm, Var, binop
from tirc.ir.function import PrimFunc
from tirc.ir.node import Node
from tirc.ir.stmt import Evaluate, SeqStmt
from tirc.ir.visitor import any_node, post_order_visit, remembered_walks


def walk(node: Any) -> list[int]:
    """The ids of the nodes `post_order_visit` calls its function on, in order."""
    seen: list[int] = []
    post_order_visit(node, lambda n: seen.append(id(n)))
    return seen


def subtrees(node: Any) -> list[Node]:
    """Every node under `node`, by a fresh walk."""
    found: list[Node] = []
    post_order_visit(node, found.append)
    return found


@settings(max_examples=40, deadline=None)
@given(prim_funcs())
def test_remembered_walks_equal_fresh_ones(func: PrimFunc) -> None:
    nodes = subtrees(func.body)
    fresh = {id(n): walk(n) for n in nodes}
    with remembered_walks():
        assert walk(func.body) == fresh[id(func.body)]
        for n in reversed(nodes):  # inner nodes after the root: answered from its list
            assert walk(n) == fresh[id(n)]
            assert any_node(n, lambda m, n=n: m is n)
            assert not any_node(n, lambda m: False)
    assert walk(func.body) == fresh[id(func.body)]  # outside the block: walked again


def test_shared_subtrees_and_subtrees_walked_first() -> None:
    x = Var("x")
    shared = binop("add", x, IntImm(1))
    body = SeqStmt((Evaluate(binop("mul", shared, shared)), Evaluate(shared)))
    whole, part = walk(body), walk(shared)
    with remembered_walks():
        assert walk(shared) == part  # remembered on its own first
        assert walk(body) == whole
        assert walk(shared) == part
        with remembered_walks():  # a nested block shares the memory
            assert walk(body) == whole
        calls: list[Node] = []
        assert any_node(body, lambda n: calls.append(n) or n is shared)
        assert [id(n) for n in calls] == walk(x) + [id(shared.b), id(shared)]
