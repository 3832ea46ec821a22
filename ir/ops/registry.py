"""The operator table: each graph operator's parameters and its struct info inference.

An operator declares its parameters once (`Param("axis", "ints", None)`). `bind_call` matches
a call's positional arguments and keywords against them, accepting the spellings a frontend may
produce (Python ints, IntImm, PrimValue, ShapeExpr, tuples), and `OpCall` hands the inference
function plain values. `canonical_call` rewrites a call into one form: tensor, tuple and shape
parameters positional, attributes as keywords with plain Python values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any, NoReturn

from tirc.ir.diagnostics import CompileError, close_names
from tirc.ir.dtype import DType, DTypeError, dtype
from tirc.ir.expr import FloatImm, IntImm, PrimExpr, StringImm
from tirc.ir.graph import (
    Constant,
    ExternFunc,
    GCall,
    GraphExpr,
    PrimValue,
    ShapeExpr,
    SparseTensorSInfo,
    StringValue,
    StructInfo,
    TensorSInfo,
    Tuple,
    TupleSInfo,
)
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.ops.sinfo_util import ndim_of, normalize_axis, sinfo_text
from tirc.ir.schedule import SchedLambda
from tirc.ir.span import SourceMap, Span

REQUIRED = object()

# Parameter kinds: graph values stay arguments; the rest are attributes with Python values.
GRAPH_KINDS = ("tensor", "sparse", "tensors", "shape", "scalar", "callee")
ATTR_KINDS = ("int", "ints", "int_exprs", "int_or_ints", "bool", "float", "floats", "number",
              "number_or_expr", "dtype", "str", "sinfo", "index_map")


@dataclass(frozen=True)
class Param:
    """One parameter of an operator: its name, kind and default (REQUIRED when none)."""

    name: str
    kind: str
    default: Any = REQUIRED

    @property
    def is_graph(self) -> bool:
        return self.kind in GRAPH_KINDS


@dataclass(frozen=True)
class OpDef:
    """An operator: name (without `R.`), parameters, struct info inference."""

    name: str
    params: tuple[Param, ...]
    infer: Callable[[OpCall], StructInfo]


OPS: dict[str, OpDef] = {}


def register(name: str, params: list[Param],
             infer: Callable[[OpCall], StructInfo]) -> OpDef:
    """Add an operator to the table."""
    op = OpDef(name, tuple(params), infer)
    OPS[name] = op
    return op


def unknown_operator(name: str) -> str:
    """The message for `R.<name>` that no operator has: close names, else those of its
    namespace (`R.nn.*`)."""
    close = close_names(name, OPS, 4)
    hint = f"; did you mean {' or '.join(f'R.{c}' for c in close)}?" if close else ""
    space = name.rpartition(".")[0]
    siblings = sorted(n for n in OPS if n.rpartition(".")[0] == space)
    if not space or not siblings:
        return f"unknown operator R.{name}{hint}"
    return (f"unknown operator R.{name}{hint} (R.{space} has: "
            f"{', '.join(n.rpartition('.')[2] for n in siblings)})")


def get_op(name: str) -> OpDef | None:
    """The operator called `name`, loading every operator family on first use."""
    if not _LOADED:
        _load()
    return OPS.get(name)


_LOADED: list[bool] = []


def _load() -> None:
    from tirc.ir.ops import (  # noqa: F401 (imported for their registrations)
        attention,
        calls,
        conv,
        conv_transpose,
        creation,
        dist,
        elementwise,
        image,
        indexing,
        layout,
        manipulation,
        matmul,
        nn,
        quantize,
        reduction,
        size_checks,
        slicing,
        sparse,
    )

    _LOADED.append(True)


class _NotConvertible(Exception):
    pass


@dataclass
class OpCall:
    """A call bound to its operator's parameters, with the struct info of its graph arguments.

    `values` maps parameter names to graph expressions (graph kinds) or Python values
    (attributes, defaults filled in); `sinfo` maps graph parameters to their struct info.
    """

    op: OpDef
    call: GCall
    values: dict[str, Any]
    sinfo: dict[str, StructInfo | tuple[StructInfo, ...]]
    given: set[str] = field(default_factory=set)
    module: Any = None

    @property
    def span(self) -> Span | None:
        return self.call.span

    def error(self, message: str, at: Span | None = None) -> NoReturn:
        """Raise the diagnostic `R.<op>: message` at `at` (an argument), else at the call."""
        raise CompileError(f"R.{self.op.name}: {message}", at or self.span)

    def element_span(self, name: str, k: int) -> Span | None:
        """Where element `k` of the tuple argument `name` is written (the argument itself
        when it is not written as a tuple; None when unknown)."""
        value = self.values.get(name)
        whole: Span | None = getattr(value, "span", None)
        fields = getattr(value, "fields", None)
        if not isinstance(fields, (list, tuple)) or not 0 <= k < len(fields):
            return whole
        if whole is not None and whole.line == whole.end_line:
            found = _element_of(whole, k)
            if found is not None:
                return found
        return whole  # a field's own span is where its value was defined, not this use

    def tensor(self, name: str, known_shape: bool = True) -> TensorSInfo:
        """The tensor struct info of a parameter; an error when it is not a tensor."""
        s = self.sinfo.get(name)
        if not isinstance(s, TensorSInfo):
            self.error(f"argument '{name}' must be a tensor, got {sinfo_text(s)}")  # type: ignore[arg-type]
        if known_shape and s.shape is None:
            self.error(f"argument '{name}' needs a known shape, got {sinfo_text(s)}")
        return s

    def sparse(self, name: str) -> SparseTensorSInfo:
        """The sparse tensor struct info of a parameter; an error when it is not one."""
        s = self.sinfo.get(name)
        if not isinstance(s, SparseTensorSInfo):
            self.error(f"argument '{name}' must be a sparse tensor (R.SparseTensor), got "
                       f"{sinfo_text(s)}")  # type: ignore[arg-type]
        return s

    def tensors(self, name: str) -> list[TensorSInfo]:
        """The struct info of a tuple-of-tensors parameter."""
        fields = self.sinfo.get(name)
        if not isinstance(fields, tuple):
            self.error(f"argument '{name}' must be a tuple of tensors")
        out = []
        for k, f in enumerate(fields):
            if not isinstance(f, TensorSInfo) or f.shape is None:
                self.error(f"element {k} of '{name}' must be a tensor of known shape, "
                           f"got {sinfo_text(f)}")
            out.append(f)
        return out

    def axis(self, value: int, ndim: int, what: str = "axis") -> int:
        """A possibly negative axis as 0..ndim-1; an error when out of range."""
        a = normalize_axis(value, ndim)
        if a is None:
            self.error(f"{what} {value} is out of range for a tensor of rank {ndim}")
        return a

    def axes(self, values: tuple[int, ...] | None, ndim: int, what: str = "axis") -> list[int]:
        """Distinct normalized axes, sorted; None means every axis."""
        if values is None:
            return list(range(ndim))
        out = sorted({self.axis(v, ndim, what) for v in values})
        if len(out) != len(values):
            self.error(f"repeated {what} in {tuple(values)}")
        return out

    def same_dtype(self, *names: str) -> DType | None:
        """The common dtype of tensor parameters; an error when they differ."""
        dts = [self.tensor(n, known_shape=False).dtype for n in names]
        known = [d for d in dts if d is not None]
        if any(d != known[0] for d in known):
            listed = " and ".join(str(d) for d in known)
            self.error(f"dtype mismatch: {listed}")
        return known[0] if known else None

    def float_dtype(self, name: str) -> DType | None:
        s = self.tensor(name, known_shape=False)
        if s.dtype is not None and not s.dtype.is_float:
            self.error(f"needs a floating-point tensor, got {s.dtype}")
        return s.dtype

    def rank(self, name: str) -> int:
        return ndim_of(self.tensor(name, known_shape=False))


# ---- binding calls ----------------------------------------------------------------------


def bind_call(op: OpDef, call: GCall) -> tuple[dict[str, Any], set[str]]:
    """Parameter name -> argument (graph expression or Python value), and which were given."""
    err = _raiser(op, call)
    if len(call.args) > len(op.params):
        err(f"takes at most {len(op.params)} arguments, got {len(call.args)}")
    raw: dict[str, Any] = {}
    for p, a in zip(op.params, call.args):
        raw[p.name] = a
    names = {p.name for p in op.params}
    for k, v in call.attrs.items():
        if k not in names:
            err(f"unexpected keyword argument '{k}'")
        if k in raw:
            err(f"argument '{k}' given twice")
        raw[k] = v
    values: dict[str, Any] = {}
    for p in op.params:
        if p.name not in raw:
            if p.default is REQUIRED:
                err(f"missing argument '{p.name}'")
            values[p.name] = p.default
            continue
        values[p.name] = _convert(p, raw[p.name], err)
    return values, set(raw)


def _raiser(op: OpDef, call: GCall) -> Callable[[str], NoReturn]:
    def err(message: str) -> NoReturn:
        raise CompileError(f"R.{op.name}: {message}", call.span)

    return err


def _convert(p: Param, v: Any, err: Callable[[str], NoReturn]) -> Any:
    if p.is_graph:
        if p.kind == "shape" and isinstance(v, (tuple, list)):
            return ShapeExpr(tuple(_prim(x, err, p.name) for x in v))
        if p.kind == "tensors" and isinstance(v, (tuple, list)):
            return Tuple(tuple(v))
        if p.kind == "callee" and isinstance(v, (str, StringValue)):
            return ExternFunc(v if isinstance(v, str) else v.value)
        if not isinstance(v, GraphExpr):
            err(f"argument '{p.name}' must be a graph value")
        return v
    if v is None and p.default is None:
        return None
    if p.kind == "sinfo":
        items = tuple(v) if isinstance(v, (tuple, list)) else (v,)
        if not all(isinstance(x, StructInfo) for x in items):
            err(f"argument '{p.name}' must be struct info such as R.Tensor((n, 4), \"float32\")")
        return items
    try:
        return _ATTR[p.kind](v)
    except (_NotConvertible, DTypeError):
        kinds = {"int": "an integer", "ints": "an integer or a tuple of integers",
                 "int_exprs": "a tuple of integers or integer expressions",
                 "index_map": "a lambda, such as lambda i, j: (i // 4, j, i % 4)",
                 "int_or_ints": "an integer or a tuple of integers", "bool": "a bool",
                 "float": "a number", "floats": "a number or a tuple of numbers",
                 "number": "a number",
                 "number_or_expr": "a number or an integer expression (R.prim_value(n))",
                 "dtype": "a dtype", "str": "a string"}
        err(f"argument '{p.name}' must be {kinds[p.kind]}")


def _prim(x: Any, err: Callable[[str], NoReturn], name: str) -> PrimExpr:
    from tirc.ir.ops.sinfo_util import dim

    if isinstance(x, PrimValue):
        x = x.value
    if isinstance(x, (int, PrimExpr)) and not isinstance(x, bool):
        return dim(x)
    err(f"argument '{name}' must be a shape")


def _to_int(v: Any) -> int:
    if isinstance(v, PrimValue):
        v = v.value
    if isinstance(v, Constant) and isinstance(v.value, int) and not isinstance(v.value, bool):
        return v.value
    if isinstance(v, IntImm) and not v.dtype.is_bool:
        return v.value
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    raise _NotConvertible


def _to_ints(v: Any) -> tuple[int, ...]:
    if isinstance(v, (tuple, list)):
        return tuple(_to_int(x) for x in v)
    if isinstance(v, ShapeExpr):
        return tuple(_to_int(x) for x in v.values)
    if isinstance(v, Tuple):
        return tuple(_to_int(x) for x in v.fields)
    return (_to_int(v),)


def _to_int_exprs(v: Any) -> tuple[int | PrimExpr, ...]:
    """Integers, or symbolic integer expressions (`R.prim_value(n)`, a size `n`) where
    the operator takes them (strided_slice's begin and end)."""
    items = v.fields if isinstance(v, Tuple) else v.values if isinstance(v, ShapeExpr) \
        else v if isinstance(v, (tuple, list)) else (v,)
    out: list[int | PrimExpr] = []
    for x in items:
        try:
            out.append(_to_int(x))
        except _NotConvertible:
            x = x.value if isinstance(x, PrimValue) else x
            if not isinstance(x, PrimExpr) or not x.dtype.is_int or x.dtype.lanes != 1:
                raise
            out.append(x)
    return tuple(out)


def _to_index_map(v: Any) -> Any:
    """An index map, `lambda i, j: (...)` (R.layout_transform's)."""
    if not isinstance(v, SchedLambda):
        raise _NotConvertible
    return v


def _to_int_or_ints(v: Any) -> int | tuple[int, ...]:
    try:
        return _to_int(v)
    except _NotConvertible:
        return _to_ints(v)


def _to_bool(v: Any) -> bool:
    if isinstance(v, PrimValue):
        v = v.value
    if isinstance(v, Constant):
        v = v.value
    if isinstance(v, IntImm):
        return bool(v.value)
    if isinstance(v, (bool, int)):
        return bool(v)
    raise _NotConvertible


def _to_float(v: Any) -> float:
    if isinstance(v, PrimValue):
        v = v.value
    if isinstance(v, Constant):
        v = v.value
    if isinstance(v, (IntImm, FloatImm)):
        return float(v.value)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    raise _NotConvertible


def _to_number(v: Any) -> int | float:
    """A number that stays an int when written as one (`R.arange`'s bounds pick its dtype)."""
    if isinstance(v, PrimValue):
        v = v.value
    if isinstance(v, Constant):
        v = v.value
    if isinstance(v, IntImm) and not v.dtype.is_bool:
        return v.value
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    return _to_float(v)


def _to_number_or_expr(v: Any) -> int | float | PrimExpr:
    """A number, or a symbolic integer expression (`R.prim_value(n)`, R.arange's bounds)."""
    try:
        return _to_number(v)
    except _NotConvertible:
        x = v.value if isinstance(v, PrimValue) else v
        if not isinstance(x, PrimExpr) or not x.dtype.is_int or x.dtype.lanes != 1:
            raise
        return x


def _to_floats(v: Any) -> tuple[float, ...]:
    if isinstance(v, (tuple, list)):
        return tuple(_to_float(x) for x in v)
    if isinstance(v, Tuple):
        return tuple(_to_float(x) for x in v.fields)
    return (_to_float(v),)


def _to_str(v: Any) -> str:
    if isinstance(v, (StringValue, StringImm)):
        return v.value
    if isinstance(v, (str, DType)):
        return str(v)
    raise _NotConvertible


_ATTR: dict[str, Callable[[Any], Any]] = {
    "int": _to_int, "ints": _to_ints, "int_exprs": _to_int_exprs, "index_map": _to_index_map,
    "int_or_ints": _to_int_or_ints, "bool": _to_bool,
    "float": _to_float, "floats": _to_floats, "number": _to_number,
    "number_or_expr": _to_number_or_expr, "dtype": lambda v: dtype(_to_str(v)),
    "str": _to_str,
}


def canonical_call(op: OpDef, call: GCall, values: dict[str, Any], given: set[str]) -> GCall:
    """The call with graph parameters positional and given attributes as Python keywords."""
    args = tuple(values[p.name] for p in op.params if p.is_graph and p.name in given)
    attrs = {p.name: values[p.name] for p in op.params
             if not p.is_graph and p.kind != "sinfo" and p.name in given}
    sinfo_args = call.sinfo_args
    for p in op.params:
        if p.kind == "sinfo" and p.name in given:
            sinfo_args = values[p.name]
    new = GCall(call.op, args, attrs, sinfo_args, span=call.span)
    same = new.args == call.args and new.attrs == call.attrs and new.sinfo_args == sinfo_args \
        and sinfo_args == call.sinfo_args
    return call if same else new


def bound_call(call: GCall, sinfo_of: Callable[[GraphExpr], StructInfo],
               module: Any = None) -> OpCall:
    """The call matched to its operator's parameters; a CompileError for a bad call."""
    op = get_op(call.op)
    if op is None:
        raise CompileError(unknown_operator(call.op), call.span)
    values, given = bind_call(op, call)
    sinfo: dict[str, StructInfo | tuple[StructInfo, ...]] = {}
    for p in op.params:
        v = values[p.name]
        if not p.is_graph or v is None:
            continue
        if p.kind == "tensors" and isinstance(v, Tuple):
            sinfo[p.name] = tuple(sinfo_of(f) for f in v.fields)
        elif p.kind == "tensors":
            s = sinfo_of(v)
            sinfo[p.name] = tuple(s.fields) if isinstance(s, TupleSInfo) else s
        else:
            sinfo[p.name] = sinfo_of(v)
    return OpCall(op, call, values, sinfo, given, module)


def infer_call(call: GCall, sinfo_of: Callable[[GraphExpr], StructInfo],
               module: Any = None) -> tuple[GCall, StructInfo]:
    """The call in canonical form and its struct info; a CompileError for a bad call."""
    bound = bound_call(call, sinfo_of, module)
    out = bound.op.infer(bound)
    if not call.op.startswith("dist."):  # only the placement operators give placements
        from tirc.ir.dist.dtensor import plain

        out = plain(out)  # type: ignore[assignment]
    return canonical_call(bound.op, call, bound.values, bound.given), out


def _element_of(tup: Span, k: int) -> Span | None:
    """The span of element `k` of a one-line tuple written `(a, b, ...)` at `tup`."""
    line = SourceMap.line(tup.file, tup.line)
    if line is None:
        return None
    text = line[tup.col - 1:tup.end_col - 1]
    if not (text.startswith("(") and text.endswith(")")):
        return None
    depth, start, index = 0, 1, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if (ch == "," and depth == 1) or (depth == 0 and i == len(text) - 1):
            if index == k:
                piece = text[start:i]
                lead = len(piece) - len(piece.lstrip())
                col = tup.col + start + lead
                return Span(tup.file, tup.line, col, tup.line, col + len(piece.strip()))
            index, start = index + 1, i + 1
    return None
