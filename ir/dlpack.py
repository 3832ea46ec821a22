"""DLPack's codes, as the entry points' checks (make-entry) and the backends that build and
read DLTensors share them (docs/abi.md)."""

from __future__ import annotations

from tirc.ir.dtype import DType

# DLDevice.device_type of host memory.
DEVICE_CPU = 1

# DLDataType.code of each dtype kind, and back (names in messages: the entry checks).
TYPE_CODES = {"int": 0, "uint": 1, "float": 2, "bfloat": 4, "bool": 6}
TYPE_CODE_NAMES = {code: kind for kind, code in TYPE_CODES.items()}


def dl_bits(dt: DType) -> int:
    """The bit width DLPack gives a dtype (bool takes 8 bits)."""
    return 8 if dt.is_bool else dt.bits
