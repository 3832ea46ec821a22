"""Checking and converting call arguments before they reach a library function.

Every check the library makes is made here first, with Python exceptions: TypeError for the
wrong kind of argument (count, None, not an array, dtype), ValueError for the wrong array
(rank, shape, layout, alignment, read-only output, an output sharing memory with another
argument). Arrays are never copied: non-contiguous or misaligned ones are rejected.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from tirc.runtime import shape_expr
from tirc.runtime.dlpack import KDL_CPU, dtype_label, numpy_dtype

ALIGNMENT = 64


def empty_aligned(shape: tuple[int, ...], dtype: Any, align: int = ALIGNMENT,
                  zero: bool = True) -> np.ndarray:
    """A C-contiguous array whose data starts on an `align`-byte boundary."""
    dt = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    raw = np.zeros(nbytes + align, np.uint8) if zero else np.empty(nbytes + align, np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + nbytes].view(dt).reshape(shape)


def bfloat16_bits(value: float) -> np.ndarray:
    """A 0-d uint16 array holding the bfloat16 nearest to `value` (ties to even)."""
    with np.errstate(over="ignore"):
        bits = int(np.array(value, np.float32).view(np.uint32))
    if np.isnan(value):
        return np.array((bits >> 16) | 0x40, np.uint16)
    return np.array(((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF, np.uint16)


def _shape_str(dims: list[int] | tuple[int, ...]) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


def library_of(value: Any) -> str:
    """The library an array argument comes from (`numpy`, `torch`, ...), for messages."""
    return type(value).__module__.split(".")[0] or "numpy"


def element_strides(arr: np.ndarray) -> tuple[int, ...]:
    """The strides of `arr` in elements; those of an array numpy calls C-contiguous are the
    compact row-major ones (an empty array, or one with extent-1 dimensions, may report any
    strides there; TVM passes such an array with no strides, that is compact)."""
    if arr.flags.c_contiguous:
        out, step = [], 1
        for d in reversed(arr.shape):
            out.append(step)
            step *= max(int(d), 1)
        return tuple(reversed(out))
    return tuple(b // arr.itemsize for b in arr.strides)


def contiguous_hint(value: Any, name: str) -> str:
    """How the caller's library makes a compact row-major copy of argument `name`."""
    lib = library_of(value)
    if lib == "torch":
        return f"pass {name}.contiguous()"
    if lib == "cupy":
        return f"pass cupy.ascontiguousarray({name})"
    return "pass np.ascontiguousarray(...)"


def dtype_text(value: Any, arr: np.ndarray) -> str:
    """An argument's dtype as its own library writes it (`torch.float64`, `float64`)."""
    own = getattr(value, "dtype", None)
    if library_of(value) == "torch" and own is not None:
        return str(own)
    return dtype_label(arr.dtype)


def as_array(value: Any, where: str) -> np.ndarray:
    """A numpy view of an array argument: an ndarray, or anything with `__dlpack__`."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__"):
        device = getattr(value, "__dlpack_device__", None)
        if device is not None:
            dev_type = int(device()[0])
            if dev_type != KDL_CPU:
                raise ValueError(f"{where}: expected a CPU array (DLPack device type "
                                 f"{KDL_CPU}), got device type {dev_type}")
        try:
            return np.from_dlpack(value)
        except (TypeError, ValueError, RuntimeError, BufferError) as exc:
            lib = library_of(value)
            raise TypeError(f"{where}: cannot import the {lib} array through DLPack: "
                            f"{exc}") from None
    raise TypeError(f"{where}: expected a numpy array or an object with __dlpack__, "
                    f"got {type(value).__name__}")


@dataclass(frozen=True)
class ParamSpec:
    """One parameter's metadata, digested once per function for the per-call checks."""

    index: int
    name: str
    kind: str  # "buffer", "scalar" or "pointer" (any C-contiguous array, passed flattened)
    dtype_name: str
    np_dtype: np.dtype | None  # None: bfloat16 without ml_dtypes (passed as uint16 bits)
    shape: tuple[int | str, ...]
    output: bool
    input: bool  # the function reads it (an output that is also read: in place or accumulated)
    binds: tuple[tuple[int, str], ...]  # (dimension, symbol) pairs that are whole symbols
    static_shape: tuple[int, ...] | None
    strides: tuple[int | str, ...] | None = None  # declared strides in elements (else compact)
    unsupported: str | None = None  # why Python cannot pass this parameter (callable from C)

    @staticmethod
    def from_metadata(index: int, p: dict[str, Any]) -> ParamSpec:
        shape = tuple(p.get("shape", ()))
        binds = tuple((k, d) for k, d in enumerate(shape)
                      if isinstance(d, str) and d.isidentifier())
        static = shape if all(isinstance(d, int) for d in shape) else None
        strides = p.get("strides")
        try:
            np_dtype, unsupported = numpy_dtype(p["dtype"]), None
        except TypeError as exc:
            np_dtype, unsupported = None, str(exc)
        return ParamSpec(index, p["name"], p["kind"], p["dtype"], np_dtype,
                         shape, bool(p.get("output")), bool(p.get("input", True)), binds,
                         static, tuple(strides) if strides else None,  # type: ignore[arg-type]
                         unsupported)


class Binder:
    """Checks one call's arguments in parameter order, binding symbolic sizes as it goes;
    records each buffer's data address for packing."""

    def __init__(self, fn_name: str) -> None:
        self.fn = fn_name
        self.env: dict[str, int] = {}
        self.origin: dict[str, str] = {}
        self.addresses: dict[int, int] = {}
        self.strides: dict[int, tuple[int, ...]] = {}  # element strides of strided parameters
        self.given: dict[int, Any] = {}  # arguments that were not numpy arrays, by index

    def where(self, p: ParamSpec) -> str:
        return f"{self.fn}: argument {p.name}"

    def scalar(self, p: ParamSpec, value: Any) -> np.ndarray:
        if p.unsupported:
            raise TypeError(f"{self.where(p)}: {p.unsupported}")
        dt = p.np_dtype
        if value is None:
            raise TypeError(f"{self.where(p)}: expected a {p.dtype_name} scalar, got None")
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        kind = dt.kind if dt is not None else "f"
        if kind in "iu":
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{self.where(p)}: expected an integer ({p.dtype_name}), "
                                f"got {type(value).__name__}")
            info = np.iinfo(dt)
            if not info.min <= int(value) <= info.max:
                raise ValueError(f"{self.where(p)}: {value} does not fit in {p.dtype_name}")
        elif kind == "b":
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{self.where(p)}: expected a bool, got {type(value).__name__}")
        elif not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"{self.where(p)}: expected a number ({p.dtype_name}), "
                            f"got {type(value).__name__}")
        arr = np.array(value, dtype=dt) if dt is not None else bfloat16_bits(float(value))
        self.env[p.name] = int(value) if kind in "iub" else 0
        self.origin[p.name] = f"argument {p.name}"
        return arr

    def header(self, p: ParamSpec, value: Any) -> np.ndarray:
        """Type, dtype and rank of a buffer argument (remembering its library for messages)."""
        if p.unsupported:
            raise TypeError(f"{self.where(p)}: {p.unsupported}")
        if type(value) is np.ndarray:
            arr = value
        elif value is None:
            raise TypeError(f"{self.where(p)}: expected a {p.dtype_name} array of shape "
                            f"{_shape_str(p.shape)}, got None")
        else:
            arr = as_array(value, self.where(p))
            self.given[p.index] = value
        if p.kind == "pointer" and arr.ndim != 1:
            if not arr.flags.c_contiguous:
                raise ValueError(f"{self.where(p)}: a pointer parameter takes a C-contiguous "
                                 f"array, got one with strides {arr.strides}")
            arr = arr.reshape(-1)
        want = p.np_dtype
        if want is None:
            if arr.dtype != np.uint16:
                raise TypeError(f"{self.where(p)}: expected dtype bfloat16, got "
                                f"{dtype_label(arr.dtype)} (install ml_dtypes for bfloat16 "
                                "arrays, or pass the raw bits as uint16)")
        elif arr.dtype != want:
            raise TypeError(f"{self.where(p)}: expected dtype {p.dtype_name}, got "
                            f"{dtype_text(value, arr)}")
        nd = len(p.shape)
        if arr.ndim != nd:
            raise ValueError(f"{self.where(p)}: expected {nd} dimension{'s' if nd != 1 else ''}, "
                             f"got {arr.ndim} (shape {_shape_str(arr.shape)})")
        return arr

    def bind(self, p: ParamSpec, arr: np.ndarray) -> None:
        """Bind the symbolic sizes that are whole dimensions of this argument."""
        for k, name in p.binds:
            if name not in self.env:
                self.env[name] = int(arr.shape[k])
                self.origin[name] = f"{p.name}.shape[{k}]"

    def solve(self, p: ParamSpec, arr: np.ndarray) -> None:
        """Bind a size only a product dimension of this argument mentions (`M * N` with `M`
        bound), once every whole dimension and scalar is bound."""
        for k, d in enumerate(p.shape):
            if not isinstance(d, str) or d.isidentifier():
                continue
            try:
                found = shape_expr.solve(d, int(arr.shape[k]), self.env)
            except shape_expr.ShapeExprError as exc:
                raise ValueError(f"{self.where(p)}: {exc}") from None
            if found is not None:
                self.env[found[0]] = found[1]
                self.origin[found[0]] = f"{p.name}.shape[{k}]"

    def expected_shape(self, p: ParamSpec) -> tuple[int, ...]:
        if p.static_shape is not None:
            return p.static_shape
        return tuple(shape_expr.evaluate(d, self.env) for d in p.shape)

    def layout(self, p: ParamSpec, arr: np.ndarray) -> None:
        """Shape, contiguity, alignment and writability of a buffer argument."""
        want = self.expected_shape(p)
        if arr.shape != want:
            syms = sorted(set().union(*(shape_expr.names(d) for d in p.shape)))
            note = ", ".join(f"{s} = {self.env[s]} from {self.origin[s]}" for s in syms)
            raise ValueError(f"{self.where(p)}: expected shape {_shape_str(want)}, got "
                             f"{_shape_str(arr.shape)}" + (f" ({note})" if note else ""))
        if p.strides is not None:
            self.strides[p.index] = self.declared_strides(p, arr)
        elif not arr.flags.c_contiguous:
            raise ValueError(f"{self.where(p)}: expected a compact row-major (C-contiguous) "
                             f"array, got strides {_shape_str(arr.strides)} bytes; "
                             f"{contiguous_hint(self.given.get(p.index, arr), p.name)} for a copy")
        address = arr.ctypes.data
        align = arr.dtype.itemsize
        if address % align:
            raise ValueError(f"{self.where(p)}: data address {address:#x} is not aligned to "
                             f"{align} bytes (the size of {p.dtype_name})")
        if p.output and not arr.flags.writeable:
            raise ValueError(f"{self.where(p)}: is an output, but the array is read-only")
        self.addresses[p.index] = address


    def declared_strides(self, p: ParamSpec, arr: np.ndarray) -> tuple[int, ...]:
        """The element strides of an argument whose parameter declares strides: each a
        non-negative multiple of the element size, equal to a constant one, binding (or equal
        to) a symbolic one."""
        assert p.strides is not None
        size = arr.itemsize
        if any(b < 0 or b % size for b in arr.strides):
            raise ValueError(f"{self.where(p)}: strides {_shape_str(arr.strides)} bytes are not "
                             f"non-negative multiples of the element size ({size} bytes)")
        got = element_strides(arr)
        for k, (want, have) in enumerate(zip(p.strides, got)):
            if arr.shape[k] == 1:
                continue  # a dimension of one element has no meaningful stride
            if isinstance(want, str) and want.isidentifier() and want not in self.env:
                self.env[want] = have
                self.origin[want] = f"{p.name}.strides[{k}]"
                continue
            value = shape_expr.evaluate(want, self.env) if isinstance(want, str) else want
            if value != have:
                raise ValueError(f"{self.where(p)}: expected strides "
                                 f"{_shape_str(self.expected_strides(p))} elements, got "
                                 f"{_shape_str(got)}")
        return got

    def expected_strides(self, p: ParamSpec) -> tuple[int | str, ...]:
        """The declared strides with the sizes known so far filled in."""
        assert p.strides is not None
        out: list[int | str] = []
        for s in p.strides:
            try:
                out.append(shape_expr.evaluate(s, self.env) if isinstance(s, str) else s)
            except ValueError:
                out.append(s)
        return tuple(out)


def _count_error(func: str, names: list[str], given: int,
                 missing: list[str] | None = None) -> TypeError:
    n = len(names)
    text = f"{func}() takes {n} argument{'s' if n != 1 else ''} ({', '.join(names)}), got {given}"
    return TypeError(text + (f"; missing: {', '.join(missing)}" if missing else ""))


def place_arguments(func: str, names: list[str], is_output: list[bool], args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> tuple[list[Any], list[int]]:
    """Positional and keyword arguments in parameter order, and the indices left out; only
    outputs may be left out (the caller allocates them). Python's own errors otherwise.
    Exactly one positional argument per input leaves every output out, also where scalars
    follow the outputs (an `R.Shape` parameter's sizes, docs/abi.md)."""
    n = len(names)
    if len(args) > n:
        raise _count_error(func, names, len(args) + len(kwargs))
    if len(args) == n and not kwargs:
        return list(args), []
    inputs = [i for i in range(n) if not is_output[i]]
    if not kwargs and len(args) == len(inputs):
        return [args[inputs.index(i)] if i in inputs else None for i in range(n)], \
            [i for i in range(n) if is_output[i]]
    missing = object()
    slots: list[Any] = list(args) + [missing] * (n - len(args))
    for key, value in kwargs.items():
        if key not in names:
            raise TypeError(f"{func}() has no parameter '{key}' (parameters: {', '.join(names)})")
        i = names.index(key)
        if slots[i] is not missing:
            raise TypeError(f"{func}() got argument '{key}' twice")
        slots[i] = value
    absent = [i for i, s in enumerate(slots) if s is missing]
    not_outputs = [names[i] for i in absent if not is_output[i]]
    if not_outputs:
        raise _count_error(func, names, n - len(absent), not_outputs)
    return slots, absent


@dataclass(frozen=True)
class ParamGroups:
    """The parameters a caller passes, each one C parameter or, for a graph function's tuple
    parameter (the metadata's `tuples`), the consecutive parameters of its fields."""

    func: str
    groups: tuple[tuple[str, tuple[int, ...], bool], ...]  # (name, parameter indices, tuple?)

    @staticmethod
    def from_metadata(meta: dict[str, Any]) -> ParamGroups:
        names = [p["name"] for p in meta["params"]]
        tuples = {f: (t["name"], t["params"]) for t in meta.get("tuples", ())
                  for f in t["params"]}
        groups: list[tuple[str, tuple[int, ...], bool]] = []
        for i, name in enumerate(names):
            if name not in tuples:
                groups.append((name, (i,), False))
            elif tuples[name][1][0] == name:
                group, fields = tuples[name]
                groups.append((group, tuple(names.index(f) for f in fields), True))
        return ParamGroups(meta["name"], tuple(groups))

    def place(self, specs: list[ParamSpec], args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> tuple[list[Any], list[int]]:
        """`place_arguments` over the parameters a caller passes, each tuple then spread over
        its fields' parameters (a tuple or list of as many arrays, else TypeError)."""
        if not any(is_tuple for _, _, is_tuple in self.groups):
            return place_arguments(self.func, [s.name for s in specs],
                                   [s.output for s in specs], args, kwargs)
        outputs = [not t and specs[i[0]].output for _, i, t in self.groups]
        given, left_out = place_arguments(self.func, [g[0] for g in self.groups], outputs,
                                          args, kwargs)
        slots: list[Any] = [None] * len(specs)
        absent: list[int] = []
        for k, (name, indices, is_tuple) in enumerate(self.groups):
            value = given[k]
            if k in left_out:
                absent += indices
            elif not is_tuple:
                slots[indices[0]] = value
            elif not isinstance(value, (tuple, list)) or len(value) != len(indices):
                got = f"a tuple of {len(value)}" if isinstance(value, (tuple, list)) else \
                    type(value).__name__
                raise TypeError(f"{self.func}: argument {name}: expected a tuple of "
                                f"{len(indices)} arrays, got {got}")
            else:
                slots[indices[0]:indices[-1] + 1] = list(value)
        return slots, absent


def returned_outputs(specs: list[ParamSpec], absent: set[int]) -> list[ParamSpec]:
    """The outputs a call returns: those it allocated (`absent`) and those passed that it only
    writes (torch's out=); when every output was passed and each is also read (an in-place
    update, an accumulation such as a matmul's C), all of them."""
    outputs = [s for s in specs if s.output]
    chosen = [s for s in outputs if s.index in absent or not s.input]
    return chosen or outputs


def returned_value(structure: Any, outputs: dict[str, Any]) -> Any:
    """A graph function's returned value from its results by name, as the metadata's
    `returns` builds it: a tensor's name is that array, `{"shape": name}` the int64 array's
    entries as a tuple of ints, `{"prim": name}` the 0-d array's value as a Python number, a
    list a tuple of such values."""
    if isinstance(structure, list):
        return tuple(returned_value(item, outputs) for item in structure)
    if isinstance(structure, dict):
        (kind, name), = structure.items()
        values = np.asarray(outputs[name])
        return tuple(int(v) for v in values.reshape(-1)) if kind == "shape" else values.item()
    return outputs[structure]


def call_result(results: list[Any]) -> Any:
    """What a call returns: None, its one result, or a tuple of them in parameter order."""
    if not results:
        return None
    return results[0] if len(results) == 1 else tuple(results)
