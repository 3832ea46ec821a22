"""Traversal of graph IR that also enters tuples.

`Tuple` and `TupleSInfo` name their items `fields`, which hides `Node.node_fields()` that the
generic Visitor and Mutator walk with; these subclasses visit those two node kinds explicitly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from tirc.ir.graph import Tuple, TupleSInfo
from tirc.ir.node import IdentityNode, Node
from tirc.ir.visitor import Mutator, Visitor


class GraphVisitor(Visitor):
    """A Visitor that walks into tuples."""

    def visit_Tuple(self, node: Tuple) -> None:
        self.visit(node.fields)

    def visit_TupleSInfo(self, node: TupleSInfo) -> None:
        self.visit(node.fields)


class GraphMutator(Mutator):
    """A Mutator that rebuilds tuples."""

    def visit_Tuple(self, node: Tuple) -> Any:
        items = self.visit(node.fields)
        return node if items is node.fields else dataclasses.replace(node, fields=items)

    def visit_TupleSInfo(self, node: TupleSInfo) -> Any:
        items = self.visit(node.fields)
        return node if items is node.fields else dataclasses.replace(node, fields=items)


def substitute_graph(node: Any, mapping: dict[Any, Any]) -> Any:
    """Replace variables (graph or loop level) by the mapping's values under `node`."""
    if not mapping:
        return node

    class _Subst(GraphMutator):
        def visit(self, n: Any) -> Any:
            if isinstance(n, IdentityNode) and n in mapping:
                return mapping[n]
            return super().visit(n)

    return _Subst().visit(node)


def visit_graph(node: Any, fn: Callable[[Node], None]) -> None:
    """Call `fn` on every node under `node` (tuples included), children first."""

    class _V(GraphVisitor):
        def visit(self, n: Any) -> None:
            super().visit(n)
            if isinstance(n, Node):
                fn(n)

    _V().visit(node)
