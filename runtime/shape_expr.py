"""Evaluating the symbolic shape expressions of the metadata ("n", "n * 2", "min(n, 4)").

The expressions are Python syntax restricted to integers, names, + - * // % unary minus and
min/max; anything else is rejected rather than evaluated. A branch condition of a GPU launch
plan (`truth`) adds the six comparisons, `and`, `or`, `not` and float constants.
"""

from __future__ import annotations

import ast
import operator
from functools import lru_cache

_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b if b else 0,
    ast.Mod: lambda a, b: a % b if b else 0,
}


class ShapeExprError(ValueError):
    """A shape expression outside the supported subset, or with an unbound name."""


@lru_cache(maxsize=256)
def _parse(text: str) -> ast.expr:
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        raise ShapeExprError(f"malformed shape expression '{text}'") from None


def evaluate(dim: int | str, env: dict[str, int]) -> int:
    """The value of a dimension (an int, or an expression over the names in `env`)."""
    if isinstance(dim, int):
        return dim
    return _eval(_parse(dim), env, dim)


def names(dim: int | str) -> set[str]:
    """The symbolic names a dimension mentions."""
    if isinstance(dim, int):
        return set()
    return {n.id for n in ast.walk(_parse(dim)) if isinstance(n, ast.Name)}


def solve(dim: str, value: int, env: dict[str, int]) -> tuple[str, int] | None:
    """The one unknown name of a product dimension (`M * N`, `M` in `env`) that makes it
    `value`: `value` divided by the other factors, which must divide it exactly; None when
    `dim` is not such a product."""
    factors = _factors(_parse(dim))
    unknown = [f for f in factors if isinstance(f, ast.Name) and f.id not in env]
    if len(unknown) != 1 or names(dim) - set(env) != {unknown[0].id}:
        return None
    divisor = 1
    for f in factors:
        if f is not unknown[0]:
            divisor *= _eval(f, env, dim)
    if divisor == 0 or value % divisor:
        raise ShapeExprError(f"dimension {value} is not a multiple of {divisor}, so "
                             f"'{unknown[0].id}' of '{dim}' has no value")
    return unknown[0].id, value // divisor


def _factors(node: ast.expr) -> list[ast.expr]:
    """The factors of a product of multiplications."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _factors(node.left) + _factors(node.right)
    return [node]


def _eval(node: ast.expr, env: dict[str, int], text: str) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise ShapeExprError(f"symbolic size '{node.id}' is not known")
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_eval(node.left, env, text), _eval(node.right, env, text))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand, env, text)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in ("min", "max") and len(node.args) == 2 and not node.keywords:
        a, b = (_eval(x, env, text) for x in node.args)
        return min(a, b) if node.func.id == "min" else max(a, b)
    raise ShapeExprError(f"unsupported shape expression '{text}'")


_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
            ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}


def truth(text: str, env: dict[str, int | float]) -> bool:
    """The value of a branch condition (`"c"`, `"(n > 2) and (not d)"`) over `env`."""
    return bool(_truth(_parse(text), env, text))


def _truth(node: ast.expr, env: dict[str, int | float], text: str) -> int | float | bool:
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And | ast.Or):
        values = [bool(_truth(v, env, text)) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _truth(node.operand, env, text)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        return _COMPARE[type(node.ops[0])](_truth(node.left, env, text),
                                           _truth(node.comparators[0], env, text))
    if isinstance(node, ast.Constant) and isinstance(node.value, float):
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]  # a scalar parameter may be a float
    return _eval(node, env, text)  # type: ignore[arg-type]
