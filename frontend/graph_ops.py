"""How graph-level operator calls map positional arguments: operands vs attributes.

`R.sum(x, 1, True)` and `R.sum(x, axis=1, keepdims=True)` build the same GCall: the first
`operands` positional arguments are graph values, the rest are attributes named in order.
Operators not listed here take every positional argument as an operand; keyword arguments
are always attributes (except `out_sinfo`). Shape inference of these operators comes with the
graph-level issue; this table only fixes their printed form.
"""

from __future__ import annotations

from dataclasses import dataclass

from tirc.ir.ops.elementwise import BINARY_OPS, UNARY_OPS


@dataclass(frozen=True)
class OpSig:
    operands: int
    attrs: tuple[str, ...] = ()


_UNARY = (*UNARY_OPS, "nn.relu", "nn.gelu", "nn.gelu_tanh", "nn.silu")
_BINARY = BINARY_OPS
_REDUCE = ("sum", "mean", "max", "min", "prod", "variance", "std", "argmax", "argmin")

OP_SIGNATURES: dict[str, OpSig] = {
    **{op: OpSig(1) for op in _UNARY},
    **{op: OpSig(2) for op in _BINARY},
    **{op: OpSig(1, ("axis", "keepdims")) for op in _REDUCE},
    "matmul": OpSig(2, ("out_dtype",)),
    "sparse.matmul": OpSig(2, ("out_dtype",)),
    "nn.softmax": OpSig(1, ("axis",)),
    "nn.log_softmax": OpSig(1, ("axis",)),
    "nn.layer_norm": OpSig(3, ("axes", "epsilon", "center", "scale")),
    "nn.rms_norm": OpSig(2, ("axes", "epsilon")),
    "reshape": OpSig(2),
    "flatten": OpSig(1),
    "permute_dims": OpSig(1, ("axes",)),
    "expand_dims": OpSig(1, ("axis",)),
    "squeeze": OpSig(1, ("axis",)),
    "concat": OpSig(1, ("axis",)),
    "split": OpSig(1, ("indices_or_sections", "axis")),
    "take": OpSig(2, ("axis",)),
    "broadcast_to": OpSig(2),
    "astype": OpSig(1, ("dtype",)),
    "zeros": OpSig(1, ("dtype",)),
    "ones": OpSig(1, ("dtype",)),
    "full": OpSig(2, ("dtype",)),
    "full_like": OpSig(2, ("dtype",)),
    "zeros_like": OpSig(1, ("dtype",)),
    "ones_like": OpSig(1, ("dtype",)),
    "where": OpSig(3),
    "clip": OpSig(1, ("min", "max")),
}
