"""The CUDA driver, as the few calls tirc's PTX loader needs: through pycuda when it is installed,
else through the driver API (libcuda) with ctypes.

Nothing is loaded at import; `driver()` opens the driver on first use (device 0, its primary
context) and raises CudaDriverError with a plain message when there is none. Device pointers
are Python ints; kernel arguments are ctypes values (c_uint64 pointers, c_int64 scalars...).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from tirc.runtime.errors import TircError

CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_JIT_ERROR_LOG_BUFFER = 5
CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
LOG_SIZE = 16384


def pack_kernel_args(args: Sequence[Any]) -> Any:
    """`void *kernelParams[]` for cuLaunchKernel: the address of each ctypes argument value
    (the values must stay alive until the launch call returns)."""
    return (ctypes.c_void_p * max(1, len(args)))(*[ctypes.addressof(a) for a in args])


class CudaDriverError(TircError):
    """No usable CUDA driver, or a driver call that failed (the message names the call)."""


def _library_names() -> list[str]:
    explicit = os.environ.get("TIRC_LIBCUDA")
    found = ctypes.util.find_library("cuda")
    windows = "nvcuda.dll" if os.name == "nt" else None
    return list(dict.fromkeys(n for n in (explicit, "libcuda.so.1", "libcuda.so", found, windows)
                              if n))


class DriverAPI:
    """The CUDA driver API through ctypes (libcuda.so.1)."""

    name = "libcuda (ctypes)"

    def __init__(self) -> None:
        errors = []
        self.lib: Any = None
        for name in _library_names():
            try:
                self.lib = ctypes.CDLL(name)
                break
            except OSError as exc:
                errors.append(f"{name}: {exc}")
        if self.lib is None:
            raise CudaDriverError("no CUDA driver: cannot open libcuda (" + "; ".join(errors) +
                                  "); a machine with an NVIDIA GPU and its driver is needed to "
                                  "run PTX")
        self._check("cuInit", self.lib.cuInit(0))
        count = ctypes.c_int(0)
        self._check("cuDeviceGetCount", self.lib.cuDeviceGetCount(ctypes.byref(count)))
        if count.value == 0:
            raise CudaDriverError("the CUDA driver reports no GPU")
        self.device = ctypes.c_int(0)
        self._check("cuDeviceGet", self.lib.cuDeviceGet(ctypes.byref(self.device), 0))
        self.context = ctypes.c_void_p()
        self._check("cuDevicePrimaryCtxRetain",
                    self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.context), self.device))
        self._check("cuCtxSetCurrent", self.lib.cuCtxSetCurrent(self.context))

    def _check(self, call: str, code: int) -> None:
        if code == 0:
            return
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        self.lib.cuGetErrorName(code, ctypes.byref(name))
        self.lib.cuGetErrorString(code, ctypes.byref(text))
        label = (name.value or b"").decode() or f"error {code}"
        detail = (text.value or b"").decode()
        raise CudaDriverError(f"{call} failed: {label}" + (f" ({detail})" if detail else ""),
                              code)

    def attribute(self, attr: int) -> int:
        value = ctypes.c_int(0)
        self._check("cuDeviceGetAttribute",
                    self.lib.cuDeviceGetAttribute(ctypes.byref(value), attr, self.device))
        return value.value

    def sm_count(self) -> int:
        return self.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)

    def compute_capability(self) -> tuple[int, int]:
        return (self.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                self.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))

    def load_module(self, image: bytes) -> Any:
        """Load PTX (JIT-compiled by the driver) or a cubin; a JIT error carries its log."""
        module = ctypes.c_void_p()
        log = ctypes.create_string_buffer(LOG_SIZE)
        options = (ctypes.c_int * 2)(CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
        values = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p).value, LOG_SIZE)
        code = self.lib.cuModuleLoadDataEx(ctypes.byref(module), ctypes.c_char_p(image + b"\0"),
                                           2, options, values)
        if code != 0:
            text = log.value.decode("utf-8", "replace").strip()
            try:
                self._check("cuModuleLoadDataEx", code)
            except CudaDriverError as exc:
                raise CudaDriverError(f"{exc}" + (f":\n{text}" if text else ""), code) from None
        return module

    def get_function(self, module: Any, name: str) -> Any:
        fn = ctypes.c_void_p()
        self._check(f"cuModuleGetFunction({name})",
                    self.lib.cuModuleGetFunction(ctypes.byref(fn), module, name.encode()))
        return fn

    def set_max_dynamic_shared(self, fn: Any, nbytes: int) -> None:
        self._check("cuFuncSetAttribute", self.lib.cuFuncSetAttribute(
            fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, ctypes.c_int(nbytes)))

    def alloc(self, nbytes: int) -> int:
        ptr = ctypes.c_uint64(0)
        self._check("cuMemAlloc", self.lib.cuMemAlloc_v2(ctypes.byref(ptr),
                                                         ctypes.c_size_t(max(1, nbytes))))
        return ptr.value

    def free(self, ptr: int) -> None:
        self._check("cuMemFree", self.lib.cuMemFree_v2(ctypes.c_uint64(ptr)))

    def to_device(self, ptr: int, array: np.ndarray) -> None:
        if array.nbytes:
            self._check("cuMemcpyHtoD", self.lib.cuMemcpyHtoD_v2(
                ctypes.c_uint64(ptr), ctypes.c_void_p(array.ctypes.data),
                ctypes.c_size_t(array.nbytes)))

    def to_host(self, array: np.ndarray, ptr: int) -> None:
        if array.nbytes:
            self._check("cuMemcpyDtoH", self.lib.cuMemcpyDtoH_v2(
                ctypes.c_void_p(array.ctypes.data), ctypes.c_uint64(ptr),
                ctypes.c_size_t(array.nbytes)))

    def launch(self, fn: Any, grid: Sequence[int], block: Sequence[int], shared: int,
               args: Sequence[Any]) -> None:
        pointers = pack_kernel_args(args)
        self._check("cuLaunchKernel", self.lib.cuLaunchKernel(
            fn, *[ctypes.c_uint(int(g)) for g in grid], *[ctypes.c_uint(int(b)) for b in block],
            ctypes.c_uint(shared), None, pointers, None))

    def synchronize(self) -> None:
        self._check("cuCtxSynchronize", self.lib.cuCtxSynchronize())

    def event(self) -> Any:
        ev = ctypes.c_void_p()
        self._check("cuEventCreate", self.lib.cuEventCreate(ctypes.byref(ev), 0))
        return ev

    def record(self, ev: Any) -> None:
        self._check("cuEventRecord", self.lib.cuEventRecord(ev, None))

    def elapsed_ms(self, start: Any, end: Any) -> float:
        self._check("cuEventSynchronize", self.lib.cuEventSynchronize(end))
        ms = ctypes.c_float(0.0)
        self._check("cuEventElapsedTime",
                    self.lib.cuEventElapsedTime(ctypes.byref(ms), start, end))
        return float(ms.value)


class PyCudaDriver:
    """The same calls through pycuda (used when pycuda is installed)."""

    name = "pycuda"

    def __init__(self) -> None:
        import pycuda.driver as cuda  # type: ignore[import-not-found]

        try:
            cuda.init()
            if cuda.Device.count() == 0:
                raise CudaDriverError("the CUDA driver reports no GPU")
            self.device = cuda.Device(0)
            self.context = self.device.retain_primary_context()
            self.context.push()
        except cuda.Error as exc:
            raise CudaDriverError(f"cannot start CUDA through pycuda: {exc}") from None
        self.cuda = cuda

    def sm_count(self) -> int:
        return int(self.device.get_attribute(
            self.cuda.device_attribute.MULTIPROCESSOR_COUNT))

    def compute_capability(self) -> tuple[int, int]:
        major, minor = self.device.compute_capability()
        return int(major), int(minor)

    def load_module(self, image: bytes) -> Any:
        try:
            return self.cuda.module_from_buffer(image)
        except self.cuda.Error as exc:
            raise CudaDriverError(f"cannot load the module: {exc}") from None

    def get_function(self, module: Any, name: str) -> Any:
        return module.get_function(name)

    def set_max_dynamic_shared(self, fn: Any, nbytes: int) -> None:
        fn.set_attribute(self.cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)

    def alloc(self, nbytes: int) -> int:
        allocation = self.cuda.mem_alloc(max(1, nbytes))
        ptr = int(allocation)
        self._live = getattr(self, "_live", {})
        self._live[ptr] = allocation
        return ptr

    def free(self, ptr: int) -> None:
        allocation = getattr(self, "_live", {}).pop(ptr, None)
        if allocation is not None:
            allocation.free()

    def to_device(self, ptr: int, array: np.ndarray) -> None:
        if array.nbytes:
            self.cuda.memcpy_htod(ptr, array)

    def to_host(self, array: np.ndarray, ptr: int) -> None:
        if array.nbytes:
            self.cuda.memcpy_dtoh(array, ptr)

    def launch(self, fn: Any, grid: Sequence[int], block: Sequence[int], shared: int,
               args: Sequence[Any]) -> None:
        values = [np.dtype(type(a)).type(a.value) for a in args]
        fn(*values, grid=tuple(int(g) for g in grid), block=tuple(int(b) for b in block),
           shared=int(shared))

    def synchronize(self) -> None:
        self.cuda.Context.synchronize()

    def event(self) -> Any:
        return self.cuda.Event()

    def record(self, ev: Any) -> None:
        ev.record()

    def elapsed_ms(self, start: Any, end: Any) -> float:
        end.synchronize()
        return float(start.time_till(end))


_DRIVER: Any = None


def driver() -> Any:
    """The process's CUDA driver (pycuda if importable, else libcuda through ctypes)."""
    global _DRIVER
    if _DRIVER is None:
        try:
            import pycuda.driver  # type: ignore[import-not-found]  # noqa: F401

            _DRIVER = PyCudaDriver()
        except ImportError:
            _DRIVER = DriverAPI()
    return _DRIVER
