"""Mutated programs through the whole pipeline: every one compiles or gets a diagnostic.

    .venv/bin/python scripts/pipeline_fuzz.py --count 1000                # CPU, from seed 0
    .venv/bin/python scripts/pipeline_fuzz.py --count 500 --cuda sm_90 --start 5000
    .venv/bin/python scripts/pipeline_fuzz.py --count 500 --corpus /tmp/tvm_programs

Each seed draws a program (the samples, and the `.tir` files under each `--corpus` folder),
mutates it (tests/difftest/mutations.py) and builds it at a random -O level, sometimes with
-fbounds-check or -fmegakernel. A Python exception other than CompileError is an internal
error: its program goes to `--out` as `seed_<N>.tir` with the options in a comment, and the
run exits 1. A table of outcomes ends the run; a build slower than `--slow` seconds is listed.
The suite runs a small fixed batch (tests/e2e/test_pipeline_mutations.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from difftest.mutations import corpus, run_one  # noqa: E402


def main() -> int:
    """Run the seeds, write the programs of internal errors, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=500, help="mutated programs")
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--cuda", metavar="ARCH", help="build PTX for cuda -arch=ARCH")
    parser.add_argument("--corpus", type=Path, action="append", default=[],
                        help="another folder of .tir programs (repeatable)")
    parser.add_argument("--out", type=Path, default=Path("pipeline_fuzz_findings"),
                        help="where the programs of internal errors go")
    parser.add_argument("--slow", type=float, default=20.0, help="seconds: list slower builds")
    args = parser.parse_args()
    programs = corpus(folders=tuple(args.corpus))
    target = f"cuda -arch={args.cuda}" if args.cuda else None
    counts: Counter[str] = Counter()
    slow: list[str] = []
    for seed in range(args.start, args.start + args.count):
        began = time.perf_counter()
        out = run_one(seed, programs, target)
        took = time.perf_counter() - began
        counts[out.result] += 1
        if took > args.slow:
            slow.append(f"{seed} ({took:.0f} s, {out.source} {out.options})")
        if out.result == "internal error":
            args.out.mkdir(parents=True, exist_ok=True)
            place = args.out / f"seed_{seed}.tir"
            place.write_text(f"# {out.source} mutated, built with {out.options}"
                             f"{' for ' + target if target else ''}\n# {out.detail}\n{out.text}")
            print(f"seed {seed}: internal error: {out.detail} ({place})", flush=True)
    for result, n in sorted(counts.items()):
        print(f"{result:15} {n:6}")
    for line in slow:
        print(f"slow: {line}")
    return 1 if counts["internal error"] else 0


if __name__ == "__main__":
    sys.exit(main())
