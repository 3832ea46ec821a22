"""What a compile imports: a whole compile of samples/matmul.tir to a shared object loads
no numpy (docs/architecture.md: numpy is imported where points are enumerated, a float is
folded or a constant interpreted), so start-up does not pay for it (benchmarks/startup.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import sys
from tirc.cli.compile_cmd import CompileOptions, compile_file
compile_file(CompileOptions(file=sys.argv[1], output=sys.argv[2]))
print(sorted(m for m in ("numpy", "tirc.ir.interpreter") if m in sys.modules))
"""


def test_a_compile_to_a_shared_object_loads_no_numpy(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", PROGRAM, str(ROOT / "samples" / "matmul.tir"),
                          str(tmp_path / "m.so")], capture_output=True, text=True, check=True)
    assert (tmp_path / "m.so").exists()
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
