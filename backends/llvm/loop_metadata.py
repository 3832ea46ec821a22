"""`llvm.loop` metadata: the distinct, self-referential node LLVM reads loop hints from."""

from __future__ import annotations

from llvmlite import ir
from tirc.backends.llvm.types import I1, I32


class LoopID(ir.values.MDValue):
    """`!n = distinct !{!n, hints...}` (llvmlite's add_metadata cannot make distinct nodes)."""

    def __init__(self, module: ir.Module, hints: list[ir.values.MDValue]) -> None:
        super().__init__(module, [], name=str(len(module.metadata)))
        self.operands = (self, *hints)

    def descr(self, buf: list[str]) -> None:
        ops = ", ".join(op.get_reference() for op in self.operands)
        buf += (f"distinct !{{ {ops} }}", "\n")

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)


def _hint(module: ir.Module, name: str, value: int | None = None,
          ty: ir.Type = I32) -> ir.values.MDValue:
    ops: list[ir.Value] = [ir.MetaDataString(module, name)]
    if value is not None:
        ops.append(ir.Constant(ty, value))
    return module.add_metadata(ops)


def unroll_full(module: ir.Module) -> LoopID:
    """Ask LLVM to unroll the loop completely."""
    return LoopID(module, [_hint(module, "llvm.loop.unroll.full")])


def unroll_disable(module: ir.Module) -> LoopID:
    """Ask LLVM to keep the loop rolled (no unrolling, no vectorizing)."""
    return LoopID(module, [_hint(module, "llvm.loop.unroll.disable"),
                           _hint(module, "llvm.loop.vectorize.enable", 0, I1)])


def unroll_enable(module: ir.Module) -> LoopID:
    """Ask LLVM to unroll the loop as far as its cost model allows."""
    return LoopID(module, [_hint(module, "llvm.loop.unroll.enable")])


def unroll_count(module: ir.Module, count: int) -> LoopID:
    """Ask LLVM to unroll the loop by `count`."""
    return LoopID(module, [_hint(module, "llvm.loop.unroll.count", count)])


def vectorize_enable(module: ir.Module, width: int | None = None) -> LoopID:
    """Ask LLVM's loop vectorizer to vectorize the loop (with a width, when given)."""
    hints = [_hint(module, "llvm.loop.vectorize.enable", 1, I1)]
    if width:
        hints.append(_hint(module, "llvm.loop.vectorize.width", width))
    return LoopID(module, hints)
