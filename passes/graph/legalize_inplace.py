"""R.call_tir_inplace for compiled code: a call_tir of a loop function that copies each
in-place argument into its output, then runs the callee on the output.

`R.call_tir_inplace(f, (x, y), inplace_indices=[0], out_sinfo=...)` becomes
`R.call_tir(f_inplace, (x, y), out_sinfo=...)`, where `f_inplace(x_in, y, x)` copies `x_in`
into `x` and runs `f`'s body unchanged: `f`'s own buffer for the argument is the output.
The argument keeps its value (value semantics, as the interpreter runs it); what TVM leaves
undefined, a read of the argument after the call, sees the value before it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import HANDLE
from tirc.ir.expr import BufferLoad, Var
from tirc.ir.function import PrimFunc
from tirc.ir.graph import GCall, GlobalVar, GraphExpr, PrimSInfo, SparseTensorSInfo, Tuple
from tirc.ir.module import IRModule
from tirc.ir.ops.infer import infer_expr
from tirc.ir.stmt import Stmt, inside_root_block, seq
from tirc.passes.graph.kernel import Kernel


def legalize_inplace(call: GCall, mod: IRModule, add: Callable[[PrimFunc], str]) -> GCall:
    """The call_tir of `call`'s in-place wrapper, which `add` puts in the module (its name)."""
    callee_ref = call.args[0]
    callee = mod.functions.get(callee_ref.name) if isinstance(callee_ref, GlobalVar) else None
    if not isinstance(callee, PrimFunc):
        raise CompileError("R.call_tir_inplace needs a loop function of the module", call.span)
    given = call.args[1].fields if isinstance(call.args[1], Tuple) else (call.args[1],)
    kinds = [infer_expr(a, mod)[1] for a in given]
    if any(isinstance(s, SparseTensorSInfo) for s in kinds):
        raise CompileError("R.call_tir_inplace of sparse tensors is not supported (use "
                           "R.call_tir)", call.span)
    ordinal = {}  # argument index -> its place among the tensor arguments
    for k, s in enumerate(kinds):
        if not isinstance(s, PrimSInfo):
            ordinal[k] = len(ordinal)
    indices = tuple(int(i) for i in call.attrs["inplace_indices"])
    wrapper = _wrapper(callee, [ordinal[i] if i != -1 else -1 for i in indices], len(ordinal))
    args: tuple[GraphExpr, ...] = (GlobalVar(add(wrapper), span=callee_ref.span),
                                   *call.args[1:])
    return GCall("call_tir", args, {}, call.sinfo_args, span=call.span)


def _wrapper(callee: PrimFunc, places: list[int], n_inputs: int) -> PrimFunc:
    """`callee` taking its inputs, then every output (`places[k]`: output k is tensor input
    `places[k]` written in place, -1 a fresh one): the in-place inputs arrive in new buffers
    copied into the callee's own first."""
    handles = [p for p in callee.params if p in callee.buffer_map]
    scalars = [p for p in callee.params if p not in callee.buffer_map]
    inputs, fresh = handles[:n_inputs], iter(handles[n_inputs:])
    params: list[Var] = []
    buffer_map: dict[Var, Buffer] = {}
    copies: list[Stmt] = []
    for t, h in enumerate(inputs):
        buf = callee.buffer_map[h]
        if t in places:
            src = dataclasses.replace(buf, name=f"{buf.name}_in",
                                      data=Var(f"{buf.name}_in", HANDLE))
            h = Var(f"{h.name}_in", HANDLE)
            copies.append(_copy(src, buf))
            buf = src
        params.append(h)
        buffer_map[h] = buf
    for place in places:
        h = next(fresh) if place == -1 else inputs[place]
        params.append(h)
        buffer_map[h] = callee.buffer_map[h]
    attrs = {k: v for k, v in callee.attrs.items() if k != "global_symbol"}
    return PrimFunc(f"{callee.name}_inplace", (*params, *scalars), buffer_map,
                    inside_root_block(callee.body, lambda body: seq(*copies, body)), attrs)


def _copy(src: Buffer, out: Buffer) -> Stmt:
    """A block loop nest `out[i...] = src[i...]`."""
    k = Kernel("copy")
    k.compute(f"{out.name}_inplace_copy", out,
              lambda i: src.vload(*i) if i else BufferLoad(src, (), src.dtype))
    return k.stages[0]

