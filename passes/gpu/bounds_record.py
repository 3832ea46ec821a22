"""gpu-bounds-record: -fbounds-check inside GPU kernels, reported by the host.

A kernel has no return code, and a trap would kill the CUDA context with the message. So after
gpu-split-host-device, every `tirc.bounds_check(cond, "format", values...)` the bounds-check
pass left in a kernel becomes

    if not cond:
        if T.atomic_add(tirc_bounds[0], 1) == 0:     # the first failing thread wins
            tirc_bounds[1] = k                       # which check (copies share one k)
            tirc_bounds[2 + 2 * i] = value_i         # low 32 bits of each value
            tirc_bounds[3 + 2 * i] = value_i >> 32   # high 32 bits
        return                                       # the thread stops; no access is made

where `tirc_bounds` is an int32 record, a new last parameter of the kernel. A thread leaving
early cannot hang a later `T.tvm_storage_sync` of its block: the barrier waits for the
threads that have not exited (PTX ISA, `exit` and `barrier.cta`: exiting threads release a
barrier they hold up), and the GPU interpreter runs it the same way.

The host function allocates the record around its launches (an `Allocate` whose body is an
`AttrStmt` with key `tirc.bounds_record` on it), passes it to every kernel that has checks,
and after the launches runs one `tirc.bounds_check` per site on it, with its own message:

    T.bounds_check(rec[0] == 0 or rec[1] != k, "oob.tir:6:25: out-of-bounds read of ...",
                   value_0, value_1, ...)

so the GPU interpreter raises the CPU's message, and the launch plan carries the formats to
the runtime (tirc.runtime.cuda), which copies the record back after the call, raises the same
TircError (-5) and starts the next call with a fresh record. Functions without checks are left
alone, so the pass costs nothing without -fbounds-check.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, ClassVar

from tirc.ir import intrinsics as intrin
from tirc.ir.attrs import BOUNDS_RECORD, GPU_HOST, KERNEL
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import HANDLE, INT32, dtype
from tirc.ir.expr import BufferLoad, Call, IntImm, Let, Not, PrimExpr, StringImm, Var, binop, cast
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.stmt import Allocate, AttrStmt, BufferStore, Evaluate, IfThenElse, LetStmt, Stmt, seq
from tirc.ir.visitor import Mutator, post_order_visit
from tirc.passes.pass_base import Pass, PassContext

INT64 = dtype("int64")
RECORD_NAME = "tirc_bounds"
HEADER = 2  # the failure count, then the failing site


@dataclass
class Site:
    """One check of a kernel: its message format and how many values it prints."""

    fmt: str
    values: int


@dataclass
class _Record:
    """The record of one host function: its buffer and the sites of all its kernels."""

    width: int  # the most values a check of these kernels prints
    data: Var = field(default_factory=lambda: Var(RECORD_NAME, HANDLE))
    sites: list[Site] = field(default_factory=list)

    def site(self, site: Site) -> int:
        """The number of a check's site; copies of one check (unrolled) share it."""
        if site not in self.sites:
            self.sites.append(site)
        return self.sites.index(site)

    def buffer(self, data: Var | None = None) -> Buffer:
        """The record as an int32 buffer (over `data`: a kernel's parameter, or the host's)."""
        return Buffer(name=RECORD_NAME, shape=(IntImm(HEADER + 2 * self.width, INT32),),
                      dtype=INT32, data=data if data is not None else self.data)


def _check_call(e: Any) -> Call | None:
    """The bounds check `e` is, possibly under the lets of the access it checks, or None."""
    while isinstance(e, Let):
        e = e.body
    return e if isinstance(e, Call) and e.op == intrin.BOUNDS_CHECK else None


def _checks(func: PrimFunc) -> list[Call]:
    """Every bounds check in a kernel."""
    found: list[Call] = []

    def visit(n: Any) -> None:
        if isinstance(n, Evaluate) and (call := _check_call(n.value)) is not None:
            found.append(call)

    post_order_visit(func.body, visit)
    return found


def _at(k: int) -> tuple[PrimExpr, ...]:
    """The index of element `k` of the (flat) record."""
    return (IntImm(k, INT32),)


def _load(rec: Buffer, k: int) -> PrimExpr:
    """Element `k` of the record."""
    return BufferLoad(rec, _at(k), INT32)


def _store(rec: Buffer, k: int, value: PrimExpr) -> Stmt:
    """`rec[k] = value`."""
    return BufferStore(rec, value, _at(k))


def _halves(value: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    """The low and high 32 bits of a value as int32 (signed; the host joins them again)."""
    wide = cast(INT64, value)
    high = Call(intrin.SHIFT_RIGHT, (wide, IntImm(32, INT64)), INT64)
    return cast(INT32, wide), cast(INT32, high)


def _joined(buf: Buffer, k: int) -> PrimExpr:
    """Value `k` of the record as int64: its high half times 2**32 plus its unsigned low."""
    low = Call(intrin.BITWISE_AND, (cast(INT64, _load(buf, HEADER + 2 * k)),
                                   IntImm(0xFFFFFFFF, INT64)), INT64)
    high = cast(INT64, _load(buf, HEADER + 2 * k + 1))
    return binop("add", binop("mul", high, IntImm(1 << 32, INT64)), low)


class _KernelChecks(Mutator):
    """Rewrites the checks of one kernel into record-and-exit (see the module docstring)."""

    def __init__(self, record: _Record, rec: Buffer) -> None:
        self.record = record
        self.rec = rec

    def visit_Evaluate(self, s: Evaluate) -> Stmt:
        """A check (under the lets of its access, which become LetStmts) -> record and exit."""
        if _check_call(s.value) is None:
            return s
        lets: list[Let] = []
        call = s.value
        while isinstance(call, Let):
            lets.append(call)
            call = call.body
        assert isinstance(call, Call)
        out = self.failing(call, s)
        for let in reversed(lets):
            out = LetStmt(let.var, let.value, out, span=s.span)
        return out

    def failing(self, call: Call, s: Evaluate) -> Stmt:
        """`if not cond:` the first failing thread fills the record; every failing one returns."""
        cond, fmt, values = call.args[0], call.args[1], call.args[2:]
        if not isinstance(fmt, StringImm) or cond.dtype.lanes != 1:
            raise CompileError("gpu-bounds-record: a bounds check needs a scalar condition "
                               "and a format string", call.span or s.span)
        site = self.record.site(Site(fmt.value, len(values)))
        rec = self.rec
        stores = [_store(rec, 1, IntImm(site, INT32))]
        for i, v in enumerate(values):
            low, high = _halves(v)
            stores += [_store(rec, HEADER + 2 * i, low), _store(rec, HEADER + 2 * i + 1, high)]
        first = binop("eq", Call(intrin.ATOMIC_ADD, (_load(rec, 0), IntImm(1, INT32)), INT32),
                      IntImm(0, INT32))
        leave = Evaluate(Call(intrin.RET, (IntImm(0, INT32),), INT32), span=s.span)
        return IfThenElse(Not(cond), seq(IfThenElse(first, seq(*stores)), leave), span=s.span)


class _Launches(Mutator):
    """Passes the host's record to every launch of a kernel that has checks."""

    def __init__(self, checked: set[str], data: Var) -> None:
        self.checked = checked
        self.data = data

    def visit_Evaluate(self, s: Evaluate) -> Stmt:
        """A launch of a checked kernel gets the record as its last argument."""
        v = s.value
        if isinstance(v, Call) and v.op == intrin.LAUNCH_KERNEL and \
                isinstance(v.args[0], StringImm) and v.args[0].value in self.checked:
            return s.replace(value=Call(v.op, (*v.args, self.data), v.dtype))  # type: ignore[return-value]
        return s


def _launched(func: PrimFunc) -> list[str]:
    """The kernels a host function launches, in order of first launch."""
    names: list[str] = []

    def visit(n: Any) -> None:
        if isinstance(n, Call) and n.op == intrin.LAUNCH_KERNEL and \
                isinstance(n.args[0], StringImm) and n.args[0].value not in names:
            names.append(n.args[0].value)

    post_order_visit(func.body, visit)
    return names


def _with_record(kernel: PrimFunc, record: _Record) -> PrimFunc:
    """`kernel` with the record as its last parameter and its checks rewritten."""
    param = Var(RECORD_NAME, HANDLE)
    rec = record.buffer(Var(RECORD_NAME, HANDLE))
    body = _KernelChecks(record, rec).visit(kernel.body)
    return kernel.replace(params=(*kernel.params, param),  # type: ignore[return-value]
                          buffer_map={**kernel.buffer_map, param: rec}, body=body)


def _host_reports(host: PrimFunc, record: _Record, checked: set[str]) -> PrimFunc:
    """The host function with the record around its body and a report of each site after."""
    rec = record.buffer()
    reports: list[Stmt] = []
    for k, site in enumerate(record.sites):
        ok = binop("or", binop("eq", _load(rec, 0), IntImm(0, INT32)),
                   binop("ne", _load(rec, 1), IntImm(k, INT32)))
        values = [_joined(rec, i) for i in range(site.values)]
        reports.append(Evaluate(Call(intrin.BOUNDS_CHECK, (ok, StringImm(site.fmt), *values),
                                     INT32)))
    body = seq(_Launches(checked, record.data).visit(host.body), *reports)
    wrapped = Allocate(rec, AttrStmt(record.data, BOUNDS_RECORD,
                                     IntImm(len(record.sites), INT32), body))
    return host.replace(body=wrapped)  # type: ignore[return-value]


@dataclass(frozen=True)
class GPUBoundsRecord(Pass):
    """Kernels' bounds checks -> an error record the host reports (see the module docstring)."""

    name: ClassVar[str] = "gpu-bounds-record"
    description: ClassVar[str] = ("-fbounds-check in GPU kernels: a failed check fills the "
                                  "call's error record and ends its thread; the host function "
                                  "reports the first failure with the CPU's message")

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Each host function whose kernels have checks gets a record; others stay as they are."""
        funcs = dict(mod.functions)
        changed = False
        for name, host in mod.functions.items():
            if not isinstance(host, PrimFunc) or not host.attrs.get(GPU_HOST):
                continue
            found = {k: _checks(f) for k in _launched(host)
                     if isinstance(f := funcs.get(k), PrimFunc) and f.attrs.get(KERNEL)}
            checked = {k for k, calls in found.items() if calls}
            record = _Record(max(len(c.args) - 2 for k in checked for c in found[k])
                             if checked else 0)
            for k in (k for k in found if k in checked):
                funcs[k] = _with_record(funcs[k], record)  # type: ignore[arg-type]
            if checked:
                funcs[name] = _host_reports(host, record, checked)
                changed = True
        return mod.replace(functions=funcs) if changed else mod  # type: ignore[return-value]
