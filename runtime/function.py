"""One exported function of a loaded library, callable with numpy arrays or torch tensors.

Leaving out outputs, `f(a, b)` or `f(a, b=..., s=2.0)`, allocates them (64-byte aligned,
zero-filled, shapes from the metadata's expressions) and returns them; `f(a, b, c)` passes every
argument (destination-passing style) and returns the outputs passed (`c`, as torch's `out=`
does). Precisely, a call returns (one array, or a tuple in parameter order) the outputs it
allocated and the passed ones it only writes; an output the function also reads (updated in
place) is the caller's own array and comes back only when every output is such an array
(`add_one_(x)` returns `x`, as torch's in-place methods do). When an input is a torch tensor,
the outputs tirc allocates are torch tensors sharing the allocation (through DLPack, no copy).
torch is never imported here: a torch tensor is recognised by its type's module, and torch is
already loaded.

A graph function's `R.Tuple` parameter is one parameter per field in the library (the
metadata's `tuples` names them): the call takes one tuple or list of arrays for it,
`f((a, b))` or `f(t=(a, b))`.

A graph function that returns an `R.Shape`, an `R.Prim` value or nested tuples (the metadata's
`returns`) returns that structure: a shape as a tuple of ints, a scalar as a Python number.

A function that returns a value (`-> T.float32`, the metadata's `result`) takes one more
argument, a 0-d tensor the runtime allocates: the call returns the value as a Python number
(after the outputs it returns, as the last item of a tuple, when there are any).
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tirc.runtime.arguments import (
    Binder,
    ParamGroups,
    ParamSpec,
    call_result,
    empty_aligned,
    returned_outputs,
    returned_value,
)
from tirc.runtime.dlpack import ArgsPacker
from tirc.runtime.errors import TircError
from tirc.runtime.externs import raised_error
from tirc.runtime.sparse_arguments import SparseSignature


@dataclass
class PreparedCall:
    """Checked arguments packed as `DLTensor *args[]`, ready to be passed (again and again);
    `results` are the outputs a call returns, as the caller's library's objects."""

    arrays: list[np.ndarray]
    allocated: list[np.ndarray]
    packed: Any = field(repr=False)
    results: list[Any] = field(default_factory=list)
    value: np.ndarray | None = None  # the 0-d result of a function returning a value
    named: dict[str, Any] = field(default_factory=dict)  # every output, as `results` holds it


def _torch_of(values: list[Any]) -> Any:
    """The torch module when one of `values` is a torch tensor, else None."""
    for v in values:
        if type(v).__module__.split(".")[0] == "torch" and hasattr(v, "__dlpack__"):
            return sys.modules.get("torch")
    return None


def _param_text(s: ParamSpec) -> str:
    """A parameter's type for signatures: `float32[n, 64]`, `float32*`, `float32`."""
    if s.kind == "scalar":
        return s.dtype_name
    if s.kind == "pointer":
        return f"{s.dtype_name}*"
    return f"{s.dtype_name}[{', '.join(str(d) for d in s.shape)}]"


class Function:
    """A library function with its metadata; see the module docstring for calling."""

    def __init__(self, lib: ctypes.CDLL, meta: dict[str, Any], last_error: Any,
                 keep: Any = None) -> None:
        self.name: str = meta["name"]
        self._keep = keep  # kept alive with the function: the library's filled extern slots
        self.meta = meta
        self.params: list[dict[str, Any]] = meta["params"]
        self._specs = [ParamSpec.from_metadata(i, p) for i, p in enumerate(self.params)]
        self._names = [p["name"] for p in self.params]
        self.symbol: str = meta.get("symbol", self.name)  # its C name (ABI 2)
        self._fn = getattr(lib, self.symbol)
        self._fn.argtypes = [ctypes.c_void_p, ctypes.c_int32]
        self._fn.restype = ctypes.c_int32
        self._last_error = last_error
        self._lib = lib  # keeps the library loaded while the function lives
        result = meta.get("result")
        self._result = ParamSpec.from_metadata(len(self.params), {
            "name": "result", "kind": "scalar", "dtype": result["dtype"]}) if result else None
        extra = [self._result] if self._result is not None else []
        self._packer = ArgsPacker([len(s.shape) for s in self._specs] + [0] * len(extra),
                                  [s.dtype_name for s in [*self._specs, *extra]],
                                  [s.strides is not None for s in [*self._specs, *extra]])
        self._groups = ParamGroups.from_metadata(meta)
        self._returns = meta.get("returns")  # a graph function's returned value's structure
        tensors = meta.get("sparse_tensors")
        self._sparse = SparseSignature(self.name, self.params, tensors,
                                       meta.get("sparse_plan")) if tensors else None

    def bind_library(self, functions: dict[str, Function]) -> None:
        """The other functions of the library (a sparse plan calls its conversion ones)."""
        if self._sparse is not None:
            self._sparse.functions = functions

    @property
    def outputs(self) -> list[str]:
        return [s.name for s in self._specs if s.output]

    def signature(self) -> str:
        """`name(A: float32[64, 64], ..., C: float32[64, 64] (output))`; a tuple parameter
        `t: (float32[3, 4], float32[3, 5])`."""
        parts = []
        for name, indices, is_tuple in self._groups.groups:
            if is_tuple:
                fields = ", ".join(_param_text(self._specs[i]) for i in indices)
                parts.append(f"{name}: ({fields}{',' if len(indices) == 1 else ''})")
                continue
            s = self._specs[indices[0]]
            parts.append(f"{s.name}: {_param_text(s)}" + (" (output)" if s.output and
                                                           s.kind != "scalar" else ""))
        ret = f" -> {self._result.dtype_name}" if self._result is not None else ""
        return f"{self.name}({', '.join(parts)}){ret}"

    def __repr__(self) -> str:
        return f"<tirc function {self.signature()}>"

    def _slots(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any], list[int]]:
        return self._groups.place(self._specs, args, kwargs)

    def prepare(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                raw: bool = False) -> PreparedCall:
        """Check every argument (raising TypeError/ValueError) and allocate absent outputs;
        `raw`: the arrays of sparse tensors are passed one by one, as the parameters are."""
        if self._sparse is not None and not raw:
            args, kwargs = (), self._sparse.expand(args, kwargs)
        slots, absent = self._slots(args, kwargs)
        binder = Binder(self.name)
        arrays: list[Any] = [None] * len(slots)
        given = [s for s in self._specs if s.index not in absent]
        buffers = [s for s in given if s.kind != "scalar"]
        for s in given:
            value = slots[s.index]
            arrays[s.index] = binder.scalar(s, value) if s.kind == "scalar" else \
                binder.header(s, value)
        for s in buffers:
            binder.bind(s, arrays[s.index])
        for s in buffers:
            binder.solve(s, arrays[s.index])
        for s in buffers:
            binder.layout(s, arrays[s.index])
        allocated = []
        for i in absent:
            s = self._specs[i]
            try:
                shape = binder.expected_shape(s)
            except ValueError as exc:
                raise TypeError(f"{self.name}(): cannot allocate output {s.name}: {exc}; "
                                "pass it explicitly") from None
            arrays[i] = empty_aligned(shape, s.np_dtype or np.dtype(np.uint16))
            allocated.append(arrays[i])
        self._check_aliasing(arrays, set(absent))
        torch = _torch_of([slots[s.index] for s in given])
        named = {}
        for s in self._specs:
            if s.output and s.index not in absent:
                named[s.name] = slots[s.index]
            elif s.output:
                fresh = arrays[s.index]
                named[s.name] = torch.from_dlpack(fresh) if torch is not None else fresh
        results = [named[s.name] for s in returned_outputs(self._specs, set(absent))]
        value = None
        if self._result is not None:
            value = empty_aligned((), self._result.np_dtype or np.dtype(np.uint16))
            arrays.append(value)
        packed = self._packer.pack(arrays, binder.addresses, binder.strides)
        return PreparedCall(arrays, allocated, packed, results, value, named)

    def _check_aliasing(self, arrays: list[np.ndarray], fresh: set[int]) -> None:
        for p in self._specs:
            if not p.output or p.index in fresh or arrays[p.index].size == 0:
                continue
            for q in self._specs:
                if q is p or q.kind == "scalar" or arrays[q.index].size == 0:
                    continue
                if np.may_share_memory(arrays[p.index], arrays[q.index]):
                    raise ValueError(f"{self.name}: argument {p.name} (an output) shares "
                                     f"memory with argument {q.name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = self.prepare(args, kwargs)
        self.call_prepared(call)
        if self._returns is not None:
            return returned_value(self._returns, call.named)
        if call.value is not None:
            return call_result([*call.results, call.value[()].item()])
        return call_result(call.results)

    def raw(self, *args: Any, **kwargs: Any) -> Any:
        """Call with every parameter as compiled (a sparse tensor's data, `indptr`, `indices`
        and sizes one by one), for formats no SciPy matrix holds."""
        call = self.prepare(args, kwargs, raw=True)
        self.call_prepared(call)
        if not call.allocated:
            return None
        return call.allocated[0] if len(call.allocated) == 1 else tuple(call.allocated)

    def call_prepared(self, call: PreparedCall) -> None:
        """Call the library with checked arguments; raise TircError on an error code."""
        code = self._fn(ctypes.addressof(call.packed), len(call.arrays))
        if code != 0:
            message = (self._last_error() or b"").decode("utf-8", "replace")
            raised = raised_error(message, code)  # a Python extern's exception
            if raised is not None:
                raise raised
            raise TircError(message or f"{self.name} failed with code {code}", code, self.name)
