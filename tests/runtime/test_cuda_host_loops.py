"""A serial loop around kernel launches (dlight's fallback for a reduction it cannot schedule)
stays on the host, as TVM keeps it: gpu-split-host-device leaves the loop in the host function,
the launch plan has a `for` step whose body launches the kernel with the loop's variable as an
argument, and tirc.runtime runs it once per value. Runs through a fake driver (kernels in the
GPU interpreter) at -O0 and -O3 against the reference interpreter; the PTX goes through ptxas."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gpu_support import FakeDriver, require_ptxas
from tirc.backends.nvptx import compile_ptx, cuda_target
from tirc.backends.nvptx.ptxas import run_ptxas
from tirc.driver import lower
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter
from tirc.runtime.cuda import load_ptx

# Each step reads what the step before it stored: the launches must run in the loop's order.
CARRIED = '''
@T.prim_func
def f(a: T.handle, B: T.Buffer((8,), "float32")):
    n = T.int64()
    A = T.match_buffer(a, (n, 8), "float32")
    for i in range(n):
        for bx in T.thread_binding(1, thread="blockIdx.x"):
            for tx in T.thread_binding(8, thread="threadIdx.x"):
                B[tx] = B[tx] * T.float32(2) + A[i, tx]
'''


@pytest.mark.parametrize("opt", [0, 3])
def test_host_loop_launches_the_kernel_once_per_iteration_in_order(opt: int,
                                                                   tmp_path: Path) -> None:
    lowered = lower(parse(CARRIED), cuda_target("cuda -arch=sm_80"), opt)
    result = compile_ptx(lowered, "cuda -arch=sm_80", opt)
    (plan,) = result.metadata["functions"]
    assert plan["steps"] == [{"kind": "for", "var": "i", "min": 0, "extent": "n",
                              "body": [{"kind": "launch", "index": 0}]}]
    assert {"kind": "expr", "expr": "i", "dtype": "int64"} in plan["launches"][0]["args"]
    assert "//   for i from 0, n times:" in result.ptx
    path = tmp_path / "m.ptx"
    path.write_text(result.ptx)
    fake = FakeDriver(lowered)
    f = load_ptx(path, fake).f
    a = np.arange(40, dtype=np.float32).reshape(5, 8) / 4 - 3
    b0 = np.linspace(-1, 1, 8).astype(np.float32)
    want = b0.copy()
    Interpreter(parse(CARRIED)).call("f", a, want)
    b = b0.copy()
    f(a, b)
    np.testing.assert_allclose(b, want, rtol=1e-6)
    assert len(fake.launches) == 5


def test_ptx_with_a_host_loop_assembles() -> None:
    require_ptxas()
    lowered = lower(parse(CARRIED), cuda_target("cuda -arch=sm_80"), 2)
    assert run_ptxas(compile_ptx(lowered, "cuda -arch=sm_80").ptx, "sm_80")[0]
