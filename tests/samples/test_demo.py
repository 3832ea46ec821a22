"""samples/demo.py (behind `make demo`) prints its table and fails when a check fails."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from script_modules import load_script

ROOT = Path(__file__).resolve().parents[2]


DEMO = load_script("tirc_samples_demo", ROOT / "samples" / "demo.py")


def test_demo_checks_samples(capsys: pytest.CaptureFixture[str]) -> None:
    assert DEMO.main(["transpose", "row_sum", "mlp"]) == 0
    out = capsys.readouterr().out
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") > 4}
    assert set(rows) == {"transpose", "row_sum", "mlp"}
    assert "ok (m=5,n=7" in rows["row_sum"]
    if DEMO.backend_available():
        assert "ok (3 sizes)" in rows["row_sum"] and " µs " in rows["row_sum"]
    assert not [line for line in out.splitlines() if line.startswith("error:")]
    assert "note: mlp: " in out or "ok" in rows["mlp"].split("│")[4]


def test_demo_links_the_c_library_of_a_call_dps_packed_sample(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """mlp_dps calls a C function: the demo builds mlp_dps_extern.c and passes -l/-L."""
    assert DEMO.extern_library(DEMO.REFS.BY_NAME["mlp"], tmp_path) == []
    options = DEMO.extern_library(DEMO.REFS.BY_NAME["mlp_dps"], tmp_path)
    assert options == ["-l", "mlp_dps_extern", "-L", str(tmp_path)]
    assert (tmp_path / "libmlp_dps_extern.so").is_file()
    if not DEMO.backend_available():
        return
    assert DEMO.main(["mlp_dps", "-O", "2"]) == 0
    row = [line for line in capsys.readouterr().out.splitlines() if "mlp_dps" in line][0]
    assert row.split("│")[4].strip() == "ok (2 sizes)"


def test_demo_fails_on_a_wrong_result(capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    sample = DEMO.REFS.BY_NAME["transpose"]
    broken = DEMO.REFS.Sample(**{**sample.__dict__,
                                 "reference": lambda a: [np.ascontiguousarray(a.T) + 1]})
    monkeypatch.setitem(DEMO.REFS.BY_NAME, "transpose", broken)
    assert DEMO.main(["transpose", "-O", "0"]) == 1
    out = capsys.readouterr().out
    assert "error: transpose: interpreter at static: output 0: 6144 of 6144 elements differ" in out


def test_demo_rejects_unknown_samples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        DEMO.main(["no_such_sample"])
    assert exc.value.code == 2
    assert "unknown sample no_such_sample" in capsys.readouterr().err
