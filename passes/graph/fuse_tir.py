"""fuse-tir: each fused graph function (fuse-ops' `Primitive` groups) becomes one loop function.

The group's parameters and results become the loop function's buffers, the values passed
between its calls become buffers allocated in the root block, and each callee's blocks are
copied in order with its buffers and symbolic sizes rebound (fresh loop and block variables,
block names made unique). Calls of the group become `R.call_tir` of the new function, which
takes the group's name; the graph function is removed. A tuple parameter (nested tuples too)
becomes one buffer per tensor field, and its call passes the fields, projected out of the
tuple argument by bindings placed before the call.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir.attrs import OP_PATTERN, PRIMITIVE
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import BufferLoad, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.graph import (
    Constant,
    Function,
    GCall,
    GlobalVar,
    GraphExpr,
    GVar,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StructInfo,
    TensorSInfo,
    Tuple,
    TupleGetItem,
    TupleSInfo,
    VarBinding,
    with_branches,
)
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.ops.calls import shape_var_bindings
from tirc.ir.ops.sinfo_util import dim
from tirc.ir.rebind import fresh_copy
from tirc.ir.stmt import BlockRealize
from tirc.ir.visitor import substitute
from tirc.passes.graph.annotate_op_pattern import analyze
from tirc.passes.graph.kernel import Kernel, constant_at
from tirc.passes.pass_base import Pass, PassContext
from tirc.passes.schedule.tree import BlockNames


@dataclass(frozen=True)
class FuseTIR(Pass):
    """Fused graph functions -> one loop function each.

    Not optional, and in the pipeline at every -O level: lower-graph needs the groups merged,
    whether fuse-ops made them or the module wrote them itself (without any, this pass returns
    the module as it is)."""

    name = "fuse-tir"
    description = "merge each fused group's loop functions into one loop function"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        groups = {n: f for n, f in mod.graph_funcs().items() if f.attrs.get(PRIMITIVE)}
        if not groups:
            return mod
        fused: dict[str, tuple[PrimFunc, list[PrimExpr]]] = {}
        out = mod
        for name, g in groups.items():
            fused[name] = fuse_group(g, mod)
            out = out.without_function(name)
        for name, f in list(out.graph_funcs().items()):
            new = _replace_calls(f, groups, fused)
            if new is not f:
                out = out.with_function(name, new)
        for name, (prim, _) in fused.items():
            out = out.with_function(name, prim)
        return out


def fuse_group(group: Function, mod: IRModule) -> tuple[PrimFunc, list[PrimExpr]]:
    """The loop function of a fused group, and its scalar size arguments (group-level).

    Each variable of the group stands for a list of buffers: a tensor for one, a tuple for its
    fields. Projections and tuples only rename buffers; a kernel output that a result names is
    written to the result's buffer directly, other results get a copy."""
    kernel = Kernel(group.name)
    block = group.body.blocks[0]
    results = _results(group)
    values: dict[GVar, list[Buffer]] = {}
    for p in group.params:
        fields = tensor_fields(p.struct_info)
        values[p] = [kernel.input(p.name if isinstance(p.struct_info, TensorSInfo)
                                  else f"{p.name}_{k}", p, f) for k, f in enumerate(fields)]
    out_of = {r: kernel.output(r.name, r.struct_info) for r in results}  # type: ignore[arg-type]
    target = _result_slots(block.bindings, results)
    names: set[str] = set()
    for b in block.bindings:
        value = b.value
        if isinstance(value, TupleGetItem):
            assert isinstance(value.tuple_value, GVar)
            whole = value.tuple_value.struct_info
            assert isinstance(whole, TupleSInfo)
            start = sum(len(tensor_fields(f)) for f in whole.fields[:value.index])
            count = len(tensor_fields(whole.fields[value.index]))
            values[b.var] = values[value.tuple_value][start:start + count]
            continue
        if isinstance(value, Tuple):
            values[b.var] = [buf for f in value.fields for buf in values[f]]  # type: ignore[index]
            continue
        assert isinstance(value, GCall) and isinstance(value.args[0], GlobalVar)
        sinfo = b.var.struct_info
        fields = sinfo.fields if isinstance(sinfo, TupleSInfo) else (sinfo,)
        call_args = value.args[1].fields if isinstance(value.args[1], Tuple) else ()
        prims = [a.value for a in call_args if isinstance(a, PrimValue)]  # scalar arguments
        ins = [_constant_buffer(kernel, a) if isinstance(a, Constant) else values[a][0]
               for a in call_args if not isinstance(a, PrimValue)]  # type: ignore[index]
        if prims and (value.op == "call_tir_inplace" or
                      any(not p.dtype.is_int for p in prims)):
            raise CompileError(f"unsupported: fuse-tir: {group.name}: an in-place call or a "
                               "non-integer R.prim_value argument inside a fused function",
                               value.span)
        outs, fresh = [], []
        for k, f in enumerate(fields):
            assert isinstance(f, TensorSInfo) and f.shape is not None and f.dtype is not None
            into = _inplace_index(value, k)
            if into is not None:  # R.call_tir_inplace: the result is that argument, written
                outs.append(ins[into])  # by the callee in place
                continue
            r = target.get((b.var, k))
            fresh.append(out_of[r] if r is not None else
                         kernel.temp(f"{b.var.name}_{k}" if len(fields) > 1 else b.var.name,
                                     kernel.dims(f.shape), f.dtype))
            outs.append(fresh[-1])
        values[b.var] = outs
        _inline_call(kernel, value, ins + fresh, mod, names, prims)
    for r in results:
        if values[r][0] is not out_of[r]:
            src = values[r][0]
            kernel.compute(f"{r.name}_copy", out_of[r],
                           lambda i, src=src: BufferLoad(src, tuple(i), src.dtype))
    kernel.outputs = [out_of[r] for r in results]
    prim, tir_vars = kernel.build()
    attrs = {**prim.attrs, OP_PATTERN: int(analyze(prim))}
    return dataclasses.replace(prim, attrs=attrs), tir_vars


def tensor_fields(sinfo: StructInfo | None) -> list[TensorSInfo]:
    """The tensors of a group parameter's type, tuples flattened in order."""
    if isinstance(sinfo, TupleSInfo):
        return [t for f in sinfo.fields for t in tensor_fields(f)]
    assert isinstance(sinfo, TensorSInfo)
    return [sinfo]


def _result_slots(bindings: tuple[Any, ...], results: list[GVar]
                  ) -> dict[tuple[GVar, int], GVar]:
    """(kernel call variable, output index) -> the group result that names it (the first, when
    several do); a result that names no kernel output (a parameter) is left out."""
    source: dict[GVar, tuple[GVar, int]] = {}
    parts: dict[GVar, list[tuple[GVar, int] | None]] = {}
    for b in bindings:
        value = b.value
        if isinstance(value, TupleGetItem):
            whole = parts.get(value.tuple_value)  # type: ignore[arg-type]
            slot = whole[value.index] if whole is not None else None
            if slot is not None:
                source[b.var] = slot
        elif isinstance(value, Tuple):
            parts[b.var] = [source.get(f) for f in value.fields]  # type: ignore[arg-type]
        elif isinstance(b.var.struct_info, TupleSInfo):
            parts[b.var] = [(b.var, k) for k in range(len(b.var.struct_info.fields))]
        else:
            source[b.var] = (b.var, 0)
    slots: dict[tuple[GVar, int], GVar] = {}
    for r in results:
        if r in source and source[r] not in slots:
            slots[source[r]] = r
    return slots


def _constant_buffer(kernel: Kernel, c: Constant) -> Buffer:
    """A buffer holding a constant argument of a call (`R.take(x, R.const(0, "int64"))`, or a
    tensor constant), stored before the callee's blocks read it."""
    name = f"{kernel.name}_const{len(kernel.temps)}"
    buf = kernel.temp(name, tuple(dim(n) for n in c.shape), c.dtype)
    kernel.compute(buf.name, buf, lambda i: constant_at(c, i))
    return buf


def _inplace_index(call: GCall, k: int) -> int | None:
    """The index of the argument that output `k` of an `R.call_tir_inplace` is (None: a new
    tensor, the callee's next output parameter)."""
    if call.op != "call_tir_inplace":
        return None
    index = call.attrs.get("inplace_indices", ())[k]
    return index if index >= 0 else None


def _inline_call(kernel: Kernel, call: GCall, actual: list[Buffer], mod: IRModule,
                 names: set[str], prims: list[PrimExpr] | None = None) -> None:
    """The callee's blocks copied into the kernel, bound to the actual buffers (its
    arguments', then those of its output parameters: the results an in-place call writes
    into its arguments have none) and scalars (its `R.prim_value` arguments, then the
    `tir_vars`, in order, as R.call_tir fills them)."""
    callee = mod.functions[call.args[0].name]  # type: ignore[union-attr]
    assert isinstance(callee, PrimFunc)
    scalars = [p for p in callee.params if p not in callee.buffer_map]
    tir_vars: list[PrimExpr] = list(kernel.dims(tuple(prims))) if prims else []
    if len(call.args) > 2 and isinstance(call.args[2], ShapeExpr):
        tir_vars += list(kernel.dims(call.args[2].values))
    mapping: dict[Any, Any] = dict(zip(callee.buffers, actual))
    mapping.update(shape_var_bindings(callee.buffers, [a.shape for a in actual],
                                      dict(zip(scalars, tir_vars))))
    root = fresh_copy(callee.body, mapping)
    root = BlockNames(names).visit(root)
    if isinstance(root, BlockRealize) and root.block.name.startswith("root"):
        kernel.temps.extend(root.block.alloc_buffers)
        kernel.stages.append(root.block.body)
    else:
        kernel.stages.append(root)


def _results(group: Function) -> list[GVar]:
    body = group.body.body
    items = body.fields if isinstance(body, Tuple) else (body,)
    return [v for v in items if isinstance(v, GVar)]


def _replace_calls(func: Function, groups: dict[str, Function],
                   fused: dict[str, tuple[PrimFunc, list[PrimExpr]]]) -> Function:
    body = _replace_in(func.body, groups, fused, {})
    return func if body is func.body else dataclasses.replace(func, body=body)


def _replace_in(seq: SeqExpr, groups: dict[str, Function],
                fused: dict[str, tuple[PrimFunc, list[PrimExpr]]],
                tuples: dict[GVar, Tuple]) -> SeqExpr:
    """`seq` with each call of a fused group replaced by a call_tir of its kernel (inside the
    branches of an `if` too); `tuples` collects the variables bound to a tuple of values."""
    blocks = []
    changed = False
    for block in seq.blocks:
        bindings = []
        for b in block.bindings:
            new = with_branches(b, lambda s: _replace_in(s, groups, fused, tuples))
            changed |= new is not b
            b = new
            if isinstance(b, VarBinding) and isinstance(b.value, GCall) and b.value.op in fused:
                group = groups[b.value.op]
                args: list[GraphExpr] = []
                for p, a in zip(group.params, b.value.args):
                    args.extend(_flat_arg(a, p.struct_info, b.var, bindings, tuples))
                b = dataclasses.replace(b, value=_call_tir(b.value, tuple(args),
                                                           b.var.struct_info, group,
                                                           fused[b.value.op][1]))
                changed = True
            if isinstance(b, VarBinding):
                _note_tuple(b, tuples)
            bindings.append(b)
        blocks.append(dataclasses.replace(block, bindings=tuple(bindings)))
    if not changed:
        return seq
    return dataclasses.replace(seq, blocks=tuple(blocks))


def _note_tuple(b: VarBinding, tuples: dict[GVar, Tuple]) -> None:
    """Records a variable bound to a tuple of values (`t = (x, (y, z))`, `u = t[1]`, `v = u`),
    whose fields a call then passes as they are: lower-graph knows no projection of them."""
    value = b.value
    if isinstance(value, GVar):
        value = tuples.get(value)  # type: ignore[assignment]
    elif isinstance(value, TupleGetItem) and isinstance(value.tuple_value, GVar):
        whole = tuples.get(value.tuple_value)
        value = whole.fields[value.index] if whole is not None else None  # type: ignore[assignment]
        if isinstance(value, GVar):
            value = tuples.get(value)  # type: ignore[assignment]
    if isinstance(value, Tuple):
        tuples[b.var] = value


def _flat_arg(arg: GraphExpr, sinfo: StructInfo | None, var: GVar, bindings: list[Any],
              tuples: dict[GVar, Tuple]) -> list[GraphExpr]:
    """The tensors of a call argument, for a parameter of type `sinfo`: the argument itself
    for a tensor; for a tuple, its fields (those of a tuple of values as they are, others
    projected by new bindings appended to `bindings`)."""
    if not isinstance(sinfo, TupleSInfo):
        return [arg]
    if isinstance(arg, GVar) and arg in tuples:
        arg = tuples[arg]
    out: list[GraphExpr] = []
    whole = getattr(arg, "struct_info", None)
    for k, f in enumerate(sinfo.fields):
        if isinstance(arg, Tuple):
            field = arg.fields[k]
        else:
            fs = whole.fields[k] if isinstance(whole, TupleSInfo) else f
            field = GVar(f"{var.name}_arg{len(bindings)}", fs, var.is_dataflow, span=var.span)
            bindings.append(VarBinding(field, TupleGetItem(arg, k), span=var.span))
        out.extend(_flat_arg(field, f, var, bindings, tuples))
    return out


def _bind_dims(ps: StructInfo | None, a_s: StructInfo | None,
               values: dict[Var, PrimExpr]) -> None:
    """Each size variable of a parameter's type -> the argument's size there."""
    if isinstance(ps, TupleSInfo) and isinstance(a_s, TupleSInfo):
        for f, g in zip(ps.fields, a_s.fields):
            _bind_dims(f, g, values)
    elif isinstance(ps, TensorSInfo) and isinstance(a_s, TensorSInfo):
        for d, actual in zip(ps.shape or (), a_s.shape or ()):
            if isinstance(d, Var) and d not in values:
                values[d] = actual


def _call_tir(call: GCall, flat: tuple[GraphExpr, ...], sinfo: StructInfo | None,
              group: Function, tir_vars: list[PrimExpr]) -> GraphExpr:
    outs = sinfo.fields if isinstance(sinfo, TupleSInfo) else (sinfo,)
    args: tuple[GraphExpr, ...] = (GlobalVar(group.name), Tuple(flat))
    if tir_vars:
        values: dict[Var, PrimExpr] = {}
        for p, a in zip(group.params, call.args):
            _bind_dims(p.struct_info, getattr(a, "struct_info", None), values)
        args += (ShapeExpr(tuple(substitute(v, values) for v in tir_vars)),)
    return GCall("call_tir", args, {}, tuple(outs), span=call.span)  # type: ignore[arg-type]
