"""tensorize: replace a blockized computation by a tensor intrinsic's implementation.

The outer block's body (a loop nest over one block) is compared with the intrinsic's
description (see tensor_intrin.py): loops of equal extents, iteration variables of the same
kinds, and bodies equal once iteration variables are replaced by their bindings, where each
description buffer maps to one scheduled buffer and each of its accesses differs from the
scheduled access by the same offset per dimension (an expression of the loops outside the
tile). The body is then the implementation's, whose buffers become `T.match_buffer` views of
the matched regions (the offsets, extents from the description's buffer shapes).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir.analysis.regions import free_vars, uses_any
from tirc.ir.arith import Analyzer
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var, binop
from tirc.ir.function import PrimFunc
from tirc.ir.node import Node
from tirc.ir.stmt import Block, BlockRealize, BufferStore, For, MatchBufferRegion, Stmt
from tirc.ir.visitor import substitute
from tirc.passes.schedule.blockize import blockize_at
from tirc.passes.schedule.dependence import bind_outer_loops
from tirc.passes.schedule.state import LoopRV, ScheduleError, ScheduleState
from tirc.passes.schedule.tree import fresh_copy

PRIM = "tensorize"


def _strip_root(func: PrimFunc) -> Stmt:
    body = func.body
    if isinstance(body, BlockRealize) and not body.block.iter_vars and \
            body.block.name == "root" and not body.block.alloc_buffers:
        return body.block.body
    return body


def _nest(s: Stmt, what: str) -> tuple[list[For], BlockRealize]:
    loops: list[For] = []
    while isinstance(s, For):
        loops.append(s)
        s = s.body
    if not isinstance(s, BlockRealize):
        raise ScheduleError(f"{PRIM}: {what} is not a loop nest over a single block")
    return loops, s


def _inlined(br: BlockRealize, part: Stmt | None) -> Stmt | None:
    if part is None:
        return None
    return substitute(part, {iv.var: v for iv, v in zip(br.block.iter_vars, br.iter_values)})


class _Matcher:
    """Compares a description body with a scheduled body, collecting buffer offsets."""

    def __init__(self, var_map: dict[Var, Var], inner: set[Var], an: Analyzer) -> None:
        self.var_map = var_map
        self.inner = inner
        self.an = an
        self.buffers: dict[Buffer, Buffer] = {}
        self.offsets: dict[Buffer, list[PrimExpr]] = {}
        self.problem = ""

    def fail(self, why: str) -> bool:
        if not self.problem:
            self.problem = why
        return False

    def access(self, d_buf: Buffer, d_idx: tuple[PrimExpr, ...], a_buf: Buffer,
               a_idx: tuple[PrimExpr, ...]) -> bool:
        mapped = self.buffers.setdefault(d_buf, a_buf)
        if mapped is not a_buf:
            return self.fail(f"description buffer {d_buf.name} matches both {mapped.name} and "
                             f"{a_buf.name}")
        if d_buf.dtype != a_buf.dtype:
            return self.fail(f"{a_buf.name} is {a_buf.dtype}, the description's "
                             f"{d_buf.name} is {d_buf.dtype}")
        extra = len(a_idx) - len(d_idx)
        if extra < 0:
            return self.fail(f"{a_buf.name} has fewer dimensions than {d_buf.name}")
        offs = list(a_idx[:extra])
        for d, a in zip(d_idx, a_idx[extra:]):
            offs.append(self.an.simplify(binop("sub", a, substitute(d, self.var_map))))
        if uses_any(offs, self.inner):
            return self.fail(f"the accesses of {a_buf.name} do not follow the description's "
                             f"accesses of {d_buf.name}")
        known = self.offsets.setdefault(d_buf, offs)
        if known is not offs and any(
                not self.an.can_prove(binop("eq", x, y)) for x, y in zip(known, offs)):
            return self.fail(f"{a_buf.name} is accessed at different offsets")
        return True

    def eq(self, d: Any, a: Any) -> bool:
        if isinstance(d, Var):
            if d in self.var_map:
                return self.var_map[d] is a or self.fail(f"variable {a} does not match")
            return d is a or self.fail(f"variable {d.name} of the description is free")
        if isinstance(d, BufferLoad):
            return isinstance(a, BufferLoad) and self.access(d.buffer, d.indices, a.buffer,
                                                             a.indices)
        if isinstance(d, BufferStore):
            return (isinstance(a, BufferStore) and self.access(d.buffer, d.indices, a.buffer,
                                                               a.indices)
                    and self.eq(d.value, a.value))
        if isinstance(d, Node):
            if type(d) is not type(a):
                return self.fail(f"a {type(a).__name__} is where the description has a "
                                 f"{type(d).__name__}")
            return all(self.eq(x, y) for (_, x), (_, y) in zip(d.node_fields(), a.node_fields()))
        if isinstance(d, (tuple, list)):
            return (isinstance(a, (tuple, list)) and len(d) == len(a)
                    and all(self.eq(x, y) for x, y in zip(d, a)))
        return d == a or self.fail(f"{a!r} differs from the description's {d!r}")


def _intrinsic(s: ScheduleState, name: Any) -> tuple[PrimFunc, PrimFunc]:
    roles = s.intrinsics.get(str(name)) if isinstance(name, str) else None
    if not roles:
        raise ScheduleError(f"{PRIM}: unknown tensor intrinsic {name!r} (declare a pair of "
                            f"prim_funcs with T.func_attr({{\"tensor_intrin\": {name!r}, "
                            f"\"role\": \"desc\"}}) and \"role\": \"impl\")")
    for role in ("desc", "impl"):
        if role not in roles:
            raise ScheduleError(f"{PRIM}: tensor intrinsic {name!r} has no {role} function")
    desc, impl = roles["desc"], roles["impl"]
    if len(desc.params) != len(impl.params) or len(desc.buffers) != len(impl.buffers):
        raise ScheduleError(f"{PRIM}: the desc and impl of {name!r} take different parameters")
    return desc, impl


def tensorize(s: ScheduleState, block_or_loop: Any, tensor_intrin: Any,
              preserve_unit_iters: bool = True) -> None:
    """Replace a blockized computation (or the loop to blockize, with `preserve_unit_iters`
    as blockize's) by the intrinsic."""
    desc, impl = _intrinsic(s, tensor_intrin)
    if not isinstance(preserve_unit_iters, bool):
        raise ScheduleError(f"{PRIM}: preserve_unit_iters must be True or False")
    if isinstance(block_or_loop, LoopRV):
        lpath, lp = s.loop(block_or_loop, PRIM)
        name = blockize_at(s, lpath, lp, PRIM, preserve_unit_iters)
        path = s.lookup_block(name)
    else:
        path = s.block_path(block_or_loop, PRIM, "the block or loop")
    outer = path[-1]
    assert isinstance(outer, BlockRealize)
    a_loops, a_br = _nest(outer.block.body, f"the body of block \"{outer.block.name}\"")
    d_loops, d_br = _nest(_strip_root(desc), f"the description of {tensor_intrin!r}")
    if len(a_loops) != len(d_loops):
        raise ScheduleError(f"{PRIM}: block \"{outer.block.name}\" has {len(a_loops)} loops, "
                            f"the description of {tensor_intrin!r} has {len(d_loops)}")
    an = Analyzer()
    bind_outer_loops(an, path)
    for iv in outer.block.iter_vars:
        an.bind(iv.var, iv.dom)
    for d, a in zip(d_loops, a_loops):
        if not (an.can_prove(binop("eq", d.extent, a.extent))
                and an.can_prove(binop("eq", d.min, a.min))):
            raise ScheduleError(f"{PRIM}: loop {a.loop_var.name} ranges over "
                                f"{_range(a, an)}, the description's loop {d.loop_var.name} "
                                f"over {_range(d, an)}")
        an.bind(a.loop_var, Range(a.min, a.extent))
    a_inner = {a.loop_var for a in a_loops}
    d_inner = {d.loop_var for d in d_loops}
    kinds_d = [iv.kind for iv, v in zip(d_br.block.iter_vars, d_br.iter_values)
               if uses_any(v, d_inner)]
    kinds_a = [iv.kind for iv, v in zip(a_br.block.iter_vars, a_br.iter_values)
               if uses_any(v, a_inner)]
    if kinds_d != kinds_a:
        raise ScheduleError(f"{PRIM}: block \"{a_br.block.name}\" has iteration kinds "
                            f"{_kinds(kinds_a)}, the description {_kinds(kinds_d)}")
    var_map = {d.loop_var: a.loop_var for d, a in zip(d_loops, a_loops)}
    m = _Matcher(var_map, a_inner, an)
    a_init = _inlined(a_br, a_br.block.init)
    d_init = _inlined(d_br, d_br.block.init)
    if (a_init is None) != (d_init is None):
        has = "has" if a_init is not None else "has no"
        raise ScheduleError(f"{PRIM}: block \"{a_br.block.name}\" {has} init, unlike the "
                            f"description of {tensor_intrin!r} (decompose_reduction first)")
    ok = m.eq(_inlined(d_br, d_br.block.body), _inlined(a_br, a_br.block.body))
    ok = ok and (d_init is None or m.eq(d_init, a_init))
    if not ok:
        raise ScheduleError(f"{PRIM}: block \"{a_br.block.name}\" does not match the "
                            f"description of {tensor_intrin!r}: {m.problem}")
    _replace_body(s, path, outer, desc, impl, m)


def _replace_body(s: ScheduleState, path: Any, outer: BlockRealize, desc: PrimFunc,
                  impl: PrimFunc, m: _Matcher) -> None:
    body = fresh_copy(_strip_root(impl))
    matches: list[MatchBufferRegion] = []
    buf_map: dict[Any, Any] = {}
    for d_buf, i_buf in zip(desc.buffers, impl.buffers):
        if d_buf not in m.buffers:
            raise ScheduleError(f"{PRIM}: the description never accesses {d_buf.name}")
        actual = m.buffers[d_buf]
        offs = m.offsets[d_buf]
        extra = actual.ndim - d_buf.ndim
        region = [Range(o, IntImm(1, o.dtype)) for o in offs[:extra]]
        region += [Range(o, d) for o, d in zip(offs[extra:], d_buf.shape)]
        geometry = [v for v in free_vars((i_buf.shape, i_buf.strides, i_buf.elem_offset))
                    if v not in buf_map]
        buf_map.update({v: Var(v.name, v.dtype) for v in geometry})
        known = _source_strides(actual, d_buf.ndim)
        for st, value in zip(i_buf.strides, known or ()):
            if isinstance(st, Var):
                buf_map[st] = value
        view = dataclasses.replace(
            i_buf, data=Var(i_buf.name, i_buf.data.dtype),
            shape=substitute(i_buf.shape, buf_map), strides=substitute(i_buf.strides, buf_map),
            elem_offset=substitute(i_buf.elem_offset, buf_map))
        buf_map[i_buf] = view
        matches.append(MatchBufferRegion(view, BufferRegion(actual, tuple(region))))
    body = substitute(body, buf_map)
    blk: Block = dataclasses.replace(outer.block, body=body,
                                     match_buffers=outer.block.match_buffers + tuple(matches))
    s.replace(path, dataclasses.replace(outer, block=blk), PRIM)


def _source_strides(buf: Buffer, ndim: int) -> list[PrimExpr] | None:
    """The element strides of the last `ndim` dimensions of `buf`, when they are constants."""
    if buf.strides:
        strides = list(buf.strides)
    elif all(isinstance(d, IntImm) for d in buf.shape):
        strides, acc = [], 1
        for d in reversed(buf.shape):
            strides.insert(0, IntImm(acc, d.dtype))
            acc *= d.value  # type: ignore[attr-defined]
    else:
        return None
    tail = strides[len(strides) - ndim:]
    return tail if all(isinstance(x, IntImm) for x in tail) else None


def _kinds(kinds: list[Any]) -> str:
    return "\"" + "".join(k.value for k in kinds) + "\""


def _range(loop: For, an: Analyzer) -> str:
    from tirc.ir.printer import print_node

    end = an.simplify(binop("add", loop.min, loop.extent))
    return f"[{print_node(loop.min)}, {print_node(end)})"
