"""Loop-level expressions: syntax -> PrimExpr, with name resolution and dtype/rank checks."""

from __future__ import annotations

from typing import Any

from tirc.frontend import syntax as S
from tirc.frontend.context import Context, spanned
from tirc.frontend.scope import EnvThread, Scope
from tirc.frontend.signature import Sig, check_call
from tirc.ir import intrinsics as intrin
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, INT32, DType, DTypeError
from tirc.ir.expr import (
    BufferLoad,
    Call,
    FloatImm,
    IntImm,
    IRTypeError,
    Not,
    PrimExpr,
    Ramp,
    Var,
    binop,
    cast,
    const,
    unify,
)
from tirc.ir.target import TargetAttr

ACCESS_PTR_KWARGS = ("ptr_type", "content_lanes", "offset", "extent")

BIN_OPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floordiv", "%": "floormod"}
# Bitwise operators are intrinsic calls in the IR (TVM's tirx.shift_left, ...); on bool
# operands `&` and `|` are the logical operators, as in TVM.
BIT_OPS = {"<<": "shift_left", ">>": "shift_right", "&": "bitwise_and", "|": "bitwise_or",
           "^": "bitwise_xor"}
CMP_OPS = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def access_dtype(buf: Buffer, idx: tuple[PrimExpr, ...]) -> DType:
    """The dtype of `buf[idx]`: the element type, times the lanes of a vector index."""
    lanes = max((i.dtype.lanes for i in idx), default=1)
    return buf.dtype.with_lanes(lanes * buf.dtype.lanes)


def dense_strides(shape: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
    """The row-major strides of a dense buffer of `shape`."""
    out: list[PrimExpr] = []
    acc: PrimExpr = IntImm(1, shape[-1].dtype) if shape else IntImm(1, INT32)
    for d in reversed(shape):
        out.append(acc)
        acc = binop("mul", acc, d)
    return tuple(reversed(out))


def literal_value(node: S.Expr) -> Any:
    """The Python value of a (possibly negated) number/bool/str/None literal, else None."""
    sign = 1
    while isinstance(node, S.UnaryOp) and node.op in ("-", "+"):
        if node.op == "-":
            sign = -sign
        node = node.operand
    if not isinstance(node, S.Constant):
        return None
    if sign == -1:
        if node.kind in ("int", "float"):
            return -node.value  # type: ignore[operator]
        return None
    return node.value


class ExprBuilder:
    """Builds PrimExprs; names resolve through `scope` (variables, buffers, thread vars)."""

    def __init__(self, ctx: Context, scope: Scope) -> None:
        self.ctx = ctx
        self.scope = scope
        self.module: Any = None  # the module's function names (ModuleNames), when known
        # a block match buffer without elem_offset: the offset of its region in the source, the
        # value `M.elem_offset` reads (TVM reads 0 and requires the region to start at 0)
        self.match_offsets: dict[int, PrimExpr] = {}

    # ---- entry points -------------------------------------------------------------------

    def expr(self, node: S.Expr) -> PrimExpr:
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            self.ctx.error(f"{_describe(node)} is not a value here", node.span)
        return method(node)

    def index(self, node: S.Expr, what: str = "index") -> PrimExpr:
        """An integer expression (a buffer index, an extent, a shape)."""
        e = self.expr(node)
        if not e.dtype.is_int:
            self.ctx.error(f"{what} must be an integer, got {e.dtype}", node.span)
        return e

    def condition(self, node: S.Expr, what: str = "condition", truthy: bool = False
                  ) -> PrimExpr:
        """A bool expression; with `truthy` (an `if` or `while` test, as Python reads it), a
        scalar integer is true when it is not zero."""
        e = self.expr(node)
        if truthy and e.dtype.is_int and e.dtype.lanes == 1:
            ne = binop("ne", e, IntImm(0, e.dtype, span=node.span))
            return ne.with_span(node.span)  # type: ignore[return-value]
        if not e.dtype.is_bool:
            self.ctx.error(f"{what} must be bool, got {e.dtype}", node.span)
        return e

    def bitwise(self, op: str, a: PrimExpr, b: PrimExpr, span: Any) -> PrimExpr:
        """`a << b`, `a & b`, ...: integer operands brought to one dtype; `&`/`|`/`^` of bools
        are `and`/`or`/`!=` (TVM legalizes logical_xor as `x ^ y`)."""
        logical = {"bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "ne"}
        if a.dtype.is_bool and b.dtype.is_bool and op in logical:
            return self.binop(logical[op], a, b, span)
        try:
            a, b = unify(a, b)
        except IRTypeError as err:
            self.ctx.error(str(err), span)
        if not a.dtype.is_int:
            self.ctx.error(f"bitwise operator on {a.dtype} operands", span)
        return Call(op, (a, b), a.dtype, span=span)

    def binop(self, op: str, a: Any, b: Any, span: Any) -> PrimExpr:
        """`a op b`; an integer operand meeting a float one is converted to the float's dtype
        first (TVM's rule: `A[i] * i` with a float32 A and an int64 i is float32)."""
        try:
            return spanned(binop(op, a, b), span)
        except IRTypeError as err:
            a, b = _int_to_float(a, b)
            try:
                return spanned(binop(op, a, b), span)
            except IRTypeError:
                self.ctx.error(str(err), span)

    # ---- leaves -------------------------------------------------------------------------

    def expr_Constant(self, node: S.Constant) -> PrimExpr:
        v = node.value
        if node.kind == "bool":
            return const(bool(v)).with_span(node.span)  # type: ignore[return-value]
        if node.kind == "int":
            return self.int_const(int(v), node)  # type: ignore[arg-type]
        if node.kind == "float":
            return FloatImm(float(v), DType("float", 32), span=node.span)  # type: ignore[arg-type]
        self.ctx.error(f"{_describe(node)} is not a value here", node.span)

    def int_const(self, v: int, node: S.Expr) -> PrimExpr:
        if not INT64_MIN <= v <= INT64_MAX:
            self.ctx.error("integer literal out of the int64 range", node.span)
        return const(v).with_span(node.span)  # type: ignore[return-value]

    def expr_Name(self, node: S.Name) -> PrimExpr:
        value = self.scope.require(node.id, node.span)
        if isinstance(value, EnvThread):
            return value.var
        if isinstance(value, PrimExpr):
            return value
        if isinstance(value, Buffer):
            self.ctx.error(f"buffer '{node.id}' is used as a value; index it as "
                           f"{node.id}[...]", node.span)
        self.ctx.error(f"'{node.id}' is not a loop-level value", node.span)

    def expr_Attribute(self, node: S.Attribute) -> PrimExpr:
        if node.attr in ("data", "elem_offset") and isinstance(node.value, S.Name):
            target = self.scope.require(node.value.id, node.value.span)
            if isinstance(target, Buffer):  # `A.data`: the buffer's storage as a handle value
                if node.attr == "data":
                    return target.data
                offset = target.elem_offset
                if offset is None:
                    offset = self.match_offsets.get(id(target))
                return offset if offset is not None else IntImm(0, INT32, span=node.span)
        name = S.dotted(node)
        if name is not None and name.split(".")[0] in ("T", "R", "I", "S"):
            self.ctx.error(f"'{name}' is not a value", node.span)
        self.ctx.unsupported(f"attribute '.{node.attr}'", node.attr_span)

    def expr_Starred(self, node: S.Starred) -> PrimExpr:
        self.ctx.unsupported("'*' here (only in T.grid(*A.shape) and buffer shapes)",
                             node.span)

    def starred_dims(self, node: S.Starred) -> list[PrimExpr]:
        """`*A.shape` (a buffer's dimensions) or `*(a, b)`: the values it spreads."""
        v = node.value
        if isinstance(v, S.Attribute) and v.attr in ("shape", "strides"):
            buf = self.buffer(v.value)
            return list(buf.shape if v.attr == "shape" else buf.strides or
                        dense_strides(buf.shape))
        if isinstance(v, (S.Tuple, S.List)):
            return [self.expr(x) for x in v.elts]
        self.ctx.error("'*' spreads a buffer's shape (*A.shape) or a tuple", node.span)

    def expr_Unsupported(self, node: S.Unsupported) -> PrimExpr:
        self.ctx.unsupported(node.what, node.span)

    def expr_Lambda(self, node: S.Lambda) -> PrimExpr:
        self.ctx.unsupported("lambda outside a schedule", node.span)

    # ---- operators ----------------------------------------------------------------------

    def expr_BinOp(self, node: S.BinOp) -> PrimExpr:
        if node.op in BIT_OPS:
            return self.bitwise(BIT_OPS[node.op], self.expr(node.left), self.expr(node.right),
                                node.span)
        op = BIN_OPS.get(node.op)
        if op is None:
            hint = " (use T.pow)" if node.op == "**" else ""
            self.ctx.unsupported(f"operator '{node.op}'{hint}", node.span)
        return self.binop(op, self.expr(node.left), self.expr(node.right), node.span)

    def expr_UnaryOp(self, node: S.UnaryOp) -> PrimExpr:
        if node.op == "not":
            a = self.expr(node.operand)
            if not a.dtype.is_bool:
                self.ctx.error(f"'not' needs a bool operand, got {a.dtype}", node.span)
            return Not(a, a.dtype, span=node.span)
        if node.op == "~":
            a = self.expr(node.operand)
            if not a.dtype.is_int:
                self.ctx.error(f"'~' needs an integer operand, got {a.dtype}", node.span)
            return Call("bitwise_not", (a,), a.dtype, span=node.span)
        value = literal_value(node)
        if isinstance(value, bool) or value is None:
            a = self.expr(node.operand)
            if node.op == "+":
                return a
            return self.binop("sub", const(0, a.dtype), a, node.span)
        if isinstance(value, int):
            return self.int_const(value, node)
        return FloatImm(float(value), DType("float", 32), span=node.span)

    def expr_BoolOp(self, node: S.BoolOp) -> PrimExpr:
        result = self.expr(node.values[0])
        for v in node.values[1:]:
            result = self.binop(node.op, result, self.expr(v), node.span)
        return result

    def expr_Compare(self, node: S.Compare) -> PrimExpr:
        result: PrimExpr | None = None
        left = self.expr(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            if op not in CMP_OPS:
                self.ctx.unsupported(f"operator '{op}'", node.span)
            right = self.expr(right_node)
            cmp = self.binop(CMP_OPS[op], left, right, node.span)
            result = cmp if result is None else self.binop("and", result, cmp, node.span)
            left = right
        assert result is not None
        return result

    # ---- buffer loads -------------------------------------------------------------------

    def buffer(self, node: S.Expr) -> Buffer:
        """A buffer named by `node`."""
        if not isinstance(node, S.Name):
            self.ctx.error(f"{_describe(node)} is not a buffer", node.span)
        value = self.scope.require(node.id, node.span)
        if not isinstance(value, Buffer):
            self.ctx.error(f"'{node.id}' is not a buffer", node.span)
        return value

    def indices(self, buf: Buffer, node: S.Subscript) -> tuple[PrimExpr, ...]:
        """Checked indices of `buf[...]`: right rank, integer dtypes, no slices. A name
        bound to several loop variables (`for iters in T.grid(m, n)`) stands for all of
        them, as in TVM (`A[iters]` is `A[iters_0, iters_1]`)."""
        items: list[S.Expr | PrimExpr] = []
        for item in node.items:
            bound = self.scope.lookup(item.id) if isinstance(item, S.Name) else None
            loops = isinstance(bound, tuple) and all(isinstance(v, Var) for v in bound)
            items.extend(bound if loops else [item])
        self.check_rank(buf, node, len(items))
        out = []
        for item in items:
            if isinstance(item, S.Slice):
                out.append(self.ramp_slice(item))
            elif isinstance(item, S.Expr):
                out.append(self.index(item, "buffer index"))
            else:
                out.append(item)
        return tuple(out)

    def ramp_slice(self, item: S.Slice) -> PrimExpr:
        """`A[lo:hi]` / `A[lo:hi:step]` in a load or store: the vector of those indices."""
        if item.lower is None or item.upper is None:
            self.ctx.error("a vector access needs both bounds, as in A[0:8]", item.span)
        lo = self.index(item.lower, "a slice start")
        hi = self.index(item.upper, "a slice stop")
        step = self.index(item.step, "a slice step") if item.step is not None else None
        try:
            lo, hi = unify(lo, hi)
        except IRTypeError as err:
            self.ctx.error(str(err), item.span)
        from tirc.ir.arith import simplify

        extent = simplify(hi - lo)
        stride = step if step is not None else IntImm(1, lo.dtype)
        if not isinstance(extent, IntImm) or not isinstance(stride, IntImm) \
                or stride.value < 1 or extent.value < 1:
            self.ctx.error("a vector access needs a constant length, as in A[i:i + 8]",
                           item.span)
        lanes = -(-extent.value // stride.value)
        if lanes == 1:
            return lo
        return Ramp(lo, cast(lo.dtype, stride), lanes, lo.dtype.with_lanes(lanes),
                    span=item.span)

    def check_rank(self, buf: Buffer, node: S.Subscript, count: int | None = None) -> None:
        """`buf` indexed with `count` indices (the subscript's items unless given)."""
        n = len(node.items) if count is None else count
        if n != buf.ndim:
            dims = "dimension" if buf.ndim == 1 else "dimensions"
            self.ctx.error(f"buffer '{buf.name}' has {buf.ndim} {dims}, indexed with {n}",
                           node.span)

    def expr_Subscript(self, node: S.Subscript) -> PrimExpr:
        if isinstance(node.value, S.Attribute) and node.value.attr in ("shape", "strides"):
            return self.buffer_dim(node.value, node)
        buf = self.buffer(node.value)
        idx = self.indices(buf, node)
        return BufferLoad(buf, idx, access_dtype(buf, idx), span=node.span)

    def buffer_dim(self, attr: S.Attribute, node: S.Subscript) -> PrimExpr:
        """`A.shape[i]` / `A.strides[i]`: a dimension of a buffer in scope."""
        buf = self.buffer(attr.value)
        if len(node.items) != 1:
            self.ctx.error(f"index {attr.attr} with one integer", node.span)
        i = self.int_literal(node.items[0], f"an index into {attr.attr}")
        dims = buf.shape if attr.attr == "shape" else buf.strides
        if attr.attr == "strides" and not dims:
            dims = dense_strides(buf.shape)
        if not -len(dims) <= i < len(dims):
            self.ctx.error(f"buffer '{buf.name}' has {len(dims)} dimensions", node.span)
        return dims[i]

    # ---- calls --------------------------------------------------------------------------

    def expr_Call(self, node: S.Call) -> PrimExpr:
        from tirc.frontend.tir_calls import call_tir

        if isinstance(node.func, S.Attribute) and node.func.attr == "vload":
            buf, idx = self.vector_access(node, "vload")
            return BufferLoad(buf, idx, access_dtype(buf, idx), span=node.span)
        if isinstance(node.func, S.Attribute) and node.func.attr == "access_ptr":
            return self.access_ptr(node)
        if S.call_name(node) == "T.tvm_access_ptr":
            return self.tvm_access_ptr(node)
        if S.call_name(node) == "T.address_of" and len(node.args) == 1 and not node.keywords \
                and isinstance(node.args[0], S.Name) \
                and isinstance(self.scope.lookup(node.args[0].id), Buffer):
            # `T.address_of(A)`: TVM takes a whole buffer as its first element, A[0, 0]
            buf = self.buffer(node.args[0])
            return self.element_address(buf, IntImm(0, INT32, span=node.span), node,
                                        "T.address_of")
        return call_tir(self, node)

    def access_ptr(self, node: S.Call) -> PrimExpr:
        """`A.access_ptr("r", offset=k, extent=n)` (TVM's pointer for an opaque access): the
        address of the element at flat offset `k`, as `T.address_of(A[...])`; the access mask
        and the extent only describe the access and are not kept."""
        assert isinstance(node.func, S.Attribute)
        buf = self.buffer(node.func.value)
        what = f"{buf.name}.access_ptr"
        a = check_call(self.ctx, node, what, Sig(1, 1, ACCESS_PTR_KWARGS, positional_kw=True))
        mask = literal_value(a.pos[0])
        if mask not in ("r", "w", "rw") and (not isinstance(mask, int) or not 1 <= mask <= 3):
            self.ctx.error(f"{what} takes an access mask \"r\", \"w\" or \"rw\" (or 1, 2, 3)",
                           a.pos[0].span)
        if "ptr_type" in a.kw and literal_value(a.kw["ptr_type"]) != "handle":
            self.ctx.unsupported(f"{what} with a ptr_type other than \"handle\"",
                                 a.kw["ptr_type"].span)
        if "content_lanes" in a.kw and literal_value(a.kw["content_lanes"]) != 1:
            self.ctx.unsupported(f"{what} with content_lanes other than 1",
                                 a.kw["content_lanes"].span)
        if "extent" in a.kw:
            self.index(a.kw["extent"], "the access extent")
        offset_node = a.kw.get("offset")
        offset = self.index(offset_node, "the access offset") if offset_node is not None else \
            IntImm(0, INT32, span=node.span)
        return self.element_address(buf, offset, offset_node or node, what)

    def element_address(self, buf: Buffer, offset: PrimExpr, node: S.Expr,
                        what: str) -> PrimExpr:
        """`T.address_of` the element of `buf` at flat offset `offset` (row-major)."""
        if isinstance(offset, IntImm) and offset.value == 0:
            idx = tuple(IntImm(0, d.dtype, span=node.span) for d in buf.shape)
        elif buf.strides:
            self.ctx.unsupported(f"{what} with an offset into a strided buffer", node.span)
        else:
            rest, parts = offset, []
            for d in reversed(buf.shape[1:]):
                parts.append(binop("floormod", rest, d))
                rest = binop("floordiv", rest, d)
            idx = (rest, *reversed(parts)) if buf.shape else ()
        load = BufferLoad(buf, idx, buf.dtype, span=node.span)
        return Call(intrin.ADDRESS_OF, (load,), HANDLE, span=node.span)

    def tvm_access_ptr(self, node: S.Call) -> PrimExpr:
        """TVM's lowered `T.tvm_access_ptr(T.type_annotation(dtype=...), B.data, offset,
        extent, mask)`: as `B.access_ptr(mask, offset=offset)`, for storage a buffer in scope
        views with that dtype."""
        what = "T.tvm_access_ptr"
        a = check_call(self.ctx, node, what, Sig(5, 5, ("dtype",)))
        ann, data_node, offset_node, extent_node, mask_node = a.pos
        if S.call_name(ann) != "T.type_annotation":
            self.ctx.error(f"{what} takes T.type_annotation(dtype=...) first", ann.span)
        assert isinstance(ann, S.Call)
        t = check_call(self.ctx, ann, "T.type_annotation", Sig(0, 1, ("dtype",)))
        dt_node = t.get(0, "dtype")
        if dt_node is None:
            self.ctx.error("T.type_annotation needs a dtype", ann.span)
        dt = self.dtype_arg(dt_node)
        if "dtype" in a.kw and self.dtype_arg(a.kw["dtype"]) != HANDLE:
            self.ctx.error(f"{what} is a handle", a.kw["dtype"].span)
        buf = self.viewing_buffer(data_node, dt, what)
        if literal_value(mask_node) not in (1, 2, 3):
            self.ctx.error(f"{what} takes an access mask 1, 2 or 3", mask_node.span)
        self.index(extent_node, "the access extent")
        offset = self.index(offset_node, "the access offset")
        return self.element_address(buf, offset, offset_node, what)

    def viewing_buffer(self, node: S.Expr, dt: DType, what: str) -> Buffer:
        """The buffer in scope whose storage `node` (`B.data` or a handle variable) is, of
        dtype `dt`."""
        if isinstance(node, S.Attribute) and node.attr == "data" and \
                isinstance(node.value, S.Name):
            buf = self.buffer(node.value)
            if buf.dtype == dt:
                return buf
        else:
            data = self.expr(node)
            for frame in reversed(self.scope.frames):
                for value in frame.values():
                    if isinstance(value, Buffer) and value.data is data and value.dtype == dt:
                        return value
        self.ctx.unsupported(f"{what} of storage no buffer of dtype {dt} in scope views",
                             node.span)

    def vector_access(self, node: S.Call, method: str) -> tuple[Buffer, tuple[PrimExpr, ...]]:
        """`A.vload([i, j], "float32x4")` / `A.vstore([i, j], value)`: the buffer and the
        indices, the last one widened to the lanes the dtype (or stored value) has."""
        assert isinstance(node.func, S.Attribute)
        buf = self.buffer(node.func.value)
        a = check_call(self.ctx, node, f"{buf.name}.{method}", Sig(1, 2, ("dtype", "predicate")))
        if "predicate" in a.kw:
            self.ctx.unsupported(f"{method} with a predicate", a.kw["predicate"].span)
        items = a.pos[0].elts if isinstance(a.pos[0], (S.List, S.Tuple)) else [a.pos[0]]
        if len(items) != buf.ndim:
            self.ctx.error(f"buffer '{buf.name}' has {buf.ndim} dimensions, indexed with "
                           f"{len(items)}", a.pos[0].span)
        idx = [self.index(x, "buffer index") for x in items]
        lanes = 1
        if method == "vload":
            dt_node = a.get(1, "dtype")
            dt = self.dtype_arg(dt_node) if dt_node is not None else buf.dtype
            lanes = dt.lanes // buf.dtype.lanes
        elif len(a.pos) > 1:
            lanes = self.expr(a.pos[1]).dtype.lanes // buf.dtype.lanes
        if lanes > 1 and idx:
            last = idx[-1]
            idx[-1] = Ramp(last, IntImm(1, last.dtype), lanes, last.dtype.with_lanes(lanes))
        return buf, tuple(idx)

    # ---- helpers for builtins -----------------------------------------------------------

    def dtype_arg(self, node: S.Expr) -> DType:
        """A dtype written as a string ("float32") or as `T.float32`."""
        name = node.value if isinstance(node, S.Constant) and node.kind == "str" else None
        if name is None:
            self.unknown_name(node)
            dotted = S.dotted(node)
            if dotted is not None and dotted.startswith("T."):
                name = dotted[2:]
        if not isinstance(name, str):
            self.ctx.error("expected a dtype such as \"float32\"", node.span)
        return self.parse_dtype(name, node)

    def parse_dtype(self, name: str, node: S.Expr) -> DType:
        if name == "":  # TVM writes `dtype=""` for calls that return nothing
            return DType("void", 0)
        try:
            return DType.parse(name)
        except DTypeError:
            self.ctx.error(f"unknown dtype '{name}'", node.span)

    def int_literal(self, node: S.Expr, what: str) -> int:
        self.unknown_name(node)
        value = literal_value(node)
        if not isinstance(value, int) or isinstance(value, bool):
            self.ctx.error(f"{what} must be an integer literal", node.span)
        return value

    def unknown_name(self, node: S.Expr) -> None:
        """A literal was expected: an unknown name there is most likely a Python variable
        of the code around the function (reported as such)."""
        if isinstance(node, S.Name) and self.scope.lookup(node.id) is None:
            self.scope.require(node.id, node.span)

    def str_literal(self, node: S.Expr, what: str) -> str:
        self.unknown_name(node)
        if not (isinstance(node, S.Constant) and node.kind == "str"):
            self.ctx.error(f"{what} must be a string", node.span)
        return str(node.value)

    def attr_value(self, node: S.Expr) -> Any:
        """A Python value for an attribute or annotation: literals, tuples, dicts, buffers,
        or an expression; lists are stored as tuples."""
        if isinstance(node, S.Constant):
            return node.value
        value = literal_value(node)
        if value is not None:
            return value
        if isinstance(node, (S.Tuple, S.List)):
            return tuple(self.attr_value(e) for e in node.elts)
        if isinstance(node, S.Dict):
            return self.attr_dict(node)
        if isinstance(node, S.Name) and isinstance(self.scope.lookup(node.id), Buffer):
            return self.scope.lookup(node.id)  # e.g. layout_free_placeholders: [B]
        if S.call_name(node) in ("T.target", "tvm.target.Target"):
            # TVM's hand-written attributes also build the target in Python
            assert isinstance(node, S.Call)
            a = check_call(self.ctx, node, str(S.call_name(node)), Sig(1, 2, ("host",)))
            spec = self.attr_value(a.pos[0])
            if not isinstance(spec, (str, dict)):
                self.ctx.error("T.target takes a target string or dictionary", a.pos[0].span)
            if len(a.pos) > 1 or "host" in a.kw:
                host = self.attr_value(a.get(1, "host"))  # type: ignore[arg-type]
                spec = {**({"kind": spec} if isinstance(spec, str) else spec),
                        "host": host.spec if isinstance(host, TargetAttr) else host}
            return TargetAttr(spec)
        value = self.expr(node)
        if isinstance(value, IntImm) and value.dtype.is_bool:
            return bool(value.value)  # TVM prints attribute bools as T.bool(True)
        return value

    def attr_dict(self, node: S.Expr) -> dict[str, Any]:
        if not isinstance(node, S.Dict):
            self.ctx.error("expected a dictionary {\"key\": value, ...}", node.span)
        out: dict[str, Any] = {}
        for k, v in zip(node.keys, node.values):
            key = self.str_literal(k, "an attribute key")
            out[key] = self.attr_value(v)
        return out


def _describe(node: S.Expr) -> str:
    if isinstance(node, S.Constant):
        return {"str": "a string", "none": "None"}.get(node.kind, "a literal")
    if isinstance(node, S.Tuple):
        return "a tuple"
    if isinstance(node, S.List):
        return "a list"
    if isinstance(node, S.Dict):
        return "a dictionary"
    if isinstance(node, S.Slice):
        return "a slice"
    return "this expression"


def _int_to_float(a: Any, b: Any) -> tuple[Any, Any]:
    """The operands with an integer one cast to the other's float dtype (same lanes only)."""
    if not isinstance(a, PrimExpr) or not isinstance(b, PrimExpr) or \
            a.dtype.lanes != b.dtype.lanes:
        return a, b
    if a.dtype.is_float and b.dtype.is_int:
        return a, cast(a.dtype, b)
    if a.dtype.is_int and b.dtype.is_float:
        return cast(b.dtype, a), b
    return a, b
