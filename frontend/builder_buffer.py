"""Buffer declarations (T.Buffer, T.match_buffer, T.alloc_buffer, T.decl_buffer, event
tensors), layouts, and buffer regions such as `A[vi, 0:128]`."""

from __future__ import annotations

from typing import Any

from tirc.frontend import syntax as S
from tirc.frontend.builder_expr import ExprBuilder, literal_value
from tirc.frontend.context import Context
from tirc.frontend.parser import parse_expr_text
from tirc.frontend.signature import Args, Sig, check_call
from tirc.ir.analysis.block_regions import same
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import HANDLE, DType
from tirc.ir.expr import BinOp, IntImm, IRTypeError, PrimExpr, Var, cast, const

BUFFER_KWARGS = ("shape", "dtype", "data", "strides", "elem_offset", "scope", "align",
                 "offset_factor", "buffer_type", "axis_separators", "layout", "annotations")
# TVM's order of the parameters after shape and dtype, which may also be given positionally
# (`T.decl_buffer((4,), "float32", A.data)`).
AFTER_DTYPE = BUFFER_KWARGS[2:10]
# Allocation annotations TVM 0.27 prints on every T.alloc_buffer: the alignment (kept as the
# buffer's `align`) and the address an allocator may have fixed (none: an empty list).
ALLOC_ANNOTATIONS = ("buffer_data_alignment", "buffer_allocated_addr")
SCOPE_ROOTS = ("global", "shared", "local", "warp", "wmma", "event")
FLOAT32 = DType("float", 32)


def alias_data(eb: ExprBuilder, node: S.Expr) -> Var:
    """The storage named by `data=`: a handle variable, or `B.data` of a buffer in scope."""
    if isinstance(node, S.Attribute) and node.attr == "data" and isinstance(node.value, S.Name):
        target = eb.scope.require(node.value.id, node.value.span)
        if isinstance(target, Buffer):
            return target.data
        eb.ctx.error(f"'{node.value.id}' is not a buffer", node.value.span)
    value = eb.expr(node)
    if not isinstance(value, Var) or not value.dtype.is_handle:
        eb.ctx.error("data= must be a handle variable or `B.data` of a buffer", node.span)
    return value


# A block's own buffers: TVM compacts them, so their layout is not the program's to observe.
BLOCK_ALLOCS = ("T.alloc_buffer", "T.sblock_alloc_buffer")


def keyword_form(call: S.Call, skip: int = 0) -> S.Call:
    """`call` with the positional arguments after shape and dtype written as the keywords
    they are in TVM's order (data, strides, elem_offset, scope, ...); a name then given twice
    is reported by the arity check."""
    extra = call.args[skip + 2:skip + 2 + len(AFTER_DTYPE)]
    if not extra:
        return call
    named = [S.Keyword(k, v, v.span) for k, v in zip(AFTER_DTYPE, extra)]
    rest = call.args[skip + 2 + len(extra):]
    return S.Call(span=call.span, func=call.func, args=call.args[:skip + 2] + rest,
                  keywords=named + call.keywords)


def declare_buffer(eb: ExprBuilder, name: str, call: S.Call, fname: str, skip: int = 0,
                   scope: str | None = None, alias: bool = False,
                   like: BufferRegion | None = None) -> Buffer:
    """A buffer from `fname(shape, dtype, key=value...)`; `skip` leading positional arguments
    (the handle of T.match_buffer) are the caller's; `scope` forces a storage scope; `like`
    gives the shape (its extents) and dtype when they are not written."""
    call = keyword_form(call, skip)
    args = check_call(eb.ctx, call, fname, Sig(skip, skip + 2, BUFFER_KWARGS))
    return buffer_from_args(eb, name, call, fname, args, skip, scope, alias, like)


def buffer_from_args(eb: ExprBuilder, name: str, call: S.Call | S.Subscript, fname: str,
                     args: Args, skip: int = 0, scope: str | None = None,
                     alias: bool = False, like: BufferRegion | None = None) -> Buffer:
    """The buffer described by `args`; with `alias`, `data=` may name existing storage."""
    ctx = eb.ctx
    shape_node = args.get(skip, "shape")
    if shape_node is None and like is None:
        ctx.error(f"{fname} needs a shape", call.span)
    shape = shape_dims(eb, shape_node) if shape_node is not None else \
        tuple(r.extent for r in like.region)  # type: ignore[union-attr]
    dtype_node = args.get(skip + 1, "dtype")
    dt = eb.dtype_arg(dtype_node) if dtype_node is not None else \
        like.buffer.dtype if like is not None else FLOAT32
    kw = args.kw
    data = Var(name, HANDLE, span=call.span)
    if "data" in kw and not _is_none(kw["data"]):
        if not alias:
            ctx.unsupported(f"{fname} with data= (buffer aliasing)", kw["data"].span)
        data = alias_data(eb, kw["data"])
    separators: tuple[int, ...] = ()
    if "axis_separators" in kw and not _empty(kw["axis_separators"]):
        node = kw["axis_separators"]
        items = node.elts if isinstance(node, (S.Tuple, S.List)) else [node]
        separators = tuple(eb.int_literal(x, "an axis separator") for x in items)
        if any(not 0 < x < len(shape) for x in separators) or list(separators) != sorted(
                set(separators)):
            ctx.error("axis_separators are increasing axes between 1 and the rank - 1",
                      node.span)
    if "buffer_type" in kw:
        # "auto" lets TVM give extent-1 dimensions a zero stride; tirc's buffers are dense,
        # where that stride is never used, so both types mean the same here.
        btype = eb.str_literal(kw["buffer_type"], "buffer_type")
        if btype not in ("", "default", "auto"):
            ctx.error(f"unknown buffer_type \"{btype}\" (expected \"default\" or \"auto\")",
                      kw["buffer_type"].span)
    strides: tuple[PrimExpr, ...] = ()
    if "strides" in kw and not _empty(kw["strides"]):
        strides = shape_dims(eb, kw["strides"], "stride")
        if len(strides) != len(shape) and fname in BLOCK_ALLOCS:
            # TVM's cache_index writes `strides=[1]` whatever the rank; a block's own buffer
            # is compacted (laid out densely) by TVM, which drops such strides, and so here
            strides = ()
        elif len(strides) != len(shape):
            ctx.error(f"{len(strides)} strides for a buffer of {len(shape)} dimensions",
                      kw["strides"].span)
    elem_offset = None
    if "elem_offset" in kw and not _is_none(kw["elem_offset"]):
        elem_offset = eb.index(kw["elem_offset"], "elem_offset")
    buf_scope = scope or "global"
    if "scope" in kw:
        if scope is not None:
            ctx.error(f"{fname} has a fixed scope '{scope}'", kw["scope"].span)
        buf_scope = eb.str_literal(kw["scope"], "the storage scope")
        if buf_scope.split(".")[0] not in SCOPE_ROOTS or buf_scope == "event":
            ctx.error(f"unknown storage scope '{buf_scope}'", kw["scope"].span)
    align = _positive_or_default(eb, kw.get("align"), 64, "align")
    if "annotations" in kw and not _is_none(kw["annotations"]):
        align = _alloc_annotations(eb, kw["annotations"], align)
    offset_factor = _positive_or_default(eb, kw.get("offset_factor"), 1, "offset_factor")
    layout = layout_arg(ctx, eb, kw["layout"]) if "layout" in kw else None
    return Buffer(name=name, shape=shape, dtype=dt, data=data,
                  strides=strides, elem_offset=elem_offset, scope=buf_scope, layout=layout,
                  align=align, offset_factor=offset_factor, axis_separators=separators,
                  span=call.span)


def _alloc_annotations(eb: ExprBuilder, node: S.Expr, align: int) -> int:
    """The alignment from an allocation's `annotations={...}` (the other key TVM prints,
    `buffer_allocated_addr`, must be empty: tirc places buffers itself)."""
    for key, value in eb.attr_dict(node).items():
        if key == "buffer_data_alignment" and isinstance(value, int) and value > 0:
            align = value
        elif key == "buffer_allocated_addr" and value in ((), None):
            continue
        else:
            eb.ctx.unsupported(f"the allocation annotation \"{key}\" = {value!r}", node.span)
    return align


def _empty(node: S.Expr) -> bool:
    return _is_none(node) or (isinstance(node, (S.Tuple, S.List)) and not node.elts)


def _is_none(node: S.Expr) -> bool:
    return isinstance(node, S.Constant) and node.kind == "none"


def _positive_or_default(eb: ExprBuilder, node: S.Expr | None, default: int, what: str) -> int:
    if node is None:
        return default
    value = eb.int_literal(node, what)
    return value if value > 0 else default


def shape_dims(eb: ExprBuilder, node: S.Expr, what: str = "buffer dimension"
               ) -> tuple[PrimExpr, ...]:
    """Dimensions from `(a, b)`, `[a, b]`, `B.shape` of a buffer, or a single expression."""
    if isinstance(node, S.Attribute) and node.attr == "shape" and isinstance(node.value, S.Name):
        return eb.buffer(node.value).shape
    items = node.elts if isinstance(node, (S.Tuple, S.List)) else [node]
    dims = []
    for item in items:
        value = literal_value(item)
        if isinstance(value, str) and value.isidentifier():
            dims.append(symbolic_dim(eb, value, item))
            continue
        if isinstance(value, str):
            dims.append(symbolic_expr(eb, value, item, what))
            continue
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 0:
                eb.ctx.error(f"negative {what}", item.span)
            dims.append(eb.int_const(value, item))
        else:
            dims.append(eb.index(item, what))
    return tuple(dims)


def symbolic_dim(eb: ExprBuilder, name: str, node: S.Expr) -> PrimExpr:
    """A dimension written as a string (`T.Buffer(("n",), ...)`, as TVM prints symbolic
    sizes in a signature): the variable of that name, declared as an int32 if new."""
    value = eb.scope.lookup(name)
    if value is None:
        value = Var(name, DType("int", 32), span=node.span)
        eb.scope.define(name, value, node.span)
    if not isinstance(value, PrimExpr) or not value.dtype.is_int:
        eb.ctx.error(f"'{name}' is not an integer variable", node.span)
    return value


def symbolic_expr(eb: ExprBuilder, text: str, node: S.Expr, what: str) -> PrimExpr:
    """A dimension written as a string holding an expression (`T.Buffer(("n + m",), ...)`,
    as TVM prints a size computed from symbolic sizes): its names as `symbolic_dim` reads
    them."""
    try:
        inner = parse_expr_text(text, node.span.file, node.span.line, node.span.col + 1)
    except CompileError as err:
        eb.ctx.error(f"in the shape string \"{text}\": {err.diagnostics[0].message}",
                     err.diagnostics[0].span)
    for name in _names(inner):
        symbolic_dim(eb, name.id, name)
    return eb.index(inner, what)


def _names(node: S.Expr) -> list[S.Name]:
    """The names an expression in a shape string reads."""
    if isinstance(node, S.Name):
        return [node]
    kids = {S.BinOp: lambda n: [n.left, n.right], S.UnaryOp: lambda n: [n.operand],
            S.Call: lambda n: list(n.args)}.get(type(node), lambda n: [])(node)
    return [x for k in kids for x in _names(k)]


def layout_arg(ctx: Context, eb: ExprBuilder, node: S.Expr) -> Any:
    """`layout="S[...]"` or `layout=T.TileLayout(...)`: parsed by tirc.ir.layout when that
    module provides `parse_layout`, else kept as its text."""
    if isinstance(node, S.Constant) and node.kind == "str":
        text = str(node.value)
    elif isinstance(node, S.Call) and (S.dotted(node.func) or "").startswith("T."):
        text = ctx.source(node.span)
    elif _is_none(node):
        return None
    else:
        ctx.error("a layout is a string or a T.TileLayout(...) expression", node.span)
    try:
        from tirc.ir.layout import parse_layout
    except ImportError:
        return text
    try:
        return parse_layout(text)
    except Exception as err:  # the layout parser's own errors, whatever their type
        first_line = (str(err).splitlines() or [type(err).__name__])[0]
        ctx.error(f"invalid layout: {first_line}", node.span)


def event_tensor(eb: ExprBuilder, name: str, call: S.Call) -> tuple[Buffer, PrimExpr | None]:
    """`T.event_tensor(shape, init=expr)`: int32 counters in the "event" scope."""
    args = check_call(eb.ctx, call, "T.event_tensor", Sig(1, 1, ("init",)))
    shape = shape_dims(eb, args.pos[0])
    init = eb.index(args.kw["init"], "the initial event count") if "init" in args.kw else None
    buf = Buffer(name=name, shape=shape, dtype=DType("int", 32),
                 data=Var(name, HANDLE, span=call.span), scope="event", span=call.span)
    if init is not None and init.dtype != buf.dtype:
        init = cast(buf.dtype, init)
    return buf, init


# ---- regions ------------------------------------------------------------------------------


def region(eb: ExprBuilder, node: S.Expr) -> BufferRegion:
    """`A[vi, 0:128]` (index: extent 1; slice: [lo, hi)), or a bare `A` for all of it."""
    if isinstance(node, S.Name):
        buf = eb.buffer(node)
        return BufferRegion(buf, tuple(Range(IntImm(0, d.dtype, span=node.span), d, span=node.span)
                                       for d in buf.shape), span=node.span)
    if not isinstance(node, S.Subscript):
        eb.ctx.error("expected a buffer region such as A[i, 0:128]", node.span)
    buf = eb.buffer(node.value)
    eb.check_rank(buf, node)
    ranges = []
    for item, dim in zip(node.items, buf.shape):
        if isinstance(item, S.Slice):
            if item.step is not None:
                eb.ctx.unsupported("a slice with a step", item.step.span)
            lo = eb.index(item.lower, "region start") if item.lower is not None \
                else IntImm(0, dim.dtype, span=item.span)
            hi = eb.index(item.upper, "region end") if item.upper is not None else dim
            lo, extent = range_between(eb, lo, hi, item.span)
            ranges.append(Range(lo, extent, span=item.span))
        else:
            idx = eb.index(item, "buffer index")
            ranges.append(Range(idx, IntImm(1, idx.dtype, span=item.span), span=item.span))
    return BufferRegion(buf, tuple(ranges), span=node.span)


def range_between(eb: ExprBuilder, lo: PrimExpr, hi: PrimExpr, span: Any
                  ) -> tuple[PrimExpr, PrimExpr]:
    """(min, extent) of [lo, hi): constants fold, `lo + e` gives back `e`; a literal `lo`
    takes the dtype of `hi`."""
    if isinstance(lo, IntImm) and lo.dtype != hi.dtype and hi.dtype.is_int:
        lo = const(lo.value, hi.dtype)
    if isinstance(lo, IntImm) and isinstance(hi, IntImm):
        try:
            lo_u, hi_u = (cast(hi.dtype, lo), hi) if lo.dtype != hi.dtype else (lo, hi)
        except IRTypeError as err:
            eb.ctx.error(str(err), span)
        assert isinstance(lo_u, IntImm) and isinstance(hi_u, IntImm)
        return lo_u, IntImm(hi_u.value - lo_u.value, hi_u.dtype, span=span)
    if isinstance(hi, BinOp) and hi.op == "add" and same(hi.a, lo):
        return lo, hi.b
    if isinstance(lo, IntImm) and lo.value == 0:
        return lo, hi
    extent = eb.binop("sub", hi, lo, span)
    if lo.dtype != extent.dtype:
        lo = cast(extent.dtype, lo)
    return lo, extent

