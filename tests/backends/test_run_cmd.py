"""`tirc run LIB FUNC`: inputs from .npy files or made up, outputs saved, timings printed,
and mistakes reported as `tirc: error: ...` with exit status 1."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from backend_support import elementwise, emit
from click.testing import CliRunner
from tirc.cli.run_cmd import run_command
from tirc.ir import IRModule, Var
from tirc.ir.dtype import dtype


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    n = Var("n", dtype("int64"))
    f = elementwise("axpb", ["float32", "float32"], "float32", lambda x, y: x * 2.0 + y, n)
    path = tmp_path_factory.mktemp("run") / "axpb.so"
    emit(IRModule({"axpb": f}), "so", None, 1, path)
    return path


def run(*args: Any) -> Any:
    return CliRunner().invoke(run_command, [str(a) for a in args])


def test_inputs_from_files_and_saved_outputs(lib: Path, tmp_path: Path) -> None:
    x, y = np.arange(6, dtype=np.float32), np.full(6, 0.5, np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    res = run(lib, "axpb", "--input", f"X0={tmp_path / 'x.npy'}", "-i", f"X1={tmp_path / 'y.npy'}",
              "--output", tmp_path / "out", "--repeat", 3)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == "axpb(X0: float32[n], X1: float32[n], Out: float32[n] (output))"
    t = r"[\d.]+ (us|ms)"
    assert re.fullmatch(rf"3 calls: median {t}, IQR {t} \.\. {t}, min {t}, max {t}", lines[1])
    assert re.fullmatch(r"rate at the median: [\d.e+-]+ GFLOP/s \(12 operations\), "
                        r"[\d.e+-]+ GB/s \(72 bytes of arguments\)", lines[2])
    assert lines[3] == "  Out: float32[6] min 0.5 max 10.5 mean 5.5"
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "Out.npy"), x * 2 + y)


def test_random_inputs_need_symbolic_sizes(lib: Path) -> None:
    res = run(lib, "axpb", "--random")
    assert res.exit_code == 1
    assert "tirc: error: axpb: cannot make a random 'X0': symbolic size 'n' is not known " \
           "(give --dim NAME=VALUE)" in res.output
    res = run(lib, "axpb", "--random", "--dim", "n=1000")
    assert res.exit_code == 0, res.output
    assert "  Out: float32[1000]" in res.output


def test_mistakes_are_errors(lib: Path, tmp_path: Path) -> None:
    res = run(lib, "nope")
    name = Path(lib).name
    assert res.exit_code == 1 and f"error: '{name}' has no function 'nope' (it has: axpb)" \
        in res.output
    res = run(lib, "axpb")
    assert res.exit_code == 1
    assert "tirc: error: axpb: no value for parameter 'X0' (give --input NAME=FILE, or --random)" \
        in res.output
    np.save(tmp_path / "a.npy", np.zeros(4, np.float32))
    np.save(tmp_path / "b.npy", np.zeros(5, np.float32))
    res = run(lib, "axpb", "-i", f"X0={tmp_path / 'a.npy'}", "-i", f"X1={tmp_path / 'b.npy'}")
    assert res.exit_code == 1
    assert "tirc: error: axpb: argument X1: expected shape (4,), got (5,) " \
           "(n = 4 from X0.shape[0])" in res.output
    res = run(lib, "axpb", "-i", "Q=1")
    assert res.exit_code == 1 and "axpb has no parameter 'Q'" in res.output
    res = run(tmp_path / "missing.so", "axpb")
    assert res.exit_code == 1 and "no such library" in res.output
