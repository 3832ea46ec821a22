"""Code for the position-search intrinsics of sparse lowering: `tirc.lower_bound` and
`tirc.upper_bound` (see tirc.ir.sparse.search) become an inline binary search loop."""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir
from tirc.backends.llvm.types import const_like, mem_type
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import DType
from tirc.ir.expr import Call, PrimExpr, Var


class SearchCalls:
    """Mixed into the function code generator."""

    b: ir.IRBuilder
    env: dict[Var, ir.Value]
    expr_as: Callable[[PrimExpr, DType], ir.Value]
    index_i64: Callable[[ir.Value, DType], ir.Value]

    def call_lower_bound(self, e: Call) -> ir.Value:
        return self._binary_search(e, upper=False)

    def call_upper_bound(self, e: Call) -> ir.Value:
        return self._binary_search(e, upper=True)

    def _binary_search(self, e: Call, upper: bool) -> ir.Value:
        data, value, begin, end = e.args
        if not isinstance(data, Var) or data not in self.env:
            raise CompileError(f"codegen: {e.op} needs the storage of a buffer", e.span)
        dt = e.dtype
        b = self.b
        ptr = self.env[data]
        key = self.expr_as(value, dt)
        lo0 = self.expr_as(begin, dt)
        hi0 = self.expr_as(end, dt)
        pre = b.block
        head = b.append_basic_block("search.head")
        body = b.append_basic_block("search.body")
        done = b.append_basic_block("search.end")
        b.branch(head)
        b.position_at_end(head)
        lo = b.phi(lo0.type, name="search.lo")
        hi = b.phi(hi0.type, name="search.hi")
        lo.add_incoming(lo0, pre)
        hi.add_incoming(hi0, pre)
        b.cbranch(b.icmp_signed("<", lo, hi), body, done)
        b.position_at_end(body)
        mid = b.add(lo, b.lshr(b.sub(hi, lo), const_like(lo.type, 1)))
        addr = b.gep(ptr, [self.index_i64(mid, dt)], source_etype=mem_type(dt))
        item = b.load(addr, typ=mem_type(dt))
        right = b.icmp_signed("<=" if upper else "<", item, key)
        lo.add_incoming(b.select(right, b.add(mid, const_like(mid.type, 1)), lo), body)
        hi.add_incoming(b.select(right, hi, mid), body)
        b.branch(head)
        b.position_at_end(done)
        return lo
