"""The launch plan of each GPU function: what the runtime reads to call it.

For every host function (made by gpu-split-host-device) the metadata holds, beside the CPU
ABI's description of the parameters (docs/abi.md: names, dtypes, symbolic shapes as expression
strings, outputs, and where each symbolic size is bound from):
- `workspaces`: global buffers the host allocates around the launches (size in bytes, as an
  expression);
- `launches`, in order: the kernel's name, its grid and block extents (integers or shape
  expressions such as "(n + 255) // 256"), the bytes of dynamic shared memory, and its
  arguments: `{"kind": "buffer", "param": "A"}`, `{"kind": "workspace", "name": "W"}`,
  `{"kind": "param", "param": "alpha"}` (a scalar parameter) or
  `{"kind": "expr", "expr": "n * 2", "dtype": "int64"}` (a value of the symbolic sizes).
"""

from __future__ import annotations

from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import Call, PrimExpr, StringImm, Var, binop, cast
from tirc.ir.function import PrimFunc
from tirc.ir.stmt import Allocate
from tirc.passes.entry_signature import accessed_data, param_buffers, shape_text, signature
from tirc.passes.flatten_buffers import storage_size
from tirc.passes.gpu.thread_tags import is_launch, walk_stmts


def bound_symbols(func: PrimFunc) -> dict[Var, str]:
    """Where each symbolic size of the parameters comes from (as make-entry binds them)."""
    bound: dict[Var, str] = {}
    buffers = param_buffers(func)
    for p in func.params:
        if p not in buffers:
            bound[p] = f"argument {p.name}"
    for p, buf in buffers.items():
        for k, dim in enumerate(buf.shape):
            if isinstance(dim, Var) and dim not in bound:
                bound[dim] = f"{p.name}.shape[{k}]"
    return bound


def _text(e: PrimExpr, func: PrimFunc) -> int | str:
    try:
        return shape_text(e)
    except CompileError:
        raise CompileError(f"codegen: {func.name}: a launch extent or kernel argument must be "
                           "built from integers, symbolic sizes, + - * // % min max",
                           e.span or func.span) from None


def _mark_accesses(info: dict[str, Any], launches: list[dict[str, Any]],
                   kernels: dict[str, PrimFunc]) -> None:
    """Set each buffer parameter's `input`/`output` from what the kernels read and write."""
    params = {p["name"]: p for p in info["params"]}
    for launch in launches:
        kernel = kernels.get(launch["kernel"])
        if kernel is None:
            continue
        reads, writes = accessed_data(kernel)
        for kp, arg in zip(kernel.params, launch["args"]):
            buf = kernel.buffer_map.get(kp)
            if buf is None or arg["kind"] != "buffer":
                continue
            entry = params[arg["param"]]
            entry["input"] = entry["input"] or buf.data in reads
            entry["output"] = entry["output"] or buf.data in writes


def host_plan(func: PrimFunc, shared: dict[str, int],
              kernels: dict[str, PrimFunc]) -> dict[str, Any]:
    """The metadata entry of one host function (see the module docstring)."""
    symbol = str(func.attrs.get("global_symbol", func.name))
    bound = bound_symbols(func)
    info = signature(func, symbol, bound)
    info["kind"] = "gpu_func"
    by_data: dict[Var, str] = {buf.data: p.name for p, buf in param_buffers(func).items()}
    by_data.update({p: p.name for p in func.params if p in func.buffer_map})
    for p in func.params:
        flat = func.buffer_map.get(p)
        if flat is not None:
            by_data.setdefault(flat.data, p.name)
    scalars = {p for p in func.params if p not in func.buffer_map}
    workspaces: dict[Var, Buffer] = {}
    launches: list[dict[str, Any]] = []
    for s in walk_stmts(func.body):
        if isinstance(s, Allocate):
            workspaces[s.buffer.data] = s.buffer
        if not is_launch(s):
            continue
        call = s.value
        assert isinstance(call, Call) and isinstance(call.args[0], StringImm)
        kernel = call.args[0].value
        dims = [_text(d, func) for d in call.args[1:7]]
        args: list[dict[str, Any]] = []
        for a in call.args[7:]:
            if isinstance(a, Var) and a.dtype.is_handle:
                if a in by_data:
                    args.append({"kind": "buffer", "param": by_data[a]})
                elif a in workspaces:
                    args.append({"kind": "workspace", "name": workspaces[a].name})
                else:
                    raise CompileError(f"codegen: {func.name}: kernel argument '{a.name}' is "
                                       "neither a parameter nor a workspace", func.span)
            elif isinstance(a, Var) and a in scalars:
                args.append({"kind": "param", "param": a.name})
            else:
                unbound = [v for v in _vars(a) if v not in bound]
                if unbound:
                    raise CompileError(f"codegen: {func.name}: symbolic size "
                                       f"'{unbound[0].name}' is not a whole dimension of any "
                                       "parameter, so the launch cannot compute it", func.span)
                args.append({"kind": "expr", "expr": str(_text(a, func)),
                             "dtype": str(a.dtype)})
        launches.append({"kernel": kernel, "grid": dims[:3], "block": dims[3:],
                         "shared_bytes": shared.get(kernel, 0), "args": args})
    info["workspaces"] = [
        {"name": b.name, "dtype": str(b.dtype),
         "bytes": _text(binop("mul", cast("int64", storage_size(b)), b.dtype.bytes), func)}
        for b in workspaces.values()]
    info["launches"] = launches
    _mark_accesses(info, launches, kernels)
    return info


def _vars(e: PrimExpr) -> list[Var]:
    from tirc.passes.rebind import used_vars

    return sorted(used_vars(e), key=lambda v: v.name)
