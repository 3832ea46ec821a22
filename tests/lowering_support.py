"""Shared by the lowering-pass tests: compact IR builders and the before/after interpreter check.

`assert_same_results` is how a lowering test shows that a pass keeps meaning: both modules run
in the reference interpreter on the same random inputs, and every parameter buffer must end
with the same contents.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tirc.frontend import parse
from tirc.ir import (
    Block,
    BlockRealize,
    Buffer,
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
    structural_equal,
)
from tirc.ir.arith.construct import fold
from tirc.ir.dtype import BOOL, dtype
from tirc.ir.interpreter import Interpreter
from tirc.ir.node import Node
from tirc.ir.printer import print_function
from tirc.ir.rebind import rebind, used_vars
from tirc.ir.stmt import BufferStore, Stmt
from tirc.ir.visitor import post_order_visit
from tirc.passes.pass_base import Pass, PassContext
from tirc.passes.verify import verify_module

HANDLE = dtype("handle")
TRUE = IntImm(1, BOOL)


def buf(name: str, shape: tuple[Any, ...], dt: str = "float32", **kw: Any) -> Buffer:
    """A buffer; int dimensions become int32 constants (int64 ones: pass T.int64 IntImms)."""
    return make_buffer(name, shape, dt, **kw)


def i64(value: int) -> IntImm:
    return IntImm(value, dtype("int64"))


def loop(v: Var, extent: Any, body: Stmt, kind: ForKind = ForKind.SERIAL, lo: Any = None,
         **kw: Any) -> For:
    """`for v in <kind>(lo, lo + extent)`; int bounds take the loop variable's dtype."""
    def as_e(x: Any) -> Any:
        return IntImm(x, v.dtype) if isinstance(x, int) else x
    return For(v, as_e(0 if lo is None else lo), as_e(extent), kind, body, **kw)


def block(name: str, iters: list[tuple[Var, Any, str]], values: list[Any], body: Stmt,
          predicate: Any = TRUE, **kw: Any) -> BlockRealize:
    """A block realize; `iters` are (var, extent, "S"|"R") with domains from 0."""
    ivs = tuple(IterVar(v, Range(IntImm(0, v.dtype), IntImm(e, v.dtype) if isinstance(e, int)
                                 else e), IterKind(k)) for v, e, k in iters)
    return BlockRealize(tuple(values), predicate, Block(name, ivs, (), (), body, **kw))


def root(body: Stmt, allocs: tuple[Buffer, ...] = ()) -> BlockRealize:
    return BlockRealize((), TRUE, Block("root", (), (), (), body, alloc_buffers=allocs))


def prim_func(name: str, buffers: list[Buffer], body: Stmt, scalars: tuple[Var, ...] = (),
              **kw: Any) -> PrimFunc:
    """A prim_func whose handle parameters are matched to `buffers`, then scalar params."""
    handles = [Var(b.name.lower() + "_h", HANDLE) for b in buffers]
    return PrimFunc(name, (*handles, *scalars), dict(zip(handles, buffers)), body, **kw)


def module(*funcs: PrimFunc) -> IRModule:
    return IRModule({f.name: f for f in funcs})


def run_pass(p: Pass, mod: IRModule, **config: str) -> tuple[IRModule, PassContext]:
    """Run one pass with `config`; the result must be well-formed."""
    ctx = PassContext(config=dict(config))
    out = p(mod, ctx)
    problems = verify_module(out)
    assert not problems, "\n".join(d.render() for d in problems)
    return out, ctx


def func_text(mod: IRModule, name: str) -> str:
    """One function of `mod` printed on its own (no module header, no indentation)."""
    return "\n".join(print_function(mod[name])) + "\n"


def run_on_text(p: Pass, text: str, **config: str) -> tuple[IRModule, IRModule, PassContext]:
    """Parse `.tir` text and run one pass on it: (before, after, context)."""
    before = parse(text)
    after, ctx = run_pass(p, before, **config)
    return before, after, ctx


def body_text(mod: IRModule, name: str | None = None) -> str:
    """The printed body of a function (the lines after the `def` line), dedented."""
    lines = mod.script().splitlines()
    start = next(k for k, line in enumerate(lines)
                 if line.strip().startswith(f"def {name or ''}"))
    indent = len(lines[start + 1]) - len(lines[start + 1].lstrip())
    return "\n".join(line[indent:] for line in lines[start + 1:] if line.strip()) + "\n"


def count_nodes(node: Any, kind: type) -> int:
    found = [0]

    def check(n: Node) -> None:
        if isinstance(n, kind):
            found[0] += 1

    post_order_visit(node, check)
    return found[0]


def stores_to(node: Any) -> list[BufferStore]:
    out: list[BufferStore] = []
    post_order_visit(node, lambda n: out.append(n) if isinstance(n, BufferStore) else None)
    return out


# ---- the interpreter check --------------------------------------------------------------


def _dim_value(d: Any, sizes: dict[str, int]) -> int:
    """A shape dimension evaluated with the symbolic sizes given by name."""
    values = {v: IntImm(sizes[v.name], v.dtype) for v in used_vars(d)}
    folded = fold(rebind(d, values))
    assert isinstance(folded, IntImm), f"cannot evaluate dimension {folded}"
    return folded.value


def random_args(func: PrimFunc, sizes: dict[str, int], seed: int = 0) -> list[Any]:
    """Random arrays for the buffer parameters (symbolic dims from `sizes`), ints for scalars."""
    rng = np.random.default_rng(seed)
    out: list[Any] = []
    for p in func.params:
        b = func.buffer_map.get(p)
        if b is None:
            out.append(sizes[p.name])
            continue
        shape = tuple(_dim_value(d, sizes) for d in b.shape)
        np_dtype = b.dtype.numpy_name()
        if b.dtype.is_float:
            out.append(rng.standard_normal(shape).astype(np_dtype))
        elif b.dtype.is_bool:
            out.append(rng.integers(0, 2, shape).astype(bool))
        else:
            out.append(rng.integers(-50, 50, shape).astype(np_dtype))
    return out


def interpret(mod: IRModule, name: str, args: list[Any]) -> list[Any]:
    """Run `name` of `mod` in the reference interpreter; arrays are updated in place."""
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    Interpreter(mod).call(name, *copies)
    return copies


def assert_same_results(before: IRModule, after: IRModule, name: str,
                        sizes: dict[str, int] | None = None, seeds: tuple[int, ...] = (0, 1),
                        ) -> None:
    """Interpret `name` before and after a pass on random inputs: every buffer ends equal."""
    for seed in seeds:
        args = random_args(before[name], sizes or {}, seed)
        expected = interpret(before, name, args)
        got = interpret(after, name, args)
        for e, g in zip(expected, got):
            if isinstance(e, np.ndarray):
                np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


def same_ir(a: Any, b: Any) -> bool:
    return structural_equal(a, b)


# A row sum over a symbolic n (0 makes its reduction empty: schedule, GPU and level tests).
ROWSUM_N = '''
@T.prim_func
def rowsum_n(a: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (4, n), "float32")
    C = T.match_buffer(c, (4,), "float32")
    for i, k in T.grid(4, n):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + A[vi, vk]
'''
