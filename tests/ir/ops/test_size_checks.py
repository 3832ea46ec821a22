"""Sizes struct info inference cannot prove equal: accepted as TVM's Relax accepts them, each
assumption a run-time check of the call (`call_size_checks`); sizes that provably differ
(3 and 4, n and n + 1) stay refused with the operator's diagnostic."""

from __future__ import annotations

from typing import Any

import pytest
from tirc.ir import CompileError
from tirc.ir.expr import Var
from tirc.ir.graph import GCall, GVar, ShapeExpr, Tuple
from tirc.ir.ops import infer_expr, sinfo_text, tensor
from tirc.ir.ops.sinfo_util import (
    INT64,
    collect_assumptions,
    dim,
    dim_text,
    dims_differ,
    dims_match,
)
from tirc.ir.ops.size_checks import SIZE_CHECK, call_size_checks, size_check_of
from tirc.ir.span import Span

n, m, k, c, h = (Var(s, INT64) for s in ("n", "m", "k", "c", "h"))
SPAN = Span("model.tir", 7, 9, 7, 30)


def t(*shape: Any) -> GVar:
    return GVar(name="x", struct_info=tensor(shape, "float32"))


def call(op: str, *args: Any, **attrs: Any) -> GCall:
    return GCall(op, tuple(args), attrs, span=SPAN)


def checked(op: str, *args: Any, **attrs: Any) -> tuple[str, list[str]]:
    """The result's struct info and the messages of the call's checks, for sizes 3 and 4."""
    e = call(op, *args, **attrs)
    checks = call_size_checks(e)
    return sinfo_text(infer_expr(e)[1]), [x.message(3, 4) for x in checks]


def refused(op: str, *args: Any, **attrs: Any) -> str:
    with pytest.raises(CompileError) as info:
        infer_expr(call(op, *args, **attrs))
    return info.value.diagnostics[0].message


def test_dims_match_refuses_only_what_provably_differs() -> None:
    assert dims_differ(dim(3), dim(4)) and dims_differ(n, n + 1) and dims_differ(n * 2, n * 2 + 1)
    assert not dims_differ(n, m) and not dims_differ(n * 256, n * 255)  # both 0 when n is
    with collect_assumptions() as found:
        assert dims_match(n, n) and dims_match(n * 2, n + n)  # proved: nothing assumed
        assert not dims_match(n, n + 1) and not dims_match(dim(3), dim(4))
        assert dims_match(n, m) and dims_match(dim(3), k)
    assert [(dim_text(a), dim_text(b)) for a, b in found] == [("n", "m"), ("3", "k")]
    assert dims_match(n, m)  # outside a collection: accepted, nothing recorded


def test_the_examples_are_accepted_with_their_checks() -> None:
    where = "model.tir:7:9: "
    assert checked("add", t(n), t(m)) == (
        'R.Tensor((n,), "float32")', [f"{where}R.add: sizes n = 3 and m = 4 must be equal"])
    assert checked("matmul", t(n, k), t(m, 5)) == (
        'R.Tensor((n, 5), "float32")', [f"{where}R.matmul: sizes k = 3 and m = 4 must be equal"])
    assert checked("reshape", t(n, m), ShapeExpr((n // 2, m * 2)))[1] == [
        f"{where}R.reshape: sizes n // 2 * (m * 2) = 3 and n * m = 4 must be equal"]
    bn = checked("nn.batch_norm", t(2, h, 3), t(c), t(c), t(c), t(c), axis=1)
    assert bn[1] == [f"{where}R.nn.batch_norm: sizes c = 3 and h = 4 must be equal"]
    assert checked("nn.conv2d_transpose", t(1, c, 5, 5), t(k, 4, 3, 3)) == (
        'R.Tensor((1, 4, 7, 7), "float32")',
        [f"{where}R.nn.conv2d_transpose: sizes c = 3 and k = 4 must be equal"])


def test_provably_different_sizes_stay_refused() -> None:
    assert refused("add", t(n), t(n + 1)) == "R.add: cannot broadcast (n,) with (n + 1,)"
    assert refused("matmul", t(n, 3), t(4, m)) == "R.matmul: reduction dimensions differ: " \
        "(n, 3) @ (4, m)"
    assert refused("reshape", t(n, 4), ShapeExpr((n + 1, 4))) == \
        "R.reshape: cannot reshape (n, 4) to (n + 1, 4)"
    assert refused("nn.conv2d_transpose", t(1, 3, 5, 5), t(4, 4, 3, 3)).startswith(
        "R.nn.conv2d_transpose: the data has 3 channels; the weight takes 4")


def test_constant_and_proved_sizes_need_no_check() -> None:
    assert checked("add", t(n, 4), t(n, 4))[1] == []
    assert checked("add", t(n * 2), t(n + n))[1] == []
    assert checked("concat", Tuple((t(n, 4), t(m, 4))), axis=0)[1] == []


def test_a_check_is_a_graph_call() -> None:
    """`R.tirc.size_check(lhs, rhs, format=...)`: what legalize-ops binds before a kernel."""
    (check,) = call_size_checks(call("add", t(n), t(m)))
    e = check.call(SPAN)
    assert e.op == SIZE_CHECK and size_check_of(e) == check
    assert sinfo_text(infer_expr(e)[1]) == "R.Tuple()"
    assert check.text() == "model.tir:7:9: R.add: sizes n and m must be equal"
