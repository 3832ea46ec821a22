"""Tuning records: a JSON-lines file, appended to as measurements come in.

Each run starts with a `header` line (tirc and LLVM versions, the machine: CPU model, cores,
caches); then a `trial` line per measured candidate (workload key of the printed function,
function name, target, dims, decisions by name, status, times in seconds, seed, seconds of
tuning spent so far) and a `done` line when a task's search ended. A line belongs to the header
above it. A run killed half-way leaves at most a cut last line, which reading skips; the next
run resumes from what the file holds.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import field
from pathlib import Path
from typing import Any, TextIO

from tirc.ir.lean_dataclass import dataclass
from tirc.tune.machine import Machine, this_machine

OK = "ok"


def versions() -> dict[str, str]:
    """The tirc and LLVM versions a header records."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        tirc = version("tirc")
    except PackageNotFoundError:
        tirc = "unknown"
    import llvmlite.binding as llvm

    return {"tirc": tirc, "llvm": ".".join(map(str, llvm.llvm_version_info))}


def header(machine: Machine | None = None) -> dict[str, Any]:
    return {"kind": "header", **versions(), "machine": (machine or this_machine()).header()}


def task_id(workload: str, target: str, dims: dict[str, int]) -> str:
    """What tells one task from another in a file: workload, target and dims."""
    extra = ",".join(f"{k}={v}" for k, v in sorted(dims.items()))
    return f"{workload}|{target}|{extra}"


def decisions_key(decisions: dict[str, Any]) -> str:
    """A canonical text of a candidate's decisions (tiles as lists)."""
    return json.dumps({k: list(v) if isinstance(v, tuple) else v
                       for k, v in sorted(decisions.items())}, separators=(",", ":"))


@dataclass
class Trial:
    """One measured candidate."""

    workload: str
    func: str
    target: str
    dims: dict[str, int]
    decisions: dict[str, Any]
    status: str
    times: list[float] = field(default_factory=list)
    seed: int = 0
    elapsed: float = 0.0
    error: str = ""
    phase: str = "search"   # "search", or "final" for the re-measurement of the best

    @property
    def seconds(self) -> float:
        """The median time, infinity for a failed candidate."""
        if self.status != OK or not self.times:
            return float("inf")
        t = sorted(self.times)
        mid = len(t) // 2
        return t[mid] if len(t) % 2 else (t[mid - 1] + t[mid]) / 2

    @property
    def task(self) -> str:
        return task_id(self.workload, self.target, self.dims)

    def line(self) -> dict[str, Any]:
        out = {"kind": "trial", "workload": self.workload, "func": self.func,
               "target": self.target, "dims": self.dims,
               "decisions": json.loads(decisions_key(self.decisions)), "status": self.status,
               "times": [round(t, 9) for t in self.times], "seed": self.seed,
               "elapsed": round(self.elapsed, 3), "phase": self.phase}
        if self.error:
            out["error"] = self.error
        return out


@dataclass
class Section:
    """The lines under one header."""

    header: dict[str, Any]
    trials: list[Trial] = field(default_factory=list)
    done: list[dict[str, Any]] = field(default_factory=list)

    def same_cpu(self, machine: Machine) -> bool:
        m = self.header.get("machine", {})
        return m.get("cpu") == machine.cpu and m.get("vector_bits") == machine.vector_bits


def _trial(obj: dict[str, Any]) -> Trial:
    return Trial(workload=obj["workload"], func=obj.get("func", ""), target=obj["target"],
                 dims={k: int(v) for k, v in obj.get("dims", {}).items()},
                 decisions=obj["decisions"], status=obj["status"],
                 times=[float(t) for t in obj.get("times", [])], seed=int(obj.get("seed", 0)),
                 elapsed=float(obj.get("elapsed", 0.0)), error=obj.get("error", ""),
                 phase=obj.get("phase", "search"))


def read(path: str | Path) -> list[Section]:
    """Every section of a record file (none when it does not exist); unreadable lines are
    skipped."""
    p = Path(path)
    if not p.exists():
        return []
    sections: list[Section] = []
    for text in p.read_text().splitlines():
        try:
            obj = json.loads(text)
            kind = obj.get("kind")
            if kind == "header":
                sections.append(Section(obj))
            elif not sections:
                continue
            elif kind == "trial":
                sections[-1].trials.append(_trial(obj))
            elif kind == "done":
                sections[-1].done.append(obj)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            continue
    return sections


def matching(sections: Iterable[Section], machine: Machine, any_cpu: bool) -> Iterator[Section]:
    for s in sections:
        if any_cpu or s.same_cpu(machine):
            yield s


def best_trials(sections: Iterable[Section]) -> dict[str, Trial]:
    """The fastest valid trial per task. Where the best few were re-measured at the end of a
    run (phase "final", more repeats), the choice is among those, by their latest time."""
    latest: dict[tuple[str, str], Trial] = {}
    final: set[str] = set()
    for s in sections:
        for t in s.trials:
            if t.status == OK:
                latest[(t.task, decisions_key(t.decisions))] = t
                if t.phase == "final":
                    final.add(t.task)
    best: dict[str, Trial] = {}
    for (task, _), t in latest.items():
        if task in final and t.phase != "final":
            continue
        if task not in best or t.seconds < best[task].seconds:
            best[task] = t
    return best


def tuned_config(path: str | Path, machine: Machine, any_cpu: bool = False,
                 target_kind: str = "llvm") -> tuple[dict[str, list[dict[str, Any]]], int]:
    """The decisions to build with (`schedule.decisions`: workload -> variants by dims) from
    the best records for this machine and target kind, and how many sections were skipped
    because they were measured on another CPU."""
    sections = read(path)
    chosen = list(matching(sections, machine, any_cpu))
    out: dict[str, list[dict[str, Any]]] = {}
    for t in best_trials(chosen).values():
        if t.target.split()[0] != target_kind:
            continue
        out.setdefault(t.workload, []).append({"dims": t.dims, "decisions": t.decisions})
    for variants in out.values():
        variants.sort(key=lambda v: sorted(v["dims"].items()))
    return out, len(sections) - len(chosen)


class Writer:
    """Appends lines to a record file, each flushed to disk as it is written."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.file: TextIO | None = None

    def write(self, obj: dict[str, Any]) -> None:
        if self.file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            needs_newline = self.path.exists() and self.path.stat().st_size > 0 and \
                not self.path.read_bytes().endswith(b"\n")
            self.file = self.path.open("a")
            if needs_newline:
                self.file.write("\n")  # after a line cut short by an interrupted run
        self.file.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self.file.flush()
        os.fsync(self.file.fileno())

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
