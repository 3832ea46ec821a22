"""Loading a tirc PTX file and calling its functions on the GPU: `tirc.runtime.load("f.ptx")`.

The PTX carries its metadata in a comment block (`// tirc-metadata: ...`, written by
tirc.backends.nvptx): each function's parameters (dtypes, symbolic shapes) and its launch plan
(kernels with grid and block extents as shape expressions, arguments, shared memory,
workspaces). A call checks the arguments as the CPU runtime does (count, dtype, rank, shapes
with symbolic sizes bound from the arguments), then:
- numpy arrays are copied to the device, and outputs copied back after the kernels ran;
- objects with `__cuda_array_interface__` (CuPy, PyTorch, Numba arrays) are used in place;
- outputs left out are allocated (numpy arrays); a call returns what a CPU call returns (the
  allocated outputs and the passed ones it only writes, the caller's own objects:
  tirc.runtime.arguments.returned_outputs);
- the plan's checks of the sizes (R.match_cast) run before anything is copied or launched;
- the plan's workspaces (a graph function's intermediates) share one device allocation;
- the plan's host calls (`R.call_dps_packed`) run C functions from the libraries given with
  -l/-L on host copies of their tensors, between the kernels (tirc.runtime.cuda_host_calls);
- a plan that branches (a graph-level `if`) runs the branch its condition picks, evaluated on
  the host when reached, a condition tensor copied back from the device
  (tirc.runtime.cuda_steps);
- a function built with -fbounds-check gets a zeroed error record on the device; after the
  kernels ran (`fetch`) it is copied back, and a failed check raises the CPU build's TircError
  (-5, the same message) (tirc.runtime.cuda_bounds).
Without a CUDA driver, `load` raises a TircError saying so; importing this module never needs
one. A `driver` object can be passed to `load_ptx` (tests use a fake one).
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tirc.runtime import shape_expr
from tirc.runtime.arguments import (
    Binder,
    ParamGroups,
    ParamSpec,
    call_result,
    returned_outputs,
    returned_value,
)
from tirc.runtime.cuda_bounds import check_record, fresh_record
from tirc.runtime.cuda_host_calls import find_symbol, open_libraries, run_host_call
from tirc.runtime.cuda_steps import flat_steps, run_steps, scalar_env
from tirc.runtime.dlpack import dtype_label
from tirc.runtime.errors import TircError
from tirc.runtime.function_table import FunctionTable

PREFIX = "// tirc-metadata: "
# 2: launch plans with `steps` (branches); 1 has none; 3: a `bounds_record` (-fbounds-check)
SUPPORTED_ABI = (1, 2, 3)
# The launch-plan symbol a megakernel's grid uses: the device's multiprocessor count.
SM_COUNT = "tirc_sm_count"
WORKSPACE_ALIGN = 256  # bytes; cuMemAlloc's own alignment, enough for any vector access
BOUNDS_RECORD = "bounds record"  # the -fbounds-check error record's key in a call's pointers

_CTYPES = {"int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
           "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
           "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "float32": ctypes.c_float,
           "float64": ctypes.c_double, "bool": ctypes.c_uint8, "float16": ctypes.c_uint16,
           "bfloat16": ctypes.c_uint16}


_COMPARE = {"eq": int.__eq__, "ne": int.__ne__, "lt": int.__lt__, "le": int.__le__,
            "gt": int.__gt__, "ge": int.__ge__}


def read_metadata(text: str, path: str) -> dict[str, Any]:
    """The metadata JSON of a tirc PTX file (TircError when it has none)."""
    import json

    parts = [line[len(PREFIX):] for line in text.splitlines() if line.startswith(PREFIX)]
    if not parts:
        raise TircError(f"'{path}' is not a tirc PTX file (it has no '// tirc-metadata:' "
                        "comment block)")
    try:
        meta = json.loads("".join(parts))
    except ValueError as exc:
        raise TircError(f"'{path}': the tirc metadata block is damaged: {exc}") from None
    if meta.get("tirc_abi") not in SUPPORTED_ABI:
        raise TircError(f"'{path}' uses tirc ABI version {meta.get('tirc_abi')}; this runtime "
                        f"reads versions {', '.join(map(str, SUPPORTED_ABI))}")
    return meta


def scalar_value(value: Any, dtype: str) -> Any:
    """A kernel argument as the ctypes value of its dtype (float16/bfloat16 as their bits)."""
    if dtype == "float16":
        return ctypes.c_uint16(int(np.array(value, np.float16).view(np.uint16)))
    if dtype == "bfloat16":
        from tirc.runtime.arguments import bfloat16_bits

        return ctypes.c_uint16(int(bfloat16_bits(float(value))))
    if dtype == "bool":
        return ctypes.c_uint8(1 if value else 0)
    kind = _CTYPES.get(dtype)
    if kind is None:
        raise TircError(f"kernel argument of dtype {dtype} is not supported")
    return kind(value)


@dataclass
class DeviceArray:
    """An argument that already lives on the GPU (`__cuda_array_interface__`)."""

    ptr: int
    shape: tuple[int, ...]
    dtype: np.dtype
    readonly: bool

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @staticmethod
    def of(value: Any, where: str) -> DeviceArray:
        info = value.__cuda_array_interface__
        shape = tuple(int(d) for d in info["shape"])
        dtype = np.dtype(info["typestr"])
        strides = info.get("strides")
        if strides is not None:
            dense, step = [], dtype.itemsize
            for d in reversed(shape):
                dense.append(step)
                step *= d
            if tuple(strides) != tuple(reversed(dense)) and 0 not in shape:
                raise ValueError(f"{where}: expected a C-contiguous device array, got strides "
                                 f"{tuple(strides)} bytes")
        ptr, readonly = info["data"]
        return DeviceArray(int(ptr), shape, dtype, bool(readonly))


def workspace_layout(workspaces: list[dict[str, Any]], env: dict[str, int]
                     ) -> tuple[dict[str, int], int]:
    """Where each workspace of a call starts in one device allocation (WORKSPACE_ALIGN-byte
    aligned), and the allocation's size: one cuMemAlloc per call, however many
    intermediates the plan has."""
    offsets: dict[str, int] = {}
    total = 0
    for w in workspaces:
        nbytes = shape_expr.evaluate(w["bytes"], env)
        if nbytes < 0:
            raise ValueError(f"workspace {w['name']} would have {nbytes} bytes")
        offsets[w["name"]] = total
        total += -(-max(1, nbytes) // WORKSPACE_ALIGN) * WORKSPACE_ALIGN
    return offsets, total


@dataclass
class _Call:
    """One call in progress: device pointers, host copies to bring back, memory to free."""

    pointers: dict[str, int] = field(default_factory=dict)
    by_index: dict[int, int] = field(default_factory=dict)  # buffer parameter position -> ptr
    copy_back: list[tuple[np.ndarray, np.ndarray, int]] = field(default_factory=list)
    owned: list[int] = field(default_factory=list)
    scalars: dict[str, Any] = field(default_factory=dict)


class CudaFunction:
    """One function of a tirc PTX module: checks arguments, runs its launch plan."""

    def __init__(self, module: CudaModule, meta: dict[str, Any]) -> None:
        self.module = module
        self.meta = meta
        self.name: str = meta["name"]
        self.params: list[dict[str, Any]] = meta["params"]
        self._specs = [ParamSpec.from_metadata(i, p) for i, p in enumerate(self.params)]
        self._names = [p["name"] for p in self.params]
        self._groups = ParamGroups.from_metadata(meta)
        self.returns: Any = meta.get("returns")  # a graph function's returned value's structure
        self.launches: list[dict[str, Any]] = meta.get("launches", [])
        self.workspaces: list[dict[str, Any]] = meta.get("workspaces", [])
        self.checks: list[dict[str, Any]] = meta.get("checks", [])
        self.host_calls: list[dict[str, Any]] = meta.get("host_calls", [])
        self._host_fns = [module.host_function(c["symbol"]) for c in self.host_calls]
        self.steps = flat_steps(meta)
        self.bounds: dict[str, Any] | None = meta.get("bounds_record")  # -fbounds-check

    @property
    def outputs(self) -> list[str]:
        return [s.name for s in self._specs if s.output]

    def __repr__(self) -> str:
        return f"<tirc cuda function {self.name}({', '.join(self._names)})>"

    def _slots(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any], list[int]]:
        return self._groups.place(self._specs, args, kwargs)

    def _check(self, binder: Binder, spec: ParamSpec, value: Any) -> Any:
        """A checked buffer argument: a numpy array, or a DeviceArray."""
        where = binder.where(spec)
        if hasattr(value, "__cuda_array_interface__") and not isinstance(value, np.ndarray):
            dev = DeviceArray.of(value, where)
            want = spec.np_dtype if spec.np_dtype is not None else np.dtype(np.uint16)
            if dev.dtype != want:
                raise TypeError(f"{where}: expected dtype {spec.dtype_name}, got "
                                f"{dtype_label(dev.dtype)}")
            if len(dev.shape) != len(spec.shape):
                raise ValueError(f"{where}: expected {len(spec.shape)} dimensions, got "
                                 f"{len(dev.shape)}")
            if spec.output and dev.readonly:
                raise ValueError(f"{where}: is an output, but the device array is read-only")
            return dev
        return binder.header(spec, value)

    def prepare(self, args: tuple[Any, ...], kwargs: dict[str, Any]
                ) -> tuple[Binder, list[Any], list[Any]]:
        """Checked arguments (numpy arrays, DeviceArrays, scalars; absent outputs allocated as
        numpy arrays) and what the call returns (`returned_outputs`: the allocated arrays, the
        caller's own objects for passed outputs)."""
        slots, absent = self._slots(args, kwargs)
        binder = Binder(self.name)
        values: list[Any] = [None] * len(slots)
        for s in self._specs:
            if s.index in absent:
                continue
            v = slots[s.index]
            values[s.index] = binder.scalar(s, v) if s.kind == "scalar" else \
                self._check(binder, s, v)
        for s in self._specs:
            if s.kind == "buffer" and s.index not in absent:
                binder.bind(s, values[s.index])  # type: ignore[arg-type]
        for s in self._specs:
            if s.kind != "buffer" or s.index in absent:
                continue
            want = binder.expected_shape(s)
            got = tuple(values[s.index].shape)
            if got != want:
                raise ValueError(f"{binder.where(s)}: expected shape {want}, got {got}")
        self._check_aliasing(values, set(absent))
        self._check_sizes(binder.env)
        for i in absent:
            s = self._specs[i]
            try:
                shape = binder.expected_shape(s)
            except ValueError as exc:
                raise TypeError(f"{self.name}(): cannot allocate output {s.name}: {exc}; pass "
                                "it explicitly") from None
            values[i] = np.zeros(shape, s.np_dtype or np.dtype(np.uint16))
        results = [values[s.index] if s.index in absent else slots[s.index]
                   for s in returned_outputs(self._specs, set(absent))]
        return binder, values, results

    def _check_sizes(self, env: dict[str, int]) -> None:
        """The plan's checks of the sizes (a graph function's R.match_cast), before any
        launch: a ValueError with the compiler's message when one fails."""
        for c in self.checks:
            lhs, rhs = shape_expr.evaluate(c["lhs"], env), shape_expr.evaluate(c["rhs"], env)
            if not _COMPARE[c["op"]](lhs, rhs):
                raise ValueError(f"{c['message']} ({lhs} vs {rhs})")

    def _check_aliasing(self, values: list[Any], fresh: set[int]) -> None:
        """No output may share memory with another argument (kernel pointers are noalias)."""
        def overlap(a: Any, b: Any) -> bool:
            if isinstance(a, DeviceArray) and isinstance(b, DeviceArray):
                return a.ptr < b.ptr + b.nbytes and b.ptr < a.ptr + a.nbytes
            if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
                return a.size > 0 and b.size > 0 and np.may_share_memory(a, b)
            return False

        for p in self._specs:
            if not p.output or p.kind != "buffer" or p.index in fresh:
                continue
            for q in self._specs:
                if q is p or q.kind != "buffer" or q.index in fresh:
                    continue
                if overlap(values[p.index], values[q.index]):
                    raise ValueError(f"{self.name}: argument {p.name} (an output) shares "
                                     f"memory with argument {q.name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        binder, values, results = self.prepare(args, kwargs)
        bound = self.bind(binder, values)
        try:
            bound.launch()
            bound.fetch()
        finally:
            bound.free()
        if self.returns is not None:
            return returned_value(self.returns, {s.name: values[s.index] for s in self._specs
                                                 if s.output})
        return call_result(results)

    def bind(self, binder: Binder, values: list[Any]) -> BoundCall:
        """Checked arguments placed on the device (numpy arrays copied in, workspaces made)."""
        drv = self.module.driver
        call = _Call()
        if any(SM_COUNT in str(d) for launch in self.launches for d in launch["grid"]):
            binder.env[SM_COUNT] = self.module.sm_count()  # a persistent (megakernel) grid
        bound = BoundCall(self, binder.env, call)
        try:
            for s, v in zip(self._specs, values):
                if s.kind == "scalar":
                    call.scalars[s.name] = v[()] if isinstance(v, np.ndarray) else v
                elif isinstance(v, DeviceArray):
                    call.pointers[s.name] = call.by_index[s.index] = v.ptr
                else:
                    host = np.ascontiguousarray(v)
                    ptr = drv.alloc(host.nbytes)
                    call.owned.append(ptr)
                    drv.to_device(ptr, host)
                    call.pointers[s.name] = call.by_index[s.index] = ptr
                    if s.output:
                        call.copy_back.append((v, host, ptr))
            offsets, total = workspace_layout(self.workspaces, binder.env)
            if offsets:
                base = drv.alloc(total)
                call.owned.append(base)
                for name, offset in offsets.items():
                    call.pointers["workspace " + name] = base + offset
            if self.bounds is not None:
                record = fresh_record(self.bounds)
                call.pointers[BOUNDS_RECORD] = drv.alloc(record.nbytes)
                call.owned.append(call.pointers[BOUNDS_RECORD])
                drv.to_device(call.pointers[BOUNDS_RECORD], record)
        except BaseException:
            bound.free()
            raise
        return bound

    def _host_call(self, k: int, env: dict[str, int], call: _Call) -> None:
        """Run host step `k` of the plan (a C function, on the CPU)."""
        def pointer(a: dict[str, Any]) -> int:
            if a["kind"] == "workspace":
                return call.pointers["workspace " + a["name"]]
            return call.by_index[a["index"]]

        step = self.host_calls[k]
        if step.get("ccl"):
            from tirc.runtime.cuda_ccl import run_ccl_call

            run_ccl_call(step, self._host_fns[k], self.module.driver, env, pointer)
            return
        run_host_call(step, self._host_fns[k], self.module.driver, env, pointer)

    def _launch(self, launch: dict[str, Any], env: dict[str, int], call: _Call) -> None:
        grid = [shape_expr.evaluate(d, env) for d in launch["grid"]]
        block = [shape_expr.evaluate(d, env) for d in launch["block"]]
        if min(grid) <= 0:
            return
        args = []
        for a in launch["args"]:
            kind = a["kind"]
            if kind == "buffer":
                ptr = call.by_index[a["index"]] if "index" in a else call.pointers[a["param"]]
                args.append(ctypes.c_uint64(ptr))
            elif kind == "workspace":
                args.append(ctypes.c_uint64(call.pointers["workspace " + a["name"]]))
            elif kind == "bounds_record":
                args.append(ctypes.c_uint64(call.pointers[BOUNDS_RECORD]))
            elif kind == "param":
                dtype = next(p["dtype"] for p in self.params if p["name"] == a["param"])
                args.append(scalar_value(call.scalars[a["param"]], dtype))
            else:
                args.append(scalar_value(shape_expr.evaluate(a["expr"], env), a["dtype"]))
        kernel = self.module.kernel(launch["kernel"], launch.get("shared_bytes", 0))
        self.module.driver.launch(kernel, grid, block, launch.get("shared_bytes", 0), args)


class BoundCall:
    """One call's arguments on the device: launch its kernels again and again (no copies),
    then bring the outputs back and free the device memory. Benchmarks time `launch`."""

    def __init__(self, fn: CudaFunction, env: dict[str, int], call: _Call) -> None:
        self.fn = fn
        self.env = env
        self.call = call

    def launch(self) -> None:
        """Launch every kernel of the plan, in order (asynchronously); a host call waits
        for the kernels before it and runs on the CPU; a branch waits for them when its
        condition reads the device (tirc.runtime.cuda_steps)."""
        fn, call = self.fn, self.call
        env = {**self.env, **scalar_env(fn.params, call.scalars)} if "steps" in fn.meta \
            else self.env

        def pointer(a: dict[str, Any]) -> int:
            if a["kind"] == "workspace":
                return call.pointers["workspace " + a["workspace"]]
            return call.by_index[a["index"]]

        run_steps(fn.steps, env, fn.module.driver, pointer,
                  lambda k, at: fn._launch(fn.launches[k], {**self.env, **at}, call),
                  lambda j, at: fn._host_call(j, {**self.env, **at}, call))

    def fetch(self) -> None:
        """Wait for the kernels, then copy the outputs back into the caller's arrays; a
        failed bounds check (-fbounds-check) raises its TircError after that."""
        drv = self.fn.module.driver
        drv.synchronize()
        for original, host, ptr in self.call.copy_back:
            drv.to_host(host, ptr)
            if host is not original:
                np.copyto(original, host)
        self.check_bounds()

    def check_bounds(self) -> None:
        """Copy the error record back; when a check failed, zero it on the device (the next
        launches start clean) and raise the check's TircError (-5)."""
        meta, ptr = self.fn.bounds, self.call.pointers.get(BOUNDS_RECORD)
        if meta is None or ptr is None:
            return
        drv = self.fn.module.driver
        record = fresh_record(meta)
        drv.to_host(record, ptr)
        if record[0]:
            drv.to_device(ptr, fresh_record(meta))
            check_record(meta, record, self.fn.name)

    def free(self) -> None:
        for ptr in self.call.owned:
            self.fn.module.driver.free(ptr)
        self.call.owned.clear()


class CudaModule(FunctionTable):
    """The functions of one tirc PTX file, loaded into the GPU's primary context."""

    def __init__(self, path: str, driver: Any = None,
                 externs: dict[str, Any] | None = None) -> None:
        self.path = os.path.abspath(path)
        self._externs = dict(externs or {})
        self._callbacks: dict[str, Any] = {}  # the host calls' Python functions, kept alive
        with open(path, encoding="utf-8") as f:
            self.ptx = f.read()
        self.metadata = read_metadata(self.ptx, path)
        if driver is None:
            from tirc.runtime.cuda_driver import CudaDriverError
            from tirc.runtime.cuda_driver import driver as open_driver

            try:
                driver = open_driver()
            except CudaDriverError as exc:
                raise TircError(f"cannot load '{path}': {exc}") from None
        self.driver = driver
        self._module = driver.load_module(self.ptx.encode())
        self._kernels: dict[str, Any] = {}
        self._sm_count: int | None = None
        self._libraries = open_libraries(self.metadata, path) if any(
            f.get("host_calls") for f in self.metadata["functions"]) else []
        self._functions = {f["name"]: CudaFunction(self, f) for f in self.metadata["functions"]}

    def sm_count(self) -> int:
        """The device's multiprocessor count (asked once): the grid of a megakernel."""
        if self._sm_count is None:
            self._sm_count = int(self.driver.sm_count())
        return self._sm_count

    def host_function(self, symbol: str) -> Any:
        """The C function `symbol` of the host libraries (a TircError when none defines it)."""
        if symbol.startswith("tirc_ccl_"):
            from tirc.runtime.cuda_ccl import ccl_function

            return ccl_function(symbol)
        if "." in symbol:  # a dotted name: a Python function (tirc.runtime.externs)
            return self._python_function(symbol)
        return find_symbol(self._libraries, symbol, self.path)

    def _python_function(self, symbol: str) -> Any:
        """The callback of the Python function behind `symbol`, or a stand-in failing with
        the library's message for an empty slot."""
        from tirc.runtime.externs import callback, lookup

        fn = lookup(symbol, self._externs)
        if fn is None:
            def missing(args: Any, num_args: int) -> int:
                raise TircError(f"external function '{symbol}' is not registered "
                                "(tirc.runtime.load(..., externs={...}) or "
                                "tirc.runtime.register_func fills it)", -6)

            return missing
        return self._callbacks.setdefault(symbol, callback(symbol, fn))

    def kernel(self, name: str, dynamic_shared: int = 0) -> Any:
        fn = self._kernels.get(name)
        if fn is None:
            fn = self.driver.get_function(self._module, name)
            if dynamic_shared > 48 * 1024:
                self.driver.set_max_dynamic_shared(fn, dynamic_shared)
            self._kernels[name] = fn
        return fn

    def __repr__(self) -> str:
        return f"<tirc cuda module {self.path}: {', '.join(self._functions)}>"


def load_ptx(path: str | os.PathLike[str], driver: Any = None,
             externs: dict[str, Any] | None = None) -> CudaModule:
    """Load a PTX file tirc built; a TircError when it is not one, or there is no driver.
    `externs`: the Python functions behind the dotted names its host calls use."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such PTX file: '{path}'")
    return CudaModule(path, driver, externs)


__all__ = ["BoundCall", "CudaFunction", "CudaModule", "DeviceArray", "load_ptx",
           "read_metadata", "workspace_layout"]
