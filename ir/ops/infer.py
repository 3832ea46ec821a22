"""Struct info of any graph expression, and the checks of annotations and `R.match_cast`.

`infer_expr` returns the struct info of an expression whose variables already carry theirs;
operator calls go through the operator table (`tirc.ir.ops.registry`), calls of another graph
function of the module substitute its symbolic parameters.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.diagnostics import CompileError
from tirc.ir.dist.dtensor import DTensorSInfo, keep_placement
from tirc.ir.expr import PrimExpr, Var
from tirc.ir.graph import (
    Constant,
    ExternFunc,
    Function,
    GCall,
    GlobalVar,
    GraphExpr,
    GVar,
    If,
    ObjectSInfo,
    PrimSInfo,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    ShapeSInfo,
    SparseTensorSInfo,
    StringValue,
    StructInfo,
    TensorSInfo,
    Tuple,
    TupleGetItem,
    TupleSInfo,
)
from tirc.ir.ops.registry import infer_call
from tirc.ir.ops.sinfo_util import dim, dims_equal, ndim_of, sinfo_text
from tirc.ir.visitor import substitute


def infer_expr(e: GraphExpr, module: Any = None) -> tuple[GraphExpr, StructInfo]:
    """The expression (calls in canonical form) and its struct info."""
    if isinstance(e, GCall):
        if module is not None and isinstance(module.functions.get(e.op), Function):
            return e, _call_function(e, module.functions[e.op])
        return infer_call(e, lambda a: infer_expr(a, module)[1], module)
    return e, _sinfo_of_value(e, module)


def _sinfo_of_value(e: GraphExpr, module: Any) -> StructInfo:
    if isinstance(e, GVar):
        return e.struct_info if e.struct_info is not None else ObjectSInfo()
    if isinstance(e, Constant):
        shape = e.shape
        return TensorSInfo(tuple(dim(n) for n in shape), e.dtype, len(shape))
    if isinstance(e, PrimValue):
        return PrimSInfo(e.value.dtype)
    if isinstance(e, ShapeExpr):
        return ShapeSInfo(tuple(dim(v) for v in e.values), len(e.values))
    if isinstance(e, Tuple):
        return TupleSInfo(tuple(infer_expr(f, module)[1] for f in e.fields))
    if isinstance(e, TupleGetItem):
        t = infer_expr(e.tuple_value, module)[1]
        if not isinstance(t, TupleSInfo):
            raise CompileError(f"indexing a value that is not a tuple ({sinfo_text(t)})", e.span)
        if not 0 <= e.index < len(t.fields):
            raise CompileError(f"tuple index {e.index} is out of range for a tuple of "
                               f"{len(t.fields)}", e.span)
        return t.fields[e.index]
    if isinstance(e, SeqExpr):
        return infer_expr(e.body, module)[1]
    if isinstance(e, If):  # normalize checks that both branches agree
        return infer_expr(e.true_branch.body, module)[1]
    if isinstance(e, (GlobalVar, ExternFunc, StringValue)):
        return ObjectSInfo()
    raise CompileError(f"cannot infer the struct info of {type(e).__name__}", e.span)


def _call_function(call: GCall, func: Function) -> StructInfo:
    """A call of a graph function: its return struct info with the parameters' sizes bound."""
    if len(call.args) != len(func.params):
        raise CompileError(f"{func.name} takes {len(func.params)} arguments, got "
                           f"{len(call.args)}", call.span)
    values: dict[Var, PrimExpr] = {}
    for p, a in zip(func.params, call.args):
        for d, actual in defined_sizes(p.struct_info, a):
            if isinstance(d, Var) and d not in values:
                values[d] = actual
    ret = func.ret_struct_info or _sinfo_of_value(func.body, None)
    return substitute(ret, values) if values else ret


def defined_sizes(ps: StructInfo | None, a: GraphExpr) -> list[tuple[PrimExpr, PrimExpr]]:
    """(parameter size, argument size) pairs a call's argument gives: a tensor's dimensions,
    an `R.Shape([m, n])`'s sizes, an `R.Prim(value="n")`'s value (`R.prim_value(n)`)."""
    a_s = a.struct_info if isinstance(a, GVar) else None
    if isinstance(ps, TensorSInfo) and isinstance(a_s, TensorSInfo) and ps.shape \
            and a_s.shape and len(ps.shape) == len(a_s.shape):
        return list(zip(ps.shape, a_s.shape))
    if isinstance(ps, ShapeSInfo) and ps.values is not None:
        given = a.values if isinstance(a, ShapeExpr) else \
            a_s.values if isinstance(a_s, ShapeSInfo) else None
        if given is not None and len(given) == len(ps.values):
            return list(zip(ps.values, given))
    if isinstance(ps, PrimSInfo) and isinstance(ps.value, PrimExpr):
        given = a.value if isinstance(a, PrimValue) else \
            a_s.value if isinstance(a_s, PrimSInfo) else None
        if isinstance(given, PrimExpr):
            return [(ps.value, given)]
    return []


def sinfo_agrees(declared: StructInfo, actual: StructInfo) -> bool:
    """True when a value of struct info `actual` may be annotated as `declared`."""
    if isinstance(declared, ObjectSInfo):
        return True
    if isinstance(declared, TensorSInfo):
        if not isinstance(actual, TensorSInfo):
            return False
        if isinstance(declared, DTensorSInfo) and isinstance(actual, DTensorSInfo) and \
                (declared.placement, declared.device_mesh) != \
                (actual.placement, actual.device_mesh):
            return False
        if declared.dtype is not None and actual.dtype is not None \
                and declared.dtype != actual.dtype:
            return False
        nd, na = ndim_of(declared), ndim_of(actual)
        if nd >= 0 and na >= 0 and nd != na:
            return False
        if declared.shape is not None and actual.shape is not None:
            return all(dims_equal(a, b) for a, b in zip(declared.shape, actual.shape))
        return True
    if isinstance(declared, SparseTensorSInfo):
        return isinstance(actual, SparseTensorSInfo) and _same_format(declared, actual) and \
            all(dims_equal(a, b) for a, b in zip(declared.shape + (declared.nnz,),
                                                 actual.shape + (actual.nnz,)))
    if isinstance(declared, TupleSInfo):
        return isinstance(actual, TupleSInfo) and len(declared.fields) == len(actual.fields) \
            and all(sinfo_agrees(d, a) for d, a in zip(declared.fields, actual.fields))
    if isinstance(declared, ShapeSInfo):
        if not isinstance(actual, ShapeSInfo):
            return False
        if declared.values is not None and actual.values is not None:
            return len(declared.values) == len(actual.values) and all(
                dims_equal(a, b) for a, b in zip(declared.values, actual.values))
        return True
    if isinstance(declared, PrimSInfo):
        return isinstance(actual, PrimSInfo) and actual.dtype == declared.dtype
    return True


def more_precise(declared: StructInfo, actual: StructInfo) -> StructInfo:
    """Of two agreeing struct infos, the one that says more (known shape beats unknown; a
    declared placement is kept)."""
    return keep_placement(declared, _more_precise(declared, actual))


def _more_precise(declared: StructInfo, actual: StructInfo) -> StructInfo:
    if isinstance(declared, TensorSInfo) and isinstance(actual, TensorSInfo):
        if actual.shape is None and declared.shape is not None:
            return declared
        if actual.dtype is None and declared.dtype is not None:
            return TensorSInfo(actual.shape, declared.dtype, ndim_of(actual))
    if isinstance(actual, ObjectSInfo):
        return declared
    return actual


def _same_format(a: SparseTensorSInfo, b: SparseTensorSInfo) -> bool:
    return (a.dtype, a.format, a.block, a.index_dtype) == (b.dtype, b.format, b.block,
                                                           b.index_dtype)


def match_cast_conflict(target: StructInfo, actual: StructInfo) -> str | None:
    """Why a value can never match `target` at run time, or None when it might."""
    if isinstance(target, SparseTensorSInfo) or isinstance(actual, SparseTensorSInfo):
        if isinstance(actual, ObjectSInfo):
            return None
        if not (isinstance(target, SparseTensorSInfo) and isinstance(actual, SparseTensorSInfo)):
            return f"a {sinfo_text(actual)} is not a {sinfo_text(target)}"
        if not _same_format(target, actual):
            return f"{sinfo_text(actual)} has another format than {sinfo_text(target)}"
        return None
    if isinstance(target, TensorSInfo):
        if isinstance(actual, ObjectSInfo):
            return None
        if not isinstance(actual, TensorSInfo):
            return f"a {sinfo_text(actual)} is not a tensor"
        if target.dtype is not None and actual.dtype is not None and target.dtype != actual.dtype:
            return f"dtype {actual.dtype} is not {target.dtype}"
        nt, na = ndim_of(target), ndim_of(actual)
        if nt >= 0 and na >= 0 and nt != na:
            return f"rank {na} is not {nt}"
        for k, (t, a) in enumerate(zip(target.shape or (), actual.shape or ())):
            if isinstance(t, PrimExpr) and isinstance(a, PrimExpr) and \
                    _both_const(t, a) and not dims_equal(t, a):
                return f"dimension {k} is {sinfo_text(actual)}, not {sinfo_text(target)}"
    return None


def _both_const(a: PrimExpr, b: PrimExpr) -> bool:
    from tirc.ir.ops.sinfo_util import const_dim

    return const_dim(a) is not None and const_dim(b) is not None
