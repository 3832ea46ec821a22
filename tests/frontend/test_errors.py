"""Bad input: each case is a CompileError whose diagnostics name the exact place and problem."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tirc.frontend import parse
from tirc.frontend.context import NO_PYTHON
from tirc.ir.diagnostics import MAX_ERRORS, CompileError

# Line 5 is the first body line of `f` in every case that starts with H.
H = ('from tvm.script import tir as T\n\n@T.prim_func\n'
     'def f(A: T.Buffer((8, 8), "float32"), n: T.int32):\n')
G = 'from tvm.script import relax as R\n\n@R.function\ndef main(x: R.Tensor((4,), "float32")):\n'
GC = G.replace("):", ', c: R.Prim("bool")):')  # a graph function with a boolean parameter

CASES: dict[str, tuple[str, list[tuple[int, int, str]]]] = {
    # ---- syntax -------------------------------------------------------------------------
    "missing_colon": (H + "    for i in range(3)\n        pass\n",
                      [(5, 22, "expected ':'")]),
    "unexpected_indent": (H + "    pass\n        pass\n", [(6, 9, "unexpected indent")]),
    "first_line_indented": ("  x = 1\n", [(1, 3, "unexpected indent")]),
    "bad_dedent": (H + "    if n > 1:\n        pass\n      pass\n",
                   [(7, 7, "unindent does not match any outer indentation level")]),
    "no_indented_block": (H + "    if n > 1:\n    pass\n",
                          [(6, 5, "expected an indented block")]),
    "unterminated_string": (H + '    x = "abc\n', [(5, 9, "unterminated string")]),
    "never_closed": (H + "    A[0, 0] = T.exp(1.0\n    pass\n",
                     [(5, 20, "'(' was never closed")]),
    "unmatched_close": (H + "    A[0, 0] = 1.0)\n", [(5, 18, "unmatched ')'")]),
    "mismatched_close": (H + "    A[0, 0] = T.exp(1.0]\n",
                         [(5, 24, "closing ']' does not match '('")]),
    "missing_operand": (H + "    x = \n",
                        [(5, 9, "unexpected end of line, expected an expression")]),
    "stray_character": (H + "    x = 1 $ 2\n", [(5, 11, "unexpected character '$'")]),
    "two_names": (H + "    A[0, 0] = n n\n", [(5, 17, "unexpected name 'n'")]),
    # ---- names and scopes ---------------------------------------------------------------
    "unknown_name": (H + "    A[0, 0] = X[0]\n", [(5, 15, "unknown name 'X'")]),
    "used_before_definition": (H + "    A[y, 0] = 1.0\n    y = 1\n",
                               [(5, 7, "'y' is used before its definition")]),
    "redefinition": (H + "    x = 1\n    x = 2\n    A[x, 0] = 1.0\n",
                     [(6, 5, "redefinition of 'x'")]),
    "duplicate_function": (H + "    pass\n\n@T.prim_func\ndef f():\n    pass\n",
                           [(8, 5, "redefinition of function 'f'")]),
    "buffer_as_value": (H + "    A[0, 0] = A\n",
                        [(5, 15, "buffer 'A' is used as a value; index it as A[...]")]),
    "scalar_indexed": (H + "    n[0] = 1\n", [(5, 5, "'n' is not a buffer")]),
    "no_decorator": ("def f():\n    pass\n",
                     [(1, 5, "function 'f' needs a decorator: @T.prim_func, @R.function or "
                             "@S.schedule")]),
    "parameter_without_type": ("@T.prim_func\ndef f(a):\n    pass\n",
                               [(2, 7, "parameter 'a' needs a type: T.Buffer(...), T.handle "
                                       "or a dtype such as T.int32")]),
    # ---- arity and keywords -------------------------------------------------------------
    "math_arity": (H + "    A[0, 0] = T.exp(1.0, 2.0)\n",
                   [(5, 15, "T.exp takes 1 argument, got 2")]),
    "grid_arity": (H + "    for i in T.grid():\n        pass\n",
                   [(5, 14, "T.grid takes at least 1 argument, got 0")]),
    "unknown_keyword": (H + "    A[0, 0] = T.exp(1.0, foo=1)\n",
                        [(5, 26, "T.exp got an unexpected keyword argument 'foo'")]),
    "grid_targets": (H + "    for i, j in T.grid(2, 3, 4):\n        pass\n",
                     [(5, 9, "T.grid has 3 extents but the loop binds 2 variables")]),
    # ---- rank and dtype -----------------------------------------------------------------
    "rank_store": (H + "    A[0, 0, 1] = 1.0\n",
                   [(5, 5, "buffer 'A' has 2 dimensions, indexed with 3")]),
    "rank_load": (H + "    A[0, 0] = A[1]\n",
                  [(5, 15, "buffer 'A' has 2 dimensions, indexed with 1")]),
    "float_index": (H + "    A[0, 1.5] = 1.0\n",
                    [(5, 10, "buffer index must be an integer, got float32")]),
    "store_dtype": (H + "    A[0, 0] = n\n",
                    [(5, 15, "cannot store a value of dtype int32 into buffer 'A' of dtype "
                             "float32")]),
    "let_dtype": (H + "    x: T.int32 = 1.5\n",
                  [(5, 18, "cannot assign a float literal to 'x' of dtype int32")]),
    "operand_dtypes": (H + "    A[0, 0] = A[0, 0] + T.Cast(\"float64\", n)\n",
                       [(5, 15, "dtype mismatch: float32 and float64")]),
    "unknown_dtype": (H + "    x: T.float33 = 1.0\n", [(5, 8, "unknown dtype 'float33'")]),
    "unknown_buffer_dtype": ('@T.prim_func\ndef f(A: T.Buffer((8,), "flaot32")):\n    pass\n',
                             [(2, 25, "unknown dtype 'flaot32'")]),
    "float_condition": (H + "    if A[0, 0]:\n        A[0, 0] = 1.0\n",
                        [(5, 8, "the condition of 'if' must be bool, got float32")]),
    "and_of_ints": (H + "    if n and n:\n        pass\n",
                    [(5, 8, "'and' needs bool operands, got int32")]),
    "floormod_of_handles": (H + "    A[0, 0] = T.floormod(A.data, A.data)\n",
                            [(5, 15, "'floormod' needs integer or floating-point operands, "
                                     "got handle")]),
    # ---- vector shuffles (T.Shuffle([vectors], [indices])) ----------------------------
    "shuffle_index_out_of_range": (
        H + "    A[0, 0] = T.Shuffle([A[0, 0], A[0, 1]], [2])\n",
        [(5, 46, "lane index 2 of T.Shuffle is out of range: the vectors have 2 lane(s)")]),
    "shuffle_negative_index": (
        H + "    A[0, 0] = T.Shuffle([A[0, 0]], [-1])\n",
        [(5, 37, "lane index -1 of T.Shuffle is out of range: the vectors have 1 lane(s)")]),
    "shuffle_index_not_constant": (
        H + "    A[0, 0] = T.Shuffle([A[0, 0]], [n])\n",
        [(5, 37, "a lane index of T.Shuffle must be a constant integer")]),
    "shuffle_vectors_not_a_list": (
        H + "    A[0, 0] = T.Shuffle(A[0, 0], [0])\n",
        [(5, 25, "T.Shuffle's first argument is a list of vectors, such as [x, y]")]),
    "shuffle_indices_not_a_list": (
        H + "    A[0, 0] = T.Shuffle([A[0, 0]], 0)\n",
        [(5, 36, "T.Shuffle's second argument is a list of lane indices, such as [0, 1]")]),
    "shuffle_element_dtypes": (
        H + "    A[0, 0] = T.Shuffle([A[0, 0], n], [0])\n",
        [(5, 15, "T.Shuffle: vectors of different element dtypes: float32 and int32")]),
    "unknown_scope": ('@T.prim_func\ndef f():\n    B = T.alloc_buffer((4,), scope="texture")\n',
                      [(3, 36, "unknown storage scope 'texture'")]),
    # ---- blocks ---------------------------------------------------------------------------
    "remap_non_loop": (H + '    with T.block("b"):\n        vi = T.axis.remap("S", [n])\n'
                           "        A[vi, 0] = 1.0\n",
                       [(6, 33, "T.axis.remap binds loop variables of enclosing loops")]),
    "remap_kind": (H + '    for i in range(8):\n        with T.block("b"):\n'
                       '            vi = T.axis.remap("X", [i])\n            A[vi, 0] = 1.0\n',
                   [(7, 31, "unknown iteration kind 'X' (expected S or R)")]),
    "reads_outside_block": (H + "    T.reads(A[0, 0])\n",
                            [(5, 5, "T.reads is only allowed directly inside a block")]),
    # ---- unsupported --------------------------------------------------------------------
    "unknown_T": (H + "    A[0, 0] = T.frobnicate(1.0)\n", [(5, 15, "unsupported: T.frobnicate")]),
    "comprehension": (H + "    x = [i for i in range(3)]\n",
                      [(5, 9, "unsupported: comprehensions")]),
    "async_def": ("async def f():\n    pass\n", [(1, 1, "unsupported: 'async'")]),
    "axis_separators": ('@T.prim_func\ndef f(A: T.Buffer((8,), "float32", axis_separators=[1])):'
                        "\n    pass\n",
                        [(2, 52, "axis_separators are increasing axes between 1 and the "
                                 "rank - 1")]),
    "class_in_function": (H + "    class X:\n        pass\n",
                          [(5, 5, "unsupported: class definitions inside a function")]),
    "allocate_condition": (H + '    B = T.allocate([4], "float32", "global", condition=n > 1)\n',
                           [(5, 56, "unsupported: T.allocate with a condition")]),
    "bitwise_operator": (H + "    A[0, 0] = A[0, 0] & 1.0\n",
                         [(5, 15, "bitwise operator on float32 operands")]),
    "break_outside_loop": (H + "    if n > 0:\n        break\n",
                           [(6, 9, "'break' outside a loop")]),
    "continue_in_parallel": (H + "    for i in T.parallel(8):\n        if n > i:\n"
                                 "            continue\n        A[i, 0] = 1.0\n",
                             [(7, 13, "'continue' in a parallel loop (only a serial loop can "
                                      "be left or continued early)")]),
    "break_in_parallel": (H + "    for i in T.parallel(8):\n        for j in range(8):\n"
                              "            A[i, j] = 1.0\n        break\n",
                          [(8, 9, "'break' in a parallel loop (only a serial loop can be left "
                                  "or continued early)")]),
    "break_in_vectorized": (H + "    for i in T.vectorized(8):\n        T.break_loop()\n",
                            [(6, 9, "'break' in a vectorized loop (only a serial loop can be "
                                    "left or continued early)")]),
    "break_in_grid": (H + "    for i, j in T.grid(8, 8):\n        break\n",
                      [(6, 9, "'break' directly inside a loop nest of one 'for' over 2 loops "
                              "is ambiguous (write the loops one 'for' each)")]),
    "break_leaves_block": (H + "    for i in range(8):\n        with T.block(\"b\"):\n"
                               "            T.break_loop()\n",
                           [(7, 13, "'break' cannot leave a block")]),
    "break_as_value": (H + "    for i in range(8):\n        A[0, 0] = T.break_loop()\n",
                       [(6, 19, "T.break_loop(...) cannot be used in an expression")]),
    "break_with_arguments": (H + "    for i in range(8):\n        T.break_loop(1)\n",
                             [(6, 9, "T.break_loop takes 0 arguments, got 1")]),
    "ternary": (H + "    A[0, 0] = 1.0 if n > 0 else 2.0\n",
                [(5, 15, "unsupported: conditional expressions (use T.Select or "
                         "T.if_then_else)")]),
    # ---- graph level, schedules, imports ------------------------------------------------
    "graph_unknown_function": (G + "    y = R.call_tir(Module.nope, (x,), "
                                   'out_sinfo=R.Tensor((4,), "float32"))\n    return y\n',
                               [(5, 27, "module has no function 'nope'")]),
    "graph_no_return": (G + "    y = R.add(x, x)\n",
                        [(4, 5, "graph function 'main' must end with 'return'")]),
    "dataflow_local_escapes": (G + "    with R.dataflow():\n        y = R.add(x, x)\n"
                                   "        z = R.add(y, y)\n        R.output(z)\n    return y\n",
                               [(9, 12, "'y' is local to its R.dataflow() block; list it in "
                                        "R.output(...) to use it after the block")]),
    "graph_if_without_else": (GC + "    if c:\n        y = R.add(x, x)\n    return y\n",
                              [(5, 5, "'if' in a graph function needs an 'else' branch: the "
                                      "'if' is a value, which both branches assign")]),
    "graph_if_different_results": (GC + "    if c:\n        y = R.add(x, x)\n    else:\n"
                                        "        z = x\n    return y\n",
                                   [(8, 9, "the branches of 'if' assign different results: "
                                           "'y' in the 'if' branch, 'z' in the 'else' branch "
                                           "(both must end by assigning the same variable)")]),
    "graph_if_branch_without_result": (GC + "    if c:\n        y = R.add(x, x)\n"
                                            "        pass\n    else:\n        y = x\n"
                                            "    return y\n",
                                       [(7, 9, "each branch of an 'if' in a graph function "
                                               "must end by assigning the if's result "
                                               "(`y = ...`)")]),
    "graph_if_in_dataflow": (GC + "    with R.dataflow():\n        if c:\n            y = x\n"
                                  "        else:\n            y = x\n        R.output(y)\n"
                                  "    return y\n",
                             [(6, 9, "'if' inside R.dataflow() (a dataflow block has no "
                                     "control flow; put the 'if' after the block)")]),
    "graph_if_branch_local": (GC + "    if c:\n        t = R.add(x, x)\n        y = t\n"
                                   "    else:\n        y = x\n    return t\n",
                              [(10, 12, "'t' is local to a branch of 'if'; only the variable "
                                        "both branches assign is bound after it")]),
    "schedule_unknown_ref": ('@S.schedule("f")\ndef _(sch):\n    sch.split(i, factors=[2])\n',
                             [(3, 15, "unknown name 'i'"),
                              (1, 13, "schedule for unknown function 'f'")]),
    "missing_import": ("from kernels.nothere import g\n",
                       [(1, 6, "cannot find 'kernels/nothere.tir' for "
                               "'from kernels.nothere import ...'")]),
    # ---- several errors in one file -----------------------------------------------------
    "several_errors": (H + "    A[0, 0] = X\n    A[0, 0] = Y\n    A[0] = 1.0\n",
                       [(5, 15, "unknown name 'X'"), (6, 15, "unknown name 'Y'"),
                        (7, 5, "buffer 'A' has 2 dimensions, indexed with 1")]),
    "errors_in_two_functions": (H + "    A[0, 0] = X\n\n@T.prim_func\ndef g():\n"
                                    "    B = T.alloc_buffer((4,), \"bfloat8\")\n",
                                [(5, 15, "unknown name 'X'"),
                                 (9, 30, "unknown dtype 'bfloat8'")]),
    "no_cascade_after_failed_definition": (H + "    B = T.alloc_buffer((4,), \"f32\")\n"
                                               "    B[0] = 1.0\n    B[1] = 2.0\n",
                                           [(5, 30, "unknown dtype 'f32'")]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input(name: str, diagnostics: Callable[[str], list]) -> None:
    text, expected = CASES[name]
    assert diagnostics(text) == expected


def test_enough_distinct_cases() -> None:
    assert len({msgs[0][2] for _, msgs in CASES.values()}) >= 25


def test_rendering_shows_the_line_and_a_caret() -> None:
    with pytest.raises(CompileError) as info:
        parse(H + "    A[0, 0] = X[0]\n", "render.tir")
    assert info.value.render() == (
        "render.tir:5:15: error: unknown name 'X'\n"
        "    A[0, 0] = X[0]\n"
        "              ^\n"
        f"note: {NO_PYTHON}"
    )


def test_error_limit() -> None:
    body = "".join(f"    A[0, 0] = X{i}\n" for i in range(MAX_ERRORS + 5))
    with pytest.raises(CompileError) as info:
        parse(H + body, "many.tir")
    errors = [d for d in info.value.diagnostics if d.severity == "error"]
    assert len(errors) == MAX_ERRORS
    assert info.value.diagnostics[-1].message == f"too many errors, stopping after {MAX_ERRORS}"


def test_nul_character_is_a_diagnostic() -> None:
    with pytest.raises(CompileError) as info:
        parse("x = 1\n\x00\n", "nul.tir")
    d = info.value.diagnostics[0]
    assert (d.span.line, d.message) == (2, "the file contains a NUL character")


# Past PARSE_RECURSION_LIMIT (text nested a few thousand deep parses: tests/ir/test_deep_nesting.py;
# statements cannot be nested that deep in a file of sensible size, their indentation grows).
@pytest.mark.parametrize("text", [
    H + "    A[0, 0] = " + " + ".join(["1.0"] * 15000) + "\n",
    H + "    A[0, 0] = " + "T.exp(" * 6000 + "1.0" + ")" * 6000 + "\n",
], ids=["long_sum", "nested_calls"])
def test_deep_nesting_is_a_diagnostic(text: str) -> None:
    with pytest.raises(CompileError) as info:
        parse(text, "deep.tir")
    assert info.value.diagnostics[0].message in ("program is nested too deeply",
                                                  "this statement is nested too deeply")


def test_invalid_layout(diagnostics: Callable[[str], list]) -> None:
    ((line, col, message),) = diagnostics(
        '@T.prim_func\ndef f(A: T.Buffer((64,), "float32", layout="S[(8,):(")):\n    pass\n')
    assert (line, col) == (2, 44)
    assert message.startswith("invalid layout: ") and "\n" not in message
