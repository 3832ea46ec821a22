"""Graph-level types (struct info): R.Tensor, R.SparseTensor, R.Tuple, R.Shape, R.Prim,
R.Object.

Shape entries are integers, symbolic names (`"n"`, defining an int64 variable on first use),
names of symbolic variables already defined (`n`), or expressions (`n * 2`, `"n * 2"`).
"""

from __future__ import annotations

from tirc.frontend import syntax as S
from tirc.frontend.builder_dist import dtensor
from tirc.frontend.builder_expr import ExprBuilder, literal_value
from tirc.frontend.parser import parse_expr_text
from tirc.frontend.prim_calls import dtype_named
from tirc.frontend.signature import Sig, check_call
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import DType
from tirc.ir.expr import PrimExpr, Var, cast
from tirc.ir.graph import (
    SPARSE_FORMATS,
    ObjectSInfo,
    PrimSInfo,
    ShapeSInfo,
    SparseTensorSInfo,
    StructInfo,
    TensorSInfo,
    TupleSInfo,
)

INT64 = DType("int", 64)
TYPE_NAMES = ("R.Tensor", "R.DTensor", "R.SparseTensor", "R.Tuple", "R.Shape", "R.Prim",
              "R.Object", "R.Any")


class SInfoBuilder:
    """Struct info from annotations; symbolic sizes resolve (or are defined) in `eb.scope`."""

    def __init__(self, eb: ExprBuilder) -> None:
        self.eb = eb
        self.ctx = eb.ctx

    def sinfo(self, node: S.Expr) -> StructInfo:
        if isinstance(node, S.Attribute) and node.attr == "struct_info" and \
                isinstance(node.value, S.Name):
            return self.struct_info_of(node.value)
        name = S.dotted(node.func) if isinstance(node, S.Call) else S.dotted(node)
        call = node if isinstance(node, S.Call) else None
        if name == "R.Tensor":
            return self.tensor(call) if call else TensorSInfo(None, None, -1, span=node.span)
        if name == "R.DTensor" and call is not None:
            return self.dtensor(call)
        if name == "R.SparseTensor":
            if call is None:
                self.ctx.error("R.SparseTensor needs a shape, a dtype and nnz: "
                               "R.SparseTensor((m, n), \"float32\", nnz=\"nnz\")", node.span)
            return self.sparse_tensor(call)
        if name == "R.Tuple":
            if call is None:
                return TupleSInfo((), span=node.span)
            check_call(self.ctx, call, name, Sig(0, None))
            items = call.args
            if len(items) == 1 and isinstance(items[0], (S.List, S.Tuple)):
                items = items[0].elts
            return TupleSInfo(tuple(self.sinfo(x) for x in items), span=node.span)
        if name == "R.Shape":
            return self.shape(call) if call else ShapeSInfo(None, -1, span=node.span)
        if name == "R.Prim":
            if call is None:
                self.ctx.error("R.Prim needs a dtype: R.Prim(\"int64\")", node.span)
            a = check_call(self.ctx, call, name, Sig(0, 1, ("dtype", "value")))
            dt_node = a.get(0, "dtype")
            value = self.dim(a.kw["value"]) if "value" in a.kw else None
            if dt_node is None and value is None:
                self.ctx.error("R.Prim needs a dtype: R.Prim(\"int64\")", node.span)
            dt = self.eb.dtype_arg(dt_node) if dt_node is not None else value.dtype
            if value is not None and value.dtype != dt:
                value = cast(dt, value)
            return PrimSInfo(dt, value, span=node.span)
        if name in ("R.Object", "R.Any"):  # TVM 0.27 prints R.Object as R.Any
            if call is not None:
                check_call(self.ctx, call, name, Sig(0, 0))
            return ObjectSInfo(span=node.span)
        if name is not None and name.startswith("R."):
            self.ctx.unsupported(f"the type {name}", node.span)
        prim = dtype_named(node) if call is None else None  # T.float32: R.Prim
        if prim is not None:
            return PrimSInfo(prim, None, span=node.span)
        self.ctx.error("expected a graph-level type such as R.Tensor((n, 4), \"float32\")",
                       node.span)

    def struct_info_of(self, node: S.Name) -> StructInfo:
        """`x.struct_info`: the declared type of a parameter or annotated binding."""
        value = self.eb.scope.require(node.id, node.span)
        sinfo = getattr(value, "struct_info", None)
        if not isinstance(sinfo, StructInfo):
            self.ctx.error(f"the type of '{node.id}' is not written where it is bound; "
                           f"annotate it ({node.id}: R.Tensor(...) = ...)", node.span)
        return sinfo

    def tensor(self, call: S.Call) -> TensorSInfo:
        a = check_call(self.ctx, call, "R.Tensor", Sig(0, 2, ("shape", "dtype", "ndim")))
        shape_node, dtype_node = a.get(0, "shape"), a.get(1, "dtype")
        if isinstance(shape_node, S.Constant) and shape_node.kind == "str" and dtype_node is None:
            shape_node, dtype_node = None, shape_node
        dt = None
        if dtype_node is not None and not _is_none(dtype_node):
            text = self.eb.str_literal(dtype_node, "a tensor dtype")
            dt = self.eb.parse_dtype(text, dtype_node) if text else None
        ndim = self.eb.int_literal(a.kw["ndim"], "ndim") if "ndim" in a.kw else -1
        if ndim < -1:
            self.ctx.error(f"ndim={ndim}: a rank is a non-negative integer, or -1 for unknown",
                           a.kw["ndim"].span)
        shape = None
        if shape_node is not None and not _is_none(shape_node):
            shape = self.dims(shape_node)
            if ndim not in (-1, len(shape)):
                self.ctx.error(f"ndim={ndim} but the shape has {len(shape)} dimensions",
                               call.span)
            ndim = len(shape)
        return TensorSInfo(shape, dt, ndim, span=call.span)

    def dtensor(self, call: S.Call) -> TensorSInfo:
        """`R.DTensor(shape, dtype, device_mesh, placement)` (see builder_dist)."""
        a = check_call(self.ctx, call, "R.DTensor",
                       Sig(0, 4, ("shape", "dtype", "device_mesh", "placement", "ndim")))
        tensor_call = S.Call(span=call.span, func=call.func, args=call.args[:2],
                             keywords=[k for k in call.keywords
                                       if k.name in ("shape", "dtype", "ndim")])
        base = self.tensor(tensor_call)
        return dtensor(self.ctx, call, base, a.get(2, "device_mesh"), a.get(3, "placement"),
                       getattr(self.ctx, "global_infos", {}))

    def sparse_tensor(self, call: S.Call) -> SparseTensorSInfo:
        """`R.SparseTensor((m, n), "float32", nnz="nnz", format="csr" | "bsr", block=(b, b),
        index_dtype="int32")`."""
        name = "R.SparseTensor"
        a = check_call(self.ctx, call, name, Sig(0, 2, ("shape", "dtype", "nnz", "format",
                                                        "block", "index_dtype")))
        shape_node, dtype_node, nnz_node = a.get(0, "shape"), a.get(1, "dtype"), a.kw.get("nnz")
        if shape_node is None or dtype_node is None:
            self.ctx.error(f"{name} needs a shape and a dtype: "
                           "R.SparseTensor((m, n), \"float32\", nnz=\"nnz\")", call.span)
        if nnz_node is None:
            self.ctx.error(f"{name} needs nnz=, the number of stored elements (a symbolic "
                           "size such as \"nnz\")", call.span)
        shape = self.dims(shape_node)
        if len(shape) != 2:
            self.ctx.error(f"{name} is a matrix: its shape has 2 dimensions, not {len(shape)}",
                           shape_node.span)
        dt = self.eb.parse_dtype(self.eb.str_literal(dtype_node, "a tensor dtype"), dtype_node)
        fmt = "csr"
        if "format" in a.kw:
            fmt = self.eb.str_literal(a.kw["format"], "format")
            if fmt not in SPARSE_FORMATS:
                self.ctx.error(f"{name}: unknown format '{fmt}' (known: "
                               f"{', '.join(SPARSE_FORMATS)})", a.kw["format"].span)
        block: tuple[int, ...] = ()
        if "block" in a.kw:
            node = a.kw["block"]
            if fmt != "bsr":
                self.ctx.error(f"{name}: block= belongs to format=\"bsr\"", node.span)
            if not isinstance(node, (S.Tuple, S.List)) or len(node.elts) != 2:
                self.ctx.error(f"{name}: block is a pair of sizes such as (4, 4)", node.span)
            block = tuple(self.eb.int_literal(e, "a block size") for e in node.elts)
            if min(block) < 1:
                self.ctx.error(f"{name}: block sizes must be positive", node.span)
        elif fmt == "bsr":
            self.ctx.error(f"{name}: format=\"bsr\" needs block=(rows, cols)", call.span)
        idt = DType("int", 32)
        if "index_dtype" in a.kw:
            node = a.kw["index_dtype"]
            idt = self.eb.parse_dtype(self.eb.str_literal(node, "index_dtype"), node)
            if idt not in (DType("int", 32), DType("int", 64)):
                self.ctx.error(f"{name}: index_dtype must be int32 or int64", node.span)
        return SparseTensorSInfo(shape, dt, self.dim(nnz_node), fmt, block, idt, span=call.span)

    def shape(self, call: S.Call) -> ShapeSInfo:
        a = check_call(self.ctx, call, "R.Shape", Sig(0, 1, ("values", "ndim")))
        values_node = a.get(0, "values")
        ndim = self.eb.int_literal(a.kw["ndim"], "ndim") if "ndim" in a.kw else -1
        if values_node is None or _is_none(values_node):
            return ShapeSInfo(None, ndim, span=call.span)
        values = self.dims(values_node)
        return ShapeSInfo(values, len(values), span=call.span)

    def dims(self, node: S.Expr) -> tuple[PrimExpr, ...]:
        if not isinstance(node, (S.Tuple, S.List)):
            self.ctx.error("a shape is a tuple of dimensions such as (n, 4)", node.span)
        return tuple(self.dim(d) for d in node.elts)

    def dim(self, node: S.Expr) -> PrimExpr:
        """One dimension; a string is parsed as an expression whose unknown names become
        new int64 symbolic variables."""
        if isinstance(node, S.Constant) and node.kind == "str":
            text = str(node.value)
            try:
                inner = parse_expr_text(text, node.span.file, node.span.line,
                                        node.span.col + 1)
            except CompileError as err:
                first = err.diagnostics[0]
                self.ctx.error(f"in the shape string \"{text}\": {first.message}", first.span)
            self.define_symbols(inner)
            return self.eb.index(inner, "a shape dimension")
        value = literal_value(node)
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            self.ctx.error("negative shape dimension", node.span)
        return self.eb.index(node, "a shape dimension")

    def define_symbols(self, node: S.Expr) -> None:
        """Define every unknown name in `node` as an int64 symbolic variable."""
        if isinstance(node, S.Name):
            if self.eb.scope.lookup(node.id) is None:
                self.eb.scope.frames[0][node.id] = Var(node.id, INT64, span=node.span)
            return
        for child in _children(node):
            self.define_symbols(child)


def _children(node: S.Expr) -> list[S.Expr]:
    if isinstance(node, S.BinOp):
        return [node.left, node.right]
    if isinstance(node, S.UnaryOp):
        return [node.operand]
    if isinstance(node, S.Call):
        return list(node.args)
    if isinstance(node, (S.Tuple, S.List)):
        return list(node.elts)
    return []


def _is_none(node: S.Expr) -> bool:
    return isinstance(node, S.Constant) and node.kind == "none"
