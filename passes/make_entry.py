"""make-entry: the exported entry point `int32_t name(DLTensor **args, int32_t num_args)`.

The function's parameters are replaced by the DLTensor argument array. Before the original
body runs, the new body checks the argument count, then for every argument: not NULL, rank,
dtype, device (CPU), data not NULL; binds each symbolic size from its first occurrence in the
argument shapes; then checks every shape (`matmul: argument B: expected shape (1024, 1024), got
(1024, 1000)`), compactness (NULL strides or row-major ones), alignment of the data to the
element size, and that no output overlaps another argument. A failed check sets the message
`tirc_last_error()` returns and makes the function return -1. The original body runs inside
`T.attr(None, "tirc.compute_scope", 0)`, which the LLVM backend outlines with `noalias` pointers.
Scalar parameters are passed as 0-d tensors. A bare pointer parameter (`A: T.handle("float32")`
whose storage buffers of the body view, `T.decl_buffer((n,), data=A)`) is passed as a 1-d
compact tensor of the views' element dtype (kind "pointer"); besides the checks of a buffer,
the entry checks that it holds every view whose size the arguments determine. The signature
goes to `attrs["tirc.entry"]`.

A function that returns a value (`-> T.float32`) takes one more argument, a 0-d output tensor
of that dtype that its `return` writes (the signature's `result`). A function another loop
function calls directly (`Module.f(A.data, n)`) gets a plain internal form instead of, or
when it is public besides, its entry: `tirc.internal`, its buffer parameters taking data
pointers, compiled to a C function with pointer and scalar parameters (`f_direct` for a public
one, whose callers are renamed to it).
"""

from __future__ import annotations

from typing import Any, ClassVar

from tirc.ir import intrinsics as intrin
from tirc.ir.analysis.entry_signature import (
    CalleeAccess,
    callee_access,
    param_buffers,
    pointer_views,
    signature,
    tuple_format,
)
from tirc.ir.analysis.size_factor import other_factors
from tirc.ir.attrs import (
    COMPUTE_SCOPE,
    ENTRY,
    GLOBAL_SYMBOL,
    GRAPH_FUNC,
    SPARSE_PLAN,
    SPARSE_TENSORS,
)
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.dlpack import DEVICE_CPU, TYPE_CODES, dl_bits
from tirc.ir.dtype import DType, dtype
from tirc.ir.expr import (
    Call,
    IntImm,
    Not,
    PrimExpr,
    Select,
    StringImm,
    Var,
    binop,
    cast,
    if_then_else,
)
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.prim_call import INTERNAL, called_functions, rename_calls
from tirc.ir.stmt import (
    Allocate,
    AttrStmt,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    Stmt,
    seq,
)
from tirc.ir.visitor import Mutator, post_order_visit
from tirc.passes.pass_base import PassContext, PrimFuncPass

HANDLE = dtype("handle")
INT32 = dtype("int32")
INT64 = dtype("int64")
UINT64 = dtype("uint64")
BOOL = dtype("bool")

def elem_bytes(dt: DType) -> int:
    return dl_bits(dt) // 8 * dt.lanes


def _call(op: str, *args: PrimExpr, dt: DType = INT32) -> Call:
    return Call(op, tuple(args), dt)


def _check(cond: PrimExpr, fmt: str, *values: PrimExpr) -> Stmt:
    return Evaluate(_call(intrin.CHECK, cond, StringImm(fmt), *values))


def _all(conds: list[PrimExpr]) -> PrimExpr:
    out: PrimExpr = IntImm(1, BOOL)
    for c in conds:
        out = c if isinstance(out, IntImm) else binop("and", out, c)
    return out


def _any(conds: list[PrimExpr]) -> PrimExpr:
    out = conds[0]
    for c in conds[1:]:
        out = binop("or", out, c)
    return out


def is_entry(func: PrimFunc) -> bool:
    return ENTRY in func.attrs


@dataclass(frozen=True)
class MakeEntry(PrimFuncPass):
    """Turn each loop function into an exported entry point that checks its arguments."""

    name: ClassVar[str] = "make-entry"
    description: ClassVar[str] = ("exported entry points: unpack DLTensor arguments, bind "
                                  "symbolic shapes, check every argument before any access")

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        called: set[str] = set()
        for f in mod.functions.values():
            if isinstance(f, PrimFunc):
                called.update(called_functions(f.body))
        access = callee_access(mod.functions) if called else None
        funcs: dict[str, Any] = {}
        renames: dict[str, str] = {}
        for name, func in mod.functions.items():
            if not isinstance(func, PrimFunc) or is_entry(func) or INTERNAL in func.attrs:
                funcs[name] = func
            elif func.private and name in called:
                funcs[name] = make_internal(func, name)
            else:
                funcs[name] = make_entry(func, access)
                if name in called:
                    direct = f"{name}_direct"
                    while direct in mod.functions or direct in funcs:
                        direct += "_"
                    renames[name] = direct
                    funcs[direct] = make_internal(func, direct)
        if renames:
            funcs = {n: f.replace(body=rename_calls(f.body, renames))
                     if isinstance(f, PrimFunc) else f for n, f in funcs.items()}
        if all(funcs.get(n) is f for n, f in mod.functions.items()) and len(funcs) == len(
                mod.functions):
            return mod
        return mod.replace(functions=funcs)  # type: ignore[return-value]

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        return func if is_entry(func) else make_entry(func)


def make_internal(func: PrimFunc, name: str) -> PrimFunc:
    """The direct-call form of `func` (see the module docstring): buffer parameters become
    their data pointers, every size must be a scalar parameter."""
    params = set(func.params)
    originals = param_buffers(func)
    body = func.body
    for p in reversed(func.params):
        buf = func.buffer_map.get(p)
        if buf is None:
            continue
        for b in {buf, originals.get(p, buf)}:
            missing = [v for dim in (*b.shape, *b.strides) for v in _vars_of(dim)
                       if v not in params]
            if missing:
                raise CompileError(
                    f"make-entry: {func.name} is called directly, but the size "
                    f"'{missing[0].name}' of its buffer '{b.name}' is not a parameter: pass it "
                    "as a scalar parameter", b.span or func.span)
            if b.data is not p:
                body = LetStmt(b.data, p, body)
    attrs = {k: v for k, v in func.attrs.items() if k != GLOBAL_SYMBOL}
    attrs[INTERNAL] = True
    return PrimFunc(name, func.params, {}, body, attrs, private=True, span=func.span,
                    ret_dtype=func.ret_dtype)


class _StoreResult(Mutator):
    """`T.ret(v)` of an entry point: store `v` through the result tensor, then return 0."""

    def __init__(self, result: Buffer) -> None:
        self.result = result

    def visit_Evaluate(self, s: Evaluate) -> Stmt:
        v = s.value
        if isinstance(v, Call) and v.op == intrin.RET:
            return seq(BufferStore(self.result, v.args[0], (IntImm(0, INT32),), span=s.span),
                       Evaluate(_call(intrin.RET, IntImm(0, INT32)), span=s.span))
        return s


class _Builder:
    """Collects the entry's statements and bindings in order, then nests them."""

    def __init__(self) -> None:
        self.steps: list[tuple[Var, PrimExpr] | Stmt] = []

    def let(self, var: Var, value: PrimExpr) -> Var:
        self.steps.append((var, value))
        return var

    def add(self, stmt: Stmt) -> None:
        self.steps.append(stmt)

    def build(self, body: Stmt) -> Stmt:
        out = body
        for step in reversed(self.steps):
            if isinstance(step, tuple):
                out = LetStmt(step[0], step[1], out)
            else:
                out = seq(step, out)
        return out


def make_entry(func: PrimFunc, callees: CalleeAccess | None = None) -> PrimFunc:
    """The entry-point form of `func` (see the module docstring); `callees`: what the
    functions it calls directly read and write of their parameters."""
    symbol = str(func.attrs.get(GLOBAL_SYMBOL, func.name))
    buffers = param_buffers(func)
    args = Var("args", HANDLE)
    num_args = Var("num_args", INT32)
    out = _Builder()
    n = len(func.params) + (func.ret_dtype is not None)
    names = ", ".join([p.name for p in func.params] +
                      (["result"] if func.ret_dtype is not None else []))
    out.add(_check(binop("eq", num_args, IntImm(n, INT32)),
                   f"{symbol}: expected {n} argument{'s' if n != 1 else ''} ({names}), got %lld",
                   num_args))
    if n:
        out.add(_check(Not(_call(intrin.IS_NULL, args, dt=BOOL)),
                       f"{symbol}: the argument array is NULL"))
    handles: dict[Var, Var] = {}
    shapes: dict[Var, list[Var]] = {}
    bound: dict[Var, str] = {}
    views = pointer_views(func)
    pointers = _pointer_params(func, views)
    for i, p in enumerate(func.params):
        h = out.let(Var(f"{p.name}_handle", HANDLE), _call(intrin.ARG, args, IntImm(i),
                                                           dt=HANDLE))
        handles[p] = h
        prefix = f"{symbol}: argument {p.name}: "
        buf = buffers.get(p) or pointers.get(p)
        _check_header(out, h, prefix, buf.dtype if buf is not None else p.dtype,
                      buf.ndim if buf is not None else 0)
        if buf is None:
            out.let(p, _call(intrin.DL_SCALAR, h, dt=p.dtype))
            bound[p] = f"argument {p.name}"
        else:
            shapes[p] = [out.let(Var(f"{p.name}_shape{k}", INT64),
                                 _call(intrin.DL_SHAPE, h, IntImm(k), dt=INT64))
                         for k in range(buf.ndim)]
    tensors = {p: buffers.get(p) or pointers[p] for p in func.params
               if p in buffers or p in pointers}
    for p, buf in tensors.items():
        _refuse_fixed_offset(func, buf)
        _bind_symbols(out, buf, handles[p], shapes[p], p.name, bound)
    for p, buf in tensors.items():
        if func.attrs.get(GRAPH_FUNC):  # a graph function's `M * N` (loop functions: TVM's)
            _solve_factors(out, buf, shapes[p], bound, f"{symbol}: argument {p.name}: ")
    _check_unbound(func, buffers, bound)
    _check_offsets(out, tensors, bound, symbol)
    datas: dict[Var, Var] = {}
    for p, buf in tensors.items():
        datas[p] = _check_layout(out, buf, handles[p], shapes[p],
                                 f"{symbol}: argument {p.name}: ")
        flat = func.buffer_map.get(p)
        if flat is not None and flat.data is not buf.data:
            out.let(flat.data, datas[p])
    for p, view in pointers.items():
        _check_views_fit(out, view, views[p], bound, f"{symbol}: argument {p.name}: ")
    info = signature(func, symbol, bound, callees, pointers)
    _check_overlap(out, symbol, tensors, datas, info)
    compute = func.body
    if func.ret_dtype is not None:
        compute = _result(out, func, args, symbol)
        info["result"] = {"dtype": str(func.ret_dtype)}
    body = out.build(AttrStmt(None, COMPUTE_SCOPE, IntImm(0), compute))
    attrs = dict(func.attrs)
    attrs[GLOBAL_SYMBOL] = symbol
    if SPARSE_TENSORS in func.attrs:
        info["sparse_tensors"] = func.attrs[SPARSE_TENSORS]
    if SPARSE_PLAN in func.attrs:
        info["sparse_plan"] = func.attrs[SPARSE_PLAN]
    attrs[ENTRY] = info
    return PrimFunc(func.name, (args, num_args), {}, body, attrs, span=func.span)


def _result(out: _Builder, func: PrimFunc, args: Var, symbol: str) -> Stmt:
    """Check the trailing 0-d result tensor; the body with its returns storing into it."""
    assert func.ret_dtype is not None
    h = out.let(Var("result_handle", HANDLE),
                _call(intrin.ARG, args, IntImm(len(func.params)), dt=HANDLE))
    _check_header(out, h, f"{symbol}: result: ", func.ret_dtype, 0)
    data = out.let(Var("result_data", HANDLE), _call(intrin.DL_DATA, h, dt=HANDLE))
    result = Buffer("result", (IntImm(1, INT32),), func.ret_dtype, data)
    return _StoreResult(result).visit(func.body)


def _check_header(out: _Builder, h: Var, prefix: str, dt: DType, ndim: int) -> None:
    """NULL, rank, dtype, device, data and shape pointers of one argument, then its extents
    (none negative, the size in bytes within int64, before any extent is used as a size or
    bound to a symbolic variable): one `tirc.check_tensor`, whose shared function in the
    backend gives each failure its message."""
    elem = dt.element()
    out.add(Evaluate(Call(intrin.CHECK_TENSOR, (
        h, StringImm(prefix), StringImm(str(dt)), IntImm(ndim), IntImm(TYPE_CODES[elem.kind]),
        IntImm(dl_bits(elem)), IntImm(dt.lanes), IntImm(DEVICE_CPU),
        IntImm(elem_bytes(elem), INT64)), INT32)))


def _mul(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """a * b, folding constants (the entry's size arithmetic stays readable when printed)."""
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return IntImm(a.value * b.value, a.dtype)
    if isinstance(a, IntImm) and a.value == 1:
        return b
    if isinstance(b, IntImm) and b.value == 1:
        return a
    return binop("mul", a, b)


def _actual_stride(h: Var, shape: list[Var], k: int) -> PrimExpr:
    """The k-th stride in elements: from the strides array, or row-major when it is NULL."""
    compact: PrimExpr = IntImm(1, INT64)
    for dim in shape[k + 1:]:
        compact = _mul(compact, dim)
    return if_then_else(_call(intrin.DL_STRIDES_NULL, h, dt=BOOL), compact,
                        _call(intrin.DL_STRIDE, h, IntImm(k), dt=INT64))


def _bind_symbols(out: _Builder, buf: Buffer, h: Var, shape: list[Var], pname: str,
                  bound: dict[Var, str]) -> None:
    """Bind each still-unbound symbolic size that is a whole dimension (or stride) of `buf`."""
    for k, dim in enumerate(buf.shape):
        if isinstance(dim, Var) and dim not in bound:
            out.let(dim, cast(dim.dtype, shape[k]))
            bound[dim] = f"{pname}.shape[{k}]"
    for k, stride in enumerate(buf.strides):
        if isinstance(stride, Var) and stride not in bound:
            out.let(stride, cast(stride.dtype, _actual_stride(h, shape, k)))
            bound[stride] = f"{pname}.strides[{k}]"
    if isinstance(buf.elem_offset, Var) and buf.elem_offset not in bound:
        out.let(buf.elem_offset, IntImm(0, buf.elem_offset.dtype))
        bound[buf.elem_offset] = "0"


def _check_offsets(out: _Builder, tensors: dict[Var, Buffer], bound: dict[Var, str],
                   symbol: str) -> None:
    """A symbolic elem_offset that another argument sets (a scalar parameter, a dimension)
    must be 0: an argument's elements start at its data pointer, as the interpreter reads
    them (TVM checks the offset against the tensor's byte_offset in the same way)."""
    for p, buf in tensors.items():
        off = buf.elem_offset
        if isinstance(off, Var) and bound.get(off) != "0":
            out.add(_check(binop("eq", off, IntImm(0, off.dtype)),
                           f"{symbol}: argument {p.name}: elem_offset {off.name} is %lld, but "
                           "an argument's elements start at its data pointer (offset 0)",
                           cast(INT64, off)))


def _solve_factors(out: _Builder, buf: Buffer, shape: list[Var], bound: dict[Var, str],
                   prefix: str) -> None:
    """Bind a size that only a product dimension mentions (`M * N`, `M` bound): the
    dimension divided by the other factors, which must divide it exactly."""
    for k, d in enumerate(buf.shape):
        free = [v for v in _vars_of(d) if v not in bound]
        rest = other_factors(d, free[0]) if len(set(free)) == 1 else None
        if rest is None:
            continue
        v, divisor = free[0], cast(INT64, rest)
        safe = binop("max", divisor, IntImm(1, INT64))
        out.add(_check(binop("eq", binop("floormod", shape[k], safe), IntImm(0, INT64)),
                       prefix + f"dimension {k} (%lld) is not a multiple of %lld, so size "
                       f"'{v.name}' has no value", shape[k], divisor))
        out.let(v, cast(v.dtype, binop("floordiv", shape[k], safe)))
        bound[v] = f"{buf.name}.shape[{k}]"


def _refuse_fixed_offset(func: PrimFunc, buf: Buffer) -> None:
    """A buffer argument whose elem_offset is fixed (`elem_offset=2`) is an error: its
    elements start at the tensor's data, so the offset would be added twice and the function
    would read past the end of its argument (TVM requires byte_offset == 2 * the element
    size, which a DLTensor's first element cannot say here). A symbolic offset binds to 0."""
    off = buf.elem_offset
    if off is None or isinstance(off, Var) or (isinstance(off, IntImm) and off.value == 0):
        return
    raise CompileError(
        f"make-entry: {func.name} is exported, but its buffer parameter '{buf.name}' declares "
        f"a fixed elem_offset: an argument's elements start at its data pointer, so the "
        "offset would be added again and the function would read past the end of the "
        "argument; declare the parameter without elem_offset (or with a symbolic one, bound "
        "to 0) and view the storage at an offset with T.decl_buffer inside the function",
        buf.span or func.span)


def _pointer_params(func: PrimFunc, views: dict[Var, list[Buffer]]) -> dict[Var, Buffer]:
    """The 1-d tensor each bare pointer parameter is passed as: its length a fresh symbol,
    its element dtype the one every buffer viewing the pointer has."""
    out: dict[Var, Buffer] = {}
    for p, bufs in views.items():
        dts = sorted({str(b.dtype.element()) for b in bufs})
        if len(dts) != 1:
            seen = (f"viewed as {' and '.join(dts)}" if dts else "viewed by no buffer")
            raise CompileError(
                f"make-entry: {func.name} is exported, but its pointer parameter '{p.name}' is "
                f"{seen}, so the dtype of the tensor it takes is unknown: declare it "
                f"'{p.name}: T.Buffer(shape, dtype)', or make the function private=True "
                "and call it from another loop function", p.span or func.span)
        out[p] = Buffer(p.name, (Var(f"{p.name}_len", INT64),), dtype(dts[0]), p,
                        span=p.span)
    return out


def _check_views_fit(out: _Builder, view: Buffer, bufs: list[Buffer], bound: dict[Var, str],
                     prefix: str) -> None:
    """The tensor passed for a pointer holds every buffer viewing it whose extent (shape and
    offset) the arguments determine; a view sized by anything else is left to the body."""
    have = binop("mul", cast(INT64, view.shape[0]), IntImm(elem_bytes(view.dtype), INT64))
    for b in bufs:
        need: PrimExpr = IntImm(elem_bytes(b.dtype), INT64)
        for d in b.shape:
            need = _mul(need, cast(INT64, d))
        if b.elem_offset is not None and not (isinstance(b.elem_offset, IntImm)
                                              and b.elem_offset.value == 0):
            need = binop("add", need, _mul(cast(INT64, b.elem_offset),
                                           IntImm(elem_bytes(b.dtype), INT64)))
        if any(v not in bound for v in _vars_of(need)):
            continue
        out.add(_check(binop("le", need, have),
                       prefix + f"holds %lld bytes, but buffer '{b.name}' viewing it needs "
                       "%lld", have, need))


def _check_unbound(func: PrimFunc, buffers: dict[Var, Buffer], bound: dict[Var, str]) -> None:
    for buf in buffers.values():
        missing = [v for dim in (*buf.shape, *buf.strides) for v in _vars_of(dim)
                   if v not in bound]
        if missing:
            raise CompileError(
                f"make-entry: {func.name}: symbolic size '{missing[0].name}' of buffer "
                f"'{buf.name}' is not a whole dimension of any parameter, so its value "
                "cannot be read from the arguments", buf.span or func.span)


def _vars_of(e: PrimExpr) -> list[Var]:
    found: list[Var] = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, Var) else None)
    return found


def _check_layout(out: _Builder, buf: Buffer, h: Var, shape: list[Var], prefix: str) -> Var:
    """Shape, compactness and alignment of a buffer argument; binds and returns its data."""
    nd = buf.ndim
    if nd:
        expected = [cast(INT64, d) for d in buf.shape]
        got = list(shape)
        out.add(_check(_all([binop("eq", g, e) for g, e in zip(got, expected)]),
                       prefix + f"expected shape {tuple_format(nd)}, got {tuple_format(nd)}",
                       *expected, *got))
        strides = [cast(INT64, s) for s in buf.strides] if buf.strides else None
        conds = []
        for k in range(nd):
            want = strides[k] if strides is not None else _compact(buf, k)
            same = binop("eq", _call(intrin.DL_STRIDE, h, IntImm(k), dt=INT64), want)
            conds.append(same if strides is not None else
                         binop("or", binop("eq", shape[k], IntImm(1, INT64)), same))
        if strides is not None:
            ok: PrimExpr = if_then_else(_call(intrin.DL_STRIDES_NULL, h, dt=BOOL),
                                        _all([binop("eq", _compact(buf, k), strides[k])
                                              for k in range(nd)]), _all(conds))
            what = f"expected strides {tuple_format(nd)}"
            values = [*strides]
        else:
            ok = if_then_else(_call(intrin.DL_STRIDES_NULL, h, dt=BOOL), IntImm(1, BOOL),
                              _all(conds))
            what = "expected a compact row-major (C-contiguous) tensor"
            values = []
        actual = [_actual_stride(h, shape, k) for k in range(nd)]
        out.add(_check(ok, prefix + what + f", got strides {tuple_format(nd)}", *values,
                       *actual))
    data = out.let(buf.data, _call(intrin.DL_DATA, h, dt=HANDLE))
    align = elem_bytes(buf.dtype.element())
    if align > 1:
        address = _call(intrin.ADDRESS, data, dt=UINT64)
        out.add(_check(binop("eq", binop("floormod", address, IntImm(align, UINT64)),
                             IntImm(0, UINT64)),
                       prefix + f"data address 0x%llx is not aligned to {align} bytes "
                       f"(the size of {buf.dtype.element()})", address))
    return data


def _compact(buf: Buffer, k: int) -> PrimExpr:
    """The row-major stride of dimension k, from the (already checked) shape."""
    out: PrimExpr = IntImm(1, INT64)
    for d in buf.shape[k + 1:]:
        out = _mul(out, cast(INT64, d))
    return out


# Above this many (output, argument) pairs the overlap check is a loop over two arrays of
# addresses instead of one inline check per pair, whose code grows with the square of the
# argument count (a decomposed sparse format's plan has 120 outputs: 7,000 checks, most of
# its compile time).
INLINE_OVERLAP_PAIRS = 64


def _check_overlap(out: _Builder, symbol: str, buffers: dict[Var, Buffer],
                   datas: dict[Var, Var], info: dict) -> None:
    """No output may share memory with another argument (their pointers are noalias)."""
    outputs = {p["name"] for p in info["params"] if p.get("output")}
    params = list(buffers)
    is_out = [p.name in outputs for p in params]
    pairs = sum(1 for i in range(len(params)) if is_out[i] for j in range(len(params))
                if j != i and not (is_out[j] and j < i))
    if pairs > INLINE_OVERLAP_PAIRS:
        out.add(_overlap_loop(symbol, params, is_out,
                              [_extent(buffers[p], datas[p]) for p in params]))
        return
    for p in params:
        if p.name not in outputs:
            continue
        for q in params:
            if q is p or (q.name in outputs and params.index(q) < params.index(p)):
                continue
            sp, ep = _extent(buffers[p], datas[p])
            sq, eq = _extent(buffers[q], datas[q])
            disjoint = _any([binop("le", ep, sq), binop("le", eq, sp),
                             binop("eq", sp, ep), binop("eq", sq, eq)])
            out.add(_check(disjoint, f"{symbol}: argument {p.name} (an output) overlaps "
                           f"argument {q.name} in memory"))


def _overlap_loop(symbol: str, params: list[Var], is_output: list[bool],
                  extents: list[tuple[PrimExpr, PrimExpr]]) -> Stmt:
    """The checks of _check_overlap as loops: the arguments' address ranges in stack arrays,
    the first overlapping (output, argument) pair, in the inline checks' order, named in the
    message."""
    n = IntImm(len(params), INT32)
    lo = Buffer("overlap_lo", (n,), UINT64, Var("overlap_lo", HANDLE))
    hi = Buffer("overlap_hi", (n,), UINT64, Var("overlap_hi", HANDLE))
    outs = Buffer("overlap_out", (n,), INT32, Var("overlap_out", HANDLE))
    bad = Buffer("overlap_bad", (IntImm(2, INT32),), INT32, Var("overlap_bad", HANDLE))
    fill: list[Stmt] = []
    for k, ((start, end), output) in enumerate(zip(extents, is_output)):
        at = (IntImm(k, INT32),)
        fill += [BufferStore(lo, start, at), BufferStore(hi, end, at),
                 BufferStore(outs, IntImm(int(output), INT32), at)]
    zero, none = IntImm(0, INT32), IntImm(-1, INT32)
    fill += [BufferStore(bad, none, (zero,)), BufferStore(bad, none, (IntImm(1, INT32),))]
    p, q = Var("p", INT32), Var("q", INT32)
    disjoint = _any([binop("le", hi.vload(p), lo.vload(q)), binop("le", hi.vload(q), lo.vload(p)),
                     binop("eq", lo.vload(p), hi.vload(p)), binop("eq", lo.vload(q), hi.vload(q))])
    wanted = _all([binop("ne", q, p), binop("or", binop("eq", outs.vload(q), zero),
                                          binop("gt", q, p)),
                   binop("lt", bad.vload(zero), zero), Not(disjoint)])
    record = seq(BufferStore(bad, p, (zero,)), BufferStore(bad, q, (IntImm(1, INT32),)))
    inner = For(q, zero, n, ForKind.SERIAL, IfThenElse(wanted, record))
    scan = For(p, zero, n, ForKind.SERIAL,
               IfThenElse(binop("ne", outs.vload(p), zero), inner))

    def name(k: PrimExpr) -> PrimExpr:
        chosen: PrimExpr = StringImm(params[-1].name)
        for j in range(len(params) - 2, -1, -1):
            chosen = Select(binop("eq", k, IntImm(j, INT32)), StringImm(params[j].name), chosen,
                            HANDLE)
        return chosen

    check = _check(binop("lt", bad.vload(zero), zero),
                   f"{symbol}: argument %s (an output) overlaps argument %s in memory",
                   name(bad.vload(zero)), name(bad.vload(IntImm(1, INT32))))
    body: Stmt = seq(*fill, scan, check)
    for buf in (bad, outs, hi, lo):
        body = Allocate(buf, body)
    return body


def _extent(buf: Buffer, data: Var) -> tuple[PrimExpr, PrimExpr]:
    start = _call(intrin.ADDRESS, data, dt=UINT64)
    size: PrimExpr = IntImm(elem_bytes(buf.dtype), UINT64)
    for d in buf.shape:
        size = _mul(size, cast(UINT64, d))
    return start, binop("add", start, size)
