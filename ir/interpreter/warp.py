"""Warp-level meeting points of the GPU interpreter: TVM's warp shuffles and activemask.

`T.tvm_warp_shuffle`, `_up`, `_down`, `_xor` and `T.tvm_warp_activemask` are places where the
threads of a warp (32 by linear index in the block) exchange values. HoistWarpCalls takes each
such call out of its statement into a let of its own, where a thread (a generator of the GPU
interpreter, tirc.ir.interpreter.gpu) stops and yields a WarpOffer; BlockState.meet_warps
resolves the offers whose lanes have all arrived with PTX's `shfl.sync` rule for the mode and
width, and says what the device leaves undefined (a deadlock, a read of a missing lane) as an
InterpreterError.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tirc.ir import intrinsics as intrin
from tirc.ir.expr import Call, PrimExpr, Var
from tirc.ir.gpu.threads import (
    WARP_ACTIVEMASK,
    WARP_SHUFFLES,
    WARP_SIZE,
    shfl_clamp_low_bits,
)
from tirc.ir.interpreter.values import InterpreterError
from tirc.ir.node import Node, replace_fields
from tirc.ir.span import Span
from tirc.ir.stmt import BufferStore, Evaluate, For, IfThenElse, LetStmt, Stmt
from tirc.ir.visitor import Mutator, any_node, children, post_order_visit

FULL_MASK = (1 << WARP_SIZE) - 1


@dataclass(frozen=True)
class WarpOffer:
    """What a thread yields at a warp call: the site, the call, and the thread's operands
    (mask, value, lane or delta `b`, width); the scheduler sends back the call's result."""

    site: int
    op: str
    span: Span | None
    mask: int = 0
    value: Any = None
    b: int = 0
    width: int = WARP_SIZE

    def where(self) -> str:
        """`T.op` and its place, for messages."""
        return f"T.{self.op}" + (f" at {self.span}" if self.span is not None else "")


def is_warp_call(n: Any) -> bool:
    """Whether `n` is a warp shuffle or activemask call: the warp's threads meet there."""
    return isinstance(n, Call) and (n.op in WARP_SHUFFLES or n.op == WARP_ACTIVEMASK)


# The statements whose own expressions may hold warp calls, and which fields those are.
_HOISTABLE_FIELDS: dict[type, tuple[str, ...]] = {
    BufferStore: ("value", "indices"), Evaluate: ("value",), LetStmt: ("value",),
    IfThenElse: ("condition",), For: ("min", "extent"),
}


class _WarpCallsOut(Mutator):
    """Replaces the warp calls of one statement's expressions by fresh variables, recording
    each call (its operands already replaced) in `lets`, operands first."""

    def __init__(self, where: str, span: Span | None) -> None:
        self.where, self.span = where, span
        self.lets: list[tuple[Var, Call]] = []

    def visit_Call(self, e: Call) -> Any:
        if e.op == intrin.IF_THEN_ELSE and any_node(e.args[1:], is_warp_call):
            raise InterpreterError(f"the GPU interpreter cannot run a warp shuffle inside a "
                                   f"branch of T.if_then_else in {self.where}: every thread "
                                   "would run it; write an IfThenElse statement", self.span)
        e = self.generic_visit(e)
        if not is_warp_call(e):
            return e
        var = Var(f"{e.op}_{len(self.lets)}", e.dtype, span=e.span)
        self.lets.append((var, e))
        return var


class HoistWarpCalls(Mutator):
    """Puts each warp call of a statement's own expressions into a `LetStmt` of a fresh
    variable around the statement, so that a thread can stop at the call (`g_LetStmt`)."""

    def visit(self, node: Any) -> Any:
        if not isinstance(node, Stmt):
            return node if isinstance(node, PrimExpr) else super().visit(node)
        node = super().visit(node)
        own = [v for name, v in children(node) if not isinstance(v, Stmt) and name != "seq"]
        if not any_node(own, is_warp_call):
            return node
        fields = _HOISTABLE_FIELDS.get(type(node), ())
        where = f"{type(node).__name__}" + (f" at {node.span}" if node.span is not None else "")
        rest = [v for name, v in children(node) if name not in fields and name != "seq"
                and not isinstance(v, Stmt)]
        if not fields or any_node(rest, is_warp_call):
            op = next(n.op for n in _nodes(own) if is_warp_call(n))
            raise InterpreterError(f"the GPU interpreter cannot run T.{op} in {where}: a warp "
                                   "shuffle or activemask runs in a store, an evaluate, a let, "
                                   "an if's condition or a for loop's bounds", node.span)
        out = _WarpCallsOut(where, node.span)
        new: Stmt = replace_fields(node, {f: out.visit(getattr(node, f)) for f in fields})
        for var, call in reversed(out.lets):
            new = LetStmt(var, call, new, span=node.span)
        return new


def _nodes(node: Any) -> list[Node]:
    """The nodes under `node`, in post-order."""
    found: list[Node] = []
    post_order_visit(node, found.append)
    return found


def _lanes(lanes: Sequence[int]) -> str:
    """Lanes as ranges: `0-15, 20`."""
    out: list[str] = []
    for _, run in itertools.groupby(enumerate(sorted(lanes)), lambda p: p[1] - p[0]):
        ks = [k for _, k in run]
        out.append(str(ks[0]) if len(ks) == 1 else f"{ks[0]}-{ks[-1]}")
    return ", ".join(out)


def _mask_lanes(mask: int) -> list[int]:
    """The lanes a warp mask names."""
    return [k for k in range(WARP_SIZE) if mask >> k & 1]


def _source_lane(mode: str, lane: int, b: int, width: int) -> int:
    """The lane whose value a `shfl.sync` of `mode` gives `lane` (PTX's rule: a source
    outside the lane's segment of `width` lanes gives the lane its own value)."""
    c = (WARP_SIZE - width) << 8 | shfl_clamp_low_bits(mode)
    segmask, cval, b = (c >> 8) & 0x1F, c & 0x1F, b & 0x1F
    max_lane = (lane & segmask) | (cval & ~segmask & 0x1F)
    if mode == "up":
        j = lane - b
        return j if j >= max_lane else lane
    if mode == "down":
        j = lane + b
    elif mode == "bfly":
        j = lane ^ b
    else:
        j = (lane & segmask) | (b & ~segmask & 0x1F)
    return j if j <= max_lane else lane


class BlockState:
    """Where a block's threads (by linear index) have stopped: at a barrier (its site), at a
    warp call (the offer), or gone (finished or returned)."""

    def __init__(self, name: str, size: int) -> None:
        self.name, self.size = name, size
        self.at_barrier: dict[int, int] = {}
        self.at_warp: dict[int, WarpOffer] = {}
        self.gone: set[int] = set()
        self.finished = 0

    def meet_warps(self) -> dict[int, Any]:
        """Resolve the warp calls whose lanes have all arrived (activemasks once no shuffle
        can go on, so that lanes behind catch up); the resumed threads and their results."""
        groups: dict[tuple[int, int], list[int]] = {}
        for t, offer in self.at_warp.items():
            groups.setdefault((t // WARP_SIZE, offer.site), []).append(t)
        results: dict[int, Any] = {}
        blocked: list[str] = []
        for (warp, _), members in groups.items():
            if self.at_warp[members[0]].op != WARP_ACTIVEMASK:
                self._shuffle(warp, members, results, blocked)
        if not results:
            for members in groups.values():
                if self.at_warp[members[0]].op == WARP_ACTIVEMASK:
                    mask = sum(1 << t % WARP_SIZE for t in members)
                    results.update(dict.fromkeys(members, mask))
        if not results:
            raise InterpreterError(f"{self.name}: {blocked[0]}: a deadlock (undefined "
                                   "behaviour on the device)")
        for t in results:
            del self.at_warp[t]
        return results

    def _shuffle(self, warp: int, members: list[int], results: dict[int, Any],
                 blocked: list[str]) -> None:
        """Resolve one warp's threads at one shuffle, per mask, into `results`; say in
        `blocked` which lanes a mask still waits for."""
        offers = {t % WARP_SIZE: self.at_warp[t] for t in members}
        first = next(iter(offers.values()))
        head = f"warp {warp}, {first.where()}"
        for lane, o in offers.items():
            if not o.mask >> lane & 1:
                raise InterpreterError(f"{self.name}: {head}: lane {lane} gives the mask "
                                       f"{o.mask:#010x}, which leaves it out (undefined "
                                       "behaviour on the device)", o.span)
        by_mask: dict[int, list[int]] = {}
        for lane, o in offers.items():
            by_mask.setdefault(o.mask, []).append(lane)
        for mask, lanes in by_mask.items():
            for other, other_lanes in by_mask.items():
                if other != mask and other & mask:
                    raise InterpreterError(
                        f"{self.name}: {head}: lanes {_lanes(lanes)} give the mask "
                        f"{mask:#010x} and lanes {_lanes(other_lanes)} {other:#010x}: the "
                        "lanes a mask names must all give it (undefined behaviour on the "
                        "device)", first.span)
        for mask, lanes in by_mask.items():
            ready = self._arrived(warp, mask, lanes, head, blocked)
            for lane in lanes if ready else ():
                o = offers[lane]
                j = _source_lane(WARP_SHUFFLES[o.op], lane, o.b, o.width)
                if j not in lanes:
                    why = "has exited" if mask >> j & 1 else f"is not in the mask {mask:#010x}"
                    raise InterpreterError(f"{self.name}: {head}: lane {lane} reads lane {j}, "
                                           f"which {why} (an undefined value on the device)",
                                           o.span)
                results[warp * WARP_SIZE + lane] = offers[j].value

    def _arrived(self, warp: int, mask: int, lanes: list[int], head: str,
                 blocked: list[str]) -> bool:
        """Whether every lane of `mask` that has not exited is among `lanes`; a lane at a
        barrier is an error, a lane at another warp call is waited for."""
        elsewhere: list[int] = []
        for lane in _mask_lanes(mask):
            t = warp * WARP_SIZE + lane
            if lane in lanes or t >= self.size or t in self.gone:
                continue
            if t in self.at_barrier:
                raise InterpreterError(
                    f"{self.name}: {head}: lanes {_lanes(lanes)} give the mask {mask:#010x}, "
                    f"which names lane {lane}, waiting at a barrier: a deadlock (undefined "
                    "behaviour on the device)")
            elsewhere.append(lane)
        if elsewhere:
            blocked.append(f"{head}: lanes {_lanes(lanes)} give the mask {mask:#010x} and wait "
                           f"for lanes {_lanes(elsewhere)}, which wait at another warp call")
        return not elsewhere
