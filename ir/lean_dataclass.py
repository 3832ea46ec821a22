"""`dataclass`: `dataclasses.dataclass` that writes `__eq__` and `__hash__` when first called
and `__repr__` without compiling, for classes of which a run uses few of these methods.

The standard decorator writes each method it adds as Python text and compiles it with `exec`,
about 60 us a method. A compile of samples/matmul.tir loads about 240 dataclasses and calls
`__eq__` of 6 of them, `__hash__` of 3 and `__repr__` of none, so most of that compiling is
wasted start-up. Here `__init__`, `__setattr__` and `__delattr__` are still the standard
decorator's; `__eq__` and `__hash__` start as stand-ins that compile the standard text (the
same code, in the class's module, as CPython 3.10 to 3.12 write) on their first call and put
it on the class, and `__repr__` builds the standard text (`Class(name=value!r, ...)`, `...`
where a repr recurses) from the field names. What the methods return, and which methods a
class gets, are the standard decorator's: equality compares the tuples of the compared fields
of two objects of one class, the hash is that of the tuple of the hashed fields (added for
`eq` with `frozen`, None for `eq` alone, kept when the class defines one), and a method the
class defines itself is kept. On other Python versions, or with `order`, `unsafe_hash` or
`slots`, the standard decorator does everything. The methods the standard decorator still
writes, and those compiled here, are compiled through `tirc.ir.method_code_cache`, which keeps
their code between processes.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from threading import get_ident
from typing import Any, TypeVar

from tirc.ir.method_code_cache import cached_exec, compile_text

C = TypeVar("C", bound=type)

_LEAN = (3, 10) <= sys.version_info[:2] <= (3, 12)
_STANDARD_ONLY = ("order", "unsafe_hash", "slots")
_MISSING = object()


def dataclass(cls: C | None = None, /, **options: Any) -> Any:
    """`@dataclasses.dataclass(**options)` with the methods of the module docstring; usable
    bare (`@dataclass`) or with options, as the standard one."""

    def wrap(c: C) -> C:
        return _decorate(c, options)

    return wrap if cls is None else wrap(cls)


def _decorate(cls: C, options: dict[str, Any]) -> C:
    """`cls` made a dataclass by the standard decorator, with the three methods added here."""
    if not _LEAN or any(options.get(name) for name in _STANDARD_ONLY):
        return dataclasses.dataclass(cls, **options)
    opts = dict(options)
    want_repr = opts.pop("repr", True)
    want_eq = opts.pop("eq", True)
    own = cls.__dict__
    own_hash = own.get("__hash__", _MISSING)
    explicit_hash = not (own_hash is _MISSING or (own_hash is None and "__eq__" in own))
    has_repr, has_eq = "__repr__" in own, "__eq__" in own
    dataclasses.exec = cached_exec  # type: ignore[attr-defined]  # its `exec`, for this call
    try:
        cls = dataclasses.dataclass(cls, repr=False, eq=False, **opts)
    finally:
        vars(dataclasses).pop("exec", None)
    field_list = dataclasses.fields(cls)
    if want_repr and not has_repr:
        _add(cls, _repr_method([f.name for f in field_list if f.repr]))
    if want_eq:
        if not has_eq:
            compared = _tuple_text([f.name for f in field_list if f.compare])
            _add(cls, _first_call_compiles(
                cls, "__eq__", "self, other", ["if other.__class__ is self.__class__:",
                                               f" return {compared('self')}=={compared('other')}",
                                               "return NotImplemented"]))
        if not explicit_hash:
            if opts.get("frozen", False):
                hashed = _tuple_text([f.name for f in field_list
                                      if (f.compare if f.hash is None else f.hash)])
                _add(cls, _first_call_compiles(cls, "__hash__", "self",
                                               [f"return hash({hashed('self')})"]))
            else:
                cls.__hash__ = None  # type: ignore[assignment]
    return cls


def _add(cls: type, method: Callable[..., Any]) -> None:
    """Set `method` on `cls` under its name, qualified by the class as the decorator does."""
    method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
    setattr(cls, method.__name__, method)


def _tuple_text(names: list[str]) -> Callable[[str], str]:
    """`(obj.a,obj.b,)` for an object's name (`()` without fields), as the decorator writes."""
    return lambda obj: f"({''.join(f'{obj}.{name},' for name in names)})"


def _compile(cls: type, name: str, args: str, body: list[str]) -> Callable[..., Any]:
    """The method `def name(args): body`, compiled in `cls`'s module as the decorator does."""
    module = sys.modules.get(cls.__module__)
    namespace: dict[str, Any] = {}
    text = f"def {name}({args}):\n" + "\n".join(f" {line}" for line in body)
    exec(compile_text(text), module.__dict__ if module is not None else {}, namespace)
    method: Callable[..., Any] = namespace[name]
    method.__qualname__ = f"{cls.__qualname__}.{name}"
    return method


def _first_call_compiles(cls: type, name: str, args: str,
                         body: list[str]) -> Callable[..., Any]:
    """A stand-in for method `name` of `cls` that, when first called, compiles the method,
    puts it on `cls` in its place and returns what it returns."""

    def stand_in(self: Any, *rest: Any) -> Any:
        method = _compile(cls, name, args, body)
        setattr(cls, name, method)
        return method(self, *rest)

    stand_in.__name__ = name
    return stand_in


def _repr_method(names: list[str]) -> Callable[[Any], str]:
    """`__repr__`: `Class(name=value!r, ...)`, or `...` for an object whose repr is already
    being written on this thread (a cycle)."""
    running: set[tuple[int, int]] = set()

    def __repr__(self: Any) -> str:
        key = id(self), get_ident()
        if key in running:
            return "..."
        running.add(key)
        try:
            return (self.__class__.__qualname__ + "("
                    + ", ".join([f"{name}={getattr(self, name)!r}" for name in names]) + ")")
        finally:
            running.discard(key)

    return __repr__


__all__ = ["dataclass"]
