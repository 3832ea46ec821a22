"""`break` / `continue` and TVM main's `T.break_loop()` / `T.continue_loop()`: both spellings
parse to the same IR (the jump intrinsics as statements), print as TVM main does, print back
as a fixed point, and lower for the CPU."""

from __future__ import annotations

from frontend_support import round_trip
from loop_jump_programs import TVM_LOOP_JUMPS
from tirc import driver
from tirc.frontend import parse
from tirc.ir import IRModule, structural_equal
from tirc.ir.expr import Call
from tirc.ir.intrinsics import BREAK_LOOP, CONTINUE_LOOP
from tirc.ir.loop_jumps import contains_loop_jump, escaping_loop_jumps, jump_kind
from tirc.ir.printer import print_module
from tirc.ir.stmt import Evaluate, For
from tirc.ir.visitor import post_order_visit

# TVM main's printed form of TVM_LOOP_JUMPS.
TVM_SPELLING = '''
from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(1000):
        if i % 13 == 0:
            A[1] = A[1] + T.float32(1.0)
            T.continue_loop()
        if A[0] >= B[0]:
            T.break_loop()
'''




def _jumps(mod: IRModule) -> list[str]:
    found: list[str] = []
    post_order_visit(mod["main"].body, lambda n: found.append(jump_kind(n) or "")
                     if jump_kind(n) else None)
    return found


def test_python_spelling_round_trips_and_lowers() -> None:
    mod = round_trip(TVM_LOOP_JUMPS)
    assert _jumps(mod) == [CONTINUE_LOOP, BREAK_LOOP]
    assert "T.continue_loop()" in print_module(mod) and "T.break_loop()" in print_module(mod)
    driver.lower(mod, "llvm", 2)


def test_tvm_main_spelling_is_the_same_program() -> None:
    mod = round_trip(TVM_SPELLING)
    assert structural_equal(mod, parse(TVM_LOOP_JUMPS))
    assert print_module(mod) == print_module(parse(TVM_LOOP_JUMPS))
    driver.lower(mod, "llvm", 2)


def test_evaluate_of_a_jump_is_the_jump() -> None:
    mod = parse(TVM_SPELLING.replace("T.break_loop()", "T.evaluate(T.break_loop())"))
    assert structural_equal(mod, parse(TVM_SPELLING))


def test_jumps_in_while_unroll_and_nested_loopsround_trip() -> None:
    mod = round_trip('''
from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((16,), "int32")):
    k = T.decl_buffer((1,), "int32")
    while k[0] < 16:
        k[0] = k[0] + 1
        if A[k[0] - 1] == 0:
            continue
        for j in T.unroll(4):
            if j == A[k[0] - 1]:
                break
            for m in range(2):
                if m == j:
                    continue
                A[m] = A[m] + 1
        if A[0] > 100:
            break
''')
    driver.lower(mod, "llvm", 2)


def test_escaping_jumps_are_the_ones_a_loop_body_holds_for_its_loop() -> None:
    mod = parse(TVM_LOOP_JUMPS)
    loop = mod["main"].body
    while not isinstance(loop, For):
        loop = loop.block.body if hasattr(loop, "block") else loop.body  # type: ignore[attr-defined]
    assert len(escaping_loop_jumps(loop.body)) == 2
    assert escaping_loop_jumps(loop) == []  # the loop itself encloses them
    assert contains_loop_jump(loop)
    jump = escaping_loop_jumps(loop.body)[0]
    assert isinstance(jump, Evaluate) and isinstance(jump.value, Call)
