"""Sizes an operator call assumed equal, and the run-time checks that hold them.

Like TVM's Relax, struct info inference refuses two dimensions only when it proves them
different (`3` and `4`, `n` and `n + 1`); two it cannot decide (`n` and `m`) it assumes equal
(`dims_match` in sinfo_util). Each such assumption of a call becomes a `SizeCheck`: the reference
interpreter checks it before it runs the call, and legalize-ops binds it as
`R.tirc.size_check(lhs, rhs, format=...)` before the call's kernel, which lower-graph compiles to
a `tirc.check` of the entry (a failed one sets the message and returns -1). Both report the same
message: `file:line:col: R.add: sizes n = 3 and m = 4 must be equal`.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import PrimExpr, binop
from tirc.ir.graph import GCall, PrimValue, StructInfo, Tuple, TupleSInfo
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import collect_assumptions, dim_text, dims_equal, shape_vars
from tirc.ir.structural import structural_equal

SIZE_CHECK = "tirc.size_check"


@dataclass(frozen=True)
class SizeCheck:
    """`lhs == rhs` at run time; `fmt` is the failure's printf message (two `%lld`: the values
    of lhs and rhs)."""

    lhs: PrimExpr
    rhs: PrimExpr
    fmt: str

    def condition(self) -> PrimExpr:
        """The boolean expression that holds when the sizes agree."""
        return binop("eq", self.lhs, self.rhs)

    def message(self, lhs: int, rhs: int) -> str:
        """The failure's message for the actual sizes (as the compiled check prints it)."""
        return self.fmt.replace("%lld", "%d") % (lhs, rhs)

    def text(self) -> str:
        """The message without the values: `R.add: sizes n and m must be equal` (a GPU launch
        plan's check, whose runtime appends them)."""
        return self.fmt.replace(" = %lld", "").replace("%%", "%")

    def call(self, span: Any = None) -> GCall:
        """The graph binding's value that checks it: `R.tirc.size_check(lhs, rhs, format=...)`."""
        return GCall(SIZE_CHECK, (PrimValue(self.lhs), PrimValue(self.rhs)), {"format": self.fmt},
                     span=span)


def size_check_of(call: GCall) -> SizeCheck:
    """The check an `R.tirc.size_check` call makes."""
    lhs, rhs = call.args
    assert isinstance(lhs, PrimValue) and isinstance(rhs, PrimValue)
    return SizeCheck(lhs.value, rhs.value, str(call.attrs.get("format", "")))


def _fmt(call: GCall, lhs: PrimExpr, rhs: PrimExpr) -> str:
    """`file:line:col: R.op: sizes lhs = %lld and rhs = %lld must be equal` (printf-safe)."""
    where = f"{call.span}: " if call.span is not None else ""
    a, b = (dim_text(d).replace("%", "%%") for d in (lhs, rhs))
    return f"{where}R.{call.op}: sizes {a} = %lld and {b} = %lld must be equal"


def call_size_checks(call: GCall, module: Any = None) -> tuple[SizeCheck, ...]:
    """The checks of the equalities `call`'s struct info inference assumed (none for a call
    whose argument shapes are all constant, or that the inference refuses)."""
    from tirc.ir.ops.infer import infer_expr

    if call.op == SIZE_CHECK or not _symbolic_args(call):
        return ()
    with collect_assumptions() as found:
        try:
            infer_expr(call, module)
        except CompileError:
            return ()
    checks: list[SizeCheck] = []
    for lhs, rhs in found:
        if dims_equal(lhs, rhs) or any(structural_equal(c.lhs, lhs) and
                                       structural_equal(c.rhs, rhs) for c in checks):
            continue
        checks.append(SizeCheck(lhs, rhs, _fmt(call, lhs, rhs)))
    return tuple(checks)


def _symbolic_args(call: GCall) -> bool:
    """Whether an argument's struct info has a symbolic size (only those make assumptions)."""
    return any(_symbolic(a) for a in call.args)


def _symbolic(value: object) -> bool:
    """Whether a value (a variable, a tuple of them, their struct info) has a symbolic size."""
    if isinstance(value, Tuple):
        return any(_symbolic(f) for f in value.fields)
    s = getattr(value, "struct_info", value)
    if isinstance(s, TupleSInfo):
        return any(_symbolic(f) for f in s.fields)
    return bool(shape_vars(getattr(s, "shape", None) or ()))


def _infer_size_check(oc: OpCall) -> StructInfo:
    """`R.tirc.size_check` gives nothing (an empty tuple); it is kept for its check."""
    return TupleSInfo(())


register(SIZE_CHECK, [Param("lhs", "scalar"), Param("rhs", "scalar"),
                      Param("format", "str", "")], _infer_size_check)
