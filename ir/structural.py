"""Structural equality and hashing: equal up to a renaming of definitions.

Variables, buffers and graph variables are matched by position of first appearance (their
names don't matter), as TVM's `structural_equal` with free-variable mapping does.
"""

from __future__ import annotations

import enum
import hashlib
from typing import Any

from tirc.ir.node import IdentityNode, Node

# Nodes whose definitions are independent of everything outside them.
_SCOPES = ("PrimFunc", "Function")


class _Equal:
    def __init__(self) -> None:
        self.lhs_to_rhs: dict[int, Any] = {}
        self.rhs_to_lhs: dict[int, Any] = {}
        self.path: list[str] = []

    def eq(self, a: Any, b: Any) -> bool:
        if a is b:
            return True
        if isinstance(a, IdentityNode) or isinstance(b, IdentityNode):
            return self._eq_def(a, b)
        if isinstance(a, Node):
            if type(a) is not type(b):
                return False
            if type(a).__name__ in _SCOPES and self.lhs_to_rhs:
                return _Equal().eq(a, b)  # each function is its own scope of definitions
            pairs = zip(a.compared_fields(), b.compared_fields())
            return all(self.eq(va, vb) for (_, va), (_, vb) in pairs)
        if isinstance(a, (tuple, list)):
            if not isinstance(b, (tuple, list)) or len(a) != len(b):
                return False
            return all(self.eq(x, y) for x, y in zip(a, b))
        if isinstance(a, dict):
            if not isinstance(b, dict) or len(a) != len(b):
                return False
            return all(self.eq(ka, kb) and self.eq(a[ka], b[kb]) for ka, kb in zip(a, b))
        if type(a) is not type(b):
            return False
        return bool(a == b)

    def _eq_def(self, a: Any, b: Any) -> bool:
        if type(a) is not type(b):
            return False
        mapped = self.lhs_to_rhs.get(id(a))
        if mapped is not None:
            return mapped is b
        if id(b) in self.rhs_to_lhs:
            return False
        self.lhs_to_rhs[id(a)] = b
        self.rhs_to_lhs[id(b)] = a
        for (name, va), (_, vb) in zip(a.compared_fields(), b.compared_fields()):
            if name == "name":
                continue
            if not self.eq(va, vb):
                return False
        return True


def structural_equal(a: Any, b: Any) -> bool:
    """True when `a` and `b` are the same IR up to renaming of definitions and spans."""
    return _Equal().eq(a, b)


def same_expr(a: Any, b: Any) -> bool:
    """Equality of two expressions where variables and buffers are the same objects (unlike
    structural_equal, which matches free variables by position)."""
    if a is b:
        return True
    if isinstance(a, IdentityNode) or isinstance(b, IdentityNode):
        return False
    if isinstance(a, Node):
        if type(a) is not type(b):
            return False
        return all(same_expr(x, y) for (_, x), (_, y) in zip(a.compared_fields(),
                                                             b.compared_fields()))
    if isinstance(a, tuple | list):
        return isinstance(b, tuple | list) and len(a) == len(b) and \
            all(same_expr(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and bool(a == b)


class _Hasher:
    def __init__(self) -> None:
        self.defs: dict[int, int] = {}
        self.h = hashlib.blake2b(digest_size=8)

    def feed(self, x: Any) -> None:
        if isinstance(x, IdentityNode):
            idx = self.defs.get(id(x))
            if idx is not None:
                self.h.update(f"#ref{idx}".encode())
                return
            self.defs[id(x)] = len(self.defs)
            self.h.update(f"#def{type(x).__name__}".encode())
            for name, v in x.compared_fields():
                if name != "name":
                    self.feed(v)
        elif isinstance(x, Node) and type(x).__name__ in _SCOPES and self.defs:
            inner = _Hasher()
            inner.feed(x)
            self.h.update(inner.h.digest())
        elif isinstance(x, Node):
            self.h.update(type(x).__name__.encode())
            for _, v in x.compared_fields():
                self.feed(v)
        elif isinstance(x, (tuple, list)):
            self.h.update(f"[{len(x)}".encode())
            for v in x:
                self.feed(v)
        elif isinstance(x, dict):
            self.h.update(f"{{{len(x)}".encode())
            for k, v in x.items():
                self.feed(k)
                self.feed(v)
        elif isinstance(x, enum.Enum):
            self.h.update(str(x.value).encode())
        else:
            self.h.update(f"{type(x).__name__}:{x!r}".encode())


def structural_hash(x: Any) -> int:
    """A hash consistent with `structural_equal`."""
    hasher = _Hasher()
    hasher.feed(x)
    return int.from_bytes(hasher.h.digest(), "little")


def first_difference(a: Any, b: Any, path: str = "root") -> str | None:
    """Where `a` and `b` first differ structurally (a field path and both values), or None."""
    return _diff(_Equal(), a, b, path)


def _diff(eq: _Equal, a: Any, b: Any, path: str) -> str | None:
    if isinstance(a, IdentityNode) or isinstance(b, IdentityNode):
        if type(a) is not type(b):
            return f"{path}: {type(a).__name__} vs {type(b).__name__}"
        mapped = eq.lhs_to_rhs.get(id(a))
        if mapped is not None:
            return None if mapped is b else f"{path}: {a!r} is bound to another definition"
        eq.lhs_to_rhs[id(a)] = b
        eq.rhs_to_lhs[id(b)] = a
    if isinstance(a, Node) and type(a) is type(b):
        if type(a).__name__ in _SCOPES and eq.lhs_to_rhs:
            eq = _Equal()
        for (name, va), (_, vb) in zip(a.compared_fields(), b.compared_fields()):
            if isinstance(a, IdentityNode) and name == "name":
                continue
            found = _diff(eq, va, vb, f"{path}.{name}")
            if found:
                return found
        return None
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            found = _diff(eq, x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(a, dict) and isinstance(b, dict) and len(a) == len(b):
        for ka, kb in zip(a, b):
            found = _diff(eq, ka, kb, f"{path}.key({ka!r})") or _diff(eq, a[ka], b[kb],
                                                                       f"{path}[{ka!r}]")
            if found:
                return found
        return None
    return None if eq.eq(a, b) else f"{path}: {a!r} vs {b!r}"
