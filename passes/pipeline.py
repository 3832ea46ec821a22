"""The default pass pipelines, by target and -O level: the table of contents of the compiler.

`default_pipeline` lists the steps in order, one line each (the graph-level steps are listed in
passes/graph/graph_pipeline.py). Names of passes that are not written yet are skipped, so the
pipeline grows as passes land. `build_pipeline` turns names
(with options, `unroll{max-extent=8}`) into pass objects; `--passes a,b,c` goes through it too.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable
from typing import Any

from tirc.ir.target import Target
from tirc.passes.graph.graph_pipeline import graph_steps
from tirc.passes.pass_base import Pass
from tirc.passes.registry import all_passes


def default_pipeline(target: Target, opt_level: int) -> list[str]:
    """Pass names, in order, that turn a parsed module into one ready for `target`."""
    if target.is_gpu:
        from tirc.passes.gpu.pipeline import gpu_pipeline

        return gpu_pipeline(opt_level)      # the GPU table of contents, in passes/gpu
    steps = [
        "verify",            # the input is well-formed (definitions, ranks, regions)
        "static-check",      # provable out-of-bounds accesses, racy parallel loops, no init
        "apply-schedules",   # the module's @S.schedule functions (and --schedule files)
    ]
    steps += graph_steps(opt_level)     # graph functions -> kernels and a host loop function
    steps += [
        "bounds-check",      # -fbounds-check: run-time checks of accesses not proved in bounds
        "lower-init",        # block `init` -> `if` on the first reduction iteration
        "lower-blocks",      # blocks -> plain loop nests with their predicates
        "compact-buffers",   # allocations moved to their uses and shrunk to what they touch
        "lower-layouts",     # buffers with layouts -> flat storage and physical offsets
        "flatten-buffers",   # n-d buffer accesses -> 1-d offsets
    ]
    if opt_level >= 1:
        steps += ["simplify"]           # fold and canonicalise index arithmetic
    if opt_level >= 2:
        steps += [
            "vectorize",     # vectorized loops -> ramps and broadcasts
            "unroll",        # unrolled (and small constant) loops -> straight-line code
            "simplify",      # clean up what vectorize and unroll left
        ]
    steps += ["storage-rewrite"]        # allocations hoisted out of loops, stack or heap
    if not target.is_gpu:
        steps += ["make-entry"]         # exported entry points that check their arguments
    registered = all_passes()
    return [name for name in steps if name in registered]


class PipelineError(ValueError):
    """A pass name or option that no pass has; the message suggests close matches."""


def split_spec(text: str) -> list[str]:
    """Split `a,b{x=1,y=2},c` at the commas outside braces."""
    items, depth, cur = [], 0, ""
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    items.append(cur.strip())
    return [i for i in items if i]


def check_pass_name(name: str) -> None:
    """Raise PipelineError for a name no pass has, listing the closest ones."""
    names = list(all_passes())
    if name in names:
        return
    scored = sorted(((difflib.SequenceMatcher(None, name, n).ratio(), n) for n in names),
                    reverse=True)
    best = scored[0][0] if scored else 0.0
    close = [n for r, n in scored[:3] if r >= max(0.6, best - 0.1)]
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise PipelineError(f"unknown pass '{name}'{hint} ('tirc passes' lists them all)")


def make_pass(spec: str) -> Pass:
    """One pass from `name` or `name{option=value,...}`; option values are typed by field."""
    name, _, rest = spec.partition("{")
    name = name.strip()
    check_pass_name(name)
    cls = all_passes()[name]
    options: dict[str, Any] = {}
    if rest:
        if not rest.endswith("}"):
            raise PipelineError(f"missing '}}' in pass options of '{spec}'")
        fields = {f.name.replace("_", "-"): f for f in dataclasses.fields(cls)
                  if f.init and f.name != "span"}
        for item in split_spec(rest[:-1]):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or key not in fields:
                known = ", ".join(fields) or "none"
                raise PipelineError(f"pass '{name}' has no option '{key}' (options: {known})")
            f = fields[key]
            options[f.name] = parse_option_value(value.strip(), f.type, name, key)
    return cls(**options)


def parse_option_value(value: str, annotation: Any, pass_name: str, key: str) -> Any:
    """A pass option's text as the field's type (bool, int, float; anything else stays str)."""
    kind = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    try:
        if kind == "bool":
            if value.lower() not in ("true", "false", "1", "0"):
                raise ValueError(value)
            return value.lower() in ("true", "1")
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
    except ValueError:
        article = "an" if kind == "int" else "a"
        raise PipelineError(f"option '{key}' of pass '{pass_name}' wants {article} {kind}, "
                            f"got '{value}'") from None
    return value


def build_pipeline(specs: Iterable[str], disabled: Iterable[str] = ()) -> list[Pass]:
    """Pass objects for `specs` (names with optional options), leaving out `disabled` ones."""
    off = set(disabled)
    for name in off:
        check_pass_name(name)
    passes = [make_pass(s) for s in specs]
    return [p for p in passes if p.name not in off]
