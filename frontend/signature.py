"""Arity and keyword checks for calls of T.*, R.* and S.* functions."""

from __future__ import annotations

from tirc.frontend import syntax as S
from tirc.frontend.context import Context
from tirc.ir.lean_dataclass import dataclass


@dataclass(frozen=True)
class Sig:
    """How a builtin may be called: `lo..hi` positional arguments (hi None: any number) and
    the keywords it accepts, each of which may instead be given positionally after the
    required ones when listed in `positional_kw`."""

    lo: int
    hi: int | None
    keywords: tuple[str, ...] = ()
    positional_kw: bool = False
    names: tuple[str, ...] = ()  # the positional parameters' names, each also a keyword

    def describe(self) -> str:
        if self.hi == self.lo:
            n = self.lo
            return f"{n} argument{'s' if n != 1 else ''}"
        if self.hi is None:
            return f"at least {self.lo} argument{'s' if self.lo != 1 else ''}"
        return f"{self.lo} to {self.hi} arguments"


@dataclass
class Args:
    """The checked arguments of a call: positional list and keywords by name."""

    pos: list[S.Expr]
    kw: dict[str, S.Expr]

    def get(self, index: int, name: str | None = None) -> S.Expr | None:
        """The argument at `index`, else the keyword `name`, else None."""
        if index < len(self.pos):
            return self.pos[index]
        if name is not None:
            return self.kw.get(name)
        return None


def check_call(ctx: Context, call: S.Call, name: str, sig: Sig) -> Args:
    """Check a call's argument count and keywords against `sig`; report mismatches."""
    pos = list(call.args)
    given = {k.name: k for k in call.keywords}
    named: set[str] = set()
    for pname in sig.names[len(pos):]:  # `dtype="float32"` fills its positional place
        if pname not in given:
            break
        pos.append(given[pname].value)
        named.add(pname)
    n = len(pos)
    max_pos = sig.hi
    if sig.positional_kw and sig.hi is not None:
        max_pos = sig.hi + len(sig.keywords)
    if n < sig.lo or (max_pos is not None and n > max_pos):
        ctx.error(f"{name} takes {sig.describe()}, got {n}", call.span)
    kw: dict[str, S.Expr] = {}
    for k in call.keywords:
        if k.name in named:
            continue
        if k.name in sig.names[:n]:
            ctx.error(f"{name} got argument '{k.name}' twice", k.span)
        if k.name not in sig.keywords:
            ctx.error(f"{name} got an unexpected keyword argument '{k.name}'", k.span)
        if k.name in kw:
            ctx.error(f"{name} got argument '{k.name}' twice", k.span)
        kw[k.name] = k.value
    if sig.positional_kw and sig.hi is not None and n > sig.hi:
        for extra, kname in zip(pos[sig.hi:], sig.keywords):
            if kname in kw:
                ctx.error(f"{name} got argument '{kname}' twice", extra.span)
            kw[kname] = extra
        pos = pos[: sig.hi]
    return Args(pos, kw)
