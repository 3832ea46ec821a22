"""Virtual threads on the CPU, as in TVM (whose default pipeline runs InjectVirtualThread for
every target): a loop bound to `vthread`, `vthread.x/y/z` (written, or a schedule's `bind`)
becomes an unrolled loop, and the compiled code at -O0 and -O3 equals the interpreter (which
runs it as a sequential loop) and numpy. A barrier inside one, and a real GPU thread axis,
are clear errors on the CPU target."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tirc.driver import build
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter import Interpreter
from tirc.ir.module import IRModule
from tirc.passes.static_check.static_check_pass import check_function
from tirc.passes.vthread import inject_virtual_threads
from tirc.runtime import load

# A local buffer indexed by the virtual thread: written by one vthread loop, read mirrored by
# another (right only if every virtual thread of the first loop ran before the second).
LOCAL = '''
@T.prim_func
def vt_local(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in range(16):
        r = T.decl_buffer((4,), "float32", scope="local")
        for vx in T.thread_binding(4, thread="vthread.x"):
            r[vx] = A[i * 4 + vx] * T.float32(2)
        for vt in T.thread_binding(4, thread="vthread"):
            B[i * 4 + vt] = r[vt] + r[3 - vt]
'''

# Two nested virtual-thread axes, each thread keeping a 2 x 3 tile in a local buffer.
NESTED = '''
@T.prim_func
def vt_nested(A: T.Buffer((8, 12), "float32"), B: T.Buffer((8, 12), "float32")):
    for i, j in T.grid(4, 4):
        acc = T.decl_buffer((6,), "float32", scope="local")
        for vy in T.thread_binding(2, thread="vthread.y"):
            for vz in T.thread_binding(3, thread="vthread.z"):
                acc[vy * 3 + vz] = A[i * 2 + vy, j * 3 + vz] + T.float32(1)
        for vy in T.thread_binding(2, thread="vthread.y"):
            for vz in T.thread_binding(3, thread="vthread.z"):
                B[i * 2 + vy, j * 3 + vz] = acc[vy * 3 + vz] * acc[(1 - vy) * 3 + 2 - vz]
'''

# Virtual threads inside a parallel loop (each iteration its own local buffer), and a parallel
# loop inside a virtual thread.
PARALLEL = '''
@T.prim_func
def vt_parallel(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in T.parallel(16):
        r = T.decl_buffer((4,), "float32", scope="local")
        for vx in T.thread_binding(4, thread="vthread.x"):
            r[vx] = A[i * 4 + vx] * T.float32(2)
        for vt in T.thread_binding(4, thread="vthread"):
            B[i * 4 + vt] = r[vt] + r[3 - vt]
    for vt in T.thread_binding(4, thread="vthread"):
        for i in T.parallel(16):
            B[vt * 16 + i] = B[vt * 16 + i] + T.float32(1)
'''

# A matmul whose 2 x 2 output tile comes from virtual threads bound by a CPU schedule.
MATMUL = '''
@T.prim_func
def mm(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8, 16), "float32"),
       C: T.Buffer((16, 16), "float32")):
    for i, j, k in T.grid(16, 16, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@S.schedule("mm", target="llvm")
def _(sch):
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, 2])
    j0, j1 = sch.split(j, factors=[None, 2])
    sch.reorder(i0, j0, i1, j1, k)
    sch.bind(i1, "vthread.y")
    sch.bind(j1, "vthread.x")
'''


def _local(a: np.ndarray) -> np.ndarray:
    """What LOCAL computes."""
    r = (2 * a).reshape(16, 4)
    return (r + r[:, ::-1]).reshape(64)


def _nested(a: np.ndarray) -> np.ndarray:
    """What NESTED computes."""
    t = (a + 1).reshape(4, 2, 4, 3)
    return (t * t[:, ::-1, :, ::-1]).reshape(8, 12)


def _cases() -> list[tuple[str, str, list[np.ndarray], np.ndarray]]:
    """(program, function, inputs, what numpy computes) for each virtual-thread program."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal(64).astype(np.float32)
    n = rng.standard_normal((8, 12)).astype(np.float32)
    # small integers: the matmul's sums are exact in any order (-O3 contracts and reorders)
    x = rng.integers(-4, 5, (16, 8)).astype(np.float32)
    y = rng.integers(-4, 5, (8, 16)).astype(np.float32)
    return [(LOCAL, "vt_local", [a], _local(a)), (NESTED, "vt_nested", [n], _nested(n)),
            (MATMUL, "mm", [x, y], x @ y), (PARALLEL, "vt_parallel", [a], _local(a) + 1)]


CASES = _cases()
IDS = ["local", "nested", "schedule_bind", "parallel"]


def _parse(text: str) -> IRModule:
    """The module of a program text."""
    return parse(text)


@pytest.mark.parametrize(("text", "name", "args", "want"), CASES, ids=IDS)
def test_interpreter_and_static_check(text: str, name: str, args: list[np.ndarray],
                                      want: np.ndarray) -> None:
    mod = _parse(text)
    assert check_function(mod[name]) == []
    out = np.zeros_like(want)
    Interpreter(mod).call(name, *args, out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("level", [0, 3])
@pytest.mark.parametrize(("text", "name", "args", "want"), CASES, ids=IDS)
def test_compiled_equals_interpreter_and_numpy(text: str, name: str, args: list[np.ndarray],
                                               want: np.ndarray, level: int,
                                               tmp_path: Path) -> None:
    path = tmp_path / f"{name}_O{level}.so"
    build(_parse(text), path, opt_level=level)
    got, ref = np.zeros_like(want), np.zeros_like(want)
    load(path)[name](*args, got)
    Interpreter(_parse(text)).call(name, *args, ref)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_function_without_virtual_threads_is_left_alone() -> None:
    """The pass now runs in every CPU compile: it must not rebuild what it does not change."""
    func = _parse(MATMUL.split("@S.schedule")[0])["mm"]
    assert inject_virtual_threads(func, cpu=True) is func


def _build_error(text: str, tmp_path: Path) -> str:
    """The message of the first diagnostic a CPU build of `text` stops on."""
    with pytest.raises(CompileError) as err:
        build(_parse(text), tmp_path / "f.so", opt_level=0)
    return err.value.diagnostics[0].message


def test_a_barrier_inside_a_virtual_thread_is_an_error_on_the_cpu(tmp_path: Path) -> None:
    msg = _build_error('''
@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    S = T.alloc_buffer((8,), "float32")
    for vt in T.thread_binding(8, thread="vthread.x"):
        S[vt] = A[vt]
        T.tvm_storage_sync("shared")
        B[vt] = S[7 - vt]
''', tmp_path)
    assert msg == ("inject-vthread: virtual-thread loop 'vt' (vthread.x) holds a barrier "
                   "(T.tvm_storage_sync), which has no meaning on the CPU target")


def test_a_real_thread_axis_is_still_an_error_on_the_cpu(tmp_path: Path) -> None:
    msg = _build_error('''
@T.prim_func
def f(A: T.Buffer((8, 4), "float32")):
    for vt in T.thread_binding(4, thread="vthread.x"):
        for tx in T.thread_binding(8, thread="threadIdx.x"):
            A[tx, vt] = T.float32(1)
''', tmp_path)
    assert msg == ("codegen: loop 'tx' is bound to GPU thread 'threadIdx.x', which the CPU "
                   "target cannot run")


def test_a_virtual_thread_left_for_the_backend_names_the_missing_step(tmp_path: Path) -> None:
    """With inject-vthread disabled, the CPU backend's error names that step."""
    from click.testing import CliRunner
    from tirc.cli.main import cli

    src = tmp_path / "v.tir"
    src.write_text('''from tvm.script import tir as T


@T.prim_func
def f(A: T.Buffer((8,), "float32")):
    for vt in T.thread_binding(8, thread="vthread.x"):
        A[vt] = T.float32(1)
''')
    result = CliRunner().invoke(cli, [str(src), "--disable-pass", "inject-vthread", "-o",
                                      str(tmp_path / "v.so")])
    assert result.exit_code == 1
    assert f"{src}:6:5: error: codegen: loop 'vt' is bound to virtual thread 'vthread.x', " \
        "which inject-vthread makes a plain loop: the pipeline must run inject-vthread" \
        in result.output
