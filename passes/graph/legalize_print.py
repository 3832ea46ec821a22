"""`R.print` where it is not compiled: a megakernel (`-fmegakernel`) runs its calls as tasks in
no fixed order, so its prints could come out of order; the megakernel pass binds each
`R.print` to its result, the empty tuple, and warns (an error under -Werror) instead. Other
builds compile R.print (lower-graph, tirc.ir.print_call); the interpreter prints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from tirc.ir.graph import (
    BindingBlock,
    Function,
    GCall,
    SeqExpr,
    Tuple,
    VarBinding,
    with_branches,
)

Warn = Callable[[str, object], None]


MEGAKERNEL_PRINT = ("R.print is not compiled in a megakernel (-fmegakernel): its tasks run in "
                    "no fixed order, so it prints nothing (build without -fmegakernel, or "
                    "run the interpreter, to print)")


def drop_prints(func: Function, warn: Warn) -> Function:
    """`func` with every `R.print` (in `if` branches too) bound to `()`, `warn` told of each
    (MEGAKERNEL_PRINT and its span)."""
    blocks, changed = _blocks(func.body.blocks, warn)
    if not changed:
        return func
    return dataclasses.replace(func, body=dataclasses.replace(func.body, blocks=tuple(blocks)))


def _blocks(old: tuple[BindingBlock, ...], warn: Warn) -> tuple[list[BindingBlock], bool]:
    """The blocks without their prints, and whether any was there."""
    changed = False

    def branch(seq: SeqExpr) -> SeqExpr:
        nonlocal changed
        inner, moved = _blocks(seq.blocks, warn)
        changed |= moved
        return dataclasses.replace(seq, blocks=tuple(inner)) if moved else seq

    out = []
    for block in old:
        bindings = []
        for b in block.bindings:
            b = with_branches(b, branch)
            if isinstance(b, VarBinding) and isinstance(b.value, GCall) and \
                    b.value.op == "print":
                warn(MEGAKERNEL_PRINT, b.value.span)
                b = dataclasses.replace(b, value=Tuple((), span=b.value.span))
                changed = True
            bindings.append(b)
        out.append(dataclasses.replace(block, bindings=tuple(bindings)))
    return out, changed
