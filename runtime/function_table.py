"""Access to a loaded library's functions by attribute and by item, shared by the CPU and
CUDA modules."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator
from typing import Any


class FunctionTable:
    """`m.name`, `m["name"]`, `"name" in m`, iteration and len over `self._functions`.

    Subclasses set `self.path` and `self._functions` (name -> callable).
    """

    path: str
    _functions: dict[str, Any]

    def _missing(self, name: str) -> str:
        close = difflib.get_close_matches(name, list(self._functions), n=1, cutoff=0.6)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        return (f"'{os.path.basename(self.path)}' has no function '{name}'{hint} "
                f"(it has: {', '.join(self._functions) or 'none'})")

    def __getitem__(self, name: str) -> Any:
        try:
            return self._functions[name]
        except KeyError:
            raise KeyError(self._missing(name)) from None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._functions[name]
        except KeyError:
            raise AttributeError(self._missing(name)) from None

    def __contains__(self, name: object) -> bool:
        return name in self._functions

    def __iter__(self) -> Iterator[str]:
        return iter(self._functions)

    def __len__(self) -> int:
        return len(self._functions)
