"""Loop headers: `range(...)`, `T.serial/parallel/vectorized/unroll(...)`, `T.grid(...)`,
`T.thread_binding(...)`, and `T.launch_thread` (a thread-bound loop over the statements after
it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from tirc.frontend import syntax as S
from tirc.frontend.builder_buffer import range_between
from tirc.frontend.builder_expr import literal_value
from tirc.frontend.scope import EnvThread
from tirc.frontend.signature import Sig, check_call
from tirc.ir.arith import construct
from tirc.ir.expr import IntImm, IRTypeError, PrimExpr, Var, binop, cast, unify
from tirc.ir.stmt import For, ForKind, Stmt
from tirc.ir.visitor import substitute

if TYPE_CHECKING:
    from tirc.frontend.builder_stmt import LoopBuilder, Wrapper

LOOP_KINDS = {"range": ForKind.SERIAL, "T.serial": ForKind.SERIAL,
              "T.parallel": ForKind.PARALLEL, "T.vectorized": ForKind.VECTORIZED,
              "T.unroll": ForKind.UNROLLED, "T.thread_binding": ForKind.THREAD_BINDING}


class LoopHead(NamedTuple):
    """One loop of a `for` statement (T.grid gives several), before its body is built;
    `min`/`extent` span the values the variable takes, every `step`-th of them."""

    var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: ForKind
    extra: dict  # thread_tag, annotations
    step: int = 1


def stepped_loop(head: LoopHead, body: Stmt) -> tuple[Var, PrimExpr, PrimExpr, Stmt]:
    """Variable, min, extent and body of the loop `head` opens over `body`: a loop with a
    step counts its iterations from 0 and the body reads `min + k * step`, as TVM's
    CanonicalizeLoop rewrites it."""
    if head.step == 1:
        return head.var, head.min, head.extent, body
    counter = Var(head.var.name, head.var.dtype, span=head.var.span)
    value = construct.add(construct.mul(counter, IntImm(head.step, counter.dtype)), head.min)
    extent = head.extent
    if isinstance(extent, IntImm):
        count: PrimExpr = IntImm(max(0, -(-extent.value // head.step)), extent.dtype,
                                 span=extent.span)
    else:
        count = binop("floordiv", construct.add(extent, IntImm(head.step - 1, extent.dtype)),
                      IntImm(head.step, extent.dtype))
    return counter, IntImm(0, counter.dtype), count, substitute(body, {head.var: value})


def loop_header(lb: LoopBuilder, s: S.For) -> list[LoopHead]:
    """The loops a `for` statement opens (several for T.grid)."""
    it = s.iter
    name = S.call_name(it)
    if name != "T.grid" and name not in LOOP_KINDS:
        lb.ctx.error("a loop iterates over range(...), T.grid(...) or a loop kind such as "
                     "T.serial(...)", it.span)
    assert isinstance(it, S.Call) and name is not None
    names = loop_targets(lb, s.target)
    if name == "T.grid":
        a = check_call(lb.ctx, it, name, Sig(1, None))
        extents = []
        for x in a.pos:
            if isinstance(x, S.Starred):
                extents.extend(lb.eb.starred_dims(x))
            else:
                extents.append(lb.eb.index(x, "a loop extent"))
        if len(names) == 1 and len(extents) > 1 and isinstance(s.target, S.Name):
            # `for iters in T.grid(m, n)`: one name for all the loop variables (a tuple,
            # as `T.axis.remap("SS", iters)` takes it); each loop is `iters_<k>`.
            names = [S.Name(s.target.span, f"{s.target.id}_{k}") for k in range(len(extents))]
        if len(names) != len(extents):
            lb.ctx.error(f"T.grid has {len(extents)} extents but the loop binds {len(names)} "
                         "variables", s.target.span)
        return [loop_var(n, IntImm(0, e.dtype, span=e.span), e, ForKind.SERIAL, {})
                for n, e in zip(names, extents)]
    if len(names) != 1:
        lb.ctx.error(f"{name} binds one loop variable, not {len(names)}", s.target.span)
    kind = LOOP_KINDS[name]
    extra: dict = {}
    step = 1
    if kind == ForKind.THREAD_BINDING:
        a = check_call(lb.ctx, it, name, Sig(1, 3, ("thread", "annotations")))
        pos = list(a.pos)
        extra["thread_tag"] = _thread_tag(lb, it, pos, a.kw.get("thread"))
    elif name == "range":
        a = check_call(lb.ctx, it, name, Sig(1, 3, ("annotations",)))
        pos = list(a.pos)
        if len(pos) == 3:
            step = _step(lb, name, pos.pop())
    else:
        a = check_call(lb.ctx, it, name, Sig(1, 3, ("annotations", "step", "thread")))
        pos = list(a.pos)
        if len(pos) == 3 or "step" in a.kw:
            step = _step(lb, name, pos.pop() if len(pos) == 3 else a.kw["step"])
        if "thread" in a.kw:
            lb.ctx.error(f"thread= belongs to T.thread_binding, not {name}", a.kw["thread"].span)
    if not 1 <= len(pos) <= 2:
        lb.ctx.error(f"{name} takes a start and a stop, or an extent", it.span)
    if "annotations" in a.kw:
        extra["annotations"] = lb.eb.attr_dict(a.kw["annotations"])
    lo, extent = loop_range(lb, pos, it)
    return [loop_var(names[0], lo, extent, kind, extra)._replace(step=step)]


def _step(lb: LoopBuilder, name: str, node: S.Expr) -> int:
    """A loop's step: a positive integer constant (TVM's `range(1, 128, 5)`)."""
    value = literal_value(node)
    if not isinstance(value, int) or isinstance(value, bool):
        lb.ctx.unsupported(f"{name} with a step that is not an integer constant", node.span)
    if value <= 0:
        lb.ctx.error(f"the step of {name} must be positive, not {value}", node.span)
    return value


def _thread_tag(lb: LoopBuilder, it: S.Call, pos: list[S.Expr],
                thread_node: S.Expr | None) -> str:
    """`thread="threadIdx.x"`, or the tag as the last positional argument (removed)."""
    if pos and isinstance(pos[-1], S.Constant) and pos[-1].kind == "str":
        thread_node = pos.pop()
    if thread_node is None:
        lb.ctx.error("T.thread_binding needs thread=\"threadIdx.x\" (or another tag)", it.span)
    return lb.eb.str_literal(thread_node, "the thread tag")


def loop_targets(lb: LoopBuilder, target: S.Expr) -> list[S.Name]:
    elts = target.elts if isinstance(target, S.Tuple) else [target]
    for e in elts:
        if not isinstance(e, S.Name):
            lb.ctx.error("a loop variable must be a name", e.span)
    return elts  # type: ignore[return-value]


def loop_range(lb: LoopBuilder, pos: list[S.Expr], it: S.Call) -> tuple[PrimExpr, PrimExpr]:
    """(min, extent) from `(extent)` or `(start, stop)`, in one integer dtype."""
    if len(pos) == 1:
        extent = lb.eb.index(pos[0], "a loop extent")
        return IntImm(0, extent.dtype, span=extent.span), extent
    lo = lb.eb.index(pos[0], "a loop start")
    hi = lb.eb.index(pos[1], "a loop stop")
    try:
        lo, hi = unify(lo, hi)
    except IRTypeError as err:
        lb.ctx.error(str(err), it.span)
    return range_between(lb.eb, lo, hi, it.span)


def loop_var(n: S.Name, lo: PrimExpr, extent: PrimExpr, kind: ForKind, extra: dict) -> LoopHead:
    """The loop variable takes the dtype of the extent."""
    var = Var(n.id, extent.dtype, span=n.span)
    if lo.dtype != extent.dtype:
        lo = cast(extent.dtype, lo)
    return LoopHead(var, lo, extent, kind, extra)


def launch_thread(lb: LoopBuilder, call: S.Call, target: S.Name | None) -> Wrapper:
    """`T.launch_thread(tx, n)` (after `tx = T.env_thread(tag)`) or
    `tx = T.launch_thread("threadIdx.x", n)`: a thread-bound loop over the rest."""
    a = check_call(lb.ctx, call, "T.launch_thread", Sig(2, 2))
    first, extent_node = a.pos
    extent = lb.eb.index(extent_node, "the thread extent")
    if isinstance(first, S.Constant) and first.kind == "str":
        if target is None:
            lb.ctx.error("bind the thread variable: tx = T.launch_thread(\"...\", n)",
                         call.span)
        var = Var(target.id, extent.dtype, span=target.span)
        lb.scope.define(target.id, var, target.span)
        tag = str(first.value)
    else:
        if target is not None:
            lb.ctx.error("T.launch_thread(var, n) with an env_thread variable binds nothing",
                         call.span)
        env = lb.scope.require(first.id, first.span) if isinstance(first, S.Name) else None
        if not isinstance(env, EnvThread):
            lb.ctx.error("expected a thread variable from T.env_thread or a thread tag",
                         first.span)
        var, tag = env.var, env.tag
        if env.launched:
            # Each launch defines its own variable (as loops do): the uses after it, to the
            # end of the enclosing body, mean this one.
            var = Var(var.name, var.dtype, span=first.span)
            lb.scope.frames[-1][first.id] = EnvThread(var, tag, launched=True)
        else:
            env.launched = True
        if var.dtype != extent.dtype:
            extent = cast(var.dtype, extent)
    zero = IntImm(0, var.dtype, span=call.span)
    lb.loop_dom[var] = (zero, extent)

    def wrap(body: Stmt) -> Stmt:
        return For(var, zero, extent, ForKind.THREAD_BINDING, body, thread_tag=tag,
                   span=call.span)

    return wrap
