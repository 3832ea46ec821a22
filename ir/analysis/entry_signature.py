"""The signature of an exported function, as the metadata JSON describes it.

For each parameter: its name, whether it is a buffer or a scalar, dtype, shape (integers, and
symbolic dimensions as expression strings such as "n" or "n * 2"), and whether the function
reads and/or writes it (written buffers are outputs). Symbolic variables are listed with the
argument dimension they are bound from; a graph function's tuple parameters with the
parameters that take their fields ("tuples"), and the structure of its returned value over its
result parameters where that is not one tensor or a flat tuple of them ("returns").
"""

from __future__ import annotations

from typing import Any

from tirc.ir.attrs import GRAPH_RESULTS, GRAPH_RETURNS, GRAPH_TUPLES, PARAM_BUFFERS, SHARDING
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import BinOp, BufferLoad, Call, Cast, IntImm, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.packed_call import output_loads
from tirc.ir.prim_call import call_arguments, callee_of
from tirc.ir.stmt import BufferStore, LetStmt
from tirc.ir.visitor import post_order_visit

_INFIX = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "floormod": "%"}


def tuple_format(n: int) -> str:
    """A printf format for an n-tuple of int64 values, as Python writes a tuple: the shapes
    and strides of the entry checks' messages."""
    return "(" + ", ".join(["%lld"] * n) + ("," if n == 1 else "") + ")"

_PRECEDENCE = {"add": 1, "sub": 1, "mul": 2, "floordiv": 2, "floormod": 2}


def shape_text(e: PrimExpr) -> int | str:
    """A dimension as JSON: an int, or a Python-syntax expression over symbolic names."""
    if isinstance(e, IntImm):
        return e.value
    return _text(e, 0)


def _text(e: PrimExpr, outer: int) -> str:
    if isinstance(e, IntImm):
        return str(e.value)
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Cast):
        return _text(e.value, outer)
    if isinstance(e, BinOp) and e.op in _INFIX:
        prec = _PRECEDENCE[e.op]
        inner = f"{_text(e.a, prec)} {_INFIX[e.op]} {_text(e.b, prec + 1)}"
        return f"({inner})" if prec < outer else inner
    if isinstance(e, BinOp) and e.op in ("min", "max"):
        return f"{e.op}({_text(e.a, 0)}, {_text(e.b, 0)})"
    raise CompileError(f"make-entry: a buffer dimension must be built from integers, symbolic "
                       f"sizes, + - * // % min max; got {type(e).__name__}", e.span)


def param_buffers(func: PrimFunc) -> dict[Var, Buffer]:
    """The logical buffer behind each handle parameter (kept by flatten-buffers in attrs)."""
    kept = func.attrs.get(PARAM_BUFFERS)
    if isinstance(kept, dict):
        return {p: kept[p] for p in func.params if p in kept}
    if isinstance(kept, (list, tuple)):
        handles = [p for p in func.params if p in func.buffer_map or p.dtype.is_handle]
        return dict(zip(handles, kept))
    return {p: func.buffer_map[p] for p in func.params if p in func.buffer_map}


def handle_aliases(func: PrimFunc) -> dict[Var, Var]:
    """Each pointer the body binds to another (`B_ptr: T.handle = A_ptr`), to the pointer it
    stands for in the end."""
    direct: dict[Var, Var] = {}

    def visit(node: Any) -> None:
        if isinstance(node, LetStmt) and node.var.dtype.is_handle and \
                isinstance(node.value, Var):
            direct[node.var] = node.value

    post_order_visit(func.body, visit)
    out = {}
    for v in direct:
        root, seen = direct[v], {v}
        while root in direct and root not in seen:
            seen.add(root)
            root = direct[root]
        out[v] = root
    return out


def pointer_views(func: PrimFunc) -> dict[Var, list[Buffer]]:
    """For each bare pointer parameter (`A: T.handle("float32")`, no buffer of its own), the
    buffers of the body that view its storage (`T.decl_buffer((n,), data=A)`, also through
    a pointer bound to it), in order."""
    buffers = param_buffers(func)
    pointers = [p for p in func.params if p.dtype.is_handle and p not in buffers]
    views: dict[Var, list[Buffer]] = {p: [] for p in pointers}
    if not pointers:
        return views
    aliases = handle_aliases(func)

    def visit(node: Any) -> None:
        buf = node.buffer if isinstance(node, (BufferLoad, BufferStore)) else None
        data = aliases.get(buf.data, buf.data) if buf is not None else None
        if buf is not None and data in views and buf not in views[data]:
            views[data].append(buf)

    post_order_visit(func.body, visit)
    return views


# What each loop function reads and writes of its parameters (by index), for direct calls.
CalleeAccess = dict[str, tuple[frozenset[int], frozenset[int]]]


def accessed_data(func: PrimFunc, callees: CalleeAccess | None = None,
                  ) -> tuple[set[Var], set[Var]]:
    """The data variables of buffers the body reads, and of those it writes (an output of an
    external call, `tirc.dltensor("out", B[0])`, is written, not read; storage passed to a
    direct call of a loop function is what `callees` says the callee reads and writes of
    that parameter, both when it does not know the callee)."""
    reads: set[Var] = set()
    writes: set[Var] = set()
    extern_outputs = output_loads(func.body)
    aliases = handle_aliases(func)

    def visit(node: Any) -> None:
        if isinstance(node, BufferLoad):
            data = aliases.get(node.buffer.data, node.buffer.data)
            (writes if id(node) in extern_outputs else reads).add(data)
        elif isinstance(node, BufferStore):
            writes.add(aliases.get(node.buffer.data, node.buffer.data))
        elif isinstance(node, Call) and (name := callee_of(node)) is not None:
            known = callees.get(name) if callees is not None else None
            for i, a in enumerate(call_arguments(node)):
                if isinstance(a, Var) and a.dtype.is_handle:
                    if known is None or i in known[0]:
                        reads.add(a)
                    if known is None or i in known[1]:
                        writes.add(a)

    post_order_visit(func.body, visit)
    return reads, writes


def _param_datas(func: PrimFunc) -> list[set[Var]]:
    """For each parameter, the variables that stand for its storage in the body."""
    originals = param_buffers(func)
    out = []
    for p in func.params:
        datas = {p}
        for b in (func.buffer_map.get(p), originals.get(p)):
            if b is not None:
                datas.add(b.data)
        out.append(datas)
    return out


def callee_access(functions: dict[str, Any]) -> CalleeAccess:
    """For each loop function of a module, the parameters it reads and those it writes, by
    its own accesses and those of the functions it calls (transitively, recursion included)."""
    prims = {n: f for n, f in functions.items() if isinstance(f, PrimFunc)}
    known: CalleeAccess = {n: (frozenset(), frozenset()) for n in prims}
    changed = True
    while changed:
        changed = False
        for name, f in prims.items():
            reads, writes = accessed_data(f, known)
            datas = _param_datas(f)
            now = (frozenset(i for i, d in enumerate(datas) if d & reads),
                   frozenset(i for i, d in enumerate(datas) if d & writes))
            if now != known[name]:
                known[name] = now
                changed = True
    return known


def signature(func: PrimFunc, symbol: str, bound_from: dict[Var, str],
              callees: CalleeAccess | None = None,
              pointers: dict[Var, Buffer] | None = None) -> dict[str, Any]:
    """The JSON-ready description of `func`'s parameters (see docs/abi.md); `callees` says
    what the functions it calls directly read and write (`callee_access`); `pointers`: the
    1-d view the entry takes for each bare pointer parameter (kind "pointer")."""
    buffers = param_buffers(func)
    flat = {p: func.buffer_map.get(p) for p in func.params}
    reads, writes = accessed_data(func, callees)
    results = set(func.attrs.get(GRAPH_RESULTS, ()))
    params: list[dict[str, Any]] = []
    for p in func.params:
        buf = buffers.get(p)
        view = (pointers or {}).get(p)
        if buf is None and view is None:
            params.append({"name": p.name, "kind": "scalar", "dtype": str(p.dtype)})
            continue
        if buf is None:
            assert view is not None
            buf, datas = view, {p}
        else:
            datas = {buf.data} | ({flat[p].data} if flat.get(p) is not None else set())
        entry: dict[str, Any] = {
            "name": p.name,
            "kind": "buffer" if view is None else "pointer",
            "buffer": buf.name,
            "dtype": str(buf.dtype),
            "shape": [shape_text(d) for d in buf.shape],
            "input": bool(datas & reads),
            "output": bool(datas & writes) or p.name in results,
        }
        if buf.strides:
            entry["strides"] = [shape_text(s) for s in buf.strides]
        params.append(entry)
    variables = {v.name: {"dtype": str(v.dtype), "from": where} for v, where in bound_from.items()}
    out = {"name": symbol, "kind": "prim_func", "params": params, "vars": variables}
    if SHARDING in func.attrs:
        out["sharding"] = _json_ready(func.attrs[SHARDING])
    if GRAPH_TUPLES in func.attrs:  # a graph function's tuple parameters
        out["tuples"] = [{"name": name, "params": list(fields)}
                         for name, fields in func.attrs[GRAPH_TUPLES]]
    if GRAPH_RETURNS in func.attrs:  # a graph function returning shapes, scalars, nested tuples
        out["returns"] = _json_ready(func.attrs[GRAPH_RETURNS])
    return out


def _json_ready(value: Any) -> Any:
    """Tuples as lists, recursively (attributes print and parse back as tuples)."""
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_json_ready(v) for v in value]
    return value
