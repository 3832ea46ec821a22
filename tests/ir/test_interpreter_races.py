"""The interpreter's race detection: iterations of a parallel, vectorized or thread-bound loop
that touch one element, one of them writing, are an error naming the loop (and its place),
the buffer, the element and the two iterations (and the values); programs whose iterations
are independent (private storage, per-iteration reductions, GPU scopes, barriers) run as
before, and so do iterations storing one value that every read must see (each thread copying
a whole tile); equal values do not excuse a read that could see the value from before."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_support import lower
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter, InterpreterError
from tirc.ir.interpreter.gpu import GPUInterpreter


def run(text: str, *args: np.ndarray) -> None:
    """Interpret `f` of the module on the arrays, in place."""
    Interpreter(parse(text, "f.tir")).call("f", *args)


def f32(*shape: int) -> np.ndarray:
    """1, 2, 3, ...: no two elements equal, none zero (a store of the value already there is
    not a race)."""
    return np.arange(1, int(np.prod(shape)) + 1, dtype=np.float32).reshape(shape)


# name, program, arguments' shapes, the error
RACES = [
    ("issue_parallel_reduction", '''@T.prim_func
def f(A: T.Buffer((1024,), "float32"), B: T.Buffer((1,), "float32")):
    for k in T.parallel(1024):
        with T.block("B"):
            vk = T.axis.reduce(1024, k)
            with T.init():
                B[0] = T.float32(0)
            B[0] = B[0] + A[vk]
''', [(1024,), (1,)], "data race in T.parallel loop 'k' at f.tir:3:5: iteration k = 1 reads "
     "B[0], which iteration k = 0 writes"),
    ("issue_parallel_adds", '''@T.prim_func
def f(A: T.Buffer((1024,), "float32"), B: T.Buffer((1,), "float32")):
    for i in T.parallel(1024):
        B[0] = B[0] + A[i]
''', [(1024,), (1,)], "data race in T.parallel loop 'i' at f.tir:3:5: iteration i = 1 reads "
     "B[0], which iteration i = 0 writes (it held 1.0, 2.0 written)"),
    ("both_write", '''@T.prim_func
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((8,), "float32")):
    for i in T.parallel(16):
        B[i // 2] = A[i]
''', [(16,), (8,)], "data race in T.parallel loop 'i' at f.tir:3:5: iterations i = 0 and "
     "i = 1 both write B[0], different values (1.0 and 2.0)"),
    ("vectorized_shift", '''@T.prim_func
def f(B: T.Buffer((16,), "float32")):
    for i in T.vectorized(15):
        B[i] = B[i + 1]
''', [(16,)], "data race in T.vectorized loop 'i' at f.tir:3:5: iteration i = 1 writes B[1], "
     "which iteration i = 0 reads (it held 2.0, 3.0 written)"),
    ("thread_bound", '''@T.prim_func
def f(A: T.Buffer((32,), "float32"), B: T.Buffer((4, 2), "float32")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        B[3, 1] = A[tx]
''', [(32,), (4, 2)], "data race in thread-bound loop 'tx' at f.tir:3:5: iterations tx = 0 "
     "and tx = 1 both write B[3, 1], different values (1.0 and 2.0)"),
    ("inner_of_two_parallel_loops", '''@T.prim_func
def f(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        for j in T.parallel(4):
            B[i] = A[i, j]
''', [(4, 4), (4,)], "data race in T.parallel loop 'j' at f.tir:4:9: iterations j = 0 and "
     "j = 1 both write B[0], different values (1.0 and 2.0)"),
    ("overlapping_vectors", '''@T.prim_func
def f(B: T.Buffer((16,), "float32")):
    for i in T.parallel(2):
        B[T.Ramp(i * 4, 1, 8)] = T.Broadcast(T.Cast("float32", i), 8)
''', [(16,)], "data race in T.parallel loop 'i' at f.tir:3:5: iterations i = 0 and i = 1 both "
     "write B[4], different values (0.0 and 1.0)"),
    ("blocks_share_a_global_buffer", '''@T.prim_func
def f(A: T.Buffer((64,), "float32"), B: T.Buffer((8,), "float32")):
    for bx in T.thread_binding(8, thread="blockIdx.x"):
        for tx in T.thread_binding(8, thread="threadIdx.x"):
            B[tx] = A[bx * 8 + tx]
''', [(64,), (8,)], "data race in thread-bound loop 'bx' at f.tir:3:5: iterations bx = 0 and "
     "bx = 1 both write B[0], different values (1.0 and 9.0)"),
]


@pytest.mark.parametrize("case", RACES, ids=[c[0] for c in RACES])
def test_race_is_an_error_naming_loop_buffer_element_and_iterations(case: tuple) -> None:
    _, text, shapes, message = case
    with pytest.raises(InterpreterError) as err:
        run(text, *[f32(*s) for s in shapes])
    assert str(err.value) == message
    assert err.value.span is not None  # the loop's place, for a file:line:col diagnostic


# name, program, arguments' shapes, what the first output holds afterwards
VALID = [
    ("rows_reduced_in_parallel", '''@T.prim_func
def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        for k in range(8):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
''', [(4, 8), (4,)], lambda a: a.sum(axis=1)),
    ("every_iteration_reads_one_element", '''@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in T.vectorized(8):
        B[i] = A[i] * A[0]
''', [(8,), (8,)], lambda a: a * a[0]),
    ("in_place_update", '''@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in T.parallel(8):
        B[i] = B[i] + A[i]
        B[i] = B[i] * T.float32(2)
''', [(8,), (8,)], lambda a: (a + a) * 2),
    ("buffer_allocated_per_iteration", '''@T.prim_func
def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        acc = T.decl_buffer((1,), "float32", scope="local")
        acc[0] = T.float32(0)
        for k in range(8):
            acc[0] = acc[0] + A[i, k]
        B[i] = acc[0]
''', [(4, 8), (4,)], lambda a: a.sum(axis=1)),
    ("block_buffer_per_iteration", '''@T.prim_func
def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        with T.block("row"):
            vi = T.axis.spatial(4, i)
            S = T.alloc_buffer((1,), "float32")
            for k in range(8):
                with T.block("S"):
                    vk = T.axis.reduce(8, k)
                    with T.init():
                        S[0] = T.float32(0)
                    S[0] = S[0] + A[vi, vk]
            B[vi] = S[0]
''', [(4, 8), (4,)], lambda a: a.sum(axis=1)),
    ("parallel_loop_run_twice", '''@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for r in range(2):
        for i in T.parallel(8):
            B[i] = B[i] + A[i]
''', [(8,), (8,)], lambda a: a + 2 * a),
    ("local_scope_is_per_thread", '''@T.prim_func
def f(A: T.Buffer((4, 32), "float32"), B: T.Buffer((4, 32), "float32")):
    acc = T.alloc_buffer((1,), "float32", scope="local")
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            acc[0] = A[bx, tx] * T.float32(2)
            B[bx, tx] = acc[0] + T.float32(1)
''', [(4, 32), (4, 32)], lambda a: a * 2 + 1),
    ("shared_scope_is_per_block_and_fetched_cooperatively", '''@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((4, 8), "float32")):
    A_shared = T.alloc_buffer((8,), "float32", scope="shared")
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(8, thread="threadIdx.x"):
            for ax in T.thread_binding(8, thread="threadIdx.x"):
                A_shared[ax] = A[ax]
            B[bx, tx] = A_shared[7 - tx]
''', [(8,), (4, 8)], lambda a: np.tile(a[::-1], (4, 1))),
    ("virtual_threads_share_the_block_tile", '''@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    A_shared = T.alloc_buffer((8,), "float32", scope="shared")
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for vt in T.thread_binding(2, thread="vthread.x"):
            for tx in T.thread_binding(4, thread="threadIdx.x"):
                for f0 in range(2):
                    for ax in T.thread_binding(4, thread="threadIdx.x"):
                        A_shared[f0 * 4 + ax] = A[f0 * 4 + ax]
                B[vt * 4 + tx] = A_shared[7 - vt * 4 - tx]
''', [(8,), (8,)], lambda a: a[::-1]),
    ("threads_separated_by_a_barrier", '''@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    S = T.alloc_buffer((8,), "float32", scope="shared")
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for tx in T.thread_binding(8, thread="threadIdx.x"):
            S[tx] = A[tx]
            T.tvm_storage_sync("shared")
            B[tx] = S[tx]
''', [(8,), (8,)], lambda a: a),
]


@pytest.mark.parametrize("case", VALID, ids=[c[0] for c in VALID])
def test_independent_iterations_run_as_before(case: tuple) -> None:
    _, text, shapes, want = case
    args = [f32(*s) for s in shapes]
    a = args[0].copy()
    if args[1].shape == a.shape:
        args[1][...] = a
    run(text, *args)
    np.testing.assert_array_equal(args[1], want(a))


# Stores of one value by several iterations: name, program, arguments, (argument, expected).
SAME_VALUE = [
    ("every_thread_copies_the_whole_tile", '''@T.prim_func
def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
    A_shared = T.alloc_buffer((8,), "float32", scope="shared")
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(8, thread="threadIdx.x"):
            for ax in range(8):
                A_shared[ax] = A[bx, ax]
            B[bx, tx] = A_shared[7 - tx]
''', [f32(4, 8), np.zeros((4, 8), np.float32)], (1, f32(4, 8)[:, ::-1])),
    ("iterations_store_one_constant", '''@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((1,), "float32"), C: T.Buffer((8,), "float32")):
    for i in T.parallel(8):
        B[0] = T.float32(3)
        C[i] = A[i] * B[0]
''', [f32(8), np.zeros(1, np.float32), np.zeros(8, np.float32)], (2, f32(8) * 3)),
    ("a_read_before_the_writes_sees_the_value_already_there", '''@T.prim_func
def f(B: T.Buffer((1,), "float32"), C: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        C[i] = B[0]
        if i == 2:
            B[0] = T.float32(5)
''', [np.full(1, 5, np.float32), np.zeros(4, np.float32)], (1, np.full(4, 5, np.float32))),
    ("a_copied_nan", '''@T.prim_func
def f(A: T.Buffer((4,), "float32"), B: T.Buffer((1,), "float32")):
    for i in T.parallel(4):
        B[0] = A[0]
''', [np.full(4, np.nan, np.float32), np.zeros(1, np.float32)], (1, np.full(1, np.nan))),
]


@pytest.mark.parametrize("case", SAME_VALUE, ids=[c[0] for c in SAME_VALUE])
def test_iterations_storing_one_value_are_no_race(case: tuple) -> None:
    """Whatever order the iterations ran in, every read sees one value and the element ends
    with it: what MetaSchedule's design spaces do before cooperative fetch (each thread writes
    the whole shared tile, then reads it), as TVM and the device compute it."""
    _, text, args, (k, want) = case
    run(text, *args)
    np.testing.assert_array_equal(args[k], want)


# Races despite some equal values: name, program, arguments, the error.
VALUE_RACES = [
    ("read_of_another_threads_write_without_a_barrier", '''@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    S = T.alloc_buffer((8,), "float32", scope="shared")
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for tx in T.thread_binding(8, thread="threadIdx.x"):
            S[tx] = A[tx]
            B[tx] = S[(tx + 1) % 8]
''', [f32(8), f32(8)], "data race in thread-bound loop 'tx' at f.tir:5:9: iteration tx = 1 "
     "writes S[1], which iteration tx = 0 reads (it held nan, 2.0 written)"),
    ("one_value_read_before_the_thread_writes_it", '''@T.prim_func
def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    S = T.alloc_buffer((1,), "float32", scope="shared")
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for tx in T.thread_binding(4, thread="threadIdx.x"):
            B[tx] = S[0]
            S[0] = A[0]
''', [f32(4), f32(4)], "data race in thread-bound loop 'tx' at f.tir:5:9: iteration tx = 1 "
     "reads S[0], which iteration tx = 0 writes (it held nan, 1.0 written)"),
    ("same_value_written_after_another_read_it", '''@T.prim_func
def f(A: T.Buffer((4,), "float32"), B: T.Buffer((1,), "float32"), C: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        C[i] = B[0]
        B[0] = A[0]
''', [f32(4), np.full(1, 7, np.float32), f32(4)], "data race in T.parallel loop 'i' at "
     "f.tir:3:5: iteration i = 1 reads B[0], which iteration i = 0 writes (it held 7.0, 1.0 "
     "written)"),
    ("zeros_of_two_signs", '''@T.prim_func
def f(A: T.Buffer((2,), "float32"), B: T.Buffer((1,), "float32")):
    for i in T.parallel(2):
        B[0] = T.float32(0) * A[i]
''', [np.array([1, -1], np.float32), f32(1)], "data race in T.parallel loop 'i' at f.tir:3:5: "
     "iterations i = 0 and i = 1 both write B[0], different values (0.0 and -0.0)"),
    ("a_thread_changes_the_value_another_also_writes", '''@T.prim_func
def f(A: T.Buffer((2,), "float32"), B: T.Buffer((1,), "float32")):
    for i in T.parallel(2):
        B[0] = A[0]
        B[0] = A[1]
''', [f32(2), f32(1)], "data race in T.parallel loop 'i' at f.tir:3:5: iterations i = 0 and "
     "i = 1 both write B[0], different values"),
]


@pytest.mark.parametrize("case", VALUE_RACES, ids=[c[0] for c in VALUE_RACES])
def test_race_when_the_order_could_change_a_value(case: tuple) -> None:
    """Equal values are no excuse when a read could see the element's value from before the
    loop or an iteration stores two values: the outcome then depends on the order."""
    _, text, args, message = case
    with pytest.raises(InterpreterError) as err:
        run(text, *args)
    assert str(err.value) == message


# The barrier case above with each thread reading another's element.
SHARED_ACROSS_A_BARRIER = next(c[1] for c in VALID if c[0] == "threads_separated_by_a_barrier"
                               ).replace("B[tx] = S[tx]", "B[tx] = S[7 - tx]")


def test_threads_sharing_data_across_a_written_barrier_are_refused_not_run_serially() -> None:
    """Each thread reads what another wrote before the barrier: run one after another, the
    threads would read the shared buffer before it is written (the interpreter returned
    NaNs for half of B); it says so and names the GPU interpreter, which runs them in step
    and reverses A."""
    a, b = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    with pytest.raises(InterpreterError) as err:
        Interpreter(parse(SHARED_ACROSS_A_BARRIER)).call("f", a, b)
    message = str(err.value)
    assert "runs the iterations of thread-bound loop 'tx'" in message
    assert "cannot honour the barrier (T.tvm_storage_sync)" in message
    assert "iteration tx = 4 writes S[4], which iteration tx = 3 reads" in message
    GPUInterpreter(lower(parse(SHARED_ACROSS_A_BARRIER))).call("f", a, b)
    np.testing.assert_array_equal(b, a[::-1])
