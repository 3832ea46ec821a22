"""The metadata JSON a library returns from `tirc_metadata()` (format in docs/abi.md)."""

from __future__ import annotations

import json
from typing import Any

from tirc.backends.op_count import flops_text
from tirc.backends.symbols import EXTERN_SLOTS, ExportNames
from tirc.ir.attrs import ENTRY
from tirc.ir.function import PrimFunc
from tirc.ir.module import IRModule
from tirc.ir.packed_call import slot_symbols

ABI_VERSION = 2


def module_metadata(mod: IRModule, names: ExportNames | None = None,
                    target: dict[str, Any] | None = None) -> dict[str, Any]:
    """The description of every exported function of a module after make-entry, with the C
    name each is exported under (`symbol`), the library's helpers and the CPU it needs."""
    names = names or ExportNames()
    functions = []
    for f in mod.functions.values():
        if isinstance(f, PrimFunc) and ENTRY in f.attrs:
            entry = {**f.attrs[ENTRY], "symbol": names.function(f.attrs[ENTRY]["name"])}
            flops = flops_text(f.body)
            if flops:
                entry["flops"] = flops
            functions.append(entry)
    out: dict[str, Any] = {"tirc_abi": ABI_VERSION, "module": mod.name,
                           "library": names.library, "symbols": names.helpers(),
                           "functions": functions}
    slots = slot_symbols(mod)
    if slots:  # functions called by dotted names: slot k of `<library>_extern_slots()`
        out["symbols"][EXTERN_SLOTS] = names.helper(EXTERN_SLOTS)
        out["externs"] = slots
    if target is not None:
        out["target"] = target
    return out


def metadata_json(mod: IRModule, names: ExportNames | None = None,
                  target: dict[str, Any] | None = None) -> str:
    """`module_metadata` as compact JSON text (what the library embeds)."""
    return json.dumps(module_metadata(mod, names, target), separators=(",", ":"),
                      sort_keys=False)
