"""-fbounds-check on the GPU, the runtime's side: the error record of a call.

The kernels of a function built with -fbounds-check take one more argument, an int32 record
(launch plan `bounds_record`, tirc.backends.nvptx.launch_plan): the first thread whose check
fails adds to `rec[0]`, writes its check's number to `rec[1]` and the check's values from
`rec[2]` on (each as two int32, low half first), then exits. After the launches of a call the
runtime copies the record back; a nonzero count fails the call as the CPU build would: a
TircError with code -5 and the check's message, its `%lld` filled with the values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tirc.runtime.errors import TircError

ERR_BOUNDS = -5
HEADER = 2  # the failure count, then the failing check


def fresh_record(meta: dict[str, Any]) -> np.ndarray:
    """A zeroed record of the plan's size, to copy to the device before a call."""
    return np.zeros(int(meta["size"]), np.int32)


def record_message(meta: dict[str, Any], rec: np.ndarray) -> str | None:
    """The message of the check a record holds, or None when no check failed."""
    if int(rec[0]) == 0:
        return None
    site = int(rec[1])
    checks = meta["checks"]
    if not 0 <= site < len(checks):
        return f"a bounds check failed (unknown check {site})"
    check = checks[site]
    halves = rec[HEADER:HEADER + 2 * check["values"]].astype(np.int64)
    values = tuple(int(lo) & 0xFFFFFFFF | int(hi) << 32
                   for lo, hi in zip(halves[0::2], halves[1::2]))
    return str(check["format"]).replace("%lld", "%d") % values


def check_record(meta: dict[str, Any], rec: np.ndarray, function: str) -> None:
    """Raise the failed check's TircError (code -5), if the record holds one."""
    message = record_message(meta, rec)
    if message is not None:
        raise TircError(message, ERR_BOUNDS, function)
