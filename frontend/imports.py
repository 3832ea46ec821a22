"""Imports between `.tir` files: `from kernels.gemm import gemm` reads `kernels/gemm.tir`,
searched relative to the importing file and then along the include directories."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from pathlib import Path

from tirc.ir.diagnostics import CompileError
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule


@dataclass
class ImportSession:
    """State shared by one parse and every file it imports (directly or not)."""

    include_dirs: tuple[Path, ...]
    sources: list[str] = field(default_factory=list)
    loaded: dict[Path, IRModule | CompileError] = field(default_factory=dict)
    stack: list[Path] = field(default_factory=list)

    def record(self, filename: str) -> None:
        """Remember a file that was read (for -MD dependency output)."""
        if not filename.startswith("<") and filename not in self.sources:
            self.sources.append(filename)

    def find(self, module: str, level: int, from_file: str) -> tuple[Path | None, str]:
        """The file for `from <dots><module> import ...`, and its relative path for messages."""
        rel = Path(*module.split("."))
        rel = rel.with_name(rel.name + ".tir")
        bases: list[Path] = []
        if not from_file.startswith("<"):
            base = Path(from_file).parent
            for _ in range(max(0, level - 1)):
                base = base.parent
            bases.append(base)
        elif level == 0:
            bases.append(Path("."))
        if level == 0:
            bases.extend(self.include_dirs)
        for b in bases:
            candidate = b / rel
            if candidate.is_file():
                return candidate, rel.as_posix()
        return None, rel.as_posix()

    def load(self, path: Path, parse_file: Callable[[Path, ImportSession], IRModule]
             ) -> IRModule:
        """Parse `path` once per session; raises its CompileError (again) on later imports."""
        key = path.resolve()
        cached = self.loaded.get(key)
        if isinstance(cached, CompileError):
            raise cached
        if cached is not None:
            return cached
        self.stack.append(key)
        try:
            mod = parse_file(path, self)
        except CompileError as err:
            self.loaded[key] = err
            raise
        finally:
            self.stack.pop()
        self.loaded[key] = mod
        return mod

    def cycle(self, path: Path) -> list[Path] | None:
        """The import chain that `path` would close, if importing it makes a cycle."""
        key = path.resolve()
        if key in self.stack:
            return self.stack[self.stack.index(key):] + [key]
        return None
