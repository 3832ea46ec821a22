"""The `decisions` option of the passes that schedule (apply-schedules, default-schedule): the
decisions `tirc tune` recorded, given to a build by `tirc --tuned FILE` as the pass config key
`schedule.decisions`. One declaration, one key for both; kept apart from decisions.py so that
declaring it imports no schedule machinery."""

from __future__ import annotations

import json
from typing import Any

from tirc.ir.diagnostics import CompileError
from tirc.passes.pass_base import option

DECISIONS_CONFIG = "schedule.decisions"  # JSON: workload key -> variants (tuned_decisions)


def _parsed(text: str) -> tuple[dict[str, list[dict[str, Any]]], str | None]:
    """The variants by workload in `text` ({} when empty), and what is wrong with it."""
    if not text:
        return {}, None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        return {}, f"is not JSON: {e}"
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        return {}, "must map workload keys to lists of variants"
    return data, None


def _problem(value: Any) -> str | None:
    """What is wrong with a `decisions` option value (None when it is well formed)."""
    return _parsed(value)[1] if isinstance(value, str) else "must be JSON text"


def decisions_option() -> Any:
    """The `decisions` option, set for both passes by the pass config `schedule.decisions`."""
    return option("", config=DECISIONS_CONFIG, check=_problem,
                  doc="tuned decisions (JSON: workload key -> variants, each {dims, decisions}), "
                      "written by `tirc --tuned FILE`; empty: none")


def tuned_decisions(text: str) -> dict[str, list[dict[str, Any]]]:
    """The tuned decisions of a `decisions` option value: workload key -> variants, each
    `{"dims": {var: size}, "decisions": {name: value}}`; CompileError when malformed."""
    data, problem = _parsed(text)
    if problem is not None:
        raise CompileError(f"pass config {DECISIONS_CONFIG} {problem}")
    return data
