"""Python functions behind the dotted names a library calls (`R.call_dps_packed("env.relu", ...)`).

A library calling functions by dotted names holds a slot per name, a function pointer with
tirc's DLTensor ABI, listed in its metadata (`externs`, docs/abi.md). `tirc.runtime.load(path,
externs={"env.relu": fn})` fills them, else from the process registry that
`register_func("env.relu")(fn)` adds to (as TVM's `tvm.register_func`); a slot nothing fills
stays empty and a call through it is a TircError naming the function. A print's slot
(`R.print`) is filled with the runtime's printing (tirc.runtime.printing) unless one of those
names it.

Each Python function is wrapped as a C callback: it receives the DLTensors as numpy arrays
viewing their memory, inputs then outputs (which it writes in place), and returns None or 0
for success, or a nonzero int (the call fails with that code). An exception inside it makes
the callback return RAISED; the runtime then raises a TircError with the exception's message
(chained to it) instead of the library's.
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
from tirc.runtime.dlpack import DLTensorPtr, numpy_dtype
from tirc.runtime.errors import TircError
from tirc.runtime.printing import print_function

# The code a callback returns when its Python function raised.
RAISED = -7
CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(DLTensorPtr), ctypes.c_int32)
_CODES = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 6: "bool"}

_registry: dict[str, Callable[..., Any]] = {}
# The exception a callback caught, per thread, until the call that made it reports it.
_pending = threading.local()
# The Slots filling each loaded library's slot array, by its address.
_owners: dict[int, weakref.ref[Slots]] = {}


class Slots:
    """The filled slots of one loaded library and their callbacks, alive as long as this
    object (its Module and Functions hold it); when it goes, the slots it filled are emptied."""

    def __init__(self, address: int, count: int) -> None:
        self.address = address
        self.count = count
        self.callbacks: dict[str, Any] = {}
        if address:
            _owners[address] = weakref.ref(self)

    def slot(self, k: int) -> ctypes.c_void_p:
        """Slot `k` as a ctypes pointer living in the library's memory."""
        return ctypes.c_void_p.from_address(self.address + k * ctypes.sizeof(ctypes.c_void_p))

    def __del__(self) -> None:
        owner = _owners.get(self.address)
        if owner is not None and owner() is None:
            del _owners[self.address]
            for k in range(self.count):
                self.slot(k).value = None


def in_use(address: int) -> bool:
    """Whether a live Slots fills the slot array at `address` (the library is loaded by
    another Module: the new one opens its own copy, with its own slots)."""
    owner = _owners.get(address)
    return owner is not None and owner() is not None


def register_func(name: str, fn: Callable[..., Any] | None = None,
                  override: bool = False) -> Any:
    """Register `fn` under `name` for the libraries loaded after (TVM's `register_func`):
    `register_func("env.relu", fn)`, or as a decorator, `@register_func("env.relu")`."""
    def add(f: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(f):
            raise TypeError(f"register_func: '{name}' must be given a callable")
        if name in _registry and not override:
            raise ValueError(f"register_func: '{name}' is already registered (pass "
                             "override=True to replace it)")
        _registry[name] = f
        return f

    return add(fn) if fn is not None else add


def lookup(name: str, externs: dict[str, Callable[..., Any]]) -> Callable[..., Any] | None:
    """The function behind the dotted name `name`: from `externs`, else the registry, else
    the runtime's own for a print's slot (tirc.runtime.printing); None when none has it."""
    fn = externs.get(name, _registry.get(name))
    return fn if fn is not None else print_function(name)


def get_func(name: str) -> Callable[..., Any] | None:
    """The function registered under `name`, or None."""
    return _registry.get(name)


def _array(t: Any) -> np.ndarray:
    """A numpy array viewing the memory one DLTensor describes (no copy)."""
    bits, code = t.dtype.bits, t.dtype.code
    name = "bool" if code == 6 else f"{_CODES.get(code, '?')}{bits}"
    dt = numpy_dtype(name) if code in _CODES and t.dtype.lanes == 1 else None
    if dt is None:
        raise TircError(f"a tensor of DLPack dtype (code {code}, bits {bits}, lanes "
                        f"{t.dtype.lanes}) cannot be viewed as a numpy array")
    shape = tuple(t.shape[k] for k in range(t.ndim))
    count = int(np.prod(shape, dtype=np.int64))
    if count == 0:
        return np.zeros(shape, dt)
    address = (t.data or 0) + t.byte_offset
    if t.strides:
        strides = tuple(t.strides[k] * dt.itemsize for k in range(t.ndim))
        span = sum((d - 1) * s for d, s in zip(shape, strides)) + dt.itemsize
        raw = np.frombuffer((ctypes.c_char * span).from_address(address), np.uint8)
        return np.lib.stride_tricks.as_strided(raw.view(dt), shape, strides)
    raw = np.frombuffer((ctypes.c_char * (count * dt.itemsize)).from_address(address), dt)
    return raw.reshape(shape)


def callback(name: str, fn: Callable[..., Any]) -> Any:
    """`fn` as a C function with tirc's DLTensor ABI (keep the result alive while in use)."""
    def call(args: Any, num_args: int) -> int:
        try:
            code = fn(*(_array(args[k].contents) for k in range(num_args)))
            return 0 if code is None else int(code)
        except BaseException as exc:  # noqa: BLE001 - it must not cross the C frames
            _pending.error = (name, exc)
            return RAISED

    return CALLBACK(call)


def fill_slots(address: int, names: list[str],
               externs: dict[str, Callable[..., Any]] | None) -> Slots:
    """Fill slot k of the array at `address` with the function for `names[k]` (from
    `externs`, else the registry; one that neither has stays empty)."""
    given = dict(externs or {})
    unknown = sorted(set(given) - set(names))
    if unknown:
        listed = ", ".join(names) or "none"
        raise TircError(f"externs: the library calls no function named {unknown[0]!r} (it "
                        f"calls: {listed})")
    slots = Slots(address, len(names))
    for k, name in enumerate(names):
        fn = lookup(name, given)
        if fn is None:
            slots.slot(k).value = None
            continue
        slots.callbacks[name] = callback(name, fn)
        slots.slot(k).value = ctypes.cast(slots.callbacks[name], ctypes.c_void_p).value
    return slots


def raised_error(message: str, code: int) -> TircError | None:
    """The TircError for a failed call whose callback caught an exception (cleared), or None."""
    pending = getattr(_pending, "error", None)
    if pending is None:
        return None
    _pending.error = None
    if code != RAISED:
        return None
    name, exc = pending
    caller = message.split(":", 1)[0] if ":" in message else ""
    where = f"{caller}: " if caller else ""
    err = TircError(f"{where}external function '{name}' raised {type(exc).__name__}: {exc}",
                    code, caller)
    err.__cause__ = exc
    return err
