"""The dependency rule of the house (docs/architecture.md), checked on every import.

`ir` imports nothing of tirc; `frontend`, `passes` and `backends` import `ir` (and themselves);
`driver` (lowering and rendering in one call) imports those; `tune` (the auto-tuner) imports
`driver` and what is below it, and `runtime` to time what it builds; `cli` sits on top;
`runtime` imports none of them. Every module's imports are read with `ast`, including imports
inside functions and under `if TYPE_CHECKING:`; any edge the rule forbids fails the test,
printed as `module -> imported module (file:line)`. There is no list of exceptions.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("ir", "frontend", "passes", "backends", "driver", "tune", "cli", "runtime")
ALLOWED: dict[str, set[str]] = {
    "ir": {"ir"},
    "frontend": {"frontend", "ir"},
    "passes": {"passes", "ir"},
    "backends": {"backends", "ir"},
    "driver": {"driver", "passes", "backends", "ir"},
    "tune": {"tune", "driver", "passes", "backends", "ir", "runtime"},
    "cli": {"cli", "tune", "driver", "frontend", "passes", "backends", "ir", "runtime"},
    "runtime": {"runtime"},
}


def module_name(path: Path) -> str:
    """`ir/arith/fold.py` -> `tirc.ir.arith.fold` (a package's __init__ is the package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["tirc", *parts])


def imports(path: Path) -> list[tuple[str, int]]:
    """Every module `path` imports, absolute, with its line (relative imports resolved)."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module_name(path).split(".")
                if path.name != "__init__.py":
                    package.pop()
                anchor = package[:len(package) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.append((base, node.lineno))
            found += [(f"{base}.{alias.name}", node.lineno) for alias in node.names]
    return found


def layer_of(module: str) -> str | None:
    """The layer of a tirc module (None for modules outside tirc)."""
    parts = module.split(".")
    if parts[0] != "tirc" or len(parts) == 1:
        return None  # not tirc, or the `tirc` namespace itself (`from tirc import driver`)
    return parts[1]


def forbidden_edges() -> list[str]:
    """Every import that crosses the rule, as `module -> imported (file:line)`."""
    edges: list[str] = []
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            me = module_name(path)
            for target, line in imports(path):
                other = layer_of(target)
                if other is None or other == layer:
                    continue
                if other not in ALLOWED[layer]:
                    edges.append(f"{me} -> {target} ({path.relative_to(ROOT)}:{line})")
    return edges


def test_every_layer_folder_exists() -> None:
    for layer in LAYERS:
        assert (ROOT / layer / "__init__.py").exists(), layer


def test_no_import_crosses_the_dependency_rule() -> None:
    edges = forbidden_edges()
    assert not edges, "imports the dependency rule forbids:\n" + "\n".join(edges)


def test_the_checker_sees_imports_inside_functions(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text("def f():\n    from tirc.passes.pipeline import default_pipeline\n"
                      "    import tirc.backends.llvm\n")
    assert ("tirc.passes.pipeline", 2) in imports(source)
    assert ("tirc.backends.llvm", 3) in imports(source)
