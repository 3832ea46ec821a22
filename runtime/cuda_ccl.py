"""The collective steps of a GPU launch plan (`"ccl": true`): `tirc_ccl_*` of the NCCL shim
called with the device memory of their send and receive tensors (kDLCUDA DLTensors) and
their integers read back to the host; nothing is copied through the CPU."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from tirc.runtime import shape_expr
from tirc.runtime.dlpack import KDL_CPU, DLDevice, DLTensor, DLTensorPtr, dl_datatype
from tirc.runtime.errors import TircError

KDL_CUDA = 2


def ccl_function(symbol: str) -> Any:
    """`int32_t symbol(DLTensor **, int32_t)` from the NCCL shim (built on first use)."""
    from tirc.runtime.ccl_shim import nccl_shim

    fn = getattr(nccl_shim().lib, symbol)
    fn.restype = ctypes.c_int32
    fn.argtypes = [ctypes.POINTER(DLTensorPtr), ctypes.c_int32]
    return fn


def run_ccl_call(step: dict[str, Any], fn: Any, driver: Any, env: dict[str, int],
                 pointer: Any) -> None:
    """One collective between the kernels: send, params (on the host), recv."""
    from tirc.runtime.ccl_shim import nccl_shim

    driver.synchronize()
    keep: list[Any] = []
    tensors = (DLTensorPtr * len(step["args"]))()
    for k, a in enumerate(step["args"]):
        shape = tuple(shape_expr.evaluate(d, env) for d in a["shape"])
        address = pointer(a) + shape_expr.evaluate(a["offset"], env)
        dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        if k == 1:  # the params: read back to the host
            host = np.zeros(shape, np.int64)
            driver.to_host(host, address)
            t = DLTensor(ctypes.c_void_p(host.ctypes.data), DLDevice(KDL_CPU, 0), len(shape),
                         dl_datatype("int64"), dims, None, 0)
            keep.append(host)
        else:
            t = DLTensor(ctypes.c_void_p(address), DLDevice(KDL_CUDA, 0), len(shape),
                         dl_datatype(a["dtype"]), dims, None, 0)
        keep += [dims, t]
        tensors[k] = ctypes.pointer(t)
    if int(fn(tensors, len(step["args"]))) != 0:
        raise TircError(f"{step['caller']}: collective '{step['symbol']}' failed: "
                        f"{nccl_shim().last_error()}")
