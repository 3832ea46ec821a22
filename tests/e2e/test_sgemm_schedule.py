"""The benchmark's scheduled sgemm (samples/schedules/sgemm.tir): right results when compiled,
and an inner k loop that is the register-tiled AVX-512 kernel the schedule asks for."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from tirc.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
SGEMM = ROOT / "samples" / "schedules" / "sgemm.tir"


def compile_sample(text: str, tmp_path: Path, *args: str) -> Path:
    """`tirc` on `text` (written to a file) with `args`; the output's path."""
    src = tmp_path / "sgemm.tir"
    src.write_text(text)
    out = tmp_path / ("sgemm." + ("s" if "asm" in args else "so"))
    result = CliRunner().invoke(cli, [str(src), "-o", str(out), *args])
    assert result.exit_code == 0, f"{result.output}{result.exception!r}"
    return out


@pytest.mark.parametrize("opt", ["-O0", "-O3"])
def test_scheduled_sgemm_matches_numpy(tmp_path: Path, opt: str) -> None:
    import tirc.runtime

    lib = tirc.runtime.load(compile_sample(SGEMM.read_text().replace("1024", "64"), tmp_path,
                                           opt))
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 64), dtype=np.float32)
    b = rng.standard_normal((64, 64), dtype=np.float32)
    c = np.full((64, 64), np.nan, np.float32)
    lib.sgemm(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def hottest_loop(asm: str) -> list[str]:
    """The instructions of the basic block (from a label or a jump to the next jump) that
    holds the most `vfmadd231ps`."""
    blocks: list[list[str]] = [[]]
    for line in asm.splitlines():
        if re.match(r"^\.LBB\d+_\d+:", line):
            blocks.append([])
        elif line.startswith("\t") and not line.strip().startswith("."):
            blocks[-1].append(line.strip())
            if line.strip().startswith("j"):
                blocks.append([])
    return max(blocks, key=lambda b: sum(i.startswith("vfmadd231ps") for i in b))


def test_inner_loop_keeps_the_8x32_tile_in_zmm_registers(tmp_path: Path) -> None:
    asm = compile_sample(SGEMM.read_text(), tmp_path, "-O3", "--emit", "asm",
                         "--target", "llvm -mcpu=znver4").read_text()
    loop = hottest_loop(asm)
    fmas = [i for i in loop if i.startswith("vfmadd231ps")]
    assert len(fmas) == 64 and all("zmm" in i for i in fmas)   # 16 per k step, k unrolled by 4
    accumulators = {i.split()[-1] for i in fmas}
    assert len(accumulators) == 16
    assert loop[-1].startswith("jne")                         # the block is the loop itself
    stores = [i for i in loop if re.match(r"^vmov\w*\s+%\w+, .*\(", i)]
    assert stores == []                                        # C is not stored in the k loop
    assert not any("rsp" in i or "gather" in i for i in loop)  # no spills, no gathers
    loads = [i for i in loop if re.match(r"^vmovups\s+-?\d*\(%\w+\), %zmm", i)]
    assert len(loads) == 8                                     # B: 2 rows of 16 per k step
    broadcasts = [i for i in loop if i.startswith("vbroadcastss") or "{1to16}" in i]
    assert len(broadcasts) == 32                               # A: 8 per k step
