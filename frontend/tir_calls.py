"""`T.<name>(...)` in expressions: typed literals, casts, math intrinsics, select, vectors.

Each builtin has a signature (checked arity and keywords) and a handler; a name that is not
here, not a dtype, and not a statement-level builtin is an `unsupported` error.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from tirc.frontend import syntax as S
from tirc.frontend.context import spanned
from tirc.frontend.prim_calls import is_module_call, prim_call
from tirc.frontend.signature import Args, Sig, check_call
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DType, DTypeError
from tirc.ir.expr import (
    Broadcast,
    Call,
    FloatImm,
    IntImm,
    IRTypeError,
    Let,
    PrimExpr,
    Ramp,
    StringImm,
    Var,
    cast,
    const,
    if_then_else,
    select,
    shuffle,
    unify,
)
from tirc.ir.intrinsics import (
    INTRINSICS,
    LIKELY,
    MATH_INTRINSICS,
    NAMED,
    OPERATOR,
    STATEMENT,
    TYPED,
    VECTOR_COMBINE,
    Intrinsic,
    intrinsic,
)

if TYPE_CHECKING:
    from tirc.frontend.builder_expr import ExprBuilder

Handler = Callable[["ExprBuilder", S.Call, Args, str], PrimExpr]

# T.* builtins that are statements or declarations, never values (the intrinsics written as
# statements among them).
STATEMENT_BUILTINS = {
    "grid", "serial", "parallel", "vectorized", "unroll", "thread_binding", "block", "sblock",
    "init", "reads", "writes", "where", "block_attr", "sblock_attr", "alloc_buffer", "decl_buffer",
    "alloc_local", "alloc_shared", "match_buffer", "func_attr", "evaluate", "launch_thread",
    "env_thread", "event_tensor", "attr", "Buffer", "handle", "prim_func", "axis.spatial",
    "axis.reduce", "axis.opaque", "axis.remap", "axis.S", "axis.R",
} | {name for name, info in INTRINSICS.items() if info.printed == STATEMENT}
UNSUPPORTED_HINTS = {
    "call_packed": "T.call_packed (a packed function of TVM's runtime; call a C function "
                   "with T.call_extern)",
}
FLOAT32 = DType("float", 32)
VOID = DType("void", 0)
_FLOAT_MAX = {16: 65504.0, 32: 3.4028234663852886e38, 64: 1.7976931348623157e308}
_BFLOAT16_MAX = 3.3895313892515355e38


def call_tir(b: ExprBuilder, call: S.Call) -> PrimExpr:
    """Build the value of a call `T.name(...)`."""
    name = S.dotted(call.func)
    if is_module_call(b, call):
        return prim_call(b, call)
    if name is None or not name.startswith("T."):
        _not_callable(b, call, name)
    short = name[2:]
    entry = BUILTINS.get(short)
    if entry is not None:
        sig, handler = entry
        return spanned(handler(b, call, check_call(b.ctx, call, name, sig), name), call.span)
    if short in STATEMENT_BUILTINS:
        b.ctx.error(f"{name}(...) cannot be used in an expression", call.span)
    if short in MATH_INTRINSICS:
        return spanned(_math(b, call, name, short), call.span)
    info = intrinsic(short)
    if info is not None and info.printed in (NAMED, TYPED, OPERATOR):
        return spanned(_intrinsic(b, call, name, info), call.span)
    if short in UNSUPPORTED_HINTS:
        b.ctx.unsupported(UNSUPPORTED_HINTS[short], call.func.span)
    try:
        dt = DType.parse(short)
    except DTypeError:
        b.ctx.unsupported(name, call.func.span)
    return spanned(_typed(b, call, name, dt), call.span)


def _not_callable(b: ExprBuilder, call: S.Call, name: str | None) -> None:
    if isinstance(call.func, S.Name):
        value = b.scope.lookup(call.func.id)
        if value is None:
            if call.func.id in ("range", "min", "max", "abs", "int", "float", "len"):
                b.ctx.unsupported(f"Python builtin '{call.func.id}' here", call.func.span)
            b.scope.require(call.func.id, call.func.span)
        b.ctx.error(f"'{call.func.id}' is not a function", call.func.span)
    if name is not None and name.startswith("R."):
        b.ctx.error(f"graph-level operator {name} in a loop function", call.func.span)
    b.ctx.error("this is not a function that can be called here", call.func.span)


# ---- typed literals and casts -------------------------------------------------------------


def _typed(b: ExprBuilder, call: S.Call, name: str, dt: DType) -> PrimExpr:
    args = check_call(b.ctx, call, name, Sig(0, 1))
    if not args.pos:
        b.ctx.error(f"{name}() declares a symbolic variable; write it as "
                    f"`n = {name}()` on its own line", call.span)
    arg = args.pos[0]
    from tirc.frontend.builder_expr import literal_value

    value = literal_value(arg)
    if isinstance(value, str):
        special = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
        if value not in special or not dt.is_float:
            b.ctx.error(f"{name} of the string \"{value}\"", arg.span)
        return const(special[value], dt)
    if isinstance(value, (bool, int, float)) and value is not None:
        if isinstance(value, float) and not dt.is_float:
            b.ctx.error(f"{name} of a float literal; use T.Cast(\"{dt}\", ...) to convert",
                        arg.span)
        if dt.is_bool:
            return IntImm(int(bool(value)), dt)
        if dt.is_int and not _int_fits(int(value), dt):
            b.ctx.error(f"{value} does not fit in {dt}", arg.span)
        return const(value, dt)
    return cast(dt, b.expr(arg))


def _int_fits(v: int, dt: DType) -> bool:
    if dt.kind == "uint":
        return 0 <= v < 2**dt.bits
    return -(2 ** (dt.bits - 1)) <= v < 2 ** (dt.bits - 1)


def _cast(b: ExprBuilder, call: S.Call, a: Args, name: str) -> PrimExpr:
    dt_node = a.kw.get("dtype")
    if len(a.pos) + (dt_node is not None) != 2:
        b.ctx.error(f"{name} takes a value and a dtype", call.span)
    if name == "T.Cast":
        dt_node, value = (a.pos[0], a.pos[1]) if dt_node is None else (dt_node, a.pos[0])
    else:
        value, dt_node = a.pos[0], dt_node if dt_node is not None else a.pos[1]
    return cast(b.dtype_arg(dt_node), b.expr(value))


def _limit(b: ExprBuilder, call: S.Call, a: Args, name: str) -> PrimExpr:
    """T.max_value / T.min_value of a dtype; T.infinity of a float dtype."""
    dt = b.dtype_arg(a.pos[0])
    if name == "T.infinity":
        if not dt.is_float:
            b.ctx.error(f"T.infinity of {dt}", a.pos[0].span)
        return FloatImm(math.inf, dt)
    hi = name == "T.max_value"
    if dt.is_float:
        top = _BFLOAT16_MAX if dt.kind == "bfloat" else _FLOAT_MAX[dt.bits]
        return FloatImm(top if hi else -top, dt)
    if dt.is_bool:
        return IntImm(1 if hi else 0, dt)
    if dt.is_int:
        if dt.kind == "uint":
            return IntImm(2**dt.bits - 1 if hi else 0, dt)
        return IntImm(2 ** (dt.bits - 1) - 1 if hi else -(2 ** (dt.bits - 1)), dt)
    b.ctx.error(f"{name} of {dt}", a.pos[0].span)


# ---- arithmetic ---------------------------------------------------------------------------

_BINARY = {"max": "max", "min": "min", "floordiv": "floordiv", "floormod": "floormod",
           "truncdiv": "truncdiv", "truncmod": "truncmod", "Div": "div", "FloorDiv": "floordiv",
           "FloorMod": "floormod", "Max": "max", "Min": "min",
           # TVM's node constructors, as its tests write them
           "Add": "add", "Sub": "sub", "Mul": "mul", "Mod": "truncmod", "EQ": "eq", "NE": "ne",
           "LT": "lt", "LE": "le", "GT": "gt", "GE": "ge", "And": "and", "Or": "or"}


def _binary(b: ExprBuilder, call: S.Call, a: Args, name: str) -> PrimExpr:
    op = _BINARY[name[2:]]
    return b.binop(op, b.expr(a.pos[0]), b.expr(a.pos[1]), call.span)


# TVM 0.27's node constructors of the bitwise and logical operators: `T.LShift(x, 2)` is
# `x << 2`, `T.BitwiseNot(x)` is `~x`, `T.Not(c)` is `not c`.
_BITWISE_NODES = {"LShift": "<<", "RShift": ">>", "BitwiseAnd": "&", "BitwiseOr": "|",
                  "BitwiseXor": "^"}
_UNARY_NODES = {"BitwiseNot": "~", "Not": "not"}


def _bitwise_node(b: ExprBuilder, call: S.Call, a: Args, name: str) -> PrimExpr:
    return b.expr(S.BinOp(call.span, _BITWISE_NODES[name[2:]], a.pos[0], a.pos[1]))


def _unary_node(b: ExprBuilder, call: S.Call, a: Args, name: str) -> PrimExpr:
    return b.expr(S.UnaryOp(call.span, _UNARY_NODES[name[2:]], a.pos[0]))


def _ceildiv(b: ExprBuilder, call: S.Call, a: Args, name: str) -> PrimExpr:
    """`T.ceildiv(x, y)` is `(x + (y - 1)) // y` on integers."""
    x, y = b.index(a.pos[0], "T.ceildiv's operand"), b.index(a.pos[1], "T.ceildiv's operand")
    bump = b.binop("sub", y, 1, call.span)
    return b.binop("floordiv", b.binop("add", x, bump, call.span), y, call.span)


def _math(b: ExprBuilder, call: S.Call, name: str, op: str) -> PrimExpr:
    n = MATH_INTRINSICS[op]
    a = check_call(b.ctx, call, name, Sig(n, n, ("dtype",)))
    if "dtype" in a.kw:  # TVM's printers wrote `T.exp(x, dtype="float32")`: the result's dtype
        out = _math(b, S.Call(call.span, call.func, call.args, []), name, op)
        return cast(b.dtype_arg(a.kw["dtype"]), out)
    args = [b.expr(x) for x in a.pos]
    if op == "ldexp" and args[0].dtype.is_float and args[1].dtype.is_int:
        args[1] = cast(args[0].dtype, args[1])  # TVM's ldexp(x, n) takes an integer exponent
    args = [_float_arg(b, e, node, name, op) for e, node in zip(args, a.pos)]
    try:
        for i in range(1, len(args)):
            args[0], args[i] = unify(args[0], args[i])
    except IRTypeError as err:
        b.ctx.error(str(err), call.span)
    args = [cast(args[0].dtype, x) for x in args]
    return Call(op, tuple(args), args[0].dtype)


def _float_arg(b: ExprBuilder, e: PrimExpr, node: S.Expr, name: str, op: str) -> PrimExpr:
    if e.dtype.is_float or (op == "abs" and e.dtype.is_int):
        return e
    if isinstance(e, IntImm) and not e.dtype.is_bool:
        return FloatImm(float(e.value), DType("float", 32), span=e.span)
    b.ctx.error(f"{name} needs a float argument, got {e.dtype}", node.span)


# ---- selection ----------------------------------------------------------------------------


def _select(b: ExprBuilder, call: S.Call, a: Args, name: str) -> PrimExpr:
    cond = b.condition(a.pos[0], f"the condition of {name}")
    t, f = b.expr(a.pos[1]), b.expr(a.pos[2])
    if "dtype" in a.kw:
        dt = b.dtype_arg(a.kw["dtype"])
        t, f = cast(dt, t), cast(dt, f)
    elif t.dtype.lanes == f.dtype.lanes and t.dtype.is_float != f.dtype.is_float:
        # TVM's BinaryOpMatchTypes: the other side becomes the float side's type
        t, f = (t, cast(t.dtype, f)) if t.dtype.is_float else (cast(f.dtype, t), f)
    try:
        return if_then_else(cond, t, f) if name == "T.if_then_else" else select(cond, t, f)
    except IRTypeError as err:
        b.ctx.error(str(err), call.span)


def _assume(b: ExprBuilder, call: S.Call, a: Args, name: str) -> PrimExpr:
    cond = b.condition(a.pos[0], "the argument of T.assume")
    return Call("assume", (cond,), DType("int", 32))


def _thread_invariant(b: ExprBuilder, call: S.Call, a: Args, name: str) -> PrimExpr:
    """`T.tvm_thread_invariant(cond)`: TVM's mark that every thread of a GPU block computes
    the same `cond`; a hint only, so the condition itself."""
    return b.condition(a.pos[0], "the argument of T.tvm_thread_invariant")


def _likely(b: ExprBuilder, call: S.Call, a: Args, name: str) -> PrimExpr:
    cond = b.condition(a.pos[0], "the argument of T.likely")
    if "dtype" in a.kw and b.dtype_arg(a.kw["dtype"]) != cond.dtype:  # as TVM prints it
        b.ctx.error(f"T.likely is a {cond.dtype} condition, not {b.dtype_arg(a.kw['dtype'])}",
                    a.kw["dtype"].span)
    return Call(LIKELY, (cond,), cond.dtype)


# ---- vectors ------------------------------------------------------------------------------


def _ramp(b: ExprBuilder, call: S.Call, a: Args, name: str) -> PrimExpr:
    base, stride = b.index(a.pos[0], "ramp base"), b.index(a.pos[1], "ramp stride")
    lanes = b.int_literal(a.pos[2], "the lane count")
    if lanes < 1:
        b.ctx.error("the lane count must be positive", a.pos[2].span)
    try:
        base, stride = unify(base, stride)
    except IRTypeError as err:
        b.ctx.error(str(err), call.span)
    return Ramp(base, stride, lanes, base.dtype.with_lanes(lanes))


def _broadcast(b: ExprBuilder, call: S.Call, a: Args, name: str) -> PrimExpr:
    value = b.expr(a.pos[0])
    lanes = b.int_literal(a.pos[1], "the lane count")
    if lanes < 1 or value.dtype.lanes != 1:
        b.ctx.error("T.Broadcast takes a scalar and a positive lane count", call.span)
    return Broadcast(value, lanes, value.dtype.with_lanes(lanes))


def _shuffle(b: ExprBuilder, call: S.Call, a: Args, name: str) -> PrimExpr:
    """`T.Shuffle([vectors], [indices])`: lanes of the concatenated vectors at constant
    indices (TVM's concatenation and lane extraction)."""
    vec_node, idx_node = a.pos
    if not isinstance(vec_node, (S.List, S.Tuple)) or not vec_node.elts:
        b.ctx.error(f"{name}'s first argument is a list of vectors, such as [x, y]",
                    vec_node.span)
    if not isinstance(idx_node, (S.List, S.Tuple)) or not idx_node.elts:
        b.ctx.error(f"{name}'s second argument is a list of lane indices, such as [0, 1]",
                    idx_node.span)
    vectors = [b.expr(x) for x in vec_node.elts]
    total = sum(v.dtype.lanes for v in vectors)
    indices: list[int] = []
    for node in idx_node.elts:
        index = b.expr(node)
        if not isinstance(index, IntImm) or not index.dtype.is_int:
            b.ctx.error(f"a lane index of {name} must be a constant integer", node.span)
        if not 0 <= index.value < total:
            b.ctx.error(f"lane index {index.value} of {name} is out of range: the vectors "
                        f"have {total} lane(s)", node.span)
        indices.append(index.value)
    try:
        return shuffle(vectors, indices)
    except IRTypeError as err:
        b.ctx.error(str(err), call.span)


# ---- generic calls and lets ---------------------------------------------------------------


def _call_intrin(b: ExprBuilder, call: S.Call, a: Args, name: str) -> PrimExpr:
    dt = b.dtype_arg(a.pos[0])
    op = b.str_literal(a.pos[1], "the intrinsic name")
    args = tuple(_intrin_arg(b, x) for x in a.pos[2:])
    return Call(op, args, dt)


def _intrin_arg(b: ExprBuilder, node: S.Expr) -> PrimExpr:
    if isinstance(node, S.Constant) and node.kind == "str":
        return StringImm(str(node.value), span=node.span)
    return b.expr(node)


def _let(b: ExprBuilder, call: S.Call, a: Args, name: str) -> PrimExpr:
    where = a.kw.get("where")
    if where is None or not isinstance(where, S.Dict) or len(where.keys) != 1 \
            or not isinstance(where.keys[0], S.Name):
        b.ctx.error("T.Let takes a body and where={var: value}", call.span)
    key = where.keys[0]
    assert isinstance(key, S.Name)
    value = b.expr(where.values[0])
    var = Var(key.id, value.dtype, span=key.span)
    with b.scope.frame():
        b.scope.define(key.id, var, key.span)
        body = b.expr(a.pos[0])
    return Let(var, value, body, body.dtype)


def _intrinsic(b: ExprBuilder, call: S.Call, name: str, info: Intrinsic) -> PrimExpr:
    """A call of an intrinsic of the table (tirc.ir.intrinsics) that is written by name:
    operands as the table declares them, the dtype first where it is `typed`, or `dtype=`."""
    a = check_call(b.ctx, call, name, Sig(0, None, ("dtype", "ty")))
    pos = list(a.pos)
    if "dtype" in a.kw and "ty" in a.kw:
        b.ctx.error(f"{name} takes its result dtype once (dtype= or ty=)", a.kw["ty"].span)
    dt_node = a.kw.get("dtype", a.kw.get("ty"))  # TVM main writes ty= for dtype=
    dt: DType | None = b.dtype_arg(dt_node) if dt_node is not None else None
    inferred = info.interpreted == "halves" and len(pos) == info.arity
    if info.printed == TYPED and dt is None and not inferred:
        if not pos:
            b.ctx.error(f"{name} needs the result dtype as its first argument", call.span)
        dt = b.dtype_arg(pos.pop(0))
    if len(pos) < info.arity or (info.max_arity is not None and len(pos) > info.max_arity):
        want = Sig(info.arity, info.max_arity).describe()
        b.ctx.error(f"{name} takes {want}, got {len(pos)}", call.span)
    args = [_intrinsic_operand(b, x, info, k, name) for k, x in enumerate(pos)]
    kind = info.numeric
    if kind is not None and args:
        if kind == "float":
            args = [FloatImm(float(x.value), FLOAT32) if isinstance(x, IntImm)
                    and not x.dtype.is_bool else x for x in args]
        try:
            for i in range(1, len(args)):
                args[0], args[i] = unify(args[0], args[i])
        except IRTypeError as err:
            b.ctx.error(str(err), call.span)
        args = [cast(args[0].dtype, x) for x in args]
        common = args[0].dtype
        if (kind == "int" and not common.is_int) or (kind == "float" and not common.is_float):
            b.ctx.error(f"{name} needs {kind} operands, got {common}", call.span)
    if info.interpreted == "halves":
        return _halves(b, name, info, args, dt)
    if info.result == "operand":
        out = Call(info.name, tuple(args), args[0].dtype)
        return cast(dt, out) if dt is not None and dt != out.dtype else out
    declared = info.declared_dtype([x.dtype for x in args])
    return Call(info.name, tuple(args), dt if dt is not None else declared or VOID)


def _halves(b: ExprBuilder, name: str, info: Intrinsic, args: list[PrimExpr],
            dt: DType | None) -> PrimExpr:
    """T.vectorlow/T.vectorhigh (half a vector) and T.vectorcombine (two of one dtype joined):
    the result is the operand's element type with half or twice its lanes; a stated dtype
    (TVM states it first) must be that one."""
    first = args[0].dtype
    if first.lanes < 2:
        b.ctx.error(f"{name} needs a vector operand, got {first}", args[0].span)
    if info.name == VECTOR_COMBINE:
        if args[1].dtype != first:
            b.ctx.error(f"{name} joins two vectors of one dtype, got {first} and "
                        f"{args[1].dtype}", args[1].span)
        want = first.with_lanes(first.lanes * 2)
    else:
        if first.lanes % 2:
            b.ctx.error(f"{name} needs an even number of lanes, got {first}", args[0].span)
        want = first.with_lanes(first.lanes // 2)
    if dt is not None and dt != want:
        b.ctx.error(f"{name} of {first} is {want}, not {dt}", args[0].span)
    return Call(info.name, tuple(args), want)


def _intrinsic_operand(b: ExprBuilder, node: S.Expr, info: Intrinsic, k: int,
                       name: str) -> PrimExpr:
    """Operand `k`: a value, a string literal where the table allows one (symbol names, for
    calls out of the kernel), or a buffer (passed as its storage, as TVM's device
    intrinsics take it)."""
    kind = info.operand_kind(k)
    if isinstance(node, S.Constant) and node.kind == "str":
        if "str" not in kind:
            b.ctx.error(f"{name} takes no string operand here", node.span)
        return StringImm(str(node.value), span=node.span)
    if kind == "str":
        b.ctx.error(f"{name} takes a string literal here (a name)", node.span)
    if isinstance(node, S.Name) and isinstance(b.scope.lookup(node.id), Buffer):
        return b.scope.lookup(node.id).data
    return b.expr(node)


BUILTINS: dict[str, tuple[Sig, Handler]] = {
    "cast": (Sig(1, 2, ("dtype",)), _cast),
    "Cast": (Sig(1, 2, ("dtype",)), _cast),
    "max_value": (Sig(1, 1), _limit),
    "min_value": (Sig(1, 1), _limit),
    "infinity": (Sig(1, 1), _limit),
    "ceildiv": (Sig(2, 2), _ceildiv),
    "Select": (Sig(3, 3), _select),
    "if_then_else": (Sig(3, 3, ("dtype",)), _select),
    "likely": (Sig(1, 1, ("dtype",)), _likely),
    "tvm_thread_invariant": (Sig(1, 1), _thread_invariant),
    "assume": (Sig(1, 1), _assume),
    "Ramp": (Sig(3, 3), _ramp),
    "ramp": (Sig(3, 3), _ramp),
    "Broadcast": (Sig(2, 2), _broadcast),
    "broadcast": (Sig(2, 2), _broadcast),
    "Shuffle": (Sig(2, 2), _shuffle),
    "call_intrin": (Sig(2, None), _call_intrin),
    "Let": (Sig(1, 1, ("where",)), _let),
    **{k: (Sig(2, 2), _binary) for k in _BINARY},
    **{k: (Sig(2, 2), _bitwise_node) for k in _BITWISE_NODES},
    **{k: (Sig(1, 1), _unary_node) for k in _UNARY_NODES},
}


def tir_builtin_names() -> set[str]:
    """Every T.* name an expression may call (for tests and error messages)."""
    return set(BUILTINS) | set(MATH_INTRINSICS)

