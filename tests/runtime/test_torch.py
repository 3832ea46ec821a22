"""torch tensors in and out: outputs tirc allocates for torch inputs are torch tensors sharing
the allocation (DLPack, no copy), passed outputs are returned, and messages speak torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from backend_support import elementwise, emit
from tirc.ir import IRModule, Var
from tirc.ir.dtype import dtype

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import tirc.runtime as rt

    n = Var("n", dtype("int64"))
    f = elementwise("axpy", ["float32", "float32"], "float32", lambda x, y: x * 2.0 + y, n)
    path = tmp_path_factory.mktemp("torch") / "axpy.so"
    emit(IRModule({"axpy": f}), "so", None, 2, path)
    return rt.load(path)


def test_allocated_output_is_a_torch_tensor_without_a_copy(lib: Any) -> None:
    x, y = torch.arange(10, dtype=torch.float32), torch.ones(10)
    out = lib.axpy(x, y)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    torch.testing.assert_close(out, x * 2 + y)
    assert out.data_ptr() % 64 == 0  # tirc's 64-byte aligned allocation itself
    again = lib.axpy.prepare((x, y), {})
    assert again.results[0].data_ptr() == again.arrays[2].ctypes.data


def test_numpy_inputs_still_give_numpy(lib: Any) -> None:
    out = lib.axpy(np.ones(4, np.float32), np.ones(4, np.float32))
    assert type(out) is np.ndarray


def test_passed_output_is_returned(lib: Any) -> None:
    x, y, out = torch.ones(5), torch.ones(5), torch.empty(5)
    assert lib.axpy(x, y, out) is out
    torch.testing.assert_close(out, torch.full((5,), 3.0))
    buf = np.zeros(5, np.float32)
    assert lib.axpy(np.ones(5, np.float32), np.ones(5, np.float32), Out=buf) is buf


def test_messages_name_torch(lib: Any) -> None:
    x = torch.ones(4, 4)[:, 0]  # a strided view
    with pytest.raises(ValueError, match=r"pass X0\.contiguous\(\) for a copy"):
        lib.axpy(x, torch.ones(4))
    with pytest.raises(TypeError, match="expected dtype float32, got torch.float64"):
        lib.axpy(torch.ones(4, dtype=torch.float64), torch.ones(4))
    with pytest.raises(TypeError, match="cannot import the torch array through DLPack"):
        lib.axpy(torch.ones(4, requires_grad=True), torch.ones(4))
    with pytest.raises(ValueError, match=r"np\.ascontiguousarray"):
        lib.axpy(np.ones((4, 4), np.float32)[:, 0], np.ones(4, np.float32))


def test_runtime_does_not_import_torch(lib: Any) -> None:
    code = (f"import sys, numpy as np, tirc.runtime as rt\n"
            f"m = rt.load({lib.path!r})\n"
            "m.axpy(np.ones(3, np.float32), np.ones(3, np.float32))\n"
            "print('torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=Path(lib.path).parent)
    assert done.stdout.strip() == "False", done.stderr
