"""Write the `--print-after-all` dumps and outputs of every build the refactors must keep, and
compare two such trees byte for byte.

    python scripts/compare_dumps.py write OUT [--root TREE] [-j 2]
    python scripts/compare_dumps.py compare BEFORE AFTER

`write` runs the `tirc` of the source tree TREE (default: this checkout) on: every sample at
-O0, -O2 and -O3 (CPU, `--emit ll`); the schedule samples (`samples/schedules/X.tir` applied
with `--schedule` to `samples/X.tir`, and sgemm.tir on its own) at -O2 and -O3; the graph
samples and samples/megakernel with `-fmegakernel=static|dynamic` for the CPU and for
`--target cuda`; and every sample for `--target cuda` at -O0 and -O2 (`--emit ptx`). Each build
goes into a folder of OUT named after it: the numbered dumps of `--dump-dir`, the output, and
`result.txt` with the exit status and stderr. Only the command line is used, so the script
runs against any commit: TREE's folders are linked into a temporary `tirc` package put first
on the import path (checked before the builds start).

`compare` lists every file that is only in one tree or differs between them; exit status 0
when the trees are byte-identical.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
PACKAGES = ("cli", "frontend", "ir", "passes", "backends", "runtime")
CUDA = "cuda -arch=sm_90"
GRAPH = ("mlp", "mlp_dps", "transformer_block")


def builds(root: Path) -> dict[str, list[str]]:
    """Every build by folder name: its tirc arguments (paths relative to `root`)."""
    samples = sorted(p for p in (root / "samples").rglob("*.tir")
                     if p.parent.name != "schedules")
    out: dict[str, list[str]] = {}
    for path in samples:
        rel = str(path.relative_to(root))
        stem = rel.removeprefix("samples/").removesuffix(".tir").replace("/", "-")
        for opt in (0, 2, 3):
            out[f"cpu-{stem}-O{opt}"] = [rel, f"-O{opt}", "--emit", "ll"]
        for opt in (0, 2):
            out[f"cuda-{stem}-O{opt}"] = [rel, f"-O{opt}", "--target", CUDA, "--emit", "ptx"]
    for path in sorted((root / "samples" / "schedules").glob("*.tir")):
        base = root / "samples" / path.name
        for opt in (2, 3):
            if base.exists():
                args = [str(base.relative_to(root)), "--schedule", str(path.relative_to(root))]
            else:
                args = [str(path.relative_to(root))]
            out[f"schedule-{path.stem}-O{opt}"] = [*args, f"-O{opt}", "--emit", "ll"]
    graph = [f"samples/{g}.tir" for g in GRAPH] + ["samples/megakernel/moe_topk.tir"]
    for rel in graph:
        stem = Path(rel).stem
        for mode in ("static", "dynamic"):
            out[f"megakernel-cpu-{stem}-{mode}"] = [rel, f"-fmegakernel={mode}", "--emit", "ll"]
            out[f"megakernel-cuda-{stem}-{mode}"] = [rel, f"-fmegakernel={mode}", "--target",
                                                     CUDA, "--emit", "ptx"]
    return out


def package_dir(root: Path, scratch: Path) -> Path:
    """A folder holding a `tirc` package whose subpackages are `root`'s folders."""
    pkg = scratch / "tirc"
    pkg.mkdir()
    for name in PACKAGES:
        (pkg / name).symlink_to(root / name)
    return scratch


def tirc_command(pythonpath: Path) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run the tirc found under `pythonpath`."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "NO_COLOR": "1", "PYTHONHASHSEED": "0"}
    return [sys.executable, "-c", "from tirc.cli.main import main; main()"], env


def check_source(pythonpath: Path, root: Path) -> None:
    """Stop unless `import tirc.ir` under `pythonpath` loads `root`'s ir folder."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    found = subprocess.run([sys.executable, "-c", "import tirc.ir; print(tirc.ir.__path__[0])"],
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    if Path(found).resolve() != (root / "ir").resolve():
        sys.exit(f"compare_dumps: tirc.ir loads from {found}, not {root / 'ir'}")


def run_build(name: str, args: list[str], root: Path, out: Path, command: list[str],
              env: dict[str, str]) -> str:
    """One build into `out/name`; returns its name and exit status."""
    folder = out / name
    dumps = folder / "dumps"
    dumps.mkdir(parents=True)
    suffix = ".ptx" if "ptx" in args else ".ll"
    proc = subprocess.run([*command, *args, "--print-after-all", "--dump-dir", str(dumps),
                           "-o", str(folder / f"out{suffix}")],
                          cwd=root, env=env, capture_output=True, text=True)
    stderr = proc.stderr.replace(str(root), "<root>").replace(str(out), "<out>")
    (folder / "result.txt").write_text(f"exit status {proc.returncode}\n{stderr}")
    return f"{name}: {proc.returncode}"


def write(out: Path, root: Path, jobs: int) -> None:
    """All builds of `root` into `out` (which must not exist yet)."""
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as scratch:
        pythonpath = package_dir(root, Path(scratch))
        check_source(pythonpath, root)
        command, env = tirc_command(pythonpath)
        todo = builds(root)
        with ThreadPoolExecutor(jobs) as pool:
            for line in pool.map(lambda item: run_build(*item, root, out, command, env),
                                 todo.items()):
                print(line, flush=True)


def compare(before: Path, after: Path) -> int:
    """Print every file only in one tree or different in the two; 1 when there is one."""
    def files(top: Path) -> set[str]:
        return {str(p.relative_to(top)) for p in top.rglob("*") if p.is_file()}

    a, b = files(before), files(after)
    problems = [f"only in {before}: {f}" for f in sorted(a - b)]
    problems += [f"only in {after}: {f}" for f in sorted(b - a)]
    problems += [f"differs: {f}" for f in sorted(a & b)
                 if not filecmp.cmp(before / f, after / f, shallow=False)]
    for line in problems:
        print(line)
    print(f"{len(a & b)} files in both, {len(problems)} differences")
    return 1 if problems else 0


def main() -> None:
    """Command line: `write` or `compare`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="build everything and keep the dumps")
    w.add_argument("out", type=Path)
    w.add_argument("--root", type=Path, default=HERE, help="source tree to run")
    w.add_argument("-j", "--jobs", type=int, default=2)
    c = sub.add_parser("compare", help="compare two trees written by `write`")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "write":
        write(args.out.resolve(), args.root.resolve(), args.jobs)
    else:
        sys.exit(compare(args.before, args.after))


if __name__ == "__main__":
    main()
