"""The table of operator legalizations: operator name -> function building its Kernel.

A legalizer receives the bound call (`OpCall`: graph arguments, attribute values, struct info)
and the call's output struct info, and returns the Kernel whose inputs are the call's tensor
arguments (`kernel.args`) and whose outputs are the results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import PrimExpr
from tirc.ir.function import PrimFunc
from tirc.ir.graph import GCall, GraphExpr, StructInfo, TensorSInfo
from tirc.ir.ops.registry import OpCall


class BuildsKernel(Protocol):
    """What a legalizer returns: a Kernel, or another builder of a loop function (the sparse
    ones build SparseTIR's form), with the graph arguments the call passes."""

    args: list[GraphExpr]

    def build(self) -> tuple[PrimFunc, list[PrimExpr]]:
        """The loop function and the graph values of its scalar parameters (tir_vars)."""


Legalizer = Callable[[OpCall, StructInfo], BuildsKernel]
LEGALIZERS: dict[str, Legalizer] = {}
_LOADED: list[bool] = []  # every family imported (a test may import one family by itself)


def legalizer(*names: str) -> Callable[[Legalizer], Legalizer]:
    """Register a legalizer for the operators `names`."""

    def register(fn: Legalizer) -> Legalizer:
        for name in names:
            LEGALIZERS[name] = fn
        return fn

    return register


def kernel_name(op: str) -> str:
    """The loop function's base name: `nn.softmax` -> `softmax`."""
    return op.rsplit(".", 1)[-1]


def out_tensor(out: StructInfo) -> TensorSInfo:
    assert isinstance(out, TensorSInfo) and out.shape is not None and out.dtype is not None
    return out


# Operators the interpreter runs but tirc does not compile, with the reason.
UNCOMPILED = {
    "dynamic_strided_slice": "its result's shape depends on the values of begin, end and "
    "strides, and a compiled tirc function allocates every result from its parameters' "
    "shapes (the interpreter runs it; R.strided_slice with constant bounds compiles)",
}


def refuse_uncompiled(call: GCall) -> None:
    """A diagnostic at a call of an operator that tirc does not compile, saying why."""
    if call.op in UNCOMPILED:
        raise CompileError(f"R.{call.op} is not compiled: {UNCOMPILED[call.op]}", call.span)


def get_legalizer(op: str) -> Legalizer | None:
    """The legalizer of `op`, loading every family on first use."""
    if not _LOADED:
        from tirc.passes.graph import (  # noqa: F401 (imported for their registrations)
            legalize_attention,
            legalize_conv,
            legalize_conv_transpose,
            legalize_creation,
            legalize_elementwise,
            legalize_image,
            legalize_indexing,
            legalize_layout,
            legalize_manipulation,
            legalize_matmul,
            legalize_nn,
            legalize_quantize,
            legalize_reduction,
            legalize_scatter,
            legalize_slicing,
            legalize_sparse,
        )

        _LOADED.append(True)
    return LEGALIZERS.get(op)
