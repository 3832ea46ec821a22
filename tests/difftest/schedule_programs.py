"""Random user schedules on random loop functions: a seeded fuzzer of schedule primitives.

`random_schedule_case(seed)` takes the loop function of `random_loop_program(seed)` and runs
random primitives on it (split, fuse, reorder, parallel, vectorize, unroll, compute_at,
reverse_compute_at, compute_inline, reverse_compute_inline, cache_read, cache_write, set_scope,
storage_align, rfactor, decompose_reduction, blockize, add_unit_loop) through the runner that
`@S.schedule` bodies go through, choosing each argument from the function as it is at that
step; some steps combine them where checks have been weak: a compute_at or
reverse_compute_at with a parallel or vectorized loop above where the block goes, and a split
leaving a guarded tail (a unit factor too, bindings without unit loops) before
decompose_reduction, rfactor, blockize, a cache or a move. A primitive that refuses is left
out of the schedule (its refusal must be a ScheduleError: anything else is an internal error,
kept as a finding); those that apply make the `@S.schedule` the case carries, beside the
unscheduled function. A third of the schedules also take, at a random step and from a stream
of their own, a primitive the steps never draw: `dispatch` on a symbolic size, a split by
`sample_perfect_tile` factors, or `annotate` (and `unannotate`). Every accepted schedule must
keep the function's meaning: the harness compares the scheduled function, interpreted and
compiled, with the unscheduled one interpreted.
"""

from __future__ import annotations

import random
import traceback
from dataclasses import dataclass, field
from typing import Any

from tirc.ir import IntImm, IRModule, PrimFunc, Var, binop
from tirc.ir.dtype import dtype
from tirc.ir.schedule import SchedInstr, SchedLambda, SchedRef, Schedule
from tirc.ir.stmt import Block, BlockRealize
from tirc.passes.schedule.runner import READ_ONLY, execute
from tirc.passes.schedule.state import ScheduleError, ScheduleState
from tirc.passes.schedule.tree import all_block_names, walk

from difftest.harness import Program, loop_args
from difftest.loop_programs import random_loop_program

PRIMS = ("split", "split", "fuse", "reorder", "parallel", "vectorize", "unroll", "compute_at",
         "compute_at", "reverse_compute_at", "reverse_compute_at", "compute_inline",
         "reverse_compute_inline", "cache_read", "cache_write", "set_scope", "storage_align",
         "rfactor", "decompose_reduction", "blockize", "add_unit_loop", "parallel_move",
         "parallel_move", "parallel_move", "tail_split", "tail_split", "tail_split")
# After a split whose factor leaves a guarded tail (`tail_split`): what the block goes through.
AFTER_TAIL = ("decompose_reduction", "rfactor", "cache_read", "cache_write", "blockize",
              "compute_at", "reverse_compute_at")
SCOPES = ("global", "local", "shared")


@dataclass
class ScheduleCase:
    """A loop function, the schedule of what applied to it, and what the fuzzer saw."""

    program: Program
    schedule: Schedule
    tried: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    internal: list[str] = field(default_factory=list)

    def module(self) -> IRModule:
        """The unscheduled function with its schedule: what a user would compile."""
        return IRModule({**self.program.helpers, self.program.name: self.program.func},
                        schedules=(self.schedule,))

    @property
    def applied(self) -> int:
        """How many primitives (not lookups) the schedule applies."""
        return sum(ins.prim not in READ_ONLY for ins in self.schedule.instrs)

    def text(self) -> str:
        return self.module().script()


class _Fuzz:
    """The state of one random schedule being built."""

    def __init__(self, seed: int, func: PrimFunc) -> None:
        self.rng = random.Random(seed * 7927 + 3)
        self.state = ScheduleState(func, seed)
        self.env: dict[str, Any] = {}
        self.instrs: list[SchedInstr] = []
        self.names = 0
        self.refused: dict[str, int] = {}
        self.internal: list[str] = []
        self.tried = 0

    def fresh(self, base: str) -> str:
        self.names += 1
        return f"{base}{self.names}"

    def run(self, ins: SchedInstr) -> bool:
        """Run `ins` on the state; kept when it applies, else the state is put back."""
        before, env = self.state.func, dict(self.env)
        try:
            execute(self.state, self.env, ins)
        except ScheduleError as e:
            self.state.func, self.env = before, env
            reason = str(e).split(":")[0] if ":" in str(e) else str(e)[:40]
            self.refused[reason] = self.refused.get(reason, 0) + 1
            return False
        except Exception:  # noqa: BLE001 (an internal error: a finding)
            self.state.func, self.env = before, env
            self.internal.append(f"{ins.prim}: {traceback.format_exc(limit=-3)}")
            return False
        self.instrs.append(ins)
        return True

    def blocks(self) -> list[str]:
        return sorted(n for n in all_block_names(self.state.body) if n != "root")

    def block(self, other_than: str | None = None) -> str | None:
        """A fresh name bound to a random block (`bN = sch.get_block("...")`), one other than
        the block `other_than` names when given."""
        names = self.blocks()
        if other_than is not None:
            names = [n for n in names if n != self.env[other_than].name]
        if not names:
            return None
        out = self.fresh("b")
        self.run(SchedInstr((out,), "get_block", (self.rng.choice(names),)))
        return out

    def loops(self, block: str) -> list[str]:
        """Fresh names bound to the loops above `block` (`l1, l2 = sch.get_loops(b)`)."""
        from tirc.passes.schedule.lookup import get_loops

        try:
            count = len(get_loops(self.state, self.env[block]))
        except ScheduleError:
            return []
        if not count:
            return []
        outs = tuple(self.fresh("l") for _ in range(count))
        if not self.run(SchedInstr(outs, "get_loops", (SchedRef(block),), unpack=True)):
            return []
        return list(outs)

    def loop(self, other_than: str | None = None) -> str | None:
        """A random loop above a random block (other than `other_than`)."""
        b = self.block(other_than)
        ls = self.loops(b) if b else []
        return self.rng.choice(ls) if ls else None

    def reduction(self) -> str | None:
        """A fresh name bound to a block with an init (a reduction), else to any block."""
        names = sorted(p[-1].block.name for p in walk(self.state.body)
                       if isinstance(p[-1], BlockRealize) and p[-1].block.init is not None)
        if not names:
            return self.block()
        out = self.fresh("b")
        self.run(SchedInstr((out,), "get_block", (self.rng.choice(names),)))
        return out

    def movable(self, producer: bool) -> str | None:
        """A fresh name bound to a block with a consumer whose outputs are intermediate
        buffers (`producer`: one compute_at may move), else to a block with a producer."""
        found = [p[-1].block for p in walk(self.state.body) if isinstance(p[-1], BlockRealize)
                 and p[-1].block.name != "root"]
        params = set(self.state.func.buffer_map.values())
        names = []
        for b in found:
            mine = {r.buffer for r in (b.writes if producer else b.reads)}
            if producer and mine & params:
                continue
            if any(o is not b and mine & {r.buffer for r in (o.reads if producer else o.writes)}
                   for o in found):
                names.append(b.name)
        if not names:
            return None
        out = self.fresh("b")
        self.run(SchedInstr((out,), "get_block", (self.rng.choice(sorted(names)),)))
        return out

    def partner_loop(self, block: str, consumer: bool) -> str | None:
        """Mostly a loop above a consumer (or producer) of `block`, else any other's loop."""
        found = {p[-1].block.name: p[-1].block for p in walk(self.state.body)
                 if isinstance(p[-1], BlockRealize)}
        me = found.get(self.env[block].name)
        if me is None or self.rng.random() < 0.2:
            return self.loop(block)
        mine = {r.buffer for r in me.writes} if consumer else {r.buffer for r in me.reads}
        partners = sorted(n for n, b in found.items() if b is not me and mine & {
            r.buffer for r in (b.reads if consumer else b.writes)})
        if not partners:
            return self.loop(block)
        out = self.fresh("b")
        self.run(SchedInstr((out,), "get_block", (self.rng.choice(partners),)))
        ls = self.loops(out)
        return self.rng.choice(ls) if ls else None

    def split_kwargs(self) -> dict[str, Any]:
        """Mostly none; sometimes bindings without unit loops (TVM's preserve_unit_iters)."""
        return {"preserve_unit_iters": False} if self.rng.random() < 0.25 else {}

    def parallel_move(self) -> None:
        """compute_at or reverse_compute_at together with a parallel (or vectorized) loop
        above the place the block goes: made parallel before the move or after it."""
        r = self.rng
        prim = r.choice(("compute_at", "reverse_compute_at"))
        b = self.movable(prim == "compute_at")
        lp = self.partner_loop(b, prim == "compute_at") if b else None
        if not (b and lp):
            return
        kind = "parallel" if r.random() < 0.8 else "vectorize"
        before = r.random() < 0.5
        if before:
            self.run(SchedInstr((), kind, (SchedRef(lp),)))
        if not self.run(SchedInstr((), prim, (SchedRef(b), SchedRef(lp)))) or before:
            return
        ls = self.loops(b)
        if ls:
            self.run(SchedInstr((), kind, (SchedRef(r.choice(ls[:max(1, len(ls) - 1)])),)))

    def tail_split(self) -> None:
        """A split whose factor does not divide the loop (a guarded tail), perhaps with a
        unit factor, then a primitive that takes the block, or its init, out of loops."""
        r = self.rng
        then = r.choice(AFTER_TAIL)
        b = self.reduction() if then in ("decompose_reduction", "rfactor") else self.block()
        ls = self.loops(b) if b else []
        if not ls:
            return
        lp = r.choice(ls)
        factors: list[Any] = [None, r.choice((3, 5, 6, 7))]
        if r.random() < 0.4:
            factors.insert(r.randrange(3), 1)
        outs = tuple(self.fresh("l") for _ in factors)
        if not self.run(SchedInstr(outs, "split", (SchedRef(lp),), {"factors": factors,
                                                                      **self.split_kwargs()},
                                   unpack=True)):
            return
        ls = self.loops(b)
        if then == "decompose_reduction" and ls:
            self.run(SchedInstr((self.fresh("b"),), then, (SchedRef(b), SchedRef(r.choice(ls)))))
        elif then in ("rfactor", "blockize") and ls:
            args: tuple[Any, ...] = (SchedRef(r.choice(ls)),)
            self.run(SchedInstr((self.fresh("b"),), then,
                                args + ((r.randint(0, 1),) if then == "rfactor" else ())))
        elif then in ("cache_read", "cache_write"):
            self.run(SchedInstr((self.fresh("b"),), then,
                                (SchedRef(b), r.randint(0, 2), r.choice(SCOPES))))
        elif then in ("compute_at", "reverse_compute_at"):
            other = self.block(b)
            if other and ls:
                self.run(SchedInstr((), then, (SchedRef(other), SchedRef(r.choice(ls)))))

    def layout(self, r: random.Random) -> None:
        """transform_layout of an intermediate buffer through a random index map, drawn from
        `r`: a transpose, a dimension split by a factor (padded with `pad_value` where it does
        not divide), two dimensions fused into one, or a dimension reversed."""
        params = set(self.state.func.buffer_map.values())
        found = sorted(((p[-1].block.name, kind, k, reg.buffer)
                        for p in walk(self.state.body) if isinstance(p[-1], BlockRealize)
                        for kind, regs in (("write", p[-1].block.writes),
                                           ("read", p[-1].block.reads))
                        for k, reg in enumerate(regs) if reg.buffer not in params),
                       key=lambda x: x[:3])
        if not found:
            return
        name, kind, k, buf = r.choice(found)
        i32 = dtype("int32")  # as the parser reads a lambda (the primitive retypes it)
        idx = [Var(v, i32) for v, _ in zip("ijkl", buf.shape)]
        if not idx:
            return
        form = r.choice(("transpose", "split", "fuse", "reverse"))
        at = r.randrange(len(idx))
        kwargs: dict[str, Any] = {}
        outs = list(idx)
        if form == "transpose" and len(idx) >= 2:
            outs = outs[1:] + outs[:1]
        elif form == "fuse" and len(idx) >= 2 and isinstance(buf.shape[1], IntImm):
            width = IntImm(buf.shape[1].value, i32)
            outs = [binop("add", binop("mul", idx[0], width), idx[1]), *idx[2:]]
        elif form == "reverse" and isinstance(buf.shape[at], IntImm):
            outs[at] = binop("sub", IntImm(buf.shape[at].value - 1, i32), idx[at])
        else:
            f = IntImm(r.choice((2, 3, 4)), i32)
            outs[at:at + 1] = [binop("floordiv", idx[at], f), binop("floormod", idx[at], f)]
            if r.random() < 0.7:
                kwargs["pad_value"] = 0
        b = self.fresh("b")
        self.run(SchedInstr((b,), "get_block", (name,)))
        self.run(SchedInstr((), "transform_layout",
                            (SchedRef(b), (kind, k), SchedLambda(tuple(idx), tuple(outs))),
                            kwargs))

    def unseen(self, r: random.Random, sizes: dict[str, int]) -> None:
        """One of the primitives the steps never draw, its choices from `r` (a stream of its
        own): `dispatch` on a size (its run-time value, so the special variant runs, or
        another), a split by `sample_perfect_tile` factors (the decision pinned, as a tuning
        record replays it), or `annotate` of a loop or block, perhaps `unannotate`d again."""
        main, self.rng = self.rng, r
        try:
            form = r.choice(("dispatch", "dispatch", "sampled_split", "sampled_split", "annotate"))
            if form == "dispatch" and sizes:
                name = r.choice(sorted(sizes))
                value = sizes[name] if r.random() < 0.6 else r.choice((1, 2, sizes[name] + 1))
                self.run(SchedInstr((), "dispatch", (name, value)))
            elif form == "annotate":
                self.annotate(r)
            else:
                self.sampled_split(r)
        finally:
            self.rng = main

    def sampled_split(self, r: random.Random) -> None:
        """`v.. = sch.sample_perfect_tile(l, n=k, decision=[...])` then `sch.split(l,
        factors=[v..])` of a loop with a constant extent."""
        from tirc.passes.schedule.sampling import _factorizations

        b = self.block()
        ls = self.loops(b) if b else []
        if not ls:
            return
        lp = r.choice(ls)
        extent = self.state.loop(self.env[lp], "sample_perfect_tile")[1].extent
        if not isinstance(extent, IntImm):
            return
        n, most = r.choice((2, 2, 3)), r.choice((4, 16, 64))
        options = _factorizations(extent.value, n, most)
        if not options:
            return
        vs = tuple(self.fresh("v") for _ in range(n))
        if self.run(SchedInstr(vs, "sample_perfect_tile", (SchedRef(lp),),
                               {"n": n, "max_innermost_factor": most,
                                "decision": list(r.choice(options))}, unpack=True)):
            self.run(SchedInstr(tuple(self.fresh("l") for _ in vs), "split", (SchedRef(lp),),
                                {"factors": [SchedRef(v) for v in vs]}, unpack=True))

    def annotate(self, r: random.Random) -> None:
        """`sch.annotate` of a loop (`pragma_unroll`, which the backend honours, or a key it
        ignores) or of a block, then now and then `sch.unannotate` of the same key."""
        b = self.block()
        if not b:
            return
        ls = self.loops(b)
        target = r.choice(ls) if ls and r.random() < 0.7 else b
        key, value = r.choice((("pragma_unroll", True), ("pragma_unroll", 1),
                               ("tirc.fuzz", "x"), ("tirc.fuzz", [1, 2])))
        if self.run(SchedInstr((), "annotate", (SchedRef(target), key, value))) and \
                r.random() < 0.3:
            self.run(SchedInstr((), "unannotate", (SchedRef(target), key)))

    def step(self) -> None:
        prim = self.rng.choice(PRIMS)
        self.tried += 1
        r = self.rng
        if prim == "parallel_move":
            self.parallel_move()
            return
        if prim == "tail_split":
            self.tail_split()
            return
        if prim in ("split", "fuse", "reorder", "parallel", "vectorize", "unroll", "rfactor",
                    "blockize", "add_unit_loop"):
            b = self.block()
            ls = self.loops(b) if b else []
            if not ls:
                return
            lp = r.choice(ls)
            if prim == "split":
                n = r.choice((2, 2, 3))
                factors: list[Any] = [r.choice((2, 3, 4, 8)) for _ in range(n)]
                factors[r.randrange(n)] = None
                outs = tuple(self.fresh("l") for _ in range(n))
                self.run(SchedInstr(outs, "split", (SchedRef(lp),),
                                    {"factors": factors, **self.split_kwargs()}, unpack=True))
            elif prim in ("fuse", "reorder"):
                k = r.randint(2, min(3, len(ls))) if len(ls) >= 2 else 1
                if prim == "fuse":
                    start = r.randrange(len(ls) - k + 1)
                    picked = ls[start:start + k]
                    self.run(SchedInstr((self.fresh("l"),), "fuse",
                                        tuple(SchedRef(x) for x in picked)))
                else:
                    picked = r.sample(ls, k)
                    self.run(SchedInstr((), "reorder", tuple(SchedRef(x) for x in picked)))
            elif prim == "rfactor":
                self.run(SchedInstr((self.fresh("b"),), "rfactor",
                                    (SchedRef(lp), r.randint(0, 1))))
            elif prim in ("blockize", "add_unit_loop"):
                self.run(SchedInstr((self.fresh("b" if prim == "blockize" else "l"),), prim,
                                    (SchedRef(lp),)))
            else:
                self.run(SchedInstr((), prim, (SchedRef(lp),)))
        elif prim in ("compute_at", "reverse_compute_at"):
            b = self.block()
            lp = self.partner_loop(b, prim == "compute_at") if b else None
            if b and lp:
                kwargs = {"preserve_unit_loops": True} if r.random() < 0.3 else {}
                self.run(SchedInstr((), prim, (SchedRef(b), SchedRef(lp)), kwargs))
        elif prim in ("compute_inline", "reverse_compute_inline"):
            b = self.block()
            if b:
                self.run(SchedInstr((), prim, (SchedRef(b),)))
        elif prim in ("cache_read", "cache_write"):
            b = self.block()
            if b:
                self.run(SchedInstr((self.fresh("b"),), prim,
                                    (SchedRef(b), r.randint(0, 2), r.choice(SCOPES))))
        elif prim == "set_scope":
            b = self.block()
            if b:
                self.run(SchedInstr((), prim, (SchedRef(b), 0, r.choice(SCOPES))))
        elif prim == "storage_align":
            b = self.block()
            if b:
                self.run(SchedInstr((), prim, (SchedRef(b), 0, r.randint(0, 1),
                                               r.choice((4, 8, 16)), r.randint(0, 3))))
        elif prim == "decompose_reduction":
            b = self.block()
            ls = self.loops(b) if b else []
            if ls:
                self.run(SchedInstr((self.fresh("b"),), prim,
                                    (SchedRef(b), SchedRef(r.choice(ls)))))


def _has_blocks(func: PrimFunc) -> bool:
    return any(isinstance(p[-1], BlockRealize) and isinstance(p[-1].block, Block)
               for p in walk(func.body))


def _refs(value: Any) -> set[str]:
    if isinstance(value, SchedRef):
        return {value.name}
    if isinstance(value, (list, tuple)):
        return set().union(*(_refs(v) for v in value)) if value else set()
    return set()


def _used_lookups(instrs: list[SchedInstr]) -> tuple[SchedInstr, ...]:
    """The instructions without the lookups whose names nothing later uses (a readable
    reproducer; lookups change nothing)."""
    used: set[str] = set()
    kept: list[SchedInstr] = []
    for ins in reversed(instrs):
        if ins.prim in READ_ONLY and not used & set(ins.outputs):
            continue
        kept.append(ins)
        used |= _refs(list(ins.args)) | _refs(list(ins.kwargs.values()))
    return tuple(reversed(kept))


def random_schedule_case(seed: int, steps: int | None = None) -> ScheduleCase:
    """The loop function of `seed` with a random schedule of up to `steps` primitives (drawn
    from the seed when not given) that all apply."""
    prog = random_loop_program(seed)
    fuzz = _Fuzz(seed, prog.func)
    if _has_blocks(prog.func):
        count = steps if steps is not None else fuzz.rng.randint(1, 10)
        # a third of the schedules also take a primitive the steps never draw, at a random
        # step, from a stream of its own (the other seeds give the schedules they gave)
        unseen = random.Random(seed * 7949 + 7)
        at = unseen.randint(0, count) if unseen.random() < 0.35 else -1
        for k in range(count + 1):
            if k == at:
                fuzz.unseen(unseen, prog.sizes)
            if k < count:
                fuzz.step()
        # three schedules in ten end with a transform_layout, from a stream of its own (the
        # steps before it are those the seed always gave)
        layouts = random.Random(seed * 7933 + 5)
        if layouts.random() < 0.3:
            fuzz.layout(layouts)
    sched = Schedule(prog.func.name, "llvm", "_", "sch", _used_lookups(fuzz.instrs))
    program = Program(seed, prog.func.name, prog.func, loop_args(prog.func, prog.sizes),
                      prog.outputs, sched, helpers=prog.helpers)
    return ScheduleCase(program, sched, fuzz.tried, fuzz.refused, fuzz.internal)


def scheduled(case: ScheduleCase) -> PrimFunc:
    """The function of `case` transformed by its schedule (as `apply-schedules` does)."""
    from tirc.passes.schedule.apply import ApplySchedules

    return ApplySchedules()(case.module())[case.program.name]
