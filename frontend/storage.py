"""TVM's lower-level storage statements: `T.allocate`, `T.allocate_const`, and buffer views
(`A.view(shape)`, TVM 0.27's print of a buffer re-declared over the same storage).

`p = T.allocate(extents, dtype, scope)` allocates storage over the statements after it and
binds `p` to its pointer, which `T.Buffer(..., data=p)` / `T.decl_buffer(..., data=p)`
then view. In the IR it is the same Allocate as `T.decl_buffer`, so it prints back as one.
`T.allocate_const(values, dtype, extents)` is such an allocation whose elements are set to
the literal values before the statements after it run.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from tirc.frontend import syntax as S
from tirc.frontend.builder_buffer import shape_dims
from tirc.frontend.builder_expr import ExprBuilder, literal_value
from tirc.frontend.signature import Sig, check_call
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE
from tirc.ir.expr import IntImm, Var, const
from tirc.ir.stmt import Allocate, BufferStore, Stmt, seq

if TYPE_CHECKING:
    from tirc.frontend.builder_stmt import LoopBuilder, Wrapper

ALLOCATE_KWARGS = ("condition", "annotations")
MAX_CONST_ELEMENTS = 1 << 16


def allocate(lb: LoopBuilder, t: S.Name, call: S.Call, name: str) -> Wrapper:
    """`p = T.allocate(...)` or `p = T.allocate_const(...)`: `p` names the storage."""
    eb = lb.eb
    if name == "T.allocate":
        a = check_call(lb.ctx, call, name, Sig(2, 3, ALLOCATE_KWARGS, positional_kw=True,
                                                   names=("extents", "dtype", "scope")))
        extents, dtype_node = a.pos[0], a.pos[1]
        values: list[float | int] | None = None
        scope = eb.str_literal(a.pos[2], "the storage scope") if len(a.pos) > 2 else "global"
        cond = a.kw.get("condition")
        if cond is not None and literal_value(cond) is not True:
            lb.ctx.unsupported("T.allocate with a condition", cond.span)
    else:
        a = check_call(lb.ctx, call, name, Sig(3, 3, ("annotations",),
                                               names=("data", "dtype", "extents")))
        values = _literals(eb, a.pos[0])
        dtype_node, extents, scope = a.pos[1], a.pos[2], "global"
    dt = eb.dtype_arg(dtype_node)
    shape = shape_dims(eb, extents)
    data = Var(t.id, HANDLE, span=t.span)
    buf = Buffer(name=t.id, shape=shape, dtype=dt, data=data, scope=scope, span=call.span)
    lb.scope.define(t.id, data, t.span)
    init: list[Stmt] = []
    if values is not None:
        dims = [d.value if isinstance(d, IntImm) else None for d in shape]
        if None in dims:
            lb.ctx.error("T.allocate_const needs constant extents", extents.span)
        size = 1
        for d in dims:
            size *= d  # type: ignore[operator]
        if size != len(values) or size > MAX_CONST_ELEMENTS:
            lb.ctx.error(f"T.allocate_const has {len(values)} values for {size} elements",
                         a.pos[0].span)
        for idx, v in zip(itertools.product(*[range(d) for d in dims]), values):  # type: ignore
            index = tuple(IntImm(i, d.dtype) for i, d in zip(idx, shape))
            init.append(BufferStore(buf, const(v, dt), index, span=call.span))

    def wrap(body: Stmt) -> Stmt:
        return Allocate(buf, seq(*init, body) if init else body, span=call.span)

    return wrap


def _literals(eb: ExprBuilder, node: S.Expr) -> list[float | int]:
    items = node.elts if isinstance(node, (S.List, S.Tuple)) else [node]
    out = []
    for item in items:
        v = literal_value(item)
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            eb.ctx.error("T.allocate_const takes a list of number literals", item.span)
        out.append(v)
    return out


def buffer_view(eb: ExprBuilder, name: str, call: S.Call) -> Buffer:
    """`B = A.view(shape..., dtype=...)`: a buffer over A's storage with another shape."""
    assert isinstance(call.func, S.Attribute)
    base = eb.buffer(call.func.value)
    a = check_call(eb.ctx, call, f"{base.name}.view", Sig(0, None, ("dtype", "shape")))
    if "shape" in a.kw:
        if a.pos:
            eb.ctx.error("give the view's shape once", call.span)
        shape = shape_dims(eb, a.kw["shape"])
    elif len(a.pos) == 1 and isinstance(a.pos[0], (S.Tuple, S.List)):
        shape = shape_dims(eb, a.pos[0])
    else:
        shape = tuple(shape_dims(eb, S.Tuple(call.span, list(a.pos)))) if a.pos else base.shape
    dt = eb.dtype_arg(a.kw["dtype"]) if "dtype" in a.kw else base.dtype
    return Buffer(name=name, shape=shape, dtype=dt, data=base.data, scope=base.scope,
                  span=call.span)
