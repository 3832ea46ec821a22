"""The static checks, one function each, from the sites of one loop function to diagnostics.

- `out_of_bounds`: an access whose index provably leaves its buffer on an iteration that runs;
- `binding_outside_domain`: a block binding that provably leaves its iteration domain;
- `parallel_dependence`: a `T.parallel` or `T.vectorized` loop over a reduction axis, with a
  dependence between blocks (the checks `sch.parallel` and `sch.vectorize` make), or whose
  iterations touch the same element with one of them writing;
- `missing_init`: a reduction block that accumulates into its output with no `T.init` and no
  earlier write of that output (a warning: it adds to whatever the output held).
"""

from __future__ import annotations

from collections.abc import Iterator

from tirc.ir.arith import simplify
from tirc.ir.diagnostics import Diagnostic
from tirc.ir.expr import BufferLoad, IntImm, binop
from tirc.ir.function import PrimFunc
from tirc.ir.printer import print_node
from tirc.ir.stmt import Allocate, BufferStore, For, ForKind, IterKind
from tirc.ir.visitor import post_order_visit
from tirc.passes.schedule.dependence import check_iter_kinds, check_not_carried, child_sites
from tirc.passes.schedule.loops import outer_analyzer
from tirc.passes.schedule.state import ScheduleError
from tirc.passes.schedule.tree import walk
from tirc.passes.static_check.conflicts import find_conflict
from tirc.passes.static_check.ranges import find_outside
from tirc.passes.static_check.sites import Access, Sites

KIND_SPELLING = {ForKind.PARALLEL: "T.parallel", ForKind.VECTORIZED: "T.vectorized"}


def _access_text(a: Access) -> str:
    return f"{a.buffer.name}[{', '.join(print_node(i) for i in a.node.indices)}]"


def _shape(a: Access) -> str:
    dims = [print_node(d) for d in a.buffer.shape]
    return f"({', '.join(dims)}{',' if len(dims) == 1 else ''})"


def out_of_bounds(sites: Sites) -> Iterator[Diagnostic]:
    """Accesses that provably leave their buffer."""
    for a in sites.accesses:
        if len(a.indices) != len(a.buffer.shape) or a.buffer.layout is not None:
            continue
        for dim, (index, extent) in enumerate(zip(a.indices, a.buffer.shape)):
            w = find_outside(index, IntImm(0, index.dtype), extent, a.loops, a.guards)
            if w is None:
                continue
            what = "write to" if a.is_write else "read of"
            side = "past the end of" if w.above else "before the start of"
            yield Diagnostic("error", f"out-of-bounds {what} {_access_text(a)}: the index in "
                             f"dimension {dim} reaches {w.value} at {w.where()}, {side} "
                             f"'{a.buffer.name}' of shape {_shape(a)}", a.span)
            break


def binding_outside_domain(sites: Sites) -> Iterator[Diagnostic]:
    """Block iteration variables bound to values outside their declared domain."""
    for b in sites.bindings:
        iv = b.realize.block.iter_vars[b.index]
        hi = simplify(binop("add", iv.dom.min, iv.dom.extent))
        w = find_outside(b.value, iv.dom.min, hi, b.loops, b.guards)
        if w is None:
            continue
        value = b.realize.iter_values[b.index]
        span = value.span or iv.span or b.realize.span
        yield Diagnostic("error", f"block '{b.realize.block.name}': iteration variable "
                         f"'{iv.var.name}' is bound to {print_node(value)}, which reaches "
                         f"{w.value} at {w.where()}, outside its domain "
                         f"[{print_node(iv.dom.min)}, {print_node(hi)})", span)


def parallel_dependence(func: PrimFunc, sites: Sites) -> Iterator[Diagnostic]:
    """Parallel and vectorized loops whose iterations are not independent."""
    for path in walk(func.body):
        lp = path[-1]
        if not isinstance(lp, For) or lp.kind not in KIND_SPELLING:
            continue
        spelling = KIND_SPELLING[lp.kind]
        blocks = child_sites(path)
        try:
            check_iter_kinds(spelling, blocks, lp, allow_reduce=False)
            check_not_carried(spelling, blocks, lp, [lp], outer_analyzer(path))
        except ScheduleError as err:
            yield Diagnostic("error", str(err), lp.span)
            continue
        message = _conflict(lp, sites)
        if message is not None:
            yield Diagnostic("error", f"{spelling}: loop {lp.loop_var.name} carries a "
                             f"dependence: {message}", lp.span)


def _conflict(lp: For, sites: Sites) -> str | None:
    private = {data for data, loops in sites.allocated_in.items()
               if any(x.node is lp for x in loops)}
    under = [a for a in sites.accesses if any(x.node is lp for x in a.loops)
             and a.buffer.data not in private]
    for w in under:
        if not w.is_write:
            continue
        loop = next(x for x in w.loops if x.node is lp)
        for other in under:
            if other.buffer.data is not w.buffer.data:
                continue
            found = find_conflict(loop, w, other)
            if found is not None:
                return found.text
    return None


def missing_init(sites: Sites) -> Iterator[Diagnostic]:
    """Reduction blocks that accumulate into an output nothing initialised."""
    order = {id(a.node): k for k, a in enumerate(sites.accesses)}
    for br, _ in sites.blocks:
        blk = br.block
        if blk.init is not None or not any(iv.kind == IterKind.REDUCE for iv in blk.iter_vars):
            continue
        stores: list[BufferStore] = []
        loads: set[object] = set()
        # storage the block makes itself starts afresh in each instance: not an accumulator
        own = {b.data for b in blk.alloc_buffers}

        def visit(n: object, stores: list[BufferStore] = stores, loads: set = loads,
                  own: set = own) -> None:
            if isinstance(n, BufferStore):
                stores.append(n)
            elif isinstance(n, BufferLoad):
                loads.add(n.buffer.data)
            elif isinstance(n, Allocate):
                own.add(n.buffer.data)

        post_order_visit(blk.body, visit)
        stores = [s for s in stores if s.buffer.data not in own]
        mine = {id(n) for n in _nodes(blk.body)}
        first = min((order[i] for i in mine if i in order), default=None)
        for s in stores:
            if s.buffer.data not in loads or first is None:
                continue
            earlier = [a for a in sites.accesses[:first]
                       if a.is_write and a.buffer.data is s.buffer.data]
            if not earlier:
                yield Diagnostic(
                    "warning", f"reduction block '{blk.name}' has no T.init and nothing "
                    f"writes '{s.buffer.name}' before it: it accumulates into whatever "
                    f"'{s.buffer.name}' holds (the caller's values for an output); add "
                    "`with T.init():` to start from a value", br.span)
                break


def _nodes(body: object) -> list[object]:
    found: list[object] = []
    post_order_visit(body, found.append)
    return found
