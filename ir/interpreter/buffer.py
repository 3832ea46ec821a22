"""Buffer accesses in the reference interpreter: index -> flat offset, with bounds checks.

Storage is keyed by a buffer's `data` variable, not by the Buffer object, so buffers that
alias one allocation (a flattened view of a parameter, a `match_buffer` of a region) share it.
Every storage is a flat 1-D numpy array (of rows of lanes, for a buffer of vector elements
such as int32x2); a buffer reaches it through its own shape, strides (explicit, or row-major
from the shape) and `elem_offset`. A buffer with a layout reaches its
storage through the layout (`tirc.ir.layout.storage`); a store writes every replica copy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from tirc.ir.buffer import Buffer
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.interpreter import sparse
from tirc.ir.interpreter.races import READ
from tirc.ir.interpreter.values import (
    Env,
    Fn,
    InterpreterError,
    Unset,
    format_index,
    format_shape,
)
from tirc.ir.layout import LayoutError
from tirc.ir.layout.storage import ConcreteLayoutMap, layout_symbols
from tirc.ir.span import Span
from tirc.ir.sparse.buffer import SparseBuffer

Geometry = tuple[tuple[int, ...], tuple[int, ...], int]


def _const_dims(exprs: tuple[PrimExpr, ...]) -> list[int] | None:
    if all(isinstance(d, IntImm) for d in exprs):
        return [d.value for d in exprs]  # type: ignore[attr-defined]
    return None


def row_major_strides(dims: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    strides = [1] * len(dims)
    for k in range(len(dims) - 2, -1, -1):
        strides[k] = strides[k + 1] * int(dims[k + 1])
    return tuple(strides)


def _oob(buf: Buffer, idx: list[Any], dims: Any, span: Span | None) -> InterpreterError:
    return InterpreterError(
        f"out-of-bounds access {buf.name}[{format_index(idx)}] (shape {format_shape(dims)})",
        span)


def storage_of(env: Env, slot: int, buf: Buffer) -> np.ndarray:
    storage = env[slot]
    if isinstance(storage, Unset):
        raise InterpreterError(f"buffer {buf.name} is used outside its allocation")
    return storage


class BufferAccess:
    """Compiles offset, load and store closures for buffers of one function."""

    def __init__(self, slot_of: Callable[[Any], int], compile_expr: Callable[[PrimExpr], Fn],
                 name_slot: Callable[[str], int]) -> None:
        self.slot_of = slot_of
        self.compile_expr = compile_expr
        self.name_slot = name_slot
        self.dynamic: dict[int, int] = {}  # id(buffer) -> slot holding its Geometry
        # How many parallel loops around the code being compiled record their accesses
        # (tirc.ir.interpreter.races); the slot of the call's tracker.
        self.tracking = 0
        self.race_slot: int | None = None

    def races_slot(self) -> int:
        """The slot of the call's race tracker (tirc.ir.interpreter.races)."""
        if self.race_slot is None:
            self.race_slot = self.name_slot("races")
        return self.race_slot

    def _recorder(self, buf: Buffer, index_fns: list[Fn], dslot: int
                  ) -> Callable[[Env, Any, Any], None] | None:
        """What a load or store compiled inside a tracked parallel loop calls with its offset
        and the value it stores, before the access (None elsewhere: untracked code pays
        nothing)."""
        if not self.tracking or buf.scope == "event":
            return None
        rslot = self.races_slot()

        def record(env: Env, offset: Any, value: Any = READ) -> None:
            races = env[rslot]
            if not isinstance(races, Unset) and races.active:
                races.touch(buf, env[dslot], offset, value, lambda: [f(env) for f in index_fns])

        return record

    def make_dynamic(self, buf: Buffer) -> int:
        """Give `buf` a geometry decided at run time (match_buffer views); returns its slot."""
        if id(buf) not in self.dynamic:
            self.dynamic[id(buf)] = self.name_slot(f"{buf.name}.geometry")
        return self.dynamic[id(buf)]

    # ---- geometry --------------------------------------------------------------------

    def geometry_fn(self, buf: Buffer) -> Callable[[Env], Geometry]:
        """A closure giving (dims, strides, elem_offset) of `buf` in an environment."""
        if id(buf) in self.dynamic:
            gslot = self.dynamic[id(buf)]

            def dynamic(env: Env) -> Geometry:
                geo = env[gslot]
                if isinstance(geo, Unset):
                    raise InterpreterError(f"buffer {buf.name} is used outside its block")
                return geo

            return dynamic
        dim_fns = [self.compile_expr(d) for d in buf.shape]
        stride_fns = [self.compile_expr(s) for s in buf.strides] if buf.strides else None
        off_fn = self.compile_expr(buf.elem_offset) if buf.elem_offset is not None else None

        def geometry(env: Env) -> Geometry:
            dims = tuple(int(f(env)) for f in dim_fns)
            strides = (tuple(int(f(env)) for f in stride_fns) if stride_fns is not None
                       else row_major_strides(dims))
            return dims, strides, (int(off_fn(env)) if off_fn is not None else 0)

        return geometry

    def offset_fn(self, buf: Buffer, index_fns: list[Fn], vector: bool,
                  span: Span | None = None, copies: bool = False) -> Fn:
        """A closure computing the flat offset of `buf[indices]`, checking every index
        (`copies`: an array of the offsets of every replica, for a buffer with a layout)."""
        if buf.layout is not None:
            return self._layout_offset(buf, index_fns, span, copies)
        dims = _const_dims(buf.shape)
        fast = (dims is not None and not buf.strides and buf.elem_offset is None and not vector
                and id(buf) not in self.dynamic and len(dims) == len(index_fns))
        if fast:
            return self._fast_offset(buf, dims, index_fns, span)  # type: ignore[arg-type]
        return self._generic_offset(buf, index_fns, span)

    def _fast_offset(self, buf: Buffer, dims: list[int], fns: list[Fn],
                     span: Span | None) -> Fn:
        strides = row_major_strides(dims)
        if len(dims) == 0:
            return lambda env: 0
        if len(dims) == 1:
            (d0,), (f0,) = dims, fns

            def off1(env: Env) -> int:
                i = f0(env)
                if 0 <= i < d0:
                    return i
                raise _oob(buf, [i], dims, span)

            return off1
        if len(dims) == 2:
            d0, d1 = dims
            f0, f1 = fns
            s0 = strides[0]

            def off2(env: Env) -> int:
                i = f0(env)
                j = f1(env)
                if 0 <= i < d0 and 0 <= j < d1:
                    return i * s0 + j
                raise _oob(buf, [i, j], dims, span)

            return off2
        if len(dims) == 3:
            d0, d1, d2 = dims
            f0, f1, f2 = fns
            s0, s1 = strides[0], strides[1]

            def off3(env: Env) -> int:
                i = f0(env)
                j = f1(env)
                k = f2(env)
                if 0 <= i < d0 and 0 <= j < d1 and 0 <= k < d2:
                    return i * s0 + j * s1 + k
                raise _oob(buf, [i, j, k], dims, span)

            return off3
        pairs = list(zip(fns, dims, strides))

        def offn(env: Env) -> int:
            total = 0
            for f, d, s in pairs:
                i = f(env)
                if not 0 <= i < d:
                    raise _oob(buf, [f(env) for f in fns], dims, span)
                total += i * s
            return total

        return offn

    def _generic_offset(self, buf: Buffer, fns: list[Fn], span: Span | None) -> Fn:
        geometry = self.geometry_fn(buf)
        dslot = self.slot_of(buf.data)
        ndim = len(buf.shape)

        def off(env: Env) -> Any:
            dims, strides, base = geometry(env)
            idx = [f(env) for f in fns]
            if len(idx) != len(dims):
                if len(idx) == 1 and ndim != 1:
                    raise InterpreterError(
                        f"buffer {buf.name} of rank {len(dims)} accessed with 1 index")
                raise InterpreterError(
                    f"buffer {buf.name} of rank {len(dims)} accessed with {len(idx)} indices")
            total: Any = base
            for i, d, s in zip(idx, dims, strides):
                if isinstance(i, np.ndarray):
                    if i.size and (i.min() < 0 or i.max() >= d):
                        raise _oob(buf, idx, dims, span)
                    total = total + i.astype(np.int64) * s
                else:
                    if not 0 <= i < d:
                        raise _oob(buf, idx, dims, span)
                    total = total + i * s
            size = len(storage_of(env, dslot, buf))  # elements (rows of vector elements)
            lo = total.min() if isinstance(total, np.ndarray) and total.size else total
            hi = total.max() if isinstance(total, np.ndarray) and total.size else total
            if not (0 <= lo and hi < size):
                raise InterpreterError(
                    f"out-of-bounds access {buf.name}[{format_index(idx)}] (flat offset "
                    f"{int(lo) if lo < 0 else int(hi)} outside a storage of {size} elements)",
                    span)
            return total

        return off

    # ---- loads and stores ------------------------------------------------------------

    def load_fn(self, buf: Buffer, index_fns: list[Fn], vector: bool,
                span: Span | None = None) -> Fn:
        if isinstance(buf, SparseBuffer):
            return sparse.load_fn(self, buf, index_fns, span)
        off = self.offset_fn(buf, index_fns, vector, span)
        dslot = self.slot_of(buf.data)
        elem = buf.dtype
        record = self._recorder(buf, index_fns, dslot)
        if record is not None:
            untracked = off

            def off(env: Env) -> Any:
                o = untracked(env)
                record(env, o)
                return o

        if not vector and elem.lanes > 1:  # one vector element: a copy of its row

            def load_lanes(env: Env) -> Any:
                storage = env[dslot]
                try:
                    return storage[off(env)].copy()
                except TypeError:
                    raise InterpreterError(
                        f"buffer {buf.name} is used outside its allocation") from None
                except IndexError:
                    raise _flat_oob(buf, off(env), storage, span) from None

            return load_lanes
        if not vector and (elem.is_int or elem.is_bool):

            def load_item(env: Env) -> Any:
                storage = env[dslot]
                try:
                    return storage.item(off(env))
                except AttributeError:
                    raise InterpreterError(
                        f"buffer {buf.name} is used outside its allocation") from None
                except IndexError:
                    raise _flat_oob(buf, off(env), storage, span) from None

            return load_item

        def load(env: Env) -> Any:
            storage = env[dslot]
            try:
                return storage[off(env)]
            except TypeError:
                raise InterpreterError(
                    f"buffer {buf.name} is used outside its allocation") from None
            except IndexError:
                raise _flat_oob(buf, off(env), storage, span) from None

        return load

    def store_fn(self, buf: Buffer, index_fns: list[Fn], value_fn: Fn, vector: bool,
                 span: Span | None = None) -> Fn:
        if isinstance(buf, SparseBuffer):
            return sparse.store_fn(self, buf, index_fns, value_fn, span)
        off = self.offset_fn(buf, index_fns, vector, span, copies=True)
        dslot = self.slot_of(buf.data)
        record = self._recorder(buf, index_fns, dslot)
        if record is not None:
            return self._tracked_store(buf, off, dslot, value_fn, record, span)

        def store(env: Env) -> None:
            value = value_fn(env)
            storage = env[dslot]
            try:
                storage[off(env)] = value
            except (TypeError, IndexError) as exc:
                raise _store_error(exc, buf, storage, lambda: off(env), span) from None

        return store

    def _tracked_store(self, buf: Buffer, off: Fn, dslot: int, value_fn: Fn,
                       record: Callable[[Env, Any, Any], None], span: Span | None) -> Fn:
        """A store inside a tracked parallel loop: it records its offset and value (the race
        check compares the values iterations store) before it writes."""

        def store(env: Env) -> None:
            value = value_fn(env)
            storage = env[dslot]
            try:
                o = off(env)
                record(env, o, value)
                storage[o] = value
            except (TypeError, IndexError) as exc:
                raise _store_error(exc, buf, storage, lambda: off(env), span) from None

        return store

    # ---- buffers with a layout ------------------------------------------------------

    def layout_map_fn(self, buf: Buffer) -> Callable[[Env], ConcreteLayoutMap]:
        """A closure giving the layout's map for the current dims and symbols (cached)."""
        dim_fns = [self.compile_expr(d) for d in buf.shape]
        names = sorted(layout_symbols(buf.layout))
        sym_fns = [self.compile_expr(self._symbol(buf, n)) for n in names]
        cache: dict[tuple, ConcreteLayoutMap] = {}

        def get(env: Env) -> ConcreteLayoutMap:
            key = (tuple(int(f(env)) for f in dim_fns), tuple(int(f(env)) for f in sym_fns))
            found = cache.get(key)
            if found is None:
                try:
                    found = ConcreteLayoutMap(buf.layout, key[0], dict(zip(names, key[1])))
                except LayoutError as e:
                    raise InterpreterError(f"buffer {buf.name}: {e}", buf.span) from None
                cache[key] = found
            return found

        return get

    def _symbol(self, buf: Buffer, name: str) -> PrimExpr:
        """The variable a layout symbol names: in the buffer's shape, else any known one."""
        known = list(getattr(getattr(self.slot_of, "__self__", None), "keep", []))
        for v in [*buf.shape, *known]:
            if isinstance(v, Var) and v.name == name:
                return v
        raise InterpreterError(f"buffer {buf.name}: layout symbol '{name}' is not a symbolic "
                               f"size of the function", buf.span)

    def _layout_offset(self, buf: Buffer, fns: list[Fn], span: Span | None,
                       copies: bool) -> Fn:
        get = self.layout_map_fn(buf)
        dslot = self.slot_of(buf.data)

        def off(env: Env) -> Any:
            cmap = get(env)
            idx = [f(env) for f in fns]
            if len(idx) != len(cmap.dims):
                raise InterpreterError(f"buffer {buf.name} of rank {len(cmap.dims)} accessed "
                                       f"with {len(idx)} indices", span)
            for i, d in zip(idx, cmap.dims):
                lo, hi = (i.min(), i.max()) if isinstance(i, np.ndarray) and i.size else (i, i)
                if not 0 <= lo <= hi < d:
                    raise _oob(buf, idx, cmap.dims, span)
            offs = cmap.offsets(idx) if copies else [cmap.offset_of(cmap.place(idx))]
            size = storage_of(env, dslot, buf).size
            for o in offs:
                lo, hi = (o.min(), o.max()) if isinstance(o, np.ndarray) and o.size else (o, o)
                if not 0 <= lo <= hi < size:
                    raise _flat_oob(buf, int(lo if lo < 0 else hi), storage_of(env, dslot, buf),
                                    span)
            return offs[0] if len(offs) == 1 else np.array(offs)

        return off


def _store_error(exc: Exception, buf: Buffer, storage: Any, offset: Callable[[], int],
                 span: Span | None) -> Exception:
    """The error a failed store raises: outside its allocation (the storage is not set), out
    of bounds (an IndexError; `offset` recomputes the offset for the message), or `exc`."""
    if isinstance(exc, IndexError):
        return _flat_oob(buf, offset(), storage, span)
    if isinstance(storage, Unset):
        return InterpreterError(f"buffer {buf.name} is used outside its allocation")
    return exc


def _flat_oob(buf: Buffer, offset: int, storage: np.ndarray,
              span: Span | None) -> InterpreterError:
    return InterpreterError(f"out-of-bounds access {buf.name} (flat offset {offset} outside "
                            f"a storage of {storage.size} elements)", span)
