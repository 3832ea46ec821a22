"""Data types: scalar and vector element types of the IR, by their TVM names."""

from __future__ import annotations

import re

from tirc.ir.lean_dataclass import dataclass

_KINDS = ("int", "uint", "float", "bfloat", "bool", "handle", "void")
_NAME = re.compile(r"^(int|uint|float|bfloat|bool|handle|void)(\d*)(?:x(\d+))?$")
_NARROW = re.compile(r"^float(\d+)_(e\d+m\d+\w*?)(?:x(\d+))?$")
# TVM's (and ml_dtypes') narrow floats by width: exponent/mantissa bits and the variant's
# special values (fn: finite, no infinity; fnuz: also no negative zero; fnu: unsigned).
NARROW_FLOATS: dict[int, tuple[str, ...]] = {
    8: ("e4m3fn", "e5m2", "e4m3fnuz", "e5m2fnuz", "e4m3", "e4m3b11fnuz", "e3m4", "e8m0fnu"),
    6: ("e2m3fn", "e3m2fn"),
    4: ("e2m1fn",),
}


class DTypeError(ValueError):
    """An unknown or malformed dtype name."""


@dataclass(frozen=True)
class DType:
    """A type code, a bit width and a vector lane count; `variant` names the format of a
    narrow float (`float8_e4m3fn`: kind float, 8 bits, variant e4m3fn), empty otherwise."""

    kind: str
    bits: int
    lanes: int = 1
    variant: str = ""

    @staticmethod
    def parse(name: str | DType) -> DType:
        if isinstance(name, DType):
            return name
        narrow = _NARROW.match(name)
        if narrow:
            bits_s, variant, lanes_s = narrow.groups()
            if variant not in NARROW_FLOATS.get(int(bits_s), ()) or lanes_s == "0" \
                    or (lanes_s or "1").startswith("0"):
                raise DTypeError(f"unknown dtype '{name}'")
            return DType("float", int(bits_s), int(lanes_s or 1), variant)
        m = _NAME.match(name)
        if not m:
            raise DTypeError(f"unknown dtype '{name}'")
        kind, bits_s, lanes_s = m.groups()
        if kind == "bool":
            bits = 1
        elif kind in ("handle", "void"):
            bits = 64 if kind == "handle" else 0
        else:
            if not bits_s:
                raise DTypeError(f"unknown dtype '{name}'")
            bits = int(bits_s)
        valid = {"int": (8, 16, 32, 64), "uint": (8, 16, 32, 64), "float": (16, 32, 64),
                 "bfloat": (16,)}
        if kind in valid and bits not in valid[kind]:
            raise DTypeError(f"unknown dtype '{name}'")
        if kind in ("bool", "handle", "void") and bits_s:
            raise DTypeError(f"unknown dtype '{name}'")
        lanes = int(lanes_s) if lanes_s else 1
        if lanes < 1:
            raise DTypeError(f"unknown dtype '{name}'")
        return DType(kind, bits, lanes)

    def __str__(self) -> str:
        base = self.kind if self.kind in ("bool", "handle", "void") else f"{self.kind}{self.bits}"
        if self.variant:
            base += f"_{self.variant}"
        return base if self.lanes == 1 else f"{base}x{self.lanes}"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_float(self) -> bool:
        return self.kind in ("float", "bfloat")

    @property
    def is_narrow_float(self) -> bool:
        """float8/float6/float4 (`float8_e4m3fn`, ...): stored and computed through ml_dtypes
        by the interpreter; no backend has code for them yet."""
        return bool(self.variant)

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_handle(self) -> bool:
        return self.kind == "handle"

    @property
    def is_void(self) -> bool:
        return self.kind == "void"

    @property
    def bytes(self) -> int:
        """Storage size of one element (bool takes a byte)."""
        return max(1, self.bits // 8) * self.lanes

    def with_lanes(self, lanes: int) -> DType:
        return DType(self.kind, self.bits, lanes, self.variant)

    def element(self) -> DType:
        return self.with_lanes(1)

    def numpy_name(self) -> str:
        """The numpy dtype name of one element (bfloat16 and the narrow floats need
        ml_dtypes)."""
        if self.kind == "bool":
            return "bool"
        if self.variant:
            return f"{self.kind}{self.bits}_{self.variant}"
        if self.kind == "bfloat":
            return "bfloat16"
        if self.kind in ("handle", "void"):
            raise DTypeError(f"dtype '{self}' has no numpy equivalent")
        return f"{self.kind}{self.bits}"


def dtype(name: str | DType) -> DType:
    """Parse a dtype name such as "float32" or "int64x4"."""
    return DType.parse(name)


BOOL = DType("bool", 1)
INT32 = DType("int", 32)
INT64 = DType("int", 64)
FLOAT32 = DType("float", 32)
HANDLE = DType("handle", 64)
VOID = DType("void", 0)

SCALAR_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "bfloat16", "float32", "float64")


def no_overflow(dt: DType) -> bool:
    """Whether integer arithmetic of `dt` (its lanes') is taken never to overflow: int32 and
    int64, as C and TVM take signed arithmetic (LLVM's `nsw`). int8, int16 and the unsigned
    types wrap around instead, so no rewrite may assume their results stay in range."""
    return dt.kind == "int" and dt.bits >= 32


def int_range(dt: DType) -> tuple[int, int]:
    """The least and greatest value of integer dtype `dt`."""
    if dt.kind == "uint":
        return 0, (1 << dt.bits) - 1
    half = 1 << (dt.bits - 1)
    return -half, half - 1


def wrap_int(value: int, dt: DType) -> int:
    """`value` reduced to the range of integer dtype `dt` (two's complement wrap-around)."""
    if dt.is_bool:
        return 1 if value else 0
    bits = dt.bits
    if dt.kind == "uint":
        return value & ((1 << bits) - 1)
    half = 1 << (bits - 1)
    if -half <= value < half:
        return value
    return ((value + half) & ((1 << bits) - 1)) - half
