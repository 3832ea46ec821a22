"""Printing the sparse parts of a loop function in SparseTIR's spelling.

The printer asks `sparse_params` which parameters belong to sparse declarations (they print as
`T.handle` without a `T.match_buffer`), then `declare_sparse` prints the axes (parents first)
and the `T.match_sparse_buffer` lines; `iteration_head` prints the `with T.sp_iter(...)` line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.expr import Var
from tirc.ir.function import PrimFunc
from tirc.ir.sparse.axis import Axis, AxisKind, ancestors
from tirc.ir.sparse.buffer import SparseBuffer
from tirc.ir.sparse.iteration import SparseIteration
from tirc.ir.visitor import post_order_visit


def function_axes(f: PrimFunc) -> list[Axis]:
    """Every axis a function uses, parents before children, in order of first use."""
    found: list[Axis] = []

    def add(axis: Axis) -> None:
        for a in ancestors(axis):
            if a not in found:
                found.append(a)

    for buf in f.buffer_map.values():
        if isinstance(buf, SparseBuffer):
            for axis in buf.axes:
                add(axis)

    def visit(node: Any) -> None:
        if isinstance(node, SparseIteration):
            for iv in node.sp_iter_vars:
                add(iv.axis)
        elif isinstance(getattr(node, "buffer", None), SparseBuffer):
            for axis in node.buffer.axes:
                add(axis)

    post_order_visit(f.body, visit)
    return found


def axis_arrays(axes: list[Axis]) -> set[Buffer]:
    """The indptr/indices buffers the axes own."""
    return {b for a in axes for b in (a.indptr, a.indices) if b is not None}


def sparse_params(f: PrimFunc) -> set[Var]:
    """Handle parameters declared by sparse declarations rather than `T.match_buffer`."""
    arrays = axis_arrays(function_axes(f))
    return {p for p, b in f.buffer_map.items() if isinstance(b, SparseBuffer) or b in arrays}


def declare_sparse(f: PrimFunc, define: Callable[[Any, str], str], ref: Callable[[Any], str],
                   expr: Callable[[Any], str], emit: Callable[[str], None]) -> None:
    """Print the axes and sparse buffers of `f` (`define` names a definition, `ref` names an
    array or handle, `expr` prints an expression, `emit` writes one line)."""
    handle_of = {b: p for p, b in f.buffer_map.items()}
    for axis in function_axes(f):
        name = define(axis, axis.name)
        idt = f', "{axis.idtype}"' if axis.kind != AxisKind.DENSE_FIXED or \
            str(axis.idtype) != "int32" else ""

        def arr(b: Buffer | None) -> str:
            assert b is not None
            p = handle_of.get(b)
            return ref(p if p is not None else b)

        if axis.kind == AxisKind.DENSE_FIXED:
            emit(f"{name} = T.dense_fixed({expr(axis.length)}{idt})")
            continue
        assert axis.parent is not None and axis.nnz is not None
        head = f"{ref(axis.parent)}, ({expr(axis.length)}, {expr(axis.nnz)})"
        if axis.kind == AxisKind.SPARSE_VARIABLE:
            arrays = f"({arr(axis.indptr)}, {arr(axis.indices)})"
        elif axis.kind == AxisKind.DENSE_VARIABLE:
            arrays = arr(axis.indptr)
        else:
            arrays = arr(axis.indices)
        emit(f"{name} = T.{axis.kind.value}({head}, {arrays}{idt})")
    for p in f.params:
        buf = f.buffer_map.get(p)
        if isinstance(buf, SparseBuffer):
            name = define(buf, buf.name)
            axes = ", ".join(ref(a) for a in buf.axes)
            axes = f"({axes},)" if len(buf.axes) == 1 else f"({axes})"
            layout = f", layout={json.dumps(str(buf.layout))}" if buf.layout is not None else ""
            emit(f'{name} = T.match_sparse_buffer({ref(p)}, {axes}, "{buf.dtype}"{layout})')


def iteration_head(it: SparseIteration, ref: Callable[[Any], str], names: list[str]) -> str:
    """`with T.sp_iter([I, T.fuse(J, K)], "SRS", "name") as [i, j, k]:`."""
    items: list[str] = []
    k = 0
    ivs = it.sp_iter_vars
    while k < len(ivs):
        group = it.fused_group(k)
        if group is not None and group[0] == k:
            items.append(f"T.fuse({', '.join(ref(ivs[q].axis) for q in group)})")
            k = group[-1] + 1
            continue
        attach = ivs[k].attach
        items.append(f"T.attach({ref(ivs[k].axis)}, {ref(attach)})" if attach is not None
                     else ref(ivs[k].axis))
        k += 1
    return (f'with T.sp_iter([{", ".join(items)}], "{it.kinds}", "{it.name}") as '
            f'[{", ".join(names)}]:')
