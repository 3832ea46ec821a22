"""The graph-level part of the reference interpreter: runs a Relax-like function's bindings.

Parameters bind symbolic shape variables from the argument shapes (and check them);
`R.call_tir` allocates its outputs from `out_sinfo` shapes and runs the loop function in
destination-passing style; `R.call_dps_packed` calls a Python callable registered as an
extern; every other operator comes from the numpy table in `tirc.ir.interpreter.ops`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
from tirc.ir.analysis.size_factor import other_factors
from tirc.ir.dtype import DType
from tirc.ir.expr import FloatImm, IntImm, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.graph import (
    Constant,
    ExternFunc,
    Function,
    GCall,
    GlobalVar,
    GraphExpr,
    GVar,
    If,
    MatchCast,
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
from tirc.ir.interpreter.expr import eval_expr
from tirc.ir.interpreter.ops import OPS, PRIM_OPERANDS
from tirc.ir.interpreter.prim_func import CompiledPrimFunc
from tirc.ir.interpreter.sparse_tensor import SparseValue, sparse_value
from tirc.ir.interpreter.values import InterpreterError, np_dtype
from tirc.ir.module import IRModule
from tirc.ir.packed_call import module_function_of_symbol
from tirc.ir.sparse.signature import CallMismatch, tensor_slots
from tirc.ir.visitor import post_order_visit


class ModuleRunner(Protocol):
    """What a graph function's run needs of the module interpreter
    (tirc.ir.interpreter.module.Interpreter): its module, externs and the other functions."""

    mod: IRModule
    externs: dict[str, Callable[..., Any]]
    size_checks: dict[int, tuple[Any, tuple[Any, ...]]]  # a call's, by id (the call kept)

    def call(self, name: str, *args: Any) -> Any:
        """Run function `name` of the module."""

    def prim_func(self, name: str) -> CompiledPrimFunc:
        """Loop function `name`, compiled."""

_DPS_CALLS = ("call_tir", "call_tir_inplace", "call_dps_packed")


def _free_vars(e: Any) -> list[Var]:
    found: list[Var] = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, Var) and n not in found
                     else None)
    return found


class GraphRunner:
    """One call of a graph function: the values of its variables and its symbolic sizes."""

    def __init__(self, interp: ModuleRunner) -> None:
        self.interp = interp
        self.values: dict[GVar, Any] = {}
        self.sym: dict[Var, int] = {}
        self.sym_by_name: dict[str, int] = {}
        self.deferred: list[tuple[PrimExpr, int, str]] | None = None

    def run(self, func: Function, args: list[Any]) -> Any:
        if len(args) != len(func.params):
            raise InterpreterError(f"{func.name} takes {len(func.params)} arguments, "
                                   f"got {len(args)}")
        self.deferred = []  # compound dims, checked once every direct size is bound
        for p, arg in zip(func.params, args):
            if isinstance(p.struct_info, SparseTensorSInfo):
                arg = sparse_value(arg, p.struct_info, f"argument {p.name}")
            self.match(p.struct_info, arg, f"argument {p.name}")
            self.values[p] = arg
        deferred, self.deferred = self.deferred, None
        for e, actual, what in deferred:
            self.solve_sym(e, actual, what)
        return self.seq(func.body)

    def seq(self, body: SeqExpr) -> Any:
        for block in body.blocks:
            for b in block.bindings:
                value = self.eval(b.value)  # type: ignore[attr-defined]
                if isinstance(b, MatchCast):
                    self.match(b.struct_info, value, f"match_cast of {b.var.name}")
                self.values[b.var] = value
        return self.eval(body.body)

    # ---- struct info -----------------------------------------------------------------

    def bind_sym(self, e: PrimExpr, actual: int, what: str) -> None:
        """Bind a symbolic dimension on first sight, else check it."""
        if isinstance(e, Var) and e not in self.sym and e.name not in self.sym_by_name:
            self.sym[e] = actual
            self.sym_by_name[e.name] = actual
            return
        if self.deferred is not None and not isinstance(e, Var):
            self.deferred.append((e, actual, what))
            return
        want = int(self.prim(e))
        if want != actual:
            raise InterpreterError(f"{what}: dimension is {actual}, expected {want}")

    def solve_sym(self, e: PrimExpr, actual: int, what: str) -> None:
        """Check a compound dimension of a parameter; one size it alone mentions, a factor of
        a product (`M * N` with `M` bound), is the dimension divided by the other factors."""
        unbound = [v for v in _free_vars(e) if v not in self.sym and v.name not in self.sym_by_name]
        if len(unbound) == 1:
            rest = other_factors(e, unbound[0])
            if rest is None:
                raise InterpreterError(f"{what}: the size '{unbound[0].name}' appears only in "
                                       "a compound dimension and cannot be solved from it")
            divisor = int(self.prim(rest))
            if divisor == 0 or actual % divisor:
                raise InterpreterError(f"{what}: dimension is {actual}, not a multiple of "
                                       f"{divisor}, so '{unbound[0].name}' has no value")
            self.sym[unbound[0]] = self.sym_by_name[unbound[0].name] = actual // divisor
        self.bind_sym(e, actual, what)

    def match(self, sinfo: StructInfo | None, value: Any, what: str) -> None:
        """Check `value` against struct info, binding the symbolic sizes it introduces."""
        if sinfo is None or isinstance(sinfo, ObjectSInfo):
            return
        if isinstance(sinfo, TensorSInfo):
            if not isinstance(value, np.ndarray):
                raise InterpreterError(f"{what}: expected a tensor, got {type(value).__name__}")
            if sinfo.dtype is not None and value.dtype != np_dtype(sinfo.dtype):
                raise InterpreterError(f"{what}: expected dtype {sinfo.dtype}, got {value.dtype}")
            ndim = len(sinfo.shape) if sinfo.shape is not None else sinfo.ndim
            if ndim >= 0 and value.ndim != ndim:
                raise InterpreterError(f"{what}: expected {ndim} dimensions, got {value.ndim}")
            for k, (e, actual) in enumerate(zip(sinfo.shape or (), value.shape)):
                self.bind_sym(e, int(actual), f"{what}, dimension {k}")
        elif isinstance(sinfo, SparseTensorSInfo):
            if not isinstance(value, SparseValue):
                raise InterpreterError(f"{what}: expected a sparse tensor, got "
                                       f"{type(value).__name__}")
            for k, (e, actual) in enumerate(zip(sinfo.shape, value.shape)):
                self.bind_sym(e, int(actual), f"{what}, dimension {k}")
            self.bind_sym(sinfo.nnz, value.nnz, f"{what}, nnz")
        elif isinstance(sinfo, TupleSInfo):
            if not isinstance(value, tuple) or len(value) != len(sinfo.fields):
                raise InterpreterError(f"{what}: expected a tuple of {len(sinfo.fields)}")
            for k, (f, v) in enumerate(zip(sinfo.fields, value)):
                self.match(f, v, f"{what}[{k}]")
        elif isinstance(sinfo, ShapeSInfo):
            if not isinstance(value, tuple):
                raise InterpreterError(f"{what}: expected a shape, got {type(value).__name__}")
            for k, (e, actual) in enumerate(zip(sinfo.values or (), value)):
                self.bind_sym(e, int(actual), f"{what}, entry {k}")
        elif isinstance(sinfo, PrimSInfo) and isinstance(value, np.ndarray) and value.ndim:
            raise InterpreterError(f"{what}: expected a {sinfo.dtype} scalar")
        elif isinstance(sinfo, PrimSInfo) and sinfo.value is not None:
            self.bind_sym(sinfo.value, int(value), what)  # R.Prim(value=n) binds n

    # ---- expressions -----------------------------------------------------------------

    def prim(self, e: PrimExpr) -> Any:
        """A loop-level expression over the symbolic sizes (bound by identity or name)."""
        bindings: dict[Var, int] = {}
        for v in _free_vars(e):
            if v in self.sym:
                bindings[v] = self.sym[v]
            elif v.name in self.sym_by_name:
                bindings[v] = self.sym_by_name[v.name]
            else:
                raise InterpreterError(f"symbolic variable '{v.name}' is not bound")
        return eval_expr(e, bindings)

    def eval(self, e: GraphExpr) -> Any:
        if isinstance(e, GVar):
            if e not in self.values:
                raise InterpreterError(f"graph variable '{e.name}' is used before it is bound")
            return self.values[e]
        if isinstance(e, Constant):
            return np.asarray(e.value, dtype=np_dtype(e.dtype))
        if isinstance(e, PrimValue):
            return self.prim(e.value)
        if isinstance(e, StringValue):
            return e.value
        if isinstance(e, ShapeExpr):
            return tuple(int(self.prim(v)) for v in e.values)
        if isinstance(e, Tuple):
            return tuple(self.eval(f) for f in e.fields)
        if isinstance(e, TupleGetItem):
            return self.eval(e.tuple_value)[e.index]
        if isinstance(e, SeqExpr):
            return self.seq(e)
        if isinstance(e, If):
            return self.seq(e.true_branch if self.condition(e.cond) else e.false_branch)
        if isinstance(e, GCall):
            return self.call(e)
        raise InterpreterError(f"the interpreter cannot evaluate {type(e).__name__} here")

    def condition(self, cond: GraphExpr) -> bool:
        """The truth of an `if`'s condition: a scalar (an `R.Prim` value or a 0-d tensor)."""
        value = self.eval(cond)
        if isinstance(value, np.ndarray) and value.ndim:
            raise InterpreterError("the condition of 'if' must be a scalar, got a tensor of "
                                   f"shape {value.shape}")
        return bool(value)

    def attr(self, v: Any) -> Any:
        """An operator attribute as a plain Python value."""
        if isinstance(v, IntImm):
            return bool(v.value) if v.dtype.is_bool else v.value
        if isinstance(v, FloatImm):
            return v.value
        if isinstance(v, PrimExpr):
            return self.prim(v)
        if isinstance(v, DType):
            return str(v)
        if isinstance(v, (tuple, list)):
            return tuple(self.attr(x) for x in v)
        if isinstance(v, GraphExpr):
            return self.eval(v)
        return v

    # ---- calls -----------------------------------------------------------------------

    def size_check(self, check: Any) -> None:
        """An equality of sizes the call's struct info assumed (tirc.ir.ops.size_checks): an
        error with the compiled check's message when the actual sizes differ."""
        lhs, rhs = int(self.prim(check.lhs)), int(self.prim(check.rhs))
        if lhs != rhs:
            raise InterpreterError(check.message(lhs, rhs))

    def call(self, e: GCall) -> Any:
        if e.op in _DPS_CALLS:
            return self.dps_call(e)
        if e.op in self.interp.mod.functions and e.op not in OPS:  # a call of a function
            args = [self.eval(a) for a in e.args]
            return self.interp.call(e.op, *args)
        from tirc.ir.ops.size_checks import SIZE_CHECK, call_size_checks, size_check_of

        if e.op == SIZE_CHECK:
            self.size_check(size_check_of(e))
            return ()
        fn = OPS.get(e.op)
        if fn is None:
            raise InterpreterError(f"the interpreter has no implementation of R.{e.op}")
        cached = self.interp.size_checks.get(id(e))
        if cached is None or cached[0] is not e:
            cached = self.interp.size_checks[id(e)] = (e, call_size_checks(e, self.interp.mod))
        for check in cached[1]:
            self.size_check(check)
        args = [self.eval(a) for a in e.args]
        if e.op in PRIM_OPERANDS:
            args = [_scalar_operand(a, v) for a, v in zip(e.args, args)]
        attrs = {k: self.attr(v) for k, v in e.attrs.items()}
        try:
            with np.errstate(all="ignore"):
                return fn(*args, **attrs)
        except (ValueError, TypeError, IndexError) as exc:
            raise InterpreterError(f"R.{e.op}: {exc}") from exc

    def outputs(self, e: GCall) -> tuple[list[np.ndarray], bool]:
        """Fresh output tensors from `out_sinfo`; True when the result is a single tensor."""
        sinfos = list(e.sinfo_args)
        if not sinfos and "out_sinfo" in e.attrs:
            out = e.attrs["out_sinfo"]
            sinfos = list(out) if isinstance(out, (tuple, list)) else [out]
        single = len(sinfos) == 1 and isinstance(sinfos[0], TensorSInfo)
        if len(sinfos) == 1 and isinstance(sinfos[0], TupleSInfo):
            sinfos = list(sinfos[0].fields)
        arrays = []
        for s in sinfos:
            if not isinstance(s, TensorSInfo) or s.shape is None or s.dtype is None:
                raise InterpreterError(f"R.{e.op}: out_sinfo needs a tensor shape and dtype")
            shape = tuple(int(self.prim(d)) for d in s.shape)
            arrays.append(np.zeros(shape, dtype=np_dtype(s.dtype)))
        return arrays, single

    def dps_call(self, e: GCall) -> Any:
        if not e.args:
            raise InterpreterError(f"R.{e.op} needs a callee")
        callee = e.args[0]
        inputs: list[Any] = []
        extra: list[Any] = []
        if len(e.args) > 1:
            packed = self.eval(e.args[1])
            inputs = list(packed) if isinstance(packed, tuple) else [packed]
        if len(e.args) > 2 and isinstance(e.args[2], ShapeExpr):
            extra = list(self.eval(e.args[2]))
        outs, single = self.outputs(e)
        written = outs  # the kernel's outputs (call_tir_inplace's fresh ones only)
        if e.op == "call_tir_inplace":
            indices = tuple(self.attr(e.attrs.get("inplace_indices", ())))
            outs = _inplace_outputs(indices, inputs, outs)
            written = [o for o, i in zip(outs, indices) if i == -1]
        own = module_function_of_symbol(self.interp.mod, callee.symbol) \
            if e.op == "call_dps_packed" and isinstance(callee, ExternFunc) else None
        if own is not None:  # the module's own loop function, called by its symbol
            callee = GlobalVar(own)
        if e.op in ("call_tir", "call_tir_inplace") or own is not None:
            if not isinstance(callee, GlobalVar):
                raise InterpreterError("R.call_tir needs a loop function as its callee")
            func = self.interp.mod.functions.get(callee.name)
            if not isinstance(func, PrimFunc):
                raise InterpreterError(f"R.call_tir: no loop function named '{callee.name}'")
            fields = e.args[1].fields if isinstance(e.args[1], Tuple) else [None] * len(inputs)
            scalar = [_is_scalar_argument(f, v) for f, v in zip(fields, inputs)]
            tensors = [v for v, sc in zip(inputs, scalar) if not sc]
            prims = [v for v, sc in zip(inputs, scalar) if sc]
            self.interp.prim_func(callee.name)(*_raw_arguments(func, tensors + written,
                                                               prims + extra))
        else:
            symbol = callee.symbol if isinstance(callee, ExternFunc) else str(self.eval(callee))
            fn = self.interp.externs.get(symbol)
            if fn is None:
                raise InterpreterError(f"R.call_dps_packed: no extern registered for '{symbol}'")
            fn(*inputs, *outs)
        return outs[0] if single else tuple(outs)


def _inplace_outputs(indices: tuple[int, ...], inputs: list[Any], outs: list[np.ndarray]
                     ) -> list[Any]:
    """R.call_tir_inplace's outputs: a copy of argument `inplace_indices[k]` for output k (the
    kernel writes it in place; the argument keeps its value, as the compiled code's copy does),
    else the fresh tensor; the kernel takes the arguments, then the fresh outputs."""
    if len(indices) != len(outs):
        raise InterpreterError("R.call_tir_inplace: one in-place index per output")
    result = []
    for i, out in zip(indices, outs):
        if i == -1:
            result.append(out)
            continue
        if not 0 <= i < len(inputs) or not isinstance(inputs[i], np.ndarray):
            raise InterpreterError(f"R.call_tir_inplace: in-place index {i} is no tensor "
                                   "argument")
        inputs[i] = inputs[i].copy()
        result.append(inputs[i])
    return result


def _prim_sinfo(e: GraphExpr | None) -> PrimSInfo | None:
    """The `R.Prim` type of an argument expression (a literal or a variable), else None."""
    s = PrimSInfo(e.value.dtype) if isinstance(e, PrimValue) else getattr(e, "struct_info", None)
    return s if isinstance(s, PrimSInfo) else None


def _scalar_operand(e: GraphExpr, value: Any) -> Any:
    """A binary operator's operand; an `R.Prim` scalar as TVM broadcasts it, a tensor of shape
    (1,) of its dtype (so a 0-d tensor and a scalar give shape (1,), as TVM's struct info)."""
    s = _prim_sinfo(e)
    if s is None:
        return value
    return np.asarray(value, dtype=np_dtype(s.dtype)).reshape(1)


def _is_scalar_argument(e: GraphExpr | None, value: Any) -> bool:
    """Whether a call_tir argument is an `R.Prim` scalar: by its type where the expression has
    one, else by its value (an array or a sparse matrix is a tensor)."""
    if _prim_sinfo(e) is not None:
        return True
    if getattr(e, "struct_info", None) is not None:
        return False
    return not isinstance(value, (np.ndarray, SparseValue))


def _raw_arguments(func: PrimFunc, tensors: list[Any], scalars: list[Any]) -> list[Any]:
    """A call_tir's values as the loop function's parameters: a sparse tensor fills its
    parameter's data and axis arrays (tensor_slots), the scalars (its `R.Prim` arguments,
    then its `tir_vars`) fill the rest in order."""
    try:
        slots = tensor_slots(func, [isinstance(t, SparseValue) for t in tensors])
    except CallMismatch as exc:
        raise InterpreterError(f"R.call_tir: {exc}") from None
    raw: dict[Var, Any] = {}
    for (param, sp), value in zip(slots, tensors):
        if sp is None:
            raw[param] = value
        else:
            raw.update({param: value.data, sp.indptr: value.indptr, sp.indices: value.indices})
    rest = iter(scalars)
    return [raw[p] if p in raw else next(rest, None) for p in func.params]
