"""The `schedule` option of the passes that apply the schedule rules (default-schedule,
gpu-default-schedule, megakernel-gpu-tiles): one declaration, one pass-config key for all."""

from __future__ import annotations

from typing import Any

from tirc.passes.pass_base import option

CONFIG_KEY = "schedule.default"    # pass config "none" (-fno-default-schedule): none at all
MODES = ("rules", "none")


def _a_mode(value: Any) -> str | None:
    """What is wrong with a `schedule` option value (None when it is one of MODES)."""
    return None if value in MODES else f"must be 'rules' or 'none', got '{value}'"


def schedule_option() -> Any:
    """The `schedule` option of the passes that apply the rules (default-schedule,
    gpu-default-schedule, megakernel-gpu-tiles), set for all of them by the pass config key
    `schedule.default` (`-fno-default-schedule` sets it to none)."""
    return option("rules", config=CONFIG_KEY, check=_a_mode,
                  doc="'rules': schedule loop functions without a schedule of their own by the "
                      "schedule rules; 'none': leave them all unscheduled")
