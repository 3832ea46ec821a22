"""Float constants in LLVM IR are rounded to their dtype with `struct` (code generation needs no
numpy); the rounding equals numpy's for every value, overflow to infinity included."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from tirc.backends.llvm.expr import _round_float
from tirc.ir.dtype import dtype

SPECIAL = [0.0, -0.0, 1.0, 0.1, -2.5, 1e-45, 3.4028235e38, 3.4028236e38, 1e39, -1e39, 65504.0,
           65520.0, 7e4, 6e-8, 1e-8, math.inf, -math.inf, 5e-324, 1.7976931348623157e308]


def _numpy(value: float, name: str) -> float:
    with np.errstate(over="ignore"):
        if name == "bfloat16":
            bits = int(np.array(value, np.float32).view(np.uint32))
            if np.isnan(value):
                return value
            bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
            return float(np.array(bits & 0xFFFFFFFF, np.uint32).view(np.float32))
        return float(np.dtype(name).type(value))


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) ==
                                                 math.copysign(1, b))


@given(st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(SPECIAL))
def test_rounding_equals_numpy(value: float) -> None:
    for name in ("float16", "bfloat16", "float32", "float64"):
        assert _same(_round_float(value, dtype(name)), _numpy(value, name)), (value, name)
