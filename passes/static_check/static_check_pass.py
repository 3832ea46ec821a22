"""static-check: what can be proved wrong about a loop function before it is compiled.

Errors (each a `file:line:col` diagnostic, all of a module reported at once): an access whose
index provably leaves its buffer, a block binding that provably leaves its domain, a
`T.parallel` or `T.vectorized` loop over a reduction axis or whose iterations touch the same
element with one of them writing. Warnings (errors under `-Werror`): two GPU threads or
thread blocks writing the same element of storage they share, a reduction without
`T.init` that accumulates into an output nothing initialised, and a read of storage the
function allocates that nothing writes. The pass runs on the program as
written, before schedules and the graph lowering add functions of their own; accesses it
cannot decide are left to `-fbounds-check`.
"""

from __future__ import annotations

from tirc.ir.diagnostics import MAX_ERRORS, CompileError, Diagnostic
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.parallel_private import privatize_parallel_buffers
from tirc.passes.pass_base import Pass, PassContext
from tirc.passes.static_check.rules import (
    binding_outside_domain,
    missing_init,
    out_of_bounds,
    parallel_dependence,
    thread_race,
    unwritten_reads,
)
from tirc.passes.static_check.sites import collect_sites


def check_function(func: PrimFunc) -> list[Diagnostic]:
    """Every diagnostic for one loop function, in rule order (read with its parallel-private
    buffers allocated in their loops, as the compiler and the interpreter run it)."""
    body = privatize_parallel_buffers(func.body)
    if body is not func.body:
        func = func.replace(body=body)  # type: ignore[assignment]
    sites = collect_sites(func)
    found = [*binding_outside_domain(sites), *out_of_bounds(sites),
             *parallel_dependence(func, sites), *thread_race(sites), *missing_init(sites),
             *unwritten_reads(func, sites)]
    return found


@dataclass(frozen=True)
class StaticCheck(Pass):
    """Reports accesses out of bounds, bindings out of their domains, parallel loops that are
    not independent (errors), racing GPU threads, reductions without an init and reads of
    storage nothing writes (warnings)."""

    name = "static-check"
    description = ("compile-time checks: accesses and bindings out of bounds, parallel or "
                   "vectorized loops with a dependence, GPU threads writing one element, "
                   "reductions without T.init, reads of storage nothing writes")

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        found: list[Diagnostic] = []
        for func in mod.functions.values():
            if isinstance(func, PrimFunc):
                found += check_function(func)
        found.sort(key=_place)
        if any(d.severity == "error" for d in found):
            raise CompileError(found[:MAX_ERRORS])
        for d in found:
            ctx.warn(d)
        return mod


def _place(d: Diagnostic) -> tuple[str, int, int]:
    """Diagnostics in source order (those without a place last)."""
    if d.span is None:
        return ("\uffff", 0, 0)
    return (str(d.span.file), d.span.line, d.span.col)
