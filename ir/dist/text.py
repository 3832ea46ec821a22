"""How the distributed struct info and global infos print (TVMScript's spelling)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tirc.ir.dist.dtensor import DTensorSInfo
from tirc.ir.dist.mesh import DeviceMesh


def dtensor_text(s: DTensorSInfo, dims: Sequence[str]) -> str:
    """`R.DTensor((128, 256), "float32", "mesh[0]", "S[1]")` from printed dimensions."""
    parts = []
    if s.shape is not None:
        parts.append(f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})")
    else:
        parts.append("None")
    parts.append(json.dumps(str(s.dtype)) if s.dtype is not None else "None")
    parts += [json.dumps(s.device_mesh), json.dumps(str(s.placement))]
    return f"R.DTensor({', '.join(parts)})"


def global_infos_text(infos: dict[str, tuple[Any, ...]]) -> str:
    """`I.module_global_infos({"mesh": [R.device_mesh((2,), I.Range(0, 2))]})`."""
    entries = []
    for key, items in infos.items():
        texts = [m.text() if isinstance(m, DeviceMesh) else repr(m) for m in items]
        entries.append(f"{json.dumps(key)}: [{', '.join(texts)}]")
    return f"I.module_global_infos({{{', '.join(entries)}}})"
