"""The metadata JSON a library returns from `tirc_metadata()` (format in docs/abi.md)."""

from __future__ import annotations

import json
from typing import Any

from tirc.ir.attrs import ENTRY
from tirc.ir.function import PrimFunc
from tirc.ir.module import IRModule

ABI_VERSION = 1


def module_metadata(mod: IRModule) -> dict[str, Any]:
    """The description of every exported function of a module after make-entry."""
    functions = [f.attrs[ENTRY] for f in mod.functions.values()
                 if isinstance(f, PrimFunc) and ENTRY in f.attrs]
    return {"tirc_abi": ABI_VERSION, "module": mod.name, "functions": functions}


def metadata_json(mod: IRModule) -> str:
    """`module_metadata` as compact JSON text (what the library embeds)."""
    return json.dumps(module_metadata(mod), separators=(",", ":"), sort_keys=False)
