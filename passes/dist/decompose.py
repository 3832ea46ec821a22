"""Normalizations over a split axis, as reductions of statistics.

When the axis a softmax or a norm reduces over is split across devices, gathering the whole
tensor onto every device would defeat the split. Written out in reductions and elementwise
operators instead, each statistic (a row max, a row sum, a mean of squares) becomes a partial
value that one small all-reduce completes, and the big tensor stays split:

    softmax(x)      m = max(x); e = exp(x - m); y = e / sum(e)
    log_softmax(x)  m = max(x); d = x - m; y = d - log(sum(exp(d)))
    layer_norm(x)   c = x - mean(x); y = c * rsqrt(mean(c * c) + eps) * gamma + beta
    rms_norm(x)     y = x * rsqrt(mean(x * x) + eps) * w
"""

from __future__ import annotations

from typing import Any

from tirc.ir.graph import Constant, GCall, GraphExpr, GVar, TensorSInfo, VarBinding
from tirc.ir.ops.sinfo_util import normalize_axis


class _Emitter:
    """Builds the bindings of a decomposition, each named after the original."""
    def __init__(self, base: VarBinding) -> None:
        self.base = base
        self.out: list[VarBinding] = []

    def __call__(self, op: str, *args: GraphExpr, **attrs: Any) -> GVar:
        var = GVar(f"{self.base.var.name}_{op.rsplit('.', 1)[-1]}{len(self.out)}",
                   is_dataflow=self.base.var.is_dataflow, span=self.base.span)
        self.out.append(VarBinding(var, GCall(op, tuple(args), attrs, span=self.base.span),
                                   span=self.base.span))
        return var

    def finish(self) -> list[VarBinding]:
        """The bindings, the last one binding the original variable."""
        last = self.out[-1]
        self.out[-1] = VarBinding(self.base.var, last.value, span=self.base.span)
        return self.out


def can_decompose(call: GCall, x: TensorSInfo) -> bool:
    """Whether `call` has a decomposition (a norm's axes must be the trailing ones, so its
    weights broadcast)."""
    if call.op in ("nn.softmax", "nn.log_softmax"):
        return True
    if call.op not in ("nn.layer_norm", "nn.rms_norm") or x.shape is None:
        return False
    nd = len(x.shape)
    axes = call.attrs.get("axes", [-1])
    axes = [normalize_axis(int(a), nd) for a in (axes if isinstance(axes, (list, tuple))
                                                  else [axes])]
    return sorted(a for a in axes if a is not None) == list(range(nd - len(axes), nd))


def decompose(b: VarBinding, x: TensorSInfo) -> list[VarBinding]:
    """The bindings computing `b`'s normalization from statistics; the last binds `b.var`."""
    call = b.value
    assert isinstance(call, GCall) and x.dtype is not None
    e = _Emitter(b)
    data = call.args[0]
    dt = x.dtype

    def const(v: float) -> Constant:
        return Constant(v, dt, span=b.span)

    if call.op in ("nn.softmax", "nn.log_softmax"):
        axis = [int(call.attrs.get("axis", -1))]
        m = e("max", data, axis=axis, keepdims=True)
        d = e("subtract", data, m)
        ex = e("exp", d)
        s = e("sum", ex, axis=axis, keepdims=True)
        if call.op == "nn.softmax":
            e("divide", ex, s)
        else:
            e("subtract", d, e("log", s))
        return e.finish()
    axes = call.attrs.get("axes", [-1])
    axes = list(axes) if isinstance(axes, (list, tuple)) else [axes]
    eps = const(float(call.attrs.get("epsilon", 1e-5)))
    if call.op == "nn.rms_norm":
        sq = e("multiply", data, data)
        r = e("rsqrt", e("add", e("mean", sq, axis=axes, keepdims=True), eps))
        e("multiply", e("multiply", data, r), call.args[1])
        return e.finish()
    c = e("subtract", data, e("mean", data, axis=axes, keepdims=True))
    var = e("mean", e("multiply", c, c), axis=axes, keepdims=True)
    y = e("multiply", c, e("rsqrt", e("add", var, eps)))
    if call.attrs.get("scale", True):
        y = e("multiply", y, call.args[1])
    if call.attrs.get("center", True):
        e("add", y, call.args[2])
    return e.finish()
