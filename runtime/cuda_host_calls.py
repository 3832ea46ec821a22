"""The host steps of a GPU launch plan: C functions (`R.call_dps_packed`) called on the CPU
between the kernels, with tirc's DLTensor ABI (docs/abi.md), on copies of their tensors.

At load, the libraries the PTX metadata names (`-l`/`-L` given to the compiler) are opened
with ctypes. At the step, the device is synchronized, the input tensors are copied into numpy
arrays, the function `int32_t f(DLTensor **args, int32_t n)` is called with kDLCPU DLTensors
over them, a nonzero result is a TircError naming the function (as on the CPU), and the
output tensors are copied back to the device before the next kernel is launched.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import numpy as np
from tirc.runtime import shape_expr
from tirc.runtime.dlpack import KDL_CPU, DLDevice, DLTensor, DLTensorPtr, dl_datatype, numpy_dtype
from tirc.runtime.errors import TircError
from tirc.runtime.externs import raised_error

_SUFFIXES = (".so", ".dylib")


def open_libraries(meta: dict[str, Any], path: str) -> list[ctypes.CDLL]:
    """The libraries of the metadata's `libraries` (`lib<name>.so` in its folders), opened;
    a TircError naming the library and the folders searched when one is missing."""
    libs = meta.get("libraries") or {"names": [], "dirs": []}
    opened = []
    for name in libs["names"]:
        found = next((os.path.join(d, f"lib{name}{s}") for d in libs["dirs"] for s in _SUFFIXES
                      if os.path.exists(os.path.join(d, f"lib{name}{s}"))), None)
        if found is None:
            searched = ", ".join(libs["dirs"]) or "no folder (no -L)"
            raise TircError(f"cannot load '{path}': library -l{name} not found (searched "
                            f"{searched})")
        try:
            opened.append(ctypes.CDLL(found))
        except OSError as exc:
            raise TircError(f"cannot load '{path}': library '{found}': {exc}") from None
    return opened


def find_symbol(libraries: list[ctypes.CDLL], symbol: str, path: str) -> Any:
    """`int32_t symbol(DLTensor **, int32_t)` from the first library defining it."""
    for lib in libraries:
        fn = getattr(lib, symbol, None)
        if fn is not None:
            fn.restype = ctypes.c_int32
            fn.argtypes = [ctypes.POINTER(DLTensorPtr), ctypes.c_int32]
            return fn
    raise TircError(f"cannot load '{path}': external function '{symbol}' (R.call_dps_packed) "
                    "is not defined by the libraries given with -l")


def run_host_call(step: dict[str, Any], fn: Any, driver: Any, env: dict[str, int],
                  pointer: Any) -> None:
    """Run one host step: `pointer(arg)` is the device address of an argument's buffer."""
    driver.synchronize()
    arrays: list[np.ndarray] = []
    addresses: list[int] = []
    for a in step["args"]:
        shape = tuple(shape_expr.evaluate(d, env) for d in a["shape"])
        dt = numpy_dtype(a["dtype"])
        host = np.zeros(shape, dt if dt is not None else np.dtype(np.uint16))
        address = pointer(a) + shape_expr.evaluate(a["offset"], env)
        if a["role"] == "in" and host.nbytes:
            driver.to_host(host, address)
        arrays.append(host)
        addresses.append(address)
    keep: list[Any] = []
    tensors = (DLTensorPtr * max(len(arrays), 1))()
    for k, (a, host) in enumerate(zip(step["args"], arrays)):
        shape = (ctypes.c_int64 * max(host.ndim, 1))(*host.shape)
        t = DLTensor(ctypes.c_void_p(host.ctypes.data), DLDevice(KDL_CPU, 0), host.ndim,
                     dl_datatype(a["dtype"]), shape, None, 0)
        keep += [shape, t]
        tensors[k] = ctypes.pointer(t)
    try:
        code = int(fn(tensors, len(arrays)))
    except TircError as exc:  # an empty slot (a dotted name nothing registered)
        raise TircError(f"{step['caller']}: {exc}", exc.code, step["caller"]) from None
    if code != 0:
        message = f"{step['caller']}: external function '{step['symbol']}' returned {code}"
        raised = raised_error(message, code)  # a Python function's exception
        raise raised if raised is not None else TircError(message, code, step["caller"])
    for a, host, address in zip(step["args"], arrays, addresses):
        if a["role"] == "out" and host.nbytes:
            driver.to_device(address, host)
