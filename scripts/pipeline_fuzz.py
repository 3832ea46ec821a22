"""Mutated programs through the whole pipeline: every one compiles or gets a diagnostic.

    .venv/bin/python scripts/pipeline_fuzz.py --count 1000                # CPU, from seed 0
    .venv/bin/python scripts/pipeline_fuzz.py --count 500 --cuda sm_90 --start 5000
    .venv/bin/python scripts/pipeline_fuzz.py --count 500 --corpus /tmp/tvm_programs
    .venv/bin/python scripts/pipeline_fuzz.py --count 500 --run   # and run what compiles

Each seed draws a program (the samples, and the `.tir` files under each `--corpus` folder),
mutates it (tests/difftest/mutations.py) and builds it at a random -O level, sometimes with
-fbounds-check or -fmegakernel. A Python exception other than CompileError is an internal
error: its program goes to `--out` as `seed_<N>.tir` with the options in a comment, and the
run exits 1. With `--run` (CPU only), a program that compiled is also run, its results
against the reference interpreter's (tests/difftest/mutation_runs.py): a disagreement goes
to `--out` too, and a data race the interpreter found in a program that compiled to
`--out`/races (to look at: the static check sees only some). A table of outcomes ends the
run; a build slower than `--slow` seconds is listed.
The suite runs a small fixed batch (tests/e2e/test_pipeline_mutations.py).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from difftest.mutation_runs import run_mutated  # noqa: E402
from difftest.mutations import Outcome, corpus, run_one  # noqa: E402


def write_finding(out: Path, seed: int, o: Outcome, target: str | None, what: str) -> Path:
    """The program of a finding, with how it was built and what went wrong, in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    place = out / f"seed_{seed}.tir"
    place.write_text(f"# {o.source} mutated, built with {o.options}"
                     f"{' for ' + target if target else ''}\n# {what}\n{o.text}")
    return place


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
    parser.add_argument("--run", action="store_true",
                        help="run what compiles against the interpreter (CPU only)")
    args = parser.parse_args()
    if args.run and args.cuda:
        parser.error("--run runs CPU builds only")
    programs = corpus(folders=tuple(args.corpus))
    target = f"cuda -arch={args.cuda}" if args.cuda else None
    counts: Counter[str] = Counter()
    slow: list[str] = []
    work = tempfile.TemporaryDirectory(prefix="pipeline_fuzz")
    for seed in range(args.start, args.start + args.count):
        began = time.perf_counter()
        out = run_one(seed, programs, target)
        took = time.perf_counter() - began
        counts[out.result] += 1
        if took > args.slow:
            slow.append(f"{seed} ({took:.0f} s, {out.source} {out.options})")
        if out.result == "internal error":
            place = write_finding(args.out, seed, out, target, out.detail)
            print(f"seed {seed}: internal error: {out.detail} ({place})", flush=True)
        if out.result == "ok" and args.run:
            ran = run_mutated(seed, out.text, out.level, out.bounds_check, out.megakernel,
                              Path(work.name))
            counts[f"run: {ran.result}" + (f" ({ran.detail})" if ran.result == "skipped"
                                            else "")] += 1
            if ran.result in ("wrong", "run-error", "race"):
                place = write_finding(args.out / ("races" if ran.result == "race" else ""),
                                      seed, out, target, f"{ran.result}: {ran.detail}")
                print(f"seed {seed}: {ran.result}: {ran.detail} ({place})", flush=True)
    work.cleanup()
    for result, n in sorted(counts.items()):
        print(f"{result:15} {n:6}")
    for line in slow:
        print(f"slow: {line}")
    return 1 if counts["internal error"] or counts["run: wrong"] or counts["run: run-error"] \
        else 0


if __name__ == "__main__":
    sys.exit(main())
