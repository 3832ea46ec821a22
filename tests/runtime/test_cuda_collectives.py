"""A program for the CUDA target on a mesh of two GPUs, without GPUs: its PTX assembles, its
launch plan runs each collective as a device-memory step (no host library needed), and two
fake devices in two threads (kernels in the GPU interpreter, the collective done in numpy
between them where NCCL would run) give NumPy's result."""

from __future__ import annotations

import ctypes
import subprocess
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpu_support import FakeDriver, require_ptxas
from tirc.backends.nvptx import compile_ptx, cuda_target
from tirc.driver import lower
from tirc.frontend import parse
from tirc.ir.dist import numpy_collectives
from tirc.runtime import cuda_ccl
from tirc.runtime.cuda import load_ptx

PROGRAM = '''
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    I.module_global_infos({"mesh": [R.device_mesh((2,), I.Range(0, 2))]})

    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w1: R.DTensor((8, 16), "float32", "mesh[0]", "S[1]"),
             w2: R.DTensor((16, 8), "float32", "mesh[0]", "S[0]")):
        with R.dataflow():
            h = R.nn.relu(R.matmul(x, w1))
            y = R.matmul(h, w2)
            R.output(y)
        return y
'''


def _build(tmp_path: Path) -> tuple[Path, Any, dict[str, Any]]:
    target = cuda_target("cuda -arch=sm_90")
    lowered = lower(parse(PROGRAM), target, 2)
    result = compile_ptx(lowered, target)
    path = tmp_path / "tp.ptx"
    path.write_text(result.ptx)
    return path, lowered, result.metadata


def test_collectives_are_device_steps_of_the_launch_plan(tmp_path: Path) -> None:
    path, _, meta = _build(tmp_path)
    (fn,) = meta["functions"]
    (step,) = fn["host_calls"]
    assert step["symbol"] == "tirc_ccl_all_reduce" and step["ccl"] is True
    assert [a["role"] for a in step["args"]] == ["in", "in", "out"]
    assert "libraries" not in meta
    assert fn["sharding"] == {"mesh": [2], "axes": ["d0"], "params": ["R", "S[1]", "S[0]"],
                              "results": ["R"]}
    ptxas = require_ptxas()
    proc = subprocess.run([ptxas, "-arch=sm_90", str(path), "-o", str(tmp_path / "tp.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


class _Exchange:
    """What NCCL does between the two devices: each thread posts its send buffer, the
    collective is computed once both have, and each gets its part."""

    def __init__(self) -> None:
        self.barrier = threading.Barrier(2, timeout=60)
        self.posted: dict[int, np.ndarray] = {}
        self.local = threading.local()

    def function(self, symbol: str) -> Any:
        assert symbol == "tirc_ccl_all_reduce"

        def call(tensors: Any, n: int) -> int:
            driver, rank = self.local.driver, self.local.rank
            send, params, recv = (tensors[k].contents for k in range(3))
            shape = tuple(send.shape[d] for d in range(send.ndim))
            host = np.zeros(shape, np.float32)
            driver.to_host(host, send.data)
            values = np.ctypeslib.as_array(ctypes.cast(params.data,
                                                       ctypes.POINTER(ctypes.c_int64)), (5,))
            assert list(values) == [1, 2, 0, 0, 0]  # mesh (2,), axis 0, sum
            self.posted[rank] = host
            self.barrier.wait()
            total = numpy_collectives.all_reduce([self.posted[0], self.posted[1]], "sum")[rank]
            self.barrier.wait()
            driver.to_device(recv.data, total)
            return 0

        return call


def test_two_fake_gpus_give_numpys_result(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path, lowered, _ = _build(tmp_path)
    exchange = _Exchange()
    monkeypatch.setattr(cuda_ccl, "ccl_function", exchange.function)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype("float32")
    w1 = rng.standard_normal((8, 16)).astype("float32")
    w2 = rng.standard_normal((16, 8)).astype("float32")
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def device(rank: int) -> None:
        try:
            driver = FakeDriver(lowered)
            exchange.local.driver, exchange.local.rank = driver, rank
            lib = load_ptx(path, driver=driver)
            results[rank] = lib["main"](x, np.ascontiguousarray(w1[:, rank * 8:rank * 8 + 8]),
                                        np.ascontiguousarray(w2[rank * 8:rank * 8 + 8]))
        except BaseException as exc:  # noqa: BLE001 (reported by the test)
            errors.append(exc)
            exchange.barrier.abort()

    threads = [threading.Thread(target=device, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    want = np.maximum(x.astype(np.float64) @ w1, 0) @ w2
    for r in range(2):
        np.testing.assert_allclose(results[r], want, rtol=1e-4, atol=1e-4)
