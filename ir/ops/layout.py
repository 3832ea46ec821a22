"""`R.layout_transform(x, index_map=lambda i, j: (i // 4, j, i % 4), pad_value=None)` (TVM's):
each element of `x` moves to the index the map gives it.

The output shape is the map's image of the input's, as TVM 0.27 infers it: an index kept
whole has its axis' size, `i // k` has `ceildiv(n, k)` values and `i % k` has `k` (even where
the axis is a constant `n < k`: `(1, 1, 1, 3)` for `(a, c, b // 3, b % 3)` over `(1, 2, 1)`).
Where that holds more elements than the input (`k`
does not divide `n`) the rest is padding, `pad_value` (0 when not given, as TVM's
legalization). The map sends each index to one output, or splits it into `i // k` and
`i % k` (the layouts TVM writes: `NCHW` -> `NCHW4c`, transposes); each output is one of those.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.expr import BinOp, IntImm, PrimExpr, Var, binop
from tirc.ir.graph import StructInfo
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import dim, dim_text, simplify_dim, tensor
from tirc.ir.schedule import SchedLambda

# Per output of an index map: the input axis it reads, "whole" / "div" / "mod", the factor.
Part = tuple[int, str, int]


def layout_parts(oc: OpCall) -> list[Part]:
    """What each output of the call's index map is, checked to be a permutation of the
    input's indices with some split into `i // k` and `i % k`."""
    lam: Any = oc.values["index_map"]
    x = oc.tensor("x")
    assert x.shape is not None
    if not isinstance(lam, SchedLambda):
        oc.error("index_map must be a lambda, such as lambda i, j: (i // 4, j, i % 4)")
    if len(lam.params) != len(x.shape):
        oc.error(f"the index map takes {len(lam.params)} indices, but the tensor has rank "
                 f"{len(x.shape)}")
    for key in ("axis_separators", "input_axis_separators"):
        if oc.values.get(key):
            oc.error(f"{key} are not supported (the result is one flat buffer)")
    params = list(lam.params)
    parts: list[Part] = []
    for k, e in enumerate(lam.body):
        part = _part(e, params)
        if part is None:
            oc.error(f"output {k} of the index map, {dim_text(e)}, must be an index `i`, "
                     "`i // k` or `i % k` (k a positive constant)")
        parts.append(part)
    for a, p in enumerate(params):
        uses = sorted((kind, f) for axis, kind, f in parts if axis == a)
        kinds = [kind for kind, _ in uses]
        if kinds not in (["whole"], ["div", "mod"]) or len({f for _, f in uses}) != 1:
            oc.error(f"the index map must send index {p.name} to one output, or split it into "
                     f"`{p.name} // k` and `{p.name} % k` (TVM needs a one-to-one map)")
    return parts


def _part(e: PrimExpr, params: list[Var]) -> Part | None:
    """`e` as (axis, kind, factor), or None when it is no index, `i // k` or `i % k`."""
    if isinstance(e, Var) and e in params:
        return params.index(e), "whole", 1
    if isinstance(e, BinOp) and e.op in ("floordiv", "floormod") and e.a in params and \
            isinstance(e.b, IntImm) and e.b.value > 0:
        return params.index(e.a), "div" if e.op == "floordiv" else "mod", e.b.value  # type: ignore
    return None


def layout_shape(shape: tuple[PrimExpr, ...] | list[PrimExpr], parts: list[Part]
                 ) -> list[PrimExpr]:
    """The output shape of an index map with these parts over an input of `shape`."""
    out = []
    for axis, kind, f in parts:
        n = shape[axis]
        if kind == "whole":
            out.append(dim(n))
        elif kind == "div":
            out.append(simplify_dim(binop("floordiv", binop("add", dim(n), dim(f - 1)), dim(f))))
        else:
            out.append(dim(f))
    return out


def _layout_transform(oc: OpCall) -> StructInfo:
    x = oc.tensor("x")
    assert x.shape is not None
    return tensor(layout_shape(x.shape, layout_parts(oc)), x.dtype)


register("layout_transform", [Param("x", "tensor"), Param("index_map", "index_map"),
                              Param("pad_value", "number", None),
                              Param("axis_separators", "ints", None),
                              Param("input_axis_separators", "ints", None)],
         _layout_transform)
