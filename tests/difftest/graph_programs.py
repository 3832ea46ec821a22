"""A seeded generator of random valid graph functions (Relax-like), built with GraphBuilder.

A program is a chain of two to six bindings over the operators tirc legalizes: elementwise
arithmetic with broadcasting, unary math (rounding, trigonometric and hyperbolic functions,
atan2, float predicates), comparisons combined by logical operators into casts and `where`,
bucketize, integer bitwise operators, shifts and remainders, `clip`, matmul and einsum, the nn
operators (relu, relu6, gelu, gelu_tanh, silu, leakyrelu, softplus, selu, prelu, softmax,
log_softmax, layer_norm, rms_norm, batch_norm, convolution and pooling, transposed convolution,
attention, dropout), `image.resize2d` (bicubic too) and `image.resize3d`, reductions with and
without keepdims (argmax, argmin, variance and std among them), topk, and the shape operators
(reshape, flatten, permute_dims, expand_dims, squeeze, concat, split, take, broadcast_to, flip,
tile, repeat, strided_slice, pad, cumsum, cumprod, tril, triu, collapse_sum_like and
collapse_sum_to, scatter_elements with every reduction and negative indices, gather_elements,
gather_nd, one_hot, scatter_nd, index_tensor, slice_scatter, pixel_shuffle, layout_transform)
with creation operators (zeros, ones, full and their `_like` forms) as operands, `arange` as
take's indices, group_norm and instance_norm, and the losses nll_loss and
cross_entropy_with_logits.
The first dimension may be symbolic (`"n"`). Each value carries an interval of what it can
hold, so that log, sqrt, rsqrt, divide and power get only arguments in their domain, exp no
overflow, and only exact values reach casts to int and comparisons.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import numpy as np
from tirc.ir import Constant, IntImm, PrimExpr, ShapeExpr, Tuple, TupleGetItem, Var
from tirc.ir.dtype import dtype
from tirc.ir.expr import FloatImm, binop
from tirc.ir.graph import GVar, PrimValue
from tirc.ir.ops.builder import GraphBuilder
from tirc.ir.schedule import SchedLambda

from difftest.harness import Program
from difftest.values import Info, random_input

I64 = dtype("int64")
EXTENTS = (1, 2, 3, 4, 6, 8)
SYMBOLIC_VALUES = (1, 2, 5, 9)


@dataclass(frozen=True)
class Val:
    """A graph value: its variable, its dims (expression and run-time value), dtype, the
    interval [lo, hi] holding its elements, and whether it is exact (see difftest.values)."""

    var: GVar
    dims: tuple[tuple[PrimExpr, int], ...]
    dt: str
    lo: float
    hi: float
    exact: bool

    @property
    def shape(self) -> tuple[PrimExpr, ...]:
        return tuple(d for d, _ in self.dims)

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(v for _, v in self.dims)

    @property
    def mag(self) -> float:
        return max(abs(self.lo), abs(self.hi))

    def info(self) -> Info:
        return Info(self.dt, self.mag, 3 if self.exact else 0, not self.exact)


def _dim(value: int) -> tuple[PrimExpr, int]:
    return IntImm(value, I64), value


def _interval(op: str, a: Val, b: Val) -> tuple[float, float]:
    if op == "add":
        return a.lo + b.lo, a.hi + b.hi
    if op == "subtract":
        return a.lo - b.hi, a.hi - b.lo
    if op == "multiply":
        corners = [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
        return min(corners), max(corners)
    if op == "maximum":
        return max(a.lo, b.lo), max(a.hi, b.hi)
    return min(a.lo, b.lo), min(a.hi, b.hi)


class _Gen:
    """The state of one graph program being generated."""

    def __init__(self, seed: int, name: str) -> None:
        self.rng = random.Random(seed)
        self.name = name
        self.gb = GraphBuilder()
        self.n: tuple[PrimExpr, int] | None = None
        if self.rng.random() < 0.5:
            self.n = (self.gb.sym("n"), self.rng.choice(SYMBOLIC_VALUES))
        self.vals: list[Val] = []
        self.params: list[tuple[str, tuple[int, ...], str, int | None]] = []
        self.params_dims: list[tuple[str, tuple, str, int | None]] = []
        self.fails = False  # a stage of difftest.graph_casts made a run-time check fail

    # ---- parameters and constants ----------------------------------------------------

    def shape(self, rank: int) -> tuple[tuple[PrimExpr, int], ...]:
        dims = [_dim(self.rng.choice(EXTENTS)) for _ in range(rank)]
        if self.n is not None and self.rng.random() < 0.7:
            dims[0] = self.n
        return tuple(dims)

    def param(self, dims: tuple[tuple[PrimExpr, int], ...], dt: str = "float32",
              index_range: int | None = None) -> Val:
        name = f"p{len(self.params)}"
        var = self.gb.param(name, tuple(d for d, _ in dims), dt)
        self.params.append((name, tuple(v for _, v in dims), dt, index_range))
        self.params_dims.append((name, dims, dt, index_range))
        lo, hi = (-4.0, 4.0) if dt != "int32" else (-8.0, 8.0)
        if index_range is not None:
            lo, hi = float(min(index_range, 0)), float(abs(index_range) - 1)
        val = Val(var, dims, dt, lo, hi, True)
        if index_range is None:
            self.vals.append(val)
        return val

    def pick(self, dt: str = "float32", rank: int | None = None) -> Val:
        fit = [v for v in self.vals if v.dt == dt and
               (len(v.dims) == rank if rank is not None else len(v.dims) >= 1)]
        if fit and self.rng.random() < 0.8:
            return self.rng.choice(fit[-3:])
        return self.param(self.shape(rank or self.rng.choice((1, 2, 2, 3))), dt)

    def emit(self, op: Any, *args: Any, dims: tuple[tuple[PrimExpr, int], ...], dt: str,
             lo: float, hi: float, exact: bool, **attrs: Any) -> Val:
        var = self.gb.emit(op, *args, **attrs)
        val = Val(var, dims, dt, lo, hi, exact and max(abs(lo), abs(hi)) < 1e4)
        self.vals.append(val)
        return val

    def partner(self, a: Val) -> Val:
        """A value that broadcasts against `a`: same shape, a suffix, or ones in places."""
        same = [v for v in self.vals if v.dt == a.dt and v.dims == a.dims and v is not a]
        r = self.rng.random()
        if same and r < 0.4:
            return self.rng.choice(same)
        if r < 0.6 and len(a.dims) > 1:
            return self.param(a.dims[1:], a.dt)
        if r < 0.75:
            dims = tuple(_dim(1) if self.rng.random() < 0.5 else d for d in a.dims)
            return self.param(dims, a.dt)
        if r < 0.85:
            c = self.rng.choice((0.5, 1.0, 2.0, -1.5) if a.dt != "int32" else (1, 2, -3))
            like = self.rng.random() < 0.4  # the `_like` forms take a's shape and dtype
            if self.rng.random() < 0.3:
                op, c = ("ones", 1) if self.rng.random() < 0.5 else ("zeros", 0)
                if like:
                    return self.emit(f"{op}_like", a.var, dims=a.dims, dt=a.dt, lo=c, hi=c,
                                     exact=True)
                return self.emit(op, ShapeExpr(a.shape), dims=a.dims, dt=a.dt, lo=c, hi=c,
                                 exact=True, dtype=dtype(a.dt))
            if like:
                return self.emit("full_like", a.var, Constant(c, dtype(a.dt)), dims=a.dims,
                                 dt=a.dt, lo=c, hi=c, exact=True)
            return self.emit("full", ShapeExpr(a.shape), Constant(c, dtype(a.dt)), dims=a.dims,
                             dt=a.dt, lo=c, hi=c, exact=True)
        return self.param(a.dims, a.dt)

    # ---- operators -------------------------------------------------------------------

    def step(self) -> None:
        op = self.rng.choice((
            "binary", "binary", "binary", "unary", "unary", "matmul", "nn", "nn", "reduce",
            "reduce",
            "reshape", "permute", "expand_squeeze", "concat", "split", "take", "broadcast",
            "cast", "compare", "divide", "power", "more_unary", "bits", "logical", "clip",
            "remainder", "window", "rearrange", "batch_norm", "activation", "attention",
            "upsample", "collapse", "group_norm", "scatter", "loss"))
        getattr(self, "op_" + op)()

    def op_binary(self) -> None:
        a = self.pick(self.rng.choice(("float32",) * 4 + ("int32",)))
        b = self.partner(a)
        op = self.rng.choice(("add", "subtract", "multiply", "maximum", "minimum"))
        lo, hi = _interval(op, a, b)
        if max(abs(lo), abs(hi)) > 1e4:
            op = "maximum"
            lo, hi = _interval(op, a, b)
        self.emit(op, a.var, b.var, dims=_broadcast(a.dims, b.dims), dt=a.dt, lo=lo, hi=hi,
                  exact=a.exact and b.exact)

    def op_unary(self) -> None:
        a = self.pick()
        choices = ["negative", "abs", "tanh", "sigmoid", "nn.relu", "nn.relu6", "nn.gelu",
                   "nn.gelu_tanh", "nn.silu"]
        if a.hi <= 6:
            choices.append("exp")
        if a.lo >= 0.01:
            choices += ["log", "rsqrt"]
        if a.lo >= 0:
            choices.append("sqrt")
        op = self.rng.choice(choices)
        if a.lo >= 0.01 and self.rng.random() < 0.5:
            op = self.rng.choice(("log", "rsqrt", "sqrt"))
        lo, hi, exact = _unary_range(op, a)
        self.emit(op, a.var, dims=a.dims, dt="float32", lo=lo, hi=hi, exact=exact)

    def op_matmul(self) -> None:
        a = self.pick(self.rng.choice(("float32", "float32", "int32")),
                      rank=self.rng.choice((2, 2, 3)))
        k = a.dims[-1]
        n = _dim(self.rng.choice(EXTENTS))
        b = self.param((k, n), a.dt)
        bound = a.mag * b.mag * k[1]
        if bound > 1e4:
            return self.op_binary()
        if self.rng.random() < 0.25:  # the same product as an einsum, its result transposed
            lead = "abc"[:len(a.dims) - 1]
            self.emit("einsum", Tuple((a.var, b.var)), dims=(n,) + a.dims[:-1], dt=a.dt,
                      lo=-bound, hi=bound, exact=a.exact and b.exact,
                      subscripts=f"{lead}k,kn->n{lead}")
            return
        self.emit("matmul", a.var, b.var, dims=a.dims[:-1] + (n,), dt=a.dt, lo=-bound,
                  hi=bound, exact=a.exact and b.exact)

    def op_nn(self) -> None:
        a = self.pick()
        last = a.dims[-1]
        kind = self.rng.choice(("nn.softmax", "nn.log_softmax", "nn.layer_norm", "nn.rms_norm"))
        if kind == "nn.softmax":
            self.emit(kind, a.var, dims=a.dims, dt="float32", lo=0.0, hi=1.0, exact=False,
                      axis=-1)
        elif kind == "nn.log_softmax":
            span = a.hi - a.lo + math.log(max(last[1], 1))
            self.emit(kind, a.var, dims=a.dims, dt="float32", lo=-span - 1, hi=0.0, exact=False,
                      axis=-1)
        elif kind == "nn.layer_norm":
            gamma, beta = self.param((last,)), self.param((last,))
            bound = 4 * math.sqrt(max(last[1], 1)) + 4
            self.emit(kind, a.var, gamma.var, beta.var, dims=a.dims, dt="float32", lo=-bound,
                      hi=bound, exact=False, axes=[-1])
        else:
            weight = self.param((last,))
            bound = 4 * math.sqrt(max(last[1], 1))
            self.emit(kind, a.var, weight.var, dims=a.dims, dt="float32", lo=-bound, hi=bound,
                      exact=False, axes=[-1])

    def op_reduce(self) -> None:
        a = self.pick(self.rng.choice(("float32",) * 3 + ("int32",)))
        if not a.dims:
            return self.op_unary()
        op = self.rng.choice(("sum", "mean", "max", "min", "prod"))
        axis = self.rng.randrange(len(a.dims))
        keep = self.rng.random() < 0.4
        count = a.dims[axis][1]
        if self.rng.random() < 0.3:
            return self.statistic(a, axis, keep)
        if op == "prod" and (a.mag > 2 or count > 4 or a.dt == "int32"):
            op = "sum"
        if op == "mean" and a.dt == "int32":
            op = "max"
        lo, hi = {"sum": (a.lo * count, a.hi * count), "mean": (a.lo, a.hi),
                  "max": (a.lo, a.hi), "min": (a.lo, a.hi),
                  "prod": (-(a.mag ** count), a.mag ** count)}[op]
        lo, hi = min(lo, a.lo), max(hi, a.hi)
        dims = tuple(d if k != axis else _dim(1) for k, d in enumerate(a.dims) if keep or
                     k != axis)
        self.emit(op, a.var, dims=dims, dt=a.dt, lo=lo, hi=hi,
                  exact=a.exact and op in ("sum", "max", "min"), axis=[axis], keepdims=keep)

    def statistic(self, a: Val, axis: int, keep: bool) -> None:
        """argmax / argmin of exact values (a value off by an ulp could move the answer), over
        one axis or the flattened tensor; variance / std of floats over one axis."""
        if a.exact and (a.dt == "int32" or self.rng.random() < 0.5):
            op = self.rng.choice(("argmax", "argmin"))
            whole = self.rng.random() < 0.3
            reduced = [k for k in range(len(a.dims)) if whole or k == axis]
            count = math.prod(a.dims[k][1] for k in reduced)
            dims = tuple(d if k not in reduced else _dim(1) for k, d in enumerate(a.dims)
                         if keep or k not in reduced)
            self.emit(op, a.var, dims=dims, dt="int64", lo=0, hi=max(count - 1, 0), exact=True,
                      axis=None if whole else axis, keepdims=keep)
            return
        if a.dt != "float32":
            return self.op_unary()
        op = self.rng.choice(("variance", "std"))
        dims = tuple(d if k != axis else _dim(1) for k, d in enumerate(a.dims) if keep or
                     k != axis)
        hi = a.mag * a.mag if op == "variance" else a.mag
        self.emit(op, a.var, dims=dims, dt="float32", lo=0.0, hi=hi, exact=False, axis=[axis],
                  keepdims=keep)

    def op_reshape(self) -> None:
        a = self.pick(rank=self.rng.choice((2, 3)))
        head = 1 if a.dims[0] == self.n else 0
        rest = a.dims[head:]
        if len(rest) < 2 or not all(isinstance(d, IntImm) for d, _ in rest):
            return self.op_permute()
        size = math.prod(v for _, v in rest)
        if head == 0 and self.rng.random() < 0.15:
            self.emit("flatten", a.var, dims=(_dim(size),), dt=a.dt, lo=a.lo, hi=a.hi,
                      exact=a.exact)
            return
        dims = a.dims[:head] + (_dim(size),)
        self.emit("reshape", a.var, ShapeExpr(tuple(d for d, _ in dims)), dims=dims, dt=a.dt,
                  lo=a.lo, hi=a.hi, exact=a.exact)

    def op_permute(self) -> None:
        a = self.pick(rank=self.rng.choice((2, 3)))
        axes = list(range(len(a.dims)))
        self.rng.shuffle(axes)
        self.emit("permute_dims", a.var, dims=tuple(a.dims[k] for k in axes), dt=a.dt, lo=a.lo,
                  hi=a.hi, exact=a.exact, axes=axes)

    def op_expand_squeeze(self) -> None:
        a = self.pick()
        ones = [k for k, (_, v) in enumerate(a.dims) if v == 1 and a.dims[k] != self.n]
        if ones and self.rng.random() < 0.5:
            k = self.rng.choice(ones)
            dims = a.dims[:k] + a.dims[k + 1:]
            self.emit("squeeze", a.var, dims=dims, dt=a.dt, lo=a.lo, hi=a.hi, exact=a.exact,
                      axis=[k])
            return
        k = self.rng.randint(0, len(a.dims))
        dims = a.dims[:k] + (_dim(1),) + a.dims[k:]
        self.emit("expand_dims", a.var, dims=dims, dt=a.dt, lo=a.lo, hi=a.hi, exact=a.exact,
                  axis=[k])

    def op_concat(self) -> None:
        a = self.pick(rank=self.rng.choice((1, 2)))
        axis = self.rng.randrange(len(a.dims))
        extra = _dim(self.rng.choice(EXTENTS))
        other = self.param(tuple(extra if k == axis else d for k, d in enumerate(a.dims)), a.dt)
        if a.dims[axis] == self.n:
            size = (a.dims[axis][0] + extra[0], a.dims[axis][1] + extra[1])
        else:
            size = _dim(a.dims[axis][1] + extra[1])
        dims = tuple(size if k == axis else d for k, d in enumerate(a.dims))
        self.emit("concat", Tuple((a.var, other.var)), dims=dims, dt=a.dt,
                  lo=min(a.lo, other.lo), hi=max(a.hi, other.hi), exact=a.exact, axis=axis)

    def op_split(self) -> None:
        a = self.pick(rank=2)
        fixed = [k for k, (d, v) in enumerate(a.dims) if isinstance(d, IntImm) and v >= 1]
        # topk: exact values order alike; constant sizes only (the GPU rules keep a symbolic
        # row count in the per-thread rank buffer, which gpu-storage-scope refuses)
        if a.exact and len(fixed) == len(a.dims) and self.rng.random() < 0.3:
            axis = self.rng.choice(fixed)
            size = a.dims[axis][1]
            count = self.rng.randint(1, size)
            parts = self.gb.emit("topk", a.var, k=count, axis=axis,
                                 largest=self.rng.random() < 0.5)
            dims = tuple(_dim(count) if k == axis else d for k, d in enumerate(a.dims))
            if self.rng.random() < 0.5:
                self.emit(TupleGetItem(parts, 0), dims=dims, dt=a.dt, lo=a.lo, hi=a.hi,
                          exact=True)
            else:
                self.emit(TupleGetItem(parts, 1), dims=dims, dt="int32", lo=0, hi=size,
                          exact=True)
            return
        even = [k for k, (d, v) in enumerate(a.dims) if isinstance(d, IntImm) and v % 2 == 0]
        if not even:
            return self.op_binary()
        axis = self.rng.choice(even)
        parts = self.gb.emit("split", a.var, indices_or_sections=2, axis=axis)
        part = self.rng.randint(0, 1)
        dims = tuple(_dim(v // 2) if k == axis else (d, v) for k, (d, v) in enumerate(a.dims))
        self.emit(TupleGetItem(parts, part), dims=dims, dt=a.dt, lo=a.lo, hi=a.hi,
                  exact=a.exact)

    def op_take(self) -> None:
        a = self.pick(rank=2)
        axis = self.rng.randint(0, 1)
        count = _dim(self.rng.choice(EXTENTS))
        if a.dims[axis][1] < 1:
            return self.op_binary()
        if self.rng.random() < 0.3:  # positions from R.arange: forwards, backwards or strided
            size = a.dims[axis][1]
            start, end, step = self.rng.choice(((0, size, 1), (size - 1, -1, -1), (0, size, 2)))
            count = _dim(len(range(start, end, step)))
            idx = self.emit("arange", dims=(count,), dt="int64", lo=0, hi=size, exact=True,
                            start=start, end=end, step=step)
        else:
            idx = self.param((count,), "int32", index_range=a.dims[axis][1])
        dims = tuple(count if k == axis else d for k, d in enumerate(a.dims))
        self.emit("take", a.var, idx.var, dims=dims, dt=a.dt, lo=a.lo, hi=a.hi, exact=a.exact,
                  axis=axis)

    def op_broadcast(self) -> None:
        a = self.pick(rank=1)
        bound = self.n is not None and any(self.n in dims for _, dims, _, _ in self.params_dims)
        rows = self.n if bound and self.rng.random() < 0.5 else _dim(self.rng.choice(EXTENTS))
        dims = (rows,) + a.dims
        self.emit("broadcast_to", a.var, ShapeExpr(tuple(d for d, _ in dims)), dims=dims,
                  dt=a.dt, lo=a.lo, hi=a.hi, exact=a.exact)

    def op_cast(self) -> None:
        a = self.pick(self.rng.choice(("float32", "float32", "int32")))
        if a.dt == "int32":
            self.emit("astype", a.var, dims=a.dims, dt="float32", lo=a.lo, hi=a.hi,
                      exact=a.exact, dtype=dtype("float32"))
        elif a.exact and a.mag < 1000:
            target = self.rng.choice(("int32", "float16"))
            lo, hi = (math.trunc(a.lo), math.trunc(a.hi)) if target == "int32" else (a.lo, a.hi)
            half = self.emit("astype", a.var, dims=a.dims, dt=target, lo=lo, hi=hi, exact=True,
                             dtype=dtype(target))
            if target == "float16":
                self.emit("astype", half.var, dims=a.dims, dt="float32", lo=lo, hi=hi,
                          exact=True, dtype=dtype("float32"))
        else:
            self.op_unary()

    def op_compare(self) -> None:
        a = self.pick()
        if not a.exact:
            return self.op_binary()
        if self.rng.random() < 0.2:  # bucketize: how many (exact) boundaries lie below
            count = self.rng.randint(1, 5)
            edges = self.param((_dim(count),), a.dt)
            self.emit("bucketize", a.var, edges.var, dims=a.dims, dt="int64", lo=0, hi=count,
                      exact=True, right=self.rng.random() < 0.5)
            return
        b = self.partner(a)
        if not b.exact:
            return self.op_binary()
        op = self.rng.choice(("greater", "less", "equal", "not_equal", "greater_equal",
                              "less_equal"))
        dims = _broadcast(a.dims, b.dims)
        flag = self.emit(op, a.var, b.var, dims=dims, dt="bool", lo=0, hi=1, exact=True)
        self.emit("astype", flag.var, dims=dims, dt="float32", lo=0.0, hi=1.0, exact=True,
                  dtype=dtype("float32"))

    def op_divide(self) -> None:
        a = self.pick()
        b = self.pick()
        if b.lo < 0.25 or _broadcast(a.dims, b.dims) is None:
            denom = self.emit("full", ShapeExpr(a.shape), Constant(2.0, dtype("float32")),
                              dims=a.dims, dt="float32", lo=2.0, hi=2.0, exact=True)
            b = denom
        if self.rng.random() < 0.3 and a.exact and b.lo == b.hi:
            self.emit("floor_divide", a.var, b.var, dims=_broadcast(a.dims, b.dims),
                      dt="float32", lo=math.floor(a.lo / b.hi) - 1, hi=math.floor(a.hi / b.lo),
                      exact=True)
            return
        bound = a.mag / b.lo
        self.emit("divide", a.var, b.var, dims=_broadcast(a.dims, b.dims), dt="float32",
                  lo=-bound, hi=bound, exact=False)

    def op_power(self) -> None:
        a = self.pick()
        if a.lo < 0.25 or a.hi > 8:
            return self.op_unary()
        e = self.rng.choice((0.5, 2.0, 3.0))
        exp = self.emit("full", ShapeExpr(a.shape), Constant(e, dtype("float32")), dims=a.dims,
                        dt="float32", lo=e, hi=e, exact=True)
        self.emit("power", a.var, exp.var, dims=a.dims, dt="float32", lo=a.lo ** e,
                  hi=a.hi ** e, exact=False)

    def op_more_unary(self) -> None:
        """Rounding (exact inputs only: a value off by an ulp may round the other way),
        trigonometric and hyperbolic functions within their domains, square, sign, and the
        float predicates."""
        a = self.pick()
        if self.rng.random() < 0.3:  # into the domains of the inverse functions first
            inner = "sigmoid" if self.rng.random() < 0.7 or a.mag > 8 else "cosh"
            lo, hi, exact = _unary_range(inner, a) if inner == "sigmoid" else \
                _more_range(inner, a)
            a = self.emit(inner, a.var, dims=a.dims, dt="float32", lo=lo, hi=hi, exact=exact)
            op = "acosh" if inner == "cosh" else self.rng.choice(("asin", "acos", "atanh",
                                                                   "tan"))
            if a.mag < 0.99 or op == "acosh":
                lo, hi, exact = _more_range(op, a)
                self.emit(op, a.var, dims=a.dims, dt="float32", lo=lo, hi=hi, exact=exact)
                return
        if self.rng.random() < 0.1:  # the quadrant from both signs, zeros included
            b = self.partner(a)
            self.emit("atan2", a.var, b.var, dims=_broadcast(a.dims, b.dims), dt="float32",
                      lo=-math.pi, hi=math.pi, exact=False)
            return
        choices = ["sin", "cos", "atan", "asinh", "erf", "square", "isnan", "isinf",
                   "isfinite"]
        if a.exact:
            choices += ["floor", "ceil", "round", "trunc", "sign"]
        if a.mag <= 8:
            choices += ["sinh", "cosh"]
        if a.mag < 1.2:
            choices.append("tan")
        if a.mag < 0.99:
            choices += ["asin", "acos", "atanh"]
        if a.lo >= 1:
            choices.append("acosh")
        op = self.rng.choice(choices)
        if op.startswith("is"):
            flag = self.emit(op, a.var, dims=a.dims, dt="bool", lo=0, hi=1, exact=True)
            self.emit("astype", flag.var, dims=a.dims, dt="float32", lo=0.0, hi=1.0,
                      exact=True, dtype=dtype("float32"))
            return
        lo, hi, exact = _more_range(op, a)
        self.emit(op, a.var, dims=a.dims, dt="float32", lo=lo, hi=hi, exact=exact)

    def op_bits(self) -> None:
        """Bitwise operators on integers, shifts by 0 to 3, remainders by a constant."""
        a = self.pick("int32")
        if a.mag > 1000:
            return self.op_binary()
        op = self.rng.choice(("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
                              "left_shift", "right_shift", "mod", "floor_mod"))
        if op == "bitwise_not":
            self.emit(op, a.var, dims=a.dims, dt="int32", lo=-a.hi - 1, hi=-a.lo - 1,
                      exact=True)
            return
        if op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
            b = self.partner(a)
            bound = 2.0 ** math.ceil(math.log2(max(a.mag, b.mag) + 1))
            self.emit(op, a.var, b.var, dims=_broadcast(a.dims, b.dims), dt="int32",
                      lo=-bound, hi=bound, exact=True)
            return
        c = self.rng.choice((0, 1, 2, 3) if "shift" in op else (2, 3, -3, 5))
        b = self.emit("full", ShapeExpr(a.shape), Constant(c, dtype("int32")), dims=a.dims,
                      dt="int32", lo=c, hi=c, exact=True)
        if op == "left_shift":
            lo, hi = a.lo * 2 ** c, a.hi * 2 ** c
        elif op == "right_shift":
            lo, hi = math.floor(a.lo / 2 ** c), math.floor(a.hi / 2 ** c)
        elif op == "mod":
            lo, hi = -(abs(c) - 1), abs(c) - 1
        else:
            lo, hi = min(0, c + 1), max(0, c - 1)
        self.emit(op, a.var, b.var, dims=a.dims, dt="int32", lo=lo, hi=hi, exact=True)

    def op_remainder(self) -> None:
        """Float remainders (fmod and NumPy's mod) of exact values by a constant."""
        a = self.pick()
        if not a.exact:
            return self.op_bits()
        c = self.rng.choice((2.0, -1.5, 0.75))
        b = self.emit("full", ShapeExpr(a.shape), Constant(c, dtype("float32")), dims=a.dims,
                      dt="float32", lo=c, hi=c, exact=True)
        op = self.rng.choice(("mod", "floor_mod"))
        self.emit(op, a.var, b.var, dims=a.dims, dt="float32", lo=-abs(c), hi=abs(c),
                  exact=True)

    def op_logical(self) -> None:
        """Comparisons combined by logical operators, then a cast or a `where`."""
        a = self.pick()
        b = self.partner(a)
        if not (a.exact and b.exact):
            return self.op_binary()
        dims = _broadcast(a.dims, b.dims)
        f1 = self.emit(self.rng.choice(("greater", "less_equal")), a.var, b.var, dims=dims,
                       dt="bool", lo=0, hi=1, exact=True)
        op = self.rng.choice(("logical_and", "logical_or", "logical_xor", "logical_not"))
        if op == "logical_not":
            flag = self.emit(op, f1.var, dims=dims, dt="bool", lo=0, hi=1, exact=True)
        else:
            f2 = self.emit("equal", a.var, b.var, dims=dims, dt="bool", lo=0, hi=1,
                           exact=True)
            flag = self.emit(op, f1.var, f2.var, dims=dims, dt="bool", lo=0, hi=1, exact=True)
        if self.rng.random() < 0.5:
            self.emit("where", flag.var, a.var, b.var, dims=dims, dt=a.dt,
                      lo=min(a.lo, b.lo), hi=max(a.hi, b.hi), exact=True)
        else:
            self.emit("astype", flag.var, dims=dims, dt="float32", lo=0.0, hi=1.0,
                      exact=True, dtype=dtype("float32"))

    def op_clip(self) -> None:
        a = self.pick(self.rng.choice(("float32",) * 3 + ("int32",)))
        lo, hi = self.rng.choice((-2.0, -0.5, 0.0)), self.rng.choice((0.5, 1.0, 3.0))
        if a.dt == "int32":
            lo, hi = math.floor(lo), math.ceil(hi)
        self.emit("clip", a.var, dims=a.dims, dt=a.dt, lo=min(max(a.lo, lo), hi),
                  hi=min(max(a.hi, lo), hi), exact=a.exact, min=lo, max=hi)

    def op_batch_norm(self) -> None:
        """batch_norm over a random channel axis, training (batch statistics, updated moving
        ones) or inference (a positive moving variance); any of its three results is used."""
        a = self.pick(rank=self.rng.choice((2, 3, 4)) if self.rng.random() < 0.3 else None)
        axis = self.rng.randrange(len(a.dims))
        chan = (a.dims[axis],)
        gamma, beta, mean = self.param(chan), self.param(chan), self.param(chan)
        raw = self.param(chan)
        var = self.emit("exp", raw.var, dims=chan, dt="float32", lo=math.exp(raw.lo),
                        hi=math.exp(raw.hi), exact=False)
        training = self.rng.random() < 0.6
        count = math.prod(v for k, (_, v) in enumerate(a.dims) if k != axis)
        spread = math.sqrt(max(count, 1)) if training else (a.mag + mean.mag) / math.sqrt(var.lo)
        bound = spread * gamma.mag + beta.mag
        parts = self.gb.emit("nn.batch_norm", a.var, gamma.var, beta.var, mean.var, var.var,
                             axis=axis, training=training, momentum=self.rng.choice((0.1, 0.5)))
        field = self.rng.choice((0, 0, 1, 2))
        if field == 0:
            self.emit(TupleGetItem(parts, 0), dims=a.dims, dt="float32", lo=-bound, hi=bound,
                      exact=False)
        else:
            stat = mean if field == 1 else var
            hi = max(stat.hi, a.mag * a.mag if field == 2 else a.mag)
            self.emit(TupleGetItem(parts, field), dims=chan, dt="float32",
                      lo=-hi if field == 1 else 0.0, hi=hi, exact=False)

    def op_activation(self) -> None:
        """leakyrelu, softplus (both sides of its threshold), selu, prelu, dropout (its
        output or its mask), and a quantize-dequantize round trip."""
        a = self.pick()
        op = self.rng.choice(("nn.leakyrelu", "nn.softplus", "nn.selu", "nn.prelu",
                              "nn.dropout", "qdq"))
        if op == "qdq":
            return self.qdq(a)
        if op == "nn.dropout":
            pair = self.gb.emit(op, a.var, rate=self.rng.choice((0.0, 0.1, 0.5)))
            if self.rng.random() < 0.5:
                self.emit(TupleGetItem(pair, 0), dims=a.dims, dt=a.dt, lo=a.lo, hi=a.hi,
                          exact=a.exact)
            else:
                self.emit(TupleGetItem(pair, 1), dims=a.dims, dt=a.dt, lo=1.0, hi=1.0,
                          exact=True)
            return
        if op == "nn.prelu":
            axis = self.rng.randrange(len(a.dims))
            alpha = self.param((a.dims[axis],))
            self.emit(op, a.var, alpha.var, dims=a.dims, dt="float32", lo=-a.mag * alpha.mag,
                      hi=a.mag * alpha.mag, exact=False, axis=axis)
            return
        attrs: dict[str, Any] = {}
        lo, hi = -2 * a.mag, 2 * a.mag + 1
        if op == "nn.leakyrelu":
            attrs["alpha"] = self.rng.choice((0.01, 0.2))
        elif op == "nn.softplus":
            if a.mag > 30:
                return self.op_unary()
            attrs.update(beta=self.rng.choice((1.0, 2.0)), threshold=self.rng.choice((1.0, 20.0)))
            lo, hi = 0.0, a.mag + 1
        elif a.mag > 30:
            return self.op_unary()
        self.emit(op, a.var, dims=a.dims, dt="float32", lo=lo, hi=hi, exact=False, **attrs)

    def qdq(self, a: Val) -> None:
        """An exact value quantized to int8 (scale 0.25, zero point 3: values past the range
        clip) and dequantized back to float32."""
        if not a.exact:
            return self.op_unary()
        scale, zp = Constant(0.25, dtype("float32")), Constant(3, dtype("int8"))
        q = self.gb.emit("quantize", a.var, scale, zp, out_dtype="int8")
        self.emit("dequantize", q, scale, zp, dims=a.dims, dt="float32", lo=-32.75, hi=31.0,
                  exact=True)

    def op_rearrange(self) -> None:
        """flip, tile, repeat, a strided_slice with negative bounds and strides, or
        pixel_shuffle of fresh data."""
        a = self.pick(self.rng.choice(("float32", "float32", "int32")))
        rng = self.rng
        op = rng.choice(("flip", "tile", "repeat", "strided_slice", "nn.pad", "scan",
                         "triangle", "pixel_shuffle", "layout_transform"))
        if op == "pixel_shuffle":
            return self.pixel_shuffle(a.dt)
        if op == "layout_transform":
            return self.layout_transform(a)
        keep = dict(dt=a.dt, lo=a.lo, hi=a.hi, exact=a.exact)
        if op == "flip":
            self.emit(op, a.var, dims=a.dims, axis=rng.randrange(len(a.dims)), **keep)
        elif op == "triangle":
            if len(a.dims) < 2:
                return self.op_binary()
            self.emit(rng.choice(("tril", "triu")), a.var, dims=a.dims, dt=a.dt,
                      lo=min(a.lo, 0), hi=max(a.hi, 0), exact=a.exact, k=rng.randint(-2, 2))
        elif op == "nn.pad":
            mode = rng.choice(("constant", "constant", "edge", "reflect"))
            widths = []
            for d, v in a.dims:
                fixed = isinstance(d, IntImm)
                most = 0 if not fixed and mode != "constant" else \
                    (v - 1 if mode == "reflect" else 2)
                widths.append((rng.randint(0, max(most, 0)), rng.randint(0, max(most, 0))))
            dims = tuple(_grown(d, b + e) for d, (b, e) in zip(a.dims, widths))
            fill = rng.choice((0.0, 1.5, -2.0)) if a.dt == "float32" else rng.choice((0, 3))
            lo, hi = min(a.lo, fill), max(a.hi, fill)
            self.emit(op, a.var, dims=dims, dt=a.dt, lo=lo, hi=hi, exact=a.exact,
                      pad_width=[w for pair in widths for w in pair], pad_mode=mode,
                      pad_value=fill)
        elif op == "scan":
            self.scan(a)
        elif op == "tile":
            reps = [rng.choice((1, 2, 3)) for _ in range(rng.randint(1, len(a.dims) + 1))]
            lead = tuple(_dim(1) for _ in range(len(reps) - len(a.dims)))
            full = [1] * (len(a.dims) - len(reps)) + reps
            dims = tuple(_scaled(d, r) for d, r in zip(lead + a.dims, full))
            self.emit(op, a.var, dims=dims, repeats=reps, **keep)
        elif op == "repeat":
            r = rng.choice((1, 2, 3))
            if rng.random() < 0.3 and all(isinstance(d, IntImm) for d, _ in a.dims):
                size = math.prod(v for _, v in a.dims) * r
                self.emit(op, a.var, dims=(_dim(size),), repeats=r, **keep)
                return
            axis = rng.randrange(len(a.dims))
            dims = tuple(_scaled(d, r) if k == axis else d for k, d in enumerate(a.dims))
            self.emit(op, a.var, dims=dims, repeats=r, axis=axis, **keep)
        else:
            fixed = [k for k, (d, _) in enumerate(a.dims) if isinstance(d, IntImm)]
            if not fixed:
                return self.op_binary()
            axis = rng.choice(fixed)
            size = a.dims[axis][1]
            step = rng.choice((1, 1, 2, -1, -2))
            begin, end = rng.randint(-size - 1, size + 1), rng.randint(-size - 1, size + 1)
            if not range(*slice(begin, end, step).indices(size)):
                begin, end, step = 0, size, 1
            count = len(range(*slice(begin, end, step).indices(size)))
            dims = tuple(_dim(count) if k == axis else d for k, d in enumerate(a.dims))
            self.emit(op, a.var, dims=dims, axes=[axis], begin=[begin], end=[end],
                      strides=[step], **keep)

    def pixel_shuffle(self, dt: str) -> None:
        """nn.pixel_shuffle of fresh (..., C * r * r, H, W) data, with no, one or two
        leading axes (the first maybe symbolic)."""
        rng = self.rng
        r = rng.choice((1, 2, 3))
        rank = rng.randint(0, 2)
        lead = self.shape(rank) if rank else ()
        c, h, w = rng.randint(1, 2), rng.randint(1, 3), rng.randint(1, 3)
        x = self.param((*lead, _dim(c * r * r), _dim(h), _dim(w)), dt)
        self.emit("nn.pixel_shuffle", x.var, dims=(*lead, _dim(c), _dim(h * r), _dim(w * r)),
                  dt=dt, lo=x.lo, hi=x.hi, exact=x.exact, upscale_factor=r)

    def layout_transform(self, a: Val) -> None:
        """layout_transform of `a`: a constant axis split into `i // k` and `i % k` (padded
        with 0 or a pad value where k does not divide it), the axes permuted when none is
        symbolic."""
        rng = self.rng
        params = [Var(f"i{k}", I64) for k in range(len(a.dims))]
        fixed = [k for k, (d, _) in enumerate(a.dims) if isinstance(d, IntImm)]
        cut = rng.choice(fixed) if fixed else -1
        outs: list[tuple[PrimExpr, tuple[PrimExpr, int]]] = []
        for k, (p, d) in enumerate(zip(params, a.dims)):
            if k != cut:
                outs.append((p, d))
                continue
            f = rng.randint(2, 4)
            outs += [(binop("floordiv", p, IntImm(f, I64)), _dim(-(-d[1] // f))),
                     (binop("floormod", p, IntImm(f, I64)), _dim(f))]  # k, as TVM 0.27
        if len(fixed) == len(a.dims):
            rng.shuffle(outs)
        pad = rng.choice((None, 1.5 if a.dt == "float32" else 3))
        fill = 0 if pad is None else pad
        attrs = {} if pad is None else {"pad_value": pad}
        self.emit("layout_transform", a.var, dims=tuple(d for _, d in outs), dt=a.dt,
                  lo=min(a.lo, fill), hi=max(a.hi, fill), exact=a.exact,
                  index_map=SchedLambda(tuple(params), tuple(e for e, _ in outs)), **attrs)

    def scan(self, a: Val) -> None:
        """cumsum or cumprod along an axis or over the flattened tensor, maybe exclusive."""
        rng = self.rng
        whole = rng.random() < 0.25 and all(isinstance(d, IntImm) for d, _ in a.dims)
        axis = None if whole else rng.randrange(len(a.dims))
        length = math.prod(v for _, v in a.dims) if whole else a.dims[axis][1]
        op = "cumprod" if a.mag <= 8 and length <= 6 and rng.random() < 0.4 else "cumsum"
        bound = a.mag * length if op == "cumsum" else max(a.mag, 1.0) ** length
        dims = (_dim(length),) if whole else a.dims
        self.emit(op, a.var, dims=dims, dt=a.dt, lo=-bound, hi=bound, exact=a.exact,
                  axis=axis, exclusive=rng.random() < 0.3)

    def op_window(self) -> None:
        """A convolution, a max or average pooling or an adaptive average pooling over 1 to 3
        spatial axes, channels first or last, with random strides, dilation, padding, groups
        and ceil mode, on a fresh data tensor whose batch may be symbolic."""
        rng = self.rng
        rank = rng.choice((1, 2, 2, 3))
        spatial = "DHW"[3 - rank:]
        last = rng.random() < 0.25
        layout = "N" + spatial + "C" if last else "NC" + spatial
        sizes = [rng.choice((2, 3, 4, 5, 7) if rank < 3 else (2, 3, 4)) for _ in spatial]
        batch = self.n if self.n is not None and rng.random() < 0.5 else _dim(rng.choice((1, 2)))
        channels = rng.choice((1, 2, 3, 4))
        kind = rng.choice(("conv", "conv", "max", "avg", "adaptive"))
        dt = "int32" if kind == "max" and rng.random() < 0.3 else "float32"
        by = {"N": batch, "C": _dim(channels), **{c: _dim(v) for c, v in zip(spatial, sizes)}}
        x = self.param(tuple(by[c] for c in layout), dt)
        attrs: dict[str, Any] = {}
        if kind == "adaptive":
            out = [rng.randint(1, v) for v in sizes] if rng.random() < 0.8 else sizes
            if out != sizes or rng.random() < 0.5:
                attrs["output_size"] = out
            op, lo, hi, exact, out_c = f"nn.adaptive_avg_pool{rank}d", x.lo, x.hi, False, channels
        else:
            window = [rng.choice((1, 2, 3)) for _ in spatial]
            strides = [rng.choice((1, 1, 2)) for _ in spatial]
            dilation = [rng.choice((1, 1, 2)) for _ in spatial]
            before = [rng.randint(0, w - 1) for w in window]
            after = [rng.randint(0, w - 1) for w in window]
            ceil = kind != "conv" and rng.random() < 0.4
            if not all(_windows_reach_data(*a, ceil) for a in
                       zip(sizes, window, strides, dilation, before, after)):
                window, dilation, ceil = [1] * rank, [1] * rank, False
                before = after = [0] * rank
            out = [(n + b + a - d * (w - 1) - 1 + (s - 1 if ceil else 0)) // s + 1 for
                   n, w, s, d, b, a in zip(sizes, window, strides, dilation, before, after)]
            attrs.update(strides=strides, padding=before + after, dilation=dilation)
            out_c = channels
            if kind == "conv":
                groups = rng.choice([g for g in (1, 2, channels) if channels % g == 0])
                out_c = groups * rng.choice((1, 2))
                kernel = (spatial + "IO") if last else ("OI" + spatial)
                kdims = {"O": out_c, "I": channels // groups, **dict(zip(spatial, window))}
                w = self.param(tuple(_dim(kdims[c]) for c in kernel), dt)
                bound = x.mag * w.mag * math.prod(window) * (channels // groups)
                op, lo, hi, exact = f"nn.conv{rank}d", -bound, bound, x.exact and w.exact
                attrs.update(groups=groups, data_layout=layout, kernel_layout=kernel)
                self.emit(op, x.var, w.var, dims=_arranged(layout, by, out_c, spatial, out),
                          dt=dt, lo=lo, hi=hi, exact=exact, **attrs)
                return
            attrs.update(pool_size=window, ceil_mode=ceil)
            op, lo, hi, exact = f"nn.{kind}_pool{rank}d", x.lo, x.hi, x.exact and kind == "max"
            if kind == "avg":
                include = rng.random() < 0.5
                attrs["count_include_pad"] = include
                lo, hi = (min(lo, 0.0), max(hi, 0.0)) if include else (lo, hi)
        attrs["layout"] = layout
        self.emit(op, x.var, dims=_arranged(layout, by, out_c, spatial, out), dt=dt, lo=lo,
                  hi=hi, exact=exact, **attrs)

    def op_attention(self) -> None:
        """Fused multi-head attention on fresh query, key and value tensors (the batch may be
        symbolic), with or without a broadcast bias, a scale and a causal mask."""
        rng = self.rng
        batch = self.n if self.n is not None and rng.random() < 0.5 else _dim(rng.choice((1, 2)))
        seq, seq_kv = _dim(rng.randint(1, 4)), _dim(rng.randint(1, 5))
        heads, head_dim, head_dim_v = (_dim(rng.choice(c)) for c in ((1, 2), (1, 2, 4), (1, 3)))
        q = self.param((batch, seq, heads, head_dim))
        k = self.param((batch, seq_kv, heads, head_dim))
        v = self.param((batch, seq_kv, heads, head_dim_v))
        args = [q.var, k.var, v.var]
        if rng.random() < 0.4:
            keep = (batch, heads, seq)
            dims = tuple(d if rng.random() < 0.5 else _dim(1) for d in keep) + (seq_kv,)
            args.append(self.param(dims).var)
        attrs: dict[str, Any] = {}
        if rng.random() < 0.4:
            attrs["scale"] = rng.choice((0.25, 0.5))
        mask = rng.choice((None, "TopLeft", "BottomRight"))
        if mask is not None:
            attrs["causal_mask"] = mask
        self.emit("nn.attention", *args, dims=(batch, seq, heads, head_dim_v), dt="float32",
                  lo=v.lo, hi=v.hi, exact=False, **attrs)

    def op_upsample(self) -> None:
        """A transposed convolution (1 or 2 spatial axes) or an image resize, on fresh data
        whose batch may be symbolic, channels first or last."""
        rng = self.rng
        batch = self.n if self.n is not None and rng.random() < 0.5 else _dim(rng.choice((1, 2)))
        channels = rng.choice((1, 2, 3, 4))
        if rng.random() < 0.4:
            return self.resize(batch, channels)
        rank = rng.choice((1, 2))
        spatial = "HW"[2 - rank:]
        last = rng.random() < 0.25
        layout = "N" + spatial + "C" if last else "NC" + spatial
        kernel = rng.choice(("IO" + spatial, spatial + "IO", "OI" + spatial))
        sizes = [rng.choice((1, 2, 3, 4)) for _ in spatial]
        taps = [rng.choice((1, 2, 3)) for _ in spatial]
        strides = [rng.choice((1, 2, 3)) for _ in spatial]
        dilation = [rng.choice((1, 1, 2)) for _ in spatial]
        extra = [rng.randint(0, s - 1) for s in strides]
        before = [rng.randint(0, d * (t - 1) + 1) for d, t in zip(dilation, taps)]
        after = [rng.randint(0, d * (t - 1)) for d, t in zip(dilation, taps)]
        out = [(n - 1) * s - b - a + d * (t - 1) + e + 1 for n, s, b, a, d, t, e in
               zip(sizes, strides, before, after, dilation, taps, extra)]
        if min(out) < 1:
            before = after = [0] * rank
            out = [(n - 1) * s + d * (t - 1) + e + 1 for n, s, d, t, e in
                   zip(sizes, strides, dilation, taps, extra)]
        groups = rng.choice([g for g in (1, 2, channels) if channels % g == 0])
        per_group_out = rng.choice((1, 2))
        by = {"N": batch, "C": _dim(channels), **{c: _dim(v) for c, v in zip(spatial, sizes)}}
        x = self.param(tuple(by[c] for c in layout))
        kdims = {"I": channels, "O": per_group_out, **dict(zip(spatial, taps))}
        w = self.param(tuple(_dim(kdims[c]) for c in kernel))
        bound = x.mag * w.mag * math.prod(taps) * (channels // groups)
        self.emit(f"nn.conv{rank}d_transpose", x.var, w.var,
                  dims=_arranged(layout, by, groups * per_group_out, spatial, out),
                  dt="float32", lo=-bound, hi=bound, exact=x.exact and w.exact,
                  strides=strides, padding=before + after, output_padding=extra,
                  dilation=dilation, groups=groups, data_layout=layout, kernel_layout=kernel)

    def affine_grid(self, batch: tuple[PrimExpr, int]) -> None:
        """`image.affine_grid` of a fresh batch of 2x3 matrices, through the corners or
        the pixel centers."""
        rng = self.rng
        corners = rng.random() < 0.5
        out = [rng.randint(2 if corners else 1, 6) for _ in "HW"]
        theta = self.param((batch, _dim(2), _dim(3)))
        self.emit("image.affine_grid", theta.var, ShapeExpr((_dim(out[0])[0], _dim(out[1])[0])),
                  dims=(batch, _dim(2), _dim(out[0]), _dim(out[1])), dt="float32",
                  lo=-3 * theta.mag, hi=3 * theta.mag, exact=False, align_corners=corners)

    def resize(self, batch: tuple[PrimExpr, int], channels: int) -> None:
        """`image.resize2d`, nearest, bilinear or bicubic (either alpha, with and without
        excluding the taps outside), in every coordinate mode and rounding (or, at times,
        `image.affine_grid`). The
        nearest neighbour gets output sizes whose coordinates are exact in float32, so that
        no rounding boundary depends on how the compiled code fuses its multiply-adds."""
        rng = self.rng
        pick = rng.random()
        if pick < 0.2:
            return self.affine_grid(batch) if pick < 0.12 else self.resize3d(batch, channels)
        layout = rng.choice(("NCHW", "NCHW", "NHWC"))
        method = rng.choice(("nearest_neighbor", "linear", "cubic"))
        mode = rng.choice(("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
                           "tf_half_pixel_for_nn"))
        sizes = [rng.randint(1, 5) for _ in "HW"]
        if mode == "align_corners":
            choices: tuple[int, ...] = (2, 3, 5)
        elif method == "nearest_neighbor" and mode != "asymmetric":
            choices = (1, 2, 4, 8)
        else:
            choices = tuple(range(1, 9))
        out = [rng.choice(choices) for _ in "HW"]
        by = {"N": batch, "C": _dim(channels), "H": _dim(sizes[0]), "W": _dim(sizes[1])}
        x = self.param(tuple(by[c] for c in layout))
        attrs: dict[str, Any] = dict(layout=layout, method=method,
                                     coordinate_transformation_mode=mode)
        if method == "nearest_neighbor":
            attrs["rounding_method"] = rng.choice(("round", "floor", "ceil", "round_prefer_floor",
                                                   "round_prefer_ceil", ""))
        lo, hi = x.lo, x.hi
        if method == "cubic":  # the spline overshoots: each axis's weights sum to 1 in
            attrs.update(cubic_alpha=rng.choice((-0.5, -0.75)),  # absolute value at most 1.5
                         cubic_exclude=rng.randint(0, 1))
            lo, hi = -2.25 * x.mag, 2.25 * x.mag
        self.emit("image.resize2d", x.var, ShapeExpr((_dim(out[0])[0], _dim(out[1])[0])),
                  dims=_arranged(layout, by, channels, "HW", out), dt="float32", lo=lo,
                  hi=hi, exact=x.exact and method == "nearest_neighbor", **attrs)

    def resize3d(self, batch: tuple[PrimExpr, int], channels: int) -> None:
        """`image.resize3d`: nearest (output sizes whose coordinates are exact, as resize2d's),
        trilinear or tricubic (no exclusion: refused) in each coordinate mode."""
        rng = self.rng
        layout = rng.choice(("NCDHW", "NDHWC"))
        method = rng.choice(("nearest_neighbor", "linear", "cubic"))
        mode = rng.choice(("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
                           "tf_half_pixel_for_nn"))
        sizes = [rng.randint(1, 3) for _ in "DHW"]
        if mode == "align_corners":
            choices: tuple[int, ...] = (2, 3, 4)
        elif method == "nearest_neighbor" and mode != "asymmetric":
            choices = (1, 2, 4)
        else:
            choices = tuple(range(1, 5))
        out = [rng.choice(choices) for _ in "DHW"]
        by = {"N": batch, "C": _dim(channels), **{c: _dim(v) for c, v in zip("DHW", sizes)}}
        x = self.param(tuple(by[c] for c in layout))
        attrs: dict[str, Any] = dict(layout=layout, method=method,
                                     coordinate_transformation_mode=mode)
        if method == "nearest_neighbor":
            attrs["rounding_method"] = rng.choice(("round", "floor", "ceil", ""))
        lo, hi = x.lo, x.hi
        if method == "cubic":  # the spline overshoots, by at most 1.5 per axis
            attrs["cubic_alpha"] = rng.choice((-0.5, -0.75))
            lo, hi = -3.375 * x.mag, 3.375 * x.mag
        self.emit("image.resize3d", x.var, ShapeExpr(tuple(_dim(v)[0] for v in out)),
                  dims=_arranged(layout, by, channels, "DHW", out), dt="float32", lo=lo,
                  hi=hi, exact=x.exact and method == "nearest_neighbor", **attrs)

    def op_collapse(self) -> None:
        """collapse_sum_to or collapse_sum_like of a value to a shape that broadcasts to it:
        some leading axes dropped, some of the others made 1."""
        rng = self.rng
        a = self.pick(rng.choice(("float32", "float32", "int32")))
        drop = rng.randint(0, len(a.dims) - 1)
        dims, count = [], 1
        for k, d in enumerate(a.dims):
            if k >= drop and rng.random() < 0.6:
                dims.append(d)
                continue
            count *= d[1]
            if k >= drop:
                dims.append(_dim(1))
        if a.mag * count > 1e4:
            return self.op_binary()
        keep = dict(dims=tuple(dims), dt=a.dt, lo=a.lo * count, hi=a.hi * count, exact=a.exact)
        if rng.random() < 0.5:
            target = self.param(tuple(dims), a.dt)
            self.emit("collapse_sum_like", a.var, target.var, **keep)
            return
        self.emit("collapse_sum_to", a.var, ShapeExpr(tuple(d for d, _ in dims)), **keep)

    def op_group_norm(self) -> None:
        """group_norm over a constant channel axis split into groups (instance_norm when each
        channel is one), with or without other normalized axes, scale and shift."""
        rng = self.rng
        a = self.pick(rank=rng.choice((2, 3, 4)))
        fixed = [k for k, (d, _) in enumerate(a.dims) if isinstance(d, IntImm)]
        if not fixed:
            return self.op_nn()
        channel = rng.choice(fixed)
        channels = a.dims[channel][1]
        groups = rng.choice([g for g in (1, 2, 3, channels) if channels % g == 0])
        axes = [k for k in range(len(a.dims)) if k != channel and rng.random() < 0.6]
        gamma, beta = self.param((a.dims[channel],)), self.param((a.dims[channel],))
        count = channels // groups * math.prod(a.dims[k][1] for k in axes)
        bound = math.sqrt(max(count, 1)) * gamma.mag + beta.mag
        attrs: dict[str, Any] = dict(num_groups=groups, axes=axes,
                                     channel_axis=channel - len(a.dims) * rng.randint(0, 1))
        if rng.random() < 0.3:
            attrs.update(epsilon=1e-3, center=rng.random() < 0.5, scale=rng.random() < 0.5)
        op = "nn.group_norm"
        if groups == channels and rng.random() < 0.5:  # a group per channel: instance_norm
            op = "nn.instance_norm"
            del attrs["num_groups"]
        self.emit(op, a.var, gamma.var, beta.var, dims=a.dims, dt="float32", lo=-bound,
                  hi=bound, exact=False, **attrs)

    def op_gather_nd(self) -> None:
        """gather_nd with 0 or 1 batch axes, indices (some negative) picking elements or
        slices of the data through one or more of its axes."""
        rng = self.rng
        a = self.pick(rng.choice(("float32", "int32")))
        b = rng.randint(0, min(1, len(a.dims) - 1))
        m = rng.randint(1, len(a.dims) - b)
        bound = min(v for _, v in a.dims[b:b + m])
        lead = tuple(_dim(rng.randint(1, 4)) for _ in range(rng.randint(0, 2)))
        idx = self.param((*a.dims[:b], *lead, _dim(m)), "int32",
                         index_range=-bound if rng.random() < 0.4 else bound)
        dims = (*a.dims[:b], *lead, *a.dims[b + m:])
        self.emit("gather_nd", a.var, idx.var, dims=dims, dt=a.dt, lo=a.lo, hi=a.hi,
                  exact=a.exact, batch_dims=b)

    def op_one_hot(self) -> None:
        """one_hot of int indices (some of them -1 or depth, matching no position) at a random
        axis, with float or int on and off values."""
        rng = self.rng
        dims = self.shape(rng.choice((1, 2)))
        depth = rng.randint(1, 5)
        idx = self.param(dims, "int32", index_range=-(depth + 1))
        dt = rng.choice(("float32", "int32"))
        on, off = rng.randint(-3, 3), rng.randint(-3, 3)
        values = [PrimValue(FloatImm(float(v), dtype(dt)) if dt == "float32" else
                            IntImm(v, dtype(dt))) for v in (on, off)]
        axis = rng.randint(0, len(dims))
        out = (*dims[:axis], _dim(depth), *dims[axis:])
        self.emit("one_hot", idx.var, *values, dims=out, dt=dt, lo=min(on, off),
                  hi=max(on, off), exact=True, depth=depth,
                  axis=axis - (len(dims) + 1) * rng.randint(0, 1))

    def op_scatter_nd(self) -> None:
        """scatter_nd with indices (some negative, some repeated) naming elements or slices
        through the data's first K axes, with each reduction; a product that could grow past
        exactness falls back to `update`."""
        rng = self.rng
        a = self.pick(rng.choice(("float32", "float32", "int32")))
        k = rng.randint(1, len(a.dims))
        bound = min(v for _, v in a.dims[:k])
        rows = tuple(_dim(rng.randint(1, 4)) for _ in range(rng.randint(1, 2)))
        idx = self.param((*rows, _dim(k)), "int32",
                         index_range=-bound if rng.random() < 0.4 else bound)
        upd = self.param((*rows, *a.dims[k:]), a.dt)
        count = math.prod(v for _, v in rows)
        reduction = rng.choice(("update", "add", "mul", "min", "max"))
        lo, hi = min(a.lo, upd.lo), max(a.hi, upd.hi)
        exact = a.exact and upd.exact
        if reduction == "add":
            lo, hi = a.lo + count * min(upd.lo, 0.0), a.hi + count * max(upd.hi, 0.0)
            exact = exact and a.dt == "int32"
        elif reduction == "mul":
            hi = a.mag * max(upd.mag, 1.0) ** count
            lo, exact = -hi, exact and a.dt == "int32"
        if max(abs(lo), abs(hi)) > 1e4:
            reduction, lo, hi = "update", min(a.lo, upd.lo), max(a.hi, upd.hi)
        self.emit("scatter_nd", a.var, idx.var, upd.var, dims=a.dims, dt=a.dt, lo=lo, hi=hi,
                  exact=exact, reduction=reduction)

    def op_index_tensor(self) -> None:
        """index_tensor of one to three index tensors (some negative) that broadcast
        together: the first of the broadcast shape, the others of it with ones in places, or
        a suffix of it."""
        rng = self.rng
        a = self.pick(rng.choice(("float32", "int32")))
        k = rng.randint(1, min(3, len(a.dims)))
        lead = tuple(_dim(rng.randint(1, 4)) for _ in range(rng.randint(0, 2)))
        picks = []
        for j in range(k):
            dims = lead if j == 0 else lead[rng.randint(0, len(lead)):] if rng.random() < 0.3 \
                else tuple(_dim(1) if rng.random() < 0.3 else d for d in lead)
            size = a.dims[j][1]
            picks.append(self.param(dims, "int32",
                                    index_range=-size if rng.random() < 0.4 else size).var)
        self.emit("index_tensor", a.var, Tuple(tuple(picks)), dims=(*lead, *a.dims[k:]),
                  dt=a.dt, lo=a.lo, hi=a.hi, exact=a.exact)

    def op_scatter(self) -> None:
        """scatter_elements (or gather_elements) along a random axis with indices (some
        negative, repeated) that may cover only part of the data off the axis, with each
        reduction its dtype allows; or slice_scatter of a strided slice of the axis; or
        gather_nd, one_hot, scatter_nd or index_tensor."""
        rng = self.rng
        r = rng.random()
        if r < 0.12:
            return self.op_gather_nd()
        if r < 0.24:
            return self.op_one_hot()
        if r < 0.36:
            return self.op_scatter_nd()
        if r < 0.46:
            return self.op_index_tensor()
        a = self.pick(rng.choice(("float32", "float32", "int32")))
        axis = rng.randrange(len(a.dims))
        size = a.dims[axis][1]
        count = rng.randint(1, 4)
        dims = tuple(_dim(count) if k == axis else
                     _dim(rng.randint(1, v)) if isinstance(d, IntImm) and rng.random() < 0.3
                     else (d, v) for k, (d, v) in enumerate(a.dims))
        idx = self.param(dims, "int32", index_range=-size if rng.random() < 0.4 else size)
        if rng.random() < 0.3:  # gather_elements reads where scatter_elements writes
            self.emit("gather_elements", a.var, idx.var, dims=dims, dt=a.dt, lo=a.lo, hi=a.hi,
                      exact=a.exact, axis=axis - len(a.dims) * rng.randint(0, 1))
            return
        if rng.random() < 0.2 and isinstance(a.dims[axis][0], IntImm):  # a strided slice
            start, end, step = rng.choice(((0, size, 2), (-2, size, 1), (1, -1, 3)))
            part = tuple(_dim(len(range(*slice(start, end, step).indices(size)))) if k == axis
                         else d for k, d in enumerate(a.dims))
            src = self.param(part, a.dt)
            self.emit("slice_scatter", a.var, src.var, dims=a.dims, dt=a.dt,
                      lo=min(a.lo, src.lo), hi=max(a.hi, src.hi), exact=a.exact and src.exact,
                      start=start, end=end, step=step, axis=axis)
            return
        upd = self.param(dims, a.dt)
        choices = ["update", "add", "min", "max", "mul"] + (["mean"] if a.dt == "float32" else [])
        reduction = rng.choice(choices)
        lo, hi = min(a.lo, upd.lo), max(a.hi, upd.hi)
        exact = a.exact and upd.exact
        if reduction == "add":
            lo, hi = a.lo + count * min(upd.lo, 0.0), a.hi + count * max(upd.hi, 0.0)
        elif reduction == "mul":
            hi = a.mag * max(upd.mag, 1.0) ** count
            lo, exact = -hi, exact and a.dt == "int32"
        elif reduction == "mean":
            exact = False
        if max(abs(lo), abs(hi)) > 1e4:
            reduction, lo, hi = "update", min(a.lo, upd.lo), max(a.hi, upd.hi)
        self.emit("scatter_elements", a.var, idx.var, upd.var, dims=a.dims, dt=a.dt, lo=lo,
                  hi=hi, exact=exact, axis=axis - len(a.dims) * rng.randint(0, 1),
                  reduction=reduction)

    def op_loss(self) -> None:
        """cross_entropy_with_logits of a value and fresh labels, or nll_loss of 1- to 3-d
        predictions with fresh targets (some ignored), weights and each reduction."""
        rng = self.rng
        if rng.random() < 0.35:
            a = self.pick()
            labels = self.param(a.dims)
            batch = a.dims[0][1] if len(a.dims) > 1 else 1
            bound = a.mag * labels.mag * math.prod(v for _, v in a.dims) / max(batch, 1)
            self.emit("nn.cross_entropy_with_logits", a.var, labels.var, dims=(), dt="float32",
                      lo=-bound, hi=bound, exact=False)
            return
        a = self.pick(rank=rng.choice((1, 2, 2, 3)))
        classes = a.dims[1] if len(a.dims) > 1 else a.dims[0]
        kept = a.dims[:1] + a.dims[2:] if len(a.dims) > 1 else ()
        targets = self.param(kept, "int32", index_range=classes[1])
        reduction = rng.choice(("none", "sum", "mean"))
        args, w_mag = [a.var, targets.var], 1.0
        if rng.random() < 0.5:
            raw = self.param((classes,))
            w_mag = raw.mag
            if reduction == "mean":  # a positive total weight
                raw = self.emit("exp", raw.var, dims=(classes,), dt="float32",
                                lo=math.exp(raw.lo), hi=math.exp(raw.hi), exact=False)
                w_mag = raw.hi
            args.append(raw.var)
        attrs: dict[str, Any] = dict(reduction=reduction)
        if reduction != "mean" and rng.random() < 0.4:
            attrs["ignore_index"] = rng.randrange(classes[1])
        count = math.prod(v for _, v in kept)
        bound = a.mag * (1.0 if reduction == "mean" else w_mag * (count if reduction == "sum"
                                                                  else 1))
        self.emit("nn.nll_loss", *args, dims=kept if reduction == "none" else (), dt="float32",
                  lo=-bound, hi=bound, exact=False, **attrs)

    # ---- the function ----------------------------------------------------------------

    def build(self, seed: int | None = None) -> tuple[Any, list[Val]]:
        """The function and its results; with `seed`, three programs in ten also get a stage
        of difftest.graph_casts and one in eight one of difftest.graph_branches, each at a
        random step, from a stream of its own (the others are the programs the seed always
        gave). `self.fails`: the program must fail at run time."""
        from difftest.graph_branches import stage_if
        from difftest.graph_casts import stage_cast

        count = self.rng.randint(2, 6)
        casts = random.Random(seed * 7919 + 71) if seed is not None else None
        at = -1
        if casts is not None and casts.random() < 0.3:
            at = count if casts.random() < 0.4 else casts.randint(0, count)
        # one in eight gets an `if` (difftest.graph_branches): no dataflow block then
        ifs = random.Random(seed * 7919 + 83) if seed is not None else None
        branch = ifs.randint(0, count - 1) if ifs is not None and ifs.random() < 0.125 else -1
        if ifs is not None and branch >= 0:
            self.gb.dataflow = False
        for k in range(count + 1):
            if k == branch and ifs is not None:
                stage_if(self, ifs)
            if k == at and casts is not None:
                self.fails = stage_cast(self, casts, last=k == count)
            if k < count:
                self.step()
        results = [v for v in self.vals if v.var not in self.gb.params]
        if not results:
            self.op_binary()
            results = [v for v in self.vals if v.var not in self.gb.params]
        outs = [results[-1]]
        if len(results) > 1 and self.rng.random() < 0.25:
            outs.insert(0, results[-2])
        result = outs[0].var if len(outs) == 1 else Tuple(tuple(v.var for v in outs))
        return self.gb.function(self.name, result), outs


def _unary_range(op: str, a: Val) -> tuple[float, float, bool]:
    """The interval of a unary operator's results, and whether they are exact."""
    if op == "negative":
        return -a.hi, -a.lo, a.exact
    if op == "abs":
        return 0.0, a.mag, a.exact
    if op == "nn.relu":
        return max(0.0, a.lo), max(0.0, a.hi), a.exact
    if op == "nn.relu6":
        return min(max(0.0, a.lo), 6.0), min(max(0.0, a.hi), 6.0), a.exact
    if op == "tanh":
        return math.tanh(max(a.lo, -20.0)), math.tanh(min(a.hi, 20.0)), False
    if op == "sigmoid":
        return 1 / (1 + math.exp(-max(a.lo, -30.0))), 1 / (1 + math.exp(-min(a.hi, 30.0))), False
    if op in ("nn.gelu", "nn.gelu_tanh", "nn.silu"):
        return -0.3, max(0.0, a.hi), False
    if op == "exp":
        return math.exp(a.lo), math.exp(a.hi), False
    if op == "log":
        return math.log(a.lo), math.log(a.hi), False
    if op == "rsqrt":
        return 1 / math.sqrt(a.hi), 1 / math.sqrt(a.lo), False
    return math.sqrt(a.lo), math.sqrt(a.hi), False


def _more_range(op: str, a: Val) -> tuple[float, float, bool]:
    """The interval of `op_more_unary`'s results, and whether they are exact."""
    if op in ("floor", "ceil", "round", "trunc"):
        return math.floor(a.lo), math.ceil(a.hi), a.exact
    if op == "sign":
        return -1.0, 1.0, True
    if op == "square":
        low = 0.0 if a.lo <= 0 <= a.hi else min(a.lo * a.lo, a.hi * a.hi)
        return low, a.mag * a.mag, a.exact and a.mag < 100
    monotone = {"atan": math.atan, "asinh": math.asinh, "sinh": math.sinh, "tan": math.tan,
                "asin": math.asin, "atanh": math.atanh, "acosh": math.acosh}
    if op in monotone:
        return monotone[op](a.lo), monotone[op](a.hi), False
    if op == "acos":
        return math.acos(a.hi), math.acos(a.lo), False
    if op == "cosh":
        return 1.0, math.cosh(a.mag), False
    return -1.0, 1.0, False  # sin, cos, erf


def _windows_reach_data(size: int, window: int, stride: int, dil: int, before: int,
                        after: int, ceil: bool) -> bool:
    """Every window position along an axis holds at least one element of the data (a window
    wholly in the padding would average nothing), and there is at least one position."""
    count = (size + before + after - dil * (window - 1) - 1 + (stride - 1 if ceil else 0))
    count = count // stride + 1
    if count < 1:
        return False
    return all(any(0 <= p * stride - before + t * dil < size for t in range(window))
               for p in range(count))


def _grown(d: tuple[PrimExpr, int], extra: int) -> tuple[PrimExpr, int]:
    """A dim plus `extra` (a symbolic one as `n + extra`)."""
    if isinstance(d[0], IntImm):
        return _dim(d[1] + extra)
    return (d[0] + extra if extra else d[0]), d[1] + extra


def _scaled(d: tuple[PrimExpr, int], r: int) -> tuple[PrimExpr, int]:
    """A dim times `r` (a symbolic one as `n * r`, as shape inference simplifies it)."""
    if isinstance(d[0], IntImm):
        return _dim(d[1] * r)
    return (d[0] * r if r != 1 else d[0]), d[1] * r


def _arranged(layout: str, by: dict[str, tuple[PrimExpr, int]], channels: int, spatial: str,
              out: list[int]) -> tuple[tuple[PrimExpr, int], ...]:
    """The dims of a window operator's result in `layout`."""
    sizes = {"N": by["N"], "C": _dim(channels), **{c: _dim(v) for c, v in zip(spatial, out)}}
    return tuple(sizes[c] for c in layout)


def _broadcast(a: tuple, b: tuple) -> tuple | None:
    """NumPy's broadcast of two dims tuples (None when they do not broadcast)."""
    out = []
    for k in range(1, max(len(a), len(b)) + 1):
        da = a[-k] if k <= len(a) else None
        db = b[-k] if k <= len(b) else None
        if da is None or (db is not None and da[1] == 1 and not isinstance(da[0], Var)):
            out.append(db)
        elif db is None or (db[1] == 1 and not isinstance(db[0], Var)) or db == da:
            out.append(da)
        else:
            return None
    return tuple(reversed(out))


def graph_case(seed: int) -> Program:
    """The graph program of `seed` as the harness takes it."""
    gen = _Gen(seed, f"g{seed}")
    func, outs = gen.build(seed)
    specs = [(shape, dt, index_range) for _, shape, dt, index_range in gen.params]

    def make(rng: np.random.Generator) -> list[Any]:
        out = []
        for shape, dt, index_range in specs:
            if index_range is not None:
                low = index_range if index_range < 0 else 0  # negative: [-n, n), wrapped
                out.append(rng.integers(low, abs(index_range), size=shape).astype(np.int32))
            else:
                out.append(random_input(shape, dt, rng))
        return out

    infos = {f"out{k}": v.info() for k, v in enumerate(outs)}
    fails = tuple((v.values, v.dt) for v in outs) if gen.fails else None
    return Program(seed, func.name, func, make, infos, fails=fails)
