"""`T.vectorlow` / `T.vectorhigh` / `T.vectorcombine` in TVM's form, the result dtype first
(`T.vectorhigh("int16x4", v)`), or with it inferred or given as `dtype=`: they parse, print in
TVM's form and round-trip; a stated dtype that is not the operand's half (or double) is a
diagnostic at its place."""

from __future__ import annotations

import pytest
from frontend_support import round_trip
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.printer import print_module

HEAD = '''from tvm.script import tir as T


@T.prim_func
def f(A: T.Buffer((8,), "int16"), B: T.Buffer((8,), "int16")):
'''

TVM_FORM = HEAD + '''    B[T.ramp(0, 1, 4)] = T.vectorhigh("int16x4", A[T.ramp(0, 1, 8)])
    B[T.ramp(4, 1, 4)] = T.vectorlow("int16x4", A[T.ramp(0, 1, 8)])
    B[T.ramp(0, 1, 8)] = T.vectorcombine(
        "int16x8",
        T.vectorlow("int16x4", A[T.ramp(0, 1, 8)]),
        T.vectorhigh("int16x4", A[T.ramp(0, 1, 8)]),
    )
'''

SHORT_FORMS = HEAD + '''    v = A[T.ramp(0, 1, 8)]
    B[T.ramp(0, 1, 4)] = T.vectorhigh(v)
    B[T.ramp(4, 1, 4)] = T.vectorlow(v, dtype="int16x4")
    B[T.ramp(0, 1, 8)] = T.vectorcombine(T.vectorlow(v), T.vectorhigh(v))
'''


def test_tvm_form_parses_prints_and_round_trips() -> None:
    printed = print_module(round_trip(TVM_FORM))
    assert 'T.vectorhigh("int16x4", A[T.Ramp(0, 1, 8)])' in printed
    assert 'T.vectorlow("int16x4", A[T.Ramp(0, 1, 8)])' in printed
    assert 'T.vectorcombine("int16x8", T.vectorlow("int16x4", ' in printed


def test_inferred_and_keyword_dtypes_print_in_tvm_form() -> None:
    printed = print_module(round_trip(SHORT_FORMS))
    assert 'T.vectorhigh("int16x4", v)' in printed
    assert 'T.vectorlow("int16x4", v)' in printed
    assert 'T.vectorcombine("int16x8", T.vectorlow("int16x4", v), T.vectorhigh("int16x4", v))' \
        in printed


@pytest.mark.parametrize("body, col, message", [
    ('B[T.ramp(0, 1, 4)] = T.vectorhigh("int32x4", A[T.ramp(0, 1, 8)])', 50,
     "T.vectorhigh of int16x8 is int16x4, not int32x4"),
    ('B[T.ramp(0, 1, 4)] = T.vectorlow("int16x8", A[T.ramp(0, 1, 8)])', 49,
     "T.vectorlow of int16x8 is int16x4, not int16x8"),
    ('B[0] = T.vectorlow("int16", A[0])', 33, "T.vectorlow needs a vector operand, got int16"),
    ('B[T.ramp(0, 1, 3)] = T.vectorhigh("int16x2", A[T.ramp(0, 1, 3)])', 50,
     "T.vectorhigh needs an even number of lanes, got int16x3"),
    ('B[T.ramp(0, 1, 6)] = T.vectorcombine("int16x6", A[T.ramp(0, 1, 4)], A[T.ramp(4, 1, 2)])',
     73, "T.vectorcombine joins two vectors of one dtype, got int16x4 and int16x2"),
])
def test_wrong_dtypes_are_diagnostics(body: str, col: int, message: str) -> None:
    with pytest.raises(CompileError) as info:
        parse(HEAD + "    " + body + "\n", "f.tir")
    text = str(info.value)
    assert f"f.tir:6:{col}: error: {message}" in text, text
