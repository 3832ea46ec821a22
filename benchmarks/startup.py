"""Start-up: a whole-process compile against the imports every compile needs anyway.

    python benchmarks/startup.py              # medians of 9 runs of each, interleaved
    python benchmarks/startup.py -n 21 --sample samples/matmul.tir

Times, in one run and alternating between them so machine load hits both alike:
- `python -c "import numpy, llvmlite.binding, lark, click"` (the floor: the libraries a
  compile to a shared object cannot avoid);
- `tirc samples/matmul.tir -o m.so` (the whole process: start-up, parse, the default
  pipeline, LLVM, the system linker);
- `tirc samples/matmul.tir --emit tir -o -` (no backend: what the lazy imports save),
and prints each median (wall clock, and the CPU time of the process, user + system, which other
work on the machine disturbs less) with its ratio to the floor. The target is a wall-clock
ratio within 2.5x for the shared object. Timing figures taken on a loaded machine are noisy;
rerun on a quiet one.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLOOR = "import numpy, llvmlite.binding, lark, click"


def tirc_command() -> list[str]:
    """The `tirc` console script beside this Python, else the same entry point through -c."""
    script = Path(sys.executable).with_name("tirc")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from tirc.cli.main import main; main()"]


def run_once(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one run (a failed run stops the benchmark)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=ROOT, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    """Parse the options, time the commands, print the medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--runs", type=int, default=9, help="runs of each command")
    parser.add_argument("--sample", default="samples/matmul.tir", help="the .tir file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        commands = {
            "floor (import numpy, llvmlite.binding, lark, click)":
                [sys.executable, "-c", FLOOR],
            f"tirc {args.sample} -o m.so": [*tirc_command(), args.sample, "-o",
                                            str(Path(tmp) / "m.so")],
            f"tirc {args.sample} --emit tir -o -": [*tirc_command(), args.sample, "--emit",
                                                    "tir", "-o", "-"],
        }
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        # Warm the file cache and write the .pyc files a user's machine has (even where the
        # environment says PYTHONDONTWRITEBYTECODE, which would compile every changed module
        # from source in each timed run).
        writing = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        for command in commands.values():
            run_once(command, writing)
        for _ in range(args.runs):
            for name, command in commands.items():
                times[name].append(run_once(command))
    wall = {name: statistics.median(w for w, _ in t) for name, t in times.items()}
    cpu = {name: statistics.median(c for _, c in t) for name, t in times.items()}
    floor_wall, floor_cpu = next(iter(wall.values())), next(iter(cpu.values()))
    width = max(len(n) for n in wall)
    print(f"median of {args.runs} runs each{'':<{width - 23}}  wall clock        CPU time")
    for name in wall:
        print(f"{name:<{width}}  {wall[name] * 1000:6.0f} ms {wall[name] / floor_wall:5.2f}x  "
              f"{cpu[name] * 1000:6.0f} ms {cpu[name] / floor_cpu:5.2f}x")


if __name__ == "__main__":
    main()
