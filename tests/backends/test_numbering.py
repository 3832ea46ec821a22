"""NumberingBuilder: integer constants folded, a repeated pure integer operation within a
block reused, nothing reused across blocks or where it would not precede its use; and the
module it builds computes what the plain builder's does."""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import pytest
from llvmlite import ir
from tirc.backends.llvm.numbering import NumberingBuilder

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)


def _function(args: tuple[ir.Type, ...] = (I32, I32)) -> tuple[ir.Module, ir.Function]:
    mod = ir.Module(name="t")
    fn = ir.Function(mod, ir.FunctionType(I32, args), name="f")
    return mod, fn


def _instructions(fn: ir.Function) -> list[str]:
    return [i.opname for bb in fn.blocks for i in bb.instructions]


@pytest.mark.parametrize(("op", "a", "b", "bits", "want"), [
    ("add", 7, 5, 32, 12),
    ("sub", 3, 10, 32, -7),
    ("mul", 0, 16, 32, 0),
    ("mul", 1 << 30, 4, 32, 0),          # wraps like the hardware
    ("add", 127, 1, 8, -128),
    ("and_", -1, 12, 32, 12),
    ("or_", 8, 3, 32, 11),
    ("xor", 5, 5, 64, 0),
])
def test_integer_operations_on_constants_fold(op: str, a: int, b: int, bits: int,
                                              want: int) -> None:
    _, fn = _function()
    builder = NumberingBuilder(fn.append_basic_block("entry"))
    ty = ir.IntType(bits)
    out = getattr(builder, op)(ir.Constant(ty, a), ir.Constant(ty, b), flags=["nsw"]
                               if op in ("add", "sub", "mul") else ())
    assert isinstance(out, ir.Constant) and out.constant == want
    assert _instructions(fn) == []


@pytest.mark.parametrize(("op", "value", "src", "dst", "want"), [
    ("sext", -3, I32, I64, -3),
    ("zext", -1, I8, I32, 255),
    ("trunc", 300, I32, I8, 44),
    ("trunc", 255, I32, I8, -1),
])
def test_integer_casts_of_constants_fold(op: str, value: int, src: ir.IntType,
                                         dst: ir.IntType, want: int) -> None:
    _, fn = _function()
    builder = NumberingBuilder(fn.append_basic_block("entry"))
    out = getattr(builder, op)(ir.Constant(src, value), dst)
    assert isinstance(out, ir.Constant) and out.constant == want


def test_identities_return_the_operand() -> None:
    _, fn = _function()
    builder = NumberingBuilder(fn.append_basic_block("entry"))
    x = fn.args[0]
    assert builder.add(x, ir.Constant(I32, 0)) is x
    assert builder.add(ir.Constant(I32, 0), x) is x
    assert builder.sub(x, ir.Constant(I32, 0)) is x
    assert builder.mul(x, ir.Constant(I32, 1), flags=["nsw"]) is x
    assert builder.mul(ir.Constant(I32, 1), x) is x
    assert _instructions(fn) == []


def test_operands_of_two_types_are_still_an_error() -> None:
    _, fn = _function()
    builder = NumberingBuilder(fn.append_basic_block("entry"))
    with pytest.raises(ValueError, match="same type"):
        builder.add(ir.Constant(I32, 1), ir.Constant(I64, 2))
    with pytest.raises(ValueError, match="same type"):
        builder.add(fn.args[0], ir.Constant(I64, 0))


def test_a_repeat_in_one_block_is_reused_and_nothing_else() -> None:
    _, fn = _function()
    builder = NumberingBuilder(fn.append_basic_block("entry"))
    x, y = fn.args
    first = builder.mul(x, ir.Constant(I32, 64), flags=["nsw"])
    assert builder.mul(x, ir.Constant(I32, 64), flags=["nsw"]) is first
    assert builder.mul(x, ir.Constant(I32, 64)) is not first        # other flags
    assert builder.mul(y, ir.Constant(I32, 64), flags=["nsw"]) is not first
    wide = builder.sext(first, I64)
    assert builder.sext(first, I64) is wide
    assert builder.zext(first, I64) is not wide
    cmp = builder.icmp_signed("<", x, y)
    assert builder.icmp_signed("<", x, y) is cmp
    assert builder.icmp_unsigned("<", x, y) is not cmp
    assert builder.icmp_signed("<=", x, y) is not cmp


def test_nothing_is_reused_across_blocks_or_before_the_end() -> None:
    _, fn = _function()
    entry = fn.append_basic_block("entry")
    builder = NumberingBuilder(entry)
    x, y = fn.args
    first = builder.add(x, y, flags=["nsw"])
    other = fn.append_basic_block("other")
    builder.branch(other)
    builder.position_at_end(other)
    assert builder.add(x, y, flags=["nsw"]) is not first   # entry's value is not this block's
    with builder.goto_block(entry):                         # before entry's terminator
        again = builder.add(x, y, flags=["nsw"])
    assert again is not first
    assert entry.instructions.index(again) < len(entry.instructions) - 1


def test_the_built_function_computes_as_the_plain_builder() -> None:
    """(x * 64 + y) * (x * 64 + y) - (x * 64) with repeats and constants, against Python."""
    mod, fn = _function()
    builder = NumberingBuilder(fn.append_basic_block("entry"))
    x, y = fn.args
    c64 = builder.mul(ir.Constant(I32, 8), ir.Constant(I32, 8))
    s1 = builder.add(builder.mul(x, c64, flags=["nsw"]), y, flags=["nsw"])
    s2 = builder.add(builder.mul(x, c64, flags=["nsw"]), y, flags=["nsw"])
    assert s1 is s2
    out = builder.sub(builder.mul(s1, s2), builder.mul(x, c64, flags=["nsw"]))
    builder.ret(out)
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple().create_target_machine()
    parsed = llvm.parse_assembly(str(mod))
    parsed.verify()
    engine = llvm.create_mcjit_compiler(parsed, target)
    engine.finalize_object()
    f = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)(
        engine.get_function_address("f"))
    for a, b in ((0, 0), (3, -5), (-7, 100), (1000, 1)):
        s = a * 64 + b
        assert f(a, b) == ctypes.c_int32(s * s - a * 64).value
    assert _instructions(fn).count("mul") == 2   # x * 64 once, s * s once
