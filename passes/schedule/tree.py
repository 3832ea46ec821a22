"""Statement trees as paths: find a node, rebuild its ancestors after a change, copy subtrees.

A path is the tuple of statements from the function body down to a node, inclusive. IR nodes
are immutable, so a primitive changes a node by rebuilding every ancestor on its path
(`replace_at`). A block's body is its realize's child (the `Block` itself is never on a path).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.expr import Let, Var
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    For,
    IfThenElse,
    IterVar,
    LetStmt,
    SeqStmt,
    Stmt,
    While,
    seq,
)
from tirc.ir.visitor import Mutator, post_order_visit, substitute

Path = tuple[Stmt, ...]

_SINGLE_BODY = (For, LetStmt, AttrStmt, Allocate, While, AssertStmt)


class EmptyBodyError(Exception):
    """Removing a statement would leave a block (or the function) with nothing in it."""

    def __init__(self, block: str | None) -> None:
        super().__init__(block)
        self.block = block


def children(s: Stmt) -> tuple[Stmt, ...]:
    """The statements directly under `s` (a block's init is not walked)."""
    if isinstance(s, SeqStmt):
        return s.seq
    if isinstance(s, BlockRealize):
        return (s.block.body,)
    if isinstance(s, _SINGLE_BODY):
        return (s.body,)
    if isinstance(s, IfThenElse):
        return (s.then_case,) if s.else_case is None else (s.then_case, s.else_case)
    return ()


def walk(root: Stmt, prefix: Path = ()) -> Iterator[Path]:
    """Every statement under `root` (pre-order), each as its path from the root."""
    path = prefix + (root,)
    yield path
    for child in children(root):
        yield from walk(child, path)


def find_all(root: Stmt, pred: Callable[[Stmt], bool]) -> list[Path]:
    return [p for p in walk(root) if pred(p[-1])]


def block_paths(root: Stmt, name: str) -> list[Path]:
    """Paths of the block realizes whose block is called `name`."""
    return find_all(root, lambda s: isinstance(s, BlockRealize) and s.block.name == name)


def loop_path(root: Stmt, var: Var) -> Path | None:
    found = find_all(root, lambda s: isinstance(s, For) and s.loop_var is var)
    return found[0] if found else None


def scope_index(path: Path) -> int:
    """Index in `path` of the nearest block realize strictly above the last node, or -1."""
    for k in range(len(path) - 2, -1, -1):
        if isinstance(path[k], BlockRealize):
            return k
    return -1


def loops_in_scope(path: Path) -> list[For]:
    """The loops between the node's scope block (or the function body) and the node."""
    start = scope_index(path) + 1
    return [s for s in path[start:-1] if isinstance(s, For)]


def _replace_child(parent: Stmt, old: Stmt, new: Stmt | None) -> Stmt | None:
    if isinstance(parent, SeqStmt):
        items: list[Stmt] = []
        done = False
        for s in parent.seq:
            if s is old and not done:
                done = True
                if new is not None:
                    items.append(new)
            else:
                items.append(s)
        if not items:
            return None
        return seq(*items)
    if isinstance(parent, BlockRealize):
        if new is None:
            raise EmptyBodyError(parent.block.name)
        return dataclasses.replace(parent, block=dataclasses.replace(parent.block, body=new))
    if isinstance(parent, IfThenElse):
        if parent.then_case is old:
            if new is None:
                if parent.else_case is None:
                    return None
                return dataclasses.replace(parent, then_case=SeqStmt(()))
            return dataclasses.replace(parent, then_case=new)
        return dataclasses.replace(parent, else_case=new)
    if new is None:
        return None
    return dataclasses.replace(parent, body=new)  # type: ignore[call-arg]


def replace_at(path: Path, new: Stmt | None) -> Stmt:
    """The root rebuilt with the last node of `path` replaced by `new` (None removes it,
    and any loop left empty by the removal)."""
    cur: Stmt | None = new
    for depth in range(len(path) - 2, -1, -1):
        cur = _replace_child(path[depth], path[depth + 1], cur)
    if cur is None:
        raise EmptyBodyError(None)
    return cur


def insert_before(path: Path, new: Stmt) -> Stmt:
    """The root with `new` placed just before the last node of `path`."""
    return replace_at(path, seq(new, path[-1]))


def insert_after(path: Path, new: Stmt) -> Stmt:
    return replace_at(path, seq(path[-1], new))


def defined_vars_and_buffers(s: Any) -> tuple[list[Var], list[Buffer]]:
    """Variables and buffers that `s` defines (loop vars, iter vars, lets, allocations)."""
    vars_: list[Var] = []
    bufs: list[Buffer] = []

    def visit(n: Any) -> None:
        if isinstance(n, For):
            vars_.append(n.loop_var)
        elif isinstance(n, IterVar):
            vars_.append(n.var)
        elif isinstance(n, (LetStmt, Let)):
            vars_.append(n.var)
        elif isinstance(n, Block):
            bufs.extend(n.alloc_buffers)
            bufs.extend(m.buffer for m in n.match_buffers)
        elif isinstance(n, Allocate):
            bufs.append(n.buffer)

    post_order_visit(s, visit)
    return vars_, bufs


def fresh_copy(s: Stmt, suffix: str = "") -> Stmt:
    """A copy of `s` whose every definition is a new object (so it may appear twice)."""
    vars_, bufs = defined_vars_and_buffers(s)
    mapping: dict[Any, Any] = {}
    for v in vars_:
        if v not in mapping:
            mapping[v] = Var(v.name + suffix, v.dtype, span=v.span)
    for b in bufs:
        if b not in mapping:
            data = Var(b.data.name + suffix, b.data.dtype)
            mapping[b] = dataclasses.replace(b, name=b.name + suffix, data=data)
    # Buffer shapes may use copied variables: substitute inside the new buffers too.
    for b in bufs:
        nb = mapping[b]
        mapping[b] = dataclasses.replace(nb, shape=substitute(nb.shape, mapping),
                                         strides=substitute(nb.strides, mapping))
    return substitute(s, mapping)


def all_block_names(root: Stmt) -> set[str]:
    return {p[-1].block.name for p in walk(root) if isinstance(p[-1], BlockRealize)}


def has_unique_block_names(root: Stmt) -> bool:
    """Whether no two blocks under `root` share a name (the primitives find blocks by name;
    TVM allows several unnamed `T.block()`)."""
    names = [p[-1].block.name for p in walk(root) if isinstance(p[-1], BlockRealize)]
    return len(names) == len(set(names))


class BlockNames(Mutator):
    """Makes block names unique, the names in `taken` included (`T_add`, `T_add_1`, ...)."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = taken

    def visit_Block(self, blk: Block) -> Any:
        new = self.generic_visit(blk)
        name, k = blk.name, 0
        while name in self.taken:
            k += 1
            name = f"{blk.name}_{k}"
        self.taken.add(name)
        return new if name == blk.name else dataclasses.replace(new, name=name)


def simplify_bindings(s: Stmt, an: Any) -> Stmt:
    """`s` with every block binding and predicate simplified, knowing the loop ranges.

    `an` is a tirc.ir.arith.Analyzer that already knows the loops above `s`.
    """
    from tirc.ir.buffer import Range
    from tirc.ir.expr import IntImm, cast

    if isinstance(s, For):
        with an.scope():
            an.bind(s.loop_var, Range(s.min, s.extent))
            body = simplify_bindings(s.body, an)
        return s if body is s.body else dataclasses.replace(s, body=body)
    if isinstance(s, BlockRealize):
        # each binding in its variable's dtype (a fused int64 loop binds an int32 variable)
        values = tuple(an.simplify(v if v.dtype == iv.var.dtype else cast(iv.var.dtype, v))
                       for iv, v in zip(s.block.iter_vars, s.iter_values))
        pred = an.simplify(s.predicate)
        if isinstance(pred, IntImm):
            pred = IntImm(1 if pred.value else 0, pred.dtype)
        with an.scope():
            for iv in s.block.iter_vars:
                an.bind(iv.var, iv.dom)
            body = simplify_bindings(s.block.body, an)
        block = s.block if body is s.block.body else dataclasses.replace(s.block, body=body)
        return dataclasses.replace(s, iter_values=values, predicate=pred, block=block)
    if isinstance(s, SeqStmt):
        items = tuple(simplify_bindings(x, an) for x in s.seq)
        return s if all(a is b for a, b in zip(items, s.seq)) else SeqStmt(items, span=s.span)
    kids = children(s)
    if not kids:
        return s
    new = [simplify_bindings(k, an) for k in kids]
    if all(a is b for a, b in zip(new, kids)):
        return s
    if isinstance(s, IfThenElse):
        return dataclasses.replace(s, then_case=new[0],
                                   else_case=new[1] if len(new) > 1 else None)
    return dataclasses.replace(s, body=new[0])  # type: ignore[call-arg]
