"""The intrinsic table (tirc.ir.intrinsics) against its users: the interpreter runs every rule it
names, the printer writes each intrinsic in its declared form, and every name a backend maps to
code is an intrinsic of the table."""

from __future__ import annotations

import inspect

import pytest
from tirc.backends.llvm import builtins as llvm_builtins
from tirc.backends.llvm import events, function
from tirc.backends.llvm import intrinsics as llvm_math
from tirc.backends.nvptx import events as nvptx_events
from tirc.backends.nvptx import math as nvptx_math
from tirc.frontend import parse
from tirc.ir import intrinsics
from tirc.ir.dtype import dtype
from tirc.ir.expr import Call, FloatImm
from tirc.ir.interpreter import gpu as gpu_interpreter
from tirc.ir.interpreter import intrin as interpreter_intrin
from tirc.ir.printer import print_module, print_node
from tirc.ir.stmt import Evaluate

F32 = dtype("float32")


def test_every_rule_the_table_names_is_run_by_an_interpreter() -> None:
    rules = set(interpreter_intrin.RULES) | set(gpu_interpreter.GPU_RULES)
    named = {i.interpreted for i in intrinsics.INTRINSICS.values() if i.interpreted}
    assert named <= rules, sorted(named - rules)
    assert rules <= named, sorted(rules - named)  # no rule for an intrinsic that does not exist


def test_names_are_declared_once_and_constants_match() -> None:
    constants = {v for k, v in vars(intrinsics).items() if k.isupper() and isinstance(v, str)}
    assert {n for n in intrinsics.INTRINSICS if not n.isidentifier() or "." in n} <= constants
    with pytest.raises(ValueError, match="declared twice"):
        intrinsics._declare("event_wait", (), "int32", intrinsics.STATEMENT, None, "again")


def test_math_intrinsics_are_the_named_math_rules() -> None:
    assert intrinsics.MATH_INTRINSICS["fma"] == 3
    assert intrinsics.MATH_INTRINSICS["pow"] == 2
    assert all(intrinsics.INTRINSICS[n].printed == intrinsics.NAMED
               for n in intrinsics.MATH_INTRINSICS)


@pytest.mark.parametrize("name", sorted(intrinsics.INTRINSICS))
def test_printer_writes_the_declared_form(name: str) -> None:
    info = intrinsics.INTRINSICS[name]
    call = Call(name, tuple(FloatImm(1.0, F32) for _ in range(info.arity)), F32)
    text = print_node(Evaluate(call)).strip()
    if info.printed == intrinsics.STATEMENT:
        assert text.startswith(f"T.{name}(")
    elif info.printed == intrinsics.NAMED:
        assert text.startswith(f"T.evaluate(T.{name}(")
    elif info.printed == intrinsics.OPERATOR:
        symbol = {"shift_left": "<<", "shift_right": ">>", "bitwise_and": "&",
                  "bitwise_or": "|", "bitwise_xor": "^", "bitwise_not": "~"}[name]
        assert text.startswith("T.evaluate(") and symbol in text
    elif info.printed == intrinsics.TYPED:
        assert text.startswith(f'T.evaluate(T.{name}("float32"')
    else:
        assert text.startswith(f'T.evaluate(T.call_intrin("float32", "{name}"')


def _methods(cls: type, prefix: str) -> set[str]:
    return {n[len(prefix):] for n, _ in inspect.getmembers(cls, inspect.isfunction)
            if n.startswith(prefix)}


def test_llvm_backend_maps_only_intrinsics_of_the_table() -> None:
    table = set(intrinsics.INTRINSICS)
    calls = {"tirc." + n for n in _methods(function.FunctionCodegen, "call_")}
    builtins = _methods(function.FunctionCodegen, "builtin_")
    math = set(llvm_math.LLVM_FLOAT_INTRINSICS) | set(llvm_math.LIBM_FUNCTIONS) | \
        set(llvm_math.EXPANDED)
    math -= {"min", "max"}  # the BinOps' float min/max share the table
    for group in (calls, builtins, set(events.OPS), set(llvm_builtins.NO_OPS), math):
        assert group <= table, sorted(group - table)


def test_nvptx_backend_maps_only_intrinsics_of_the_table() -> None:
    table = set(intrinsics.INTRINSICS)
    assert set(nvptx_events.OPS) <= table
    assert set(nvptx_math.FLOAT_MATH) <= table, sorted(set(nvptx_math.FLOAT_MATH) - table)


def test_frontend_parses_every_statement_intrinsic() -> None:
    from tirc.frontend.stmt_calls import STMT_CALLS

    statements = {n for n, i in intrinsics.INTRINSICS.items()
                  if i.printed == intrinsics.STATEMENT}
    assert {f"T.{n}" for n in statements} <= set(STMT_CALLS)


def test_device_namespaces_are_gpu_intrinsics_of_any_name() -> None:
    info = intrinsics.intrinsic("ptx.mov.b64")
    assert info is not None and info.device == intrinsics.GPU and info.max_arity is None
    assert intrinsics.intrinsic("ptx") is None and intrinsics.intrinsic("no_such") is None
    assert intrinsics.INTRINSICS["tvm_mma_sync"].device == intrinsics.GPU
    assert intrinsics.INTRINSICS["vscale"].device == intrinsics.SCALABLE


def test_declared_dtype_follows_the_result_rule() -> None:
    f32x4 = dtype("float32x4")
    assert intrinsics.INTRINSICS["exp"].declared_dtype([F32]) is None
    assert str(intrinsics.INTRINSICS["isnan"].declared_dtype([f32x4])) == "boolx4"
    assert str(intrinsics.INTRINSICS["call_extern"].declared_dtype([])) == "void"
    assert str(intrinsics.INTRINSICS["address_of"].declared_dtype([F32])) == "handle"


def test_warp_shuffle_has_its_value_dtype_and_activemask_uint32() -> None:
    """As TVM's T.tvm_warp_shuffle*(mask, value, ...) (call_intrin(value.dtype, ...)): with no
    `dtype=` the result is the shuffled value's dtype (it was void, and a store refused it);
    the printed form needs no `dtype=` and reads back the same."""
    src = """
@T.prim_func
def f(A: T.Buffer((32,), "float16"), B: T.Buffer((32,), "float16")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        mask: T.uint32 = T.tvm_warp_activemask()
        B[tx] = T.tvm_warp_shuffle_down(mask, A[tx], 1, 32, 32) + T.tvm_warp_shuffle(
            mask, A[tx], 0, 32, 32)
"""
    text = print_module(parse(src, "<test>"))
    assert "mask: T.uint32 = T.tvm_warp_activemask()" in text
    assert "T.tvm_warp_shuffle_down(mask, A[tx], 1, 32, 32) + T.tvm_warp_shuffle(" in text
    assert "dtype=" not in text
    assert print_module(parse(text, "<printed>")) == text
    shuffle = intrinsics.INTRINSICS["tvm_warp_shuffle_xor"]
    assert str(shuffle.declared_dtype([dtype("uint32"), dtype("int8"), F32])) == "int8"


def test_frontend_parses_every_intrinsic_written_by_name() -> None:
    from tirc.frontend.tir_calls import BUILTINS

    for name, info in intrinsics.INTRINSICS.items():
        if info.printed in (intrinsics.NAMED, intrinsics.TYPED) and name not in BUILTINS:
            operands = ", ".join('"f"' if "str" in info.operand_kind(k) else
                                 ("x" if info.numeric == "float" or info.operand_kind(k) != "int"
                                  else "i") for k in range(info.arity))
            lead = '"float32", ' if info.printed == intrinsics.TYPED else ""
            if info.interpreted == "halves":  # vector operands; the result has half or twice
                operands = ", ".join(["T.Broadcast(x, 4)"] * info.arity)
                lead = '"float32x2", ' if info.arity == 1 else '"float32x8", '
            src = (f"@T.prim_func\ndef f(x: T.float32, i: T.int32):\n"
                   f"    T.evaluate(T.{name}({lead}{operands}))\n")
            mod = parse(src, "<test>")
            text = print_module(mod)
            assert f"T.{name}(" in text, (name, text)
            assert print_module(parse(text, "<printed>")) == text, name
