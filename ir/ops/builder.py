"""GraphBuilder: build a graph function binding by binding, inferring struct info as it goes.

    gb = GraphBuilder()
    n = gb.sym("n")
    x = gb.param("x", (n, 256), "float32")
    b = gb.param("b", (256,), "float32")
    y = gb.emit("nn.relu", gb.emit("add", x, b))
    func = gb.function("main", y)

Like Relax's BlockBuilder: tests build programs with it, and passes emit new bindings with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tirc.ir.dtype import DType
from tirc.ir.expr import PrimExpr, Var
from tirc.ir.graph import (
    Binding,
    BindingBlock,
    Function,
    GCall,
    GraphExpr,
    GVar,
    MatchCast,
    SeqExpr,
    StructInfo,
    VarBinding,
)
from tirc.ir.ops.infer import infer_expr
from tirc.ir.ops.sinfo_util import INT64, tensor
from tirc.ir.visitor import post_order_visit, substitute


class GraphBuilder:
    """Accumulates parameters and bindings (one dataflow block) of a graph function."""

    def __init__(self, module: Any = None, dataflow: bool = True) -> None:
        self.module = module
        self.dataflow = dataflow
        self.params: list[GVar] = []
        self.bindings: list[Binding] = []
        self._names: set[str] = set()

    def sym(self, name: str) -> Var:
        """A symbolic size (`n = T.int64()`)."""
        return Var(name, INT64)

    def _fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self._names:
            k += 1
            name = f"{base}{k}"
        self._names.add(name)
        return name

    def param(self, name: str, shape: Sequence[int | PrimExpr] | None = None,
              dt: str | DType = "float32", sinfo: StructInfo | None = None) -> GVar:
        """A parameter typed `R.Tensor(shape, dt)` (or any struct info)."""
        s = sinfo if sinfo is not None else tensor(shape or (), dt)
        v = GVar(name=self._fresh(name), struct_info=s)
        self.params.append(v)
        return v

    def emit(self, op: str | GraphExpr, *args: Any, name: str = "lv",
             sinfo_args: Sequence[StructInfo] = (), **attrs: Any) -> GVar:
        """Bind `R.<op>(*args, **attrs)` (or a ready expression) to a new variable."""
        value = op if isinstance(op, GraphExpr) else GCall(op, tuple(args), dict(attrs),
                                                           tuple(sinfo_args))
        value, sinfo = infer_expr(value, self.module)
        var = GVar(name=self._fresh(name), struct_info=sinfo, is_dataflow=self.dataflow)
        self.bindings.append(VarBinding(var, value))
        return var

    def match_cast(self, value: GraphExpr, sinfo: StructInfo, name: str = "lv") -> GVar:
        """Bind `R.match_cast(value, sinfo)`."""
        var = GVar(name=self._fresh(name), struct_info=sinfo, is_dataflow=self.dataflow)
        self.bindings.append(MatchCast(var, value, sinfo))
        return var

    def function(self, name: str, result: GraphExpr, attrs: dict[str, Any] | None = None
                 ) -> Function:
        """The function returning `result`; in a dataflow block, the result is its output."""
        outputs: tuple[GVar, ...] = ()
        bindings = list(self.bindings)
        if self.dataflow:
            outs = _outputs_of(result, bindings)
            mapping = {v: GVar(name=v.name, struct_info=v.struct_info, is_dataflow=False)
                       for v in outs}
            bindings = [substitute(b, mapping) for b in bindings]
            result = substitute(result, mapping)
            outputs = tuple(mapping[v] for v in outs)
        block = BindingBlock(tuple(bindings), self.dataflow, outputs)
        _, ret = infer_expr(result, self.module)
        return Function(name, tuple(self.params), SeqExpr((block,), result), ret, dict(attrs or {}))


def _outputs_of(result: GraphExpr, bindings: list[Binding]) -> list[GVar]:
    bound = {b.var for b in bindings}
    found: list[GVar] = []
    post_order_visit(result, lambda n: found.append(n) if isinstance(n, GVar) and n in bound
                     and n not in found else None)
    return found

