"""Sampling primitives for search spaces: sample_perfect_tile and sample_categorical.

Both draw from the schedule's random generator (seeded by the `schedule.seed` pass config), so
a seed always gives the same schedule; `decision=` fixes the outcome instead, which is how a
tuning record replays what was measured. Every outcome is recorded in `state.decisions`.
"""

from __future__ import annotations

import math
from typing import Any

from tirc.ir.expr import IntImm
from tirc.passes.schedule.state import ScheduleError, ScheduleState


def _factorizations(extent: int, n: int, max_inner: int) -> list[tuple[int, ...]]:
    """Every ordered n-tuple of positive ints with product `extent`, innermost <= max_inner."""
    if n == 1:
        return [(extent,)] if extent <= max_inner else []
    out: list[tuple[int, ...]] = []
    for d in range(1, extent + 1):
        if extent % d == 0:
            out.extend((d,) + rest for rest in _factorizations(extent // d, n - 1, max_inner))
    return out


def sample_perfect_tile(s: ScheduleState, loop: Any, n: Any, max_innermost_factor: Any = 16,
                        decision: Any = None) -> list[int]:
    """`n` factors whose product is the loop's extent (the innermost at most
    `max_innermost_factor`), for `split`."""
    prim = "sample_perfect_tile"
    _, lp = s.loop(loop, prim)
    if not isinstance(lp.extent, IntImm):
        raise ScheduleError(f"{prim}: loop {lp.loop_var.name} has a symbolic extent")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ScheduleError(f"{prim}: n must be a positive integer, got {n!r}")
    if isinstance(max_innermost_factor, bool) or not isinstance(max_innermost_factor, int) \
            or max_innermost_factor < 1:
        raise ScheduleError(f"{prim}: max_innermost_factor must be a positive integer")
    extent = lp.extent.value
    if decision is not None:
        if not (isinstance(decision, (list, tuple)) and len(decision) == n
                and all(isinstance(d, int) and not isinstance(d, bool) and d > 0
                        for d in decision)):
            raise ScheduleError(f"{prim}: decision must be a list of {n} positive integers")
        if math.prod(decision) != extent:
            raise ScheduleError(f"{prim}: decision {list(decision)} does not multiply to the "
                                f"loop extent {extent}")
        chosen = list(decision)
    else:
        options = _factorizations(extent, n, max_innermost_factor)
        if not options:
            raise ScheduleError(f"{prim}: no {n} factors of {extent} have an innermost factor "
                                f"of at most {max_innermost_factor}")
        chosen = list(options[s.rng.randrange(len(options))])
    s.decisions.append((prim, chosen))
    return chosen


def sample_categorical(s: ScheduleState, candidates: Any, probs: Any,
                       decision: Any = None) -> Any:
    """One of `candidates`, drawn with probabilities `probs`; `decision` is an index."""
    prim = "sample_categorical"
    if not isinstance(candidates, (list, tuple)) or not candidates:
        raise ScheduleError(f"{prim}: candidates must be a non-empty list")
    if not isinstance(probs, (list, tuple)) or len(probs) != len(candidates):
        raise ScheduleError(f"{prim}: probs must list one probability per candidate "
                            f"({len(candidates)})")
    if any(isinstance(p, bool) or not isinstance(p, (int, float)) or p < 0 for p in probs) \
            or sum(probs) <= 0:
        raise ScheduleError(f"{prim}: probabilities must be non-negative with a positive sum")
    if decision is not None:
        if isinstance(decision, bool) or not isinstance(decision, int) or \
                not 0 <= decision < len(candidates):
            raise ScheduleError(f"{prim}: decision {decision!r} is not an index into the "
                                f"{len(candidates)} candidates")
        index = decision
    else:
        index = s.rng.choices(range(len(candidates)), weights=probs)[0]
    s.decisions.append((prim, index))
    return candidates[index]
