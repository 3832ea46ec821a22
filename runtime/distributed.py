"""Programs compiled for a device mesh, run as one process per device (`mpirun -np 2 ...`).

    import tirc.runtime.distributed as dist
    lib = dist.load("mlp_tp.so")              # starts MPI (through the shim) if nobody has
    y = lib.main(x_local, w1_local, w2_local)   # each rank passes its own shard
    y = lib.main(x, w1, w2, scatter=True, gather=True)   # global arrays in and out

A per-device function's metadata holds its global view (`sharding`: the mesh and the
placement of every parameter and result, docs/abi.md). With `scatter=True` the arguments are
global arrays and each rank keeps its part (a rank may pass None instead, and then receives the
array from rank 0 by broadcast); with `gather=True` the results come back whole on every rank
(all-gather for a split, all-reduce for a partial value, broadcast for an owned one). Every
transfer goes through the shim's collectives (MPI); nothing here moves data by itself.
Mesh coordinates a program takes (for uneven splits) are filled in from the rank.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import numpy as np
from tirc.runtime.ccl_shim import Shim, mpi_shim
from tirc.runtime.dlpack import (
    KDL_CPU,
    DLDevice,
    DLTensor,
    DLTensorPtr,
    dl_datatype,
    numpy_dtype,
)
from tirc.runtime.errors import TircError
from tirc.runtime.function import Function
from tirc.runtime.module import Module
from tirc.runtime.module import load as load_library

REDUCE_CODES = {"sum": 0, "prod": 1, "max": 2, "min": 3}


def placement_items(text: str) -> list[tuple[str, int | str | None]]:
    """A placement ("S[1], R, P[max], O[0]") as (kind, argument) per mesh axis."""
    out: list[tuple[str, int | str | None]] = []
    for part in (p.strip() for p in text.split(",")):
        if part.startswith("S["):
            out.append(("S", int(part[2:-1])))
        elif part.startswith("O["):
            out.append(("O", int(part[2:-1])))
        elif part.startswith("P"):
            out.append(("P", part[2:-1] if part.startswith("P[") else "sum"))
        else:
            out.append(("R", None))
    return out


def part(n: int, p: int, c: int) -> tuple[int, int]:
    """(first row, rows) of coordinate `c` of `p` in a balanced split of `n` rows."""
    return c * (n // p) + min(c, n % p), (n + p - 1 - c) // p


class Mesh:
    """The mesh of a function, placed on this process's rank (row-major, as the shim does)."""

    def __init__(self, shape: list[int], rank: int) -> None:
        self.shape = tuple(shape)
        coords = []
        for extent in reversed(self.shape):
            coords.append(rank % extent)
            rank //= extent
        self.coords = tuple(reversed(coords))

    @property
    def size(self) -> int:
        """The number of devices."""
        return int(np.prod(self.shape))


class Collectives:
    """The shim's collectives called from Python on numpy arrays (args {send, params, recv})."""

    def __init__(self, shim: Shim) -> None:
        self.shim = shim
        self._fns: dict[str, Any] = {}

    def _fn(self, symbol: str) -> Any:
        """The shim's C function `symbol`, typed once."""
        if symbol not in self._fns:
            fn = getattr(self.shim.lib, symbol)
            fn.restype = ctypes.c_int32
            fn.argtypes = [ctypes.POINTER(DLTensorPtr), ctypes.c_int32]
            self._fns[symbol] = fn
        return self._fns[symbol]

    def __call__(self, symbol: str, send: np.ndarray, recv: np.ndarray, mesh: tuple[int, ...],
                 axis: int, a: int = 0, b: int = 0) -> np.ndarray:
        params = np.array([len(mesh), *mesh, axis, a, b], dtype=np.int64)
        keep = []
        ptrs = (DLTensorPtr * 3)()
        for k, arr in enumerate((np.ascontiguousarray(send), params, recv)):
            shape = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
            t = DLTensor(arr.ctypes.data, DLDevice(KDL_CPU, 0), arr.ndim,
                         dl_datatype(_dtype_name(arr.dtype)), shape, None, 0)
            keep += [arr, shape, t]
            ptrs[k] = ctypes.pointer(t)
        if self._fn(symbol)(ptrs, 3) != 0:
            raise TircError(self.shim.last_error())
        return recv


def _dtype_name(dt: np.dtype) -> str:
    """tirc's name of a numpy dtype."""
    return "bool" if dt == np.bool_ else "bfloat16" if dt.name == "bfloat16" else dt.name


class DistributedFunction:
    """A per-device function: local shards in and out, or global arrays with scatter/gather."""

    def __init__(self, fn: Function, shim: Shim) -> None:
        self.fn = fn
        self.shim = shim
        self.ccl = Collectives(shim)
        # A function without a global view (written per device, or for one device) runs as
        # it is on every rank; its collectives check the number of processes themselves.
        n = len([p for p in fn.params if not p.get("output")])
        view = fn.meta.get("sharding") or {"mesh": [shim.size], "params": ["R"] * n,
                                           "results": ["R"] * len(fn.outputs)}
        self.view = view
        self.mesh = Mesh(view["mesh"], shim.rank)
        self.coords = {name: self.mesh.coords[k] for k, name in
                       enumerate(view.get("coords") or []) if name}
        self.sizes: dict[str, list[int]] = view.get("sizes") or {}
        given = set(self.coords) | set(self.sizes)
        self.inputs = [p for p in fn.params if not p.get("output") and p["name"] not in given]

    @property
    def name(self) -> str:
        """The function's name."""
        return self.fn.name

    @property
    def meta(self) -> dict[str, Any]:
        """The function's metadata."""
        return self.fn.meta

    @property
    def params(self) -> list[dict[str, Any]]:
        """The parameters a caller gives (mesh coordinates and split sizes are filled in)."""
        return [p for p in self.fn.params if p["name"] not in self.coords and
                p["name"] not in self.sizes]

    def signature(self) -> str:
        """The signature, with this rank and the mesh."""
        mesh = "x".join(map(str, self.mesh.shape))
        return f"{self.fn.signature()} on rank {self.shim.rank} of {self.shim.size} " \
               f"(mesh {mesh})"

    def check_world(self) -> None:
        """A TircError unless there is one process per device of the mesh."""
        if self.mesh.size != self.shim.size:
            shape = f" ({'x'.join(map(str, self.mesh.shape))})" if len(self.mesh.shape) > 1 \
                else ""
            raise TircError(f"{self.name} was compiled for a mesh of {self.mesh.size} devices"
                            f"{shape} but runs on {self.shim.size} process"
                            f"{'es' if self.shim.size != 1 else ''}")

    def _explained(self, exc: TircError) -> TircError:
        """The library's error with the collective shim's own message, when it has one."""
        detail = self.shim.last_error()
        return TircError(f"{exc}: {detail}") if detail and "tirc_ccl_" in str(exc) else exc

    def __call__(self, *args: Any, scatter: bool = False, gather: bool = False,
                 **kwargs: Any) -> Any:
        self.check_world()
        if scatter:
            args = tuple(a if a is None else np.asarray(a) for a in args)
            sizes = self.global_sizes(args, scattered=True)
            args = tuple(self.scatter(a, placement_items(p)) for a, p in
                         zip(args, self.view["params"]))
        else:
            sizes = self.global_sizes(args, scattered=False)
        try:
            out = self.fn(*args, **self.coords, **sizes, **kwargs)
        except TircError as exc:
            raise self._explained(exc) from None
        if not gather or out is None:
            return out
        results = out if isinstance(out, tuple) else (out,)
        whole = tuple(self.gather(r, placement_items(p))
                      for r, p in zip(results, self.view["results"]))
        return whole if isinstance(out, tuple) else whole[0]

    def global_sizes(self, args: tuple[Any, ...], scattered: bool) -> dict[str, int]:
        """The symbolic sizes the program is given: from a global array's shape (every rank
        knows it after the broadcast), else the sum of the local sizes over the mesh axis."""
        out: dict[str, int] = {}
        for name, (k, d, axis) in self.sizes.items():
            if scattered:
                have = np.array([-1 if args[k] is None else np.shape(args[k])[d]], np.int64)
                out[name] = int(self.ccl("tirc_ccl_all_reduce", have, np.empty_like(have),
                                         (self.shim.size,), 0, REDUCE_CODES["max"])[0])
            else:
                n = np.array([np.shape(args[k])[d]], dtype=np.int64)
                out[name] = int(self.ccl("tirc_ccl_all_reduce", n, np.empty_like(n),
                                         self.mesh.shape, axis, REDUCE_CODES["sum"])[0])
        return out

    def prepare(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """As Function.prepare, with the mesh coordinates (and split sizes) filled in."""
        self.check_world()
        by_name = dict(zip([p["name"] for p in self.params], args))
        by_name.update(kwargs)
        local = tuple(by_name.get(p["name"]) for p in self.inputs)
        sizes = self.global_sizes(local, scattered=False) if self.sizes else {}
        return self.fn.prepare(args, {**self.coords, **sizes, **kwargs})

    def call_prepared(self, call: Any) -> None:
        """Call with prepared arguments (see Function.call_prepared)."""
        try:
            self.fn.call_prepared(call)
        except TircError as exc:
            raise self._explained(exc) from None

    def scatter(self, array: Any, placement: list[tuple[str, Any]]) -> np.ndarray:
        """This rank's part of a global array (from rank 0 when this rank passes None)."""
        world = (self.shim.size,)
        have = np.array([0 if array is None else 1], dtype=np.int64)
        everyone = self.ccl("tirc_ccl_all_reduce", have, np.empty_like(have), world, 0,
                            REDUCE_CODES["min"])
        if not everyone[0]:
            array = self.broadcast_from_root(array)
        array = np.asarray(array)
        index = [slice(None)] * array.ndim
        fill = None  # a partial value is whole at coordinate 0, the identity elsewhere
        for axis, (kind, arg) in enumerate(placement):
            c, p = self.mesh.coords[axis], self.mesh.shape[axis]
            if kind == "S":
                assert isinstance(arg, int)
                start, rows = part(array.shape[arg], p, c)
                index[arg] = slice(start, start + rows)
            elif kind == "O" and c != arg or kind == "P" and arg == "sum" and c != 0:
                fill = 0
            elif kind == "P" and arg == "prod" and c != 0 and fill is None:
                fill = 1
        local = np.ascontiguousarray(array[tuple(index)])
        return local if fill is None else np.full_like(local, fill)

    def broadcast_from_root(self, array: Any) -> np.ndarray:
        """Rank 0's array on every rank (its rank, shape and dtype name go first)."""
        world = (self.shim.size,)
        rank = self.shim.rank
        header = np.zeros(1 + 16 + 2, dtype=np.int64)
        if rank == 0:
            if array is None:
                raise TircError("scatter: rank 0 must pass the global array")
            arr = np.ascontiguousarray(array)
            header[0] = arr.ndim
            header[1:1 + arr.ndim] = arr.shape
            header[17:] = np.frombuffer(_dtype_name(arr.dtype).encode().ljust(16), np.int64)
        header = self.ccl("tirc_ccl_broadcast", header, np.empty_like(header), world, 0, 0)
        ndim = int(header[0])
        shape = tuple(int(d) for d in header[1:1 + ndim])
        dt = numpy_dtype(header[17:].tobytes().decode().strip())
        if dt is None:
            raise TircError("scatter: bfloat16 arrays need the ml_dtypes package")
        buf = np.ascontiguousarray(array) if rank == 0 else np.empty(shape, dtype=dt)
        return self.ccl("tirc_ccl_broadcast", buf, np.empty(shape, dtype=dt), world, 0, 0)

    def gather(self, local: np.ndarray, placement: list[tuple[str, Any]]) -> np.ndarray:
        """The global array, on every rank, from each rank's part."""
        cur = np.ascontiguousarray(local)
        mesh = self.mesh.shape
        for axis in reversed(range(len(mesh))):
            kind, arg = placement[axis]
            if kind == "S":
                assert isinstance(arg, int)
                n = np.array([cur.shape[arg]], dtype=np.int64)
                total = int(self.ccl("tirc_ccl_all_reduce", n, np.empty_like(n), mesh, axis,
                                     REDUCE_CODES["sum"])[0])
                shape = list(cur.shape)
                shape[arg] = total
                cur = self.ccl("tirc_ccl_all_gather", cur, np.empty(shape, cur.dtype), mesh,
                               axis, arg)
            elif kind == "P":
                assert isinstance(arg, str)
                cur = self.ccl("tirc_ccl_all_reduce", cur, np.empty_like(cur), mesh, axis,
                               REDUCE_CODES[arg])
            elif kind == "O":
                assert isinstance(arg, int)
                cur = self.ccl("tirc_ccl_broadcast", cur, np.empty_like(cur), mesh, axis, arg)
        return cur


class DistributedModule:
    """The functions of a library, each one a DistributedFunction."""

    def __init__(self, module: Module, shim: Shim) -> None:
        self.module = module
        self.shim = shim
        self.functions = {name: DistributedFunction(fn, shim)
                          for name, fn in module.functions.items()}

    @property
    def rank(self) -> int:
        """This process's rank."""
        return self.shim.rank

    @property
    def size(self) -> int:
        """The number of devices."""
        return self.shim.size

    def __getitem__(self, name: str) -> DistributedFunction:
        return self.functions[name]

    def __getattr__(self, name: str) -> DistributedFunction:
        functions = self.__dict__.get("functions", {})
        if name in functions:
            return functions[name]
        raise AttributeError(name)


def init() -> Shim:
    """Start the collectives (MPI, through the shim) in this process; idempotent."""
    return mpi_shim()


def load(path: str | os.PathLike[str]) -> DistributedModule:
    """Load a library compiled for a device mesh, with the collectives it calls."""
    shim = init()
    return DistributedModule(load_library(path), shim)  # type: ignore[arg-type]
