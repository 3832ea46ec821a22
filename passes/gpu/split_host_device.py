"""gpu-split-host-device: each launch region becomes a device kernel; the host keeps the launches.

For a loop function with thread-bound loops, every launch region (an outermost thread-bound
loop, with any shared/local allocations wrapped around it) is moved into a new loop function
`<name>_kernel<k>` (`<name>_kernel` when there is one) whose parameters are what the region
uses from outside: buffer handles (parameters, or host workspaces), then scalars (symbolic
sizes and scalar parameters, by name). The kernel gets the attributes `tirc.kernel` and
`tir.kernel_launch_params` (its thread axes). In the host function the region is replaced by

    T.call_intrin("int32", "tirc.launch_kernel", "f_kernel", gx, gy, gz, bx, by, bz, args...)

where the grid and block extents are expressions over the host's symbolic sizes, so the host
part is a launch plan the runtime evaluates; a parameter buffer is passed as its storage
(`A.data`, for T.Buffer and T.match_buffer parameters alike), a workspace as its allocation.
Host code may only open global workspaces, bind scalars (inlined into the launches), launch
kernels, call C functions (`tirc.call_packed`, which the launch plan runs on the CPU between
the kernels) and branch (a graph-level `if` on a scalar, or on an element the plan reads back
from the device: tirc.backends.nvptx.launch_plan) and run a serial loop around launches (as
TVM keeps it on the host: the kernels launch in each iteration, the loop's variable one of
their arguments); anything else outside the thread-bound loops (a store, a loop with no
launch inside) is an error pointing at it, and a function without any thread-bound loop is
an error asking for bindings.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tirc.ir.analysis.storage import storage_size
from tirc.ir.attrs import GLOBAL_SYMBOL, GPU_HOST, KERNEL, KERNEL_LAUNCH_PARAMS, NOALIAS
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import HANDLE, INT32
from tirc.ir.expr import BufferLoad, Call, IntImm, Let, PrimExpr, StringImm, Var
from tirc.ir.function import PrimFunc
from tirc.ir.gpu.launch import launch_extents
from tirc.ir.gpu.threads import (
    ALL_TAGS,
    BLOCK_TAGS,
    DEVICE_SCOPES,
    THREAD_TAGS,
    is_launch,
    is_thread_loop,
    launch_regions,
    walk_stmts,
)
from tirc.ir.intrinsics import CALL_PACKED, LAUNCH_KERNEL
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.loop_jumps import contains_loop_jump
from tirc.ir.module import IRModule
from tirc.ir.prim_call import callee_of
from tirc.ir.rebind import rebind, used_vars
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)
from tirc.ir.structural import structural_equal
from tirc.ir.visitor import post_order_visit
from tirc.passes.gpu.storage_scope import check_kernel_allocations, strip_storage_kind
from tirc.passes.pass_base import Pass, PassContext


def defined_vars(s: Stmt) -> set[Var]:
    """Variables a statement defines inside itself (loops, lets, allocations)."""
    out: set[Var] = set()

    def visit(n: Any) -> None:
        if isinstance(n, For):
            out.add(n.loop_var)
        elif isinstance(n, LetStmt | Let):
            out.add(n.var)
        elif isinstance(n, Allocate):
            out.add(n.buffer.data)

    post_order_visit(s, visit)
    return out


def _first_use(s: Stmt) -> dict[Var, int]:
    """Each variable under `s` with the position of its first appearance in a walk of `s`."""
    order: dict[Var, int] = {}

    def visit(n: Any) -> None:
        if isinstance(n, Var) and n not in order:
            order[n] = len(order)

    post_order_visit(s, visit)
    return order


def _buffers_by_data(s: Stmt) -> dict[Var, list[Buffer]]:
    """Every buffer `s` loads or stores through, by its storage, in order of first use."""
    out: dict[Var, list[Buffer]] = {}

    def visit(n: Any) -> None:
        if isinstance(n, BufferLoad | BufferStore):
            seen = out.setdefault(n.buffer.data, [])
            if n.buffer not in seen:
                seen.append(n.buffer)

    post_order_visit(s, visit)
    return out


def _same_extent(a: PrimExpr, b: PrimExpr) -> bool:
    """Whether two extents are the same: equal constants (of any index dtype) or equal trees."""
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    return structural_equal(a, b)


def _whole_storage(param: Buffer, used: list[Buffer]) -> Buffer:
    """The kernel's buffer for a host parameter's storage: all of it, flat, as the launch passes
    it. A body that reads it only through a smaller view (a `T.decl_buffer` with strides or an
    offset on `A.data`) declares less; the parameter then gets a flat buffer of its own."""
    size = storage_size(param)
    for b in used:
        if b.dtype == param.dtype and b.ndim == 1 and _same_extent(b.shape[0], size):
            return b
    if not used or any(b.dtype != param.dtype for b in used):
        return used[0] if used else param
    return Buffer(name=param.name, shape=(size,), dtype=param.dtype, data=param.data,
                  scope=param.scope, align=param.align, offset_factor=param.offset_factor,
                  span=param.span)


@dataclass
class Kernel:
    """A kernel cut out of a host function: the new function and the host's launch of it."""

    func: PrimFunc
    launch: Stmt


class _Splitter:
    def __init__(self, func: PrimFunc) -> None:
        self.func = func
        self.count = len(launch_regions(func.body))
        self.kernels: list[PrimFunc] = []
        # Global workspaces the host opens: a kernel's parameter for one has its whole shape
        # (views into it, as lower-graph's intermediates, share its storage at offsets).
        self.workspaces: dict[Var, Buffer] = {}
        # Host handle order: the parameters' storage first. A launch passes a buffer's storage
        # (`A.data` in the printed IR, whether A is a T.Buffer or a T.match_buffer parameter).
        self.param_data = [func.buffer_map[p].data for p in func.params if p in func.buffer_map]

    def error(self, s: Stmt, what: str) -> CompileError:
        return CompileError(
            f"gpu-split-host-device: {self.func.name}: {what} is outside every thread-bound "
            "loop; the host part of a GPU function can only launch kernels (move it inside a "
            "loop bound to blockIdx/threadIdx)", s.span or self.func.span)

    def host(self, s: Stmt) -> Stmt:
        if is_thread_loop(s):
            return self.kernel(s, [])
        if isinstance(s, SeqStmt):
            return seq(*(self.host(x) for x in s.seq)) if s.seq else s
        if isinstance(s, Allocate):
            if s.buffer.scope in DEVICE_SCOPES:
                return self.device_allocs(s, [])
            if s.init is not None:
                raise self.error(s, f"event tensor '{s.buffer.name}'")
            self.workspaces[s.buffer.data] = s.buffer
            return s.replace(body=self.host(s.body))  # type: ignore[return-value]
        if isinstance(s, AttrStmt | AssertStmt):  # a check of sizes: the launch plan runs it
            return s.replace(body=self.host(s.body))  # type: ignore[return-value]
        if isinstance(s, LetStmt):
            if s.var.dtype.is_handle:
                raise self.error(s, f"handle '{s.var.name}'")
            # into buffer shapes too: a kernel's view of the workspace may use the variable
            # (a size an R.match_cast binds), which would be a parameter nothing defines
            return self.host(rebind(s.body, {s.var: s.value}))
        if isinstance(s, Evaluate) and isinstance(s.value, IntImm):
            return s
        if isinstance(s, IfThenElse):  # a graph-level `if`: the launch plan branches
            then = self.host(s.then_case)
            other = self.host(s.else_case) if s.else_case is not None else None
            return s.replace(then_case=then, else_case=other)  # type: ignore[return-value]
        if is_launch(s):
            return s
        if isinstance(s, For) and s.kind in (ForKind.SERIAL, ForKind.UNROLLED) and \
                launch_regions(s.body):
            # a serial loop around launches (dlight's fallback for an unscheduled reduction):
            # the host runs it, launching the kernels in each iteration, as TVM keeps it
            return s.replace(body=self.host(s.body), kind=ForKind.SERIAL)  # type: ignore[return-value]
        if isinstance(s, Evaluate) and isinstance(s.value, Call) and s.value.op == CALL_PACKED:
            return s  # a C function the launch plan calls on the host (R.call_dps_packed)
        kind = {"For": f"loop '{getattr(s, 'loop_var', Var()).name}'",
                "BufferStore": f"a store to '{getattr(s, 'buffer', Buffer()).name}'"}
        raise self.error(s, kind.get(type(s).__name__, f"a {type(s).__name__} statement"))

    def device_allocs(self, s: Stmt, allocs: list[Buffer]) -> Stmt:
        """Shared/local allocations around a region go into its kernel."""
        if isinstance(s, Allocate) and s.buffer.scope in DEVICE_SCOPES:
            return self.device_allocs(strip_storage_kind(s.body, s.buffer), [*allocs, s.buffer])
        if is_thread_loop(s):
            return self.kernel(s, allocs)  # type: ignore[arg-type]
        raise CompileError(f"gpu-split-host-device: {self.func.name}: {allocs[-1].scope} buffer "
                           f"'{allocs[-1].name}' must be used inside one kernel (run "
                           "gpu-storage-scope first)", s.span or self.func.span)

    def kernel(self, region: For, allocs: list[Buffer]) -> Stmt:
        body: Stmt = region
        for buf in reversed(allocs):
            body = Allocate(buf, body)
        check_kernel_allocations(body)
        k = len(self.kernels)
        name = f"{self.func.name}_kernel" if self.count == 1 else f"{self.func.name}_kernel{k}"
        free = used_vars(body) - defined_vars(body)
        # A buffer the kernel reaches only through its storage (the sparse lowering's
        # position searches take `indptr.data`) is found among the function's parameters.
        used = _buffers_by_data(body)
        params = {b.data: b for b in self.func.buffer_map.values()}
        buffers = {**{d: b[0] for d, b in used.items()},
                   **{d: _whole_storage(b, used.get(d, [])) for d, b in params.items()}}
        # By name, and variables of the same name by first use (never by set order, which
        # changes from run to run).
        first = _first_use(body)

        def key(v: Var) -> tuple[str, int]:
            return v.name, first.get(v, len(first))

        handles = [v for v in self.param_data if v in free]
        handles += sorted((v for v in free if v.dtype.is_handle and v not in handles), key=key)
        params: list[Var] = []
        buffer_map: dict[Var, Buffer] = {}
        for data in handles:
            if data not in buffers:
                raise CompileError(f"gpu-split-host-device: {self.func.name}: handle "
                                   f"'{data.name}' is used by a kernel but is not a buffer",
                                   region.span)
            p = Var(buffers[data].name, HANDLE)
            params.append(p)
            buffer_map[p] = self.workspaces.get(data, buffers[data])
        # A workspace's shape may name sizes the body never uses (the kernel reads a view of it
        # at a constant offset): they are parameters too, so every size of the signature is bound.
        free |= used_vars(*buffer_map.values()) - defined_vars(body)
        scalars = sorted((v for v in free if not v.dtype.is_handle), key=key)
        params.extend(scalars)
        extents = launch_extents(region)
        tags = [t for t in ALL_TAGS if t in extents]
        attrs = {GLOBAL_SYMBOL: name, KERNEL: True, KERNEL_LAUNCH_PARAMS: tags,
                 NOALIAS: True}
        self.kernels.append(PrimFunc(name, tuple(params), buffer_map, body, attrs,
                                     span=region.span))
        dims: list[PrimExpr] = [extents.get(t, IntImm(1, INT32)) for t in (*BLOCK_TAGS,
                                                                           *THREAD_TAGS)]
        args: tuple[PrimExpr, ...] = (StringImm(name), *dims, *handles, *scalars)
        return Evaluate(Call(LAUNCH_KERNEL, args, INT32), span=region.span)


def split_function(func: PrimFunc) -> tuple[PrimFunc, list[PrimFunc]]:
    """The host function (launches only) and the kernels of one GPU loop function."""
    if func.attrs.get(KERNEL) or func.attrs.get(GPU_HOST):
        return func, []
    if not launch_regions(func.body):
        if any(isinstance(s, BufferStore) for s in walk_stmts(func.body)):
            why = " (the default GPU schedule leaves a function that breaks or continues a " \
                "loop alone)" if contains_loop_jump(func.body) else ""
            raise CompileError(
                f"gpu-split-host-device: function '{func.name}' has no thread-bound loops, so "
                "it cannot run on the GPU; bind its loops to blockIdx/threadIdx "
                f"(T.thread_binding, or sch.bind in a schedule){why}", func.span)
        return func, []
    splitter = _Splitter(func)
    body = splitter.host(func.body)
    attrs = dict(func.attrs)
    attrs[GPU_HOST] = True
    return func.replace(body=body, attrs=attrs), splitter.kernels  # type: ignore[return-value]


@dataclass(frozen=True)
class GPUSplitHostDevice(Pass):
    """Cut every launch region out into a kernel function (see the module docstring)."""

    name: ClassVar[str] = "gpu-split-host-device"
    description: ClassVar[str] = ("each launch region becomes a device kernel; the host "
                                  "function keeps tirc.launch_kernel calls")

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        for func in mod.functions.values():
            if isinstance(func, PrimFunc):
                _refuse_direct_calls(func)
        funcs: dict[str, Any] = {}
        changed = False
        for name, func in mod.functions.items():
            if not isinstance(func, PrimFunc):
                funcs[name] = func
                continue
            host, kernels = split_function(func)
            changed |= host is not func
            funcs[name] = host
            for k in kernels:
                if k.name in mod.functions or k.name in funcs:
                    raise CompileError(f"gpu-split-host-device: kernel name '{k.name}' is "
                                       "already taken by another function", k.span)
                funcs[k.name] = k
        return mod.replace(functions=funcs) if changed else mod  # type: ignore[return-value]


def _refuse_direct_calls(func: PrimFunc) -> None:
    """A direct call between loop functions, or a function returning a value, has no GPU
    lowering yet: an error at its place."""
    if func.ret_dtype is not None:
        raise CompileError(f"unsupported: loop function '{func.name}' returns a value in a GPU "
                           "build (functions returning values compile for the CPU only)",
                           func.span)
    calls: list[Call] = []
    post_order_visit(func.body, lambda n: calls.append(n)
                     if isinstance(n, Call) and callee_of(n) is not None else None)
    if calls:
        raise CompileError(f"unsupported: a direct call of loop function '{callee_of(calls[0])}' "
                           "in a GPU build (calls between loop functions compile for the CPU "
                           "only)", calls[0].span or func.span)
