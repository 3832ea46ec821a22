"""Every sample (loop and graph level), compiled by the `tirc` command at -O0 and -O3, agrees
with NumPy.

Each library is built once with the command's own arguments (`tirc SAMPLE -o OUT.so -O3`, run
in-process through click's runner to spare a Python start per build; one test runs the real
executable), loaded with `tirc.runtime.load`, and called at every compiled size of the sample:
a dynamic-shape sample runs several sizes from one `.so`.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from script_modules import sample_references

ROOT = Path(__file__).resolve().parents[2]
OPT_LEVELS = ("-O0", "-O3")


def _tirc_command() -> list[str] | None:
    """The `tirc` executable beside this Python (the virtual environment's), else on PATH."""
    beside = Path(sys.executable).with_name("tirc")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("tirc")
    return [found] if found else None


def _missing_backend() -> str | None:
    """Why compiled runs cannot happen here, or None when the backend and runtime exist."""
    if importlib.util.find_spec("tirc.backends.llvm") is None:
        return "the LLVM backend (tirc.backends.llvm) is not written yet"
    runtime = importlib.util.find_spec("tirc.runtime")
    if runtime is None or not hasattr(importlib.import_module("tirc.runtime"), "load"):
        return "the runtime loader (tirc.runtime.load) is not written yet"
    if _tirc_command() is None:
        return "the tirc command is not installed"
    return None


REFS = sample_references()
MISSING = _missing_backend()
pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"compiled runs skipped: {MISSING}")


class Libraries:
    """Libraries built on first use, one per (sample, -O level), in one temporary folder."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.built: dict[tuple[str, str], Path] = {}

    def path(self, name: str, opt: str) -> Path:
        if (name, opt) not in self.built:
            from click.testing import CliRunner
            from tirc.cli.main import cli

            out = self.out_dir / f"{name}{opt}.so"
            args = [str(REFS.BY_NAME[name].path), "-o", str(out), opt, *self.link(name)]
            result = CliRunner().invoke(cli, args)
            assert result.exit_code == 0, (f"tirc {' '.join(args)} exited {result.exit_code}:\n"
                                           f"{result.output}{result.exception!r}")
            self.built[(name, opt)] = out
        return self.built[(name, opt)]

    def link(self, name: str) -> list[str]:
        """The linker flags of a sample that calls external functions (its C library, built
        here once), else none."""
        if not REFS.BY_NAME[name].externs:
            return []
        lib = self.out_dir / "libmlp_dps_extern.so"
        if not lib.exists():
            from tirc.backends.link import c_compiler

            subprocess.run([*c_compiler(), "-shared", "-fPIC", "-O2", "-o", str(lib),
                            str(ROOT / "samples" / "mlp_dps_extern.c")], check=True,
                           capture_output=True, text=True)
        return ["-l", "mlp_dps_extern", "-L", str(self.out_dir)]

    def load(self, name: str, opt: str):
        import tirc.runtime

        return tirc.runtime.load(self.path(name, opt))


@pytest.fixture(scope="module")
def libraries(tmp_path_factory: pytest.TempPathFactory) -> Libraries:
    return Libraries(tmp_path_factory.mktemp("samples_so"))


@pytest.mark.parametrize("opt", OPT_LEVELS)
@pytest.mark.parametrize("name", sorted(s.name for s in REFS.LOOP_SAMPLES))
def test_compiled_sample_matches_numpy(libraries: Libraries, name: str, opt: str) -> None:
    sample = REFS.BY_NAME[name]
    fn = libraries.load(name, opt)[sample.func]
    for sizes in sample.compiled_sizes:
        inputs = sample.inputs(sizes, seed=2)
        expected = sample.expected(inputs)
        args = sample.arguments(inputs, expected)
        returned = fn(*args)  # the outputs passed come back, as torch's out= does
        got = returned if isinstance(returned, tuple) else (returned,)
        outs = [a for a, p in zip(args, fn.params) if p.get("output")]
        assert len(got) == len(outs) and all(r is o for r, o in zip(got, outs))
        assert REFS.mismatch(sample.output_values(args), expected) is None, (sizes, opt)
        untouched = [a for k, a in enumerate(args) if k not in sample.outputs]
        assert all(np.array_equal(a, b) for a, b in zip(untouched, inputs))


@pytest.mark.parametrize("opt", OPT_LEVELS)
@pytest.mark.parametrize("name", sorted(s.name for s in REFS.GRAPH_SAMPLES))
def test_compiled_graph_sample_matches_numpy(libraries: Libraries, name: str, opt: str) -> None:
    """A graph sample (legalized, fused, default-scheduled at -O3; kernel by kernel at -O0)
    gives NumPy's outputs at each of its sizes, its inputs untouched."""
    sample = REFS.BY_NAME[name]
    fn = libraries.load(name, opt)[sample.func]
    for sizes in sample.compiled_sizes:
        inputs = sample.inputs(sizes, seed=2)
        kept = [a.copy() for a in inputs]
        returned = fn(*inputs)
        got = list(returned) if isinstance(returned, tuple) else [returned]
        assert REFS.mismatch(got, sample.expected(kept)) is None, (sizes, opt)
        assert all(np.array_equal(a, b) for a, b in zip(inputs, kept))


@pytest.mark.parametrize("name", sorted(s.name for s in REFS.LOOP_SAMPLES if s.is_dynamic))
def test_dynamic_sample_allocates_outputs_by_size(libraries: Libraries, name: str) -> None:
    """Left out, outputs are allocated from the symbolic shapes bound by the inputs."""
    sample = REFS.BY_NAME[name]
    fn = libraries.load(name, "-O3")[sample.func]
    assert len(sample.compiled_sizes) >= 2
    for sizes in reversed(sample.compiled_sizes):
        inputs = sample.inputs(sizes, seed=3)
        expected = sample.expected(inputs)
        result = fn(*inputs)
        got = list(result) if isinstance(result, tuple) else [result]
        assert REFS.mismatch(got, expected) is None, sizes


def test_dynamic_library_rejects_inconsistent_sizes(libraries: Libraries) -> None:
    """One `.so` serves every size, but sizes bound by one argument must hold for the rest."""
    import tirc.runtime

    fn = libraries.load("batch_matmul_nt", "-O3").batch_matmul_nt
    a = np.zeros((3, 32, 16), np.float32)
    b = np.zeros((4, 24, 16), np.float32)
    c = np.zeros((3, 32, 24), np.float32)
    with pytest.raises((tirc.runtime.TircError, ValueError, TypeError), match="batch_matmul_nt"):
        fn(a, b, c)


def test_the_tirc_executable_builds_a_sample(tmp_path: Path) -> None:
    """The installed command, in its own process, builds a library the runtime can call."""
    import tirc.runtime

    sample = REFS.BY_NAME["softmax"]
    out = tmp_path / "softmax.so"
    proc = subprocess.run([*(_tirc_command() or ["tirc"]), str(sample.path), "-o", str(out),
                           "-O3"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    fn = tirc.runtime.load(out).softmax
    inputs = sample.inputs({"n": 5})
    assert REFS.mismatch([fn(*inputs)], sample.expected(inputs)) is None
