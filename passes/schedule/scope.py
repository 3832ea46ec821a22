"""A block scope's top-level statements, its allocations, and buffer replacement.

A scope is a block (often the function's root block) or, when the function has no root block,
the function body itself. Its "kids" are the statements of its body in order; primitives that
add a stage (cache_read, cache_write, rfactor) insert a new kid, and new buffers are allocated
in the scope block (a root block is created when the function has none).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import BOOL
from tirc.ir.expr import IntImm
from tirc.ir.stmt import Block, BlockRealize, SeqStmt, Stmt, seq
from tirc.ir.visitor import post_order_visit, substitute
from tirc.passes.schedule.dependence import BlockSite, scope_path
from tirc.passes.schedule.state import ScheduleState
from tirc.passes.schedule.tree import Path


def _body_of(s: ScheduleState, sp: Path) -> Stmt:
    if sp:
        br = sp[-1]
        assert isinstance(br, BlockRealize)
        return br.block.body
    return s.body


def scope_kids(s: ScheduleState, path: Path) -> tuple[Path, list[Stmt]]:
    """The scope of the node at `path` and the statements of its body."""
    sp = scope_path(path)
    body = _body_of(s, sp)
    return sp, list(body.seq) if isinstance(body, SeqStmt) else [body]


def set_scope_kids(s: ScheduleState, sp: Path, kids: list[Stmt], prim: str) -> None:
    body = seq(*kids)
    if sp:
        br = sp[-1]
        assert isinstance(br, BlockRealize)
        s.replace(sp, dataclasses.replace(br, block=dataclasses.replace(br.block, body=body)),
                  prim)
    else:
        s.set_body(body)


def kid_index(kids: list[Stmt], site: BlockSite) -> int:
    """Which top-level statement of the scope holds `site`."""
    for k, kid in enumerate(kids):
        if any(x is kid for x in site.path):
            return k
    raise ValueError(f"block {site.name} is not in the scope")


def add_alloc(s: ScheduleState, block_name: str | None, buf: Buffer, prim: str) -> None:
    """Allocate `buf` in the scope block named `block_name` (None: the root block)."""
    if block_name is None:
        body = s.body
        if isinstance(body, BlockRealize) and body.block.name == "root":
            block_name = "root"
        else:
            root = Block("root", (), (), (), body, alloc_buffers=(buf,))
            s.set_body(BlockRealize((), IntImm(1, BOOL), root))
            return
    path = s.lookup_block(block_name)
    br = path[-1]
    assert isinstance(br, BlockRealize)
    allocs = br.block.alloc_buffers + (buf,)
    s.replace(path, dataclasses.replace(br, block=dataclasses.replace(br.block,
                                                                      alloc_buffers=allocs)),
              prim)


def scope_block_name(sp: Path) -> str | None:
    if not sp:
        return None
    br = sp[-1]
    assert isinstance(br, BlockRealize)
    return br.block.name


def buffer_names(s: ScheduleState) -> set[str]:
    names = {b.name for b in s.func.buffer_map.values()}

    def visit(n: Any) -> None:
        if isinstance(n, Block):
            names.update(b.name for b in n.alloc_buffers)
            names.update(m.buffer.name for m in n.match_buffers)

    post_order_visit(s.body, visit)
    return names


def unique_buffer_name(s: ScheduleState, base: str) -> str:
    names = buffer_names(s)
    name, k = base, 1
    while name in names:
        name = f"{base}_{k}"
        k += 1
    return name


def replace_buffer(s: ScheduleState, old: Buffer, new: Buffer) -> None:
    """Use `new` for `old` everywhere in the function (accesses, regions, allocations)."""
    s.set_body(substitute(s.body, {old: new}))
    if s.is_param_buffer(old):
        bmap = {p: (new if b is old else b) for p, b in s.func.buffer_map.items()}
        s.func = dataclasses.replace(s.func, buffer_map=bmap)
