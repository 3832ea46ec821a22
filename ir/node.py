"""The base of every IR node: an immutable dataclass that remembers where it came from."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import field
from typing import Any

from tirc.ir.lean_dataclass import dataclass
from tirc.ir.span import Span

_NODE_FIELDS: dict[type, tuple[str, ...]] = {}  # a class's field names but span, found once
_PLAIN: dict[type, frozenset[str] | None] = {}  # see _plain_fields


def _plain_fields(cls: type) -> frozenset[str] | None:
    """The field names of `cls` when an instance holds exactly its fields, stored as given:
    the dataclass wrote its `__init__` (compiled from text, `<string>`), every field is an
    `__init__` parameter and there is no `__post_init__`. None otherwise."""
    try:
        return _PLAIN[cls]
    except KeyError:
        pass
    fields = dataclasses.fields(cls)
    plain = (getattr(cls.__init__, "__code__", None) is not None
             and cls.__init__.__code__.co_filename == "<string>"
             and not hasattr(cls, "__post_init__") and all(f.init for f in fields))
    names = _PLAIN[cls] = frozenset(f.name for f in fields) if plain else None
    return names


def replace_fields(node: Any, changes: dict[str, Any]) -> Any:
    """`dataclasses.replace(node, **changes)`; for a plain node (`_plain_fields`) its fields
    copied with the changes, without the call of the generated `__init__` that would store
    the same values (a third of the time; mutators rebuild nodes all the time)."""
    names = _plain_fields(type(node))
    if names is None or not changes.keys() <= names:
        return dataclasses.replace(node, **changes)
    new = object.__new__(type(node))
    fields = new.__dict__
    fields.update(node.__dict__)
    fields.update(changes)
    return new


@dataclass(frozen=True)
class Node:
    """Base IR node. Fields are compared structurally; `span` never takes part."""

    span: Span | None = field(default=None, compare=False, hash=False, repr=False, kw_only=True)

    def node_fields(self) -> Iterator[tuple[str, Any]]:
        """The node's fields other than span, in declaration order."""
        cls = type(self)
        names = _NODE_FIELDS.get(cls)
        if names is None:
            names = _NODE_FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls)
                                              if f.name != "span")
        for name in names:
            yield name, getattr(self, name)

    def compared_fields(self) -> Iterator[tuple[str, Any]]:
        """The fields that take part in equality (span and bookkeeping fields excluded)."""
        for f in dataclasses.fields(self):
            if f.compare:
                yield f.name, getattr(self, f.name)

    def replace(self, **changes: Any) -> Node:
        """A copy with some fields changed (the span is kept)."""
        return replace_fields(self, changes)

    def with_span(self, span: Span | None) -> Node:
        return replace_fields(self, {"span": span})


@dataclass(frozen=True, eq=False)
class IdentityNode(Node):
    """A node that defines a name (variables, buffers): equal only to itself."""

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other


def frozen_dict(d: dict | None) -> dict:
    """Annotation dictionaries are stored as plain dicts that passes never mutate."""
    return dict(d) if d else {}
