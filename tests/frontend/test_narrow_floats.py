"""TVM's narrow floats (float8_e4m3fn, float8_e5m2, ..., float6_*, float4_e2m1fn): parsed,
printed back in both spellings, run by the interpreter against ml_dtypes, refused at their place
by a CPU or GPU build (no backend has code for them yet)."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from tirc.cli.compile_cmd import CompileOptions, compile_file
from tirc.frontend import parse
from tirc.ir import structural_equal
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import NARROW_FLOATS, DTypeError, dtype
from tirc.ir.interpreter import run_prim_func
from tirc.ir.printer import print_module

SRC = '''# from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(A: T.Buffer((8,), "float8_e4m3fn"), B: T.Buffer((8,), "float32"),
         C: T.Buffer((8,), "float8_e5m2"), D: T.Buffer((4,), "float4_e2m1fn")):
    for i in range(8):
        with T.sblock("c"):
            vi = T.axis.spatial(8, i)
            B[vi] = T.Cast("float32", A[vi]) * T.float32(2.0)
            x: T.float8_e4m3fn = A[vi] + A[vi]
            C[vi] = T.Cast("float8_e5m2", B[vi] + T.float32(0.5)) + T.Cast("float8_e5m2", x)
    for j in range(4):
        D[j] = T.Cast("float4_e2m1fn", A[j * 2]) * T.float4_e2m1fn(2.0)
'''


def test_every_narrow_float_parses_and_prints_its_name() -> None:
    for bits, variants in NARROW_FLOATS.items():
        for v in variants:
            for lanes in ("", "x4"):
                name = f"float{bits}_{v}{lanes}"
                dt = dtype(name)
                assert str(dt) == name and dt.is_narrow_float and dt.is_float
                assert dt.bits == bits and dt.lanes == (4 if lanes else 1)
                assert dt.element().numpy_name() == f"float{bits}_{v}"
    for bad in ("float8", "float8_e9m9", "float8_e4m3fnx0", "float4_e5m2", "float8_e4m3fnx"):
        with pytest.raises(DTypeError):
            dtype(bad)


def test_round_trip_in_both_spellings() -> None:
    mod = parse(SRC, "f8.tir")
    for syntax in ("tirx", "classic"):
        text = print_module(mod, syntax=syntax)
        assert 'T.Buffer((8,), "float8_e4m3fn")' in text and "x: T.float8_e4m3fn" in text
        again = parse(text, "again.tir")
        assert structural_equal(again, mod)
        assert print_module(again, syntax=syntax) == text


def test_interpreter_computes_as_ml_dtypes() -> None:
    mod = parse(SRC, "f8.tir")
    a = np.linspace(-3, 3, 8).astype(ml_dtypes.float8_e4m3fn)
    b = np.zeros(8, np.float32)
    c = np.zeros(8, ml_dtypes.float8_e5m2)
    d = np.zeros(4, ml_dtypes.float4_e2m1fn)
    run_prim_func(mod["main"], [a, b, c, d])
    want_b = a.astype(np.float32) * 2
    np.testing.assert_array_equal(b, want_b)
    want_c = (want_b + 0.5).astype(ml_dtypes.float8_e5m2) + (a + a).astype(ml_dtypes.float8_e5m2)
    np.testing.assert_array_equal(c.astype(np.float32), want_c.astype(np.float32))
    want_d = a[::2].astype(ml_dtypes.float4_e2m1fn) * ml_dtypes.float4_e2m1fn(2.0)
    np.testing.assert_array_equal(d.astype(np.float32), want_d.astype(np.float32))


@pytest.mark.parametrize("target, backend, where", [
    ("llvm", "CPU (LLVM)", (4, 13)),  # the first buffer of that dtype
    ("cuda", "NVPTX", (3, 1)),        # the kernel (the host/device split keeps no finer place)
])
def test_builds_refuse_them_at_their_place(target: str, backend: str, where: tuple[int, int],
                                           tmp_path: Path) -> None:
    src = tmp_path / "f8.tir"
    src.write_text(SRC)
    out = tmp_path / ("f8.so" if target == "llvm" else "f8.ptx")
    with pytest.raises(CompileError) as info:
        compile_file(CompileOptions(file=str(src), output=str(out), target=target))
    d = info.value.diagnostics[0]
    assert d.span is not None and (d.span.line, d.span.col) == where
    assert d.message.startswith(f"dtype float8_e4m3fn is not supported by the {backend} backend")
