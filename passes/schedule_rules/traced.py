"""A schedule that records itself: every primitive a rule calls, as the `@S.schedule` text.

`TracedSchedule` runs the schedule primitives (passes/schedule) on a function, exactly as a
user's `@S.schedule` does through the runner, and keeps each call as a `SchedInstr` whose
arguments name the earlier results (`i_0, i_1 = sch.split(i, factors=[None, 8])`). The trace
prints as a schedule a user can paste into the source and edit, and running that text gives
the same function.

Every choice a rule makes is a named decision: `sample_tile` and `sample_choice` call the
sampling primitives with the rule's default as `decision=`, or with the value a caller gives
for that name (a tuner's candidate, a tuning record), so the printed schedule shows and fixes
each one. `attempt` runs a primitive that may refuse (its checks keep the function correct)
and, when it does, leaves the function and the trace as they were.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any

from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.loop_jumps import contains_loop_jump
from tirc.ir.schedule import SchedInstr, SchedLambda, SchedRef, Schedule
from tirc.passes.schedule.primitives import PRIMITIVES
from tirc.passes.schedule.runner import READ_ONLY
from tirc.passes.schedule.state import BlockRV, LoopRV, ScheduleError, ScheduleState

RESERVED = ("T", "S", "R", "I")  # the namespaces of a .tir file


class Sampled(int):
    """An integer a sampling primitive chose; it prints as the decision's name."""

    name: str

    def __new__(cls, value: int, name: str) -> Sampled:
        obj = super().__new__(cls, value)
        obj.name = name
        return obj


class SampledTile(list):
    """The factors sample_perfect_tile chose; they print as the decision's name."""

    def __init__(self, values: list[int], name: str) -> None:
        super().__init__(values)
        self.name = name


@dataclass
class Decision:
    """One named choice of a rule: the sampling primitive, what it chose among, the rule's
    default and the value used (an index into `candidates` for sample_categorical, the
    factors for sample_perfect_tile)."""

    name: str
    prim: str
    default: Any
    value: Any
    candidates: tuple[Any, ...] = ()
    extent: int | None = None  # sample_perfect_tile: the loop's extent
    n: int | None = None  # sample_perfect_tile: how many factors

    def describe(self) -> str:
        """`name = value (default ...)` for listings."""
        if self.prim == "sample_categorical":
            return (f"{self.name} = {self.candidates[self.value]} of "
                    f"{list(self.candidates)} (default {self.candidates[self.default]})")
        return f"{self.name} = {list(self.value)} (default {list(self.default)})"


class DecisionError(ScheduleError):
    """An overridden decision that does not fit (a tuner's candidate to reject)."""


@dataclass
class _Snapshot:
    func: PrimFunc
    n_instrs: int
    names: dict[int, str]
    used: set[str]
    block_names: list[tuple[BlockRV, str]]
    blocks: dict[str, BlockRV]
    decisions: dict[str, Decision]


@dataclass
class TracedSchedule:
    """A ScheduleState whose primitive calls are recorded (see the module docstring)."""

    func: PrimFunc
    overrides: Mapping[str, Any] = field(default_factory=dict)
    param: str = "sch"

    def __post_init__(self) -> None:
        self.state = ScheduleState(self.func)
        self.instrs: list[SchedInstr] = []
        self.decisions: dict[str, Decision] = {}
        self._names: dict[int, str] = {}
        self._keep: list[Any] = []  # results whose ids name them
        self._used: set[str] = {self.param, *RESERVED}
        self._blocks: dict[str, BlockRV] = {}
        # blocks earlier rules scheduled: a later rule leaves them where they are
        self.scheduled: set[str] = set()
        # The function was found free of loop jumps, and no primitive since could add one.
        self._jump_free = False

    # ---- the function and its blocks ---------------------------------------------------

    @property
    def current(self) -> PrimFunc:
        """The function as scheduled so far."""
        return self.state.func

    def block(self, name: str) -> BlockRV:
        """The block called `name` (one `get_block` per block in the trace)."""
        rv = self._blocks.get(name)
        if rv is not None and rv.name == name:
            return rv
        base = _ident(name, "b")
        rv = self.call("get_block", name, out=[base if base not in RESERVED else f"{base}_block"])
        self._blocks[name] = rv
        return rv

    def loops(self, block: BlockRV) -> list[LoopRV]:
        """`get_loops(block)`, each loop named after its variable; loops the trace has named
        already keep their names, and when all have, no instruction is recorded."""
        loops = PRIMITIVES["get_loops"](self.state, block)
        if not loops:
            return []
        known = {rv.var: rv for rv in self._keep
                 if isinstance(rv, LoopRV) and id(rv) in self._names}
        if all(lp.var in known for lp in loops):
            return [known[lp.var] for lp in loops]
        outputs = []
        for lp in loops:
            if lp.var in known:
                outputs.append(self._names[id(known[lp.var])])
                self._names[id(lp)] = outputs[-1]
                self._keep.append(lp)
            else:
                outputs.append(self._name(lp, lp.name))
        self.instrs.append(SchedInstr(tuple(outputs), "get_loops", (self._arg(block),), {},
                                      True))
        return loops

    # ---- recording ---------------------------------------------------------------------

    def call(self, prim: str, *args: Any, out: list[str] | None = None, unpack: bool = False,
             **kwargs: Any) -> Any:
        """Run primitive `prim` and record it; `out` names its results (made unique)."""
        fn = PRIMITIVES[prim]
        if prim not in READ_ONLY and not self._jump_free:
            if contains_loop_jump(self.state.body):
                raise ScheduleError(f"{prim}: function \"{self.state.name}\" breaks or "
                                    "continues a loop; schedule primitives do not transform it")
            # Primitives move, copy and rewrite what is there: only tensorize brings in a
            # body from elsewhere (the intrinsic's), after which the next call looks again.
            self._jump_free = True
        result = fn(self.state, *[_plain(a) for a in args],
                    **{k: _plain(v) for k, v in kwargs.items()})
        if prim == "tensorize":
            self._jump_free = False
        outputs: tuple[str, ...] = ()
        if out:
            values = list(result) if unpack else [result]
            outputs = tuple(self._name(v, base) for v, base in zip(values, out))
            for v in values:
                if isinstance(v, BlockRV):
                    self._blocks[v.name] = v  # later lookups of the block reuse this name
        self.instrs.append(SchedInstr(outputs, prim, tuple(self._arg(a) for a in args),
                                      {k: self._arg(v) for k, v in kwargs.items()}, unpack))
        return result

    def _name(self, value: Any, base: str) -> str:
        name = _ident(base, "v")
        k = 1
        while name in self._used:
            name = f"{_ident(base, 'v')}_{k}"
            k += 1
        self._used.add(name)
        self._names[id(value)] = name
        self._keep.append(value)
        return name

    def _arg(self, a: Any) -> Any:
        if isinstance(a, (Sampled, SampledTile)):
            return SchedRef(a.name)
        if isinstance(a, (LoopRV, BlockRV)):
            name = self._names.get(id(a))
            if name is None:
                raise ScheduleError(f"internal: {a!r} was not made by this schedule")
            return SchedRef(name)
        if isinstance(a, list):
            return [self._arg(x) for x in a]
        if isinstance(a, tuple):
            return tuple(self._arg(x) for x in a)
        return a

    # ---- the primitives rules use ------------------------------------------------------

    def split(self, loop: LoopRV, factors: list[Any]) -> list[LoopRV]:
        return self.call("split", loop, factors=factors,
                         out=[f"{loop.name}_{k}" for k in range(len(factors))], unpack=True)

    def fuse(self, *loops: LoopRV) -> LoopRV:
        if len(loops) == 1:
            return loops[0]
        return self.call("fuse", *loops, out=["_".join(lp.name for lp in loops) + "_fused"])

    def reorder(self, *loops: LoopRV) -> None:
        self.call("reorder", *loops)

    def parallel(self, loop: LoopRV) -> None:
        self.call("parallel", loop)

    def vectorize(self, loop: LoopRV) -> None:
        self.call("vectorize", loop)

    def unroll(self, loop: LoopRV) -> None:
        self.call("unroll", loop)

    def bind(self, loop: LoopRV, axis: str) -> None:
        self.call("bind", loop, axis)

    def compute_inline(self, block: BlockRV) -> None:
        self.call("compute_inline", block)

    def compute_at(self, block: BlockRV, loop: LoopRV, index: int = -1) -> None:
        if index == -1:
            self.call("compute_at", block, loop)
        else:
            self.call("compute_at", block, loop, index=index)

    def reverse_compute_at(self, block: BlockRV, loop: LoopRV) -> None:
        self.call("reverse_compute_at", block, loop)

    def cache_read(self, block: BlockRV, index: int, scope: str) -> BlockRV:
        return self.call("cache_read", block, index, scope, out=[f"{block.name}_read{index}"])

    def cache_write(self, block: BlockRV, index: int, scope: str) -> BlockRV:
        return self.call("cache_write", block, index, scope, out=[f"{block.name}_{scope}"])

    def decompose_reduction(self, block: BlockRV, loop: LoopRV) -> BlockRV:
        return self.call("decompose_reduction", block, loop, out=[f"{block.name}_init"])

    def rfactor(self, loop: LoopRV, factor_axis: int) -> BlockRV:
        return self.call("rfactor", loop, factor_axis=factor_axis, out=["rf"])

    def transform_layout(self, block: BlockRV, buffer: tuple[str, int],
                         index_map: SchedLambda) -> None:
        self.call("transform_layout", block, buffer, index_map)

    def set_scope(self, block: BlockRV, index: int, scope: str) -> None:
        self.call("set_scope", block, index, scope)

    def dispatch(self, var: str, value: int) -> None:
        self.call("dispatch", var, value)

    # ---- decisions ---------------------------------------------------------------------

    def sample_tile(self, name: str, loop: LoopRV, n: int, max_inner: int,
                    default: list[int]) -> SampledTile:
        """Factors of `loop`'s (constant) extent: the override for `name`, else `default`."""
        name = self._decision_name(name)
        value = self.overrides.get(name, default)
        try:
            chosen = self.call("sample_perfect_tile", loop, n=n, max_innermost_factor=max_inner,
                               decision=list(value), out=[name])
        except ScheduleError as e:
            if name in self.overrides:
                raise DecisionError(f"decision {name}: {e}") from None
            raise
        extent = int(_extent_of(self.state, loop))
        self.decisions[name] = Decision(name, "sample_perfect_tile", list(default),
                                        list(chosen), extent=extent, n=n)
        return SampledTile(list(chosen), name)

    def sample_choice(self, name: str, candidates: list[Any], default: Any) -> Any:
        """One of `candidates`: the override for `name` (an index), else `default` (a
        candidate). Integers come back as `Sampled`, so that they print by name."""
        name = self._decision_name(name)
        index = candidates.index(default)
        chosen = self.overrides.get(name, index)
        if isinstance(chosen, bool) or not isinstance(chosen, int) or \
                not 0 <= chosen < len(candidates):
            raise DecisionError(f"decision {name}: {chosen!r} is not an index into "
                                f"{candidates}")
        probs = [1] * len(candidates)
        value = self.call("sample_categorical", candidates=list(candidates), probs=probs,
                          decision=chosen, out=[name])
        self.decisions[name] = Decision(name, "sample_categorical", index, chosen,
                                        candidates=tuple(candidates))
        if isinstance(value, int) and not isinstance(value, bool):
            return Sampled(value, name)
        return value

    def _decision_name(self, name: str) -> str:
        name = _ident(name, "d")
        if name in self.decisions or name in self._used:
            k = 1
            while f"{name}_{k}" in self.decisions or f"{name}_{k}" in self._used:
                k += 1
            name = f"{name}_{k}"
        return name

    # ---- trying -------------------------------------------------------------------------

    def snapshot(self) -> _Snapshot:
        return _Snapshot(self.state.func, len(self.instrs), dict(self._names), set(self._used),
                         [(rv, rv.name) for rv in self.state._block_rvs], dict(self._blocks),
                         dict(self.decisions))

    def restore(self, snap: _Snapshot) -> None:
        """Back to `snap`: the function, the trace and every name as they were."""
        self.state.func = snap.func
        del self.instrs[snap.n_instrs:]
        self._names = snap.names
        self._used = snap.used
        for rv, name in snap.block_names:
            rv.name = name
        self._blocks = snap.blocks
        self.decisions = snap.decisions

    def attempt(self, method: str | Callable[..., Any], *args: Any,
                **kwargs: Any) -> tuple[bool, Any]:
        """(True, `getattr(self, method)(...)`, or `method(...)` for a function of several
        steps), or (False, None) with nothing changed when a primitive refuses."""
        snap = self.snapshot()
        fn = getattr(self, method) if isinstance(method, str) else method
        try:
            return True, fn(*args, **kwargs)
        except DecisionError:
            raise
        except ScheduleError:
            self.restore(snap)
            return False, None

    def schedule(self, name: str, target: str | None) -> Schedule:
        """The trace as an `@S.schedule` for this function."""
        return Schedule(self.func.name, target, name, self.param, tuple(self.instrs))


def _extent_of(state: ScheduleState, loop: LoopRV) -> int:
    _, lp = state.loop(loop, "sample_perfect_tile")
    return lp.extent.value  # type: ignore[attr-defined]


def _plain(a: Any) -> Any:
    """Arguments as the primitives take them (decisions as plain values)."""
    if isinstance(a, Sampled):
        return int(a)
    if isinstance(a, SampledTile):
        return list(a)
    if isinstance(a, list):
        return [_plain(x) for x in a]
    if isinstance(a, tuple):
        return tuple(_plain(x) for x in a)
    return a


_NOT_WORD = re.compile(r"\W")


def _ident(text: str, prefix: str) -> str:
    """`text` made a Python identifier (a prefix when it starts badly or is a keyword)."""
    name = _NOT_WORD.sub("_", text) or prefix
    if name[0].isdigit() or keyword.iskeyword(name):
        name = f"{prefix}_{name}"
    return name
