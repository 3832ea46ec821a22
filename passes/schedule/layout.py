"""transform_layout: store a buffer in another shape, or give it an Axe layout.

`sch.transform_layout(block, ("write", 0), lambda i, j: (j // 32, i, j % 32))` maps each
logical index of the buffer to a new index: the buffer's shape becomes the image of the index
map (each output dimension relaxed over the old shape), and every access and region of the
buffer in the function is rewritten through the map. The map must be one-to-one (checked by
enumeration for constant shapes, unless `assume_injective_transform`); a map onto a larger
shape pads, which needs `pad_value` (as in TVM): a block `<name>_pad` after the buffer's
producer writes it to the padding, found by inverting the map (each index an output, or split
into `i // k` and `i % k` outputs).
`layout="S[(4, 8):(1, 4)]"` instead sets the buffer's layout (tirc.ir.layout notation), which
the layout-lowering pass later maps to memory; its size must equal the buffer's.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tirc.ir.analysis.regions import full_bounds, region_of_bounds, relax
from tirc.ir.arith import Analyzer
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import BinOp, BufferLoad, IntImm, PrimExpr, Var, binop, const, is_const_int
from tirc.ir.layout import LayoutError, parse_layout
from tirc.ir.parallel_private import private_loops
from tirc.ir.schedule import SchedLambda
from tirc.ir.stmt import Block, BlockRealize, BufferStore, For, ForKind, IterKind, IterVar, Stmt
from tirc.ir.visitor import Mutator, substitute

if TYPE_CHECKING:
    import numpy as np  # imported where a layout's bijectivity is checked
from tirc.passes.schedule.dependence import BlockSite
from tirc.passes.schedule.loops import recheck_parallel_loop
from tirc.passes.schedule.scope import kid_index, replace_buffer, scope_kids, set_scope_kids
from tirc.passes.schedule.state import ScheduleError, ScheduleState
from tirc.passes.schedule.tree import loop_path, walk

PRIM = "transform_layout"
MAX_ENUMERATED = 1 << 22


def _pick_buffer(s: ScheduleState, block: Any, buffer: Any) -> Buffer:
    _, _, blk = s.block(block, PRIM)
    if isinstance(buffer, str):
        found = [r.buffer for r in blk.reads + blk.writes if r.buffer.name == buffer]
        if not found:
            raise ScheduleError(f"{PRIM}: block \"{blk.name}\" does not access a buffer named "
                                f"{buffer}")
        return found[0]
    if not (isinstance(buffer, (tuple, list)) and len(buffer) == 2
            and buffer[0] in ("read", "write") and isinstance(buffer[1], int)):
        raise ScheduleError(f"{PRIM}: the buffer is (\"read\", index), (\"write\", index) or "
                            f"a buffer name")
    regions = blk.reads if buffer[0] == "read" else blk.writes
    if not 0 <= buffer[1] < len(regions):
        raise ScheduleError(f"{PRIM}: block \"{blk.name}\" has {len(regions)} {buffer[0]} "
                            f"regions; index {buffer[1]} is out of range")
    return regions[buffer[1]].buffer


def transform_layout(s: ScheduleState, block: Any, buffer: Any, index_map: Any = None,
                     pad_value: Any = None, *, assume_injective_transform: Any = False,
                     layout: Any = None) -> None:
    """Rewrite a buffer through an index map, or set its layout. With
    `assume_injective_transform=True` (TVM's keyword) the schedule vouches that the map is
    one-to-one and the check is skipped."""
    buf = _pick_buffer(s, block, buffer)
    if pad_value is not None and (isinstance(pad_value, bool)
                                  or not isinstance(pad_value, (int, float))):
        raise ScheduleError(f"{PRIM}: pad_value must be a number (a pad value computed from "
                            f"the indices is not supported)")
    if not isinstance(assume_injective_transform, bool):
        raise ScheduleError(f"{PRIM}: assume_injective_transform must be True or False")
    if (index_map is None) == (layout is None):
        raise ScheduleError(f"{PRIM}: give either an index map (a lambda) or layout=\"...\"")
    if layout is not None:
        _set_layout(s, buf, layout)
        return
    if not isinstance(index_map, SchedLambda):
        raise ScheduleError(f"{PRIM}: the index map must be a lambda, such as "
                            f"lambda i, j: (j // 32, i, j % 32)")
    params, outs = list(index_map.params), list(index_map.body)
    if len(params) != buf.ndim:
        raise ScheduleError(f"{PRIM}: the index map takes {len(params)} indices but "
                            f"{buf.name} has {buf.ndim} dimensions")
    params = [p if p.dtype == d.dtype else Var(p.name, d.dtype) for p, d in
              zip(params, buf.shape)]
    outs = [_Retyped().visit(substitute(o, dict(zip(index_map.params, params)))) for o in outs]
    an = Analyzer()
    shape = _image_shape(buf, params, outs, an)
    padded = _check_bijective(buf, params, outs, shape, assume_injective_transform,
                              pad_value is not None)
    padding = _padding_condition(buf, params, outs) if padded else None
    new = dataclasses.replace(buf, shape=tuple(shape), strides=(), layout=None)
    s.set_body(_Remap(buf, new, params, outs, an).visit(s.body))
    replace_buffer(s, buf, new)
    if padding is not None:
        add_padding_block(s, new, padding, pad_value)


def _image_shape(buf: Buffer, params: list[Var], outs: list[PrimExpr], an: Analyzer
                 ) -> list[PrimExpr]:
    dom = {p: full_bounds(buf, k) for k, p in enumerate(params)}
    for p, (lo, hi) in dom.items():
        an.bind(p, (lo, hi))
    shape = []
    for k, e in enumerate(outs):
        r = relax(e, dom)
        if r is None:
            raise ScheduleError(f"{PRIM}: cannot bound output {k} of the index map")
        lo, hi = an.simplify(r[0]), an.simplify(r[1])
        if not an.can_prove(binop("eq", lo, 0)):
            raise ScheduleError(f"{PRIM}: output {k} of the index map does not start at 0")
        shape.append(an.simplify(binop("add", hi, 1)))
    return shape


def _np_eval(e: PrimExpr, env: dict[Var, np.ndarray]) -> np.ndarray | None:
    import numpy as np

    if isinstance(e, IntImm):
        return np.int64(e.value)  # type: ignore[return-value]
    if isinstance(e, Var):
        return env.get(e)
    if isinstance(e, BinOp):
        a, b = _np_eval(e.a, env), _np_eval(e.b, env)
        if a is None or b is None:
            return None
        ops = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
               "floordiv": np.floor_divide, "floormod": np.mod, "min": np.minimum,
               "max": np.maximum}
        fn = ops.get(e.op)
        return None if fn is None else fn(a, b)
    return None


def _check_bijective(buf: Buffer, params: list[Var], outs: list[PrimExpr],
                     shape: list[PrimExpr], assume_injective: bool, may_pad: bool) -> bool:
    """Whether the map pads (fewer elements before than after: needs a pad_value, as in TVM)
    and, unless assumed, that no two elements go to one place (enumerated for constant
    shapes)."""
    dims = [d.value if isinstance(d, IntImm) else None for d in buf.shape]
    new = [d.value if isinstance(d, IntImm) else None for d in shape]
    if None in dims or None in new:
        return False
    old_n, new_n = math.prod(dims), math.prod(new)  # type: ignore[arg-type]
    if old_n > new_n or (old_n < new_n and not may_pad):
        raise ScheduleError(f"{PRIM}: the index map sends {buf.name}'s {old_n} elements into "
                            f"a shape of {new_n}; padding needs a pad_value")
    if assume_injective or old_n > MAX_ENUMERATED:
        return old_n < new_n
    import numpy as np

    grids = np.indices(dims, dtype=np.int64).reshape(len(dims), -1)
    env = dict(zip(params, grids))
    cols = [_np_eval(o, env) for o in outs]
    if any(c is None for c in cols):
        return
    flat = np.zeros(old_n, dtype=np.int64)
    for c, d in zip(cols, new):
        flat = flat * d + np.broadcast_to(c, (old_n,))  # type: ignore[arg-type]
    inside = old_n == 0 or (flat.min() >= 0 and flat.max() < new_n)
    repeated = np.bincount(flat, minlength=new_n).max(initial=0) > 1 if inside else \
        len(np.unique(flat)) != old_n  # counting is ~50x faster than np.unique on 1M indices
    if repeated:
        raise ScheduleError(f"{PRIM}: the index map sends two elements of {buf.name} to the "
                            f"same place")
    return old_n < new_n


def _padding_condition(buf: Buffer, params: list[Var], outs: list[PrimExpr]
                       ) -> Callable[[list[Var], Analyzer], PrimExpr]:
    """The padding of the new buffer as a condition on its indices: the map inverted (each
    index is `p`, or `p // k` beside `p % k`, so `p = o1 * k + o2`) lands outside the old
    shape."""
    inverse: dict[Var, Callable[[list[Var]], PrimExpr]] = {}
    for k, o in enumerate(outs):
        if isinstance(o, Var) and o in params:
            inverse[o] = lambda v, k=k: v[k]
        elif _divmod(o, "floordiv", params):
            q = next((m for m, x in enumerate(outs) if _divmod(x, "floormod", params)
                      and x.a is o.a and x.b.value == o.b.value), None)  # type: ignore
            if q is not None:
                f = o.b.value  # type: ignore[attr-defined]
                inverse[o.a] = lambda v, k=k, q=q, f=f: v[k] * f + v[q]  # type: ignore
    missing = [p.name for p in params if p not in inverse]
    if missing:
        raise ScheduleError(f"{PRIM}: cannot find the padding: index {missing[0]} is not an "
                            f"output of the map, nor split into `{missing[0]} // k` and "
                            f"`{missing[0]} % k` outputs")

    def cond(v: list[Var], an: Analyzer) -> PrimExpr:
        terms = [an.simplify(binop("ge", inverse[p](v), d)) for p, d in zip(params, buf.shape)]
        live = [t for t in terms if not is_const_int(t, 0)] or terms[:1]
        out = live[0]
        for t in live[1:]:
            out = binop("or", out, t)
        return out

    return cond


def _divmod(e: PrimExpr, op: str, params: list[Var]) -> bool:
    return isinstance(e, BinOp) and e.op == op and isinstance(e.a, Var) and e.a in params \
        and isinstance(e.b, IntImm) and e.b.value > 0


def add_padding_block(s: ScheduleState, buf: Buffer,
                      padding: Callable[[list[Var], Analyzer], PrimExpr],
                      pad_value: int | float) -> None:
    """A block `<buf>_pad` writing `pad_value` to the padding of `buf`, right after the block
    that produces `buf` (TVM writes it after the producer when it can't fuse it in)."""
    writers = [p for p in walk(s.body) if isinstance(p[-1], BlockRealize) and any(
        w.buffer is buf for w in p[-1].block.writes)]
    if len(writers) != 1:
        what = "no block writes it (an input)" if not writers else "several blocks write it"
        raise ScheduleError(f"{PRIM}: pad_value needs the block that produces {buf.name}, but "
                            f"{what}")
    sp, kids = scope_kids(s, writers[0])
    pos = kid_index(kids, BlockSite(writers[0]))
    owner = sp[-1].block if sp else None
    private = private_loops(owner).get(buf.data) if isinstance(owner, Block) else None
    ivars = [IterVar(Var(f"v{k}", d.dtype), Range(IntImm(0, d.dtype), d), IterKind.SPATIAL)
             for k, d in enumerate(buf.shape)]
    loops = [Var(f"ax{k}", d.dtype) for k, d in enumerate(buf.shape)]
    idx = tuple(iv.var for iv in ivars)
    store = BufferStore(buf, const(pad_value, buf.dtype), idx)
    point = tuple(Range(v, IntImm(1, v.dtype)) for v in idx)
    name = s.unique_block_name(f"{buf.name}_pad")
    blk = Block(name, tuple(ivars), (), (BufferRegion(buf, point),), store)
    an = Analyzer()
    for ax, d in zip(loops, buf.shape):
        an.bind(ax, Range(IntImm(0, d.dtype), d))
    body: Stmt = BlockRealize(tuple(loops), padding(loops, an), blk)
    for ax, d in reversed(list(zip(loops, buf.shape))):
        body = For(ax, IntImm(0, d.dtype), d, ForKind.SERIAL, body)
    set_scope_kids(s, sp, kids[:pos + 1] + [body] + kids[pos + 1:], PRIM)
    if private is not None:
        # the buffer had a copy per iteration of that parallel loop; used after it now, it is
        # shared, and iterations that recompute one element of it would race
        path = loop_path(s.body, private.loop_var)
        assert path is not None
        recheck_parallel_loop(path, f"{PRIM} (pad_value)")


class _Retyped(Mutator):
    """An index map's outputs over its retyped parameters (int64 for an int64 buffer), every
    operation rebuilt so that its literals take the operands' dtype (`j // 2` read from a
    lambda over int32; left as int64 // int32, the code generator failed)."""

    def visit_BinOp(self, n: BinOp) -> Any:
        return binop(n.op, self.visit(n.a), self.visit(n.b))


class _Remap(Mutator):
    """Accesses and regions of `old` rewritten through the index map (buffer swapped later)."""

    def __init__(self, old: Buffer, new: Buffer, params: list[Var], outs: list[PrimExpr],
                 an: Analyzer) -> None:
        self.old = old
        self.new = new
        self.params = params
        self.outs = outs
        self.an = an

    def mapped(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        m = dict(zip(self.params, indices))
        return tuple(self.an.simplify(substitute(o, m)) for o in self.outs)

    def visit_BufferLoad(self, n: BufferLoad) -> Any:
        n = self.generic_visit(n)
        if n.buffer is not self.old:
            return n
        return dataclasses.replace(n, indices=self.mapped(n.indices))

    def visit_BufferStore(self, n: BufferStore) -> Any:
        n = self.generic_visit(n)
        if n.buffer is not self.old:
            return n
        return dataclasses.replace(n, indices=self.mapped(n.indices))

    def visit_BufferRegion(self, r: BufferRegion) -> Any:
        if r.buffer is not self.old:
            return r
        dom = {p: (rng.min, binop("sub", binop("add", rng.min, rng.extent), 1))
               for p, rng in zip(self.params, r.region)}
        bounds = []
        for k, o in enumerate(self.outs):
            b = relax(o, dom)
            bounds.append(full_bounds(self.new, k) if b is None else
                          (self.an.simplify(b[0]), self.an.simplify(b[1])))
        return BufferRegion(r.buffer, region_of_bounds(bounds, self.an))

    def visit_Block(self, b: Block) -> Any:
        for m in b.match_buffers:
            if m.source.buffer is self.old:
                raise ScheduleError(f"{PRIM}: {self.old.name} is viewed by a match_buffer in "
                                    f"block \"{b.name}\"")
        return self.generic_visit(b)


def _set_layout(s: ScheduleState, buf: Buffer, text: Any) -> None:
    if not isinstance(text, str):
        raise ScheduleError(f"{PRIM}: layout must be a string such as \"S[(4, 8):(8, 1)]\"")
    try:
        lay = parse_layout(text)
    except LayoutError as e:
        raise ScheduleError(f"{PRIM}: bad layout \"{text}\": {e}") from None
    size = lay.size()
    dims = [d.value for d in buf.shape if isinstance(d, IntImm)]
    if isinstance(size, int) and len(dims) == buf.ndim and size != math.prod(dims):
        raise ScheduleError(f"{PRIM}: layout \"{text}\" holds {size} elements but {buf.name} "
                            f"has {math.prod(dims)}")
    replace_buffer(s, buf, dataclasses.replace(buf, layout=lay))

