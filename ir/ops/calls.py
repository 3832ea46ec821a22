"""Cross-level calls and shape values: `call_tir`, `call_dps_packed`, `shape_of`.

`R.call_tir(kernel, (args,), out_sinfo=...)` is checked against the loop function: the number
of tensors, their ranks and dtypes, and every buffer dimension that the arguments determine
(`n` binds from the first buffer that has it as a dimension, or from the trailing
`tir_vars` shape argument). An `R.Prim` argument (`R.prim_value(T.float32(1))`) fills a scalar
parameter (`b: T.float32`): the scalar arguments fill the function's scalar parameters in
order, then the `tir_vars` the rest (`call_scalars`), each of the parameter's dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.expr import PrimExpr, Var, binop, cast
from tirc.ir.function import PrimFunc
from tirc.ir.graph import (
    GlobalVar,
    PrimSInfo,
    ShapeExpr,
    ShapeSInfo,
    SparseTensorSInfo,
    StructInfo,
    TensorSInfo,
    TupleSInfo,
)
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import dim, dims_equal, ndim_of, shape_text, shape_vars, sinfo_text
from tirc.ir.sparse.signature import CallMismatch, tensor_slots
from tirc.ir.visitor import substitute


def bind_shape_vars(buffers: Sequence[Buffer], shapes: Sequence[Sequence[PrimExpr]],
                    known: dict[Var, PrimExpr] | None = None) -> dict[Var, PrimExpr]:
    """Values of a loop function's shape variables, from the shapes of the actual tensors.

    A variable that is a whole dimension of some buffer takes the actual dimension there.
    """
    values: dict[Var, PrimExpr] = dict(known or {})
    for buf, shape in zip(buffers, shapes):
        for d, actual in zip(buf.shape, shape):
            if isinstance(d, Var) and d not in values:
                values[d] = dim(actual)
    return values


def shape_var_bindings(buffers: Sequence[Buffer], shapes: Sequence[Sequence[PrimExpr]],
                       known: dict[Var, PrimExpr] | None = None) -> dict[Var, PrimExpr]:
    """`bind_shape_vars`'s values, each cast to its variable's dtype: what replaces a loop
    function's shape variables in its body (an int32 `n` bound to a graph's int64 `n`)."""
    return {v: cast(v.dtype, e) for v, e in bind_shape_vars(buffers, shapes, known).items()}


def shape_mismatches(buffers: Sequence[Buffer], shapes: Sequence[Sequence[PrimExpr]],
                     values: dict[Var, PrimExpr]) -> list[tuple[int, str]]:
    """(buffer index, message) for each buffer whose shape cannot be the actual one."""
    out = []
    for k, (buf, shape) in enumerate(zip(buffers, shapes)):
        if len(buf.shape) != len(shape):
            out.append((k, f"expected rank {len(buf.shape)}, got {shape_text(shape)}"))
            continue
        want = tuple(dim(substitute(d, values)) for d in buf.shape)
        unresolved = [v for v in shape_vars(want) if v in _params_of(buffers)]
        if unresolved:
            continue
        if not all(dims_equal(a, b) for a, b in zip(want, shape)):
            out.append((k, f"expected shape {shape_text(want)}, got {shape_text(shape)}"))
    return out


def _params_of(buffers: Sequence[Buffer]) -> set[Var]:
    return set(shape_vars(*[b.shape for b in buffers]))


def out_sinfos(oc: OpCall) -> list[StructInfo]:
    """The output struct info of a destination-passing call, one per output tensor."""
    out = oc.call.sinfo_args or oc.values.get("out_sinfo") or ()
    if isinstance(out, StructInfo):
        out = (out,)
    sinfos = list(out)
    if len(sinfos) == 1 and isinstance(sinfos[0], TupleSInfo):
        sinfos = list(sinfos[0].fields)
    if not sinfos:
        oc.error("needs out_sinfo")
    for s in sinfos:
        if not isinstance(s, TensorSInfo) or s.shape is None or s.dtype is None:
            oc.error("out_sinfo must give a tensor shape and dtype")
    return sinfos


def _result(oc: OpCall, sinfos: list[StructInfo]) -> StructInfo:
    out = oc.call.sinfo_args or oc.values.get("out_sinfo") or ()
    single = isinstance(out, TensorSInfo) or (len(out) == 1 and isinstance(out[0], TensorSInfo))
    return sinfos[0] if single else TupleSInfo(tuple(sinfos))


def _check_callee(oc: OpCall, args: list[TensorSInfo | SparseTensorSInfo | PrimSInfo],
                  outs: list[StructInfo]) -> None:
    """Check that `oc`'s callee is a loop function of the module and, where the module is
    known, that `args` and the fresh outputs `outs` match its parameters."""
    callee = oc.values["func"]
    if not isinstance(callee, GlobalVar):
        oc.error("the callee must be a loop function of the module (Module.name)")
    func = oc.module.functions.get(callee.name) if oc.module is not None else None
    if oc.module is not None and not isinstance(func, PrimFunc):
        oc.error(f"no loop function named '{callee.name}' in the module")
    if isinstance(func, PrimFunc):
        check_call_tir(oc, func, args, outs)


def _call_tir(oc: OpCall) -> StructInfo:
    outs = out_sinfos(oc)
    _check_callee(oc, _call_args(oc), outs)
    return _result(oc, outs)


def _call_tir_inplace(oc: OpCall) -> StructInfo:
    """TVM's R.call_tir_inplace: output k is argument `inplace_indices[k]` written in place
    (its shape and dtype), or a fresh output at -1; the loop function takes the arguments,
    then the fresh outputs."""
    outs = out_sinfos(oc)
    args = _call_args(oc)
    indices = oc.values["inplace_indices"]
    if len(indices) != len(outs):
        oc.error(f"{len(indices)} in-place indices for {len(outs)} outputs (one per output, "
                 "-1 for an output that is no argument)")
    seen: set[int] = set()
    for k, (i, out) in enumerate(zip(indices, outs)):
        if i == -1:
            continue
        if not -1 <= i < len(args):
            oc.error(f"in-place index {i} of output {k} is out of range: the call has "
                     f"{len(args)} arguments (an index is -1 or 0 to {len(args) - 1})")
        if i in seen:
            oc.error(f"in-place index {i} is used more than once (each argument is written "
                     "by one output)")
        seen.add(i)
        a, at = args[i], oc.element_span("args", i)
        if not isinstance(a, TensorSInfo):
            oc.error(f"in-place index {i}: argument {i} is not a dense tensor "
                     f"({sinfo_text(a)})", at)
        assert isinstance(out, TensorSInfo) and out.shape is not None and a.shape is not None
        same_shape = len(a.shape) == len(out.shape) and \
            all(dims_equal(dim(x), dim(y)) for x, y in zip(a.shape, out.shape))
        if a.dtype != out.dtype or not same_shape:
            oc.error(f"in-place index {i}: argument {i} ({sinfo_text(a)}) does not match "
                     f"output {k} ({sinfo_text(out)}) in shape and dtype", at)
    if not seen:
        oc.error("needs an in-place index other than -1 (with none, use R.call_tir)")
    fresh = [o for i, o in zip(indices, outs) if i == -1]
    _check_callee(oc, args, fresh)
    return _result(oc, outs)


def _call_args(oc: OpCall) -> list[TensorSInfo | SparseTensorSInfo | PrimSInfo]:
    """The struct info of a call's arguments: tensors of known shape, sparse tensors, or
    scalars (`R.Prim`) for the function's scalar parameters."""
    fields = oc.sinfo.get("args")
    if not isinstance(fields, tuple):
        oc.error("argument 'args' must be a tuple of tensors")
    out: list[TensorSInfo | SparseTensorSInfo | PrimSInfo] = []
    for k, f in enumerate(fields):
        if isinstance(f, (SparseTensorSInfo, PrimSInfo)) or (isinstance(f, TensorSInfo) and
                                                             f.shape is not None):
            out.append(f)
            continue
        oc.error(f"element {k} of 'args' must be a tensor of known shape or an R.Prim scalar, "
                 f"got {sinfo_text(f)}")
    return out


def call_scalars(func: PrimFunc, prims: Sequence[Any], tir_vars: Sequence[Any]
                 ) -> dict[Var, Any] | None:
    """The value of each scalar parameter of a call_tir's function: its `R.Prim` arguments
    fill the scalar parameters in order, then the `tir_vars` the rest (None when the counts
    differ)."""
    scalars = [p for p in func.params if p not in func.buffer_map]
    if len(scalars) != len(prims) + len(tir_vars):
        return None
    return dict(zip(scalars, [*prims, *tir_vars]))


def check_call_tir(oc: OpCall, func: PrimFunc,
                   args: Sequence[TensorSInfo | SparseTensorSInfo | PrimSInfo],
                   outs: list[StructInfo]) -> None:
    """Tensors, scalars, ranks, dtypes and shapes of a call_tir against the loop function."""
    places = [k for k, a in enumerate(args) if not isinstance(a, PrimSInfo)]
    inputs = [args[k] for k in places]
    prims = [(k, a) for k, a in enumerate(args) if isinstance(a, PrimSInfo)]
    known = _check_scalars(oc, func, prims)
    if any(isinstance(a, SparseTensorSInfo) for a in inputs):
        _check_sparse_call(oc, func, inputs, outs, known, len(prims))  # type: ignore[arg-type]
        return
    buffers = func.buffers
    scalars = [p for p in func.params if p not in func.buffer_map]
    tir_vars = tir_var_values(oc)
    tensors = list(inputs) + [s for s in outs if isinstance(s, TensorSInfo)]
    if len(buffers) != len(tensors) or len(scalars) != len(prims) + len(tir_vars):
        extra = f" and {len(scalars)} scalars" if scalars else ""
        given = [f"{len(inputs)} inputs"] + \
            ([f"{len(prims)} R.Prim arguments"] if prims else []) + [f"{len(outs)} outputs"] + \
            ([f"{len(tir_vars)} shape values"] if tir_vars else [])
        oc.error(f"{func.name} takes {len(buffers)} tensors{extra}, got "
                 f"{', '.join(given[:-1])} and {given[-1]}")
    names = [f"argument {k}" for k in places] + [f"output {k}" for k in range(len(outs))]
    spans = [oc.element_span("args", k) for k in places] + \
        [oc.element_span("out_sinfo", k) for k in range(len(outs))]
    for name, at, buf, t in zip(names, spans, buffers, tensors):
        if t.dtype is not None and t.dtype != buf.dtype:
            oc.error(f"{name} of {func.name} ({buf.name}): expected dtype {buf.dtype}, "
                     f"got {t.dtype}", at)
        if ndim_of(t) >= 0 and ndim_of(t) != len(buf.shape):
            oc.error(f"{name} of {func.name} ({buf.name}): expected rank {len(buf.shape)}, "
                     f"got {ndim_of(t)}", at)
    shapes = [t.shape for t in tensors]
    if any(s is None for s in shapes):
        return
    values = bind_shape_vars(buffers, shapes,  # type: ignore[arg-type]
                             {**known, **dict(zip(scalars[len(prims):], tir_vars))})
    for k, message in shape_mismatches(buffers, shapes, values):  # type: ignore[arg-type]
        oc.error(f"{names[k]} of {func.name} ({buffers[k].name}): {message}", spans[k])


def _check_scalars(oc: OpCall, func: PrimFunc, prims: Sequence[tuple[int, PrimSInfo]]
                   ) -> dict[Var, PrimExpr]:
    """Each `R.Prim` argument against the scalar parameter it fills (in order, before the
    `tir_vars`): a scalar parameter there, of the same dtype. Returns the known values."""
    scalars = [p for p in func.params if p not in func.buffer_map]
    known: dict[Var, PrimExpr] = {}
    for j, (k, a) in enumerate(prims):
        at = oc.element_span("args", k)
        if j >= len(scalars):
            oc.error(f"argument {k} of {func.name} is a scalar ({sinfo_text(a)}), but "
                     f"{func.name} has {len(scalars)} scalar parameters", at)
        p = scalars[j]
        if a.dtype != p.dtype:
            oc.error(f"argument {k} of {func.name} ({p.name}): expected R.Prim(\"{p.dtype}\"), "
                     f"got {sinfo_text(a)}", at)
        if isinstance(a.value, PrimExpr):
            known[p] = a.value
    return known


def _check_sparse_call(oc: OpCall, func: PrimFunc,
                       inputs: Sequence[TensorSInfo | SparseTensorSInfo],
                       outs: list[StructInfo], known: dict[Var, PrimExpr],
                       n_prims: int) -> None:
    """A call_tir with sparse tensor arguments (tirc.ir.sparse.signature.tensor_slots): each
    fills a CSR/BSR parameter of the same dtype, index dtype, block and sizes."""
    args = list(inputs) + [s for s in outs if isinstance(s, TensorSInfo)]
    names = [f"argument {k}" for k in range(len(inputs))] + \
        [f"output {k}" for k in range(len(outs))]
    try:
        slots = tensor_slots(func, [isinstance(a, SparseTensorSInfo) for a in args])
    except CallMismatch as exc:
        oc.error(str(exc))
    scalars = [p for p in func.params if p not in func.buffer_map][n_prims:]
    tir_vars = tir_var_values(oc)
    if len(scalars) != len(tir_vars):
        oc.error(f"{func.name} takes {len(scalars)} shape values, got {len(tir_vars)}")
    dense = [(n, func.buffer_map[h], a) for n, (h, sp), a in zip(names, slots, args)
             if sp is None]
    for name, buf, t in dense:
        assert isinstance(t, TensorSInfo)
        if t.dtype is not None and t.dtype != buf.dtype:
            oc.error(f"{name} of {func.name} ({buf.name}): expected dtype {buf.dtype}, "
                     f"got {t.dtype}")
        if ndim_of(t) != len(buf.shape):
            oc.error(f"{name} of {func.name} ({buf.name}): expected rank {len(buf.shape)}, "
                     f"got {ndim_of(t)}")
    shapes = [t.shape for _, _, t in dense]  # type: ignore[union-attr]
    values = bind_shape_vars([b for _, b, _ in dense], shapes,  # type: ignore[arg-type]
                             {**known, **dict(zip(scalars, tir_vars))})
    for k, message in shape_mismatches([b for _, b, _ in dense], shapes,  # type: ignore[arg-type]
                                       values):
        oc.error(f"{dense[k][0]} of {func.name} ({dense[k][1].name}): {message}")
    for name, (h, sp), a in zip(names, slots, args):
        if sp is None:
            continue
        assert isinstance(a, SparseTensorSInfo)
        what = f"{name} of {func.name} ({h.name})"
        if a.dtype != sp.dtype or a.index_dtype != sp.index_dtype:
            oc.error(f"{what}: expected a {sp.dtype} matrix with {sp.index_dtype} indices, got "
                     f"{sinfo_text(a)}")
        if a.format != sp.format:
            oc.error(f"{what}: expected a {sp.format.upper()} matrix, got {sinfo_text(a)}")
        block = [dim(b) for b in sp.block]
        given = [dim(b) for b in a.block]
        if any(not dims_equal(dim(substitute(b, values)), g) for b, g in zip(block, given)):
            oc.error(f"{what}: expected blocks of {shape_text(block)}, got {sinfo_text(a)}")
        want = (("rows", sp.rows, _blocks_of(a.shape[0], a.block_rows)),
                ("columns", sp.cols, _blocks_of(a.shape[1], a.block_cols)),
                ("nnz", sp.nnz, a.nnz))
        for label, expect, got in want:
            e = dim(substitute(expect, values))
            if not shape_vars([e]) or not set(shape_vars([e])) & set(scalars):
                if not dims_equal(e, dim(got)):
                    oc.error(f"{what}: {label} {shape_text([e])[1:-2]} of the function, "
                             f"{shape_text([dim(got)])[1:-2]} of the argument")


def _blocks_of(size: PrimExpr, block: int) -> PrimExpr:
    return size if block == 1 else binop("floordiv", dim(size), dim(block))


def tir_var_values(oc: OpCall) -> list[PrimExpr]:
    """The extra shape values passed to a call_tir's scalar parameters."""
    v: Any = oc.values.get("tir_vars")
    if v is None:
        return []
    if isinstance(v, ShapeExpr):
        return [dim(x) for x in v.values]
    s = oc.sinfo.get("tir_vars")
    if isinstance(s, ShapeSInfo) and s.values is not None:
        return [dim(x) for x in s.values]
    oc.error("tir_vars must be a shape of known values")


def _call_dps_packed(oc: OpCall) -> StructInfo:
    oc.tensors("args")
    return _result(oc, out_sinfos(oc))


def _print(oc: OpCall) -> StructInfo:
    """R.print(*values, format=""): a side effect; the result is the empty tuple."""
    return TupleSInfo(())


def _shape_of(oc: OpCall) -> StructInfo:
    s = oc.tensor("x", known_shape=False)
    return ShapeSInfo(s.shape, ndim_of(s))


register("call_tir", [Param("func", "callee"), Param("args", "tensors"),
                      Param("tir_vars", "shape", None), Param("out_sinfo", "sinfo", None)],
         _call_tir)
register("call_tir_inplace", [Param("func", "callee"), Param("args", "tensors"),
                              Param("tir_vars", "shape", None),
                              Param("inplace_indices", "ints"),
                              Param("in_place", "bool", False),  # passes/graph/inplace_calls
                              Param("out_sinfo", "sinfo", None)], _call_tir_inplace)
register("call_dps_packed", [Param("func", "callee"), Param("args", "tensors"),
                             Param("out_sinfo", "sinfo", None)], _call_dps_packed)
register("shape_of", [Param("x", "tensor")], _shape_of)
register("print", [Param("values", "tensors"), Param("format", "str", "")], _print)
