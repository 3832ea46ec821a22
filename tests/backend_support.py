"""Shared by the backend and runtime tests: hand-built loop functions over flat buffers, and
compiling a list of them into one library loaded through tirc.runtime.

Building IR by hand keeps these tests independent of the frontend and the lowering passes;
one library holds many small functions so that each test file compiles once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tirc import driver
from tirc.ir import Buffer, For, ForKind, IntImm, IRModule, PrimExpr, PrimFunc, Var, make_buffer
from tirc.ir.dtype import dtype
from tirc.ir.expr import BufferLoad, Ramp
from tirc.ir.stmt import BufferStore, Stmt
from tirc.ir.target import parse_target
from tirc.runtime import Module, load

HANDLE = dtype("handle")
I64 = dtype("int64")


def i64(value: int) -> IntImm:
    return IntImm(value, I64)


def flat_view(buf: Buffer) -> Buffer:
    """The 1-D buffer over the same storage (what flatten-buffers makes), for flat indexing."""
    size: PrimExpr = buf.shape[0]
    for dim in buf.shape[1:]:
        size = size * dim
    return Buffer(name=buf.name, shape=(size,), dtype=buf.dtype, data=buf.data)


def func(name: str, buffers: list[Buffer], body: Stmt, scalars: tuple[Var, ...] = ()) -> PrimFunc:
    """A PrimFunc whose parameters are `buffers` (by handle, in order), then `scalars`."""
    handles = tuple(Var(b.name, HANDLE) for b in buffers)
    return PrimFunc(name, handles + scalars, dict(zip(handles, buffers)), body,
                    {"global_symbol": name})


def elementwise(name: str, in_dtypes: list[str], out_dtype: str,
                fn: Callable[..., PrimExpr], n: int | Var = 64,
                kind: ForKind = ForKind.SERIAL) -> PrimFunc:
    """`out[i] = fn(x0[i], x1[i], ...)` over n elements (n may be a symbolic int64 Var)."""
    extent = i64(n) if isinstance(n, int) else n
    ins = [make_buffer(f"X{k}", (extent,), dt) for k, dt in enumerate(in_dtypes)]
    out = make_buffer("Out", (extent,), out_dtype)
    i = Var("i", I64)
    body = For(i, i64(0), extent, kind,
               BufferStore(out, fn(*[b.vload(i) for b in ins]), (i,)))
    return func(name, [*ins, out], body)


def vector_elementwise(name: str, dt: str, lanes: int, blocks: int,
                       fn: Callable[..., PrimExpr], arity: int = 2) -> PrimFunc:
    """`out[v*L:(v+1)*L] = fn(x[v*L:...], ...)` with explicit ramp loads and stores."""
    n = i64(blocks * lanes)
    ins = [make_buffer(f"X{k}", (n,), dt) for k in range(arity)]
    out = make_buffer("Out", (n,), dt)
    v = Var("v", I64)
    idx = Ramp(v * lanes, i64(1), lanes, I64.with_lanes(lanes))
    vdt = dtype(dt).with_lanes(lanes)
    loads = [BufferLoad(b, (idx,), vdt) for b in ins]
    body = For(v, i64(0), i64(blocks), ForKind.SERIAL, BufferStore(out, fn(*loads), (idx,)))
    return func(name, [*ins, out], body)


def emit(mod: IRModule, kind: str, target: Any = None, opt_level: int = 2,
         out_path: Path | None = None, **kwargs: Any) -> bytes:
    """`mod` (loop functions over flat buffers, as lowering leaves them) with its entry points
    made (make-entry, the default pipeline's last CPU step), rendered as `kind`."""
    return driver.emit(mod, kind, target, opt_level, out_path, passes=["make-entry"], **kwargs)


# A host target without FMA contraction, for tests that compare bit-exactly with numpy.
EXACT = parse_target("llvm -fp-contract=off")


def build_library(funcs: list[PrimFunc], path: Path, opt_level: int = 2,
                  target: Any = None) -> Module:
    """Compile `funcs` into one shared object at `path` and load it."""
    mod = IRModule({f.name: f for f in funcs})
    emit(mod, "so", target, opt_level, path)
    return load(path)
