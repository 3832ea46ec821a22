"""Stages of the random loop functions from a stream of their own (one program in eight gets
one, after every other stage): direct calls of other loop functions of the module, which no
other stage writes (docs/language.md, "Calls between loop functions"):

- `map`: `Module.sub(A.data, O.data, n, k)` as a statement, a private callee viewing the
  caller's storage through `T.decl_buffer((n,), data=...)` (n the tensor's element count, a
  symbolic product too) and writing `O[i] = A[i] * k + c` for a scalar argument k;
- `first`: `O[0] = Module.first(A.data, n) * 2`, a callee returning an int32 from the middle
  of its loop (`return i` at the first element above a threshold, else -1).

The callees are the program's helpers (`Program.helpers`), compiled into the same module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tirc.frontend import parse
from tirc.ir import BufferStore, IntImm, PrimExpr, binop, cast
from tirc.ir import expr as E
from tirc.ir.dtype import dtype
from tirc.ir.intrinsics import CALL_PRIM
from tirc.ir.stmt import Evaluate

from difftest.values import MAGNITUDE_LIMIT, Info

if TYPE_CHECKING:
    from difftest.loop_programs import _Gen


def stage_call(gen: _Gen) -> None:
    """One of the stages above, drawn from `gen.rng` (the stage's own stream)."""
    gen.rng.choice((stage_map, stage_first))(gen)


def _count(gen: _Gen, dims: tuple) -> PrimExpr:
    """The element count of a tensor of `dims`, as an int32 argument."""
    total: PrimExpr = dims[0].expr
    for d in dims[1:]:
        total = binop("mul", total, d.expr)
    return cast("int32", total)


def _helper(gen: _Gen, name: str, text: str) -> None:
    gen.helpers[name] = parse(text, f"{name}.tir")[name]


def stage_map(gen: _Gen) -> None:
    """out = src * k + c through a private callee on the caller's storage."""
    r = gen.rng
    src = gen.source("float32")
    k, c = r.choice((0.5, 2.0, -1.0, 3.0)), r.choice((0.0, 1.0, -0.25))
    info = src.info.with_(mag=src.info.mag * abs(k) + abs(c), frac=src.info.frac + 2)
    if info.mag > MAGNITUDE_LIMIT["float32"]:
        return
    out = gen.tensor(src.dims, "float32", info, "out")
    name = gen.fresh(f"{gen.name}_map")
    _helper(gen, name, f"""\
from tvm.script import tir as T

@T.prim_func(private=True)
def {name}(a: T.handle("float32"), o: T.handle("float32"), n: T.int32, k: T.float32):
    A = T.decl_buffer((n,), "float32", data=a)
    O = T.decl_buffer((n,), "float32", data=o)
    for i in range(n):
        O[i] = A[i] * k + T.float32({c})
""")
    call = E.Call(CALL_PRIM, (E.StringImm(name), src.buf.data, out.buf.data,
                              _count(gen, src.dims), E.const(k, "float32")), dtype("void"))
    gen.stages.append(Evaluate(call))


def stage_first(gen: _Gen) -> None:
    """out[0] = 2 * (the first position of src holding more than t, or -1), returned from
    the middle of the callee's loop."""
    from difftest.loop_programs import Dim

    r = gen.rng
    src = gen.source("float32")
    if not src.info.exact:
        return
    t = r.choice((-1.0, 0.0, 0.5, 2.0, 3.5))
    one = Dim(IntImm(1, gen.index), 0)
    out = gen.tensor((one,), "int32", Info("int32", 2.0 * (1 << 20)), "out")
    name = gen.fresh(f"{gen.name}_first")
    _helper(gen, name, f"""\
from tvm.script import tir as T

@T.prim_func(private=True)
def {name}(a: T.handle("float32"), n: T.int32) -> T.int32:
    A = T.decl_buffer((n,), "float32", data=a)
    for i in range(n):
        if A[i] > T.float32({t}):
            return i
    return -1
""")
    call = E.Call(CALL_PRIM, (E.StringImm(name), src.buf.data, _count(gen, src.dims)),
                  dtype("int32"))
    gen.stages.append(BufferStore(out.buf, binop("mul", call, IntImm(2, dtype("int32"))),
                                  (IntImm(0, gen.index),)))
