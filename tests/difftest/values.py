"""What the program generators know about the values they compute, so that compiled and
interpreted results can be compared exactly where the arithmetic is exact.

Inputs hold small multiples of 1/8 (floats) or small integers; a value is *exact* when every
operation on the way to it is exact in its dtype (sums and products of dyadic numbers that fit
the mantissa, casts of exact values). Only exact values may feed an operation whose result
jumps at a threshold (a float to int cast, a cast to float16, a comparison in a select): a
rounding difference from a reordered sum or an FMA there would become a large difference that
is not a bug.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MANTISSA_BITS = {"float32": 23, "float16": 10, "int32": 30}
MAGNITUDE_LIMIT = {"float32": 1e6, "float16": 1000.0, "int32": float(1 << 24)}


@dataclass(frozen=True)
class Info:
    """A bound on |value|, the values' granularity (multiples of 2**-frac) and whether an
    inexact operation (a transcendental, a rounding) produced them."""

    dtype: str
    mag: float
    frac: int = 0
    rounded: bool = False
    # a NaN in the reference is an undefined value (a temporary nothing wrote), not a result
    undefined_nan: bool = False

    @property
    def exact(self) -> bool:
        if self.rounded:
            return False
        if self.dtype == "bool":
            return True
        if self.dtype in ("int32", "int64"):  # int64: positions (argmax), never large
            return self.mag < MAGNITUDE_LIMIT["int32"]
        bits = math.log2(max(self.mag, 1.0)) + self.frac
        return bits <= MANTISSA_BITS[self.dtype]

    def with_(self, **changes: object) -> Info:
        fields = {"dtype": self.dtype, "mag": self.mag, "frac": self.frac,
                  "rounded": self.rounded}
        fields.update(changes)
        return Info(**fields)  # type: ignore[arg-type]


def combine(op: str, a: Info, b: Info) -> Info:
    """The Info of `a op b`."""
    rounded = a.rounded or b.rounded
    if op in ("add", "sub"):
        return Info(a.dtype, a.mag + b.mag, max(a.frac, b.frac), rounded)
    if op == "mul":
        return Info(a.dtype, a.mag * b.mag, a.frac + b.frac, rounded)
    return Info(a.dtype, max(a.mag, b.mag), max(a.frac, b.frac), rounded)


INPUT_INFO = {"float32": Info("float32", 4.0, 3), "float16": Info("float16", 4.0, 3),
              "int32": Info("int32", 8.0)}


def random_input(shape: tuple[int, ...], dt: str, rng: np.random.Generator) -> np.ndarray:
    """Input data as INPUT_INFO describes it: multiples of 1/8 in [-4, 4], or ints in [-8, 8];
    int8 and uint8 anywhere in their dtype (their arithmetic wraps, which is what is checked)."""
    if dt == "int32":
        return rng.integers(-8, 9, size=shape).astype(np.int32)
    if dt == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dt in ("int8", "uint8"):
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dt)
    return (rng.integers(-32, 33, size=shape) / 8).astype(dt)


def tolerance(info: Info) -> tuple[float, float]:
    """(rtol, atol) for comparing an output with this Info: none for exact values."""
    if info.exact or info.dtype in ("int32", "int64", "bool"):
        return 0.0, 0.0
    if info.dtype == "float16":
        return 2e-3, 2e-3 * max(1.0, info.mag)
    return 1e-5, 1e-5 * max(1.0, info.mag)
