"""Statement-only builtins: `T.evaluate`, `T.tvm_storage_sync`, `T.event_wait`,
`T.event_notify`, `T.assume`, `T.ret`,
`T.break_loop()`, `T.continue_loop()`, `T.launch_thread(var, n)`, `T.Bind(value, var=x)`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tirc.frontend import syntax as S
from tirc.frontend.loop_heads import launch_thread
from tirc.frontend.prim_calls import is_module_call, prim_call
from tirc.frontend.signature import Sig, check_call
from tirc.ir import intrinsics as intrin
from tirc.ir.dtype import BOOL, DType
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, StringImm
from tirc.ir.stmt import DEVICE_ENTRY, AttrStmt, Evaluate, LetStmt, Stmt

if TYPE_CHECKING:
    from tirc.frontend.builder_stmt import LoopBuilder, Wrapper

INT32 = DType("int", 32)


def _evaluate(lb: LoopBuilder, call: S.Call) -> Stmt:
    a = check_call(lb.ctx, call, "T.evaluate", Sig(1, 1))
    if S.call_name(a.pos[0]) == f"T.{intrin.RET}":  # `T.evaluate(T.ret(v))`: a return
        inner = a.pos[0]
        assert isinstance(inner, S.Call)
        return _ret(lb, inner)
    if S.call_name(a.pos[0]) in _JUMPS:  # `T.evaluate(T.break_loop())`
        inner = a.pos[0]
        assert isinstance(inner, S.Call)
        return _loop_jump(lb, inner)
    if is_module_call(lb.eb, a.pos[0]):
        return Evaluate(prim_call(lb.eb, a.pos[0], statement=True), span=call.span)  # type: ignore[arg-type]
    return Evaluate(lb.eb.expr(a.pos[0]), span=call.span)


def _ret(lb: LoopBuilder, call: S.Call) -> Stmt:
    """`T.ret(v)`, or TVM's `T.ret(v, dtype="int8")` naming the result dtype."""
    a = check_call(lb.ctx, call, f"T.{intrin.RET}", Sig(1, 2, ("dtype",), positional_kw=True))
    dt_node = a.get(1, "dtype")
    dt = lb.eb.dtype_arg(dt_node) if dt_node is not None else None
    return lb.return_stmt(a.pos[0], call.span, dt, dt_node.span if dt_node else None)


_JUMPS = (f"T.{intrin.BREAK_LOOP}", f"T.{intrin.CONTINUE_LOOP}")


def _loop_jump(lb: LoopBuilder, call: S.Call) -> Stmt:
    """`T.break_loop()` / `T.continue_loop()` (TVM main's spelling of break and continue)."""
    name = S.call_name(call) or ""
    check_call(lb.ctx, call, name, Sig(0, 0))
    return lb.loop_jump(name[2:], call.span)


def _storage_sync(lb: LoopBuilder, call: S.Call) -> Stmt:
    """`T.tvm_storage_sync("shared")`, or with TVM's operands of a barrier across blocks at
    their defaults (`is_load` False, `num_blocks` -1: one block's barrier), as TVM prints it."""
    a = check_call(lb.ctx, call, "T.tvm_storage_sync",
                   Sig(1, 1, ("is_load", "num_blocks"), positional_kw=True))
    for key, default in (("is_load", 0), ("num_blocks", -1)):
        node = a.kw.get(key)
        if node is not None and getattr(lb.eb.expr(node), "value", None) != default:
            lb.ctx.unsupported(f"T.tvm_storage_sync with {key} other than "
                               f"{'False' if key == 'is_load' else -1} (a barrier across "
                               "blocks)", node.span)
    scope = lb.eb.str_literal(a.pos[0], "the storage scope")
    arg = StringImm(scope, span=a.pos[0].span)
    return Evaluate(Call(intrin.STORAGE_SYNC, (arg,), INT32, span=call.span), span=call.span)


def _event(lb: LoopBuilder, call: S.Call) -> Stmt:
    name = S.dotted(call.func) or ""
    op = name[2:]
    sig = Sig(1, 1) if op == intrin.EVENT_WAIT else Sig(1, 2, ("count",))
    a = check_call(lb.ctx, call, name, sig)
    elem = lb.eb.expr(a.pos[0])
    if not isinstance(elem, BufferLoad) or elem.buffer.scope != "event":
        lb.ctx.error(f"{name} expects an element of an event tensor, such as E[i]",
                     a.pos[0].span)
    args: tuple[PrimExpr, ...] = (elem,)
    count_node = a.get(1, "count")
    if count_node is not None:  # without it, the count is 1 (kept implicit, as written)
        args = (elem, lb.eb.index(count_node, "the notify count"))
    return Evaluate(Call(op, args, INT32, span=call.span), span=call.span)


def _assume(lb: LoopBuilder, call: S.Call) -> Stmt:
    a = check_call(lb.ctx, call, "T.assume", Sig(1, 1))
    cond = lb.eb.condition(a.pos[0], "the argument of T.assume")
    return Evaluate(Call(intrin.ASSUME, (cond,), INT32, span=call.span), span=call.span)


def _launch(lb: LoopBuilder, call: S.Call) -> Wrapper:
    return launch_thread(lb, call, None)


def _device_entry(lb: LoopBuilder, call: S.Call) -> Wrapper:
    """`T.device_entry()`: the statements after it are the device part of the function
    (TVM 0.27's marker between host and device code; on the CPU both run in one place)."""
    check_call(lb.ctx, call, "T.device_entry", Sig(0, 0))
    flag = IntImm(1, BOOL, span=call.span)
    return lambda body: AttrStmt(None, DEVICE_ENTRY, flag, body, span=call.span)


def _attr(lb: LoopBuilder, call: S.Call) -> Wrapper:
    """`T.attr(node, key, value)` without `with`: an attribute over the statements after it."""
    if len(call.args) == 1 and not call.keywords and isinstance(call.args[0], S.Dict):
        return attr_dict(lb, call.args[0], call)
    launch = lb.thread_extent_attr(call)
    if launch is not None:
        return launch
    if call.args and S.call_name(call.args[0]) == "T.comm_reducer":
        from tirc.frontend.allreduce import reducer_attr

        return reducer_attr(lb, call)
    node, key, value = lb.attr_parts(call)
    return lambda body: AttrStmt(node, key, value, body, span=call.span)


def attr_dict(lb: LoopBuilder, d: S.Dict, call: S.Call) -> Wrapper:
    """TVM 0.27's `T.attr({"key": value, ...})`: one attribute on no node per key, in order,
    over the statements after it, or over the body of `with T.attr({...}):`
    (`T.attr({"tirx.device_entry": True})` is T.device_entry())."""
    if not d.keys:
        lb.ctx.error("T.attr({...}) needs at least one \"key\": value", d.span)
    attrs: list[tuple[str, PrimExpr]] = []
    for k, v in zip(d.keys, d.values):
        key = lb.eb.str_literal(k, "the attribute key")
        value = StringImm(str(v.value), span=v.span) if isinstance(v, S.Constant) and \
            v.kind == "str" else lb.eb.expr(v)
        attrs.append((key, value))

    def wrap(body: Stmt) -> Stmt:
        for key, value in reversed(attrs):
            body = AttrStmt(None, key, value, body, span=call.span)
        return body
    return wrap


def _bind(lb: LoopBuilder, call: S.Call) -> Wrapper:
    """`T.Bind(value, var=x)` after `x = T.int32()`: `x` is `value` for the rest (a let)."""
    a = check_call(lb.ctx, call, "T.Bind", Sig(1, 1, ("var",)))
    target = a.kw.get("var")
    if not isinstance(target, S.Name):
        lb.ctx.error("write T.Bind(value, var=x), x declared before as x = T.int32()",
                     call.span)
    var = lb.scope.require(target.id, target.span)
    if var not in lb.unbound:
        lb.ctx.error(f"T.Bind binds a variable declared as {target.id} = T.int32() and not "
                     f"bound yet; '{target.id}' is not one", target.span)
    lb.unbound.discard(var)
    value = lb.typed_value(a.pos[0], var.dtype, "bind", f"to '{target.id}' of dtype {var.dtype}")
    return lambda body: LetStmt(var, value, body, span=call.span)


def _allreduce(lb: LoopBuilder, call: S.Call) -> Stmt:
    """`T.tvm_thread_allreduce(...)` after its reducer (tirc.frontend.allreduce)."""
    from tirc.frontend.allreduce import thread_allreduce

    return thread_allreduce(lb, call)


STMT_CALLS: dict[str, Callable[[LoopBuilder, S.Call], Any]] = {
    "T.evaluate": _evaluate,
    f"T.{intrin.STORAGE_SYNC}": _storage_sync,
    f"T.{intrin.EVENT_WAIT}": _event,
    f"T.{intrin.EVENT_NOTIFY}": _event,
    f"T.{intrin.ASSUME}": _assume,
    f"T.{intrin.RET}": _ret,
    f"T.{intrin.BREAK_LOOP}": _loop_jump,
    f"T.{intrin.CONTINUE_LOOP}": _loop_jump,
    "T.launch_thread": _launch,
    "T.device_entry": _device_entry,
    "T.attr": _attr,
    "T.Bind": _bind,
    "T.tvm_thread_allreduce": _allreduce,
}
