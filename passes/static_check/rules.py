"""The static checks, one function each, from the sites of one loop function to diagnostics.

- `out_of_bounds`: an access whose index provably leaves its buffer on an iteration that runs;
- `binding_outside_domain`: a block binding that provably leaves its iteration domain;
- `parallel_dependence`: a `T.parallel` or `T.vectorized` loop over a reduction axis, with a
  dependence between blocks (the checks `sch.parallel` and `sch.vectorize` make), or whose
  iterations touch the same element with one of them writing;
- `thread_race`: two GPU threads (or blocks) of a thread-bound loop that write the same element
  of memory they share (a warning: which value remains depends on the order they run);
- `missing_init`: a reduction block that accumulates into its output with no `T.init`, no
  earlier write of that output and no init of its own on the first reduction iteration
  (`if vk == 0:`, TVM's lowered form) (a warning: it adds to whatever the output held);
- `unwritten_reads`: a read of a buffer the function allocates and nothing writes (a warning:
  the values read are whatever the memory held).
"""

from __future__ import annotations

from collections.abc import Iterator

from tirc.ir import intrinsics as intrin
from tirc.ir.arith import simplify
from tirc.ir.diagnostics import Diagnostic
from tirc.ir.expr import BinOp, BufferLoad, Call, IntImm, PrimExpr, Var, binop
from tirc.ir.function import PrimFunc
from tirc.ir.gpu.threads import ALL_TAGS, is_block_tag
from tirc.ir.printer import print_node
from tirc.ir.stmt import Allocate, Block, BufferStore, For, ForKind, IfThenElse, IterKind
from tirc.ir.structural import same_expr
from tirc.ir.visitor import Visitor, post_order_visit
from tirc.passes.schedule.dependence import check_iter_kinds, check_not_carried, child_sites
from tirc.passes.schedule.loops import outer_analyzer
from tirc.passes.schedule.state import ScheduleError
from tirc.passes.schedule.tree import walk
from tirc.passes.static_check.conflicts import find_conflict
from tirc.passes.static_check.points import free_vars
from tirc.passes.static_check.ranges import find_outside
from tirc.passes.static_check.sites import Access, Loop, Sites, in_source

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
    under = [a for a in map(in_source, sites.accesses) if any(x.node is lp for x in a.loops)
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


# Storage each GPU thread has its own copy of, and storage each thread block has its own copy of.
_PER_THREAD = ("local", "warp")
_PER_BLOCK = ("shared", "shared.dyn", *_PER_THREAD)


def thread_race(sites: Sites) -> Iterator[Diagnostic]:
    """Thread-bound loops two of whose threads write the same element of shared storage.

    Reads are left alone: threads exchange values through shared memory between barriers.
    A block whose reduction variable is bound to the threads is a cross-thread reduction,
    which the GPU lowering turns into one, and is left alone too."""
    reported: set[int] = set()
    cross_thread = _cross_thread_blocks(sites)
    accesses = [in_source(a) for a in sites.accesses]
    for w in accesses:
        if not w.is_write or w.block in cross_thread:
            continue
        for loop in w.loops:
            tag = loop.node.thread_tag
            if loop.node.kind != ForKind.THREAD_BINDING or tag not in ALL_TAGS \
                    or id(loop.node) in reported:
                continue
            if w.buffer.scope in (_PER_BLOCK if is_block_tag(tag) else _PER_THREAD) or any(
                    x.node is loop.node for x in sites.allocated_in.get(w.buffer.data, ())):
                continue
            for other in accesses:
                if not other.is_write or other.buffer.data is not w.buffer.data \
                        or other.block in cross_thread \
                        or not any(x.node is loop.node for x in other.loops):
                    continue
                if other is w and _same_writes(w, loop, sites):
                    continue
                found = find_conflict(loop, w, other)
                if found is None:
                    continue
                reported.add(id(loop.node))
                who = "thread blocks" if is_block_tag(tag) else "threads"
                yield Diagnostic("warning", f"{tag} loop {loop.var.name}: its {who} race: "
                                 f"{found.text} (which value remains depends on the order "
                                 f"the {who} run)", loop.node.span)
                break


def _same_writes(w: Access, loop: Loop, sites: Sites) -> bool:
    """Whether every thread of `loop` makes the same writes through `w`: nothing about it (its
    element, value, guards, the ranges of the loops inside `loop`) depends on the thread, and
    its value reads only storage nothing under `loop` writes (the cooperative copy of a tile
    into shared memory that every thread makes before MetaSchedule splits it)."""
    k = next(i for i, lp in enumerate(w.loops) if lp.node is loop.node)
    inner = w.loops[k + 1:]
    assert w.value is not None
    if loop.var in free_vars([w.value, *w.indices, *w.guards,
                              *(e for lp in inner for e in (lp.min, lp.extent))]):
        return False
    written = {a.buffer.data for a in map(in_source, sites.accesses)
               if a.is_write and any(x.node is loop.node for x in a.loops)}
    return not any(isinstance(n, BufferLoad) and n.buffer.data in written
                   for n in _nodes(w.value))


def _cross_thread_blocks(sites: Sites) -> set[str]:
    """The names of the blocks with a reduction variable bound to a thread-bound loop."""
    found: set[str] = set()
    for b in sites.bindings:
        iv = b.realize.block.iter_vars[b.index]
        if iv.kind != IterKind.REDUCE:
            continue
        bound = {lp.var for lp in b.loops if lp.node.kind == ForKind.THREAD_BINDING}
        if any(isinstance(n, Var) and n in bound for n in _nodes(b.value)):
            found.add(b.realize.block.name)
    return found


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
            if s.buffer.data not in loads or first is None \
                    or _initialised_on_first_iteration(blk, s):
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


def _initialised_on_first_iteration(blk: Block, acc: BufferStore) -> bool:
    """Whether the block starts the accumulator `acc` stores to itself, as TVM's
    LowerInitBlock writes its init: `if vk == 0: B[i] = 0` (every reduction variable at the
    start of its domain) before the accumulation, storing to the same element a value that
    does not read the accumulator."""
    starts = {iv.var: iv.dom.min for iv in blk.iter_vars if iv.kind == IterKind.REDUCE}
    data = acc.buffer.data
    order = {id(n): k for k, n in enumerate(_nodes(blk.body))}

    def inits(x: object) -> bool:
        return isinstance(x, BufferStore) and x.buffer.data is data \
            and len(x.indices) == len(acc.indices) \
            and all(same_expr(a, b) for a, b in zip(x.indices, acc.indices)) \
            and not any(isinstance(y, BufferLoad) and y.buffer.data is data
                        for y in _nodes(x.value))

    found = False

    def visit(n: object) -> None:
        nonlocal found
        if not (isinstance(n, IfThenElse) and n.else_case is None
                and _first_iteration(n.condition, starts)):
            return
        inside = _nodes(n.then_case)
        if any(x is acc for x in inside):
            found = True  # `acc` is the init itself
        elif order.get(id(n), -1) < order.get(id(acc), -1) and any(inits(x) for x in inside):
            found = True

    post_order_visit(blk.body, visit)
    return found


def _first_iteration(cond: PrimExpr, starts: dict[Var, PrimExpr]) -> bool:
    """`cond` is a conjunction of `v == start` covering every reduction variable."""
    terms: list[PrimExpr] = []
    stack = [cond]
    while stack:
        e = stack.pop()
        if isinstance(e, BinOp) and e.op == "and":
            stack += [e.a, e.b]
        else:
            terms.append(e)
    seen: set[Var] = set()
    for t in terms:
        if not (isinstance(t, BinOp) and t.op == "eq"):
            return False
        v, c = (t.a, t.b) if isinstance(t.a, Var) else (t.b, t.a)
        if not isinstance(v, Var) or v not in starts or not same_expr(c, starts[v]):
            return False
        seen.add(v)
    return seen == set(starts)


def _nodes(body: object) -> list[object]:
    found: list[object] = []
    post_order_visit(body, found.append)
    return found


def unwritten_reads(func: PrimFunc, sites: Sites) -> Iterator[Diagnostic]:
    """Reads of a buffer the function allocates that no store, call or block can write."""
    allocated = set(sites.allocated_in)
    if not allocated:
        return
    written = {a.buffer.data for a in sites.accesses if a.is_write}
    escapes = _Escapes(allocated)
    escapes.visit(func.body)
    reported: set[Var] = set()
    for a in sites.accesses:
        data = a.buffer.data
        if a.is_write or data not in allocated or data in written or data in escapes.found \
                or data in reported:
            continue
        reported.add(data)
        yield Diagnostic("warning", f"read of {_access_text(a)}, which nothing writes: "
                         f"'{a.buffer.name}' is allocated by the function and never stored "
                         "to, so the values read are undefined", a.span)


class _Escapes(Visitor):
    """The data variables of allocated buffers that something other than a load or store of
    the buffer uses (a call's argument, a match_buffer's source, an alias, a block's declared
    write, an initialised allocation): such storage may be written where no store shows it."""

    def __init__(self, allocated: set[Var]) -> None:
        self.allocated = allocated
        self.found: set[Var] = set()

    def visit_Var(self, v: Var) -> None:
        if v in self.allocated:
            self.found.add(v)

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        self.visit(e.indices)

    def visit_Call(self, e: Call) -> None:
        # `T.address_of(X[i])` (also what `X.access_ptr` and `T.tvm_access_ptr` become) hands
        # X's storage to whatever takes the pointer
        if e.op == intrin.ADDRESS_OF:
            for a in e.args:
                if isinstance(a, BufferLoad) and a.buffer.data in self.allocated:
                    self.found.add(a.buffer.data)
        self.generic_visit(e)

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.visit((s.value, s.indices))

    def visit_Allocate(self, s: Allocate) -> None:
        if s.init is not None:
            self.found.add(s.buffer.data)
        self.visit((s.init, s.body))

    def visit_Block(self, b: Block) -> None:
        # a declared read writes nothing; the block's own allocations are definitions
        self.visit((b.iter_vars, b.writes, b.match_buffers, b.annotations, b.init, b.body))
