"""Direct calls between loop functions (`Module.sub(A.data, n)`) and `return value`.

A call's callee is a `@T.prim_func` of the same module; its signature is read from the
callee's definition (which may come later in the file) or from the imported function. A
buffer or handle parameter takes a handle (`A.data`, or a buffer's name), a scalar parameter a
value of its dtype (literals adapt). The call is the intrinsic `tirc.call_prim` whose first
operand names the callee and whose dtype is the callee's result dtype (void when none).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tirc.frontend import syntax as S
from tirc.frontend.builder_expr import literal_value
from tirc.frontend.context import spanned
from tirc.ir import intrinsics as intrin
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DType, DTypeError
from tirc.ir.expr import Call, PrimExpr, StringImm, const
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass

if TYPE_CHECKING:
    from tirc.frontend.builder_expr import ExprBuilder

VOID = DType("void", 0)
HANDLE_KINDS = ("buffer", "handle")


@dataclass(frozen=True)
class CalleeParam:
    """One parameter of a callee: its name, `buffer`/`handle`/`scalar`/`unknown`, dtype."""

    name: str
    kind: str
    dtype: DType | None = None


@dataclass(frozen=True)
class CalleeSig:
    """What a direct call of a loop function checks its arguments against."""

    params: tuple[CalleeParam, ...]
    ret_dtype: DType | None


def dtype_named(node: S.Expr | None) -> DType | None:
    """The dtype `T.float32` names, or None."""
    name = S.dotted(node) if node is not None else None
    if name is None or not name.startswith("T."):
        return None
    try:
        return DType.parse(name[2:])
    except DTypeError:
        return None


def return_dtype(node: S.Expr | None) -> DType | None:
    """The result dtype of a `-> T.dtype` annotation (None for none or `-> None`)."""
    if node is None or (isinstance(node, S.Constant) and node.kind == "none"):
        return None
    return dtype_named(node)


def signature_of_def(fn: S.FunctionDef) -> CalleeSig:
    """The call signature of a `@T.prim_func` definition, read from its annotations."""
    params = []
    for p in fn.params:
        ann = p.annotation
        head = ann.func if isinstance(ann, S.Call) else \
            ann.value if isinstance(ann, S.Subscript) else ann
        name = S.dotted(head) if head is not None else None
        if name in ("T.Buffer", "T.Tensor"):
            params.append(CalleeParam(p.name, "buffer"))
        elif name == "T.handle":
            params.append(CalleeParam(p.name, "handle"))
        elif (dt := dtype_named(ann)) is not None and not isinstance(ann, S.Subscript):
            params.append(CalleeParam(p.name, "scalar", dt))
        else:
            params.append(CalleeParam(p.name, "unknown"))
    return CalleeSig(tuple(params), return_dtype(fn.returns))


def signature_of_func(f: PrimFunc) -> CalleeSig:
    """The call signature of an already built (imported) loop function."""
    params = tuple(CalleeParam(p.name, "buffer") if p in f.buffer_map else
                   CalleeParam(p.name, "handle" if p.dtype.is_handle else "scalar", p.dtype)
                   for p in f.params)
    return CalleeSig(params, f.ret_dtype)


def is_module_call(b: ExprBuilder, call: S.Expr | None) -> bool:
    """Whether `call` is `Module.name(...)` / `cls.name(...)` of the module being built."""
    if not isinstance(call, S.Call) or b.module is None:
        return False
    func = call.func
    return isinstance(func, S.Attribute) and isinstance(func.value, S.Name) and \
        func.value.id in {"cls", "Module", b.module.class_name}


def prim_call(b: ExprBuilder, call: S.Call, statement: bool = False) -> PrimExpr:
    """`Module.name(args)`: a checked `tirc.call_prim`; in an expression (not `statement`)
    the callee must return a value."""
    ctx = b.ctx
    func = call.func
    assert isinstance(func, S.Attribute)
    name = func.attr
    module = b.module
    if name not in module.functions:
        ctx.error(f"module has no function '{name}'", func.attr_span)
    if name in module.graph:
        ctx.error(f"'{name}' is a graph function; a loop function can only call loop "
                  "functions", func.attr_span)
    sig: CalleeSig | None = module.prim_sigs.get(name)
    if sig is None:
        ctx.error(f"'{name}' cannot be called from a loop function", func.attr_span)
    if call.keywords:
        ctx.error(f"{func.value.id}.{name} takes positional arguments only",  # type: ignore[attr-defined]
                  call.keywords[0].span)
    n = len(sig.params)
    if len(call.args) != n:
        names = ", ".join(p.name for p in sig.params)
        ctx.error(f"{name} takes {n} argument{'s' if n != 1 else ''} ({names}), got "
                  f"{len(call.args)}", call.span)
    args: list[PrimExpr] = [StringImm(name)]
    for i, (p, node) in enumerate(zip(sig.params, call.args)):
        args.append(_argument(b, name, i, p, node))
    if sig.ret_dtype is None and not statement:
        ctx.error(f"{name} returns no value; call it as a statement", call.span)
    return spanned(Call(intrin.CALL_PRIM, tuple(args), sig.ret_dtype or VOID), call.span)


def _argument(b: ExprBuilder, callee: str, i: int, p: CalleeParam, node: S.Expr) -> PrimExpr:
    """Argument `i` of a call of `callee`, checked against its parameter `p`."""
    where = f"argument {i + 1} ('{p.name}') of {callee}"
    if p.kind in HANDLE_KINDS:
        if isinstance(node, S.Name):
            value: Any = b.scope.lookup(node.id)
            if isinstance(value, Buffer):
                return value.data
        e = b.expr(node)
        if not e.dtype.is_handle:
            b.ctx.error(f"{where}: expected a handle such as A.data, got a value of dtype "
                        f"{e.dtype}", node.span)
        return e
    if p.kind == "scalar" and p.dtype is not None:
        lit = literal_value(node)
        if isinstance(lit, (bool, int, float)) and not isinstance(lit, str):
            if isinstance(lit, float) and not p.dtype.is_float:
                b.ctx.error(f"{where}: expected {p.dtype}, got a float literal", node.span)
            return spanned(const(lit, p.dtype), node.span)
        e = b.expr(node)
        if e.dtype != p.dtype:
            b.ctx.error(f"{where}: expected {p.dtype}, got a value of dtype {e.dtype}",
                        node.span)
        return e
    return b.expr(node)
