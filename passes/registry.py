"""The pass registry: every Pass subclass in tirc.passes, found by its kebab-case name.

Pass modules are discovered by importing each module of this package, so adding a pass is
adding a file; nothing else has to be edited.
"""

from __future__ import annotations

import importlib
import pkgutil

from tirc.passes.pass_base import Pass

_REGISTRY: dict[str, type[Pass]] = {}


def _collect(cls: type[Pass]) -> None:
    for sub in cls.__subclasses__():
        if sub.name:
            _REGISTRY[sub.name] = sub
        _collect(sub)


def _load() -> None:
    import tirc.passes as pkg

    for info in pkgutil.walk_packages(pkg.__path__, prefix="tirc.passes."):
        importlib.import_module(info.name)
    _collect(Pass)


def all_passes() -> dict[str, type[Pass]]:
    """Every registered pass class by name, in name order."""
    if not _REGISTRY:
        _load()
    return dict(sorted(_REGISTRY.items()))


class UnknownPassError(KeyError):
    """A pass name that no pass has."""


def get_pass(name: str, **options: str) -> Pass:
    """An instance of the pass called `name`, with dataclass options set from strings."""
    passes = all_passes()
    if name not in passes:
        raise UnknownPassError(name)
    return passes[name](**options)
