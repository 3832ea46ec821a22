"""Forms from TVM's own test programs that tirc once mishandled: each parses, prints back to
the same IR, prints as a fixed point, and (where it has no GPU part) compiles for the CPU."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from frontend_support import round_trip
from tirc import driver
from tirc.frontend import parse
from tirc.ir import structural_equal
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter import Interpreter
from tirc.runtime import load


def test_one_thread_variable_launched_twice_round_trips() -> None:
    """Two launches of one env_thread variable are two loops, each with its own variable."""
    round_trip('''
from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((256,), "float32")):
    tx = T.env_thread("threadIdx.x")
    with T.launch_thread(tx, 256):
        A[tx] = A[tx] + 1.0
    with T.launch_thread(tx, 256):
        A[tx] = A[tx] + 2.0
    T.launch_thread(tx, 128)
    A[tx] = A[tx] * 2.0
''')


def test_allocate_takes_its_arguments_by_keyword() -> None:
    """`T.allocate(extents, dtype=..., scope=...)`: the keywords fill their places."""
    mod = round_trip('''
from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((8,), "float32")):
    p = T.allocate([8], dtype="float32", scope="global")
    q = T.allocate(extents=[8], dtype="float32")
    P = T.Buffer((8,), "float32", data=p)
    Q = T.Buffer((8,), "float32", data=q)
    for i in range(8):
        P[i] = A[i] + 1.0
        Q[i] = P[i] * 2.0
        A[i] = Q[i]
''')
    driver.lower(mod, "llvm", 2)


def test_allocate_argument_given_twice_is_a_diagnostic() -> None:
    """A place filled both by position and by keyword is an error at the keyword."""
    with pytest.raises(CompileError, match="got argument 'dtype' twice"):
        parse('''
from tvm.script import tir as T

@T.prim_func
def main():
    p = T.allocate([8], "float32", dtype="float32")
    T.evaluate(0)
''')


def test_exported_function_with_a_bare_pointer_parameter_lowers() -> None:
    """A public function taking `T.handle("float32")` is an entry taking a 1-d tensor
    (tests/runtime/test_pointer_parameters.py runs it)."""
    mod = parse('''
from tvm.script import tir as T

@T.prim_func
def f(a: T.handle("float32")):
    A = T.Buffer((1,), "float32", data=a)
    A[0] = 1.0
''')
    entry = driver.lower(mod, "llvm", 2).functions["f"].attrs["tirc.entry"]
    assert entry["params"][0]["kind"] == "pointer"


def test_match_buffer_of_a_region_takes_its_shape_and_dtype() -> None:
    """`T.match_buffer(A[8:16, 32:64])` without a shape: the region's extents, A's dtype."""
    mod = round_trip('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((16, 64), "int32")):
    with T.block("b"):
        B = T.match_buffer(A[8:16, 32:64])
        for i, j in T.grid(8, 32):
            B[i, j] = i + j
''')
    node = mod.functions["f"].body
    while not hasattr(node, "block"):
        node = node.body
    sub = node.block.match_buffers[0].buffer
    assert [d.value for d in sub.shape] == [8, 32] and str(sub.dtype) == "int32"
    driver.lower(mod, "llvm", 2)


def test_bind_gives_a_declared_variable_its_value() -> None:
    """`j = T.int32()` then `T.Bind(i + 1, var=j)` is `j = i + 1` for what follows."""
    mod = round_trip('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((4,), "int32"), i: T.int32):
    j = T.int32()
    T.Bind(i + 1, var=j)
    A[0] = j
''')
    assert structural_equal(mod, parse('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((4,), "int32"), i: T.int32):
    j = i + 1
    A[0] = j
'''))
    driver.lower(mod, "llvm", 2)


def test_bind_of_a_parameter_is_a_diagnostic() -> None:
    """Only a variable declared in the body and not yet bound can be bound."""
    with pytest.raises(CompileError, match="'i' is not one"):
        parse('''
from tvm.script import tir as T

@T.prim_func
def f(i: T.int32):
    T.Bind(1, var=i)
    T.evaluate(i)
''')


def test_access_ptr_is_the_address_of_an_element() -> None:
    """`B.access_ptr("r", offset=k)` reads as `T.address_of` of B's element at flat offset k."""
    mod = round_trip('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
    T.evaluate(T.call_extern("int32", "touch", A.access_ptr("r", extent=32)))
    T.evaluate(T.call_extern("int32", "touch", B.access_ptr("w", offset=11, extent=4)))
''')
    assert structural_equal(mod, parse('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
    T.evaluate(T.call_extern("int32", "touch", T.address_of(A[0, 0])))
    T.evaluate(T.call_extern("int32", "touch", T.address_of(B[11 // 8, 11 % 8])))
'''))


def test_access_ptr_with_an_unknown_mask_is_a_diagnostic() -> None:
    """The mask is "r", "w" or "rw" (or TVM's 1, 2, 3)."""
    with pytest.raises(CompileError, match="takes an access mask"):
        parse('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((8,), "float32")):
    T.evaluate(A.access_ptr("x"))
''')


def test_tirx_bind_is_a_let() -> None:
    """TVM main's `x = T.bind(value)` (and `T.bind(value, dtype)`) binds like `x = value`."""
    mod = round_trip('''
import tvm
from tvm.script import tirx as T

@tvm.script.ir_module
class M:
    @T.function
    def main(B: T.Tensor((4,), "int32"), y: T.int32):
        a = T.bind(y + 1)
        b = T.bind(2, "int64")
        B[0] = a + T.Cast("int32", b)
''')
    assert structural_equal(mod, parse('''
import tvm
from tvm.script import tirx as T

@tvm.script.ir_module
class M:
    @T.function
    def main(B: T.Tensor((4,), "int32"), y: T.int32):
        a = y + 1
        b: T.int64 = T.int64(2)
        B[0] = a + T.Cast("int32", b)
'''))
    driver.lower(mod, "llvm", 2)


def test_integer_if_condition_means_not_zero() -> None:
    """`if c:` / `while n:` on an integer test it against zero, as Python does."""
    mod = round_trip('''
from tvm.script import tir as T

@T.prim_func
def f(B: T.Buffer((2,), "int32"), c: T.int32):
    if c:
        B[0] = 1
    else:
        B[0] = 2
''')
    assert structural_equal(mod, parse('''
from tvm.script import tir as T

@T.prim_func
def f(B: T.Buffer((2,), "int32"), c: T.int32):
    if c != 0:
        B[0] = 1
    else:
        B[0] = 2
'''))
    driver.lower(mod, "llvm", 2)


def test_float_if_condition_is_still_a_diagnostic() -> None:
    """Only integers read as truth values; a float condition is an error."""
    with pytest.raises(CompileError, match="must be bool, got float32"):
        parse('''
from tvm.script import tir as T

@T.prim_func
def f(B: T.Buffer((2,), "float32")):
    if B[0]:
        B[1] = 1.0
''')


def test_intrinsic_result_dtype_by_ty() -> None:
    """TVM main's `ty=` names an intrinsic call's result dtype, as `dtype=` does."""
    a = round_trip('''
from tvm.script import tirx as T

@T.function
def f(B: T.Tensor((2,), "int32"), x: T.int32):
    B[0] = T.call_extern("my_func", x, ty="int32") + 1
''')
    b = parse('''
from tvm.script import tirx as T

@T.function
def f(B: T.Tensor((2,), "int32"), x: T.int32):
    B[0] = T.call_extern("int32", "my_func", x) + 1
''')
    assert structural_equal(a, b)


def test_unnamed_blocks_compile() -> None:
    """Several `T.block()` without names: the default schedule leaves the function alone."""
    mod = round_trip('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i0 in range(16):
        for j0 in range(16):
            with T.block():
                i, j = T.axis.remap("SS", [i0, j0])
                B[i, j] = A[i, j] + 1.0
        for j0 in range(16):
            with T.block():
                i, j = T.axis.remap("SS", [i0, j0])
                C[i, j] = B[i, j] * 2.0
''')
    driver.lower(mod, "llvm", 2)


def test_tirx_tensor_allocation_names() -> None:
    """TVM main's `T.alloc_tensor` / `T.decl_tensor` are `T.alloc_buffer` / `T.decl_buffer`."""
    a = round_trip('''
from tvm.script import tirx as T

@T.prim_func
def f(A: T.Tensor((16,), "float32")):
    L = T.alloc_tensor((16,), "float32")
    V = T.decl_tensor((16,), "float32", data=A.data)
    for i in range(16):
        L[i] = V[i] * 2.0
        A[i] = L[i]
''')
    b = parse('''
from tvm.script import tirx as T

@T.prim_func
def f(A: T.Buffer((16,), "float32")):
    L = T.alloc_buffer((16,), "float32")
    V = T.decl_buffer((16,), "float32", data=A.data)
    for i in range(16):
        L[i] = V[i] * 2.0
        A[i] = L[i]
''')
    assert structural_equal(a, b)
    driver.lower(a, "llvm", 2)


def test_decl_buffer_over_a_pointer_expression() -> None:
    """`T.decl_buffer(..., data=T.address_of(A[i, 0]))` views the storage at that address."""
    mod = round_trip('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((4, 8), "float32")):
    for i in range(4):
        row = T.decl_buffer((8,), "float32", data=T.address_of(A[i, 0]))
        for j in range(8):
            row[j] = row[j] * 2.0
''')
    driver.lower(mod, "llvm", 2)


def test_bind_with_a_pointer_annotation() -> None:
    """`T.bind(value, T.handle("float32"))` binds a pointer."""
    round_trip('''
from tvm.script import tirx as T

@T.prim_func
def f(A: T.Buffer((8,), "float32")):
    p = T.bind(T.address_of(A[4]), T.handle("float32"))
    B = T.decl_buffer((4,), "float32", data=p)
    B[0] = 1.0
''')


def test_decl_buffer_over_a_number_is_a_diagnostic() -> None:
    """data= must be a pointer."""
    with pytest.raises(CompileError, match="data= must be a pointer"):
        parse('''
from tvm.script import tir as T

@T.prim_func
def f(n: T.int32):
    B = T.decl_buffer((4,), "float32", data=n + 1)
    B[0] = 1.0
''')


GRID_BY_ONE_NAME = '''
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T

@I.ir_module
class M:
    @T.prim_func(private=True)
    def scale(X: T.Buffer((T.int64(4), T.int64(8)), "float32"),
              Z: T.Buffer((T.int64(4), T.int64(8)), "float32")):
        Y = T.alloc_buffer(X.shape, "float32")
        for iters in T.grid(*X.shape):
            with T.block("Y"):
                i, j = T.axis.remap("SS", iters)
                Y[i, j] = X[i, j] * i + j
        for iters in T.grid(*X.shape):
            with T.block("Z"):
                i, j = T.axis.remap("SS", iters)
                Z[i, j] = Y[i, j]

    @R.function
    def main(x: R.Tensor((4, 8), "float32")) -> R.Tensor((4, 8), "float32"):
        cls = M
        with R.dataflow():
            y = R.call_tir(cls.scale, [x], out_sinfo=R.Tensor((4, 8), "float32"))
            R.output(y)
        return y
'''


def test_grid_bound_to_one_name_and_shape_of_a_buffer() -> None:
    """`for iters in T.grid(*X.shape)` with `T.axis.remap("SS", iters)`, `T.alloc_buffer(X.shape)`,
    a list of R.call_tir arguments, and an integer index in float arithmetic (cast, as TVM
    does) all read; the module compiles."""
    mod = round_trip(GRID_BY_ONE_NAME)
    driver.lower(mod, "llvm", 2)


def test_integer_meets_float_in_arithmetic() -> None:
    """`A[i] * i` (float32 times int32) is `A[i] * T.Cast("float32", i)`."""
    a = round_trip('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((8,), "float32")):
    for i in range(8):
        A[i] = A[i] * i + 1
''')
    b = parse('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((8,), "float32")):
    for i in range(8):
        A[i] = A[i] * T.Cast("float32", i) + T.float32(1)
''')
    assert structural_equal(a, b)


def test_evaluate_of_ret_is_a_return() -> None:
    """TVM's `T.evaluate(T.ret(v))` is `return v`."""
    a = round_trip('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((4,), "int32")) -> T.int32:
    T.evaluate(T.ret(A[0] + 5))
''')
    b = parse('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((4,), "int32")) -> T.int32:
    return A[0] + 5
''')
    assert structural_equal(a, b)
    driver.lower(a, "llvm", 2)


def test_ret_with_a_dtype_returns_in_that_dtype() -> None:
    """TVM's `T.ret(x * y, dtype="int8")` (test_tir_imm_values) returns an int8 that wraps;
    a dtype other than the function's result dtype is a diagnostic at it."""
    mod = round_trip('''
from tvm.script import tir as T

@T.prim_func
def imm_multiply(x: T.int8, y: T.int8) -> T.int8:
    T.evaluate(T.ret(x * y, dtype="int8"))
''')
    assert Interpreter(mod).call("imm_multiply", 127, 127) == 1
    with pytest.raises(CompileError, match="3:25: error: T.ret: dtype int32 is not the "
                                           "function's result dtype int8"):
        parse('''@T.prim_func
def f(x: T.int8) -> T.int8:
    T.evaluate(T.ret(x, "int32"))
''')


def test_assert_with_a_kind_and_message_parts() -> None:
    """TVM 0.27 prints every assert as `assert c, ("Kind", ["part", ...])`
    (test_codegen_assert): the parts are the message; anything else there is a diagnostic."""
    mod = round_trip('''
from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def f(x: T.int32):
    assert x > 0, ("ValueError", ["Expected shape ", "4", " but got ", "8"])
''')
    Interpreter(mod).call("f", 1)
    with pytest.raises(Exception, match="Expected shape 4 but got 8"):
        Interpreter(mod).call("f", 0)
    with pytest.raises(CompileError, match=r'3:19: error: the assertion message must be a '
                                           r'string or \("Kind", \["part", ...\]\)'):
        parse('''@T.prim_func
def f(x: T.int32):
    assert x > 0, ("ValueError", "x", "y")
''')


def test_block_buffer_strides_of_another_rank_are_dropped() -> None:
    """TVM's cache_index writes `T.alloc_buffer([80, 80], "int32", strides=[1])`; TVM
    compacts a block's buffer, dropping them. Elsewhere the count must match the rank."""
    mod = round_trip('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((4, 4), "int32"), B: T.Buffer((4, 4), "int32")):
    idx = T.alloc_buffer([4, 4], dtype="int32", strides=[1])
    for i, j in T.grid(4, 4):
        with T.block("index"):
            vi, vj = T.axis.remap("SS", [i, j])
            idx[vi, vj] = vi * 4 + vj
    for i, j in T.grid(4, 4):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + idx[vi, vj]
''')
    a = np.arange(16, dtype="int32").reshape(4, 4)
    b = np.zeros_like(a)
    Interpreter(mod).call("f", a, b)
    np.testing.assert_array_equal(b, 2 * a)
    with pytest.raises(CompileError, match="2:44: error: 1 strides for a buffer of 2 dim"):
        parse('''@T.prim_func
def f(A: T.Buffer((4, 4), "int32", strides=[1])):
    T.evaluate(0)
''')


def test_bitwise_and_logical_node_constructors() -> None:
    """TVM 0.27's `T.LShift`, `T.RShift`, `T.BitwiseAnd/Or/Xor/Not` and `T.Not` are its
    operators `<<`, `>>`, `&`, `|`, `^`, `~` and `not`."""
    a = round_trip('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32")):
    for i in range(4):
        B[i] = T.BitwiseXor(T.BitwiseOr(T.LShift(A[i], 2), T.RShift(A[i], 1)), T.BitwiseAnd(
            T.BitwiseNot(A[i]), 3)) + T.Cast("int32", T.Not(A[i] > 0))
''')
    b = parse('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32")):
    for i in range(4):
        B[i] = ((A[i] << 2 | A[i] >> 1) ^ (~A[i] & 3)) + T.Cast("int32", not A[i] > 0)
''')
    assert structural_equal(a, b)
    x = np.array([-5, 0, 2, 7], dtype="int32")
    out = np.zeros(4, dtype="int32")
    Interpreter(a).call("f", x, out)
    np.testing.assert_array_equal(out, ((x << 2 | x >> 1) ^ (~x & 3)) + (x <= 0))


def test_float_variable_declared_for_a_let_expression() -> None:
    """`x = T.float32()` declares the variable a `T.Let(..., where={x: v})` binds."""
    mod = round_trip('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((4, 4), "float32")):
    for i, j in T.grid(4, 4):
        x = T.float32()
        A[i, j] = T.Let(5.0 * x + T.cast(j, "float32"), where={x: T.cast(i + 1, "float32")})
''')
    driver.lower(mod, "llvm", 2)


def test_declared_float_variable_never_bound_is_a_diagnostic() -> None:
    """A declared variable used without a binding is an error at a build, not a crash."""
    mod = parse('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    x = T.float32()
    A[0] = x
''')
    with pytest.raises(CompileError, match="variable 'x' is used outside the scope"):
        driver.lower(mod, "llvm", 2)


def test_thread_extent_attribute_over_an_iter_var_is_a_launch() -> None:
    """`T.attr(T.iter_var(tx, T.Range(0, n), "ThreadIndex", tag), "thread_extent", n)` after
    `tx = T.int32()` launches `tx` over what follows, as `T.launch_thread` does."""
    a = round_trip('''
from tvm.script import tir as T

@T.prim_func
def k(A: T.Buffer((256,), "float32")):
    tx = T.int32()
    T.attr(T.iter_var(tx, T.Range(0, 256), "ThreadIndex", "threadIdx.x"), "thread_extent", 256)
    A[tx] = A[tx] + T.float32(1)
''')
    b = parse('''
from tvm.script import tir as T

@T.prim_func
def k(A: T.Buffer((256,), "float32")):
    tx = T.launch_thread("threadIdx.x", 256)
    A[tx] = A[tx] + T.float32(1)
''')
    assert structural_equal(a, b)


def test_thread_iter_var_with_another_range_is_a_diagnostic() -> None:
    """The iter_var's range must be the launch's extent."""
    with pytest.raises(CompileError, match="T.Range\\(0, extent\\) with the attribute's"):
        parse('''
from tvm.script import tir as T

@T.prim_func
def k(A: T.Buffer((256,), "float32")):
    tx = T.int32()
    with T.attr(T.iter_var(tx, T.Range(0, 128), "ThreadIndex", "threadIdx.x"),
                "thread_extent", 256):
        A[tx] = 1.0
''')


def test_tvm_access_ptr_is_the_address_of_an_element() -> None:
    """TVM's lowered `T.tvm_access_ptr(T.type_annotation(dtype=...), A.data, k, n, mask)`
    reads as `T.address_of(A[...])`, also through a handle `T.allocate` binds."""
    a = round_trip('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((4, 4), "float32")):
    p = T.allocate([8], "float32", "global")
    P = T.Buffer((8,), "float32", data=p)
    T.evaluate(T.call_extern("int32", "touch",
               T.tvm_access_ptr(T.type_annotation(dtype="float32"), A.data, 5, 4, 1,
                                dtype="handle"),
               T.tvm_access_ptr(T.type_annotation(dtype="float32"), p, 2, 4, 2)))
''')
    b = parse('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((4, 4), "float32")):
    p = T.allocate([8], "float32", "global")
    P = T.Buffer((8,), "float32", data=p)
    T.evaluate(T.call_extern("int32", "touch", T.address_of(A[5 // 4, 5 % 4]),
                             T.address_of(P[2])))
''')
    assert structural_equal(a, b)


def test_tvm_access_ptr_without_a_viewing_buffer_is_a_diagnostic() -> None:
    """Storage that no buffer of the annotated dtype views is refused at its place."""
    with pytest.raises(CompileError, match="no buffer of dtype int32 in scope views"):
        parse('''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((8,), "float32")):
    T.evaluate(T.tvm_access_ptr(T.type_annotation(dtype="int32"), A.data, 0, 8, 1))
''')


def test_elem_offset_of_a_match_buffer_is_where_its_region_starts(tmp_path: Path) -> None:
    """`sub.elem_offset` of a tile matched without `elem_offset=`: the region's offset in its
    source (TVM reads 0 and accepts only regions that start at 0; the offset is right for
    both), in the interpreter and compiled."""
    text = '''
from tvm.script import tir as T

@T.prim_func
def tile_offsets(A: T.Buffer((32, 64), "float32"), O: T.Buffer((8,), "int32")):
    for i, k in T.grid(2, 4):
        with T.block():
            T.reads([])
            T.writes(O[i * 4 + k])
            sub = T.match_buffer(A[i * 16 : i * 16 + 16, k * 16 : k * 16 + 16], (16, 16),
                                 strides=[64, 1])
            O[i * 4 + k] = sub.elem_offset
'''
    want = np.array([i * 16 * 64 + k * 16 for i in range(2) for k in range(4)], np.int32)
    mod = round_trip(text)
    got = np.zeros(8, np.int32)
    Interpreter(mod).call("tile_offsets", np.zeros((32, 64), np.float32), got)
    np.testing.assert_array_equal(got, want)
    lib = load(driver.build(mod, tmp_path / "offsets.so", "llvm", 2))
    got = np.zeros(8, np.int32)
    lib["tile_offsets"](np.zeros((32, 64), np.float32), got)
    np.testing.assert_array_equal(got, want)


def test_likely_with_its_dtype_and_a_select_of_float_and_int(tmp_path: Path) -> None:
    """`T.likely(c, dtype="bool")` (TVM's compute_at tests) and `T.if_then_else(c, x_f32x4,
    T.Broadcast(0, 4))`: the int side is cast to the float side's type, as TVM matches them."""
    mod = round_trip('''
from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(2):
        B[T.Ramp(i * 4, 1, 4)] = T.if_then_else(T.likely(i == 0, dtype="bool"),
                                                 A[T.Ramp(i * 4, 1, 4)], T.Broadcast(0, 4))
''')
    a = np.arange(8, dtype="float32") + 1
    want = np.zeros(8, dtype="float32")
    Interpreter(mod).call("main", a, want)
    np.testing.assert_array_equal(want, [1, 2, 3, 4, 0, 0, 0, 0])
    lib = load(driver.build(mod, tmp_path / "m.so", "llvm", 2))
    got = np.full(8, np.nan, dtype="float32")
    lib["main"](a, got)
    np.testing.assert_array_equal(got, want)
    with pytest.raises(CompileError, match="T.likely is a bool condition, not int32"):
        parse('''
from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((8,), "float32")):
    for i in range(8):
        A[i] = T.if_then_else(T.likely(i < 4, dtype="int32"), T.float32(1), A[i])
''')


def test_buffer_parameters_after_dtype_may_be_positional() -> None:
    """TVM's order after shape and dtype (data, strides, elem_offset, scope, ...) may be
    written positionally, as TVM's compact_buffer_region tests do: `T.decl_buffer((16,),
    "float32", A.data)` is `data=A.data`."""
    text = '''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((16,), "float32")):
    V = T.decl_buffer((16,), "float32", {})
    for i in range(16):
        A[i] = V[i] * 2.0
'''
    positional = parse(text.format("A.data"))
    assert structural_equal(positional, parse(text.format("data=A.data")))
    with pytest.raises(CompileError) as err:
        parse(text.format("A.data, data=A.data"))
    assert "got argument 'data' twice" in err.value.diagnostics[0].message


PTR_VIEW = '''
from tvm.script import tir as T

@T.prim_func
def expected(A_data: T.handle("float32")):
    A_buf = T.decl_buffer(32, "float32", data=A_data)
    B_data: T.Ptr[{}] = T.address_of(A_buf[16])
    B_buf = T.decl_buffer(16, "{}", data=B_data)
    for i in range(16):
        B_buf[i] = A_buf[i] * 2.0
'''


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_pointer_annotation_and_a_buffer_on_an_element_address(level: int,
                                                                tmp_path: Path) -> None:
    """TVM's test_specialize_buffer_var_to_expr: `B_data: T.Ptr[T.float32] =
    T.address_of(A_buf[16])` binds a pointer (T.Ptr was refused) that a buffer views; the
    interpreter views A's storage from element 16 on (it refused T.address_of), so B_buf's
    stores land in A[16:32], in the interpreter as in every build."""
    mod = round_trip(PTR_VIEW.format("T.float32", "float32"))
    a = np.arange(32, dtype="float32")
    want = a.copy()
    want[16:] = a[:16] * 2
    got = a.copy()
    Interpreter(mod).call("expected", got)
    np.testing.assert_array_equal(got, want)
    lib = load(driver.build(mod, tmp_path / f"ptr_o{level}.so", "llvm", level))
    got = a.copy()
    lib["expected"](got)
    np.testing.assert_array_equal(got, want)
    assert structural_equal(mod, parse(PTR_VIEW.format('T.float32, "global"', "float32")))


def test_pointer_annotation_errors() -> None:
    with pytest.raises(CompileError) as err:
        parse(PTR_VIEW.format('"float32"', "float32"))
    assert err.value.diagnostics[0].message == (
        'write T.Ptr[<dtype>] or T.Ptr[<dtype>, "<storage scope>"]')
    mod = parse(PTR_VIEW.format("T.float32", "int32").replace("A_buf[i] * 2.0",
                                                              'T.Cast("int32", A_buf[i])'))
    with pytest.raises(Exception, match=r"^buffer B_buf views T.address_of\(A_buf\[...\]\) as "
                                        r"int32, not A_buf's float32; the interpreter cannot "
                                        r"reinterpret storage$"):
        Interpreter(mod).call("expected", np.zeros(32, np.float32))


STEPPED = '''
from tvm.script import tir as T

@T.prim_func
def before(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for i in range(1, 128, 5):
        for j in T.serial(2, 128, step=3):
            B[i, j] = A[i, j] + 1.0

@T.prim_func
def symbolic(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,))
    B = T.match_buffer(b, (n,))
    for i in T.parallel(0, n, 4):
        B[i] = A[i] * 2.0
'''

CANONICAL = '''
from tvm.script import tir as T

@T.prim_func
def before(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for i in T.serial(0, 26):
        for j in T.serial(0, 42):
            B[i * 5 + 1, j * 3 + 2] = A[i * 5 + 1, j * 3 + 2] + 1.0

@T.prim_func
def symbolic(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,))
    B = T.match_buffer(b, (n,))
    for i in T.parallel((n + 3) // 4):
        B[i * 4] = A[i * 4] * 2.0
'''


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_loops_with_a_step(level: int, tmp_path: Path) -> None:
    """TVM's canonicalize_loop programs: `range(1, 128, 5)` and `T.serial(2, 128, step=3)`
    (refused as "range with a step") build the loops TVM's CanonicalizeLoop makes of them,
    and run every step-th iteration in the interpreter and in every build."""
    mod = round_trip(STEPPED)
    assert structural_equal(mod, parse(CANONICAL))
    a = np.arange(128 * 128, dtype="float32").reshape(128, 128)
    want = np.zeros_like(a)
    want[1::5, 2::3] = a[1::5, 2::3] + 1
    v = np.arange(10, dtype="float32")
    want_v = np.zeros(10, "float32")
    want_v[::4] = v[::4] * 2
    lib = load(driver.build(mod, tmp_path / f"step_o{level}.so", "llvm", level))
    for run in (Interpreter(mod).call, lambda name, *args: lib[name](*args)):
        got = np.zeros_like(a)
        run("before", a, got)
        np.testing.assert_array_equal(got, want)
        got_v = np.zeros(10, "float32")
        run("symbolic", v, got_v)
        np.testing.assert_array_equal(got_v, want_v)


@pytest.mark.parametrize(("step", "message"), [
    ("-3", "error: the step of T.serial must be positive, not -3"),
    ("0", "error: the step of T.serial must be positive, not 0"),
    ("n", "error: unsupported: T.serial with a step that is not an integer constant"),
])
def test_loop_step_errors(step: str, message: str) -> None:
    """TVM's canonicalize_loop refusals: a negative or dynamic step."""
    with pytest.raises(CompileError) as err:
        parse(f'''
from tvm.script import tir as T

@T.prim_func
def before(A: T.Buffer((128,), "float32"), n: T.int32):
    for i in T.serial(0, 127, step={step}):
        A[i] = A[i] + 1.0
''')
    assert message in str(err.value)


def test_size_variable_declared_in_a_loop_function(tmp_path: Path) -> None:
    """`rows = T.int32(is_size_var=True)` (mlc-llm's kernels) declares a size like `T.int32()`,
    alone on its line as in a tuple; the flag takes a literal bool only."""
    mod = round_trip('''
from tvm.script import tir as T

@T.prim_func
def pick(var_src: T.handle, var_rows: T.handle, var_dst: T.handle):
    rows = T.int32(is_size_var=True)
    n = T.int32(is_size_var=True)
    src = T.match_buffer(var_src, (6, n), "float32")
    idx = T.match_buffer(var_rows, (rows,), "int32")
    dst = T.match_buffer(var_dst, (rows, n), "float32")
    for r, j in T.grid(rows, n):
        with T.block("pick"):
            vr, vj = T.axis.remap("SS", [r, j])
            dst[vr, vj] = src[idx[vr], vj]
''')
    src = np.arange(18, dtype="float32").reshape(6, 3)
    idx = np.array([5, 0, 2, 2], dtype="int32")
    lib = load(driver.build(mod, tmp_path / "pick.so", "llvm", 2))
    for run in (Interpreter(mod).prim_func("pick"), lib["pick"]):
        dst = np.zeros((4, 3), dtype="float32")
        run(src, idx, dst)
        np.testing.assert_array_equal(dst, src[idx])
    with pytest.raises(CompileError, match="unexpected keyword argument 'size'"):
        parse('''
from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((8,), "float32")):
    n = T.int32(size=True)
    A[0] = T.float32(n)
''')
