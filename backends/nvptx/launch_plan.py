"""The launch plan of each GPU function: what the runtime reads to call it.

For every host function (made by gpu-split-host-device) the metadata holds, beside the CPU
ABI's description of the parameters (docs/abi.md: names, dtypes, symbolic shapes as expression
strings, outputs, and where each symbolic size is bound from):
- `workspaces`: global buffers the host allocates around the launches (a unique name, size in
  bytes as an expression); the runtime places them all in one device allocation per call;
- `checks`: comparisons of sizes the call must pass before any launch (`R.match_cast`'s),
  `{"lhs": "m", "op": "eq", "rhs": "n", "message": "..."}`;
- `launches`, in order: the kernel's name, its grid and block extents (integers or shape
  expressions such as "(n + 255) // 256"), the bytes of dynamic shared memory, and its
  arguments: `{"kind": "buffer", "param": "A", "index": 0}` (the parameter's position; names
  may repeat), `{"kind": "workspace", "name": "W"}`,
  `{"kind": "param", "param": "alpha"}` (a scalar parameter) or
  `{"kind": "expr", "expr": "n * 2", "dtype": "int64"}` (a value of the symbolic sizes);
- `host_calls`: C functions (`R.call_dps_packed`) the runtime calls on the CPU between the
  launches, `{"kind": "host_call", "symbol": "f", "caller": "main", "before": 1, "args":
  [...]}`: it runs after the first `before` launches finished. Each argument is one DLTensor
  (docs/abi.md, destination-passing): `{"kind": "buffer", "index": 0, ...}` or
  `{"kind": "workspace", "name": "W", ...}` with its `role` ("in"/"out"), `dtype`, `shape`
  (expressions) and `offset` (bytes into the buffer or workspace, an expression). A step with
  `"ccl": true` is a collective (`tirc_ccl_*`, tirc.ir.dist.collective): the runtime passes
  its send and receive tensors as device memory to the NCCL shim, its params on the host;
- `steps` (only in a plan that branches: a graph-level `if`): the launches, host calls and
  branches in the order they run, `{"kind": "launch", "index": k}` (into `launches`),
  `{"kind": "host_call", "index": j}` (into `host_calls`, whose `before` the runtime then
  ignores), `{"kind": "check", "lhs": ..., ...}` (a check inside a branch, made only when it
  runs) and `{"kind": "if", "cond": "c and n > 2", "loads": [...], "then": [steps], "else":
  [steps]}` (tirc.backends.nvptx.plan_conditions: the condition over the sizes and scalar
  parameters, and the device elements it reads, copied to the host when the branch is
  reached), and `{"kind": "for", "var": "ax1", "min": 0, "extent": "n", "body": [steps]}` (a
  serial loop around launches, as TVM keeps on the host: its body runs for each value of
  `var`, which the launches' expressions may use). A module with such a plan says
  `"tirc_abi": 2`: a reader of version 1 would run both branches;
- `bounds_record` (only with -fbounds-check, when a kernel has checks: gpu-bounds-record):
  `{"size": 6, "checks": [{"format": "f.tir:6:25: out-of-bounds read of A[%lld], shape
  (16,)", "values": 1}, ...]}`: the int32 error record the runtime passes to the kernels as
  the argument `{"kind": "bounds_record"}`, zeroed before the call; after the launches, a
  nonzero count `rec[0]` means check `rec[1]` (an index into `checks`) failed first, with
  its values as int64 halves from `rec[2]` on (low 32 bits, then high): the call fails with
  the format's message and code -5. A module with a record says `"tirc_abi": 3`.
"""

from __future__ import annotations

from typing import Any

from tirc.backends.nvptx.plan_conditions import ConditionWriter
from tirc.ir.analysis.entry_signature import accessed_data, param_buffers, shape_text, signature
from tirc.ir.analysis.storage import storage_size
from tirc.ir.attrs import BOUNDS_RECORD, GLOBAL_SYMBOL, SM_COUNT
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.dist.collective import is_ccl_symbol
from tirc.ir.expr import CMP_OPS, BinOp, Call, IntImm, PrimExpr, StringImm, Var, binop, cast
from tirc.ir.function import PrimFunc
from tirc.ir.gpu.threads import children, is_launch
from tirc.ir.intrinsics import BOUNDS_CHECK, CALL_PACKED
from tirc.ir.packed_call import packed_call
from tirc.ir.stmt import Allocate, AssertStmt, AttrStmt, Evaluate, For, IfThenElse, Stmt
from tirc.ir.visitor import substitute

# Bound by the runtime, not by the parameters: the device's SM count (a megakernel's grid).


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


def zero_offsets(func: PrimFunc, bound: dict[Var, str]) -> dict[Var, PrimExpr]:
    """A parameter's symbolic elem_offset that nothing else binds is 0, as make-entry binds it
    on the CPU (an argument's elements start at its data pointer): a kernel argument reading
    it passes 0."""
    out: dict[Var, PrimExpr] = {}
    for buf in param_buffers(func).values():
        off = buf.elem_offset
        if isinstance(off, Var) and off not in bound:
            out[off] = IntImm(0, off.dtype)
    return out


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
    params = info["params"]
    for launch in launches:
        kernel = kernels.get(launch["kernel"])
        if kernel is None:
            continue
        reads, writes = accessed_data(kernel)
        for kp, arg in zip(kernel.params, launch["args"]):
            buf = kernel.buffer_map.get(kp)
            if buf is None or arg["kind"] != "buffer":
                continue
            entry = params[arg["index"]]
            entry["input"] = entry["input"] or buf.data in reads
            entry["output"] = entry["output"] or buf.data in writes


def host_plan(func: PrimFunc, shared: dict[str, int],
              kernels: dict[str, PrimFunc]) -> dict[str, Any]:
    """The metadata entry of one host function (see the module docstring)."""
    symbol = str(func.attrs.get(GLOBAL_SYMBOL, func.name))
    bound = bound_symbols(func)
    info = signature(func, symbol, bound)
    info["kind"] = "gpu_func"
    # Each buffer parameter's position: names may repeat (a graph function returning its
    # parameter `x` has an input `x` and an output `x`), positions do not.
    index = {p: k for k, p in enumerate(func.params)}
    by_data: dict[Var, int] = {buf.data: index[p] for p, buf in param_buffers(func).items()}
    by_data.update({p: index[p] for p in func.params if p in func.buffer_map})
    for p in func.params:
        flat = func.buffer_map.get(p)
        if flat is not None:
            by_data.setdefault(flat.data, index[p])
    scalars = {p for p in func.params if p not in func.buffer_map}
    for p in scalars:
        if p.dtype.is_handle and p not in by_data:
            raise CompileError(f"codegen: {func.name}: the pointer parameter '{p.name}' is "
                               "supported by CPU builds only (a GPU launch plan moves tensors "
                               f"of known shape): declare it '{p.name}: T.Buffer(shape, dtype)'",
                               p.span or func.span)
    workspaces: dict[Var, Buffer] = {}
    names: dict[Var, str] = {}  # each workspace's name, made unique (`T_sqsum`, `T_sqsum_1`)
    launches: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    host_calls: list[dict[str, Any]] = []
    record: dict[str, Any] = {}  # the bounds checks' error record (gpu-bounds-record)

    def load_place(buf: Buffer, e: PrimExpr) -> dict[str, Any]:
        if buf.data in by_data:
            k = by_data[buf.data]
            return {"kind": "buffer", "param": func.params[k].name, "index": k}
        if buf.data in workspaces:
            return {"kind": "workspace", "workspace": names[buf.data]}
        raise CompileError(f"codegen: {func.name}: the condition of a branch reads "
                           f"'{buf.name}', which is neither a parameter nor a workspace",
                           e.span or func.span)

    def offset_text(e: PrimExpr) -> int | str:
        unbound = [v for v in _vars(e) if v not in bound]
        if unbound:
            raise CompileError(f"codegen: {func.name}: symbolic size '{unbound[0].name}' of "
                               "an element a branch condition reads is not a whole dimension "
                               "of any parameter", e.span or func.span)
        return _text(e, func)

    conditions = ConditionWriter(func.name, set(bound), load_place, offset_text)

    def walk(s: Stmt, in_branch: bool) -> list[dict[str, Any]]:
        """The plan's steps under `s`, in program order; fills the flat lists on the way."""
        if isinstance(s, IfThenElse):
            step = {"kind": "if", **conditions.condition(s.condition),
                    "then": walk(s.then_case, True),
                    "else": walk(s.else_case, True) if s.else_case is not None else []}
            return [step]
        if isinstance(s, For):  # a serial loop around launches: the runtime runs it
            var = s.loop_var
            if var.name in {v.name for v in bound}:  # its name must not hide a size's
                var = Var(_unique(var.name, {v.name for v in bound}), var.dtype)
                s = s.replace(loop_var=var, body=substitute(s.body, {s.loop_var: var}))
            bound[var] = f"loop {var.name}"
            return [{"kind": "for", "var": var.name, "min": offset_text(s.min),
                     "extent": offset_text(s.extent), "body": walk(s.body, True)}]
        steps: list[dict[str, Any]] = []
        if isinstance(s, AssertStmt):
            if in_branch:  # checked only when the branch runs
                steps.append({"kind": "check", **_check(s, func)})
            else:
                checks.append(_check(s, func))
        if isinstance(s, Allocate) and isinstance(s.body, AttrStmt) and \
                s.body.key == BOUNDS_RECORD:
            record.update(var=s.buffer.data, size=_text(storage_size(s.buffer), func),
                          checks=[])
            return walk(s.body.body, in_branch)
        if isinstance(s, Evaluate) and isinstance(s.value, Call) and \
                s.value.op == BOUNDS_CHECK and record:  # the host's report of one site
            fmt = s.value.args[1]
            assert isinstance(fmt, StringImm)
            record["checks"].append({"format": fmt.value, "values": len(s.value.args) - 2})
        if isinstance(s, Allocate):
            workspaces[s.buffer.data] = s.buffer
            names[s.buffer.data] = _unique(s.buffer.name, set(names.values()))
        if isinstance(s, Evaluate) and isinstance(s.value, Call) and s.value.op == CALL_PACKED:
            steps.append({"kind": "host_call", "index": len(host_calls)})
            host_calls.append(_host_call(s.value, func, len(launches), by_data, workspaces,
                                         names, bound))
        if is_launch(s):
            steps.append({"kind": "launch", "index": len(launches)})
            launches.append(_launch(s, func, by_data, workspaces, names, scalars, bound,
                                    shared, record.get("var")))
        for c in children(s):
            steps.extend(walk(c, in_branch))
        return steps

    steps = walk(func.body, False)
    info["workspaces"] = [
        {"name": names[b.data], "dtype": str(b.dtype),
         "bytes": _text(binop("mul", cast("int64", storage_size(b)), b.dtype.bytes), func)}
        for b in workspaces.values()]
    info["checks"] = checks
    info["launches"] = launches
    info["host_calls"] = host_calls
    if record:
        info["bounds_record"] = {"size": record["size"], "checks": record["checks"]}
    if any(step["kind"] in ("if", "for") for step in steps):
        info["steps"] = steps  # the order to run them in, with the branches
        for load in _loads(steps):
            if load["kind"] == "buffer":
                info["params"][load["index"]]["input"] = True
    _mark_accesses(info, launches, kernels)
    for hc in host_calls:
        for a in hc["args"]:
            if a["kind"] == "buffer":
                info["params"][a["index"]]["input" if a["role"] == "in" else "output"] = True
    return info


def _launch(s: Evaluate, func: PrimFunc, by_data: dict[Var, int],
            workspaces: dict[Var, Buffer], names: dict[Var, str], scalars: set[Var],
            bound: dict[Var, str], shared: dict[str, int],
            record: Var | None) -> dict[str, Any]:
    """The plan entry of one `tirc.launch_kernel`: kernel, extents and arguments (`record`:
    the bounds checks' error record, when the function has one)."""
    call = s.value
    assert isinstance(call, Call) and isinstance(call.args[0], StringImm)
    kernel = call.args[0].value
    dims = [_text(d, func) for d in call.args[1:7]]
    args: list[dict[str, Any]] = []
    for a in call.args[7:]:
        if isinstance(a, Var) and a.dtype.is_handle:
            if a is record:
                args.append({"kind": "bounds_record"})
            elif a in by_data:
                k = by_data[a]
                args.append({"kind": "buffer", "param": func.params[k].name, "index": k})
            elif a in workspaces:
                args.append({"kind": "workspace", "name": names[a]})
            else:
                raise CompileError(f"codegen: {func.name}: kernel argument '{a.name}' is "
                                   "neither a parameter nor a workspace", func.span)
        elif isinstance(a, Var) and a in scalars:
            args.append({"kind": "param", "param": a.name})
        else:
            a = substitute(a, zero_offsets(func, bound))
            unbound = [v for v in _vars(a) if v not in bound and v.name != SM_COUNT]
            if unbound:
                raise CompileError(f"codegen: {func.name}: symbolic size "
                                   f"'{unbound[0].name}' is not a whole dimension of any "
                                   "parameter, so the launch cannot compute it", func.span)
            args.append({"kind": "expr", "expr": str(_text(a, func)), "dtype": str(a.dtype)})
    return {"kernel": kernel, "grid": dims[:3], "block": dims[3:],
            "shared_bytes": shared.get(kernel, 0), "args": args}


def _host_call(e: Call, func: PrimFunc, before: int, by_data: dict[Var, int],
               workspaces: dict[Var, Buffer], names: dict[Var, str],
               bound: dict[Var, str]) -> dict[str, Any]:
    """The plan step of one `tirc.call_packed`: the C function's DLTensor arguments as the
    runtime builds them (see the module docstring)."""
    call = packed_call(e)
    args: list[dict[str, Any]] = []
    for t in call.tensors:
        buf = t.buffer
        if len(t.first.indices) != 1:
            raise CompileError(f"codegen: {func.name}: the tensors of a call of "
                               f"'{call.symbol}' must be flat buffers", e.span or func.span)
        offset = t.first.indices[0]
        if buf.elem_offset is not None:
            offset = binop("add", cast("int64", buf.elem_offset), cast("int64", offset))
        exprs = [cast("int64", offset) * buf.dtype.bytes, *t.shape]
        unbound = [v for x in exprs for v in _vars(x) if v not in bound]
        if unbound:
            raise CompileError(f"codegen: {func.name}: symbolic size '{unbound[0].name}' of a "
                               f"tensor passed to '{call.symbol}' is not a whole dimension of "
                               "any parameter", e.span or func.span)
        entry: dict[str, Any]
        if buf.data in by_data:
            k = by_data[buf.data]
            entry = {"kind": "buffer", "param": func.params[k].name, "index": k}
        elif buf.data in workspaces:
            entry = {"kind": "workspace", "name": names[buf.data]}
        else:
            raise CompileError(f"codegen: {func.name}: tensor '{buf.name}' passed to "
                               f"'{call.symbol}' is neither a parameter nor a workspace",
                               e.span or func.span)
        entry.update(role=t.role, dtype=str(buf.dtype),
                     shape=[_text(d, func) for d in t.shape],
                     offset=_text(exprs[0], func))
        args.append(entry)
    step = {"kind": "host_call", "symbol": call.symbol, "caller": call.caller,
            "before": before, "args": args}
    if is_ccl_symbol(call.symbol):
        step["ccl"] = True  # a collective: its tensors stay on the device (the NCCL shim)
    return step


def _loads(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every element the branch conditions of `steps` read from the device."""
    out: list[dict[str, Any]] = []
    for step in steps:
        if step["kind"] == "if":
            out += step["loads"] + _loads(step["then"]) + _loads(step["else"])
        elif step["kind"] == "for":
            out += _loads(step["body"])
    return out


def _check(s: AssertStmt, func: PrimFunc) -> dict[str, Any]:
    """A host check of the sizes (R.match_cast's) as the runtime evaluates it."""
    cond = s.condition
    if not isinstance(cond, BinOp) or cond.op not in CMP_OPS:
        raise CompileError(f"codegen: {func.name}: a host check must compare two sizes",
                           s.span or func.span)
    return {"lhs": _text(cond.a, func), "op": cond.op, "rhs": _text(cond.b, func),
            "message": s.message}


def _unique(name: str, taken: set[str]) -> str:
    """`name`, or `name_1`, `name_2`... when it is taken."""
    out, k = name, 0
    while out in taken:
        k += 1
        out = f"{name}_{k}"
    return out


def _vars(e: PrimExpr) -> list[Var]:
    from tirc.ir.rebind import used_vars

    return sorted(used_vars(e), key=lambda v: v.name)
