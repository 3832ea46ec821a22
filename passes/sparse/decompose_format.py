"""The `decompose_format` schedule primitive: an iteration over a CSR matrix becomes iterations
over other formats of the same matrix (SparseTIR's format decomposition).

    sp = sch.get_sparse_iteration("spmm")
    sch.decompose_format(sp, "hyb", buckets="auto", col_parts=2)   # hyb(2, 6): widths 1..32
    sch.decompose_format(sp, "ell", width=8)
    sch.decompose_format(sp, "bsr", block=(4, 4))

**hyb / ell.** The iteration `[I, J, ...]` over a CSR axis J becomes one iteration per column
partition p and bucket b over `[I_q, J_q, ...]` (q = p * buckets + b), where
`I_q = T.dense_fixed(n_q)`, `J_q = T.sparse_fixed(I_q, (n, w_b), cols_q)`, and every use of the
row is `R_q[i_q]` (the bucket's row map), of the column the coordinate `j_q`. When J is a
reduction (SpMM: the matrix is an operand) its values are copied into the buckets and read as
`A_q[i_q, j_q]`; the init runs first over the spatial variables. When J is spatial (SDDMM: the
matrix is the output's structure) each bucket iteration keeps the init and writes the output
at its coordinates, its init and body guarded by the bucket's mask `M_q[i_q, j_q]` (0 at
padding): a padded entry repeats a coordinate of its row, and writing it would update that
element twice (an output that adds into its own values would be wrong even serially) and make
two instances of a spatial (i_q, j_q) write one element, which the block model promises never
happens (the schedule primitives and the default schedule run them in parallel: a race).

**bsr.** For a reduction over J: `[IB, JB, BI, BJ, ...]` over blocks of bm x bn, the matrix read
as `A_bsr[ib, jb, bi, bj]`, the row and column as `ib*bm + bi` and `jb*bn + bj` (elements past m
or n are skipped).

The function gains the new format's arrays and sizes as parameters and keeps the CSR ones; the
conversion routines are generated into new functions of the module (bucket_plan.py,
block_plan.py) and the runtime runs them when the function is called with the CSR matrix
(`tirc.sparse_plan` attribute). Bucket widths are fixed at compile time; which of them are
populated follows the row-length histogram when called ("auto"). Rows longer than the last
width are cut into chunks of the last bucket, which then holds a row more than once: in a
reduction its row variable is a reduction too (the primitives refuse its rows in parallel;
parallelise that bucket over another axis, such as the features).
"""

from __future__ import annotations

from typing import Any

from tirc.ir.attrs import SPARSE_PLAN
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, DType
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var, binop, const
from tirc.ir.function import PrimFunc
from tirc.ir.sparse import Axis, AxisKind, SparseBuffer, SparseIteration, SpIterVar
from tirc.ir.stmt import IfThenElse, IterKind, Stmt, seq
from tirc.ir.visitor import Mutator, any_node, substitute
from tirc.passes.schedule.sparse import _iteration
from tirc.passes.schedule.state import ScheduleError, ScheduleState
from tirc.passes.sparse import block_plan, bucket_plan

I32 = DType("int", 32)
AUTO_WIDTHS = (1, 2, 4, 8, 16, 32)


def _widths(fmt: Any, width: Any, buckets: Any) -> tuple[int, ...]:
    if fmt == "ell":
        if not isinstance(width, int) or width < 1:
            raise ScheduleError("decompose_format: \"ell\" needs width=<positive int>")
        return (width,)
    if buckets == "auto" or buckets is None:
        return AUTO_WIDTHS
    if isinstance(buckets, (list, tuple)) and buckets and all(
            isinstance(w, int) and w > 0 for w in buckets) and \
            list(buckets) == sorted(set(buckets)):
        return tuple(buckets)
    raise ScheduleError("decompose_format: buckets is \"auto\" or increasing positive "
                        "widths, such as (1, 2, 4, 8)")


class _Target:
    """The iteration being decomposed: its CSR axis, the row axis and their variables."""

    def __init__(self, s: ScheduleState, sp: Any) -> None:
        it = _iteration(s, sp, "decompose_format")
        ivs = it.sp_iter_vars
        if any(iv.attach is not None for iv in ivs):
            raise ScheduleError("decompose_format: an iteration with T.attach cannot be "
                                "decomposed")
        found = [k for k, iv in enumerate(ivs) if iv.axis.kind == AxisKind.SPARSE_VARIABLE]
        if len(found) != 1 or it.fused:
            raise ScheduleError("decompose_format: the iteration must have one CSR axis and no "
                                "fused variables")
        self.kj = found[0]
        col = ivs[self.kj].axis
        ki = next((k for k, iv in enumerate(ivs) if iv.axis is col.parent), None)
        if ki is None or ivs[ki].axis.parent is not None:
            raise ScheduleError("decompose_format: the CSR axis's dense parent must be iterated")
        self.it, self.ki = it, ki
        self.row, self.col = ivs[ki].axis, col
        self.reduce = ivs[self.kj].kind == IterKind.REDUCE
        self.matrix = _matrix(it, self.row, col)
        handle_of = {b: p for p, b in s.func.buffer_map.items()}
        if self.matrix not in handle_of:
            raise ScheduleError("decompose_format: the CSR matrix must be a parameter")
        self.base = handle_of[self.matrix].name
        self.old_i, self.old_j = ivs[ki].var, ivs[self.kj].var

    def init_first(self) -> list[Stmt]:
        """The init as an iteration of its own over the spatial variables (a reduction over
        the CSR axis is then split between the new iterations)."""
        if self.it.init is None:
            return []
        spatial = [iv for iv in self.it.sp_iter_vars if iv.kind == IterKind.SPATIAL]
        return [SparseIteration(f"{self.it.name}_init", tuple(spatial), self.it.init)]


def decompose_format(s: ScheduleState, sp: Any, fmt: Any, width: Any = None,
                     buckets: Any = None, col_parts: Any = 1, block: Any = None) -> None:
    """See the module docstring."""
    if fmt not in ("hyb", "ell", "bsr"):
        raise ScheduleError(f"decompose_format: unsupported format {fmt!r} (\"hyb\", \"ell\" "
                            "or \"bsr\")")
    target = _Target(s, sp)
    if fmt == "bsr":
        if not (isinstance(block, (list, tuple)) and len(block) == 2 and
                all(isinstance(b, int) and b > 0 for b in block)):
            raise ScheduleError("decompose_format: \"bsr\" needs block=(rows, cols)")
        if not target.reduce:
            raise ScheduleError("decompose_format: \"bsr\" needs the CSR axis to be a "
                                "reduction (an operand, as in SpMM): a sparse output's blocks "
                                "would hold elements it does not have")
        _blocked(s, target, (block[0], block[1]))
        return
    if not isinstance(col_parts, int) or col_parts < 1:
        raise ScheduleError("decompose_format: col_parts is a positive number of column "
                            "partitions")
    _bucketed(s, target, _widths(fmt, width, buckets), col_parts)


# ---- hyb / ell ------------------------------------------------------------------------------


def _bucketed(s: ScheduleState, t: _Target, widths: tuple[int, ...], parts: int) -> None:
    func = s.func
    params = list(func.params)
    bmap = dict(func.buffer_map)
    sizes: list[Var] = []
    stmts: list[Stmt] = t.init_first() if t.reduce else []
    names: dict[str, list[str]] = {"rows": [], "cols": [], "vals": [], "masks": [],
                                   "sizes": []}
    nb = len(widths)
    for q in range(parts * nb):
        p, b = divmod(q, nb)
        w = widths[b]
        tag = f"b{b}" if parts == 1 else f"p{p}_b{b}"
        n_q = Var(f"{t.base}_n{q}", I32)
        sizes.append(n_q)
        cols = Buffer(name=f"J{q}_indices", shape=(IntImm(w, I32) * n_q,),
                      dtype=t.col.idtype, data=Var(f"J{q}_indices", HANDLE))
        iq = Axis(f"I{q}", AxisKind.DENSE_FIXED, n_q, idtype=t.row.idtype)
        jq = Axis(f"J{q}", AxisKind.SPARSE_FIXED, t.col.length, iq, const(w, I32),
                  indices=cols, idtype=t.col.idtype)
        rows = SparseBuffer(name=f"R{q}", shape=(n_q,), dtype=I32, data=Var(f"R{q}", HANDLE),
                            axes=(iq,))
        group: list[tuple[str, Var, Buffer]] = [
            ("rows", Var(f"{t.base}_rows{q}", HANDLE), rows),
            ("cols", Var(f"{t.base}_cols{q}", HANDLE), cols)]
        # an operand's values, or a sparse output's mask (0 at padding)
        key, param, name, dt = \
            ("vals", f"{t.base}_vals{q}", f"{t.matrix.name}{q}", t.matrix.dtype) if t.reduce \
            else ("masks", f"{t.base}_mask{q}", f"{t.matrix.name}{q}_mask", bucket_plan.MASK)
        arrays = SparseBuffer(name=name, shape=(n_q, t.col.length), dtype=dt,
                              data=Var(name, HANDLE), axes=(iq, jq))
        group.append((key, Var(param, HANDLE), arrays))
        for key, h, buf in group:
            params.append(h)
            bmap[h] = buf
            names[key].append(h.name)
        names["sizes"].append(n_q.name)
        stmts.append(_bucket(t, tag, iq, jq, arrays, rows, chunked=b == nb - 1))
    params += sizes
    s.func = func.replace(params=tuple(params), buffer_map=bmap)  # type: ignore[assignment]
    _replace_with(s, t.it, seq(*stmts))
    plan = {"kind": "buckets", "tensor": t.base, "widths": list(widths), "parts": parts,
            "counts": f"{func.name}_plan_counts", "fill": f"{func.name}_plan_fill", **names}
    _plan(s, plan, [bucket_plan.plan_counts(func.name, widths, parts),
                    bucket_plan.plan_fill(func.name, widths,
                                          t.matrix.dtype if t.reduce else None, parts)])


def _bucket(t: _Target, tag: str, iq: Axis, jq: Axis, arrays: SparseBuffer,
            rows: SparseBuffer, chunked: bool) -> SparseIteration:
    """One bucket's iteration, reading the matrix's values from `arrays` (a reduction over
    the CSR axis) or guarded by its mask (a sparse output). The last bucket of a partition
    (`chunked`) may hold a row more than once, cut into chunks: in a reduction its rows then
    accumulate into the same outputs, so its row variable is a reduction too, and the schedule
    primitives refuse to run its rows in parallel (a sparse output's chunks write distinct
    elements)."""
    ivs, mapping = _renamed(t.it, tag, {t.ki: iq, t.kj: jq})
    if chunked and t.reduce:
        ivs[t.ki] = SpIterVar(ivs[t.ki].var, iq, IterKind.REDUCE)
    vi, vj = ivs[t.ki].var, ivs[t.kj].var
    mapping[t.old_i] = BufferLoad(rows, (vi,), I32)
    if t.reduce:
        body = _ReadsOf(t.matrix, t.old_i, t.old_j, lambda: BufferLoad(
            arrays, (vi, vj), arrays.dtype)).visit(t.it.body)
        return SparseIteration(f"{t.it.name}_{tag}", tuple(ivs), substitute(body, mapping))
    real = binop("ne", BufferLoad(arrays, (vi, vj), arrays.dtype), const(0, arrays.dtype))
    init = None if t.it.init is None else IfThenElse(real, substitute(t.it.init, mapping))
    return SparseIteration(f"{t.it.name}_{tag}", tuple(ivs),
                           IfThenElse(real, substitute(t.it.body, mapping)), init)


# ---- bsr ------------------------------------------------------------------------------------


def _blocked(s: ScheduleState, t: _Target, block: tuple[int, int]) -> None:
    func = s.func
    bm, bn = block
    mb, nb, nnzb = (Var(f"{t.base}_{nm}", I32) for nm in ("mb", "nb", "nnzb"))
    bindptr = Buffer(name="JB_indptr", shape=(binop("add", mb, 1),), dtype=I32,
                     data=Var("JB_indptr", HANDLE))
    bindices = Buffer(name="JB_indices", shape=(nnzb,), dtype=I32, data=Var("JB_indices",
                                                                            HANDLE))
    brow = Axis("IB", AxisKind.DENSE_FIXED, mb, idtype=I32)
    bcol = Axis("JB", AxisKind.SPARSE_VARIABLE, nb, brow, nnzb, bindptr, bindices, I32)
    bi, bj = (Axis(nm, AxisKind.DENSE_FIXED, const(size, I32), idtype=I32)
              for nm, size in (("BI", bm), ("BJ", bn)))
    ab = SparseBuffer(name=f"{t.matrix.name}_bsr", shape=(mb, nb, const(bm, I32),
                                                          const(bn, I32)),
                      dtype=t.matrix.dtype, data=Var(f"{t.matrix.name}_bsr", HANDLE),
                      axes=(brow, bcol, bi, bj))
    handles = {key: Var(f"{t.base}_{key}", HANDLE) for key in ("block_indptr",
                                                                 "block_indices", "block_vals")}
    bmap = dict(func.buffer_map)
    bmap.update(zip(handles.values(), (bindptr, bindices, ab)))
    params = (*func.params, *handles.values(), mb, nb, nnzb)
    old = t.it.sp_iter_vars
    ivs: list[SpIterVar] = []
    mapping: dict[Var, PrimExpr] = {}
    for k, iv in enumerate(old):
        if k == t.ki:
            ivs.append(SpIterVar(Var(f"{iv.var.name}b", iv.var.dtype), brow, iv.kind))
        elif k == t.kj:
            ivs.append(SpIterVar(Var(f"{iv.var.name}b", iv.var.dtype), bcol, iv.kind))
            ivs.append(SpIterVar(Var(f"b{old[t.ki].var.name}", I32), bi, IterKind.SPATIAL))
            ivs.append(SpIterVar(Var(f"b{iv.var.name}", I32), bj, IterKind.REDUCE))
        else:
            var = Var(iv.var.name, iv.var.dtype)
            ivs.append(SpIterVar(var, iv.axis, iv.kind))
            mapping[iv.var] = var
    vib, vjb, vbi, vbj = (x.var for x in ivs if x.axis in (brow, bcol, bi, bj))
    body = _ReadsOf(t.matrix, t.old_i, t.old_j,
                    lambda: BufferLoad(ab, (vib, vjb, vbi, vbj), ab.dtype)).visit(t.it.body)
    row = binop("add", binop("mul", vib, const(bm, I32)), vbi)
    col = binop("add", binop("mul", vjb, const(bn, I32)), vbj)
    mapping.update({t.old_i: row, t.old_j: col})
    inside = binop("and", binop("lt", row, t.row.length), binop("lt", col, t.col.length))
    main = SparseIteration(f"{t.it.name}_bsr", tuple(ivs),
                           IfThenElse(inside, substitute(body, mapping)))
    s.func = func.replace(params=params, buffer_map=bmap)  # type: ignore[assignment]
    _replace_with(s, t.it, seq(*t.init_first(), main))
    plan = {"kind": "bsr", "tensor": t.base, "block": [bm, bn],
            "counts": f"{func.name}_plan_counts", "fill": f"{func.name}_plan_fill",
            "values": f"{func.name}_plan_values", **{k: h.name for k, h in handles.items()},
            "sizes": [mb.name, nb.name, nnzb.name]}
    _plan(s, plan, [block_plan.plan_counts(func.name, block),
                    block_plan.plan_fill(func.name, block),
                    block_plan.plan_values(func.name, block, t.matrix.dtype)])


# ---- shared ---------------------------------------------------------------------------------


def _matrix(it: SparseIteration, row: Axis, col: Axis) -> SparseBuffer:
    """The one buffer accessed over the CSR axes (read as an operand, or the output)."""
    found: list[SparseBuffer] = []

    def over_csr(n: Any) -> bool:
        buf = getattr(n, "buffer", None)
        if isinstance(buf, SparseBuffer) and buf.axes == (row, col) and buf not in found:
            found.append(buf)
        return False

    any_node(it.body, over_csr)
    if len(found) != 1:
        raise ScheduleError("decompose_format: expected one buffer over the CSR axes, "
                            f"found {len(found)}")
    return found[0]


class _ReadsOf(Mutator):
    """Reads `buf[old_i, old_j]` replaced by `new()`."""

    def __init__(self, buf: SparseBuffer, old_i: Var, old_j: Var, new: Any) -> None:
        super().__init__()
        self.buf, self.old_i, self.old_j, self.new = buf, old_i, old_j, new

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        if e.buffer is self.buf and len(e.indices) == 2 and e.indices[0] is self.old_i \
                and e.indices[1] is self.old_j:
            return self.new()
        return self.generic_visit(e)


def _renamed(it: SparseIteration, tag: str, axes: dict[int, Axis]
             ) -> tuple[list[SpIterVar], dict[Var, PrimExpr]]:
    """The iteration's variables renamed for one new iteration, some over new axes."""
    ivs: list[SpIterVar] = []
    mapping: dict[Var, PrimExpr] = {}
    suffix = tag[1:] if tag.startswith("b") else tag
    for k, iv in enumerate(it.sp_iter_vars):
        var = Var(f"{iv.var.name}{suffix}", iv.var.dtype)
        ivs.append(SpIterVar(var, axes.get(k, iv.axis), iv.kind))
        mapping[iv.var] = var
    return ivs, mapping


def _plan(s: ScheduleState, plan: dict[str, Any], functions: list[PrimFunc]) -> None:
    attrs = dict(s.func.attrs)
    attrs[SPARSE_PLAN] = plan
    s.func = s.func.replace(attrs=attrs)  # type: ignore[assignment]
    for f in functions:
        s.new_functions[f.name] = f


def _replace_with(s: ScheduleState, old: SparseIteration, new: Stmt) -> None:
    class _Swap(Mutator):
        def visit_SparseIteration(self, x: SparseIteration) -> Stmt:
            return new if x is old else x

    s.set_body(_Swap().visit(s.body))
