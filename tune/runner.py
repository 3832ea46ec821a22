"""The runner: a separate process that times candidates one at a time and checks their output.

`Runner` (in the tuner) starts `python -m tirc.tune.runner` and talks to it in JSON lines. For
a task it is sent the default schedule's library first: it makes the inputs (seeded, sizes from
the task's dims) and keeps the default's outputs. Each candidate is then loaded, called once on
fresh copies of the inputs and its outputs compared with the default's; then timed as the median
of `repeats` runs of at least `min_ms` milliseconds each. A candidate that crashes the process,
or does not answer within its deadline, is recorded as such, and the runner is started again.
"""

from __future__ import annotations

import json
import math
import os
import selectors
import subprocess
import sys
import time
from dataclasses import field
from typing import Any

from tirc.ir.lean_dataclass import dataclass

SLOW_FACTOR = 20.0      # a first call this much slower than the default's is not timed further


# ---- the process side --------------------------------------------------------------------


def _inputs(fn: Any, dims: dict[str, int], seed: int) -> list[Any]:
    """Random arguments, arrays 64-byte aligned as the runtime's own allocations (and
    MetaSchedule's runner) are: numpy puts a large array 16 bytes past a cache line, which
    splits every vector access in two (a layer norm read 48 GB/s so, 66 aligned)."""
    import numpy as np
    from tirc.runtime.dlpack import numpy_dtype
    from tirc.runtime.shape_expr import evaluate

    rng = np.random.default_rng(seed)
    arrays: list[Any] = []
    for p in fn.params:
        if p["kind"] == "scalar":
            value = dims.get(p["name"], 1)
            arrays.append(float(value) if p["dtype"].startswith("float") else int(value))
            continue
        shape = tuple(evaluate(d, dims) for d in p["shape"])
        dt = numpy_dtype(p["dtype"])
        if dt.kind == "f":
            arrays.append(_aligned(rng.uniform(-1.0, 1.0, shape).astype(dt)))
        elif dt.kind == "b":
            arrays.append(_aligned(rng.integers(0, 2, shape).astype(bool)))
        else:
            arrays.append(_aligned(rng.integers(0, 8, shape).astype(dt)))
    return arrays


def _aligned(a: Any) -> Any:
    """A 64-byte aligned copy of array `a`."""
    from tirc.runtime import empty_aligned

    out = empty_aligned(a.shape, a.dtype, zero=False)
    out[...] = a
    return out


def _fresh(arrays: list[Any]) -> list[Any]:
    return [_aligned(a) if hasattr(a, "copy") else a for a in arrays]


def _outputs(fn: Any, arrays: list[Any]) -> list[Any]:
    return [a for p, a in zip(fn.params, arrays) if p.get("output")]


def _mismatch(got: list[Any], want: list[Any]) -> str:
    import numpy as np

    for k, (g, w) in enumerate(zip(got, want)):
        if g.dtype.kind == "f":
            scale = float(np.max(np.abs(w))) if w.size else 1.0
            if not np.allclose(g, w, rtol=1e-3, atol=1e-4 * max(scale, 1.0), equal_nan=True):
                err = float(np.nanmax(np.abs(g.astype("float64") - w)))
                return f"output {k} differs from the default schedule's (max error {err:.3g})"
        elif not np.array_equal(g, w):
            return f"output {k} differs from the default schedule's"
    return ""


class _Serve:
    """The state of the runner process: the current task's inputs and reference outputs."""

    def __init__(self) -> None:
        self.inputs: list[Any] = []
        self.reference: list[Any] = []
        self.ref_seconds = 0.0

    def load(self, msg: dict[str, Any]) -> Any:
        import tirc.runtime as rt

        return rt.load(msg["lib"])[msg["func"]]

    def task(self, msg: dict[str, Any]) -> dict[str, Any]:
        fn = self.load(msg)
        self.inputs = _inputs(fn, msg.get("dims", {}), msg.get("seed", 0))
        args = _fresh(self.inputs)
        start = time.perf_counter()
        fn(*args)
        self.ref_seconds = time.perf_counter() - start
        self.reference = _outputs(fn, args)
        return {"status": "ok"}

    def time(self, msg: dict[str, Any]) -> dict[str, Any]:
        fn = self.load(msg)
        args = _fresh(self.inputs)
        start = time.perf_counter()
        fn(*args)
        first = time.perf_counter() - start
        if msg.get("check", True):
            problem = _mismatch(_outputs(fn, args), self.reference)
            if problem:
                return {"status": "wrong", "error": problem}
        if self.ref_seconds and first > SLOW_FACTOR * self.ref_seconds + 0.05:
            return {"status": "ok", "times": [first], "note": "slow"}
        call = fn.prepare(tuple(args), {})
        number = max(1, math.ceil(msg.get("min_ms", 50) / 1e3 / max(first, 1e-7)))
        times = []
        for _ in range(msg.get("repeats", 3)):
            start = time.perf_counter()
            for _ in range(number):
                fn.call_prepared(call)
            times.append((time.perf_counter() - start) / number)
        return {"status": "ok", "times": times}


def serve() -> None:
    """Answer JSON-line requests on stdin until it closes."""
    state = _Serve()
    for line in sys.stdin:
        msg = json.loads(line)
        try:
            answer = state.task(msg) if msg["op"] == "task" else state.time(msg)
        except Exception as e:  # a candidate's failure is its result, never the runner's end
            answer = {"status": "run_error", "error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


# ---- the tuner side ----------------------------------------------------------------------


@dataclass
class Timing:
    """What the runner answered about one candidate."""

    status: str
    times: list[float] = field(default_factory=list)
    error: str = ""


class Runner:
    """The runner process, restarted after a candidate kills it or hangs."""

    def __init__(self, min_ms: float = 50.0, repeats: int = 3) -> None:
        self.min_ms = min_ms
        self.repeats = repeats
        self.proc: subprocess.Popen[str] | None = None
        self.task_msg: dict[str, Any] | None = None
        self.buffer = ""
        self.failure = ""   # why the last request got no answer: "crash" or "timeout"

    def start(self) -> None:
        """Start the process now, so that its imports overlap the first builds."""
        if self.proc is None:
            self._start()

    def _start(self) -> None:
        env = dict(os.environ)
        self.proc = subprocess.Popen([sys.executable, "-m", "tirc.tune.runner"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, env=env)
        self.buffer = ""

    def _ask(self, msg: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """The answer, or None when the process died or did not answer in time (then it is
        stopped; the next request starts a new one)."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
            if self.task_msg is not None and msg is not self.task_msg:
                if self._ask(self.task_msg, timeout) is None:
                    return None
        assert self.proc is not None and self.proc.stdin and self.proc.stdout
        try:
            self.proc.stdin.write(json.dumps(msg) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.failure = "crash"
            self.stop()
            return None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        sel = selectors.DefaultSelector()
        sel.register(fd, selectors.EVENT_READ)
        try:
            while "\n" not in self.buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    self.failure = "timeout"
                    self.stop()
                    return None
                chunk = os.read(fd, 65536).decode()
                if not chunk:
                    self.failure = "crash"
                    self.stop()
                    return None
                self.buffer += chunk
        finally:
            sel.close()
        line, _, self.buffer = self.buffer.partition("\n")
        return json.loads(line)

    def set_task(self, lib: str, func: str, dims: dict[str, int], seed: int,
                 timeout: float = 120.0) -> Timing:
        """Make the inputs of a task and keep the outputs of its default library `lib`."""
        self.task_msg = {"op": "task", "lib": lib, "func": func, "dims": dims, "seed": seed}
        answer = self._ask(self.task_msg, timeout)
        if answer is None:
            self.task_msg = None
            return Timing("crash", error="the default schedule's library crashed or hung")
        return Timing(answer["status"], error=answer.get("error", ""))

    def time(self, lib: str, func: str, timeout: float, check: bool = True,
             repeats: int | None = None) -> Timing:
        """Check and time one candidate library."""
        answer = self._ask({"op": "time", "lib": lib, "func": func, "check": check,
                            "min_ms": self.min_ms, "repeats": repeats or self.repeats},
                           timeout)
        if answer is None:
            if self.failure == "timeout":
                return Timing("timeout", error=f"no answer within {timeout:.0f} s")
            return Timing("crash", error="the candidate crashed the runner")
        return Timing(answer["status"], [float(t) for t in answer.get("times", [])],
                      answer.get("error", ""))

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None


if __name__ == "__main__":
    serve()
