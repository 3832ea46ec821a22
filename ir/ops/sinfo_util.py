"""Shape arithmetic for struct info inference: int64 dimensions, symbolic equality, printing.

Graph-level shapes are tuples of PrimExpr (int64 constants and symbolic variables such as `n`).
Two dimensions are equal when the simplifier proves it for every non-negative value of their
variables; `shape_text` prints a shape as a user wrote it, `(n, 256)`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from tirc.ir.arith import make_analyzer
from tirc.ir.dtype import DType, dtype
from tirc.ir.expr import IntImm, PrimExpr, Var, binop, cast
from tirc.ir.graph import ObjectSInfo, StructInfo, TensorSInfo, TupleSInfo
from tirc.ir.visitor import post_order_visit

INT64 = dtype("int64")
Shape = tuple[PrimExpr, ...]


def dim(value: int | PrimExpr) -> PrimExpr:
    """A dimension as an int64 expression (ints become int64 constants)."""
    if isinstance(value, PrimExpr):
        if isinstance(value, IntImm) and value.dtype != INT64:
            return IntImm(value.value, INT64)
        return value if value.dtype == INT64 else cast(INT64, value)
    return IntImm(int(value), INT64)


def const_dim(d: PrimExpr) -> int | None:
    """The value of a constant dimension, None for a symbolic one."""
    return d.value if isinstance(d, IntImm) else None


def shape_vars(*shapes: Sequence[PrimExpr]) -> list[Var]:
    """The symbolic variables of some shapes, in order of first appearance."""
    found: list[Var] = []
    for shape in shapes:
        for d in shape:
            post_order_visit(d, lambda n: found.append(n) if isinstance(n, Var)
                             and n not in found else None)
    return found


def simplify_dim(d: PrimExpr) -> PrimExpr:
    """`d` simplified, knowing every symbolic size is non-negative."""
    if isinstance(d, IntImm):
        return dim(d)
    an = make_analyzer({v: (0, None) for v in shape_vars([d])})
    return dim(an.simplify(dim(d)))


def dims_equal(a: PrimExpr, b: PrimExpr) -> bool:
    """True when two dimensions are provably equal for all non-negative symbolic sizes."""
    ca, cb = const_dim(a), const_dim(b)
    if ca is not None and cb is not None:
        return ca == cb
    if a is b:
        return True
    an = make_analyzer({v: (0, None) for v in shape_vars([a, b])})
    return an.can_prove(binop("eq", dim(a), dim(b)))


def shapes_equal(a: Sequence[PrimExpr], b: Sequence[PrimExpr]) -> bool:
    return len(a) == len(b) and all(dims_equal(x, y) for x, y in zip(a, b))


def dims_differ(a: PrimExpr, b: PrimExpr) -> bool:
    """True when two dimensions provably differ for all non-negative sizes (3 and 4, n and
    n + 1): the only case TVM's struct info inference refuses."""
    ca, cb = const_dim(a), const_dim(b)
    if ca is not None and cb is not None:
        return ca != cb
    an = make_analyzer({v: (0, None) for v in shape_vars([a, b])})
    return const_dim(dim(an.simplify(binop("sub", dim(a), dim(b))))) not in (None, 0) or \
        an.can_prove(binop("ne", dim(a), dim(b)))


# The assumptions of the inference running now (innermost `collect_assumptions` last).
_ASSUMED: list[list[tuple[PrimExpr, PrimExpr]]] = []


def dims_match(a: PrimExpr, b: PrimExpr) -> bool:
    """Whether two dimensions may be equal: True when proved equal, False when proved
    different; otherwise True with `a == b` recorded as an assumption (TVM accepts what it
    cannot decide; tirc checks it at run time, tirc.ir.ops.size_checks)."""
    if dims_equal(a, b):
        return True
    if dims_differ(a, b):
        return False
    if _ASSUMED and all(not (x is a and y is b) for x, y in _ASSUMED[-1]):
        _ASSUMED[-1].append((dim(a), dim(b)))
    return True


def shapes_match(a: Sequence[PrimExpr], b: Sequence[PrimExpr]) -> bool:
    """Same rank and every dimension `dims_match`."""
    return len(a) == len(b) and all(dims_match(x, y) for x, y in zip(a, b))


@contextmanager
def collect_assumptions() -> Iterator[list[tuple[PrimExpr, PrimExpr]]]:
    """The equalities `dims_match` assumes inside the `with` (pairs of dimensions)."""
    found: list[tuple[PrimExpr, PrimExpr]] = []
    _ASSUMED.append(found)
    try:
        yield found
    finally:
        _ASSUMED.pop()


def product(dims: Sequence[PrimExpr]) -> PrimExpr:
    """The number of elements of a shape, simplified."""
    total: PrimExpr = dim(1)
    for d in dims:
        total = binop("mul", total, dim(d))
    return simplify_dim(total)


def divide_product(total: Sequence[PrimExpr], part: Sequence[PrimExpr]) -> PrimExpr:
    """prod(total) / prod(part), cancelling equal symbolic factors (`(n*4*64) / (n*4)` = 64)."""
    rest = list(total)
    denominator = []
    for d in part:
        hit = next((k for k, r in enumerate(rest) if dims_equal(r, d)), None)
        if hit is None:
            denominator.append(d)
        else:
            rest.pop(hit)
    return simplify_dim(binop("floordiv", product(rest), product(denominator)))


_INT64_LITERAL = re.compile(r"T\.int64\((-?\d+)\)")


def dim_text(d: PrimExpr) -> str:
    """A dimension as the user writes it: `n`, `n * 2`, `256`."""
    from tirc.ir.printer import print_node

    return _INT64_LITERAL.sub(r"\1", print_node(d))


def shape_text(shape: Sequence[PrimExpr]) -> str:
    """A shape as Python writes a tuple: `(n, 256)`, `(8,)`, `()`."""
    items = [dim_text(d) for d in shape]
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def sinfo_text(s: StructInfo | None) -> str:
    """Struct info for messages: `R.Tensor((n, 256), "float32")`."""
    if s is None or isinstance(s, ObjectSInfo):
        return "R.Object"
    if isinstance(s, TensorSInfo):
        parts = []
        if s.shape is not None:
            parts.append(shape_text(s.shape))
        elif s.ndim >= 0:
            parts.append(f"ndim={s.ndim}")
        if s.dtype is not None:
            parts.append(f'"{s.dtype}"')
        placement = getattr(s, "placement", None)
        if placement is not None:
            parts += [f'"{getattr(s, "device_mesh", "")}"', f'"{placement}"']
            return f"R.DTensor({', '.join(parts)})"
        return f"R.Tensor({', '.join(parts)})"
    if isinstance(s, TupleSInfo):
        return f"R.Tuple({', '.join(sinfo_text(f) for f in s.fields)})"
    from tirc.ir.printer import print_node

    return _INT64_LITERAL.sub(r"\1", print_node(s))


def tensor(shape: Sequence[int | PrimExpr], dt: DType | str | None) -> TensorSInfo:
    """Tensor struct info of a known shape (dimensions as int64)."""
    dims = tuple(dim(d) for d in shape)
    return TensorSInfo(dims, dtype(dt) if dt is not None else None, len(dims))


def ndim_of(s: TensorSInfo) -> int:
    """The rank of a tensor, -1 when unknown."""
    return len(s.shape) if s.shape is not None else s.ndim


def normalize_axis(axis: int, ndim: int) -> int | None:
    """A possibly negative axis as 0..ndim-1, or None when out of range."""
    a = axis + ndim if axis < 0 else axis
    return a if 0 <= a < ndim else None
