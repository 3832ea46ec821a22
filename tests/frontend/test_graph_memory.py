"""TVM's memory-planned graph forms (R.builtin.alloc_tensor, R.memory.alloc_storage /
alloc_tensor / kill_*, the R.vm.* spellings, `cls.f(x, alloc)` writing its trailing
allocations): read as values, run by the interpreter and compiled at -O0 and -O3 against
NumPy; storage that cannot be honoured is a diagnostic at the form."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from graph_support import run_everywhere
from tirc.frontend import parse
from tirc.ir import CompileError

KERNELS = """\
    @T.prim_func
    def exp(A: T.Buffer((T.int64(2), T.int64(4)), "float32"),
            B: T.Buffer((T.int64(2), T.int64(4)), "float32")):
        for i, j in T.grid(T.int64(2), T.int64(4)):
            with T.block("exp"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.exp(A[vi, vj])

    @T.prim_func
    def add(A: T.Buffer((T.int64(8),), "float32"), B: T.Buffer((), "float32"),
            C: T.Buffer((T.int64(8),), "float32")):
        for i in range(T.int64(8)):
            with T.block("add"):
                vi = T.axis.spatial(T.int64(8), i)
                C[vi] = A[vi] + B[()]

    @T.prim_func
    def split(A: T.Buffer((T.int64(8),), "float32"), B: T.Buffer((T.int64(4),), "float32"),
              C: T.Buffer((T.int64(4),), "float32")):
        for i in range(T.int64(4)):
            with T.block("split"):
                vi = T.axis.spatial(T.int64(4), i)
                B[vi] = A[vi]
                C[vi] = A[vi + T.int64(4)]
"""

PLANNED = f"""\
@I.ir_module
class Module:
{KERNELS}
    @R.function
    def main(x: R.Tensor((2, 4), dtype="float32")):
        R.func_attr({{"relax.force_pure": True}})
        cls = Module
        storage: R.Object = R.memory.alloc_storage(R.shape([32]), virtual_device_index=0,
                                                   storage_scope="global", dtype="float32")
        alloc: R.Tensor((2, 4), dtype="float32") = R.memory.alloc_tensor(
            storage, 0, R.shape([2, 4]), dtype="float32")
        _ = cls.exp(x, alloc)
        lv: R.Tensor((2, 4), dtype="float32") = alloc
        lv1: R.Tensor((8,), dtype="float32") = R.reshape(lv, (8,))
        storage1: R.Object = R.vm.alloc_storage(R.shape([32]), R.prim_value(0),
                                                R.dtype("uint8"))
        alloc1 = R.vm.alloc_tensor(storage1, R.prim_value(0), R.shape([8]), R.dtype("float32"))
        cls.add(lv1, R.const(1, "float32"), alloc1)
        _ = R.vm.kill_object(lv1)
        alloc2: R.Tensor((4,), dtype="float32") = R.memory.alloc_tensor(
            storage, 0, R.shape([4]), dtype="float32")
        alloc3: R.Tensor((4,), dtype="float32") = R.memory.alloc_tensor(
            storage, 16, R.shape([4]), dtype="float32")
        _: R.Tuple() = cls.split(alloc1, alloc2, alloc3)
        _ = R.memory.kill_tensor(alloc1)
        _ = R.memory.kill_storage(storage1)
        alloc4 = R.builtin.alloc_tensor(R.shape([8]), dtype="float32", runtime_device_index=0)
        v = R.call_packed("vm.builtin.reshape", alloc3, R.shape([4]),
                          sinfo_args=(R.Tensor((4,), dtype="float32"),))
        gv = (alloc2, v, alloc4)
        return gv
"""


def test_planned_program_against_numpy(tmp_path: Path) -> None:
    """Storage reused by tensors whose lifetimes do not overlap (exp's output, then the two
    halves split writes at offsets 0 and 16 of the same 32 bytes), the R.vm spellings, a
    bare `cls.add(...)` statement, a call writing two allocations, and an allocation nothing
    writes (zeros): equal in the interpreter and compiled at -O0 and -O3."""
    x = np.linspace(-1, 1, 8, dtype="float32").reshape(2, 4)
    e = np.exp(x).reshape(8) + 1
    for got in run_everywhere(tmp_path, PLANNED, [x]):
        np.testing.assert_allclose(got[0], e[:4], rtol=1e-6)
        np.testing.assert_allclose(got[1], e[4:], rtol=1e-6)
        np.testing.assert_array_equal(got[2], np.zeros(8, "float32"))


def _error(text: str) -> str:
    """The first diagnostic parsing `text` raises, as `line:col: message`, the line counted
    from the first line of the body `_main` was given."""
    with pytest.raises(CompileError) as err:
        parse(text, "bad.tir")
    d = err.value.diagnostics[0]
    return f"{d.span.line - _main('').count(chr(10))}:{d.span.col}: {d.message}"


def _main(body: str) -> str:
    """A module of KERNELS and a `main(x)` whose body is `body` (8-space indented)."""
    return (f"@I.ir_module\nclass Module:\n{KERNELS}\n    @R.function\n"
            f"    def main(x: R.Tensor((2, 4), \"float32\")):\n        cls = Module\n{body}")


BASE = _main("").count("\n")  # the lines before a test's body


def test_storage_too_small() -> None:
    """A tensor that does not fit its storage (offset plus bytes) cannot be honoured."""
    text = _main("""\
        s = R.memory.alloc_storage(R.shape([32]), 0, "global", "uint8")
        a = R.memory.alloc_tensor(s, 4, R.shape([2, 4]), "float32")
        return x
""")
    assert _error(text) == (
        "2:13: a tensor of shape (2, 4) and dtype float32 (32 bytes) at offset 4 does not "
        "fit in storage 's' of 32 bytes (or tirc cannot prove it does: R.func_attr("
        "{\"tir_var_upper_bound\": {...}}) bounds the sizes)")


def test_read_after_an_overlapping_write() -> None:
    """A tensor read after another tensor of its storage overwrote its bytes: TVM's reads
    the new bytes, which tirc's values cannot."""
    text = _main("""\
        s = R.memory.alloc_storage(R.shape([32]), 0, "global", "uint8")
        a = R.memory.alloc_tensor(s, 0, R.shape([2, 4]), "float32")
        cls.exp(x, a)
        b = R.memory.alloc_tensor(s, 0, R.shape([2, 4]), "float32")
        cls.exp(x, b)
        y = R.add(a, b)
        return y
""")
    assert _error(text).startswith(
        f"6:19: 'a' shares storage 's' with 'b', which 'exp' (line {BASE + 5}) writes; TVM's would "
        "read those bytes")


def test_view_made_before_a_write() -> None:
    """A tuple holding an allocation, made before a call writes it, would show the new
    bytes in TVM; using it after the write is an error (the allocation's own name is fine)."""
    text = _main("""\
        a = R.builtin.alloc_tensor(R.shape([2, 4]), "float32", 0)
        t = (a,)
        cls.exp(x, a)
        y = R.add(a, t[0])
        return y
""")
    assert _error(text).startswith(f"4:22: 't' shares the bytes of 'a', which 'exp' (line "
                                   f"{BASE + 3}) writes after it was made")


def test_use_after_kill_and_leftover_bytes() -> None:
    """A killed tensor is not used again; a tensor allocated over bytes an earlier tensor
    wrote is not read before it is written."""
    killed = _main("""\
        a = R.builtin.alloc_tensor(R.shape([2, 4]), "float32", 0)
        cls.exp(x, a)
        _ = R.memory.kill_tensor(a)
        return a
""")
    assert _error(killed) == ("4:16: 'a' is used after R.memory.kill_tensor killed it (line "
                             f"{BASE + 3})")
    leftover = _main("""\
        s = R.memory.alloc_storage(R.shape([32]), 0, "global", "uint8")
        a = R.memory.alloc_tensor(s, 0, R.shape([2, 4]), "float32")
        cls.exp(x, a)
        y = R.add(a, x)
        b = R.memory.alloc_tensor(s, 0, R.shape([2, 4]), "float32")
        z = R.add(b, y)
        return z
""")
    assert _error(leftover).startswith("6:19: 'b' is read before anything writes it, and its "
                                       "bytes in storage 's' hold what 'a' wrote")


def test_a_loop_function_writing_no_allocation() -> None:
    """A call whose trailing arguments are no fresh allocations keeps call_tir's error."""
    text = _main("""\
        y = cls.exp(x, x)
        return y
""")
    assert _error(text) == "1:13: 'exp' is a loop function; call it with R.call_tir(...)"


PACKED = f"""\
@I.ir_module
class Module:
{KERNELS}
    @R.function(pure=False)
    def main(x: R.Tensor((2, 4), dtype="float32")):
        storage = R.memory.alloc_storage(R.shape([32]), R.prim_value(0), R.str("global"),
                                         R.dtype("float32"))
        alloc = R.memory.alloc_tensor(storage, R.prim_value(0), R.shape([2, 4]),
                                      R.dtype("float32"))
        _ = R.call_packed("env.twice", x, alloc, sinfo_args=(R.Tuple(),))
        y = alloc
        alloc1 = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0))
        R.call_packed("env.twice", y, alloc1, sinfo_args=R.Tuple)
        return alloc1
"""


def _twice(x: np.ndarray, out: np.ndarray) -> None:
    out[...] = 2 * x


def test_a_packed_function_writing_an_allocation(tmp_path: Path) -> None:
    """`R.call_packed("env.twice", x, alloc, sinfo_args=(R.Tuple(),))` writes `alloc`: read
    as R.call_dps_packed, run by the interpreter's externs and by the compiled library's
    slot filled with the same Python function."""
    from graph_support import compile_levels, interpret
    from tirc.runtime import load

    x = np.arange(8, dtype="float32").reshape(2, 4)
    path, libs = compile_levels(PACKED, tmp_path)
    np.testing.assert_array_equal(
        interpret(parse(PACKED, "p.tir"), [x], externs={"env.twice": _twice})[0], 4 * x)
    for level in libs:
        lib = load(tmp_path / f"ops{level}.so", externs={"env.twice": _twice})
        np.testing.assert_array_equal(lib.main(x.copy()), 4 * x)
