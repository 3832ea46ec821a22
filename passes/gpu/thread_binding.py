"""gpu-thread-binding: check thread-bound loops and make each start at 0.

A thread-bound loop (`T.thread_binding`, or a loop the schedule `bind`s) becomes, on the
device, a read of the thread's index rather than a loop. This pass checks what that needs:
- the tag is one of blockIdx.x/y/z, threadIdx.x/y/z (inject-vthread has removed `vthread`);
- a loop bound to the tag of a loop enclosing it is that loop's thread index (TVM's
  UnifyThreadBinding; MetaSchedule's cooperative fetch), so it is replaced by its body; the
  two extents must be equal, and the body a copy (see `repeatable_copy`; the frontend
  already made any other nest of the source one index);
- no blockIdx loop sits inside a threadIdx loop (a block index cannot vary within a block);
and rewrites a loop over [lo, lo + n) into one over [0, n) with `v + lo` in its body, since the
hardware index starts at 0.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tirc.ir.arith import Analyzer
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import IntImm, binop
from tirc.ir.function import PrimFunc
from tirc.ir.gpu.threads import ALL_TAGS, is_block_tag, is_thread_loop, repeatable_copy
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.node import Node
from tirc.ir.printer import print_node
from tirc.ir.rebind import uses_any
from tirc.ir.stmt import For, Stmt
from tirc.ir.visitor import Mutator, substitute
from tirc.passes.pass_base import PassContext, PrimFuncPass


class _Normalize(Mutator):
    def __init__(self) -> None:
        self.enclosing: list[For] = []

    def generic_visit(self, n: Node) -> Any:
        return super().generic_visit(n) if isinstance(n, Stmt) else n

    def visit_For(self, s: For) -> Any:
        if not is_thread_loop(s):
            return self.generic_visit(s)
        tag = s.thread_tag or ""
        where = f"loop '{s.loop_var.name}'"
        if tag not in ALL_TAGS:
            raise CompileError(f"gpu-thread-binding: {where} is bound to unknown thread axis "
                               f"'{tag}' (expected one of: {', '.join(ALL_TAGS)})", s.span)
        for outer in self.enclosing:
            if outer.thread_tag == tag:
                return self.visit(self._unify(s, outer, where))
            if is_block_tag(tag) and not is_block_tag(outer.thread_tag):
                raise CompileError(f"gpu-thread-binding: {where} is bound to {tag} inside loop "
                                   f"'{outer.loop_var.name}' bound to {outer.thread_tag}; "
                                   "blockIdx loops must enclose the threadIdx loops", s.span)
        self.enclosing.append(s)
        try:
            body = self.visit(s.body)
        finally:
            self.enclosing.pop()
        lo = s.min
        if not (isinstance(lo, IntImm) and lo.value == 0):
            body = substitute(body, {s.loop_var: binop("add", s.loop_var, lo)})
            lo = IntImm(0, s.extent.dtype)
        if body is s.body and lo is s.min:
            return s
        return s.replace(min=lo, body=body)

    @staticmethod
    def _unify(s: For, outer: For, where: str) -> Stmt:
        """The body of `s`, a loop bound to the tag `outer` is bound to, reading the same
        thread index (TVM's UnifyThreadBinding: a cooperative fetch is written so); the
        extents must be provably equal, as TVM requires."""
        if not Analyzer().can_prove_equal(s.extent, outer.extent):
            extents = f"{print_node(s.extent)} and {print_node(outer.extent)}"
            raise CompileError(f"gpu-thread-binding: {where} is bound to {outer.thread_tag} "
                               f"inside loop '{outer.loop_var.name}', which is bound to it too "
                               f"with another extent ({extents}): loops bound to one thread "
                               "axis must have the same extent", s.span)
        if uses_any(s.body, {outer.loop_var}) or not repeatable_copy(s.body):
            raise CompileError(f"gpu-thread-binding: {where} is bound to {outer.thread_tag} "
                               f"inside loop '{outer.loop_var.name}', which is bound to it "
                               "too, and its body is not a plain copy every thread could "
                               "make whole (it uses the outer loop's variable, a store reads "
                               "the buffer it writes, or a call may have effects): a nested "
                               "binding of one thread axis is supported for the cooperative "
                               "copies MetaSchedule writes", s.span)
        value: Any = outer.loop_var
        if not Analyzer().can_prove_equal(s.min, outer.min):
            value = binop("add", binop("sub", outer.loop_var, outer.min), s.min)
        return substitute(s.body, {s.loop_var: value})


def normalize_thread_loops(func: PrimFunc) -> PrimFunc:
    """`func` with its thread-bound loops checked and starting at 0."""
    body = _Normalize().visit(func.body)
    return func if body is func.body else func.replace(body=body)  # type: ignore[return-value]


@dataclass(frozen=True)
class GPUThreadBinding(PrimFuncPass):
    """Check the thread-bound loops and start each at 0 (see the module docstring)."""

    name: ClassVar[str] = "gpu-thread-binding"
    description: ClassVar[str] = ("check thread-bound loops (known tags, proper nesting) and "
                                  "start each at 0")

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        return normalize_thread_loops(func)
