"""A loaded tirc library: its functions by name, as attributes and items."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

from tirc.runtime.cpu_check import check_cpu
from tirc.runtime.errors import TircError
from tirc.runtime.externs import fill_slots, in_use
from tirc.runtime.function import Function
from tirc.runtime.function_table import FunctionTable

SUPPORTED_ABI = (1, 2)  # 2 added per-function C symbols and per-library helper names
# The file each path was opened as (device, inode, mtime, size): the dynamic loader hands back
# the library already loaded under a path, so a library rebuilt at the same path is opened
# through a fresh copy instead of silently giving the old code.
_OPENED: dict[str, tuple[int, int, int, int]] = {}


def _open(path: str, private: bool = False) -> ctypes.CDLL:
    """dlopen `path`; through a private copy when another file was loaded under that path
    (or when asked: a library whose extern slots another Module fills)."""
    st = os.stat(path)
    identity = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
    seen = _OPENED.get(path)
    if not private and (seen is None or seen == identity):
        _OPENED[path] = identity
        return ctypes.CDLL(path)
    fd, copy = tempfile.mkstemp(suffix=os.path.basename(path), prefix="tirc-reload-")
    os.close(fd)
    try:
        shutil.copyfile(path, copy)
        return ctypes.CDLL(copy)
    finally:
        os.unlink(copy)  # the mapping outlives the name


class Module(FunctionTable):
    """The functions of one shared object, described by its `tirc_metadata()`."""

    def __init__(self, path: str, externs: dict[str, Callable[..., Any]] | None = None) -> None:
        self.path = os.path.abspath(path)
        try:
            self._lib = _open(self.path)
        except OSError as exc:
            raise TircError(f"cannot load '{path}': {exc}") from None
        # Looked up through this library's own handle: another tirc library's cannot answer.
        meta_fn = self._helper("tirc_metadata")
        if meta_fn is None:
            raise TircError(f"'{path}' is not a tirc library (it has no tirc_metadata)")
        self.metadata: dict[str, Any] = json.loads(meta_fn().decode("utf-8"))
        abi = self.metadata.get("tirc_abi")
        if abi not in SUPPORTED_ABI:
            raise TircError(f"'{path}' uses tirc ABI version {abi}; this runtime reads "
                            f"versions {', '.join(map(str, SUPPORTED_ABI))}")
        check_cpu(path, self.metadata)
        symbols = self.metadata.get("symbols", {})
        names = self.metadata.get("externs", [])
        address = self._slot_array(symbols) if names else 0
        if address and in_use(address):  # loaded before, with slots of its own
            self._lib = _open(self.path, private=True)
            address = self._slot_array(symbols)
        last_error = self._helper(symbols.get("last_error", "tirc_last_error"))
        if last_error is None:
            raise TircError(f"'{path}' has no {symbols.get('last_error')} function")
        self._slots = fill_slots(address, names, externs)
        self._functions = {f["name"]: Function(self._lib, f, last_error, keep=self._slots)
                           for f in self.metadata["functions"]}
        for fn in self._functions.values():
            fn.bind_library(self._functions)

    def _slot_array(self, symbols: dict[str, str]) -> int:
        """The address of the library's slot array (its `<library>_extern_slots()`)."""
        getter = self._helper(symbols.get("extern_slots", ""))
        if getter is None:
            raise TircError(f"'{self.path}' has no {symbols.get('extern_slots')} function")
        getter.restype = ctypes.c_void_p
        return int(getter())

    def _helper(self, name: str) -> Any:
        """The library's `const char *name(void)` function, or None."""
        try:
            fn = getattr(self._lib, name)
        except AttributeError:
            return None
        fn.restype = ctypes.c_char_p
        fn.argtypes = []
        return fn

    @property
    def functions(self) -> dict[str, Function]:
        return dict(self._functions)

    def __repr__(self) -> str:
        return f"<tirc module {self.path}: {', '.join(self._functions)}>"


def load(path: str | os.PathLike[str],
         externs: dict[str, Callable[..., Any]] | None = None) -> Module:
    """Load a library tirc built (`.so`) and return its functions as a Module; `externs`
    gives the Python functions behind the dotted names it calls (`{"env.relu": fn}`; the
    others come from `register_func`, tirc.runtime.externs)."""
    path = os.fspath(path)
    if path.endswith(".ptx"):
        from tirc.runtime.cuda import load_ptx

        return load_ptx(path, externs=externs)  # type: ignore[return-value]
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such library: '{path}'")
    return Module(path, externs)
