"""Legalization of fused multi-head attention (`nn.attention`), after TVM's `_te_attention`:
the scores `Q K^T` per batch and head as one reduction block, then the softmax over the keys
(the row maximum, the exponentials, their sum) and the weighted sum of the values divided by
that sum. The scale (`scale`, else division by `sqrt(head_dim)`) and the bias are applied where
the scores are read; a causal mask keeps the masked scores out of the maximum and gives them
exponential 0, which is the softmax with those scores at -inf."""

from __future__ import annotations

from tirc.ir.expr import PrimExpr, binop, call, cast, const, if_then_else
from tirc.ir.graph import StructInfo
from tirc.ir.ops.registry import OpCall
from tirc.ir.ops.sinfo_util import dim
from tirc.passes.graph.kernel import Indices, Kernel, Operand, limit
from tirc.passes.graph.legalize_table import legalizer, out_tensor


@legalizer("nn.attention")
def attention(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("attention")
    q = k.input("Q", oc.values["query"], oc.tensor("query"))
    key = k.input("K", oc.values["key"], oc.tensor("key"))
    v = k.input("V", oc.values["value"], oc.tensor("value"))
    bias = None
    if oc.values["bias"] is not None:
        bias = Operand.of(k.input("B", oc.values["bias"], oc.tensor("bias")))
    y = k.output("T_attention", out_tensor(out))
    dt = y.dtype
    batch, seq, heads, head_dim = q.shape
    seq_kv = key.shape[1]
    rows = (batch, heads, seq, seq_kv)
    scores = k.temp("T_score", rows, dt)
    k.reduce("T_score", scores, [head_dim], "add", const(0, dt),
             lambda s, r: binop("mul", q.vload(s[0], s[2], s[1], r[0]),
                                key.vload(s[0], s[3], s[1], r[0])))
    scale = oc.values["scale"]
    factor = None if scale is None else const(float(scale), dt)
    root = call("sqrt", cast(dt, head_dim))

    def logit(i: Indices) -> PrimExpr:
        """The scaled, biased score at (batch, head, query, key) `i`."""
        p = scores.vload(*i)
        p = binop("mul", p, factor) if factor is not None else binop("div", p, root)
        return p if bias is None else binop("add", p, bias.at(i, rows))

    mask = oc.values["causal_mask"]
    offset: PrimExpr = dim(0)
    if mask == "BottomRight":
        offset = binop("max", binop("sub", seq, seq_kv), binop("sub", seq_kv, seq))

    def kept(i: Indices) -> PrimExpr | None:
        """Whether the causal mask keeps the score at `i` (None: no mask)."""
        if mask is None:
            return None
        return binop("le", i[3], binop("add", i[2], offset))

    lowest = limit(dt, highest=False)
    maxes = k.temp("T_max", rows[:3], dt)

    def masked_logit(s: Indices, r: Indices) -> PrimExpr:
        i = (*s, r[0])
        keep = kept(i)
        return logit(i) if keep is None else if_then_else(keep, logit(i), lowest)

    k.reduce("T_max", maxes, [seq_kv], "max", lowest, masked_logit)
    exps = k.temp("T_exp", rows, dt)

    def exp(i: Indices) -> PrimExpr:
        e = call("exp", binop("sub", logit(i), maxes.vload(*i[:3])))
        keep = kept(i)
        return e if keep is None else if_then_else(keep, e, const(0, dt))

    k.compute("T_exp", exps, exp)
    sums = k.temp("T_expsum", rows[:3], dt)
    k.reduce("T_expsum", sums, [seq_kv], "add", const(0, dt),
             lambda s, r: exps.vload(*s, r[0]))

    def weighted(s: Indices, r: Indices) -> PrimExpr:
        b, i, h, d = s
        weight = binop("div", exps.vload(b, h, i, r[0]), sums.vload(b, h, i))
        return binop("mul", weight, v.vload(b, r[0], h, d))

    k.reduce(y.name, y, [seq_kv], "add", const(0, dt), weighted)
    return k
