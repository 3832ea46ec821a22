"""The schedule state: the function being scheduled, and the random variables naming its parts.

A block random variable (`BlockRV`) names a block by its name, which is unique in a function;
primitives that rename a block update every live BlockRV. A loop random variable (`LoopRV`)
holds the loop's variable, which stays the same object while the loop exists (a reorder or a
`parallel` keeps it; a split or fuse replaces the loop by new ones).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import close_names
from tirc.ir.expr import Var
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.stmt import Block, BlockRealize, For, Stmt
from tirc.passes.schedule.tree import (
    EmptyBodyError,
    Path,
    all_block_names,
    block_paths,
    loop_path,
    replace_at,
)


class ScheduleError(Exception):
    """A primitive that cannot apply; the message is the diagnostic's text."""


class BlockRV:
    """A block, by its (current) name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"BlockRV({self.name!r})"


@dataclass(frozen=True, eq=False)
class LoopRV:
    """A loop, by its loop variable."""

    var: Var

    @property
    def name(self) -> str:
        return self.var.name

    def __repr__(self) -> str:
        return f"LoopRV({self.var.name})"


class ScheduleState:
    """A PrimFunc under transformation, with lookups of blocks and loops.

    `seed` drives the sampling primitives; `decisions` records what each of them chose (in
    order), so a tuning record can replay them with `decision=`.
    """

    def __init__(self, func: PrimFunc, seed: int = 0,
                 intrinsics: dict[str, dict[str, PrimFunc]] | None = None) -> None:
        self.func = func
        self.rng = random.Random(seed)
        self.intrinsics = dict(intrinsics or {})
        self.decisions: list[Any] = []
        self.new_functions: dict[str, PrimFunc] = {}  # functions a primitive adds
        self.check_sparse_arrays = True  # sparse lowering checks axis arrays on entry
        self._block_rvs: list[BlockRV] = []

    # ---- the function ----------------------------------------------------------------

    @property
    def body(self) -> Stmt:
        return self.func.body

    @property
    def name(self) -> str:
        return self.func.name

    def set_body(self, body: Stmt) -> None:
        self.func = dataclasses.replace(self.func, body=body)

    @contextmanager
    def undo_on_error(self) -> Iterator[None]:
        """The function as it was when the body raises ScheduleError: a primitive that checks
        its result after replacing (a parallel loop re-checked where a move put a block)
        leaves nothing half done for a caller that goes on (the fuzzer, the tuner)."""
        before = self.func
        try:
            yield
        except ScheduleError:
            self.func = before
            raise

    def replace(self, path: Path, new: Stmt | None, prim: str) -> None:
        """Replace the last node of `path` by `new` (None removes it) in the function."""
        try:
            self.set_body(replace_at(path, new))
        except EmptyBodyError as e:
            where = f"block \"{e.block}\"" if e.block else f"function \"{self.name}\""
            raise ScheduleError(f"{prim}: this would leave {where} with an empty body") from None

    def is_param_buffer(self, buf: Buffer) -> bool:
        return any(b is buf for b in self.func.buffer_map.values())

    # ---- blocks ----------------------------------------------------------------------

    def block_rv(self, name: str) -> BlockRV:
        rv = BlockRV(name)
        self._block_rvs.append(rv)
        return rv

    def rename_block(self, old: str, new: str) -> None:
        for rv in self._block_rvs:
            if rv.name == old:
                rv.name = new

    def unique_block_name(self, base: str) -> str:
        names = all_block_names(self.body)
        name, k = base, 1
        while name in names:
            name = f"{base}_{k}"
            k += 1
        return name

    def lookup_block(self, name: str) -> Path:
        paths = block_paths(self.body, name)
        if not paths:
            known = sorted(all_block_names(self.body))
            close = close_names(name, known)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else \
                f" (its blocks: {', '.join(known) or 'none'})"
            raise ScheduleError(f"unknown block \"{name}\" in function \"{self.name}\"{hint}")
        if len(paths) > 1:
            raise ScheduleError(f"block name \"{name}\" is not unique in function "
                                f"\"{self.name}\"")
        return paths[0]

    def block_path(self, rv: Any, prim: str, what: str = "block") -> Path:
        """The path to the block `rv` names; a diagnostic when `rv` is not a live block."""
        if isinstance(rv, LoopRV):
            raise ScheduleError(f"{prim}: expected a block for {what}, got loop {rv.name}")
        if not isinstance(rv, BlockRV):
            raise ScheduleError(f"{prim}: expected a block for {what}, got {_describe(rv)}")
        paths = block_paths(self.body, rv.name)
        if not paths:
            raise ScheduleError(f"{prim}: block \"{rv.name}\" no longer exists in function "
                                f"\"{self.name}\" (an earlier primitive removed it)")
        if len(paths) > 1:
            raise ScheduleError(f"{prim}: block name \"{rv.name}\" is not unique")
        return paths[0]

    def block(self, rv: Any, prim: str) -> tuple[Path, BlockRealize, Block]:
        path = self.block_path(rv, prim)
        realize = path[-1]
        assert isinstance(realize, BlockRealize)
        return path, realize, realize.block

    # ---- loops -----------------------------------------------------------------------

    def loop_path(self, rv: Any, prim: str, what: str = "loop") -> Path:
        if isinstance(rv, BlockRV):
            raise ScheduleError(f"{prim}: expected a loop for {what}, got block \"{rv.name}\"")
        if not isinstance(rv, LoopRV):
            raise ScheduleError(f"{prim}: expected a loop for {what}, got {_describe(rv)}")
        path = loop_path(self.body, rv.var)
        if path is None:
            raise ScheduleError(f"{prim}: loop {rv.name} no longer exists in function "
                                f"\"{self.name}\" (an earlier primitive replaced it)")
        return path

    def loop(self, rv: Any, prim: str) -> tuple[Path, For]:
        path = self.loop_path(rv, prim)
        loop = path[-1]
        assert isinstance(loop, For)
        return path, loop


def _describe(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string \"{value}\""
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} values"
    return type(value).__name__
