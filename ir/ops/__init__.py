"""Graph-level operators: struct info inference per operator (Relax semantics).

`infer_expr(expr, module)` gives an expression's struct info; `get_op(name)` an operator's
definition; `GraphBuilder` builds graph functions with inference on every binding.
"""

from tirc.ir.ops.builder import GraphBuilder
from tirc.ir.ops.infer import infer_expr, match_cast_conflict, sinfo_agrees
from tirc.ir.ops.registry import OPS, OpCall, OpDef, Param, get_op, infer_call
from tirc.ir.ops.sinfo_util import dims_equal, shape_text, sinfo_text, tensor

__all__ = [
    "OPS", "GraphBuilder", "OpCall", "OpDef", "Param", "dims_equal", "get_op", "infer_call",
    "infer_expr", "match_cast_conflict", "shape_text", "sinfo_agrees", "sinfo_text", "tensor",
]
