"""Hypothesis strategies that build random but well-formed IR modules directly (not text)."""

from __future__ import annotations

from hypothesis import strategies as st
from tirc.ir import (
    BufferRegion,
    BufferStore,
    FloatImm,
    For,
    ForKind,
    IntImm,
    IRModule,
    IterKind,
    IterVar,
    PrimFunc,
    Range,
    Var,
    make_buffer,
)
from tirc.ir import expr as E
from tirc.ir.dtype import BOOL, dtype
from tirc.ir.stmt import Block, BlockRealize, IfThenElse, LetStmt, seq

F32 = dtype("float32")
HANDLE = dtype("handle")


def index_exprs(loop_vars: list[Var]) -> st.SearchStrategy:
    """int32 index arithmetic over the loop variables."""
    leaves = st.one_of(st.sampled_from(loop_vars), st.integers(-20, 20).map(IntImm))
    ops = st.sampled_from(["add", "sub", "mul", "floordiv", "floormod", "min", "max"])

    def extend(children: st.SearchStrategy) -> st.SearchStrategy:
        return st.builds(E.binop, ops, children, children)

    return st.recursive(leaves, extend, max_leaves=5)


def float_exprs(loads: list, loop_vars: list[Var]) -> st.SearchStrategy:
    """float32 arithmetic over buffer loads, constants, casts, selects and intrinsics."""
    consts = st.floats(-4, 4, allow_nan=False, width=32).map(lambda v: FloatImm(float(v), F32))
    casts = st.sampled_from(loop_vars).map(lambda v: E.cast(F32, v))
    leaves = st.one_of(st.sampled_from(loads), consts, casts)

    def extend(children: st.SearchStrategy) -> st.SearchStrategy:
        arith = st.builds(E.binop, st.sampled_from(["add", "sub", "mul", "div", "min", "max"]),
                          children, children)
        intrin = st.builds(lambda name, x: E.call(name, x),
                           st.sampled_from(["exp", "tanh", "sqrt", "abs", "sigmoid"]), children)
        cond = st.builds(lambda a, b, t, f: E.select(E.binop("lt", a, b), t, f),
                         children, children, children, children)
        return st.one_of(arith, intrin, cond)

    return st.recursive(leaves, extend, max_leaves=6)


@st.composite
def prim_funcs(draw: st.DrawFn, name: str = "f") -> PrimFunc:
    """A prim_func with 1-3 buffers, a loop nest of random kinds and a block or plain stores."""
    nbuf = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 16), min_size=1, max_size=3)))
    bufs = [make_buffer(f"{chr(65 + i)}", shape, "float32") for i in range(nbuf)]
    handles = [Var(b.name, HANDLE) for b in bufs]
    loop_vars = [Var(n) for n in ("i", "j", "k")[: len(shape)]]
    loads = [b.vload(*loop_vars) for b in bufs]
    out = bufs[-1]
    value = draw(float_exprs(loads, loop_vars))
    use_block = draw(st.booleans())
    if use_block:
        ivars = [Var("v" + v.name) for v in loop_vars]
        sub = {lv: iv for lv, iv in zip(loop_vars, ivars)}
        from tirc.ir.visitor import substitute

        store = BufferStore(out, substitute(value, sub), tuple(ivars))
        kinds = [IterKind.SPATIAL] * len(ivars)
        region = tuple(Range(iv, IntImm(1)) for iv in ivars)
        block = Block("compute", tuple(IterVar(iv, Range(IntImm(0), IntImm(n)), kd)
                                       for iv, n, kd in zip(ivars, shape, kinds)),
                      tuple(BufferRegion(b, region) for b in bufs[:-1]),
                      (BufferRegion(out, region),), store)
        body = BlockRealize(tuple(loop_vars), IntImm(1, BOOL), block)
    else:
        body = BufferStore(out, value, tuple(loop_vars))
        if draw(st.booleans()):
            idx = draw(index_exprs(loop_vars))
            body = IfThenElse(E.binop("lt", idx, IntImm(draw(st.integers(0, 9)))), body)
        if draw(st.booleans()):
            t = Var("t", F32)
            body = LetStmt(t, draw(float_exprs(loads, loop_vars)),
                           seq(body, BufferStore(out, t, tuple(loop_vars))))
    kinds = [ForKind.SERIAL, ForKind.PARALLEL, ForKind.UNROLLED, ForKind.VECTORIZED]
    for lv, n in reversed(list(zip(loop_vars, shape))):
        kind = draw(st.sampled_from(kinds)) if not use_block else ForKind.SERIAL
        body = For(lv, IntImm(0), IntImm(n), kind, body)
    return PrimFunc(name, tuple(handles), dict(zip(handles, bufs)), body)


@st.composite
def ir_modules(draw: st.DrawFn) -> IRModule:
    n = draw(st.integers(1, 3))
    funcs = {f"f{i}": draw(prim_funcs(name=f"f{i}")) for i in range(n)}
    return IRModule(funcs)
