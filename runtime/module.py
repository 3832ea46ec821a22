"""A loaded tirc library: its functions by name, as attributes and items."""

from __future__ import annotations

import ctypes
import json
import os
from typing import Any

from tirc.runtime.errors import TircError
from tirc.runtime.function import Function
from tirc.runtime.function_table import FunctionTable

SUPPORTED_ABI = 1


class Module(FunctionTable):
    """The functions of one shared object, described by its `tirc_metadata()`."""

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        try:
            self._lib = ctypes.CDLL(self.path)
        except OSError as exc:
            raise TircError(f"cannot load '{path}': {exc}") from None
        try:
            meta_fn = self._lib.tirc_metadata
            last_error = self._lib.tirc_last_error
        except AttributeError:
            raise TircError(f"'{path}' is not a tirc library (it has no tirc_metadata)") from None
        meta_fn.restype = ctypes.c_char_p
        meta_fn.argtypes = []
        last_error.restype = ctypes.c_char_p
        last_error.argtypes = []
        self.metadata: dict[str, Any] = json.loads(meta_fn().decode("utf-8"))
        abi = self.metadata.get("tirc_abi")
        if abi != SUPPORTED_ABI:
            raise TircError(f"'{path}' uses tirc ABI version {abi}; this runtime reads "
                            f"version {SUPPORTED_ABI}")
        self._functions = {f["name"]: Function(self._lib, f, last_error)
                           for f in self.metadata["functions"]}
        for fn in self._functions.values():
            fn.bind_library(self._functions)

    @property
    def functions(self) -> dict[str, Function]:
        return dict(self._functions)

    def __repr__(self) -> str:
        return f"<tirc module {self.path}: {', '.join(self._functions)}>"


def load(path: str | os.PathLike[str]) -> Module:
    """Load a library tirc built (`.so`) and return its functions as a Module."""
    path = os.fspath(path)
    if path.endswith(".ptx"):
        from tirc.runtime.cuda import load_ptx

        return load_ptx(path)  # type: ignore[return-value]
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such library: '{path}'")
    return Module(path)
