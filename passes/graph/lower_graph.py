"""lower-graph: a graph function becomes the host loop function the library exports.

The host function takes the graph function's tensors and then its results (destination-passing
style, so the runtime allocates the results from their shape expressions: `y = m.main(x, w)`).
Its symbolic sizes bind from the arguments (make-entry checks them); `R.match_cast` binds new
sizes and checks the others at run time. Intermediate tensors are views into one workspace
allocated per call with memory-plan's layout. Each `R.call_tir` is inlined: the kernel's body
is copied with its buffers bound to the actual tensors and its sizes to their values, so the
host function runs the kernels in order with no call overhead; an `R.call_tir_inplace` marked
`in_place` (passes/graph/inplace_calls.py) is inlined so on its argument's buffer, which its
result then is. Each `R.call_dps_packed` becomes
a `tirc.call_packed` intrinsic call of the C function (see tirc.ir.packed_call). Returned values
that no call writes (a parameter, a tensor returned twice) are copied into their result.
An `R.Prim` parameter is a scalar parameter of the host function, in its place among the
inputs; an `R.Prim` argument of a call_tir (a parameter, a binding, an `R.prim_value`) gives
its value to the kernel's scalar parameter (tirc.ir.ops.calls.call_scalars). A parameter
whose shape or dtype is unknown (`x: R.Tensor("float32")`) is taken with the type of the
`R.match_cast` that refines it before any other use (`_refined_params`), so that the entry's
argument checks make the match_cast's. An `R.Tuple` parameter of tensors is
one parameter per field, consecutive (`t_0`, `t_1`; the metadata's `tuples` names them so that
the runtime takes one tuple for them). An `if` becomes an `IfThenElse` on its condition, each
branch running its own kernels; the call that computes a branch's result writes it into the
if's tensor (otherwise the branch copies its result there), and the intermediates of both
branches live in the workspace. A returned `R.Shape` is an int64 result of one entry per
dimension and a returned `R.Prim` value a 0-d result, both stored after the kernels; where the
returned value is not one tensor or a flat tuple of tensors, `tirc.graph_returns` records its
structure over the results (the metadata's `returns`, which the runtime rebuilds).
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from tirc.ir import intrinsics as intrin
from tirc.ir.analysis.size_factor import other_factors
from tirc.ir.attrs import (
    GLOBAL_SYMBOL,
    GRAPH_FUNC,
    GRAPH_RESULTS,
    GRAPH_RETURNS,
    GRAPH_TUPLES,
    NOALIAS,
    PRIMITIVE,
    SHARDING,
    SPARSE_TENSORS,
)
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError, DiagnosticContext
from tirc.ir.dist.collective import collective_call, is_collective
from tirc.ir.dtype import HANDLE, INT32, INT64
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, StringImm, Var, binop, cast
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
    TensorSInfo,
    Tuple,
    TupleGetItem,
    TupleSInfo,
    VarBinding,
)
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.ops.calls import call_scalars, shape_var_bindings
from tirc.ir.ops.infer import infer_expr
from tirc.ir.ops.sinfo_util import dim, shape_text, shape_vars, sinfo_text
from tirc.ir.ops.size_checks import SIZE_CHECK, size_check_of
from tirc.ir.packed_call import call_packed, is_slot_name
from tirc.ir.rebind import fresh_copy
from tirc.ir.sparse.signature import CallMismatch, tensor_slots
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
    BufferStore,
    Evaluate,
    IfThenElse,
    LetStmt,
    Stmt,
    seq,
)
from tirc.ir.visitor import post_order_visit, substitute
from tirc.passes.graph.fuse_ops import used_vars
from tirc.passes.graph.inplace_calls import IN_PLACE
from tirc.passes.graph.kernel import Kernel
from tirc.passes.graph.lower_print import lower_print
from tirc.passes.graph.memory_plan import (
    TensorId,
    aliases_of,
    branch_result,
    cast_sizes,
    plan_memory,
    produced_tensors,
    reshaped,
    returned_leaves,
    returned_tensors,
    tensor_of,
)
from tirc.passes.pass_base import Pass, PassContext
from tirc.passes.schedule.tree import BlockNames


@dataclass(frozen=True)
class LowerGraph(Pass):
    """Graph functions -> exported host loop functions; inlined kernels are dropped."""

    name = "lower-graph"
    description = "lower graph functions to host functions that allocate and run the kernels"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        graph = {n: f for n, f in mod.graph_funcs().items() if not f.attrs.get(PRIMITIVE)}
        if not graph:
            return mod
        out = mod
        used: set[str] = set()
        diag = DiagnosticContext()
        for name, func in graph.items():
            try:
                host, callees = lower_function(func, mod,
                                               asserts=getattr(ctx.target, "is_gpu", False))
            except CompileError as err:  # every function's errors, not the first one's only
                diag.diagnostics.extend(err.diagnostics)
                continue
            used |= callees
            out = out.without_function(name).with_function(name, host)
        diag.check()
        for name, f in mod.functions.items():
            if isinstance(f, Function) and f.attrs.get(PRIMITIVE):
                out = out.without_function(name)
            elif name in used and GLOBAL_SYMBOL not in f.attrs:
                out = out.without_function(name)
        return out


class _HostBuilder:
    """The stages of one host function, with the bindings that scope over the rest."""

    def __init__(self, func: Function, mod: IRModule, asserts: bool = False) -> None:
        self.func = func
        self.mod = mod
        self.asserts = asserts
        self.kernel = Kernel(func.name)
        self.buffers: dict[TensorId, Buffer] = {}
        self.items: list[Any] = []
        self.callees: set[str] = set()
        self.block_names: set[str] = set()
        self.scalar_params: list[Any] = []
        self.sparse: dict[GVar, tuple[Buffer, Buffer, Buffer]] = {}
        self.sparse_sizes: list[Var] = []
        self.sparse_info: list[dict[str, object]] = []
        self.prims: dict[GVar, PrimExpr] = {}  # R.Prim values: parameters and bindings
        self.prim_params: dict[int, Var] = {}  # host scalar parameter by graph position
        self.refined, self.absorbed = _refined_params(func)
        self.tuples: list[tuple[str, tuple[str, ...]]] = []  # R.Tuple parameters' fields

    def error(self, message: str, node: Any) -> CompileError:
        return CompileError(f"lower-graph: {message}", getattr(node, "span", None))

    # ---- buffers ---------------------------------------------------------------------

    def params(self) -> None:
        """Every parameter's host form; the `R.Prim` and `R.Shape` ones first, since the sizes
        they define bind before any tensor's compound dimension mentions them (as TVM's)."""
        order = sorted(enumerate(self.func.params), key=lambda kp: not isinstance(
            kp[1].struct_info, (PrimSInfo, ShapeSInfo)))
        for k, p in order:
            s = p.struct_info
            if isinstance(s, PrimSInfo):
                self.prim_param(k, p, s)
                continue
            if isinstance(s, ShapeSInfo) and s.values is not None and \
                    all(isinstance(v, Var) for v in s.values):
                self.scalar_params += list(self.kernel.dims(s.values))  # mesh coordinates
                continue
            if isinstance(s, SparseTensorSInfo):
                self.sparse_param(p, s)
                continue
            if isinstance(s, TupleSInfo):
                self.tuple_param(p, s)
                continue
            s = self.refined.get(p, s)
            if not isinstance(s, TensorSInfo) or s.shape is None or s.dtype is None:
                raise self.error(_unknown_param_message(p), p)
            self.buffers[(p, 0)] = self.kernel.input(p.name, p, s)

    def tuple_param(self, p: GVar, s: TupleSInfo) -> None:
        """An `R.Tuple` parameter of tensors: one input per field, `p_0`, `p_1`, ..., in order
        (each field is the tensor `p[k]`)."""
        taken = {q.name for q in self.func.params}
        if not s.fields:
            raise self.error(f"parameter '{p.name}' is an empty tuple: it passes nothing; "
                             "leave it out", p)
        names = []
        for k, f in enumerate(s.fields):
            if isinstance(f, TupleSInfo):
                raise self.error(f"parameter '{p.name}': field {k} is a tuple; a tuple "
                                 "parameter holds tensors only (pass the inner tuple's tensors "
                                 "as fields of their own)", p)
            if not _complete(f):
                raise self.error(f"parameter '{p.name}': field {k} must be a tensor of known "
                                 f"shape and dtype, not {sinfo_text(f)}", p)
            name = f"{p.name}_{k}"
            if name in taken:
                raise self.error(f"parameter '{p.name}': its field {k} is passed as '{name}', "
                                 "the name of another parameter; rename one of them", p)
            assert isinstance(f, TensorSInfo)
            self.buffers[(p, k)] = self.kernel.input(name, p, f)
            names.append(name)
        self.tuples.append((p.name, tuple(names)))

    def prim_param(self, k: int, p: GVar, s: PrimSInfo) -> None:
        """An `R.Prim` parameter: a scalar parameter of the host function (passed as a 0-d
        tensor, docs/abi.md); `R.Prim(value=n)` also binds the symbolic size `n`."""
        var = Var(p.name, s.dtype)
        self.prim_params[k] = var
        self.prims[p] = var
        if isinstance(s.value, Var) and s.value not in self.kernel.sizes:
            self.kernel.sizes[s.value] = var if s.value.dtype == s.dtype else Var(
                s.value.name, s.value.dtype)
            if self.kernel.sizes[s.value] is not var:
                self.items.append(("let", self.kernel.sizes[s.value], cast(s.value.dtype, var)))
        elif s.value is not None:
            want = self.prim(s.value)
            message = f"{self.func.name}: argument {p.name} is not {shape_text([s.value])[1:-2]}"
            self.items.append(("assert", binop("eq", var, cast(s.dtype, want)), message))

    def prim(self, e: PrimExpr) -> PrimExpr:
        """A loop-level expression of a graph value, over the host function's variables."""
        free: list[Var] = []
        post_order_visit(e, lambda n: free.append(n) if isinstance(n, Var) else None)
        for v in free:
            if v not in self.kernel.sizes:
                self.kernel.dims([v])
        return substitute(e, self.kernel.sizes)

    def is_scalar(self, e: GraphExpr) -> bool:
        """Whether `e` is an `R.Prim` value the host function has (a parameter, a binding, an
        `R.prim_value(...)`)."""
        return (isinstance(e, GVar) and e in self.prims) or isinstance(e, PrimValue)

    def scalar(self, e: GraphExpr) -> PrimExpr:
        """The loop-level value of an `R.Prim` value (is_scalar)."""
        return self.prims[e] if isinstance(e, GVar) else self.prim(e.value)  # type: ignore[attr-defined]

    def condition(self, e: GraphExpr, aliases: dict[GVar, TensorId]) -> PrimExpr:
        """The scalar an `if` tests: an `R.Prim` value, or a 0-d boolean tensor's element."""
        if self.is_scalar(e):
            return self.scalar(e)
        s = getattr(e, "struct_info", None)
        if isinstance(s, TensorSInfo) and s.shape == ():
            buf = self.tensor(e, aliases)
            return BufferLoad(buf, (), buf.dtype)
        raise self.error("the condition of 'if' must be an R.Prim(\"bool\") value", e)

    def sparse_param(self, p: GVar, s: SparseTensorSInfo) -> None:
        """A sparse matrix parameter: buffers for its data, `indptr` and `indices`; the sizes of
        its shape are scalar parameters, which the runtime takes from the matrix (metadata
        `sparse_tensors`, read by tirc.runtime.sparse_arguments)."""
        sizes: list[str | int] = []
        for d in s.shape:
            if isinstance(d, Var):
                if d not in self.sparse_sizes:
                    self.sparse_sizes.append(d)
                sizes.append(d.name)
            elif isinstance(d, IntImm):
                sizes.append(d.value)
            else:
                raise self.error(f"the shape of sparse parameter '{p.name}' must be sizes or "
                                 f"constants, not {shape_text(s.shape)}", p)
        rows = s.shape[0] if not s.block else binop("floordiv", s.shape[0], dim(s.block[0]))
        idt = s.index_dtype
        block = tuple(dim(b) for b in s.block)
        data = self.kernel.input(p.name, p, TensorSInfo((s.nnz, *block), s.dtype))
        indptr = self.kernel.input(f"{p.name}_indptr", p,
                                   TensorSInfo((binop("add", rows, dim(1)),), idt))
        indices = self.kernel.input(f"{p.name}_indices", p, TensorSInfo((s.nnz,), idt))
        self.sparse[p] = (data, indptr, indices)
        axes: list[dict[str, object]] = [
            {"name": "I", "kind": "dense_fixed", "length": None, "idtype": str(idt)},
            {"name": "J", "kind": "sparse_variable", "length": None, "parent": "I",
             "nnz": None, "indptr": indptr.name, "indices": indices.name, "idtype": str(idt)}]
        axes += [{"name": name, "kind": "dense_fixed", "length": b, "idtype": str(idt)}
                 for name, b in zip(("BI", "BJ"), s.block)]
        self.sparse_info.append({"name": p.name, "buffer": p.name, "dtype": str(s.dtype),
                                 "shape": tuple(sizes), "axes": tuple(axes)})

    def tensor(self, e: Any, aliases: dict[GVar, TensorId]) -> Buffer:
        """The buffer holding a graph value used as a call argument."""
        if isinstance(e, Constant):  # a scalar, or a tensor constant stored element by element
            buf = Buffer(name=f"const{len(self.items)}", dtype=e.dtype,
                         shape=tuple(IntImm(n, INT64) for n in e.shape),
                         data=Var(f"const{len(self.items)}", HANDLE))
            self.items.append(("alloc", buf))
            for index in itertools.product(*(range(n) for n in e.shape)):
                item: Any = e.value
                for k in index:
                    item = item[k]
                self.items.append(BufferStore(buf, cast(e.dtype, item),
                                              tuple(IntImm(k, INT64) for k in index)))
            return buf
        if isinstance(e, GVar) and (e, 0) in self.buffers:
            return self.buffers[(e, 0)]
        tid = tensor_of(e, aliases)
        if tid is None or tid not in self.buffers:
            raise self.error("an argument must be a tensor computed before the call", e)
        return self.buffers[tid]

    # ---- bindings --------------------------------------------------------------------

    def call_tir(self, b: VarBinding, call: GCall, aliases: dict[GVar, TensorId]) -> None:
        callee_ref = call.args[0]
        callee = self.mod.functions.get(callee_ref.name) if isinstance(callee_ref, GlobalVar) \
            else None
        if not isinstance(callee, PrimFunc):
            raise self.error("R.call_tir needs a loop function of the module", call)
        if callee.ret_dtype is not None:
            raise self.error(f"R.call_tir of '{callee.name}', which returns a value: R.call_tir "
                             "calls a function that writes its outputs", call)
        self.callees.add(callee.name)
        given = call.args[1].fields if isinstance(call.args[1], Tuple) else (call.args[1],)
        args = [a for a in given if not self.is_scalar(a)]
        prims = [self.scalar(a) for a in given if self.is_scalar(a)]
        outputs = [self.buffers[tid] for tid, _ in produced_tensors(call, b.var)]
        is_sparse = [isinstance(a, GVar) and a in self.sparse for a in args]
        try:
            slots = tensor_slots(callee, is_sparse + [False] * len(outputs))
        except CallMismatch as exc:
            raise self.error(str(exc), call) from None
        buffers: list[Buffer] = []
        actual: list[Buffer] = []
        # a call_tir_inplace marked in_place (inplace_calls) writes its argument's buffer
        written = given[call.attrs["inplace_indices"][0]] if call.op == "call_tir_inplace" \
            else None
        for (param, sp), a in zip(slots, list(args) + outputs):
            if sp is None:
                buffers.append(callee.buffer_map[param])
                actual.append(a if isinstance(a, Buffer) else self.tensor(a, aliases))
                if a is written:
                    self.buffers[(b.var, 0)] = actual[-1]
                continue
            buffers += [callee.buffer_map[v] for v in (param, sp.indptr, sp.indices)]
            actual += self.sparse[a]
        tir_vars: list[PrimExpr] = []
        if len(call.args) > 2 and isinstance(call.args[2], ShapeExpr):
            tir_vars = list(self.kernel.dims(call.args[2].values))
        known = call_scalars(callee, prims, tir_vars)
        if known is None:
            scalars = [p for p in callee.params if p not in callee.buffer_map]
            raise self.error(f"{callee.name} takes {len(scalars)} scalars, got {len(prims)} "
                             f"R.Prim arguments and {len(tir_vars)} shape values", call)
        mapping: dict[Any, Any] = dict(zip(buffers, actual))
        # A bare `Y.data` (an argument of a direct call) is the actual buffer's storage too.
        mapping.update({b.data: a.data for b, a in zip(buffers, actual)})
        mapping.update(shape_var_bindings(buffers, [a.shape for a in actual], known))
        body = fresh_copy(callee.body, mapping)
        self.items.append(BlockNames(self.block_names).visit(body))

    def call_dps_packed(self, b: VarBinding, call: GCall,
                        aliases: dict[GVar, TensorId]) -> None:
        """One `tirc.call_packed` of the C function: the inputs, then the outputs."""
        callee = call.args[0] if call.args else None
        if not isinstance(callee, ExternFunc):
            raise self.error("R.call_dps_packed needs the C function's name as its callee", call)
        if not callee.symbol.isidentifier() and not is_slot_name(callee.symbol):
            raise self.error(f"R.call_dps_packed: '{callee.symbol}' is neither a C identifier "
                             "nor a dotted name such as 'env.relu'", call)
        packed = call.args[1] if len(call.args) > 1 else Tuple(())
        args = packed.fields if isinstance(packed, Tuple) else (packed,)
        inputs = [self.tensor(a, aliases) for a in args]
        outputs = [self.buffers[tid] for tid, _ in produced_tensors(call, b.var)]
        self.items.append(Evaluate(call_packed(self.func.name, callee.symbol, inputs, outputs),
                                   span=call.span))

    def collective(self, b: VarBinding, call: GCall, aliases: dict[GVar, TensorId]) -> None:
        """A collective: `tirc_ccl_<name>(send, params, recv)` through the DLTensor ABI, its
        integers (tirc.ir.dist.collective) in a small int64 buffer."""
        symbol, params = collective_call(call, self.mod.global_infos)
        n = len(self.items)
        buf = Buffer(name=f"ccl_params{n}", shape=(IntImm(len(params), INT64),), dtype=INT64,
                     data=Var(f"ccl_params{n}", HANDLE))
        self.items.append(("alloc", buf))
        for k, v in enumerate(params):
            self.items.append(BufferStore(buf, IntImm(v, INT64), (IntImm(k, INT64),)))
        inputs = [self.tensor(call.args[0], aliases), buf]
        outputs = [self.buffers[tid] for tid, _ in produced_tensors(call, b.var)]
        self.items.append(Evaluate(call_packed(self.func.name, symbol, inputs, outputs),
                                   span=call.span))

    def size_check(self, call: GCall) -> None:
        """`R.tirc.size_check`: a `tirc.check` that the two sizes agree, with the message the
        interpreter gives (tirc.ir.ops.size_checks); a failed one makes the entry return -1.
        With `asserts` (GPU, megakernels), an assert of the sizes named without their values
        (a GPU launch plan's runtime appends them)."""
        check = size_check_of(call)
        lhs, rhs = cast(INT64, self.prim(check.lhs)), cast(INT64, self.prim(check.rhs))
        if self.asserts:
            self.items.append(("assert", binop("eq", lhs, rhs), check.text()))
            return
        self.items.append(Evaluate(Call(intrin.CHECK, (binop("eq", lhs, rhs), StringImm(check.fmt),
                                                       lhs, rhs), INT32), span=call.span))

    def match_cast(self, b: MatchCast, aliases: dict[GVar, TensorId]) -> None:
        src = self.tensor(b.value, aliases)
        s = b.struct_info
        if b.var in self.absorbed:  # the entry took the parameter with this type
            self.buffers[(b.var, 0)] = dataclasses.replace(src, name=b.var.name)
            return
        if not isinstance(s, TensorSInfo) or s.shape is None:
            raise self.error("R.match_cast needs a tensor shape", b)
        if len(s.shape) != len(src.shape):
            raise self.error(f"R.match_cast of {b.var.name}: rank {len(src.shape)} is not "
                             f"{len(s.shape)}", b)
        dims = []
        for k, (want, got) in enumerate(zip(s.shape, src.shape)):
            if isinstance(want, Var) and want not in self.kernel.sizes:
                kv = Var(want.name, want.dtype)
                self.kernel.sizes[want] = kv
                self.items.append(("let", kv, cast(kv.dtype, got)))
                dims.append(kv)
                continue
            d = self.kernel.dims([want])[0]
            message = (f"{self.func.name}: R.match_cast of {b.var.name}: dimension {k} is "
                       f"not {shape_text([want])[1:-2]}")
            self.items.append(("assert", binop("eq", cast(d.dtype, got), d), message))
            dims.append(d)
        self.buffers[(b.var, 0)] = dataclasses.replace(src, name=b.var.name, shape=tuple(dims))

    # ---- the function ----------------------------------------------------------------

    def build(self) -> PrimFunc:
        func = self.func
        aliases = aliases_of(func)
        plan = plan_memory(func)
        self.params()
        leaves = returned_leaves(func.body.body)
        copies: list[tuple[TensorId, Buffer]] = []
        values: list[tuple[Buffer, GraphExpr, ShapeSInfo | PrimSInfo]] = []  # R.Shape, R.Prim
        entries: list[Any] = []  # each result's place in the metadata's "returns"
        recast: list[tuple[TensorId, Buffer]] = []  # returned under another shape: copied
        sizes = cast_sizes(func)  # a size a match_cast binds is not bound yet here
        for k, (e, tid) in enumerate(zip(leaves, returned_tensors(func, aliases))):
            s = getattr(e, "struct_info", None)
            if isinstance(e, TupleGetItem):
                s = e.tuple_value.struct_info.fields[e.index]  # type: ignore[union-attr]
            if tid is not None and tid[1] == 0 and tid[0] in self.refined:
                s = self.refined[tid[0]]  # a refined parameter, returned
            if tid is None or not isinstance(s, TensorSInfo):
                s = s if s is not None else infer_expr(e, self.mod)[1]
                if isinstance(s, (ShapeSInfo, PrimSInfo)):
                    entries.append(self.value_result(e, s, k, len(leaves), values))
                    continue
                raise self.error("a returned value must be a tensor, an R.Shape or an R.Prim "
                                 f"value (or a tuple of them), not {sinfo_text(s)}",
                                 e if getattr(e, "span", None) else func.body)
            if not _complete(s):
                raise self.error("a returned tensor must have a known shape and dtype, not "
                                 f"{sinfo_text(s)}", e if getattr(e, "span", None) else func.body)
            name = tid[0].name if len(leaves) == 1 else f"{tid[0].name}_out{k}"
            if name in {p.name for p in func.params}:  # a parameter returned as it is
                name = f"{name}_out"
            if sizes and s.shape is not None:  # sizes a cast binds: the caller allocates
                s = dataclasses.replace(s, shape=tuple(substitute(d, sizes) for d in s.shape))
            out = self.kernel.output(name, s)
            entries.append(name)
            if reshaped(e, tid):
                recast.append((tid, out))
            elif tid in self.buffers or tid in [t for t, _ in copies] or \
                    not self._is_produced(tid):
                copies.append((tid, out))
            else:
                self.buffers[tid] = out
        workspaces = {
            dt: Buffer(name=f"workspace_{dt}", dtype=dt, data=Var(f"workspace_{dt}", HANDLE),
                       shape=self.kernel.dims([binop("floordiv", size, dim(dt.bytes))]))
            for dt, size in plan.workspace_bytes.items()}
        for tid, _ in plan.storage.items():
            s = tid[0].struct_info
            field = s.fields[tid[1]] if not isinstance(s, TensorSInfo) else s  # type: ignore[union-attr]
            assert isinstance(field, TensorSInfo) and field.shape is not None
            self.buffers[tid] = Buffer(
                name=tid[0].name if tid[1] == 0 else f"{tid[0].name}_{tid[1]}",
                shape=self.kernel.dims(tuple(substitute(d, sizes) for d in field.shape)),
                dtype=field.dtype,
                data=workspaces[field.dtype].data,  # type: ignore[index]
                elem_offset=self.kernel.dims([plan.offset_elems(tid)])[0])
        self.lower_blocks(func.body, aliases)
        for tid, out in copies + recast:
            self.copy(tid, out)
        for out, e, s in values:  # after the bindings, whose R.Prim values they may use
            self.items += self.value_stores(out, e, s)
        body = _fold(self.items)
        for ws in workspaces.values():
            body = Allocate(ws, body)
        self.kernel.stages = [body]
        prim, scalars = self.kernel.build(handle_prefix="", scalar_sizes=self.sparse_sizes)
        given = [*self.scalar_params, *self.prim_params.values()]  # an R.Prim(value=k) too
        solved = self._solved_sizes(given)
        unbound = [v for v in scalars if v not in self.sparse_sizes and
                   (v not in self.kernel.sizes or self.kernel.sizes[v] not in given) and
                   self.kernel.sizes.get(v) not in solved]
        prim = dataclasses.replace(prim, params=tuple(v for v in prim.params if v not in solved))
        if unbound:
            raise self.error(f"the sizes {', '.join(v.name for v in unbound)} cannot be "
                             "bound from the arguments: no parameter has one as a whole "
                             "dimension, an R.Prim(value=...) or an R.Shape entry, nor as the "
                             "one unknown factor of a product dimension", func)
        if self.scalar_params:
            handles = [h for h in prim.params if h in prim.buffer_map]
            forced = [self.kernel.sizes[v] for v in self.sparse_sizes]
            prim = dataclasses.replace(prim, params=(*handles, *forced, *self.scalar_params))
        if self.prim_params:
            prim = dataclasses.replace(prim, params=self._with_prim_params(prim))
        symbol = str(func.attrs.get(GLOBAL_SYMBOL, func.name))
        attrs: dict[str, Any] = {GLOBAL_SYMBOL: symbol, NOALIAS: True, GRAPH_FUNC: True,
                                 GRAPH_RESULTS: tuple(h.name for h, b in prim.buffer_map.items()
                                                      if b in self.kernel.outputs)}
        if SHARDING in func.attrs:
            attrs[SHARDING] = func.attrs[SHARDING]
        if self.sparse_info:
            attrs[SPARSE_TENSORS] = tuple(self.sparse_info)
        if self.tuples:
            attrs[GRAPH_TUPLES] = tuple(self.tuples)
        value = func.body.body
        if any(isinstance(x, dict) for x in entries) or isinstance(value, Tuple) and \
                (not value.fields or any(isinstance(f, Tuple) for f in value.fields)):
            attrs[GRAPH_RETURNS] = _structure(value, iter(entries))
        return dataclasses.replace(prim, attrs=attrs)

    def value_result(self, e: GraphExpr, s: ShapeSInfo | PrimSInfo, k: int, count: int,
                     values: list[tuple[Buffer, GraphExpr, ShapeSInfo | PrimSInfo]]
                     ) -> dict[str, str]:
        """A returned `R.Shape` (an int64 result of one entry per dimension) or `R.Prim` value
        (a 0-d result of its dtype): its result parameter, added to `values` (value_stores
        fills it), and its entry in the metadata's "returns"."""
        base = e.name if isinstance(e, GVar) else "shape" if isinstance(s, ShapeSInfo) \
            else "value"
        name = base if count == 1 else f"{base}_out{k}"
        taken = {p.name for p in self.func.params} | {b.name for b in self.kernel.inputs} | \
            {b.name for b in self.kernel.outputs} | {v.name for v in self.scalar_params}
        while name in taken:
            name = f"{name}_out"
        if isinstance(s, ShapeSInfo):
            shape = e.values if isinstance(e, ShapeExpr) else s.values
            if shape is None:
                raise self.error(f"a returned shape must have known values, not {sinfo_text(s)}"
                                 ": return R.shape([...]) of its sizes",
                                 e if getattr(e, "span", None) else self.func.body)
            out = self.kernel.output(name, TensorSInfo((IntImm(len(shape), INT64),), INT64))
        else:
            out = self.kernel.output(name, TensorSInfo((), s.dtype))
        values.append((out, e, s))
        return {"shape" if isinstance(s, ShapeSInfo) else "prim": name}

    def value_stores(self, out: Buffer, e: GraphExpr, s: ShapeSInfo | PrimSInfo) -> list[Stmt]:
        """The stores of a returned shape's entries, or of a returned scalar, into `out`."""
        if isinstance(s, ShapeSInfo):
            shape = e.values if isinstance(e, ShapeExpr) else s.values
            assert shape is not None
            return [BufferStore(out, cast(INT64, self.prim(v)), (IntImm(j, INT64),))
                    for j, v in enumerate(shape)]
        if isinstance(e, GVar) and e in self.prims:
            value = self.prims[e]
        elif isinstance(e, PrimValue):
            value = self.prim(e.value)
        elif s.value is not None:
            value = self.prim(s.value)
        else:
            raise self.error(f"a returned {sinfo_text(s)} must be a value the function knows: "
                             "an R.Prim parameter, an R.prim_value(...) or an expression of the "
                             "sizes", e if getattr(e, "span", None) else self.func.body)
        return [BufferStore(out, cast(s.dtype, value), ())]

    def _solved_sizes(self, given: list[Var]) -> set[Var]:
        """The sizes only an input's compound dimension mentions, as a factor of a product
        whose other factors are known (`M * N`, `M` an `R.Prim(value="M")`): the entry point
        solves them from the argument's shape (make-entry), so they are no parameters."""
        known = set(given) | {d for b in self.kernel.inputs for d in b.shape
                              if isinstance(d, Var)}
        solved: set[Var] = set()
        changed = True
        while changed:
            changed = False
            for d in (d for b in self.kernel.inputs for d in b.shape):
                free = [v for v in shape_vars([d]) if v not in known]
                if len(free) == 1 and other_factors(d, free[0]) is not None:
                    known.add(free[0])
                    solved.add(free[0])
                    changed = True
        return solved

    def _with_prim_params(self, prim: PrimFunc) -> tuple[Var, ...]:
        """The host parameters with each `R.Prim` scalar at its graph position among the
        inputs (before the outputs, so that `m.main(x, c)` allocates the results)."""
        inputs = iter(h for h in prim.params[:len(self.kernel.inputs)])
        ordered: list[Var] = []
        for k, p in enumerate(self.func.params):
            if k in self.prim_params:
                ordered.append(self.prim_params[k])
            elif isinstance(p.struct_info, TupleSInfo):
                ordered += [next(inputs) for _ in p.struct_info.fields]
            elif p not in self.sparse and not isinstance(p.struct_info, ShapeSInfo):
                ordered.append(next(inputs))
            elif p in self.sparse:
                ordered += [next(inputs) for _ in range(3)]
        ordered += list(inputs)
        rest = [v for v in prim.params[len(self.kernel.inputs):] if v not in ordered]
        return (*ordered, *rest)

    def lower_blocks(self, seq: SeqExpr, aliases: dict[GVar, TensorId]) -> None:
        """Every binding of `seq`, in order, into the current statements."""
        for block in seq.blocks:
            for b in block.bindings:
                self.binding(b, aliases)

    def if_binding(self, b: VarBinding, e: If, aliases: dict[GVar, TensorId]) -> None:
        """An `IfThenElse` on the condition, each branch's bindings in its own arm; a branch
        whose result no call of its own wrote copies it into the if's tensor."""
        s = b.var.struct_info
        tid = tensor_of(b.var, aliases)
        if not isinstance(s, TensorSInfo) or tid is None or tid not in self.buffers:
            raise self.error("an 'if' must give a tensor of known shape", b)
        cond = self.condition(e.cond, aliases)
        out = self.buffers[tid]
        arms: list[Stmt] = []
        outer = self.items
        for branch in e.branches:
            self.items = []
            result = branch_result(branch)
            if result is not None:
                self.buffers[(result, 0)] = out
            self.lower_blocks(branch, aliases)
            if result is None:
                self.copy_value(branch.body, out, aliases)
            arms.append(_fold(self.items))
        self.items = outer
        self.items.append(IfThenElse(cond, arms[0], arms[1], span=e.span))

    def copy_value(self, e: GraphExpr, out: Buffer, aliases: dict[GVar, TensorId]) -> None:
        """`out` = the tensor value `e` (a parameter, an outer tensor, a constant)."""
        src = self.tensor(e, aliases)
        tmp = Kernel("copy")
        if src.shape:
            tmp.compute(f"copy_{out.name}", out, lambda i: src.vload(*i))
        else:
            tmp.compute(f"copy_{out.name}", out, lambda i: BufferLoad(src, (), src.dtype))
        self.items.append(BlockNames(self.block_names).visit(tmp.stages[0]))

    def _is_produced(self, tid: TensorId) -> bool:
        for block in self.func.body.blocks:
            for b in block.bindings:
                if b.var is tid[0]:
                    return bool(produced_tensors(b.value, b.var))  # type: ignore[attr-defined]
        return False

    def binding(self, b: Any, aliases: dict[GVar, TensorId]) -> None:
        value = b.value
        if isinstance(b, MatchCast):
            self.match_cast(b, aliases)
        elif isinstance(value, If):
            self.if_binding(b, value, aliases)
        elif isinstance(value, PrimValue):
            var = Var(b.var.name, value.value.dtype)
            self.items.append(("let", var, self.prim(value.value)))
            self.prims[b.var] = var
        elif isinstance(value, GVar) and value in self.prims:
            self.prims[b.var] = self.prims[value]
        elif isinstance(value, (GVar, TupleGetItem, ShapeExpr, Tuple)):
            return  # an alias, a shape or a tuple of values: known where it is used
        elif isinstance(value, Constant):  # bound as written, or computed by fold-constants
            self.buffers[(b.var, 0)] = self.tensor(value, aliases)
        elif isinstance(value, GCall) and (value.op == "call_tir" or (
                value.op == "call_tir_inplace" and value.attrs.get(IN_PLACE))):
            self.call_tir(b, value, aliases)  # in place: no outputs, the argument's buffer
        elif isinstance(value, GCall) and value.op == "call_dps_packed":
            self.call_dps_packed(b, value, aliases)
        elif isinstance(value, GCall) and is_collective(value.op):
            self.collective(b, value, aliases)
        elif isinstance(value, GCall) and value.op == SIZE_CHECK:
            self.size_check(value)
        elif isinstance(value, GCall) and value.op == "print":
            lower_print(self, value, aliases)
        elif isinstance(value, GCall):
            raise self.error(f"R.{value.op} must be legalized first (run legalize-ops)", value)
        else:
            raise self.error(f"cannot lower a binding of {type(value).__name__}", b)

    def copy(self, tid: TensorId, out: Buffer) -> None:
        src = self.buffers[tid]
        tmp = Kernel("copy")
        tmp.compute(f"copy_{out.name}", out, lambda i: src.vload(*i))
        self.items.append(BlockNames(self.block_names).visit(tmp.stages[0]))


def _fold(items: list[Any]) -> Stmt:
    """Statements in order; a ("let"|"assert"|"alloc", ...) item scopes over what follows."""
    body: Stmt | None = None
    for item in reversed(items):
        if isinstance(item, Stmt):
            body = seq(item, body)
            continue
        rest = body if body is not None else seq()
        if item[0] == "let":
            body = LetStmt(item[1], item[2], rest)
        elif item[0] == "assert":
            body = AssertStmt(item[1], item[2], rest)
        else:
            body = Allocate(item[1], rest)
    return body if body is not None else seq()


def _complete(s: object) -> bool:
    """Whether `s` is a tensor type the entry can check: a known shape and dtype."""
    return isinstance(s, TensorSInfo) and s.shape is not None and s.dtype is not None


def _refined_params(func: Function) -> tuple[dict[GVar, TensorSInfo], set[GVar]]:
    """For each parameter of unknown shape or dtype (`R.Tensor`, `R.Tensor("float32")`,
    `R.Tensor(ndim=2)`, `R.Object`) that a top-level `R.match_cast` (itself or an alias of it)
    refines before any other use, the type the entry takes it with: the declared shape when
    there is one (it binds its sizes), else the cast's, and the dtype either gives. Also the
    variables of the match_casts whose whole check the entry makes then (the parameter had no
    shape of its own): those only name the parameter."""
    open_params = {p for p in func.params if isinstance(p.struct_info, (TensorSInfo, ObjectSInfo))
                   and not _complete(p.struct_info)}
    refined: dict[GVar, TensorSInfo] = {}
    casts: dict[GVar, GVar] = {}  # a parameter -> the match_cast the entry's checks make
    names: dict[GVar, GVar] = {p: p for p in open_params}  # a parameter or its alias -> it
    stopped: set[GVar] = set()  # parameters used otherwise first: left as declared
    for block in func.body.blocks:
        for b in block.bindings:
            value = getattr(b, "value", None)
            if isinstance(b, VarBinding) and isinstance(value, GVar) and value in names:
                names[b.var] = names[value]
                continue
            if isinstance(b, MatchCast) and isinstance(value, GVar) and value in names:
                p = names[value]
                if p not in refined and p not in stopped:
                    declared, cast = p.struct_info, b.struct_info
                    shape = getattr(declared, "shape", None)
                    dtype = getattr(declared, "dtype", None)
                    if isinstance(cast, TensorSInfo):
                        merged = TensorSInfo(shape if shape is not None else cast.shape,
                                             dtype if dtype is not None else cast.dtype,
                                             cast.ndim if shape is None else len(shape))
                        if _complete(merged):
                            refined[p] = merged
                            if shape is None:
                                casts[p] = b.var
                    stopped.add(p)
                continue
            stopped |= {names[v] for v in used_vars(value) if v in names}
    while True:  # a size only the body binds (a match_cast of a computed tensor) stays there
        bound = _entry_sizes(func, refined)
        unbound = [p for p, r in refined.items()
                   if any(v not in bound for v in shape_vars(r.shape or ()))]
        if not unbound:
            return refined, {casts[p] for p in refined if p in casts}
        for p in unbound:
            del refined[p]


def _entry_sizes(func: Function, refined: dict[GVar, TensorSInfo]) -> set[Var]:
    """The sizes the entry binds: whole dimensions of its tensors, `R.Prim(value=n)`."""
    found: set[Var] = set()
    for p in func.params:
        s = refined.get(p, p.struct_info)
        fields = s.fields if isinstance(s, TupleSInfo) else (s,)
        for f in fields:
            dims = getattr(f, "shape", None) or getattr(f, "values", None) or ()
            found |= {d for d in dims if isinstance(d, Var)}
            if isinstance(f, PrimSInfo) and isinstance(f.value, Var):
                found.add(f.value)
    return found


def _unknown_param_message(p: GVar) -> str:
    """Why parameter `p` cannot be an argument of the entry, and the annotations that would
    make it one."""
    s = p.struct_info
    if isinstance(s, (TensorSInfo, ObjectSInfo)):
        shape = getattr(s, "shape", None)
        dtype = getattr(s, "dtype", None)
        missing = " and ".join(w for w, gone in (("shape", shape is None),
                                                 ("dtype", dtype is None)) if gone)
        example = f'R.Tensor({shape_text(shape)}, "float32")' if shape is not None else \
            'R.Tensor((n, 4), "float32")'
        return (f"parameter '{p.name}' must be a tensor of known shape and dtype, not "
                f"{sinfo_text(s)} (its {missing} unknown): annotate it as a tensor with both, "
                f"such as {example}, or R.match_cast it to one before its first use")
    return f"parameter '{p.name}' must be a tensor of known shape and dtype, not {sinfo_text(s)}"


def lower_function(func: Function, mod: IRModule, asserts: bool = False
                   ) -> tuple[PrimFunc, set[str]]:
    """The host loop function of a graph function, and the kernels it inlined. `asserts`:
    its size checks are asserts scoping over the rest, for a GPU launch plan and the
    megakernels, which run checks only in that form (before any task)."""
    builder = _HostBuilder(_fields_returned(func), mod, asserts)
    return builder.build(), builder.callees


def _fields_returned(func: Function) -> Function:
    """`return gv` of a tuple-valued `gv` (R.split, a call_tir of several outputs, a tuple
    parameter), also inside a returned tuple, as the tuple of its fields, `return (gv[0],
    gv[1])`: one output per field."""
    def fields(value: GraphExpr) -> GraphExpr:
        if isinstance(value, Tuple):
            inner = tuple(fields(f) for f in value.fields)
            return value if all(a is b for a, b in zip(inner, value.fields)) else \
                dataclasses.replace(value, fields=inner)
        s = getattr(value, "struct_info", None)
        if not isinstance(value, GVar) or not isinstance(s, TupleSInfo):
            return value
        return Tuple(tuple(TupleGetItem(value, k, span=value.span)
                           for k in range(len(s.fields))), span=value.span)

    value = fields(func.body.body)
    if value is func.body.body:
        return func
    return dataclasses.replace(func, body=dataclasses.replace(func.body, body=value))


def _structure(value: GraphExpr, entries: Any) -> Any:
    """The returned value's structure over its results' entries (consumed in order)."""
    if isinstance(value, Tuple):
        return tuple(_structure(f, entries) for f in value.fields)
    return next(entries)
