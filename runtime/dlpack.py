"""DLPack's structs in ctypes, and the mapping between tirc dtypes, numpy dtypes and DLPack."""

from __future__ import annotations

import ctypes
import struct
from typing import Any

import numpy as np

KDL_CPU = 1
TYPE_CODES = {"int": 0, "uint": 1, "float": 2, "bfloat": 4, "bool": 6}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    """`DLTensor` exactly as dlpack.h lays it out."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


DLTensorPtr = ctypes.POINTER(DLTensor)


def _split(name: str) -> tuple[str, int]:
    for kind in ("bfloat", "float", "uint", "int"):
        if name.startswith(kind) and name[len(kind):].isdigit():
            return kind, int(name[len(kind):])
    if name == "bool":
        return "bool", 8
    raise ValueError(f"unknown dtype '{name}'")


def dl_datatype(name: str) -> DLDataType:
    """The DLPack dtype of a tirc dtype name (bool is code 6 with 8 bits; `float32x4` has 4
    lanes)."""
    element, _, lanes = name.partition("x")
    kind, bits = _split(element)
    if lanes and not lanes.isdigit():
        raise ValueError(f"unknown dtype '{name}'")
    return DLDataType(TYPE_CODES[kind], bits, int(lanes) if lanes else 1)


def numpy_dtype(name: str) -> np.dtype | None:
    """The numpy dtype for a tirc dtype name; None for bfloat16 without ml_dtypes."""
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            return None
        return np.dtype(ml_dtypes.bfloat16)
    try:
        return np.dtype(name)
    except TypeError:
        raise TypeError(f"dtype {name} has no numpy equivalent: a parameter with vector "
                        "elements (float32x4) or a dtype numpy lacks is callable from C only"
                        ) from None


def dtype_label(dt: np.dtype) -> str:
    """A numpy dtype as a message shows it (its name, or its code for non-native order)."""
    return dt.name if dt.isnative else dt.str


class ArgsPacker:
    """Packs one call's `DLTensor *args[]` into a single buffer, with one struct.pack_into.

    The layout depends only on the parameters' ranks and dtypes, so it is computed once per
    function: `n` pointers, then `n` DLTensors (48 bytes each), then every shape entry.
    """

    def __init__(self, ranks: list[int], dtypes: list[str],
                 strided: list[bool] | None = None) -> None:
        n = len(ranks)
        self.n = n
        self._dtypes = [dl_datatype(d) for d in dtypes]
        self._ranks = ranks
        self._strided = strided or [False] * n
        self._tensors_at = 8 * n
        self._shapes_at = self._tensors_at + ctypes.sizeof(DLTensor) * n
        entries = sum(ranks) + sum(r for r, s in zip(ranks, self._strided) if s)
        self.size = self._shapes_at + 8 * entries
        self._format = "<" + "Q" * n + "QiiiBBHQQQ" * n + "q" * entries

    def pack(self, arrays: list[Any], addresses: dict[int, int] | None = None,
             strides: dict[int, tuple[int, ...]] | None = None) -> Any:
        """A ctypes buffer holding the argument array (pass `ctypes.addressof` of it); the
        data addresses are read from the arrays unless given by parameter index; a parameter
        packed with strides gets the element strides given for it (else its compact ones)."""
        buf = ctypes.create_string_buffer(self.size)
        base = ctypes.addressof(buf)
        tensor_size = ctypes.sizeof(DLTensor)
        values: list[int] = [base + self._tensors_at + tensor_size * i for i in range(self.n)]
        shapes: list[int] = []
        shape_at = base + self._shapes_at
        known = addresses or {}
        given = strides or {}
        for i, (a, rank, dt) in enumerate(zip(arrays, self._ranks, self._dtypes)):
            data = known.get(i)
            strided = self._strided[i] and rank > 0
            values += [a.ctypes.data if data is None else data, KDL_CPU, 0, rank, dt.code,
                       dt.bits, dt.lanes, shape_at if rank else 0,
                       shape_at + 8 * rank if strided else 0, 0]
            shapes += a.shape
            if strided:
                shapes += given.get(i) or tuple(b // a.itemsize for b in a.strides)
            shape_at += 8 * rank * (2 if strided else 1)
        struct.pack_into(self._format, buf, 0, *values, *shapes)
        return buf
