"""tirc.ir.lean_dataclass.dataclass behaves as dataclasses.dataclass: the same equality, hashes,
reprs and kept methods, class by class, for the option sets the IR's node classes use."""

from __future__ import annotations

import dataclasses
import math
import re
import sys
from dataclasses import dataclass, field
from typing import Any

import pytest
from tirc.ir.lean_dataclass import dataclass as lean_dataclass

OPTIONS = [{}, {"frozen": True}, {"eq": False}, {"frozen": True, "eq": False},
           {"repr": False}, {"frozen": True, "repr": False}]


def make_family(decorate: Any, options: dict[str, Any]) -> dict[str, type]:
    """The same classes (a base with a keyword-only uncompared field, subclasses with zero,
    one and several fields, per-field options, own methods) made by `decorate`."""

    @decorate(**options)
    class Base:
        span: Any = field(default=None, compare=False, hash=False, repr=False, kw_only=True)

    @decorate(**options)
    class Empty(Base):
        pass

    @decorate(**options)
    class One(Base):
        value: Any

    @decorate(**options)
    class Many(Base):
        op: str
        a: Any
        b: Any = 0
        note: str = field(default="", compare=False)
        weight: float = field(default=0.0, hash=False)
        secret: int = field(default=0, repr=False)
        tags: list = field(default_factory=list, hash=True, compare=False)

    @decorate(**options)
    class OwnEq(Base):
        value: Any

        def __eq__(self, other: object) -> bool:
            return isinstance(other, OwnEq) and other.value % 2 == self.value % 2

    @decorate(**options)
    class OwnHashAndRepr(Base):
        value: Any

        def __hash__(self) -> int:
            return 7

        def __repr__(self) -> str:
            return "mine"

    @decorate(**options)
    class Sub(Many):
        extra: int = 1

    return {c.__name__: c for c in (Base, Empty, One, Many, OwnEq, OwnHashAndRepr, Sub)}


def instances(family: dict[str, type]) -> list[tuple[str, Any]]:
    """Objects of every class: pairs that are equal, differ only in uncompared fields, hold
    NaN or themselves."""
    nan = math.nan
    out: list[tuple[str, Any]] = [("Base", family["Base"]()), ("Base", family["Base"](span=1))]
    out += [("Empty", family["Empty"]()), ("Empty", family["Empty"](span=2))]
    out += [("One", family["One"](v)) for v in (1, 1, 2, nan, (1, 2), "x")]
    for args in [("add", 1, 2), ("add", 1, 2), ("sub", 1, 2), ("add", nan, 2)]:
        out.append(("Many", family["Many"](*args)))
        out.append(("Many", family["Many"](*args, note="n", weight=2.5, secret=3, tags=[1])))
        out.append(("Sub", family["Sub"](*args, extra=2)))
    out += [("OwnEq", family["OwnEq"](v)) for v in (1, 3, 2)]
    out += [("OwnHashAndRepr", family["OwnHashAndRepr"](v)) for v in (1, 2)]
    return out


def behaviour(family: dict[str, type]) -> list[Any]:
    """Everything observable of the classes' methods, as plain values."""
    objs = instances(family)
    seen: list[Any] = []
    for name, cls in family.items():
        seen.append((name, sorted(n for n in ("__eq__", "__hash__", "__repr__", "__init__",
                                                "__setattr__") if n in cls.__dict__),
                     cls.__dict__.get("__hash__", "inherited") is None,
                     [f.name for f in dataclasses.fields(cls)],
                     getattr(cls, "__match_args__", None)))
        for method in ("__eq__", "__hash__", "__repr__"):
            fn = cls.__dict__.get(method)
            if fn is not None:
                seen.append((name, method, fn.__qualname__.replace("make_family.<locals>.", "")))
    for i, (_, x) in enumerate(objs):
        seen.append(re.sub(r" at 0x[0-9a-f]+", "", repr(x)))
        try:
            seen.append("identity" if hash(x) == object.__hash__(x) else hash(x))
        except TypeError as exc:
            seen.append(str(exc))
        seen.append([x == y for _, y in objs])
        seen.append([x != y for _, y in objs])
        seen.append(x.__eq__(objs[(i + 1) % len(objs)][1]))
    return seen


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_same_behaviour_as_dataclass(options: dict[str, Any]) -> None:
    standard = behaviour(make_family(dataclass, options))
    lean = behaviour(make_family(lean_dataclass, options))
    assert lean == standard


def test_frozen_and_replace_unchanged() -> None:
    family = make_family(lean_dataclass, {"frozen": True})
    obj = family["Many"]("add", 1, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        obj.a = 3  # type: ignore[misc]
    assert dataclasses.replace(obj, a=5) == family["Many"]("add", 5, 2)
    one = family["One"](3, span="here")
    assert dataclasses.replace(one, span=None) == one
    assert hash(dataclasses.replace(one, span=None)) == hash(one) == hash((3,))


def test_recursive_repr_is_cut() -> None:
    family = make_family(lean_dataclass, {})
    obj = family["One"](None)
    obj.value = [obj]
    assert repr(obj) == "make_family.<locals>.One(value=[...])"


def test_bare_decorator_and_standard_only_options() -> None:
    @lean_dataclass
    class Point:
        x: int
        y: int = 0

    assert Point(1) == Point(1, 0) and repr(Point(1)) == \
        "test_bare_decorator_and_standard_only_options.<locals>.Point(x=1, y=0)"
    assert Point.__hash__ is None

    @lean_dataclass(order=True, frozen=True)
    class Ordered:
        x: int

    assert Ordered(1) < Ordered(2) and hash(Ordered(1)) == hash((1,))


@pytest.mark.skipif(sys.version_info[:2] > (3, 12), reason="the standard decorator does all")
def test_methods_compiled_on_first_call_replace_the_stand_ins() -> None:
    family = make_family(lean_dataclass, {"frozen": True})
    many, sub, one = family["Many"], family["Sub"], family["One"]
    stand_in = many.__dict__["__eq__"]
    assert stand_in.__code__.co_filename != "<string>"
    assert sub(op="add", a=1) == sub(op="add", a=1)  # Sub has its own methods: Many's stay
    assert many.__dict__["__eq__"] is stand_in
    assert many("add", 1) != many("add", 2)
    compiled = many.__dict__["__eq__"]
    assert compiled is not stand_in and compiled.__code__.co_filename == "<string>"
    assert compiled.__qualname__ == stand_in.__qualname__

    @lean_dataclass(frozen=True, eq=False)
    class Plain(one):  # inherits One's stand-ins
        pass

    assert Plain(4) == Plain(4) and hash(Plain(4)) == hash((4,))
    assert one.__dict__["__hash__"].__code__.co_filename == "<string>"
    assert "__hash__" not in Plain.__dict__
