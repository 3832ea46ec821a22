"""An IRBuilder that writes less integer arithmetic: constants folded, repeats reused.

Index arithmetic is emitted per access, so a body reads `i * 64 + k` for every load and store
that uses it, and a loop written out as copies (`straight_line_loop`) multiplies `0 * 16` with
its variable a constant. LLVM removes all of it, but only after the module was built in
Python, printed, parsed and run through its early passes: about a third of the instructions of
a vectorized kernel. `NumberingBuilder` folds integer operations whose operands are constants
and, within one basic block, returns the earlier instruction for a pure integer operation
(arithmetic, shifts, compares, integer casts, address computations) on the same operands with
the same flags: local value numbering. Only while appending at a block's end, so the earlier
instruction always precedes the use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llvmlite import ir

_INT_OPS: dict[str, Callable[[int, int], int]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "and_": lambda a, b: a & b,
    "or_": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
}


def _int_constant(v: ir.Value) -> int | None:
    """The value of a scalar integer constant (None for anything else)."""
    if isinstance(v, ir.Constant) and isinstance(v.type, ir.IntType) and \
            type(v.constant) is int:
        return v.constant
    return None


def _operand_key(v: Any) -> Any:
    """What identifies an operand: an integer constant by width and value, anything else by
    identity (every operand stays alive in the module, so an id is never reused)."""
    c = _int_constant(v)
    if c is not None:
        return (v.type.width, c)
    return id(v)


def _signed(value: int, bits: int) -> int:
    """`value` wrapped to a signed `bits`-bit integer."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if bits > 1 and value >= 1 << (bits - 1) else value


class NumberingBuilder(ir.IRBuilder):
    """`ir.IRBuilder` with constant folding and local value numbering of integer operations
    (see the module docstring); every other instruction is emitted as the base class does."""

    def __init__(self, block: ir.Block | None = None) -> None:
        super().__init__(block)
        self._numbers: dict[tuple[Any, ...], ir.Value] = {}

    def _appending(self) -> bool:
        """Whether instructions go to the end of the current block."""
        return self._anchor == len(self._block.instructions)

    def _numbered(self, key: tuple[Any, ...], emit: Callable[[], ir.Value]) -> ir.Value:
        """The earlier value of `key` in this block, or `emit()` remembered under it."""
        if not self._appending():
            return emit()
        full = (id(self._block), *key)
        hit = self._numbers.get(full)
        if hit is not None:
            return hit
        value = self._numbers[full] = emit()
        return value

    def _int_binop(self, op: str, lhs: ir.Value, rhs: ir.Value, name: str,
                   flags: Any) -> ir.Value:
        base = getattr(ir.IRBuilder, op)
        if lhs.type != rhs.type:
            return base(self, lhs, rhs, name, flags)  # the base class's error
        a, b = _int_constant(lhs), _int_constant(rhs)
        if a is not None and b is not None:
            # Wrapped: where `nsw`/`nuw` would make an overflow poison, any value refines it.
            return ir.Constant(lhs.type, _signed(_INT_OPS[op](a, b), lhs.type.width))
        if isinstance(lhs.type, ir.IntType):
            if b == 0 and op in ("add", "sub", "or_", "xor") or b == 1 and op == "mul":
                return lhs
            if a == 0 and op in ("add", "or_", "xor") or a == 1 and op == "mul":
                return rhs
        key = (op, tuple(flags), _operand_key(lhs), _operand_key(rhs))
        return self._numbered(key, lambda: base(self, lhs, rhs, name, flags))

    def add(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        return self._int_binop("add", lhs, rhs, name, flags)

    def sub(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        return self._int_binop("sub", lhs, rhs, name, flags)

    def mul(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        return self._int_binop("mul", lhs, rhs, name, flags)

    def and_(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        return self._int_binop("and_", lhs, rhs, name, flags)

    def or_(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        return self._int_binop("or_", lhs, rhs, name, flags)

    def xor(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        return self._int_binop("xor", lhs, rhs, name, flags)

    def _shift(self, op: str, lhs: ir.Value, rhs: ir.Value, name: str, flags: Any) -> ir.Value:
        base = getattr(ir.IRBuilder, op)
        key = (op, tuple(flags), _operand_key(lhs), _operand_key(rhs))
        return self._numbered(key, lambda: base(self, lhs, rhs, name, flags))

    def shl(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        return self._shift("shl", lhs, rhs, name, flags)

    def ashr(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        return self._shift("ashr", lhs, rhs, name, flags)

    def lshr(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Any = ()) -> ir.Value:
        return self._shift("lshr", lhs, rhs, name, flags)

    def icmp_signed(self, cmpop: str, lhs: ir.Value, rhs: ir.Value, name: str = "") -> ir.Value:
        key = ("icmp_s", cmpop, _operand_key(lhs), _operand_key(rhs))
        return self._numbered(key, lambda: ir.IRBuilder.icmp_signed(self, cmpop, lhs, rhs, name))

    def icmp_unsigned(self, cmpop: str, lhs: ir.Value, rhs: ir.Value,
                      name: str = "") -> ir.Value:
        key = ("icmp_u", cmpop, _operand_key(lhs), _operand_key(rhs))
        return self._numbered(key,
                              lambda: ir.IRBuilder.icmp_unsigned(self, cmpop, lhs, rhs, name))

    def _int_cast(self, op: str, val: ir.Value, typ: ir.Type, name: str) -> ir.Value:
        if val.type == typ:
            return val
        c = _int_constant(val)
        if c is not None and isinstance(typ, ir.IntType):
            if op == "sext":
                return ir.Constant(typ, _signed(c, val.type.width))
            if op == "zext":
                return ir.Constant(typ, _signed(c & ((1 << val.type.width) - 1), typ.width))
            return ir.Constant(typ, _signed(c, typ.width))
        base = getattr(ir.IRBuilder, op)
        key = (op, str(typ), _operand_key(val))
        return self._numbered(key, lambda: base(self, val, typ, name))

    def sext(self, val: ir.Value, typ: ir.Type, name: str = "") -> ir.Value:
        return self._int_cast("sext", val, typ, name)

    def zext(self, val: ir.Value, typ: ir.Type, name: str = "") -> ir.Value:
        return self._int_cast("zext", val, typ, name)

    def trunc(self, val: ir.Value, typ: ir.Type, name: str = "") -> ir.Value:
        return self._int_cast("trunc", val, typ, name)

    def gep(self, ptr: ir.Value, indices: Any, inbounds: bool = False, name: str = "",
            source_etype: ir.Type | None = None) -> ir.Value:
        key = ("gep", inbounds, str(source_etype), _operand_key(ptr),
               *(_operand_key(i) for i in indices))
        return self._numbered(key, lambda: ir.IRBuilder.gep(
            self, ptr, indices, inbounds=inbounds, name=name, source_etype=source_etype))
