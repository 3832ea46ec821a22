"""Running the steps of a GPU launch plan in order, with the branches of a graph-level `if`
and the host's serial loops around launches.

A plan without `steps` is its launches in order with each host call after the first `before`
launches (tirc.backends.nvptx.launch_plan); a plan with `steps` (one that branches) lists its
launches, host calls, checks and `if`s as they run. An `if` evaluates its condition on the
host when it is reached: over the symbolic sizes and the scalar parameters (each as its dtype
holds it: a float32 parameter compared as float32), and the device elements it reads, copied
to the host after the device finished the kernels before the branch (as TVM's VM reads a
condition tensor).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from tirc.runtime import shape_expr
from tirc.runtime.dlpack import numpy_dtype
from tirc.runtime.errors import TircError

_COMPARE = {"eq": int.__eq__, "ne": int.__ne__, "lt": int.__lt__, "le": int.__le__,
            "gt": int.__gt__, "ge": int.__ge__}


def flat_steps(meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The steps of a plan: its own `steps`, or, for a plan without branches, its launches
    with each host call placed by its `before`."""
    if "steps" in meta:
        return meta["steps"]
    launches = meta.get("launches", [])
    calls = meta.get("host_calls", [])
    steps: list[dict[str, Any]] = []
    for k in range(len(launches)):
        steps += [{"kind": "host_call", "index": j} for j, c in enumerate(calls)
                  if c["before"] == k]
        steps.append({"kind": "launch", "index": k})
    steps += [{"kind": "host_call", "index": j} for j, c in enumerate(calls)
              if c["before"] >= len(launches)]
    return steps


def scalar_env(params: list[dict[str, Any]], scalars: dict[str, Any]) -> dict[str, int | float]:
    """The scalar parameters as a condition sees them: integers and booleans as ints, floats
    rounded to their dtype."""
    env: dict[str, int | float] = {}
    for p in params:
        if p["kind"] != "scalar" or p["name"] not in scalars:
            continue
        value = scalars[p["name"]]
        dt = numpy_dtype(p["dtype"])
        if dt is not None and dt.kind == "f":
            env[p["name"]] = float(np.asarray(value).astype(dt))
        elif dt is not None:
            env[p["name"]] = int(np.asarray(value).astype(np.int64 if dt.kind != "u"
                                                          else np.uint64))
    return env


def condition(step: dict[str, Any], env: dict[str, int | float], driver: Any,
              pointer: Callable[[dict[str, Any]], int]) -> bool:
    """Whether an `if` step takes its then-branch: its loads read from the device (after a
    synchronize), then its condition evaluated."""
    values = dict(env)
    if step["loads"]:
        driver.synchronize()
    for load in step["loads"]:
        dt = numpy_dtype(load["dtype"])
        if dt is None:
            raise TircError(f"a branch condition reads a {load['dtype']} element, which this "
                            "runtime cannot read")
        host = np.zeros((), dt)
        address = pointer(load) + shape_expr.evaluate(load["offset"], env)  # type: ignore[arg-type]
        driver.to_host(host, address)
        v = host[()]
        values[load["name"]] = float(v) if dt.kind == "f" else int(v)
    return shape_expr.truth(step["cond"], values)


Run = Callable[[int, dict[str, Any]], None]


def run_steps(steps: list[dict[str, Any]], env: dict[str, int | float], driver: Any,
              pointer: Callable[[dict[str, Any]], int], launch: Run, host_call: Run) -> None:
    """Run `steps` in order: `launch(k, env)` and `host_call(j, env)` for the plan's entries,
    checks (a ValueError with the compiler's message), the branch each `if` takes, and each
    `for`'s body once per value of its variable (added to `env`)."""
    for step in steps:
        kind = step["kind"]
        if kind == "launch":
            launch(step["index"], env)
        elif kind == "host_call":
            host_call(step["index"], env)
        elif kind == "for":
            lo = shape_expr.evaluate(step["min"], env)  # type: ignore[arg-type]
            for v in range(lo, lo + shape_expr.evaluate(step["extent"], env)):  # type: ignore[arg-type]
                run_steps(step["body"], {**env, step["var"]: v}, driver, pointer, launch,
                          host_call)
        elif kind == "check":
            lhs = shape_expr.evaluate(step["lhs"], env)  # type: ignore[arg-type]
            rhs = shape_expr.evaluate(step["rhs"], env)  # type: ignore[arg-type]
            if not _COMPARE[step["op"]](lhs, rhs):
                raise ValueError(f"{step['message']} ({lhs} vs {rhs})")
        elif kind == "if":
            taken = step["then"] if condition(step, env, driver, pointer) else step["else"]
            run_steps(taken, env, driver, pointer, launch, host_call)
        else:
            raise TircError(f"unknown launch plan step '{kind}'")
