"""Sharding rules: how each operator's dimensions relate, as Shardy's factor rules do.

An operator's rule names a *factor* per tensor dimension (an index space shared by operand and
result dimensions: the `i`, `j`, `k` of a matmul); `None` marks a dimension that may not be
split (a broadcast size-1 dimension, an inner dimension of a reshape group, an opaque call).
Splitting a factor over a mesh axis splits every dimension that has it; a factor that no
result has is a *reduction* factor, and splitting it leaves a partial result (`P[sum]` for a
matmul's `k`, `P[max]` for `max`). `replicated` factors must stay whole (a softmax axis, a
concat axis), `even_only` ones split only evenly (reshape groups). `partial` says which
partial operands the operator passes on unchanged (linearity), and as what.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import field
from tirc.ir.lean_dataclass import dataclass
from typing import Any

from tirc.ir.graph import GCall, StructInfo, TensorSInfo, TupleSInfo
from tirc.ir.ops.elementwise import BINARY_OPS, UNARY_OPS
from tirc.ir.ops.sinfo_util import const_dim, dims_equal, normalize_axis

Factor = int | None
PartialRule = Callable[[Sequence[str | None]], str | None]


@dataclass
class Rule:
    """The factors of one call: per operand and per result, one factor per dimension."""

    operands: list[list[Factor]]
    results: list[list[Factor]]
    reduction: dict[int, str] = field(default_factory=dict)
    replicated: set[int] = field(default_factory=set)
    even_only: set[int] = field(default_factory=set)
    partial: PartialRule = field(default=lambda ops: None)
    decomposable: bool = False

    def dim_of(self, factors: Sequence[Factor], f: int) -> int | None:
        """The dimension of a tensor that has factor `f` (None when it has none)."""
        for d, g in enumerate(factors):
            if g == f:
                return d
        return None


class _Factors:
    """Hands out fresh factor ids for one rule."""
    def __init__(self) -> None:
        self.count = 0

    def new(self, n: int = 1) -> list[int]:
        """`n` fresh factor ids."""
        out = list(range(self.count, self.count + n))
        self.count += n
        return out


# ---- partial (linearity) policies -------------------------------------------------------


def _all_same(allowed: tuple[str, ...]) -> PartialRule:
    """Every tensor operand partial by the same op (one of `allowed`)."""
    def rule(ops: Sequence[str | None]) -> str | None:
        if ops and all(o is not None and o == ops[0] for o in ops) and ops[0] in allowed:
            return ops[0]
        return None
    return rule


def _exactly_one(positions: tuple[int, ...] | None = None) -> PartialRule:
    """Exactly one operand partial by sum (at one of `positions`), the others not partial."""
    def rule(ops: Sequence[str | None]) -> str | None:
        partial = [k for k, o in enumerate(ops) if o is not None]
        if len(partial) == 1 and ops[partial[0]] == "sum" and \
                (positions is None or partial[0] in positions):
            return "sum"
        return None
    return rule


def _first_only(ops: Sequence[str | None]) -> str | None:
    """Data movement: the first operand partial by any op, the others not partial."""
    if ops and ops[0] is not None and all(o is None for o in ops[1:]):
        return ops[0]
    return None


def _reduce_partial(kind: str) -> PartialRule:
    """A reduction passes on a partial operand of its own kind (sum and mean pass sums)."""
    keeps = {"sum": "sum", "mean": "sum", "max": "max", "min": "min", "prod": "prod"}[kind]

    def rule(ops: Sequence[str | None]) -> str | None:
        return keeps if ops and ops[0] == keeps else None
    return rule


REDUCTION_OPS = {"sum": "sum", "mean": "sum", "max": "max", "min": "min", "prod": "prod"}
_LINEAR_BINARY: dict[str, PartialRule] = {
    "add": _all_same(("sum",)), "subtract": _all_same(("sum",)),
    "multiply": _exactly_one(), "divide": _exactly_one((0,)),
    "maximum": _all_same(("max",)), "minimum": _all_same(("min",)),
}
_UNARY_PARTIAL = {"negative": _all_same(("sum",))}
BINARY = (*BINARY_OPS, "where")
UNARY = (*UNARY_OPS, "nn.relu", "nn.relu6", "nn.gelu", "nn.gelu_tanh", "nn.silu", "nn.leakyrelu",
         "nn.softplus", "nn.selu", "clip")
CREATION = ("full", "zeros", "ones")
LIKE = ("zeros_like", "ones_like", "full_like")
MOVING = ("flip", "strided_slice", "tile", "repeat", "nn.pad")
SCANS = ("cumsum", "cumprod")
STATISTICS = ("argmax", "argmin", "variance", "std")
WINDOWS = tuple(f"nn.{kind}{r}d" for r in (1, 2, 3) for kind in
                ("conv", "max_pool", "avg_pool", "adaptive_avg_pool")) + \
    ("nn.conv1d_transpose", "nn.conv2d_transpose", "image.resize2d")
OPAQUE = ("call_tir", "call_tir_inplace", "call_dps_packed")
DECOMPOSABLE = ("nn.softmax", "nn.log_softmax", "nn.layer_norm", "nn.rms_norm")
COLLAPSES = ("collapse_sum_like", "collapse_sum_to")
LOSSES = ("nn.nll_loss", "nn.cross_entropy_with_logits")


# ---- operands ---------------------------------------------------------------------------


def result_sinfos(out: StructInfo) -> list[TensorSInfo]:
    """The result tensors of a call (a tuple result gives each field)."""
    if isinstance(out, TupleSInfo):
        return [f for f in out.fields if isinstance(f, TensorSInfo)]
    return [out] if isinstance(out, TensorSInfo) else []


# ---- the rules --------------------------------------------------------------------------


def _shape(s: TensorSInfo) -> tuple:
    """The (known) shape of a tensor."""
    assert s.shape is not None
    return s.shape


def _broadcast(fx: _Factors, operands: Sequence[TensorSInfo], out: TensorSInfo,
               partial: PartialRule) -> Rule:
    """Elementwise with NumPy broadcasting: a size-1 broadcast dimension has no factor."""
    oshape = _shape(out)
    ofs = fx.new(len(oshape))
    ops: list[list[Factor]] = []
    for s in operands:
        shape = _shape(s)
        lead = len(oshape) - len(shape)
        ops.append([ofs[lead + j] if dims_equal(d, oshape[lead + j]) else None
                    for j, d in enumerate(shape)])
    return Rule(ops, [list(ofs)], partial=partial)


def _matmul(fx: _Factors, a: TensorSInfo, b: TensorSInfo, out: TensorSInfo) -> Rule:
    """Batch factors (broadcast), m, n, and the contraction k (a reduction by sum)."""
    sa, sb, so = _shape(a), _shape(b), _shape(out)
    (k,) = fx.new()
    nbatch = len(so) - (len(sa) > 1) - (len(sb) > 1)
    batch = fx.new(nbatch)
    m = fx.new()[0] if len(sa) > 1 else None
    n = fx.new()[0] if len(sb) > 1 else None

    def batch_of(shape: tuple, core: int) -> list[Factor]:
        dims = shape[:len(shape) - core]
        lead = nbatch - len(dims)
        return [batch[lead + j] if dims_equal(d, so[lead + j]) else None
                for j, d in enumerate(dims)]

    fa = batch_of(sa, 2) + [m, k] if len(sa) > 1 else [k]
    fb = batch_of(sb, 2) + [k, n] if len(sb) > 1 else [k]
    fo = list(batch) + ([m] if m is not None else []) + ([n] if n is not None else [])
    return Rule([fa, fb], [fo], reduction={k: "sum"}, partial=_exactly_one())


def _axes(values: Any, ndim: int) -> list[int]:
    """Normalized, sorted axes of an `axis`/`axes` attribute (None: all)."""
    if values is None:
        return list(range(ndim))
    items = values if isinstance(values, (tuple, list)) else (values,)
    return sorted({a for a in (normalize_axis(int(v), ndim) for v in items) if a is not None})


def _reduce(fx: _Factors, call: GCall, x: TensorSInfo) -> Rule:
    """Reduced axes are reduction factors; kept ones (keepdims) have none in the result."""
    shape = _shape(x)
    fs = fx.new(len(shape))
    axes = _axes(call.attrs.get("axis"), len(shape))
    keep = bool(call.attrs.get("keepdims", False))
    out = [None if k in axes else f for k, f in enumerate(fs) if keep or k not in axes]
    op = REDUCTION_OPS[call.op]
    return Rule([list(fs)], [out], reduction={fs[a]: op for a in axes},
                partial=_reduce_partial(call.op))


def _normalization(fx: _Factors, call: GCall, operands: Sequence[TensorSInfo]) -> Rule:
    """softmax and the norms: the normalized axes must stay whole (unless decomposed)."""
    x = operands[0]
    shape = _shape(x)
    fs = fx.new(len(shape))
    if call.op in ("nn.softmax", "nn.log_softmax"):
        axes = _axes(call.attrs.get("axis", -1), len(shape))
    else:
        axes = _axes(call.attrs.get("axes", -1), len(shape))
    ops = [list(fs)]
    for s in operands[1:]:
        n = len(_shape(s))
        ops.append([fs[a] for a in axes[-n:]] if n <= len(axes) else [None] * n)
    return Rule(ops, [list(fs)], replicated={fs[a] for a in axes}, decomposable=True)


def _reshape(fx: _Factors, x: TensorSInfo, out: TensorSInfo) -> Rule:
    """Match groups of dimensions with equal products; only a group's outermost dimension on
    each side shares a factor (split evenly), inner ones may not be split."""
    si, so = list(_shape(x)), list(_shape(out))
    fi: list[Factor] = [None] * len(si)
    fo: list[Factor] = [None] * len(so)
    even: set[int] = set()
    i = j = 0
    while i < len(si) and j < len(so):
        if const_dim(si[i]) == 1 and not dims_equal(si[i], so[j]):
            i += 1
            continue
        if const_dim(so[j]) == 1 and not dims_equal(si[i], so[j]):
            j += 1
            continue
        if dims_equal(si[i], so[j]):
            (f,) = fx.new()
            fi[i], fo[j] = f, f
            i, j = i + 1, j + 1
            continue
        ci, cj = const_dim(si[i]), const_dim(so[j])
        if ci is None or cj is None:
            break
        gi, gj = [i], [j]
        pi, pj = ci, cj
        while pi != pj:
            if pi < pj and gi[-1] + 1 < len(si) and const_dim(si[gi[-1] + 1]) is not None:
                gi.append(gi[-1] + 1)
                pi *= const_dim(si[gi[-1]]) or 0
            elif pj < pi and gj[-1] + 1 < len(so) and const_dim(so[gj[-1] + 1]) is not None:
                gj.append(gj[-1] + 1)
                pj *= const_dim(so[gj[-1]]) or 0
            else:
                return Rule([fi], [fo], partial=_first_only)
        (f,) = fx.new()
        fi[gi[0]], fo[gj[0]] = f, f
        even.add(f)
        i, j = gi[-1] + 1, gj[-1] + 1
    return Rule([fi], [fo], even_only=even, partial=_first_only)


def rule_for(call: GCall, operands: Sequence[TensorSInfo], out: StructInfo) -> Rule:
    """The factor rule of a (normalized) call, given its tensor operands and result. A factor
    that no result has and that is not reduced (a squeezed dimension, a gathered axis) must
    stay whole."""
    rule = _rule_for(call, operands, out)
    kept = {f for r in rule.results for f in r if f is not None} | set(rule.reduction)
    rule.replicated |= {f for o in rule.operands for f in o if f is not None and f not in kept}
    return rule


def _rule_for(call: GCall, operands: Sequence[TensorSInfo], out: StructInfo) -> Rule:
    """The rule by operator kind (opaque calls: nothing may be split)."""
    fx = _Factors()
    results = result_sinfos(out)
    op = call.op
    if op in BINARY or op in UNARY or op == "astype":
        partial = _LINEAR_BINARY.get(op) or _UNARY_PARTIAL.get(op) or (
            _astype_partial(call) if op == "astype" else (lambda ops: None))
        return _broadcast(fx, operands, results[0], partial)
    if op == "broadcast_to":
        return _broadcast(fx, operands, results[0], _first_only)
    if op == "matmul":
        return _matmul(fx, operands[0], operands[1], results[0])
    if op in REDUCTION_OPS:
        return _reduce(fx, call, operands[0])
    if op in DECOMPOSABLE:
        return _normalization(fx, call, operands)
    if op == "permute_dims":
        nd = len(_shape(operands[0]))
        fs = fx.new(nd)
        axes = call.attrs.get("axes")
        order = list(reversed(range(nd))) if axes is None else \
            [normalize_axis(int(a), nd) or 0 for a in axes]
        return Rule([list(fs)], [[fs[a] for a in order]], partial=_first_only)
    if op == "expand_dims":
        fs = fx.new(len(_shape(operands[0])))
        nd = len(_shape(results[0]))
        new = set(_axes(call.attrs.get("axis"), nd))
        it = iter(fs)
        return Rule([list(fs)], [[None if k in new else next(it) for k in range(nd)]],
                    partial=_first_only)
    if op == "squeeze":
        shape = _shape(operands[0])
        fs = fx.new(len(shape))
        axes = call.attrs.get("axis")
        gone = set(_axes(axes, len(shape))) if axes is not None else \
            {k for k, d in enumerate(shape) if const_dim(d) == 1}
        return Rule([list(fs)], [[f for k, f in enumerate(fs) if k not in gone]],
                    partial=_first_only)
    if op == "reshape":
        return _reshape(fx, operands[0], results[0])
    if op == "concat":
        nd = len(_shape(results[0]))
        fs = fx.new(nd)
        axis = normalize_axis(int(call.attrs.get("axis", 0)), nd) or 0
        return Rule([list(fs) for _ in operands], [list(fs)], replicated={fs[axis]},
                    partial=_all_same(("sum", "max", "min", "prod")))
    if op == "split":
        nd = len(_shape(operands[0]))
        fs = fx.new(nd)
        axis = normalize_axis(int(call.attrs.get("axis", 0)), nd) or 0
        outs = [[None if k == axis else f for k, f in enumerate(fs)] for _ in results]
        return Rule([list(fs)], outs, replicated={fs[axis]}, partial=_first_only)
    if op == "take":  # an R.Prim index is no tensor operand: a 0-d one
        x = operands[0]
        nd = len(_shape(x))
        fs = fx.new(nd)
        fi = fx.new(len(_shape(operands[1])) if len(operands) > 1 else 0)
        axis = normalize_axis(int(call.attrs.get("axis", 0) or 0), nd) or 0
        return Rule([list(fs), list(fi)], [fs[:axis] + fi + fs[axis + 1:]],
                    replicated={fs[axis]}, partial=_first_only)
    if op in CREATION:
        return Rule([], [fx.new(len(_shape(results[0])))])
    if op == "arange":  # each device would count from 0: its values stay whole
        (f,) = fx.new(1)
        return Rule([], [[f]], replicated={f})
    if op in LIKE:
        return _broadcast(fx, operands, results[0], lambda ops: None)
    if op == "flatten":
        return _reshape(fx, operands[0], results[0])
    if op in MOVING or op in SCANS:
        return _moving(fx, call, operands, results[0])
    if op in STATISTICS:
        return _statistic(fx, call, operands[0])
    if op == "nn.prelu":
        fs = fx.new(len(_shape(operands[0])))
        axis = normalize_axis(int(call.attrs.get("axis", 1)), len(fs)) or 0
        return Rule([list(fs), [fs[axis]]], [list(fs)])
    if op == "image.affine_grid":  # each matrix of the batch makes its own grid
        (batch,) = fx.new()
        return Rule([[batch, None, None]], [[batch, None, None, None]])
    if op in ("quantize", "dequantize"):  # a per-axis scale and zero point split with the axis
        fs = fx.new(len(_shape(operands[0])))
        axis = normalize_axis(int(call.attrs.get("axis", -1)), len(fs)) or 0
        per = [[fs[axis]] if len(_shape(s)) == 1 else [None] * len(_shape(s))
               for s in operands[1:]]
        return Rule([list(fs), *per], [list(fs)])
    if op == "nn.batch_norm":
        return _batch_norm(fx, call, operands)
    if op in COLLAPSES:
        return _collapse(fx, operands, results[0])
    if op in ("nn.group_norm", "nn.instance_norm"):
        return _group_norm(fx, call, operands)
    if op == "gather_elements":
        return _gather(fx, call, operands)
    if op == "einsum":
        return _einsum(fx, call)
    if op == "bucketize":  # the data and result split alike; the boundaries stay whole
        fs, (fb,) = fx.new(len(_shape(operands[0]))), fx.new(1)
        return Rule([list(fs), [fb]], [list(fs)], replicated={fb})
    if op == "topk":  # the sorted axis stays whole; the others split data and results alike
        fs = fx.new(len(_shape(operands[0])))
        axis = normalize_axis(int(call.attrs.get("axis", -1)), len(fs)) or 0
        return Rule([list(fs)], [list(fs) for _ in results], replicated={fs[axis]})
    if op == "gather_nd":
        return _gather_nd(fx, call, operands)
    if op == "one_hot":  # the indices and result split alike; the new depth axis stays whole
        fs, (fd,) = fx.new(len(_shape(operands[0]))), fx.new(1)
        a = normalize_axis(int(call.attrs.get("axis", -1)), len(fs) + 1) or 0
        return Rule([list(fs)], [[*fs[:a], fd, *fs[a:]]], replicated={fd})
    if op == "nn.dropout":  # elementwise: the output and the mask split as the data
        fs = fx.new(len(_shape(operands[0])))
        return Rule([list(fs)], [list(fs), list(fs)])
    if op == "nn.pixel_shuffle":  # the leading axes split; channels, rows and columns mix
        fs = fx.new(len(_shape(operands[0])))
        return Rule([list(fs)], [[*fs[:-3], None, None, None]])
    if op == "scatter_nd":
        return _scatter_nd(fx, operands)
    if op == "index_tensor" and len(operands) > 1:
        return _index_tensor(fx, operands, results[0])
    if op == "layout_transform":  # an index the map keeps whole splits; a split one stays
        fs = fx.new(len(_shape(operands[0])))
        lam = call.attrs["index_map"]
        kept = [next((f for p, f in zip(lam.params, fs) if e is p), None) for e in lam.body]
        return Rule([list(fs)], [kept])
    if op in ("tril", "triu"):  # the diagonal's two axes stay whole; the leading ones split
        fs = fx.new(len(_shape(operands[0])))
        return Rule([list(fs)], [list(fs)], replicated=set(fs[-2:]))
    if op == "slice_scatter":  # the sliced axis stays whole; the others split all alike
        fs = fx.new(len(_shape(operands[0])))
        axis = normalize_axis(int(call.attrs.get("axis", 0)), len(fs)) or 0
        return Rule([list(fs), list(fs)], [list(fs)], replicated={fs[axis]})
    if op == "scatter_elements":
        return _scatter(fx, call, operands)
    if op in LOSSES:
        return _loss(fx, call, operands)
    if op in WINDOWS:
        return _window(fx, call, operands, results[0])
    if op == "nn.attention":
        return _attention(fx, operands)
    return Rule([[None] * len(_shape(s)) for s in operands],
                [[None] * len(_shape(s)) for s in results])


def _moving(fx: _Factors, call: GCall, operands: Sequence[TensorSInfo],
            out: TensorSInfo) -> Rule:
    """Elements move along some axes only (flip, slice, tile, repeat, pad, a scan): those
    stay whole, the others split alike; a flattening form (no axis) keeps everything whole."""
    shape = _shape(operands[0])
    nd = len(shape)
    fs = fx.new(nd)
    attrs = call.attrs
    lead = len(_shape(out)) - nd
    if call.op in ("repeat",) + SCANS and attrs.get("axis") is None:
        return Rule([[None] * nd], [[None] * len(_shape(out))])
    if call.op == "tile":
        reps = attrs.get("repeats", 1)
        reps = (reps,) if isinstance(reps, int) else tuple(reps)
        reps = (1,) * (nd - len(reps)) + reps
        moved = {a for a, r in enumerate(reps[len(reps) - nd:]) if r != 1}
    elif call.op == "strided_slice":
        moved = set(_axes(attrs.get("axes"), nd))
    elif call.op == "nn.pad":
        widths = list(attrs.get("pad_width", ()))
        moved = {a for a in range(nd) if any(widths[2 * a:2 * a + 2])}
    else:
        moved = set(_axes(attrs.get("axis"), nd))
    result: list[Factor] = [None] * lead + list(fs)
    linear = _first_only if call.op in ("flip", "strided_slice", "tile", "repeat") else \
        (lambda ops: None)
    return Rule([list(fs)] + [[None] * len(_shape(s)) for s in operands[1:]], [result],
                replicated={fs[a] for a in moved}, partial=linear)


def _statistic(fx: _Factors, call: GCall, x: TensorSInfo) -> Rule:
    """argmax/argmin, variance and std: the reduced axes stay whole (partial results do not
    combine), the others split alike."""
    shape = _shape(x)
    fs = fx.new(len(shape))
    axes = _axes(call.attrs.get("axis"), len(shape))
    keep = bool(call.attrs.get("keepdims", False))
    out = [None if k in axes else f for k, f in enumerate(fs) if keep or k not in axes]
    return Rule([list(fs)], [out], replicated={fs[a] for a in axes})


def _batch_norm(fx: _Factors, call: GCall, operands: Sequence[TensorSInfo]) -> Rule:
    """The channel axis splits data, statistics and results alike; in training mode the
    other axes are the batch statistics' reduction and stay whole."""
    shape = _shape(operands[0])
    fs = fx.new(len(shape))
    axis = normalize_axis(int(call.attrs.get("axis", 1)), len(shape)) or 0
    channel = [fs[axis]]
    training = bool(call.attrs.get("training", True))
    whole = {f for a, f in enumerate(fs) if a != axis} if training else set()
    return Rule([list(fs)] + [list(channel) for _ in operands[1:]],
                [list(fs), list(channel), list(channel)], replicated=whole)


def _collapse(fx: _Factors, operands: Sequence[TensorSInfo], out: TensorSInfo) -> Rule:
    """collapse_sum: the axes summed away and those summed into a 1 are reduction factors (a
    split one leaves a partial sum), the others split alike; the target tensor of
    collapse_sum_like (its shape is the result's) splits as the result does."""
    shape, target = _shape(operands[0]), _shape(out)
    fs = fx.new(len(shape))
    lead = len(shape) - len(target)
    result: list[Factor] = []
    summed: dict[int, str] = {}
    for a, f in enumerate(fs):
        if a >= lead and dims_equal(shape[a], target[a - lead]):
            result.append(f)
            continue
        summed[f] = "sum"
        if a >= lead:
            result.append(None)
    ops = [list(fs)] + [list(result) for _ in operands[1:]]
    return Rule(ops, [result], reduction=summed, partial=_reduce_partial("sum"))


def _group_norm(fx: _Factors, call: GCall, operands: Sequence[TensorSInfo]) -> Rule:
    """The channel axis (with gamma and beta) and the normalized axes stay whole (a group's
    statistics need all of them); the other axes split data and result alike."""
    shape = _shape(operands[0])
    fs = fx.new(len(shape))
    channel = normalize_axis(int(call.attrs.get("channel_axis", 1)), len(shape)) or 0
    whole = {fs[channel]} | {fs[a] for a in _axes(call.attrs.get("axes"), len(shape))}
    return Rule([list(fs), [fs[channel]], [fs[channel]]], [list(fs)], replicated=whole)


def _einsum(fx: _Factors, call: GCall) -> Rule:
    """A factor per label: the result's labels split operands and result alike, the others
    are reductions by sum (a product is linear in each operand); a label an operand repeats
    (its diagonal) stays whole."""
    subs = str(call.attrs.get("subscripts", "")).replace(" ", "")
    lhs, arrow, rhs = subs.partition("->")
    inputs = lhs.split(",")
    if not arrow:
        rhs = "".join(sorted(c for c in set(lhs) - {","} if lhs.count(c) == 1))
    labels = list(dict.fromkeys(lhs.replace(",", "")))
    of = dict(zip(labels, fx.new(len(labels))))
    diagonal = {of[c] for labels_ in inputs for c in labels_ if labels_.count(c) > 1}
    return Rule([[of[c] for c in labels_] for labels_ in inputs], [[of[c] for c in rhs]],
                reduction={of[c]: "sum" for c in labels if c not in rhs},
                replicated=diagonal, partial=_exactly_one())


def _gather(fx: _Factors, call: GCall, operands: Sequence[TensorSInfo]) -> Rule:
    """gather_elements: the other axes split data, indices and result alike where the
    indices span the data's whole axis; the gather axis, and any axis the indices cover only
    part of, stay whole."""
    sx, si = _shape(operands[0]), _shape(operands[1])
    fs = fx.new(len(sx))
    axis = normalize_axis(int(call.attrs.get("axis", 0)), len(sx)) or 0
    fi: list[Factor] = [fs[a] if a != axis and dims_equal(si[a], sx[a]) else None
                        for a in range(len(sx))]
    whole = {fs[a] for a in range(len(sx)) if fi[a] is None}
    return Rule([list(fs), list(fi)], [list(fi)], replicated=whole)


def _gather_nd(fx: _Factors, call: GCall, operands: Sequence[TensorSInfo]) -> Rule:
    """gather_nd: the batch axes and the data's trailing (sliced) axes split data, indices and
    result alike, the indices' own leading axes split them and the result; the indexed axes
    and the indices' last (coordinate) axis stay whole."""
    sx, si = _shape(operands[0]), _shape(operands[1])
    b = int(call.attrs.get("batch_dims", 0))
    m = const_dim(si[-1]) or 0
    fd, fi, (fm,) = fx.new(len(sx)), fx.new(len(si) - 1 - b), fx.new(1)
    return Rule([list(fd), [*fd[:b], *fi, fm]], [[*fd[:b], *fi, *fd[b + m:]]])


def _scatter_nd(fx: _Factors, operands: Sequence[TensorSInfo]) -> Rule:
    """scatter_nd: the data's axes after the K indexed ones split data, updates and result
    alike; the indexed axes and the index rows (any row may name any element) stay whole."""
    sx, si = _shape(operands[0]), _shape(operands[1])
    m = const_dim(si[-1]) or 0
    fd, fi = fx.new(len(sx)), fx.new(len(si))
    return Rule([list(fd), list(fi), [*fi[:-1], *fd[m:]]], [list(fd)],
                replicated={*fd[:m], *fi})


def _index_tensor(fx: _Factors, operands: Sequence[TensorSInfo], out: TensorSInfo) -> Rule:
    """index_tensor: the broadcast index axes split the index tensors (where not broadcast)
    and the result alike, the data's axes after the indexed ones split data and result
    alike; the indexed axes stay whole."""
    sx, so = _shape(operands[0]), _shape(out)
    k = len(operands) - 1
    nb = len(so) - (len(sx) - k)
    fd, fb = fx.new(len(sx)), fx.new(nb)
    picks = []
    for s in operands[1:]:
        shape = _shape(s)
        lead = nb - len(shape)
        picks.append([fb[lead + j] if dims_equal(d, so[lead + j]) else None
                      for j, d in enumerate(shape)])
    return Rule([list(fd), *picks], [[*fb, *fd[k:]]], replicated=set(fd[:k]))


def _scatter(fx: _Factors, call: GCall, operands: Sequence[TensorSInfo]) -> Rule:
    """scatter_elements: updates move along `axis` only, so the other axes split data,
    indices, updates and result alike where the indices span the data's whole axis; the
    scatter axis, and any axis the indices cover only part of, stay whole."""
    sx, si = _shape(operands[0]), _shape(operands[1])
    fs = fx.new(len(sx))
    axis = normalize_axis(int(call.attrs.get("axis", 0)), len(sx)) or 0
    fi: list[Factor] = [fs[a] if a != axis and dims_equal(si[a], sx[a]) else None
                        for a in range(len(sx))]
    whole = {fs[a] for a in range(len(sx)) if fi[a] is None}
    return Rule([list(fs), list(fi), list(fi)], [list(fs)], replicated=whole)


def _loss(fx: _Factors, call: GCall, operands: Sequence[TensorSInfo]) -> Rule:
    """nll_loss: the class axis stays whole; the batch and spatial axes split predictions,
    targets and (`none`) the result alike, or (`sum`) are summed, a split one leaving a
    partial sum; a `mean` divides two sums and keeps everything whole.
    cross_entropy_with_logits sums every axis but the batch it divides by, which stays
    whole (an axis of a 1-D input is summed)."""
    shape = _shape(operands[0])
    fs = fx.new(len(shape))
    if call.op == "nn.cross_entropy_with_logits":
        summed = fs[1:] if len(fs) > 1 else fs
        return Rule([list(fs), list(fs)], [[]], reduction={f: "sum" for f in summed},
                    replicated=set(fs) - set(summed))
    classes = fs[1] if len(fs) > 1 else fs[0]
    per_target = [f for f in fs if f != classes]
    ops = [list(fs), list(per_target)] + [[classes] for _ in operands[2:]]
    reduction = str(call.attrs.get("reduction", "mean"))
    if reduction == "none":
        return Rule(ops, [list(per_target)], replicated={classes})
    if reduction == "sum":
        return Rule(ops, [[]], reduction={f: "sum" for f in per_target}, replicated={classes})
    return Rule(ops, [[]], replicated=set(fs))


def _window(fx: _Factors, call: GCall, operands: Sequence[TensorSInfo],
            out: TensorSInfo) -> Rule:
    """Convolution, pooling and resizing: the batch splits; pooling and resizing also split
    channels, a convolution of one group its output channels (with the weight's); the
    spatial axes and a convolution's input channels stay whole."""
    nd = len(_shape(operands[0]))
    spatial = "DHW"[3 - (nd - 2):]
    attrs = call.attrs
    conv = call.op.startswith("nn.conv")
    layout = str(attrs.get("data_layout" if conv else "layout", "") or "NC" + spatial)
    out_layout = str(attrs.get("out_layout") or layout)
    layout, out_layout = (_letters(x) for x in (layout, out_layout))
    spatial = "".join(c for c in layout if c in "DHW")
    (batch,) = fx.new()
    (channel,) = fx.new()
    data: list[Factor] = [batch if c == "N" else (None if conv else channel if c == "C" else None)
                          for c in layout]
    result: list[Factor] = [batch if c == "N" else None for c in out_layout]
    ops = [data]
    if conv:
        kernel = str(attrs.get("kernel_layout", "") or
                     ("IO" if call.op.endswith("_transpose") else "OI") + spatial)
        whole_o = int(attrs.get("groups", 1)) == 1
        ops.append([channel if c == "O" and whole_o else None for c in kernel])
        if whole_o:
            result[out_layout.index("C")] = channel
    else:
        result[out_layout.index("C")] = channel
    ops += [[None] * len(_shape(s)) for s in operands[len(ops):]]
    return Rule(ops, [result])


def _letters(layout: str) -> str:
    """A layout's axis letters, one per dimension (`NCHW16c` -> `NCHWc`)."""
    return "".join(c for c in layout if c.isalpha())


def _attention(fx: _Factors, operands: Sequence[TensorSInfo]) -> Rule:
    """Batch and heads split query, key, value, bias and result alike; the sequences and the
    head dimensions stay whole (a causal mask reads global positions)."""
    batch, heads = fx.new(2)
    bsnh: list[Factor] = [batch, None, heads, None]
    ops = [list(bsnh) for _ in operands[:3]]
    if len(operands) > 3:
        bias = _shape(operands[3])
        ops.append([batch if const_dim(bias[0]) != 1 else None,
                    heads if const_dim(bias[1]) != 1 else None, None, None])
    return Rule(ops, [list(bsnh)])


def _astype_partial(call: GCall) -> PartialRule:
    """A cast to a float type passes partial sums; to an integer it does not."""
    target = str(call.attrs.get("dtype", ""))
    return _all_same(("sum",)) if target.startswith(("float", "bfloat")) else (lambda ops: None)


def has_rule(op: str) -> bool:
    """True when `op` has a rule of its own (not the opaque, replicate-everything one)."""
    return op in BINARY or op in UNARY or op in REDUCTION_OPS or op in DECOMPOSABLE or \
        op in CREATION or op in LIKE or op in MOVING or op in SCANS or op in STATISTICS or \
        op in WINDOWS or op in COLLAPSES or op in LOSSES or \
        op in ("astype", "broadcast_to", "matmul", "permute_dims", "expand_dims", "squeeze",
               "reshape", "flatten", "concat", "split", "take", "nn.prelu", "nn.batch_norm",
               "arange",
               "nn.attention", "nn.group_norm", "nn.instance_norm", "scatter_elements",
               "gather_elements", "slice_scatter", "einsum", "topk", "bucketize", "tril", "triu",
               "gather_nd", "one_hot", "nn.dropout", "nn.pixel_shuffle", "scatter_nd",
               "index_tensor", "layout_transform", "quantize", "dequantize",
               "image.affine_grid")
