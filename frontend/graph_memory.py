"""TVM's memory-planned graph forms, read into tirc's value semantics.

After StaticPlanBlockMemory and friends a Relax function allocates its tensors itself
(`R.builtin.alloc_tensor`, `R.memory.alloc_storage` / `R.memory.alloc_tensor`, the `R.vm.*`
spellings), passes them to loop functions that write them (`_ = cls.exp(x, alloc)`, outputs
last) and frees them (`R.memory.kill_tensor`, `kill_storage`, `R.vm.kill_object`). tirc's
graph functions have values, not buffers, so the frontend reads these forms as values:

- an allocated tensor is `R.zeros(shape, dtype)` (TVM leaves its elements undefined);
- a call of a loop function writes the trailing arguments that are allocations not yet
  written: `R.call_tir_inplace(cls.f, args, inplace_indices=[...])`, whose results every name
  bound plainly to those tensors then denotes;
- a kill is a no-op, and a later use of what it killed is an error.

Storage is checked, and its aliasing honoured where values can: a tensor must fit its storage
(offset plus size); a value that shares bytes with a tensor written later (another tensor of
the storage whose range may overlap, a view `R.reshape` or a tuple made before the write) is
an error where it is used after that write, since TVM's would read the new bytes. A tensor
allocated over bytes an earlier tensor wrote is an error where it is read before written (it
would read the leftover bytes). Reuse of a storage by tensors whose lifetimes do not overlap,
the point of the form, is what this accepts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tirc.frontend import syntax as S
from tirc.frontend.builder_expr import literal_value
from tirc.frontend.signature import Sig, check_call
from tirc.ir.arith import make_analyzer
from tirc.ir.dtype import DType, DTypeError
from tirc.ir.expr import PrimExpr, Var, binop
from tirc.ir.graph import (
    ExternFunc,
    GCall,
    GlobalVar,
    GraphExpr,
    GVar,
    ShapeExpr,
    TensorSInfo,
    Tuple,
    TupleGetItem,
    VarBinding,
)
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.ops.sinfo_util import dim, dim_text, product, shape_text
from tirc.ir.span import Span

if TYPE_CHECKING:
    from tirc.frontend.builder_graph import GraphBuilder

ALLOC_STORAGE = {  # name -> its parameters in order
    "R.memory.alloc_storage": ("size", "virtual_device_index", "storage_scope", "dtype"),
    "R.vm.alloc_storage": ("size", "runtime_device_index", "dtype", "storage_scope"),
}
ALLOC_TENSOR = {
    "R.memory.alloc_tensor": ("storage", "offset", "shape", "dtype"),
    "R.vm.alloc_tensor": ("storage", "offset", "shape", "dtype", "runtime_device_index"),
    "R.builtin.alloc_tensor": ("shape", "dtype", "runtime_device_index", "storage_scope"),
}
KILLS = ("R.memory.kill_tensor", "R.memory.kill_storage", "R.vm.kill_object")
MEMORY_CALLS = (*ALLOC_STORAGE, *ALLOC_TENSOR, *KILLS)


@dataclass(eq=False)
class Storage:
    """A storage block (`R.memory.alloc_storage`): its name, size in bytes, where made."""

    name: str
    size: PrimExpr
    span: Span | None
    killed: Span | None = None


@dataclass(eq=False)
class Alloc:
    """An allocated tensor: its storage and byte range (None: a storage of its own), its
    type, whether written yet, and whether its bytes held another tensor's writes."""

    name: str
    storage: Storage | None
    offset: PrimExpr
    nbytes: PrimExpr
    sinfo: TensorSInfo
    written: bool = False
    leftover: str | None = None  # the tensor whose bytes it would read before a write


Shared = Any  # frozenset[int] of allocation ids, or a tuple of Shared (one per field)


def flat(shared: Shared) -> frozenset[int]:
    """Every allocation a (possibly tuple-shaped) Shared mentions."""
    if isinstance(shared, tuple):
        out: frozenset[int] = frozenset()
        for f in shared:
            out |= flat(f)
        return out
    return shared


class MemoryState:
    """What a graph function's memory forms have made: storages, allocations, the values
    that share their bytes, and the values a later write or a kill has made unusable."""

    def __init__(self) -> None:
        self.allocs: dict[int, Alloc] = {}  # by id of the Alloc; the root of its aliases
        self.roots: dict[GVar, Shared] = {}  # the allocations whose bytes a value shows
        self.plain: dict[GVar, int] = {}  # values that are an allocation itself (`y = alloc`)
        self.names: dict[int, set[str]] = {}  # names bound plainly to an allocation
        self.stale: dict[GVar, str] = {}  # unusable values, with the reason
        self.storage_writes: dict[int, list[tuple[Alloc, str]]] = {}  # by id of Storage

    def note_binding(self, var: GVar, value: GraphExpr, name: str) -> None:
        """Record what bytes a new binding shares: a plain alias, a view, a tuple of them."""
        if isinstance(value, GVar) and value in self.plain:
            root = self.plain[value]
            self.plain[var] = root
            self.names.setdefault(root, set()).add(name)
        roots = self.shared(value)
        if flat(roots):
            self.roots[var] = roots

    def shared(self, value: GraphExpr) -> Shared:
        """The allocations whose bytes `value` shows without copying (TVM's views), field
        by field for a tuple."""
        if isinstance(value, GVar):
            return self.roots.get(value, frozenset())
        if isinstance(value, Tuple):
            return tuple(self.shared(f) for f in value.fields)
        if isinstance(value, TupleGetItem):
            inner = self.shared(value.tuple_value)
            if isinstance(inner, tuple) and value.index < len(inner):
                return inner[value.index]
            return flat(inner)
        if isinstance(value, GCall) and value.op in ("reshape", "match_cast") and value.args:
            return self.shared(value.args[0])
        return frozenset()

    def check_use(self, g: GraphBuilder, var: GVar, span: Span | None) -> None:
        """Refuse a use of a value that a later write or kill made unusable, or of an
        allocation that would read the bytes another tensor left."""
        reason = self.stale.get(var)
        if reason is not None:
            g.ctx.error(f"'{var.name}' {reason}", span)
        root = self.plain.get(var)
        alloc = self.allocs.get(root) if root is not None else None
        if alloc is not None and not alloc.written and alloc.leftover is not None:
            g.ctx.error(f"'{var.name}' is read before anything writes it, and its bytes in "
                        f"storage '{alloc.storage.name if alloc.storage else ''}' hold what "
                        f"'{alloc.leftover}' wrote; tirc gives a new tensor zeros, so it "
                        "cannot read those (write it first)", span)


def memory_binding(g: GraphBuilder, target: str, call: S.Call, name: str,
                   span: Span | None) -> list[VarBinding] | None:
    """A binding `target = <memory form>` (None when `call` is none): the bindings it
    stands for."""
    if name in ALLOC_STORAGE:
        _alloc_storage(g, target, call, name)
        return []
    if name in ALLOC_TENSOR:
        return [_alloc_tensor(g, target, call, name)]
    if name in KILLS:
        _kill(g, call, name)
        return []
    if name == "R.call_packed" and call.args and \
            literal_value(call.args[0]) == "vm.builtin.reshape":
        return [_vm_reshape(g, target, call)]
    if name == "R.call_packed" and call.args and isinstance(literal_value(call.args[0]), str):
        return _write_call(g, call, packed=True)
    if isinstance(call.func, (S.Name, S.Attribute)) and _is_loop_function(g, call.func):
        return _write_call(g, call)
    return None


def is_memory_stmt(g: GraphBuilder, value: S.Expr) -> bool:
    """Whether an expression statement is a memory form (a kill, `cls.f(x, alloc)`)."""
    if not isinstance(value, S.Call):
        return False
    name = S.call_name(value)
    if name in KILLS or (name == "R.call_packed" and bool(value.args)):
        return True
    return isinstance(value.func, (S.Name, S.Attribute)) and _is_loop_function(g, value.func)


def _is_loop_function(g: GraphBuilder, func: S.Expr) -> bool:
    """Whether `func` names a loop function of this module (`cls.f`, `Module.f`, `f`)."""
    if isinstance(func, S.Attribute):
        if not (isinstance(func.value, S.Name) and func.value.id in g.module_names()):
            return False
        fname = func.attr
    elif isinstance(func, S.Name):
        if g.scope.lookup(func.id) is not None:
            return False
        fname = func.id
    else:
        return False
    return fname in g.module.functions and fname not in g.module.graph


def _args(g: GraphBuilder, call: S.Call, name: str, params: tuple[str, ...], lo: int
          ) -> dict[str, S.Expr]:
    """The arguments of a memory form by parameter name (positional or keyword)."""
    a = check_call(g.ctx, call, name, Sig(lo, len(params), params, names=params))
    out = {p: node for i, p in enumerate(params) if (node := a.get(i, p)) is not None}
    for p in params[:lo]:
        if p not in out:
            g.ctx.error(f"{name} needs its argument '{p}'", call.span)
    return out


def _unwrap(node: S.Expr, *wrappers: str) -> S.Expr:
    """`R.prim_value(0)` / `R.str("global")` / `R.dtype("f")` as their one argument."""
    if S.call_name(node) in wrappers and isinstance(node, S.Call) and len(node.args) == 1:
        return node.args[0]
    return node


def _dtype(g: GraphBuilder, node: S.Expr, name: str) -> DType:
    """A dtype argument: `"float32"` or `R.dtype("float32")`."""
    text = g.eb.str_literal(_unwrap(node, "R.dtype", "R.str"), f"the dtype of {name}")
    try:
        return DType.parse(text)
    except DTypeError as e:
        g.ctx.error(f"{name}: {e}", node.span)


def _size(g: GraphBuilder, node: S.Expr, what: str) -> PrimExpr:
    """An integer argument: a literal, `R.prim_value(n)` or a symbolic size."""
    return dim(g.eb.index(_unwrap(node, "R.prim_value"), what))


def _shape(g: GraphBuilder, node: S.Expr) -> tuple[PrimExpr, ...]:
    """A shape argument: `R.shape([...])` or a tuple of sizes."""
    return tuple(dim(d) for d in g.shape_value(node).values)


def _alloc_storage(g: GraphBuilder, target: str, call: S.Call, name: str) -> None:
    """`storage = R.memory.alloc_storage(R.shape([bytes]), ...)`: a storage block."""
    a = _args(g, call, name, ALLOC_STORAGE[name], 1)
    size = _shape(g, a["size"])
    if len(size) != 1:
        g.ctx.error(f"{name}: the size is one dimension (bytes), got {len(size)}",
                    a["size"].span)
    for key in ("virtual_device_index", "runtime_device_index"):
        if key in a:
            _check_device(g, a[key], name)
    if "storage_scope" in a:
        scope = g.eb.str_literal(_unwrap(a["storage_scope"], "R.str"), "the storage scope")
        if scope != "global":
            g.ctx.unsupported(f"{name} in storage scope '{scope}' (only \"global\")",
                              a["storage_scope"].span)
    if "dtype" in a:
        _dtype(g, a["dtype"], name)
    g.scope.rebind(target, Storage(target, size[0], call.span), call.span)


def _check_device(g: GraphBuilder, node: S.Expr, name: str) -> None:
    """A device index: tirc's graph functions run on the one device (0; TVM's -1 too)."""
    value = literal_value(_unwrap(node, "R.prim_value"))
    if value not in (0, -1):
        g.ctx.unsupported(f"{name} on device {value} (one device: 0)", node.span)


def _alloc_tensor(g: GraphBuilder, target: str, call: S.Call, name: str) -> VarBinding:
    """`t = R.memory.alloc_tensor(storage, offset, shape, dtype)` (or `R.builtin.
    alloc_tensor(shape, dtype)`): a tensor of zeros, checked against its storage."""
    params = ALLOC_TENSOR[name]
    a = _args(g, call, name, params, 4 if params[0] == "storage" else 2)
    shape = _shape(g, a["shape"])
    dt = _dtype(g, a["dtype"], name)
    if "runtime_device_index" in a:
        _check_device(g, a["runtime_device_index"], name)
    nbytes = product(list(shape) + [dim(dt.bytes)]) if shape else dim(dt.bytes)
    storage = None
    offset = dim(0)
    if "storage" in a:
        node = a["storage"]
        storage = g.scope.require(node.id, node.span) if isinstance(node, S.Name) else None
        if not isinstance(storage, Storage):
            g.ctx.error(f"{name} takes a storage made by R.memory.alloc_storage", node.span)
        if storage.killed is not None:
            g.ctx.error(f"storage '{storage.name}' is used after it was killed (line "
                        f"{storage.killed.line})", node.span)
        offset = _size(g, a["offset"], "an offset")
        _check_fits(g, storage, offset, nbytes, shape, dt, call.span)
    sinfo = TensorSInfo(shape, dt, len(shape))
    alloc = Alloc(target, storage, offset, nbytes, sinfo)
    if storage is not None:
        alloc.leftover = _overlapping_writer(storage, alloc, g.mem)
    value = GCall("zeros", (ShapeExpr(shape, span=a["shape"].span),), {"dtype": str(dt)},
                  span=call.span)
    var = GVar(target, sinfo, False, span=call.span)
    g.scope.rebind(target, var, call.span)
    root = id(alloc)
    g.mem.allocs[root] = alloc
    g.mem.plain[var] = root
    g.mem.roots[var] = frozenset({root})
    g.mem.names[root] = {target}
    return VarBinding(var, value, span=call.span)


def _check_fits(g: GraphBuilder, storage: Storage, offset: PrimExpr, nbytes: PrimExpr,
                shape: tuple[PrimExpr, ...], dt: DType, span: Span | None) -> None:
    """A tensor must lie inside its storage: `0 <= offset` and `offset + bytes <= size`."""
    an = make_analyzer(_declared_bounds(g))
    end = binop("add", offset, nbytes)
    if an.can_prove(binop("ge", offset, dim(0))) and an.can_prove(binop("le", end,
                                                                         storage.size)):
        return
    g.ctx.error(f"a tensor of shape {shape_text(shape)} and dtype {dt} ({dim_text(nbytes)} "
                f"bytes) at offset {dim_text(offset)} does not fit in storage "
                f"'{storage.name}' of {dim_text(storage.size)} bytes (or tirc cannot prove "
                "it does: R.func_attr({\"tir_var_upper_bound\": {...}}) bounds the sizes)",
                span)


def _declared_bounds(g: GraphBuilder) -> dict[Var, tuple[int, int]]:
    """The sizes' ranges a function declares (`tir_var_upper_bound`, `tir_var_lower_bound`,
    TVM's attributes), which the storage plan of a symbolic shape relies on."""
    upper = g.attrs.get("tir_var_upper_bound") or {}
    lower = g.attrs.get("tir_var_lower_bound") or {}
    out: dict[Var, tuple[int, int]] = {}
    for name, hi in upper.items() if isinstance(upper, dict) else ():
        var = g.scope.lookup(name)
        if isinstance(var, Var) and isinstance(hi, int):
            lo = lower.get(name, 0) if isinstance(lower, dict) else 0
            out[var] = (lo if isinstance(lo, int) else 0, hi)
    return out


def _disjoint(a: Alloc, b: Alloc) -> bool:
    """Whether two tensors of one storage provably use different bytes."""
    an = make_analyzer()
    return an.can_prove(binop("le", binop("add", a.offset, a.nbytes), b.offset)) or \
        an.can_prove(binop("le", binop("add", b.offset, b.nbytes), a.offset))


def _overlapping_writer(storage: Storage, alloc: Alloc, mem: MemoryState) -> str | None:
    """The name of an earlier written tensor of `storage` whose bytes `alloc` may cover."""
    for other, _ in reversed(mem.storage_writes.get(id(storage), [])):
        if not _disjoint(other, alloc):
            return other.name
    return None


def _kill(g: GraphBuilder, call: S.Call, name: str) -> None:
    """`R.memory.kill_tensor(t)` and the like: nothing to do in values; later uses of what
    it kills are errors."""
    a = check_call(g.ctx, call, name, Sig(1, 1))
    node = a.pos[0]
    if not isinstance(node, S.Name):
        g.ctx.error(f"{name} takes a name", node.span)
    value = g.scope.require(node.id, node.span)
    if isinstance(value, Storage):
        if name == "R.memory.kill_tensor":
            g.ctx.error(f"R.memory.kill_tensor takes a tensor; '{node.id}' is a storage "
                        "(R.memory.kill_storage)", node.span)
        value.killed = call.span
        return
    if not isinstance(value, GVar):
        g.ctx.error(f"{name} takes a tensor or a storage", node.span)
    if name == "R.memory.kill_storage":
        g.ctx.error(f"R.memory.kill_storage takes a storage; '{node.id}' is not one",
                    node.span)
    line = call.span.line if call.span else 0  # a kill reads nothing: a stale value may go
    g.mem.stale[value] = f"is used after {name} killed it (line {line})"


def _vm_reshape(g: GraphBuilder, target: str, call: S.Call) -> VarBinding:
    """`R.call_packed("vm.builtin.reshape", x, shape, sinfo_args=...)`: R.reshape (a view
    of x's bytes, as the VM's)."""
    a = check_call(g.ctx, call, "R.call_packed", Sig(3, 3, ("sinfo_args",)))
    value = GCall("reshape", (g.operand(a.pos[1]), g.shape_value(a.pos[2])), span=call.span)
    var = GVar(target, None, False, span=call.span)
    g.scope.rebind(target, var, call.span)
    g.mem.note_binding(var, value, target)
    return VarBinding(var, value, span=call.span)


def _write_call(g: GraphBuilder, call: S.Call, packed: bool = False
                ) -> list[VarBinding] | None:
    """`cls.f(x, alloc)`: f writes the trailing arguments that are allocations not written
    yet (TVM's destination-passing calls put the outputs last); read as
    `R.call_tir_inplace(cls.f, (x, alloc), inplace_indices=[1], out_sinfo=...)`, whose
    results the allocations' names denote from here on. `packed`: `R.call_packed("f", x,
    alloc, sinfo_args=(R.Tuple(),))`, the C function (or registered one) f writing `alloc`,
    read as `R.call_dps_packed("f", (x,), out_sinfo=...)`. None when it writes none of them
    (the caller's error then)."""
    if packed:
        a = check_call(g.ctx, call, "R.call_packed", Sig(1, None, ("sinfo_args", "ty_args")))
        nodes = list(a.pos[1:])
        symbol = str(literal_value(a.pos[0]))
        results = a.kw.get("sinfo_args", a.kw.get("ty_args"))
        if results is not None and not _empty_results(results):
            return None  # a function returning a value: not a write (refused as before)
        func = GlobalVar(symbol, span=call.func.span)
    else:
        func = g.global_var(call.func)
        if call.keywords:
            g.ctx.error(f"a call of loop function '{func.name}' takes positional arguments",
                        call.keywords[0].span)
        nodes = list(call.args)
    outs: list[tuple[int, Alloc]] = []
    for i in range(len(nodes) - 1, -1, -1):
        alloc = _fresh_alloc(g, nodes[i])
        if alloc is None:
            break
        outs.insert(0, (i, alloc))
    if not outs:
        return None
    out_set = {i for i, _ in outs}
    args: list[GraphExpr] = []
    for i, node in enumerate(nodes):
        if i in out_set:
            assert isinstance(node, S.Name)
            var = g.scope.lookup(node.id)
            assert isinstance(var, GVar)
            args.append(var)
        else:
            args.append(g.operand(node))
    sinfos = tuple(a.sinfo for _, a in outs)
    if packed:  # the outputs' old values are not read: plain destination-passing outputs
        inputs = tuple(x for i, x in enumerate(args) if i not in out_set)
        value = GCall("call_dps_packed", (ExternFunc(func.name, span=call.args[0].span),
                                          Tuple(inputs, span=call.span)), {}, sinfos,
                      span=call.span)
    else:
        value = GCall("call_tir_inplace", (GlobalVar(func.name, span=call.func.span),
                                          Tuple(tuple(args), span=call.span)),
                      {"inplace_indices": tuple(i for i, _ in outs)}, sinfos, span=call.span)
    line = call.span.line if call.span else 0
    if len(outs) == 1:
        alloc = outs[0][1]
        var = GVar(alloc.name, alloc.sinfo, False, span=call.span)
        bindings = [VarBinding(var, value, span=call.span)]
        results = [var]
    else:
        tup = GVar(f"{func.name}_out", None, False, span=call.span)
        bindings = [VarBinding(tup, value, span=call.span)]
        results = []
        for k, (_, alloc) in enumerate(outs):
            var = GVar(alloc.name, alloc.sinfo, False, span=call.span)
            bindings.append(VarBinding(var, TupleGetItem(tup, k, span=call.span),
                                       span=call.span))
            results.append(var)
    for (_, alloc), var in zip(outs, results):
        _written(g, alloc, var, f"{func.name}' (line {line})")
    return bindings


def _empty_results(node: S.Expr) -> bool:
    """Whether `sinfo_args` says the packed function returns nothing: `R.Tuple`,
    `R.Tuple()`, or a tuple or list of one of those."""
    items = node.elts if isinstance(node, (S.Tuple, S.List)) else [node]
    return len(items) == 1 and (S.dotted(items[0]) == "R.Tuple" or (
        S.call_name(items[0]) == "R.Tuple" and isinstance(items[0], S.Call) and
        not items[0].args and not items[0].keywords))


def _fresh_alloc(g: GraphBuilder, node: S.Expr) -> Alloc | None:
    """The allocation a name denotes itself, when nothing has written it yet."""
    if not isinstance(node, S.Name):
        return None
    var = g.scope.lookup(node.id)
    if not isinstance(var, GVar) or var in g.mem.stale:
        return None
    root = g.mem.plain.get(var)
    alloc = g.mem.allocs.get(root) if root is not None else None
    return alloc if alloc is not None and not alloc.written else None


def _written(g: GraphBuilder, alloc: Alloc, var: GVar, writer: str) -> None:
    """After a write of `alloc` (now the value `var`): its names denote `var`; every other
    value sharing its bytes (views, tuples, overlapping tensors of its storage) is stale."""
    mem = g.mem
    root = id(alloc)
    alloc.written = True
    for name in mem.names.get(root, set()):
        old = g.scope.lookup(name)
        if isinstance(old, GVar) and mem.plain.get(old) == root:
            g.scope.rebind(name, var, var.span)
    mem.plain[var] = root
    mem.roots[var] = frozenset({root})
    hit = {root}
    if alloc.storage is not None:
        writes = mem.storage_writes.setdefault(id(alloc.storage), [])
        for other_root, other in mem.allocs.items():
            if other is not alloc and other.storage is alloc.storage and \
                    not _disjoint(other, alloc):
                hit.add(other_root)
        writes.append((alloc, writer))
    for v, shared in list(mem.roots.items()):
        roots = flat(shared)
        if v is var or not (roots & hit) or v in mem.stale:
            continue
        if root in roots:
            mem.stale[v] = (f"shares the bytes of '{alloc.name}', which '{writer} writes "
                            "after it was made; TVM's would read the new bytes, tirc's values "
                            "do not change: make it after the write")
        else:
            mem.stale[v] = (f"shares storage '{alloc.storage.name if alloc.storage else ''}'"
                            f" with '{alloc.name}', which '{writer} writes; TVM's would read "
                            "those bytes, tirc gives each tensor its own value: use it "
                            "before the write or give it bytes of its own")


def storage_value_error(g: GraphBuilder, value: Any, node: S.Name) -> None:
    """A storage used as a graph value: only the memory forms take it."""
    if isinstance(value, Storage):
        g.ctx.error(f"'{node.id}' is a storage (R.memory.alloc_storage); only "
                    "R.memory.alloc_tensor and the kills take it", node.span)
