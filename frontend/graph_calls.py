"""Graph-level builtins with their own argument rules: `R.call_tir`, `R.call_tir_inplace`,
`R.call_dps_packed`, `R.const`, `R.shape`, `R.prim_value`, `R.str`, `R.print`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from tirc.frontend import syntax as S
from tirc.frontend.builder_expr import literal_value
from tirc.frontend.signature import Sig, check_call
from tirc.ir.dtype import DType
from tirc.ir.graph import (
    Constant,
    ExternFunc,
    GCall,
    GraphExpr,
    PrimValue,
    ShapeExpr,
    StringValue,
    Tuple,
    TupleGetItem,
)

if TYPE_CHECKING:
    from tirc.frontend.builder_graph import GraphBuilder



def _call_tir(g: GraphBuilder, call: S.Call, name: str) -> GraphExpr:
    """`R.call_tir(f, (args,), out_sinfo, tir_vars)`; a third positional `R.shape([...])` is
    taken as tir_vars (the form tirc's printer writes)."""
    a = check_call(g.ctx, call, name, Sig(2, 4, ("out_sinfo", "tir_vars", "out_ty")))
    if "out_ty" in a.kw:  # TVM 0.27's name for out_sinfo
        if "out_sinfo" in a.kw:
            g.ctx.error(f"{name} got out_sinfo and out_ty", a.kw["out_ty"].span)
        a.kw["out_sinfo"] = a.kw.pop("out_ty")
    extra = list(a.pos[2:])
    if extra and S.call_name(extra[0]) in SHAPE_CALLS and "tir_vars" not in a.kw:
        a.kw["tir_vars"] = extra.pop(0)
    for key, node in zip(("out_sinfo", "tir_vars"), extra):
        if key in a.kw:
            g.ctx.error(f"{name} got argument '{key}' twice", node.span)
        a.kw[key] = node
    func = g.global_var(a.pos[0])
    args: list[GraphExpr] = [func, g.args_tuple(a.pos[1])]
    if "tir_vars" in a.kw:
        args.append(g.shape_value(a.kw["tir_vars"]))
    if "out_sinfo" not in a.kw:
        g.ctx.error(f"{name} needs out_sinfo=R.Tensor(...)", call.span)
    return GCall(name[2:], tuple(args), {}, g.out_sinfo(a.kw["out_sinfo"]), span=call.span)


def _call_tir_inplace(g: GraphBuilder, call: S.Call, name: str) -> GraphExpr:
    """TVM's `R.call_tir_inplace(f, (args,), inplace_indices, out_sinfo, tir_vars)`: output k
    is argument `inplace_indices[k]` written in place (-1: a fresh output, as R.call_tir's)."""
    a = check_call(g.ctx, call, name, Sig(2, 5, ("inplace_indices", "out_sinfo", "tir_vars",
                                                 "out_ty", "in_place")))
    if "out_ty" in a.kw:  # TVM 0.27's name for out_sinfo
        if "out_sinfo" in a.kw:
            g.ctx.error(f"{name} got out_sinfo and out_ty", a.kw["out_ty"].span)
        a.kw["out_sinfo"] = a.kw.pop("out_ty")
    for key, node in zip(("inplace_indices", "out_sinfo", "tir_vars"), a.pos[2:]):
        if key in a.kw:
            g.ctx.error(f"{name} got argument '{key}' twice", node.span)
        a.kw[key] = node
    for key in ("inplace_indices", "out_sinfo"):
        if key not in a.kw:
            g.ctx.error(f"{name} needs {key}=...", call.span)
    func = g.global_var(a.pos[0])
    args: list[GraphExpr] = [func, g.args_tuple(a.pos[1])]
    if "tir_vars" in a.kw:
        args.append(g.shape_value(a.kw["tir_vars"]))
    node = a.kw["inplace_indices"]
    items = node.elts if isinstance(node, (S.Tuple, S.List)) else [node]
    indices = []
    for e in items:
        v = literal_value(e)
        if not isinstance(v, int) or isinstance(v, bool):
            g.ctx.error(f"{name}: an in-place index is an integer literal (-1: no argument)",
                        e.span)
        indices.append(v)
    attrs: dict[str, Any] = {"inplace_indices": tuple(indices)}
    if "in_place" in a.kw:  # legalize-ops' mark, printed after it (passes/graph/inplace_calls)
        attrs["in_place"] = g.eb.attr_value(a.kw["in_place"])
    return GCall(name[2:], tuple(args), attrs, g.out_sinfo(a.kw["out_sinfo"]), span=call.span)


def _print(g: GraphBuilder, call: S.Call, name: str) -> GraphExpr:
    """TVM's `R.print(*values, format="")`: prints the values at run time (a side effect;
    `format` a Python format string, `R.str(...)` too), returns an empty tuple."""
    a = check_call(g.ctx, call, name, Sig(0, None, ("format",)))
    node = a.kw.get("format")
    fmt = ""
    if node is not None:
        if S.call_name(node) == "R.str":
            value = g.gexpr(node)
            assert isinstance(value, StringValue)
            fmt = value.value
        else:
            fmt = g.eb.str_literal(node, "the format of R.print")
    values = Tuple(tuple(g.gexpr(v) for v in a.pos), span=call.span)
    return GCall("print", (values,), {"format": fmt}, span=call.span)


def _call_packed(g: GraphBuilder, call: S.Call, name: str) -> GraphExpr:
    """Refused: R.call_packed calls a function of TVM's runtime registry by name, and returns
    what it allocates; a tirc library has no such registry."""
    g.ctx.unsupported("R.call_packed (a function of TVM's runtime registry): write the C "
                      "function in destination-passing style and call it with "
                      "R.call_dps_packed(\"symbol\", (args,), out_sinfo=...)", call.func.span)


def _emit_te(g: GraphBuilder, call: S.Call, name: str) -> GraphExpr:
    """Refused: R.emit_te runs a Python function (a TOPI compute) to build a loop function."""
    g.ctx.unsupported("R.emit_te (it runs a Python function to build the kernel): write the "
                      "kernel as a @T.prim_func and call it with R.call_tir(Module.kernel, "
                      "(args,), out_sinfo=...), or use the graph operator (R.add, R.matmul, ...)",
                      call.func.span)


def _call_dps_packed(g: GraphBuilder, call: S.Call, name: str) -> GraphExpr:
    a = check_call(g.ctx, call, name, Sig(2, 2, ("out_sinfo", "out_ty"), positional_kw=True))
    if "out_ty" in a.kw:  # TVM 0.27's name for out_sinfo
        if "out_sinfo" in a.kw:
            g.ctx.error(f"{name} got out_sinfo and out_ty", a.kw["out_ty"].span)
        a.kw["out_sinfo"] = a.kw.pop("out_ty")
    symbol = g.eb.str_literal(a.pos[0], "the packed function name")
    if "out_sinfo" not in a.kw:
        g.ctx.error(f"{name} needs out_sinfo=R.Tensor(...)", call.span)
    args = (ExternFunc(symbol, span=a.pos[0].span), g.args_tuple(a.pos[1]))
    return GCall("call_dps_packed", args, {}, g.out_sinfo(a.kw["out_sinfo"]), span=call.span)


def _const(g: GraphBuilder, call: S.Call, name: str) -> GraphExpr:
    """`R.const(value, dtype)`: a number, or a (nested) list of them, a tensor constant."""
    a = check_call(g.ctx, call, name, Sig(1, 2, ("dtype",)))
    value = _const_value(g, a.pos[0])
    numbers = list(_flat(value))
    dt_node = a.get(1, "dtype")
    if dt_node is not None:
        dt = g.eb.dtype_arg(dt_node)
    else:
        dt = DType.parse("bool" if numbers and all(isinstance(x, bool) for x in numbers) else
                         "float32" if any(isinstance(x, float) for x in numbers) else "int32")
    if not dt.is_float and any(isinstance(x, float) for x in numbers):
        g.ctx.error(f"R.const of a float literal with dtype {dt}", a.pos[0].span)
    return Constant(_cast_numbers(value, dt.is_float), dt, span=call.span)


def _const_value(g: GraphBuilder, node: S.Expr) -> Any:
    """A number, or nested tuples of numbers for a (nested) list of the same lengths."""
    if isinstance(node, (S.List, S.Tuple)):
        items = tuple(_const_value(g, e) for e in node.elts)
        shapes = {Constant(x, DType.parse("int32")).shape for x in items}
        if not items or len(shapes) != 1:
            g.ctx.error("R.const of a list needs a non-empty list whose items have one shape "
                        "(a rectangular nested list)", node.span)
        return items
    value = _special_float(node) if S.call_name(node) == "float" else literal_value(node)
    if not isinstance(value, (int, float)):
        g.ctx.unsupported("R.const of anything but a number or a list of numbers", node.span)
    return value


def _flat(value: Any) -> Iterator[Any]:
    """The numbers of a constant's value, in row-major order."""
    if isinstance(value, tuple):
        for x in value:
            yield from _flat(x)
    else:
        yield value


def _cast_numbers(value: Any, to_float: bool) -> Any:
    """The value with every number a float when the dtype is a float type."""
    if isinstance(value, tuple):
        return tuple(_cast_numbers(x, to_float) for x in value)
    return float(value) if to_float else value


def _special_float(node: S.Expr) -> float | None:
    """`float("inf")`, `float("-inf")` or `float("nan")`: how TVM writes a constant that is
    not a finite number (None for any other `float(...)`)."""
    assert isinstance(node, S.Call)
    if len(node.args) != 1 or node.keywords:
        return None
    text = literal_value(node.args[0])
    if text not in ("inf", "-inf", "nan", "+inf"):
        return None
    return float(text)


# `R.shape([...])`, and `R.ShapeExpr([...])`, TVM's constructor spelling of it.
SHAPE_CALLS = ("R.shape", "R.ShapeExpr")


def _shape(g: GraphBuilder, call: S.Call, name: str) -> GraphExpr:
    """`R.shape([n, 4])` (or `R.ShapeExpr([n, 4])`): a shape value of sizes."""
    a = check_call(g.ctx, call, name, Sig(1, 1))
    node = a.pos[0]
    if not isinstance(node, (S.Tuple, S.List)):
        g.ctx.error("R.shape takes a list of sizes: R.shape([n, 4])", node.span)
    return ShapeExpr(tuple(g.eb.index(e, "a size") for e in node.elts), span=call.span)


def _prim_value(g: GraphBuilder, call: S.Call, name: str) -> GraphExpr:
    a = check_call(g.ctx, call, name, Sig(1, 1))
    return PrimValue(g.eb.expr(a.pos[0]), span=call.span)


def _tuple(g: GraphBuilder, call: S.Call, name: str) -> GraphExpr:
    """`R.tuple(x, y)`, TVM's spelling of the tuple `(x, y)` (and `R.tuple()` of `()`)."""
    a = check_call(g.ctx, call, name, Sig(0, None))
    return Tuple(tuple(g.gexpr(e) for e in a.pos), span=call.span)


def _tuple_get_item(g: GraphBuilder, call: S.Call, name: str) -> GraphExpr:
    """`R.TupleGetItem(t, 1)`, TVM's constructor spelling of `t[1]`."""
    a = check_call(g.ctx, call, name, Sig(2, 2))
    idx = literal_value(a.pos[1])
    if not isinstance(idx, int) or isinstance(idx, bool) or idx < 0:
        g.ctx.error("a tuple index is a non-negative integer literal", a.pos[1].span)
    return TupleGetItem(g.gexpr(a.pos[0]), idx, span=call.span)


def _str(g: GraphBuilder, call: S.Call, name: str) -> GraphExpr:
    a = check_call(g.ctx, call, name, Sig(1, 1))
    return StringValue(g.eb.str_literal(a.pos[0], "R.str's argument"), span=call.span)


SPECIAL_CALLS: dict[str, Callable[[GraphBuilder, S.Call, str], GraphExpr]] = {
    "call_tir": _call_tir,
    "call_tir_inplace": _call_tir_inplace,
    "call_packed": _call_packed,
    "print": _print,
    "emit_te": _emit_te,
    "call_dps_packed": _call_dps_packed,
    "const": _const,
    "shape": _shape,
    "ShapeExpr": _shape,
    "prim_value": _prim_value,
    "str": _str,
    "tuple": _tuple,
    "TupleGetItem": _tuple_get_item,
}
