"""tirc.runtime.load("x.ptx"): metadata, argument checks, the launch plan, and the error paths
without a driver. A fake driver runs the kernels in the GPU interpreter, so the whole path from
PTX file to results is checked without a GPU."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpu_support import SAMPLE_IDS, SAMPLES, FakeDriver, sample_module
from tirc.backends.nvptx import compile_ptx, cuda_target
from tirc.driver import lower
from tirc.frontend import parse
from tirc.ir.module import IRModule
from tirc.runtime import TircError, cuda_driver, load
from tirc.runtime.cuda import load_ptx


def _build(mod: IRModule, tmp_path: Path) -> tuple[Path, FakeDriver]:
    target = cuda_target("cuda -arch=sm_90")
    path = tmp_path / "k.ptx"
    lowered = lower(mod, target, 2)
    path.write_text(compile_ptx(lowered, target).ptx)
    return path, FakeDriver(lowered)



@pytest.mark.parametrize("sample", SAMPLES, ids=SAMPLE_IDS)
def test_sample_through_the_loader_equals_numpy(sample, tmp_path: Path) -> None:
    path, fake = _build(sample_module(sample.name), tmp_path)
    module = load_ptx(path, fake)
    inputs = sample.inputs(sample.interp_sizes)
    want = sample.reference(*inputs)
    args = sample.arguments(inputs, want)
    returned = module[sample.func](*args)  # the outputs passed, as a CPU call returns them
    got = returned if isinstance(returned, tuple) else (returned,)
    assert [id(a) for a in got] == [id(args[pos]) for pos in sample.outputs]
    assert sample.matches(args, want), sample.max_error(args, want)
    assert fake.memory == {}  # every device buffer was freed


def test_outputs_left_out_are_allocated(tmp_path: Path) -> None:
    path, fake = _build(sample_module("row_sum_shared"), tmp_path)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = load_ptx(path, fake).row_sum_shared(a)
    np.testing.assert_allclose(got, a.sum(axis=1))
    assert fake.launches == [("row_sum_shared_kernel", (3, 1, 1), (128, 1, 1), 0)]


def test_grid_follows_the_symbolic_sizes(tmp_path: Path) -> None:
    path, fake = _build(sample_module("matmul_tiled"), tmp_path)
    f = load_ptx(path, fake)["matmul_tiled"]
    a = np.ones((33, 2), np.float32)
    b = np.ones((2, 17), np.float32)
    np.testing.assert_array_equal(f(a, b), np.full((33, 17), 2, np.float32))
    assert fake.launches[-1][1:3] == ((2, 3, 1), (16, 16, 1))


def test_wrong_arguments_are_python_errors(tmp_path: Path) -> None:
    path, fake = _build(sample_module("matmul_tiled"), tmp_path)
    f = load_ptx(path, fake).matmul_tiled
    a, b = np.ones((4, 3), np.float32), np.ones((5, 2), np.float32)
    with pytest.raises(ValueError) as info:
        f(a, b)
    assert str(info.value) == "matmul_tiled: argument b: expected shape (3, 2), got (5, 2)"
    with pytest.raises(TypeError, match="matmul_tiled: argument a: expected dtype float32, got "
                       "float64"):
        f(a.astype(np.float64), b)
    with pytest.raises(TypeError, match=r"matmul_tiled\(\) takes 3 arguments \(a, b, c\), got "
                       r"1; missing: b"):
        f(a)
    assert fake.launches == []


def test_scalar_parameter_and_workspace(tmp_path: Path) -> None:
    path, fake = _build(parse("""
@T.prim_func
def two(a: T.handle, b: T.handle, alpha: T.float32):
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    W = T.alloc_buffer((n,), "float32")
    for bx in T.thread_binding(n, thread="blockIdx.x"):
        for tx in T.thread_binding(1, thread="threadIdx.x"):
            W[bx] = A[bx] * alpha
    for bx in T.thread_binding(n, thread="blockIdx.x"):
        for tx in T.thread_binding(1, thread="threadIdx.x"):
            B[bx] = W[bx] + T.float32(1)
"""), tmp_path)
    a = np.arange(5, dtype=np.float32)
    b = load_ptx(path, fake).two(a, alpha=2.5)
    np.testing.assert_array_equal(b, a * 2.5 + 1)
    assert [x[0] for x in fake.launches] == ["two_kernel0", "two_kernel1"]


class _DeviceArray:
    """An array already on the (fake) device, as CuPy or PyTorch would hand it over."""

    def __init__(self, fake: FakeDriver, host: np.ndarray) -> None:
        self.ptr = fake.alloc(host.nbytes)
        fake.to_device(self.ptr, host)
        self.shape, self.dtype = host.shape, host.dtype

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "strides": None, "version": 3}


def test_device_arrays_are_used_in_place(tmp_path: Path) -> None:
    path, fake = _build(sample_module("silu_bias_2d"), tmp_path)
    rng = np.random.default_rng(0)
    x, bias = rng.standard_normal((3, 1000)).astype(np.float32), np.ones(1000, np.float32)
    dx, db = _DeviceArray(fake, x), _DeviceArray(fake, bias)
    dy = _DeviceArray(fake, np.zeros((3, 1000), np.float32))
    fake.copies = 0
    load_ptx(path, fake).silu_bias_2d(dx, db, dy)
    assert fake.copies == 0
    y = fake.memory[dy.ptr].view(np.float32).reshape(3, 1000)
    np.testing.assert_allclose(y, x / (1 + np.exp(-x)) + 1, rtol=1e-5, atol=1e-6)


def test_dynamic_shared_memory_is_opted_in(tmp_path: Path) -> None:
    path, fake = _build(parse("""
@T.prim_func
def big(A: T.Buffer((25600,), "float32")):
    S = T.alloc_buffer((25600,), "float32", scope="shared")
    for tx in T.thread_binding(256, thread="threadIdx.x"):
        for i in range(100):
            S[i * 256 + tx] = A[i * 256 + tx]
        for i in range(100):
            A[i * 256 + tx] = S[i * 256 + tx] * T.float32(2)
"""), tmp_path)
    a = np.arange(25600, dtype=np.float32)
    load_ptx(path, fake).big(a)
    np.testing.assert_array_equal(a, 2 * np.arange(25600, dtype=np.float32))
    assert fake.dynamic == {"big_kernel": 102400}
    assert fake.launches[0][3] == 102400


# ---- without a driver ----------------------------------------------------------------------


def test_importing_the_loader_opens_no_driver() -> None:
    import tirc.runtime.cuda  # noqa: F401

    assert cuda_driver._DRIVER is None or cuda_driver._DRIVER.name != "fake"


def test_load_without_a_driver_is_a_clear_error(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = _build(sample_module("silu_bias_2d"), tmp_path)
    missing = str(tmp_path / "libcuda.so.1")
    monkeypatch.setattr(cuda_driver, "_DRIVER", None)
    monkeypatch.setattr(cuda_driver, "_library_names", lambda: [missing])
    monkeypatch.setitem(__import__("sys").modules, "pycuda", None)
    monkeypatch.setitem(__import__("sys").modules, "pycuda.driver", None)
    with pytest.raises(TircError) as info:
        load(path)
    text = str(info.value)
    assert text.startswith(f"cannot load '{path}': no CUDA driver: cannot open libcuda "
                           f"({missing}: ")
    assert text.endswith("a machine with an NVIDIA GPU and its driver is needed to run PTX")


def test_ptx_without_tirc_metadata(tmp_path: Path) -> None:
    path = tmp_path / "plain.ptx"
    path.write_text(".version 8.0\n.target sm_80\n.address_size 64\n")
    with pytest.raises(TircError, match="is not a tirc PTX file \\(it has no "
                       "'// tirc-metadata:' comment block\\)"):
        load(path)


def test_damaged_metadata_and_other_abi(tmp_path: Path) -> None:
    path = tmp_path / "bad.ptx"
    path.write_text('// tirc-metadata: {"tirc_abi": 1, "functions": [\n')
    with pytest.raises(TircError, match="the tirc metadata block is damaged"):
        load(path)
    path.write_text('// tirc-metadata: {"tirc_abi": 7, "functions": []}\n')
    with pytest.raises(TircError,
                       match="uses tirc ABI version 7; this runtime reads versions 1, 2"):
        load(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such PTX file"):
        load(tmp_path / "none.ptx")


def test_output_sharing_memory_with_an_input_is_rejected(tmp_path: Path) -> None:
    path, fake = _build(sample_module("silu_bias_2d"), tmp_path)
    f = load_ptx(path, fake).silu_bias_2d
    x = np.zeros((2, 1000), np.float32)
    with pytest.raises(ValueError, match="silu_bias_2d: argument y \\(an output\\) shares memory "
                       "with argument x"):
        f(x, np.zeros(1000, np.float32), x)
    dx = _DeviceArray(fake, x)
    with pytest.raises(ValueError, match="argument y \\(an output\\) shares memory"):
        f(dx, _DeviceArray(fake, np.zeros(1000, np.float32)), dx)


def test_kernel_arguments_are_passed_by_address() -> None:
    args = [ctypes.c_uint64(0xDEAD0000), ctypes.c_int64(-5), ctypes.c_float(1.5)]
    packed = cuda_driver.pack_kernel_args(args)
    assert ctypes.cast(packed[0], ctypes.POINTER(ctypes.c_uint64))[0] == 0xDEAD0000
    assert ctypes.cast(packed[1], ctypes.POINTER(ctypes.c_int64))[0] == -5
    assert ctypes.cast(packed[2], ctypes.POINTER(ctypes.c_float))[0] == 1.5


def test_a_graph_function_returns_shapes_and_scalars(tmp_path: Path) -> None:
    """A returned `R.Shape` and `R.Prim` value (one-thread kernels store them), in nested
    tuples: the call returns the structure the metadata's `returns` gives, as on the CPU."""
    mod = parse("""\
from tvm.script import relax as R
from tvm.script import tir as T


@R.function
def main(x: R.Tensor(("n", 4), "float32"), c: R.Prim("float32")):
    n = T.int64()
    y = R.add(x, x)
    return ((y, R.shape([n * 2, 4])), c)
""")
    path, fake = _build(mod, tmp_path)
    f = load_ptx(path, fake).main
    assert f.meta["returns"] == [["y_out0", {"shape": "shape_out1"}], {"prim": "c_out2"}]
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    (y, shape), c = f(x, 1.5)
    np.testing.assert_array_equal(y, x + x)
    assert shape == (6, 4) and c == 1.5 and type(c) is float


def test_a_tuple_parameter_takes_one_tuple(tmp_path: Path) -> None:
    """A graph function's `R.Tuple` parameter: one buffer per field in the launch plan, one
    tuple from the caller, as in a CPU library (metadata `tuples`)."""
    mod = parse("""\
from tvm.script import relax as R


@R.function
def main(t: R.Tuple(R.Tensor((3, 4), "float32"), R.Tensor((3, 5), "float32"))):
    return R.concat(t, axis=1)
""")
    path, fake = _build(mod, tmp_path)
    f = load_ptx(path, fake).main
    assert f.meta["tuples"] == [{"name": "t", "params": ["t_0", "t_1"]}]
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.ones((3, 5), np.float32)
    np.testing.assert_array_equal(f((a, b)), np.concatenate([a, b], axis=1))
    np.testing.assert_array_equal(f(t=[a, b]), np.concatenate([a, b], axis=1))
    with pytest.raises(TypeError, match="main: argument t: expected a tuple of 2 arrays, got "
                       "ndarray"):
        f(a)
