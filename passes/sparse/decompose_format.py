"""The `decompose_format` schedule primitive: a CSR operand read in a reduction becomes ELL
buckets of fixed widths (SparseTIR's hyb(1, k) with one column partition; "ell" is one bucket).

    sp = sch.get_sparse_iteration("spmm")
    sch.decompose_format(sp, "hyb", buckets="auto")     # widths 1, 2, 4, ..., 32
    sch.decompose_format(sp, "ell", width=8)

The iteration `[I, J, ...]` over a CSR buffer A(I, J) becomes an iteration of the init over the
spatial variables, then one iteration per bucket b over `[I_b, J_b, ...]`, where
`I_b = T.dense_fixed(n_b)`, `J_b = T.sparse_fixed(I_b, (n, w_b), cols_b)`, A is read as
`A_b[i_b, j_b]` and every other use of the row is `R_b[i_b]` (the bucket's row map). The
function gains each bucket's arrays and size as parameters and keeps the CSR ones; the
conversion routine (bucket_plan.py) is generated from the source axis and the widths into two
new functions of the module, and the runtime calls them when the function is called with the
CSR matrix (`tirc.sparse_plan` attribute). Which widths are populated follows the row-length
histogram at plan time ("auto"). Rows longer than the last width are cut into chunks of the
last bucket, which then holds a row more than once: parallelise that bucket over another axis.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.attrs import SPARSE_PLAN
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, DType
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var, const
from tirc.ir.sparse import Axis, AxisKind, SparseBuffer, SparseIteration, SpIterVar
from tirc.ir.stmt import IterKind, Stmt, seq
from tirc.ir.visitor import Mutator, any_node, substitute
from tirc.passes.schedule.sparse import _iteration
from tirc.passes.schedule.state import ScheduleError, ScheduleState
from tirc.passes.sparse.bucket_plan import plan_counts, plan_fill

I32 = DType("int", 32)
AUTO_WIDTHS = (1, 2, 4, 8, 16, 32)


def _widths(fmt: Any, width: Any, buckets: Any) -> tuple[int, ...]:
    if fmt == "ell":
        if not isinstance(width, int) or width < 1:
            raise ScheduleError("decompose_format: \"ell\" needs width=<positive int>")
        return (width,)
    if fmt == "hyb":
        if buckets == "auto" or buckets is None:
            return AUTO_WIDTHS
        if isinstance(buckets, (list, tuple)) and buckets and all(
                isinstance(w, int) and w > 0 for w in buckets) and \
                list(buckets) == sorted(set(buckets)):
            return tuple(buckets)
        raise ScheduleError("decompose_format: buckets is \"auto\" or increasing positive "
                            "widths, such as (1, 2, 4, 8)")
    raise ScheduleError(f"decompose_format: unsupported format {fmt!r} (\"hyb\" or \"ell\"; "
                        "block-sparse operands are written over BSR axes directly)")


def decompose_format(s: ScheduleState, sp: Any, fmt: Any, width: Any = None,
                     buckets: Any = None) -> None:
    it = _iteration(s, sp, "decompose_format")
    widths = _widths(fmt, width, buckets)
    ivs = it.sp_iter_vars
    found = [(k, iv) for k, iv in enumerate(ivs) if iv.axis.kind == AxisKind.SPARSE_VARIABLE]
    if len(found) != 1 or it.fused:
        raise ScheduleError("decompose_format: the iteration must have one CSR axis and no "
                            "fused variables")
    kj, vj = found[0]
    if vj.kind != IterKind.REDUCE:
        raise ScheduleError("decompose_format: the CSR axis must be a reduction (an input "
                            "operand, as in SpMM)")
    ki = next((k for k, iv in enumerate(ivs) if iv.axis is vj.axis.parent), None)
    if ki is None or ivs[ki].axis.parent is not None:
        raise ScheduleError("decompose_format: the CSR axis's dense parent must be iterated")
    row_axis, col_axis = ivs[ki].axis, vj.axis
    operand = _operand(it, row_axis, col_axis)
    func = s.func
    handle_of = {b: p for p, b in func.buffer_map.items()}
    if operand not in handle_of:
        raise ScheduleError("decompose_format: the CSR operand must be a parameter")
    params = list(func.params)
    bmap = dict(func.buffer_map)
    sizes: list[Var] = []
    stmts: list[Stmt] = []
    names: dict[str, list[str]] = {"rows": [], "cols": [], "vals": [], "sizes": []}
    if it.init is not None:
        spatial = [iv for iv in ivs if iv.kind == IterKind.SPATIAL]
        stmts.append(SparseIteration(f"{it.name}_init", tuple(spatial), it.init))
    base = handle_of[operand].name
    for b, w in enumerate(widths):
        n_b = Var(f"{base}_n{b}", I32)
        sizes.append(n_b)
        rows_h, cols_h, vals_h = (Var(f"{base}_{what}{b}", HANDLE)
                                  for what in ("rows", "cols", "vals"))
        cols = Buffer(name=f"J{b}_indices", shape=(IntImm(w, I32) * n_b,), dtype=col_axis.idtype,
                      data=Var(f"J{b}_indices", HANDLE))
        ib = Axis(f"I{b}", AxisKind.DENSE_FIXED, n_b, idtype=row_axis.idtype)
        jb = Axis(f"J{b}", AxisKind.SPARSE_FIXED, col_axis.length, ib, const(w, I32),
                  indices=cols, idtype=col_axis.idtype)
        vals = SparseBuffer(name=f"{operand.name}{b}", shape=(n_b, col_axis.length),
                            dtype=operand.dtype, data=Var(f"{operand.name}{b}", HANDLE),
                            axes=(ib, jb))
        rows = SparseBuffer(name=f"R{b}", shape=(n_b,), dtype=I32, data=Var(f"R{b}", HANDLE),
                            axes=(ib,))
        params += [rows_h, cols_h, vals_h]
        bmap.update({rows_h: rows, cols_h: cols, vals_h: vals})
        for key, h in (("rows", rows_h), ("cols", cols_h), ("vals", vals_h)):
            names[key].append(h.name)
        names["sizes"].append(n_b.name)
        stmts.append(_bucket(it, b, ki, kj, ib, jb, operand, vals, rows))
    params += sizes
    new_body = seq(*stmts)
    state_func = func.replace(params=tuple(params), buffer_map=bmap)
    s.func = state_func  # type: ignore[assignment]
    _replace_with(s, it, new_body)
    attrs = dict(s.func.attrs)
    attrs[SPARSE_PLAN] = {"tensor": base, "widths": list(widths),
                        "counts": f"{func.name}_plan_counts", "fill": f"{func.name}_plan_fill",
                        **names}
    s.func = s.func.replace(attrs=attrs)  # type: ignore[assignment]
    s.new_functions[f"{func.name}_plan_counts"] = plan_counts(func.name, widths)
    s.new_functions[f"{func.name}_plan_fill"] = plan_fill(func.name, widths, operand.dtype)


def _operand(it: SparseIteration, row: Axis, col: Axis) -> SparseBuffer:
    found: list[SparseBuffer] = []

    def is_read(n: Any) -> bool:
        if isinstance(n, BufferLoad) and isinstance(n.buffer, SparseBuffer) \
                and n.buffer.axes == (row, col) and n.buffer not in found:
            found.append(n.buffer)
        return False

    any_node(it.body, is_read)
    if len(found) != 1:
        raise ScheduleError("decompose_format: expected one buffer read over the CSR axes, "
                            f"found {len(found)}")
    return found[0]


def _bucket(it: SparseIteration, b: int, ki: int, kj: int, ib: Axis, jb: Axis,
            operand: SparseBuffer, vals: SparseBuffer, rows: SparseBuffer) -> SparseIteration:
    ivs = []
    mapping: dict[Var, PrimExpr] = {}
    for k, iv in enumerate(it.sp_iter_vars):
        axis = ib if k == ki else jb if k == kj else iv.axis
        var = Var(f"{iv.var.name}{b}", iv.var.dtype)
        ivs.append(SpIterVar(var, axis, iv.kind))
        mapping[iv.var] = var
    vi, vj = ivs[ki].var, ivs[kj].var
    old_i, old_j = it.sp_iter_vars[ki].var, it.sp_iter_vars[kj].var

    class _Reads(Mutator):
        def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
            if e.buffer is operand and len(e.indices) == 2 and e.indices[0] is old_i \
                    and e.indices[1] is old_j:
                return BufferLoad(vals, (vi, vj), e.dtype, span=e.span)
            return self.generic_visit(e)

    body = _Reads().visit(it.body)
    mapping[old_i] = BufferLoad(rows, (vi,), I32)
    body = substitute(body, mapping)
    return SparseIteration(f"{it.name}_b{b}", tuple(ivs), body)


def _replace_with(s: ScheduleState, old: SparseIteration, new: Stmt) -> None:
    class _Swap(Mutator):
        def visit_SparseIteration(self, x: SparseIteration) -> Stmt:
            return new if x is old else x

    s.set_body(_Swap().visit(s.body))


