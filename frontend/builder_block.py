"""`with T.block("name"):` (or `T.sblock`): iteration variables, regions, init, predicate,
block-local buffers, then the body; read/write regions are inferred when not written."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tirc.frontend import syntax as S
from tirc.frontend.builder_buffer import declare_buffer, range_between, region
from tirc.frontend.context import BuildError
from tirc.frontend.signature import Sig, check_call
from tirc.ir.analysis.block_regions import infer_regions
from tirc.ir.analysis.regions import region_offset
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.dtype import INT32
from tirc.ir.expr import IntImm, PrimExpr, Var, cast, const, index_dtype
from tirc.ir.rebind import rebind
from tirc.ir.stmt import Block, BlockRealize, IterKind, IterVar, MatchBufferRegion, Stmt
from tirc.ir.structural import structural_equal

if TYPE_CHECKING:
    from tirc.frontend.builder_stmt import LoopBuilder

# `T.axis.scan` (an ordered iteration) is kept opaque: nothing may reorder or split it.
AXIS_KINDS = {"spatial": IterKind.SPATIAL, "S": IterKind.SPATIAL, "reduce": IterKind.REDUCE,
              "R": IterKind.REDUCE, "opaque": IterKind.OPAQUE, "scan": IterKind.OPAQUE}
REMAP_KINDS = {"S": IterKind.SPATIAL, "R": IterKind.REDUCE, "O": IterKind.OPAQUE}
ALLOCS = {"T.alloc_buffer": None, "T.sblock_alloc_buffer": None, "T.alloc_local": "local",
          "T.alloc_shared": "shared"}


class BlockParts:
    """What the statements directly inside a block declare about it."""

    def __init__(self, lb: LoopBuilder) -> None:
        self.lb = lb
        self.ctx = lb.ctx
        self.iter_vars: list[IterVar] = []
        self.values: list[PrimExpr] = []
        self.reads: tuple[BufferRegion, ...] | None = None
        self.writes: tuple[BufferRegion, ...] | None = None
        self.predicate: PrimExpr | None = None
        self.annotations: dict[str, Any] = {}
        self.allocs: list[Buffer] = []
        self.matches: list[MatchBufferRegion] = []
        self.init: Stmt | None = None
        self.forward: dict[str, Buffer] = {}  # `x = T.Buffer(...)` before its allocation

    def hook(self, s: S.Stmt) -> bool:
        """Handle `s` when it declares something about the block; False for body statements."""
        if isinstance(s, S.ExprStmt) and isinstance(s.value, S.Call):
            return self.call_stmt(s.value, S.dotted(s.value.func))
        if isinstance(s, S.Assign) and isinstance(s.value, S.Call) and not s.more_targets:
            name = S.dotted(s.value.func)
            if isinstance(s.target, S.Tuple) and name == "T.axis.remap":
                self.remap(s.target, s.value)
                return True
            if isinstance(s.target, S.Name) and name == "T.axis.remap":
                self.remap(S.Tuple(s.target.span, [s.target]), s.value)
                return True
            if isinstance(s.target, S.Name):
                return self.assign(s.target, s.value, name)
        if isinstance(s, S.With) and len(s.items) == 1 and \
                S.call_name(s.items[0].context) == "T.init":
            self.init_block(s)
            return True
        return False

    def call_stmt(self, call: S.Call, name: str | None) -> bool:
        eb = self.lb.eb
        if name in ("T.reads", "T.writes"):
            check_call(self.ctx, call, name, Sig(0, None))
            regions = tuple(region(eb, r) for r in _region_args(call))
            attr = "reads" if name == "T.reads" else "writes"
            if getattr(self, attr) is not None:
                self.ctx.error(f"{name} appears twice in this block", call.span)
            setattr(self, attr, regions)
            return True
        if name == "T.where":
            a = check_call(self.ctx, call, name, Sig(1, 1))
            if self.predicate is not None:
                self.ctx.error("T.where appears twice in this block", call.span)
            self.predicate = eb.condition(a.pos[0], "the block predicate")
            return True
        if name in ("T.block_attr", "T.sblock_attr"):
            a = check_call(self.ctx, call, name, Sig(1, 1))
            self.merge_annotations(self.annotations, eb.attr_dict(a.pos[0]), name, call)
            return True
        return False

    def merge_annotations(self, into: dict[str, Any], new: dict[str, Any], name: str,
                          call: S.Call) -> None:
        """A block's `T.block_attr` calls merged as TVM merges them: dictionaries under one
        key merge, a key set again to an equal value is kept, to another is an error."""
        for key, value in new.items():
            if key not in into:
                into[key] = value
            elif isinstance(into[key], dict) and isinstance(value, dict):
                merged = dict(into[key])
                self.merge_annotations(merged, value, name, call)
                into[key] = merged
            elif not structural_equal(into[key], value):
                self.ctx.error(f"{name} sets \"{key}\" twice in this block, to different "
                               "values", call.span)

    def assign(self, t: S.Name, call: S.Call, name: str | None) -> bool:
        if name is not None and name.startswith("T.axis.") and name[7:] in AXIS_KINDS:
            self.axis(t, call, name)
            return True
        if name == "T.Buffer":
            buf = declare_buffer(self.lb.eb, t.id, call, name, alias=True)
            self.lb.scope.define(t.id, buf, t.span)
            self.forward[t.id] = buf
            return True
        if name in ALLOCS:
            buf = declare_buffer(self.lb.eb, t.id, call, name, scope=ALLOCS[name])
            if not self.allocates_forward(t.id, buf):
                self.lb.scope.define(t.id, buf, t.span)
            self.allocs.append(buf)
            return True
        if name == "T.match_buffer":
            if not call.args:
                self.ctx.error("T.match_buffer needs a source region", call.span)
            source = region(self.lb.eb, call.args[0])
            buf = declare_buffer(self.lb.eb, t.id, call, name, skip=1, like=source)
            if buf.dtype != source.buffer.dtype:  # TVM's LowerMatchBuffer checks it too
                self.ctx.error(f"T.match_buffer: '{t.id}' is {buf.dtype}, but its region of "
                               f"'{source.buffer.name}' is {source.buffer.dtype} (a matched "
                               "buffer views its region's elements in their own dtype)",
                               call.span)
            if buf.elem_offset is None and any(k.name == "offset_factor" for k in call.keywords):
                # as TVM: an offset_factor without an elem_offset makes the offset a variable,
                # bound to the region's offset when the block is lowered (`sub_A.elem_offset`)
                buf = buf.replace(elem_offset=Var(f"{t.id}_elem_offset", INT32))
            elif buf.elem_offset is None:
                self.lb.eb.match_offsets[id(buf)] = region_offset(source)
            self.lb.scope.define(t.id, buf, t.span)
            self.matches.append(MatchBufferRegion(buf, source, span=call.span))
            return True
        return False

    def allocates_forward(self, name: str, buf: Buffer) -> bool:
        """A block buffer declared first as `x = T.Buffer(...)` of the same dtype and shape
        (TVM prints one so when the block's regions name it) and then allocated: the regions
        read so far name the allocation. False when `name` had no such declaration."""
        fwd = self.forward.pop(name, None)
        frame = self.lb.scope.frames[-1]
        if fwd is None or frame.get(name) is not fwd or fwd.dtype != buf.dtype or \
                fwd.scope != buf.scope or not structural_equal(fwd.shape, buf.shape):
            return False
        frame[name] = buf
        self.reads, self.writes = rebind((self.reads, self.writes), {fwd: buf})
        return True

    def axis(self, t: S.Name, call: S.Call, name: str) -> None:
        eb = self.lb.eb
        a = check_call(self.ctx, call, name, Sig(2, 2, ("dtype",)))
        dom_node, value_node = a.pos
        value = eb.index(value_node, "a block iteration value")
        if isinstance(dom_node, S.Tuple):
            if len(dom_node.elts) != 2:
                self.ctx.error("a block domain is an extent or a (start, stop) pair",
                               dom_node.span)
            lo, hi = (eb.index(x, "a block domain") for x in dom_node.elts)
            lo, extent = range_between(eb, lo, hi, dom_node.span)
        else:
            extent = eb.index(dom_node, "a block domain")
            lo = IntImm(0, extent.dtype, span=dom_node.span)
        dt = eb.dtype_arg(a.kw["dtype"]) if "dtype" in a.kw else \
            (value.dtype if isinstance(extent, IntImm) else index_dtype(value, extent))
        value, lo, extent = (cast(dt, x) for x in (value, lo, extent))
        self.add_iter(t, dt, Range(lo, extent, span=dom_node.span), AXIS_KINDS[name[7:]], value)

    def add_iter(self, t: S.Name, dt: Any, dom: Range, kind: IterKind, value: PrimExpr) -> None:
        var = Var(t.id, dt, span=t.span)
        self.lb.scope.define(t.id, var, t.span)
        self.iter_vars.append(IterVar(var, dom, kind, span=t.span))
        self.values.append(value)
        self.lb.block_bindings[var] = value

    def remap(self, target: S.Tuple, call: S.Call) -> None:
        eb = self.lb.eb
        a = check_call(self.ctx, call, "T.axis.remap", Sig(2, 2))
        kinds = eb.str_literal(a.pos[0], "the iteration kinds")
        loops_node = a.pos[1]
        if isinstance(loops_node, S.Name) and \
                isinstance(bound := self.lb.scope.lookup(loops_node.id), tuple):
            # `for iters in T.grid(m, n)`: the loop variables by their one name
            loops_node = S.Tuple(loops_node.span, [S.Name(loops_node.span, v.name)
                                                   for v in bound])
        if not isinstance(loops_node, (S.List, S.Tuple)):
            self.ctx.error("T.axis.remap takes a list of loop variables", a.pos[1].span)
        loops = loops_node.elts
        names = target.elts
        if not (len(kinds) == len(loops) == len(names)):
            self.ctx.error(f"T.axis.remap binds {len(names)} variables with "
                           f"{len(kinds)} kinds and {len(loops)} loop variables", call.span)
        for kind, loop_node, n in zip(kinds, loops, names):
            if kind not in REMAP_KINDS:
                self.ctx.error(f"unknown iteration kind '{kind}' (expected S or R)",
                               a.pos[0].span)
            if not isinstance(n, S.Name):
                self.ctx.error("a block iteration variable must be a name", n.span)
            loop = eb.expr(loop_node)
            dom = self.lb.loop_dom.get(loop) if isinstance(loop, Var) else None
            if dom is None:
                self.ctx.error("T.axis.remap binds loop variables of enclosing loops",
                               loop_node.span)
            self.add_iter(n, loop.dtype, Range(dom[0], dom[1], span=loop_node.span),
                          REMAP_KINDS[kind], loop)

    def init_block(self, s: S.With) -> None:
        call = s.items[0].context
        assert isinstance(call, S.Call)
        check_call(self.ctx, call, "T.init", Sig(0, 0))
        if self.init is not None:
            self.ctx.error("T.init appears twice in this block", call.span)
        self.init = self.lb.body(s.body)


def _region_args(call: S.Call) -> list[S.Expr]:
    """`T.reads(A[i], B[j])`, or TVM's older `T.reads([A[i], B[j]])`."""
    if len(call.args) == 1 and isinstance(call.args[0], (S.List, S.Tuple)):
        return list(call.args[0].elts)
    return list(call.args)


def build_block(lb: LoopBuilder, s: S.With, call: S.Call, name: str) -> Stmt:
    """A BlockRealize for `with T.block(...)`."""
    ctx = lb.ctx
    try:
        a = check_call(ctx, call, name, Sig(0, 1, ("name_hint", "no_realize")))
        if "no_realize" in a.kw:
            ctx.unsupported(f"{name}(no_realize=...)", a.kw["no_realize"].span)
        name_node = a.get(0, "name_hint")
        block_name = lb.eb.str_literal(name_node, "a block name") if name_node else ""
    except BuildError:
        lb.body(s.body)
        raise
    parts = BlockParts(lb)
    with lb.scope.frame():
        body = lb.body(s.body, hook=parts.hook, frame=False)
    reads, writes = parts.reads, parts.writes
    is_root = block_name == "root" and not parts.iter_vars
    if reads is None or writes is None:
        local = set(parts.allocs) | {m.buffer for m in parts.matches}
        inferred = infer_regions(body, parts.init, local) if not is_root else ((), ())
        reads = inferred[0] if reads is None else reads
        writes = inferred[1] if writes is None else writes
    block = Block(block_name, tuple(parts.iter_vars), reads, writes, body, parts.init,
                  tuple(parts.allocs), tuple(parts.matches), parts.annotations, span=s.span)
    predicate = parts.predicate if parts.predicate is not None else \
        const(True).with_span(s.span)
    return BlockRealize(tuple(parts.values), predicate, block, span=s.span)
