"""The comment block at the top of a tirc PTX file: a summary for people, JSON for the runtime.

    // tirc module Module for cuda -arch=sm_90
    // function add_relu(A: float32[n], B: float32[n], C: float32[n] (output))
    //   check m == n                                  (graph functions' R.match_cast)
    //   launch add_relu_kernel grid ((n + 255) // 256, 1, 1) block (256, 1, 1) shared 0
    //   host call f(W: float32[n, 128], ...)          (R.call_dps_packed, on the CPU)
    //   bounds checks 2, error record of 4 int32       (-fbounds-check: gpu-bounds-record)
    //   if c:                                          (a graph-level `if`, on the host)
    //     launch ...
    //   else:
    //     launch ...
    // host libraries -lNAME -LDIR                      (where the host calls' C functions are)
    // tirc-metadata: {"tirc_abi":1,"module":"Module","target":"cuda -arch=sm_90",...
    // tirc-metadata: ...rest of the JSON, in lines of at most 160 characters
    // tirc-metadata-end

tirc.runtime.cuda reads the `tirc-metadata:` lines back (joined, then parsed as JSON).
PTX comments are `//` lines, so the file stays valid input for ptxas and the CUDA driver.
"""

from __future__ import annotations

import json
from typing import Any

PREFIX = "// tirc-metadata: "
END = "// tirc-metadata-end"
CHUNK = 160
_SYMBOLS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _dims(values: list[Any]) -> str:
    return "(" + ", ".join(str(v) for v in values) + ")"


def _param(p: dict[str, Any]) -> str:
    if p["kind"] == "scalar":
        return f"{p['name']}: {p['dtype']}"
    shape = ", ".join(str(d) for d in p["shape"])
    return f"{p['name']}: {p['dtype']}[{shape}]" + (" (output)" if p.get("output") else "")


def summary_lines(meta: dict[str, Any]) -> list[str]:
    """The human-readable part: each function's signature and its launches."""
    lines = [f"// tirc module {meta['module']} for {meta['target']}"]
    for f in meta["functions"]:
        lines.append(f"// function {f['name']}({', '.join(_param(p) for p in f['params'])})")
        for c in f.get("checks", []):
            lines.append(f"//   check {c['lhs']} {_SYMBOLS.get(c['op'], c['op'])} {c['rhs']}")
        for w in f.get("workspaces", []):
            lines.append(f"//   workspace {w['name']}: {w['dtype']}, {w['bytes']} bytes")
        calls = f.get("host_calls", [])
        record = f.get("bounds_record")
        if record:
            lines.append(f"//   bounds checks {len(record['checks'])}, error record of "
                         f"{record['size']} int32")
        if "steps" in f:  # a plan that branches: its steps as they run
            lines += _steps(f, f["steps"], "//   ")
            continue
        for k, launch in enumerate(f.get("launches", [])):
            lines += [_host_call(c) for c in calls if c["before"] == k]
            lines.append("//   " + _launch(launch))
        lines += [_host_call(c) for c in calls if c["before"] >= len(f.get("launches", []))]
    libs = meta.get("libraries")
    if libs:
        lines.append("// host libraries " + " ".join(
            [f"-l{n}" for n in libs["names"]] + [f"-L{d}" for d in libs["dirs"]]))
    return lines


def _launch(launch: dict[str, Any]) -> str:
    """`launch K grid (...) block (...) shared N`."""
    return (f"launch {launch['kernel']} grid {_dims(launch['grid'])} block "
            f"{_dims(launch['block'])} shared {launch['shared_bytes']}")


def _steps(f: dict[str, Any], steps: list[dict[str, Any]], indent: str) -> list[str]:
    """The lines of a branching plan's steps, each branch indented under its `if`."""
    lines: list[str] = []
    for step in steps:
        if step["kind"] == "launch":
            lines.append(indent + _launch(f["launches"][step["index"]]))
        elif step["kind"] == "host_call":
            lines.append(_host_call(f["host_calls"][step["index"]]).replace("//   ", indent, 1))
        elif step["kind"] == "check":
            lines.append(f"{indent}check {step['lhs']} {_SYMBOLS.get(step['op'], step['op'])} "
                         f"{step['rhs']}")
        elif step["kind"] == "for":
            lines.append(f"{indent}for {step['var']} from {step['min']}, {step['extent']} times:")
            lines += _steps(f, step["body"], indent + "  ")
        else:
            reads = ", ".join(f"{ld['name']}: {ld['dtype']} at byte {ld['offset']} of "
                              f"{ld.get('workspace', ld.get('param'))}" for ld in step["loads"])
            lines.append(f"{indent}if {step['cond']}:" + (f"  ({reads})" if reads else ""))
            lines += _steps(f, step["then"], indent + "  ")
            lines.append(f"{indent}else:")
            lines += _steps(f, step["else"], indent + "  ")
    return lines


def _host_call(c: dict[str, Any]) -> str:
    """`//   host call f(h: float32[n, 128], ..., out: float32[n, 128] (output))`."""
    args = ", ".join(f"{a.get('param', a.get('name'))}: {a['dtype']}"
                     f"[{', '.join(str(d) for d in a['shape'])}]"
                     + (" (output)" if a["role"] == "out" else "") for a in c["args"])
    return f"//   host call {c['symbol']}({args})"


def render_block(meta: dict[str, Any]) -> str:
    """The whole comment block (ending with a newline)."""
    text = json.dumps(meta, separators=(",", ":"))
    chunks = [text[i:i + CHUNK] for i in range(0, len(text), CHUNK)] or [""]
    lines = summary_lines(meta) + [PREFIX + c for c in chunks] + [END]
    return "\n".join(lines) + "\n"


def read_block(ptx: str) -> dict[str, Any] | None:
    """The metadata JSON of a PTX text, or None when it has no tirc block."""
    parts = [line[len(PREFIX):] for line in ptx.splitlines() if line.startswith(PREFIX)]
    return json.loads("".join(parts)) if parts else None
