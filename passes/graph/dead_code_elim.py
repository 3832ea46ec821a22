"""dead-code-elim: drop dataflow bindings nobody uses and functions nobody calls.

Inside dataflow blocks (which have no side effects) a binding whose variable is not used by a
later binding, a block output that is used, or the returned value goes away; `R.match_cast`
and `R.tirc.size_check` stay (they check at run time). In a module with graph functions, a
loop function that no graph function references and that has no `global_symbol`, and a fused
`Primitive` graph function nobody calls, are removed.
"""

from __future__ import annotations

import dataclasses

from tirc.ir.attrs import GLOBAL_SYMBOL, PRIMITIVE
from tirc.ir.function import PrimFunc
from tirc.ir.graph import (
    Binding,
    BindingBlock,
    Function,
    GCall,
    GlobalVar,
    GVar,
    MatchCast,
    SeqExpr,
    with_branches,
)
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.prim_call import called_functions
from tirc.ir.visitor import post_order_visit
from tirc.passes.graph.fuse_ops import used_vars
from tirc.passes.pass_base import Pass, PassContext


@dataclass(frozen=True)
class DeadCodeElim(Pass):
    """Unused dataflow bindings and unreferenced private functions are removed.

    Not optional: the loop functions fuse-ops leaves unreferenced would reach the GPU
    megakernel pipeline's gpu-split-host-device without thread bindings (it has no
    gpu-default-schedule)."""

    name = "dead-code-elim"
    description = "remove unused graph bindings and functions nobody calls"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod
        for name, func in mod.graph_funcs().items():
            new = eliminate_bindings(func)
            if new is not func:
                out = out.with_function(name, new)
        return remove_unused_functions(out)


def eliminate_bindings(func: Function) -> Function:
    """`func` without the dataflow bindings whose values are never used."""
    blocks, changed = _eliminate(func.body, set())
    if not changed:
        return func
    body = dataclasses.replace(func.body, blocks=tuple(blocks))
    return dataclasses.replace(func, body=body)


def _eliminate(seq: SeqExpr, live: set[GVar]) -> tuple[list[BindingBlock], bool]:
    """The blocks of `seq` without their unused dataflow bindings (inside the branches of an
    `if` too), and whether anything changed; `live` gains the variables they use."""
    live |= set(used_vars(seq.body))
    blocks: list[BindingBlock] = []
    changed = False

    def branch(inner: SeqExpr) -> SeqExpr:
        nonlocal changed
        kept_blocks, moved = _eliminate(inner, set())
        changed |= moved
        return dataclasses.replace(inner, blocks=tuple(kept_blocks)) if moved else inner

    for block in reversed(seq.blocks):
        kept = []
        for b in reversed(block.bindings):
            if block.is_dataflow and not _checks(b) and b.var not in live:
                changed = True
                continue
            b = with_branches(b, branch)
            kept.append(b)
            live |= set(used_vars(b.value))  # type: ignore[attr-defined]
        outputs = tuple(v for v in block.outputs if v in live)
        changed |= len(outputs) != len(block.outputs)
        if kept:
            blocks.append(dataclasses.replace(block, bindings=tuple(reversed(kept)),
                                              outputs=outputs))
        else:
            changed = True
    return list(reversed(blocks)), changed


def _checks(b: Binding) -> bool:
    """Whether a binding checks something at run time (`R.match_cast`, a size check), and so
    stays when nothing uses its variable."""
    from tirc.ir.ops.size_checks import SIZE_CHECK  # graph modules only (start-up)

    return isinstance(b, MatchCast) or (isinstance(b.value, GCall)  # type: ignore[attr-defined]
                                        and b.value.op == SIZE_CHECK)  # type: ignore[attr-defined]


def _referenced(func: Function) -> set[str]:
    names: set[str] = set()

    def visit(n: object) -> None:
        if isinstance(n, GlobalVar):
            names.add(n.name)
        elif isinstance(n, GCall):
            names.add(n.op)

    post_order_visit(func.body, visit)
    return names


def remove_unused_functions(mod: IRModule) -> IRModule:
    """Drop private functions that no entry graph function reaches (through R.call_tir,
    graph calls, or direct calls between loop functions)."""
    graph = mod.graph_funcs()
    if not graph:
        return mod
    entries = [n for n, f in graph.items() if not f.attrs.get(PRIMITIVE)]
    reached: set[str] = set()
    todo = list(entries)
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        f = mod.functions.get(name)
        if isinstance(f, Function):
            todo.extend(n for n in _referenced(f) if n in mod.functions)
        elif isinstance(f, PrimFunc):  # its direct calls of other loop functions
            todo.extend(n for n in called_functions(f.body) if n in mod.functions)
    out = mod
    for name, f in mod.functions.items():
        public = (isinstance(f, Function) and not f.attrs.get(PRIMITIVE)) or \
            GLOBAL_SYMBOL in f.attrs
        if name not in reached and not public:
            out = out.without_function(name)
    return out
