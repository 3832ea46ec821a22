"""Kernel: builds the block-based loop function that legalizes one graph operator.

A small tensor-expression layer in the spirit of TVM's `te.compute`: declare input and output
buffers from graph struct info (symbolic sizes become the kernel's own `T.int64()` variables),
add spatial stages (`compute`) and reduction stages (`reduce`), then `build` the PrimFunc:
every stage is a loop nest around one `T.block` with its iteration variables, read and write
regions and, for reductions, an `init`; temporaries are allocated in the root block.

A size that is no whole dimension of any parameter buffer (only `n * 2` appears, say) cannot be
bound from the buffers; it becomes a scalar parameter, given by `call_tir`'s `tir_vars`. An
`R.Prim` operand that is not a constant (`scalar_operand`) is a scalar parameter before those,
passed among the call's arguments.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import Any

from tirc.ir.arith import can_prove
from tirc.ir.attrs import NOALIAS
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.dtype import BOOL, HANDLE, DType
from tirc.ir.expr import (
    BufferLoad,
    FloatImm,
    IntImm,
    PrimExpr,
    Var,
    binop,
    cast,
    const,
    select,
)
from tirc.ir.function import PrimFunc
from tirc.ir.graph import Constant, GraphExpr, PrimValue, TensorSInfo
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.ops.sinfo_util import INT64, const_dim, dim, shape_vars
from tirc.ir.stmt import (
    Block,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    IterKind,
    IterVar,
    Stmt,
    seq,
)
from tirc.ir.visitor import post_order_visit, substitute

TRUE = IntImm(1, BOOL)
ONE = IntImm(1, INT64)
ZERO = IntImm(0, INT64)

Indices = tuple[PrimExpr, ...]
COMBINE: dict[str, Callable[[PrimExpr, PrimExpr], PrimExpr]] = {
    "add": lambda a, b: binop("add", a, b),
    "mul": lambda a, b: binop("mul", a, b),
    "max": lambda a, b: binop("max", a, b),
    "min": lambda a, b: binop("min", a, b),
}


@dataclass
class Kernel:
    """The buffers and stages of one legalized loop function under construction."""

    name: str
    inputs: list[Buffer] = field(default_factory=list)
    outputs: list[Buffer] = field(default_factory=list)
    temps: list[Buffer] = field(default_factory=list)
    stages: list[Stmt] = field(default_factory=list)
    sizes: dict[Var, Var] = field(default_factory=dict)
    args: list[GraphExpr] = field(default_factory=list)
    scalar_args: list[Var] = field(default_factory=list)  # R.Prim arguments, in order
    used_sizes: list[Var] = field(default_factory=list)  # sizes the stages read (size_value)

    # ---- buffers -------------------------------------------------------------------------

    def dims(self, shape: Sequence[PrimExpr]) -> Indices:
        """Graph-level dimensions rewritten over the kernel's own size variables."""
        for v in shape_vars(shape):
            if v not in self.sizes:
                self.sizes[v] = Var(v.name, INT64)
        return tuple(dim(substitute(d, self.sizes)) for d in shape)

    def size_value(self, e: PrimExpr) -> PrimExpr:
        """A graph-level integer expression over the symbolic sizes (R.arange's symbolic
        bound), rewritten over the kernel's size variables; each is bound from a buffer's
        shape where one has it, else a scalar parameter, even where no shape mentions it."""
        out = self.dims((e,))[0]
        for v in shape_vars((e,)):
            if self.sizes[v] not in self.used_sizes:
                self.used_sizes.append(self.sizes[v])
        return out

    def _buffer(self, name: str, shape: Indices, dt: DType) -> Buffer:
        return Buffer(name=name, shape=shape, dtype=dt, data=Var(name, HANDLE))

    def input(self, name: str, arg: GraphExpr, sinfo: TensorSInfo) -> Buffer:
        """A parameter buffer for the tensor argument `arg` of the call."""
        assert sinfo.shape is not None and sinfo.dtype is not None
        buf = self._buffer(name, self.dims(sinfo.shape), sinfo.dtype)
        self.inputs.append(buf)
        self.args.append(arg)
        return buf

    def operand(self, name: str, arg: GraphExpr, sinfo: TensorSInfo) -> Operand:
        """An elementwise operand: a scalar constant is folded in, anything else is an input."""
        assert sinfo.shape is not None and sinfo.dtype is not None
        if isinstance(arg, Constant) and not isinstance(arg.value, tuple):
            return Operand(None, const(arg.value, arg.dtype), ())
        buf = self.input(name, arg, sinfo)
        return Operand(buf, None, buf.shape)

    def scalar_operand(self, name: str, arg: GraphExpr, dt: DType) -> Operand:
        """An elementwise operand that is an `R.Prim` scalar: a constant is folded in, anything
        else is a scalar parameter (before the sizes, as R.call_tir fills them)."""
        value = arg.value if isinstance(arg, PrimValue) else None
        if isinstance(value, (IntImm, FloatImm)):
            return Operand(None, cast(dt, value), ())
        var = Var(name, dt)
        self.scalar_args.append(var)
        self.args.append(arg)
        return Operand(None, var, ())

    def output(self, name: str, sinfo: TensorSInfo) -> Buffer:
        """A parameter buffer for a result (destination-passing style)."""
        assert sinfo.shape is not None and sinfo.dtype is not None
        buf = self._buffer(name, self.dims(sinfo.shape), sinfo.dtype)
        self.outputs.append(buf)
        return buf

    def temp(self, name: str, shape: Indices, dt: DType) -> Buffer:
        """An intermediate buffer, allocated in the root block."""
        buf = self._buffer(name, shape, dt)
        self.temps.append(buf)
        return buf

    # ---- stages --------------------------------------------------------------------------

    def compute(self, name: str, out: Buffer, fn: Callable[[Indices], PrimExpr]) -> None:
        """`out[i...] = fn(i...)` over the whole of `out`."""
        loops = [Var(f"i{k}", INT64) for k in range(out.ndim)]
        ivars = [Var(f"v_i{k}", INT64) for k in range(out.ndim)]
        value = fn(tuple(ivars))
        self._stage(name, out, loops, ivars, [IterKind.SPATIAL] * out.ndim,
                    list(out.shape), BufferStore(out, _as(value, out.dtype), tuple(ivars)), None)

    def reduce(self, name: str, out: Buffer, extents: Sequence[PrimExpr], combine: str,
               init: PrimExpr, fn: Callable[[Indices, Indices], PrimExpr]) -> None:
        """`out[i...] = combine over k... of fn(i..., k...)`, starting from `init`. Where an
        extent may be 0, the reduction writes a temporary and a stage `<name>_or_init` copies
        it to `out`, or `init` when the domain is empty: the block's init runs at its first
        reduction point, so it would never run, and an empty sum is still 0 (at every `-O`
        level; a second block writing `out` would keep the rules from scheduling the
        reduction, an elementwise epilogue does not)."""
        maybe_empty = [dim(e) for e in extents if not can_prove(binop("gt", dim(e), ZERO))]
        if not maybe_empty:
            self._reduce_into(name, out, extents, combine, init, fn)
            return
        acc = self.temp(f"{out.name}_acc", out.shape, out.dtype)
        self._reduce_into(name, acc, extents, combine, init, fn)
        empty = functools.reduce(lambda a, b: binop("or", a, b),
                                 [binop("eq", e, ZERO) for e in maybe_empty])
        self.compute(f"{name}_or_init", out, lambda i: select(
            empty, _as(init, out.dtype), BufferLoad(acc, i, acc.dtype)))

    def _reduce_into(self, name: str, out: Buffer, extents: Sequence[PrimExpr], combine: str,
                     init: PrimExpr, fn: Callable[[Indices, Indices], PrimExpr]) -> None:
        """The reduction block itself (its init runs at its first reduction point)."""
        s_loops = [Var(f"i{k}", INT64) for k in range(out.ndim)]
        r_loops = [Var(f"k{k}", INT64) for k in range(len(extents))]
        s_vars = [Var(f"v_i{k}", INT64) for k in range(out.ndim)]
        r_vars = [Var(f"v_k{k}", INT64) for k in range(len(extents))]
        value = _as(fn(tuple(s_vars), tuple(r_vars)), out.dtype)
        acc = BufferLoad(out, tuple(s_vars), out.dtype)
        body = BufferStore(out, COMBINE[combine](acc, value), tuple(s_vars))
        init_stmt = BufferStore(out, _as(init, out.dtype), tuple(s_vars))
        kinds = [IterKind.SPATIAL] * out.ndim + [IterKind.REDUCE] * len(extents)
        self._stage(name, out, s_loops + r_loops, s_vars + r_vars, kinds,
                    list(out.shape) + [dim(e) for e in extents], body, init_stmt)

    def _stage(self, name: str, out: Buffer, loops: list[Var], ivars: list[Var],
               kinds: list[IterKind], extents: list[PrimExpr], body: BufferStore,
               init: Stmt | None) -> None:
        iters = tuple(IterVar(v, Range(ZERO, e), k) for v, e, k in zip(ivars, extents, kinds))
        write = BufferRegion(out, tuple(point(i) for i in body.indices))
        reads = read_regions(body.value, exclude=out if init is not None else None)
        block = Block(name, iters, reads, (write,), body, init)
        stmt: Stmt = BlockRealize(tuple(loops), TRUE, block)
        for v, e in reversed(list(zip(loops, extents))):
            stmt = For(v, ZERO, e, ForKind.SERIAL, stmt)
        self.stages.append(stmt)

    # ---- the function --------------------------------------------------------------------

    def build(self, handle_prefix: str = "var_", scalar_sizes: Sequence[Var] = ()
              ) -> tuple[PrimFunc, list[PrimExpr]]:
        """The loop function, and the graph-level values of its scalar size parameters;
        handle parameters are named `handle_prefix` + the buffer's name. The graph sizes
        `scalar_sizes` are scalar parameters even where a buffer's shape could bind them."""
        buffers = self.inputs + self.outputs
        forced = [self.sizes[v] for v in scalar_sizes]
        bare = {d for b in buffers for d in b.shape if isinstance(d, Var)} - set(forced)
        inverse = {k: g for g, k in self.sizes.items()}
        scalars = forced + [v for v in shape_vars(*[b.shape for b in buffers + self.temps])
                            if v not in bare and v not in forced]
        scalars += [v for v in self.used_sizes if v not in bare and v not in scalars]
        handles = [Var(f"{handle_prefix}{b.name}", HANDLE) for b in buffers]
        root = Block("root", (), (), (), seq(*self.stages), alloc_buffers=tuple(self.temps))
        func = PrimFunc(self.name, (*handles, *self.scalar_args, *scalars),
                        dict(zip(handles, buffers)),
                        BlockRealize((), TRUE, root), {NOALIAS: True})
        return func, [inverse[v] for v in scalars]


def constant_at(c: Constant, indices: Sequence[PrimExpr]) -> PrimExpr:
    """The element of the constant `c` at `indices`: a chain of selects over each index (a
    tensor constant is small; a scalar is its value)."""
    def at(value: Any, k: int) -> PrimExpr:
        if not isinstance(value, tuple):
            return const(value, c.dtype)
        out = at(value[-1], k + 1)
        for j in range(len(value) - 2, -1, -1):
            out = select(binop("eq", indices[k], IntImm(j, indices[k].dtype)),
                         at(value[j], k + 1), out)
        return out
    return at(c.value, 0)


@dataclass(frozen=True)
class Operand:
    """A tensor read by a stage: a buffer, or a constant that every index reads."""

    buffer: Buffer | None
    value: PrimExpr | None
    shape: Indices

    @staticmethod
    def of(buf: Buffer) -> Operand:
        return Operand(buf, None, buf.shape)

    def __call__(self, *indices: PrimExpr) -> PrimExpr:
        if self.buffer is None:
            assert self.value is not None
            return self.value
        return BufferLoad(self.buffer, tuple(indices), self.buffer.dtype)

    def at(self, out_indices: Indices, out_shape: Indices) -> PrimExpr:
        """The element that NumPy broadcasting pairs with `out[out_indices]`."""
        return self(*broadcast_indices(out_indices, self.shape, out_shape))

    @property
    def dtype(self) -> DType:
        return self.buffer.dtype if self.buffer is not None else self.value.dtype  # type: ignore[union-attr]


def broadcast_indices(out_idx: Indices, shape: Indices, out_shape: Indices) -> Indices:
    """Indices into a tensor of `shape` broadcast to `out_shape` (a size-1 axis reads 0)."""
    lead = len(out_shape) - len(shape)
    out = []
    for k, d in enumerate(shape):
        o = out_shape[lead + k]
        out.append(ZERO if (const_dim(d) == 1 and const_dim(o) != 1) else out_idx[lead + k])
    return tuple(out)


def point(index: PrimExpr) -> Range:
    """The one-element range at `index` (in its dtype, as the printer and parser agree)."""
    return Range(index, IntImm(1, index.dtype))


def _as(value: PrimExpr, dt: DType) -> PrimExpr:
    return cast(dt, value) if value.dtype != dt else value


def read_regions(value: PrimExpr, exclude: Buffer | None = None) -> tuple[BufferRegion, ...]:
    """The regions a block reads: each loaded point, or a whole dimension where loads differ."""
    loads: dict[Buffer, list[Indices]] = {}

    def visit(n: object) -> None:
        if isinstance(n, BufferLoad) and n.buffer is not exclude:
            seen = loads.setdefault(n.buffer, [])
            if n.indices not in seen:
                seen.append(n.indices)

    post_order_visit(value, visit)
    regions = []
    for buf, all_idx in loads.items():
        ranges = []
        for axis, first in enumerate(all_idx[0]):
            if all(idx[axis] == first for idx in all_idx):
                ranges.append(point(first))
            else:
                ranges.append(Range(ZERO, buf.shape[axis]))
        regions.append(BufferRegion(buf, tuple(ranges)))
    return tuple(regions)


def limit(dt: DType, highest: bool) -> PrimExpr:
    """The largest (or lowest) finite value of a dtype: the init of max and min reductions."""
    import numpy as np

    if dt.is_float:
        info = np.finfo(np.dtype(dt.numpy_name()) if dt.kind != "bfloat" else np.float32)
        return const(float(info.max if highest else info.min), dt)
    if dt.is_bool:
        return const(1 if highest else 0, dt)
    iinfo = np.iinfo(np.dtype(dt.numpy_name()))
    return const(int(iinfo.max if highest else iinfo.min), dt)
