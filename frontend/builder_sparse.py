"""SparseTIR's spellings: sparse axes, `T.match_sparse_buffer` and sparse iterations.

    I = T.dense_fixed(m)
    J = T.sparse_variable(I, (n, nnz), (indptr, indices), "int32")
    A = T.match_sparse_buffer(a, (I, J), "float32")
    with T.sp_iter([I, J, K], "SRS", "spmm") as [i, j, k]:   # or T.iter
        with T.init():
            C[i, k] = 0.0
        C[i, k] = C[i, k] + A[i, j] * B[j, k]

`indptr`/`indices` name `T.handle` parameters (or `T.Buffer` ones): the axis declares their
buffers, `J_indptr`/`J_indices`, of the shapes the format implies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tirc.frontend import syntax as S
from tirc.frontend.builder_buffer import layout_arg
from tirc.frontend.context import BuildError
from tirc.frontend.signature import Sig, check_call
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, INT32, DType
from tirc.ir.expr import PrimExpr, Var, binop
from tirc.ir.rebind import used_vars
from tirc.ir.span import Span
from tirc.ir.sparse import (
    Axis,
    AxisKind,
    SparseBuffer,
    SparseIteration,
    SpIterVar,
    iterated_parent,
    num_positions,
    parent_axis,
)
from tirc.ir.stmt import IterKind, Stmt
from tirc.ir.structural import same_expr

if TYPE_CHECKING:
    from tirc.frontend.builder_prim_func import PrimFuncBuilder
    from tirc.frontend.builder_stmt import LoopBuilder

AXIS_CALLS = {"T.dense_fixed": AxisKind.DENSE_FIXED, "T.dense_variable": AxisKind.DENSE_VARIABLE,
              "T.sparse_fixed": AxisKind.SPARSE_FIXED,
              "T.sparse_variable": AxisKind.SPARSE_VARIABLE}
SPARSE_DECLARATIONS = (*AXIS_CALLS, "T.match_sparse_buffer", "T.alloc_sparse_buffer")
ITERATION_CALLS = ("T.sp_iter", "T.iter")


def declare(fb: PrimFuncBuilder, target: S.Name, call: S.Call, name: str) -> None:
    """`X = T.<axis>(...)`, `A = T.match_sparse_buffer(...)` or
    `T = T.alloc_sparse_buffer(...)` at the top of a function."""
    if name == "T.match_sparse_buffer":
        buf = _match_sparse_buffer(fb, target, call)
        fb.scope.define(target.id, buf, target.span)
        return
    if name == "T.alloc_sparse_buffer":
        buf = _alloc_sparse_buffer(fb, target, call)
        fb.scope.define(target.id, buf, target.span)
        fb.root_allocs.append(buf)
        return
    axis = _axis(fb, target, call, AXIS_CALLS[name], name)
    fb.scope.define(target.id, axis, target.span)


def _idtype(fb: PrimFuncBuilder, node: S.Expr | None) -> DType:
    if node is None:
        return INT32
    dt = fb.lb.eb.dtype_arg(node)
    if not dt.is_int or dt.lanes != 1:
        fb.ctx.error(f"an axis index dtype is an integer dtype, not {dt}", node.span)
    return dt


def _parent(fb: PrimFuncBuilder, node: S.Expr) -> Axis:
    value = fb.scope.require(node.id, node.span) if isinstance(node, S.Name) else None
    if not isinstance(value, Axis):
        fb.ctx.error("the parent of an axis is an axis defined before it", node.span)
    return value


def _pair(fb: PrimFuncBuilder, node: S.Expr, what: str) -> tuple[PrimExpr, PrimExpr]:
    if not isinstance(node, (S.Tuple, S.List)) or len(node.elts) != 2:
        fb.ctx.error(f"expected {what} as a pair, such as (n, nnz)", node.span)
    a, b = node.elts
    return fb.lb.eb.index(a, what), fb.lb.eb.index(b, what)


def _axis(fb: PrimFuncBuilder, target: S.Name, call: S.Call, kind: AxisKind,
          fname: str) -> Axis:
    eb = fb.lb.eb
    if kind == AxisKind.DENSE_FIXED:
        a = check_call(fb.ctx, call, fname, Sig(1, 2, ("idtype",)))
        length = eb.index(a.pos[0], "the axis length")
        return Axis(target.id, kind, length, idtype=_idtype(fb, a.get(1, "idtype")),
                    span=call.span)
    a = check_call(fb.ctx, call, fname, Sig(3, 4, ("idtype",)))
    parent = _parent(fb, a.pos[0])
    length, nnz = _pair(fb, a.pos[1], "(length, nnz)" if kind != AxisKind.SPARSE_FIXED
                        else "(length, nnz_cols)")
    idtype = _idtype(fb, a.get(3, "idtype"))
    pcount = num_positions(parent)
    indptr = indices = None
    arrays = a.pos[2]
    if kind == AxisKind.SPARSE_VARIABLE:
        if not isinstance(arrays, (S.Tuple, S.List)) or len(arrays.elts) != 2:
            fb.ctx.error("T.sparse_variable takes its arrays as (indptr, indices)", arrays.span)
        ip, ix = arrays.elts
        indptr = _array(fb, ip, f"{target.id}_indptr", binop("add", pcount, 1), idtype)
        indices = _array(fb, ix, f"{target.id}_indices", nnz, idtype)
    elif kind == AxisKind.DENSE_VARIABLE:
        indptr = _array(fb, arrays, f"{target.id}_indptr", binop("add", pcount, 1), idtype)
    else:
        indices = _array(fb, arrays, f"{target.id}_indices", binop("mul", pcount, nnz), idtype)
    return Axis(target.id, kind, length, parent, nnz, indptr, indices, idtype, span=call.span)


def _array(fb: PrimFuncBuilder, node: S.Expr, name: str, size: PrimExpr, dt: DType) -> Buffer:
    """The buffer of an `indptr`/`indices` argument: a T.handle parameter gets one declared,
    a T.Buffer parameter must already be one-dimensional of the index dtype."""
    if not isinstance(node, S.Name):
        fb.ctx.error("an axis array is a T.handle parameter", node.span)
    handle = fb.handles.get(node.id)
    if handle is not None:
        if handle in fb.buffer_map:
            fb.ctx.error(f"parameter '{node.id}' is already matched to a buffer", node.span)
        buf = Buffer(name=name, shape=(size,), dtype=dt, data=Var(name, HANDLE, span=node.span),
                     span=node.span)
        fb.buffer_map[handle] = buf
        return buf
    value = fb.scope.require(node.id, node.span)
    if not isinstance(value, Buffer) or isinstance(value, SparseBuffer):
        fb.ctx.error("an axis array is a T.handle parameter", node.span)
    if value.ndim != 1 or value.dtype != dt:
        fb.ctx.error(f"axis array '{node.id}' must be one-dimensional of dtype {dt}", node.span)
    return value


def _match_sparse_buffer(fb: PrimFuncBuilder, target: S.Name, call: S.Call) -> SparseBuffer:
    ctx = fb.ctx
    a = check_call(ctx, call, "T.match_sparse_buffer", Sig(2, 3, ("dtype", "scope", "layout")))
    first = a.pos[0]
    handle = fb.handles.get(first.id) if isinstance(first, S.Name) else None
    if handle is None:
        ctx.error("T.match_sparse_buffer needs a T.handle parameter", first.span)
    if handle in fb.buffer_map:
        ctx.error(f"parameter '{first.id}' is already matched to a buffer",  # type: ignore
                  first.span)
    buf = _sparse_buffer(fb, target, call, a.pos[1], a.get(2, "dtype"), a.get(3, "scope"),
                         "T.match_sparse_buffer", a.kw.get("layout"))
    fb.buffer_map[handle] = buf
    return buf


def _alloc_sparse_buffer(fb: PrimFuncBuilder, target: S.Name, call: S.Call) -> SparseBuffer:
    """`T.alloc_sparse_buffer((I, J), "float32", "global")`: storage of the axes' shape that
    the function allocates (an intermediate of a sparse computation)."""
    a = check_call(fb.ctx, call, "T.alloc_sparse_buffer",
                   Sig(1, 3, ("dtype", "scope", "layout")))
    return _sparse_buffer(fb, target, call, a.pos[0], a.get(1, "dtype"), a.get(2, "scope"),
                          "T.alloc_sparse_buffer", a.kw.get("layout"))


def _sparse_buffer(fb: PrimFuncBuilder, target: S.Name, call: S.Call, axes_node: S.Expr,
                   dt_node: S.Expr | None, scope_node: S.Expr | None, what: str,
                   layout_node: S.Expr | None = None) -> SparseBuffer:
    """The sparse buffer over the axes `axes_node` names, of dtype `dt_node` (float32 when
    not given), in global memory; with `layout=`, an Axe layout of its storage (the storage
    shape's coordinates -> memory: column-major blocks of a BSR matrix, for instance)."""
    ctx = fb.ctx
    if not isinstance(axes_node, (S.Tuple, S.List)) or not axes_node.elts:
        ctx.error(f"{what} takes its axes as a tuple, such as (I, J)", axes_node.span)
    axes = []
    for node in axes_node.elts:
        value = fb.scope.require(node.id, node.span) if isinstance(node, S.Name) else None
        if not isinstance(value, Axis):
            ctx.error("expected an axis (T.dense_fixed, T.sparse_variable, ...)", node.span)
        if value in axes:
            ctx.error(f"axis {value.name} appears twice in this buffer", node.span)
        axes.append(value)
    dt = fb.lb.eb.dtype_arg(dt_node) if dt_node is not None else DType("float", 32)
    if scope_node is not None and fb.lb.eb.str_literal(scope_node, "the scope") != "global":
        ctx.unsupported("a sparse buffer outside global memory", scope_node.span)
    layout = layout_arg(ctx, fb.lb.eb, layout_node) if layout_node is not None else None
    return SparseBuffer(name=target.id, shape=tuple(ax.length for ax in axes), dtype=dt,
                        data=Var(target.id, HANDLE, span=target.span), axes=tuple(axes),
                        layout=layout, span=call.span)


# ---- sparse iterations --------------------------------------------------------------------


def build_iteration(lb: LoopBuilder, s: S.With, call: S.Call, fname: str,
                    target: S.Expr | None) -> Stmt:
    """`with T.sp_iter([axes], "SRS", "name") as [i, j, k]:` -> SparseIteration."""
    ctx = lb.ctx
    try:
        a = check_call(ctx, call, fname, Sig(3, 3))
        axes, fused, attached = _iter_axes(lb, a.pos[0])
        kinds = lb.eb.str_literal(a.pos[1], "the iteration kinds")
        name = lb.eb.str_literal(a.pos[2], "the iteration name")
        if len(kinds) != len(axes) or set(kinds) - {"S", "R"}:
            ctx.error(f"the iteration kinds must be one S or R per axis ({len(axes)} axes), "
                      f"got \"{kinds}\"", a.pos[1].span)
        names = _targets(lb, target, len(axes), call)
    except BuildError:
        lb.body(s.body)
        raise
    with lb.scope.frame():
        ivs = []
        for k, (nm, axis, kind) in enumerate(zip(names, axes, kinds)):
            var = Var(nm.id, axis.idtype, span=nm.span)
            lb.scope.define(nm.id, var, nm.span)
            ivs.append(SpIterVar(var, axis, IterKind(kind), attached.get(k), span=nm.span))
        init: list[Stmt] = []
        init_span: list[Span | None] = []
        attrs: list[dict] = []

        def hook(st: S.Stmt) -> bool:
            if isinstance(st, S.With) and S.call_name(st.items[0].context) == "T.init":
                if init:
                    ctx.error("T.init appears twice in this iteration", st.span)
                init.append(lb.body(st.body))
                init_span.append(st.span)
                return True
            if isinstance(st, S.ExprStmt) and S.call_name(st.value) == "T.iter_attr":
                a = check_call(ctx, st.value, "T.iter_attr", Sig(1, 1))
                if attrs:
                    ctx.error("T.iter_attr appears twice in this iteration", st.span)
                attrs.append(lb.eb.attr_dict(a.pos[0]))
                return True
            return False

        body = lb.body(s.body, hook=hook, frame=False)
    it = SparseIteration(name, tuple(ivs), body, init[0] if init else None, fused,
                         attrs[0] if attrs else {}, span=s.span)
    check_iteration(lb, it, call)
    if init:
        _check_init(lb, it, init_span[0])
    return it


def _check_init(lb: LoopBuilder, it: SparseIteration, span: Span | None) -> None:
    """An init may not read a reduction variable: it runs before the reduction, once per
    point of the spatial variables (an empty row's too), where those have no value."""
    used = used_vars(it.init)
    for iv in it.sp_iter_vars:
        if iv.kind == IterKind.REDUCE and iv.var in used:
            lb.ctx.error(f"unsupported: the init of iteration '{it.name}' reads the reduction "
                         f"variable {iv.var.name}", span,
                         note="an init runs before its reduction, once per point of the "
                         "spatial variables (an empty row's too), where no reduction "
                         "variable has a value")


def _iter_axes(lb: LoopBuilder, node: S.Expr
               ) -> tuple[list[Axis], tuple[tuple[int, ...], ...], dict[int, Axis]]:
    """The axes of an iteration's list, its fused runs, and the axes `T.attach` attaches
    its items to (by item index)."""
    if not isinstance(node, (S.List, S.Tuple)) or not node.elts:
        lb.ctx.error("the axes of a sparse iteration are a list, such as [I, J, K]", node.span)
    axes: list[Axis] = []
    fused: list[tuple[int, ...]] = []
    attached: dict[int, Axis] = {}
    for item in node.elts:
        if isinstance(item, S.Call) and S.call_name(item) == "T.fuse":
            group = []
            for sub in item.args:
                if isinstance(sub, S.Call) and S.call_name(sub) == "T.attach":
                    lb.ctx.unsupported("T.attach inside T.fuse", sub.span)
                group.append(len(axes))
                axes.append(_axis_ref(lb, sub))
            if len(group) < 2:
                lb.ctx.error("T.fuse takes two or more axes", item.span)
            fused.append(tuple(group))
        elif isinstance(item, S.Call) and S.call_name(item) == "T.attach":
            axis, parent = _attach(lb, item)
            attached[len(axes)] = parent
            axes.append(axis)
        else:
            axes.append(_axis_ref(lb, item))
    return axes, tuple(fused), attached


def _attach(lb: LoopBuilder, call: S.Call) -> tuple[Axis, Axis]:
    """`T.attach(A, P)`: axis A, attached to a dense axis as long as P, run under the
    coordinate of P's variable."""
    a = check_call(lb.ctx, call, "T.attach", Sig(2, 2))
    axis, parent = _axis_ref(lb, a.pos[0]), _axis_ref(lb, a.pos[1])
    base = axis.parent
    if base is None or base.kind != AxisKind.DENSE_FIXED:
        lb.ctx.error(f"T.attach: axis {axis.name} must be attached to a dense_fixed axis "
                     "(whose positions are coordinates)", a.pos[0].span)
    if not same_expr(base.length, parent.length):  # type: ignore[union-attr]
        lb.ctx.error(f"T.attach: the parent of {axis.name}, {base.name}, "  # type: ignore
                     f"and {parent.name} differ in length", call.span)
    return axis, parent


def _axis_ref(lb: LoopBuilder, node: S.Expr) -> Axis:
    value = lb.scope.require(node.id, node.span) if isinstance(node, S.Name) else None
    if not isinstance(value, Axis):
        lb.ctx.error("expected an axis (T.dense_fixed, T.sparse_variable, ...)", node.span)
    return value


def _targets(lb: LoopBuilder, target: S.Expr | None, n: int, call: S.Call) -> list[S.Name]:
    if target is None:
        lb.ctx.error("write `with T.sp_iter([...], \"SR\", \"name\") as [i, j]:`", call.span)
    elts = target.elts if isinstance(target, (S.List, S.Tuple)) else [target]
    if len(elts) != n or not all(isinstance(e, S.Name) for e in elts):
        lb.ctx.error(f"expected {n} iteration variable names", target.span)
    return elts  # type: ignore[return-value]


def check_iteration(lb: LoopBuilder, it: SparseIteration, call: S.Call) -> None:
    """The rules a sparse iteration must follow, each a diagnostic at the iteration."""
    ivs = it.sp_iter_vars
    for k, iv in enumerate(ivs):
        if any(iv.axis is other.axis for other in ivs[:k]):
            lb.ctx.error(f"axis {iv.axis.name} is iterated twice", iv.span)
        parent = parent_axis(iv)
        later = [q for q in range(k + 1, len(ivs)) if ivs[q].axis is parent]
        if later:
            lb.ctx.error(f"axis {iv.axis.name} is iterated before its parent "
                         f"{parent.name}", iv.span)  # type: ignore[union-attr]
        if iv.attach is not None and iterated_parent(it, k) is None:
            lb.ctx.error(f"T.attach: axis {iv.attach.name} is not iterated before "
                         f"{iv.axis.name}", iv.span)
    for group in it.fused:
        for a, b in zip(group, group[1:]):
            if iterated_parent(it, b) != a:
                lb.ctx.error(f"T.fuse: axis {ivs[b].axis.name} is not attached to "
                             f"{ivs[a].axis.name}", call.span)
    first_r = next((k for k, iv in enumerate(ivs) if iv.kind == IterKind.REDUCE), None)
    if first_r is None:
        return
    for k in range(first_r + 1, len(ivs)):
        if ivs[k].kind != IterKind.SPATIAL:
            continue
        q = iterated_parent(it, k)
        while q is not None:
            if q >= first_r and ivs[q].kind == IterKind.REDUCE:
                lb.ctx.error(f"spatial axis {ivs[k].axis.name} depends on the reduction "
                             f"axis {ivs[q].axis.name}", ivs[k].span)
            q = iterated_parent(it, q)
