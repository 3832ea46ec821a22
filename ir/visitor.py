"""Generic traversal of IR nodes: a read-only Visitor and a rebuilding Mutator.

Both dispatch on the class name (`visit_BufferStore`, `visit_Var`, ...) and otherwise walk
every field, so a pass overrides only the nodes it cares about.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from tirc.ir.dtype import DType
from tirc.ir.node import IdentityNode, Node, replace_fields
from tirc.ir.stmt import ForKind, IterKind, SeqStmt, seq

# Field values that hold no nodes: `visit` would do nothing with them (a Visitor) or hand them
# back unchanged (a Mutator), so the generic walks do not call it for them.
_LEAVES = frozenset({str, int, float, bool, type(None), DType, ForKind, IterKind})
_FIELD_NAMES: dict[type, tuple[str, ...] | None] = {}


def field_names(cls: type) -> tuple[str, ...] | None:
    """The names `Node.node_fields` yields for instances of `cls` (computed once per class);
    None when `cls` overrides `node_fields`."""
    try:
        return _FIELD_NAMES[cls]
    except KeyError:
        pass
    names: tuple[str, ...] | None = None
    if getattr(cls, "node_fields", None) is Node.node_fields:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.name != "span")
    _FIELD_NAMES[cls] = names
    return names


def children(node: Node) -> list[tuple[str, Any]]:
    """`list(node.node_fields())`, without looking the dataclass fields up again each time."""
    names = field_names(type(node))
    if names is None:
        return list(node.node_fields())
    return [(name, getattr(node, name)) for name in names]


class Visitor:
    """Walks a tree of nodes; override `visit_<Class>` and call `generic_visit` to recurse."""

    def visit(self, node: Any) -> None:
        if isinstance(node, Node):
            method = getattr(self, "visit_" + type(node).__name__, None)
            if method is not None:
                method(node)
            else:
                self.generic_visit(node)
        elif isinstance(node, (tuple, list)):
            for item in node:
                self.visit(item)
        elif isinstance(node, dict):
            for k, v in node.items():
                self.visit(k)
                self.visit(v)

    def generic_visit(self, node: Node) -> None:
        names = field_names(type(node))
        if names is None:
            for _, value in node.node_fields():
                self.visit(value)
            return
        for name in names:
            value = getattr(node, name)
            if type(value) not in _LEAVES:
                self.visit(value)


class Mutator:
    """Rebuilds a tree bottom-up; unchanged subtrees are returned as the same objects.

    Definitions (Var, Buffer, GVar) are leaves: override `visit_Var`/`visit_Buffer` to
    substitute them.
    """

    def visit(self, node: Any) -> Any:
        if isinstance(node, Node):
            method = getattr(self, "visit_" + type(node).__name__, None)
            if method is not None:
                return method(node)
            if isinstance(node, IdentityNode):
                return node
            return self.generic_visit(node)
        if isinstance(node, tuple):
            items = tuple(self.visit(x) for x in node)
            return node if all(a is b for a, b in zip(items, node)) else items
        if isinstance(node, list):
            return [self.visit(x) for x in node]
        if isinstance(node, dict):
            new = {self.visit(k): self.visit(v) for k, v in node.items()}
            same = len(new) == len(node) and all(
                a is b and new[a] is node[b] for a, b in zip(new, node))
            return node if same else new
        return node

    def generic_visit(self, node: Node) -> Any:
        changes: dict[str, Any] = {}
        for name, value in children(node):
            if type(value) in _LEAVES:
                continue
            new = self.visit(value)
            if new is not value:
                changes[name] = new
        if not changes:
            return node
        if isinstance(node, SeqStmt):
            return seq(*changes["seq"])  # a statement that became a sequence is spliced in
        return replace_fields(node, changes)


def post_order_visit(node: Any, fn: Callable[[Node], None]) -> None:
    """Call `fn` on every node under `node`, children first (in the order a Visitor walks
    them: fields in declaration order, sequences in order, a dict's keys before values)."""
    remembered = _remembered_nodes(node)
    if remembered is not None:
        for n in remembered:
            fn(n)
        return

    def walk(n: Any) -> None:
        if isinstance(n, Node):
            names = field_names(type(n))
            if names is None:
                for _, value in n.node_fields():
                    walk(value)
            else:
                for name in names:
                    value = getattr(n, name)
                    if type(value) not in _LEAVES:
                        walk(value)
            fn(n)
        elif isinstance(n, (tuple, list)):
            for item in n:
                walk(item)
        elif isinstance(n, dict):
            for k, v in n.items():
                walk(k)
                walk(v)

    walk(node)


def any_node(node: Any, pred: Callable[[Node], bool]) -> bool:
    """Whether `pred` holds for some node under `node` (`node` included); nodes are tried in
    post-order, and the search stops at the first that holds."""
    remembered = _remembered_nodes(node)
    if remembered is not None:
        return any(pred(n) for n in remembered)

    def search(n: Any) -> bool:
        if isinstance(n, Node):
            names = field_names(type(n))
            if names is None:
                for _, value in n.node_fields():
                    if search(value):
                        return True
            else:
                for name in names:
                    value = getattr(n, name)
                    if type(value) not in _LEAVES and search(value):
                        return True
            return pred(n)
        if isinstance(n, (tuple, list)):
            for item in n:
                if search(item):
                    return True
        elif isinstance(n, dict):
            for k, v in n.items():
                if search(k) or search(v):
                    return True
        return False

    return search(node)


def _post_order(root: Node) -> tuple[list[Node], dict[int, tuple[int, int]]]:
    """The nodes under `root` in `post_order_visit`'s order, and where each node's own subtree
    lies in that list (the nodes a walk of it visits are contiguous and end with it; a node
    that occurs several times is kept at its first place, whose nodes are the same)."""
    nodes: list[Node] = []
    ranges: dict[int, tuple[int, int]] = {}

    def walk(n: Any) -> None:
        if isinstance(n, Node):
            start = len(nodes)
            names = field_names(type(n))
            if names is None:
                for _, value in n.node_fields():
                    walk(value)
            else:
                for name in names:
                    value = getattr(n, name)
                    if type(value) not in _LEAVES:
                        walk(value)
            nodes.append(n)
            ranges.setdefault(id(n), (start, len(nodes)))
        elif isinstance(n, (tuple, list)):
            for item in n:
                walk(item)
        elif isinstance(n, dict):
            for k, v in n.items():
                walk(k)
                walk(v)

    walk(root)
    return nodes, ranges


_memo = threading.local()


@contextmanager
def remembered_walks() -> Iterator[None]:
    """Within the block (on this thread), `post_order_visit` and `any_node` keep the nodes of
    each tree they walk in order and answer a later walk of that tree, or of any subtree of
    it, from the list. For code that walks one finished tree many times, as a backend's
    analyses do (a dozen whole-function walks for an entry point); the trees must not be
    rebuilt meanwhile, which holds for IR (nodes are immutable, and the lists keep every
    remembered node alive, so no id is reused). A block inside another shares its memory."""
    if getattr(_memo, "places", None) is not None:  # inside another: share its memory
        yield
        return
    _memo.places = {}
    try:
        yield
    finally:
        _memo.places = None


def _remembered_nodes(node: Any) -> Sequence[Node] | None:
    """The nodes under `node` in post-order inside `remembered_walks` (walking `node` once
    if no remembered tree holds it), else None."""
    places: dict[int, tuple[list[Node], int, int]] | None = getattr(_memo, "places", None)
    if places is None or not isinstance(node, Node):
        return None
    place = places.get(id(node))
    if place is None:
        nodes, ranges = _post_order(node)
        for key, (start, end) in ranges.items():
            places.setdefault(key, (nodes, start, end))
        return nodes
    nodes, start, end = place
    return nodes if start == 0 and end == len(nodes) else nodes[start:end]


def substitute(node: Any, mapping: dict[Any, Any]) -> Any:
    """Replace variables (or buffers) by the mapping's values everywhere under `node`."""
    if not mapping:
        return node

    class _Subst(Mutator):
        def visit(self, n: Any) -> Any:
            if isinstance(n, IdentityNode) and n in mapping:
                return mapping[n]
            return super().visit(n)

    return _Subst().visit(node)
