"""How many floating-point operations a call of an exported function does, from its IR.

Each float arithmetic operation (`+ - * /`, min/max, a math call such as `exp`) in a stored
value counts once per lane, times the extents of the loops around it; both branches of an `if`
count, so the figure is an upper bound. The result is a symbolic expression over the function's
size variables (`"2 * m * n * k"`), recorded in the metadata as `flops` for `tirc run` to turn
into GFLOP/s. Functions whose loop extents are not expressions of sizes get no count.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.analysis.entry_signature import shape_text
from tirc.ir.arith import simplify
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import BinOp, Call, IntImm, PrimExpr, binop
from tirc.ir.stmt import BufferStore, For
from tirc.ir.visitor import post_order_visit

_FLOAT_BINOPS = {"add", "sub", "mul", "div", "truediv", "min", "max", "pow"}
_NOT_ARITHMETIC = ("tirc.", "tvm_", "reinterpret", "likely", "assume")


def _ops_in(value: PrimExpr) -> int:
    """Float operations (lanes included) in one expression."""
    found = 0

    def visit(node: Any) -> None:
        nonlocal found
        dt = getattr(node, "dtype", None)
        if dt is None or not dt.is_float:
            return
        if isinstance(node, BinOp) and node.op in _FLOAT_BINOPS:
            found += dt.lanes
        elif isinstance(node, Call) and not node.op.startswith(_NOT_ARITHMETIC):
            found += dt.lanes

    post_order_visit(value, visit)
    return found


def _scaled(total: PrimExpr, count: int, weight: PrimExpr) -> PrimExpr:
    term = weight if count == 1 else binop("mul", IntImm(count, weight.dtype), weight)
    return term if isinstance(total, IntImm) and total.value == 0 else binop("add", total, term)


def flop_count(body: Any) -> PrimExpr:
    """The float operations of one run of `body`, as an int64 expression of its sizes."""
    one = IntImm(1, _int64())

    def walk(node: Any, weight: PrimExpr, total: PrimExpr) -> PrimExpr:
        if isinstance(node, For):
            extent = node.extent if node.extent.dtype.bits == 64 else \
                _widen(node.extent)
            inner = extent if _is_one(weight) else binop("mul", weight, extent)
            return walk(node.body, inner, total)
        if isinstance(node, BufferStore):
            count = _ops_in(node.value)
            return _scaled(total, count, weight) if count else total
        for _, child in getattr(node, "node_fields", lambda: [])():
            for item in child if isinstance(child, (list, tuple)) else (child,):
                if hasattr(item, "node_fields") and not isinstance(item, PrimExpr):
                    total = walk(item, weight, total)
        return total

    return walk(body, one, IntImm(0, _int64()))


def constant_flop_count(body: Any) -> int | None:
    """`flop_count` when every loop has a constant extent, counted in Python integers (no
    expression to build and simplify); None when a loop's extent is symbolic."""

    def walk(node: Any, weight: int) -> int | None:
        if isinstance(node, For):
            if not isinstance(node.extent, IntImm):
                return None
            return walk(node.body, weight * node.extent.value)
        if isinstance(node, BufferStore):
            return _ops_in(node.value) * weight
        total = 0
        for _, child in getattr(node, "node_fields", lambda: [])():
            for item in child if isinstance(child, (list, tuple)) else (child,):
                if hasattr(item, "node_fields") and not isinstance(item, PrimExpr):
                    inner = walk(item, weight)
                    if inner is None:
                        return None
                    total += inner
        return total

    return walk(body, 1)


def flops_text(body: Any) -> int | str | None:
    """`flop_count` as the metadata writes it (an int or an expression), or None."""
    known = constant_flop_count(body)
    if known is not None:
        return known
    try:
        return shape_text(simplify(flop_count(body)))
    except (CompileError, RecursionError):
        return None


def _int64() -> Any:
    from tirc.ir.dtype import dtype

    return dtype("int64")


def _widen(e: PrimExpr) -> PrimExpr:
    from tirc.ir.expr import cast

    return cast("int64", e)


def _is_one(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 1
