"""A block's buffer used only inside a `T.parallel` loop is private to each iteration, as TVM
allocates it at the lowest common ancestor of its uses: MetaSchedule's cache read rewritten in
every iteration of a parallel loop (TVM's test_meta_schedule_postproc_rewrite_layout
Conv2dCacheRead) is accepted by the static check, runs in the interpreter without a race, and
compiles at -O0 and -O3 to what numpy computes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tirc.driver import build
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter
from tirc.ir.parallel_private import privatize_parallel_buffers
from tirc.ir.printer import print_node
from tirc.passes.static_check.static_check_pass import check_function
from tirc.runtime import load

# Every iteration of `i` copies all of B to B_global, then reads it back.
PROGRAM = '''
@I.ir_module
class Module:
    @T.prim_func
    def cache_read(A: T.Buffer((4, 8), "float32"), B: T.Buffer((8,), "float32"),
                   C: T.Buffer((4, 8), "float32")):
        B_global = T.alloc_buffer((8,))
        for i in T.parallel(4):
            for j in range(8):
                with T.block("B_global"):
                    vj = T.axis.spatial(8, j)
                    B_global[vj] = B[vj]
            for j in range(8):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = A[vi, vj] + B_global[vj] * T.float32(2)
'''

# The same copy, also read after the loop: B_global is shared, and the iterations race.
SHARED = '''
@T.prim_func
def f(B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B_global = T.alloc_buffer((8,))
    for i in T.parallel(4):
        for j in range(8):
            with T.block("B_global"):
                vj = T.axis.spatial(8, j)
                B_global[vj] = B[vj]
    for j in range(8):
        with T.block("C"):
            vj = T.axis.spatial(8, j)
            C[vj] = B_global[vj]
'''


def _inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = np.arange(32, dtype=np.float32).reshape(4, 8) / 8
    b = np.arange(8, dtype=np.float32) - 3
    return a, b, a + b * 2


def test_the_buffer_is_allocated_in_each_iteration() -> None:
    func = parse(PROGRAM)["cache_read"]
    text = print_node(privatize_parallel_buffers(func.body))
    assert '''with T.block("root"):
    T.reads()
    T.writes()
    for i in T.parallel(4):
        B_global = T.decl_buffer((8,), "float32")
        for j in range(8):
''' in text, text


def test_static_check_accepts_it_and_still_refuses_a_shared_copy() -> None:
    assert check_function(parse(PROGRAM)["cache_read"]) == []
    found = [d.message for d in check_function(parse(SHARED)["f"])]
    assert found == ["T.parallel: loop i carries a dependence: every iteration of i writes "
                     "B_global[j]"], found


def test_interpreter_runs_it_without_a_race() -> None:
    a, b, want = _inputs()
    c = np.zeros((4, 8), np.float32)
    Interpreter(parse(PROGRAM)).call("cache_read", a, b, c)
    np.testing.assert_array_equal(c, want)


@pytest.mark.parametrize("level", [0, 3])
def test_compiled_matches_numpy(level: int, tmp_path: Path) -> None:
    path = tmp_path / f"cache_read_O{level}.so"
    build(parse(PROGRAM), path, opt_level=level)
    a, b, want = _inputs()
    c = np.zeros((4, 8), np.float32)
    load(path)["cache_read"](a, b, c)
    np.testing.assert_array_equal(c, want)


# From `schedule` seed 100824: the same copy after add_unit_loop put a serial loop of one
# iteration around the parallel loop. That loop carries nothing, so B_global stays private;
# it had counted as an enclosing loop, and the interpreter reported the iterations' copies
# as a race.
UNIT_LOOP = PROGRAM.replace("        for i in T.parallel(4):\n",
                            "        for u in range(1):\n          for i in T.parallel(4):\n")


def test_a_unit_loop_around_the_parallel_loop_keeps_it_private(tmp_path: Path) -> None:
    """Privatized inside the parallel loop, accepted by the static check, right in the
    interpreter and at -O0 and -O3."""
    assert "for u in range(1):" in UNIT_LOOP
    mod = parse(UNIT_LOOP)
    text = print_node(privatize_parallel_buffers(mod["cache_read"].body))
    assert 'for i in T.parallel(4):\n            B_global = T.decl_buffer((8,), "float32")' \
        in text, text
    assert check_function(mod["cache_read"]) == []
    a, b, want = _inputs()
    for level in (None, 0, 3):
        c = np.zeros((4, 8), np.float32)
        if level is None:
            Interpreter(mod).call("cache_read", a, b, c)
        else:
            build(mod, tmp_path / f"unit_O{level}.so", opt_level=level)
            load(tmp_path / f"unit_O{level}.so")["cache_read"](a, b, c)
        np.testing.assert_array_equal(c, want)
