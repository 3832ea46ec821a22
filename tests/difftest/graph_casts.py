"""A stage of the random graph functions from a stream of its own (three programs in ten get
one, at a random step), for the symbolic sizes no other stage writes:

- `rename`: a value cast to a shape where one dimension (of at least 2) is a fresh size,
  `R.match_cast(v, R.Tensor((c0, 4), "float32"))`, bound at run time; later operators use
  it, and where they need it equal to another size (`n`, a constant the generator believes
  in) the run-time size checks compare them, and pass;
- `pin`: the symbolic dimension `n` cast to its run-time value (`n` -> 3), a constant after;
- `clash`, a program that must fail: a value with a symbolic dimension combined by an
  elementwise operator with a fresh parameter whose dimension there is a size `m` of another
  run-time value, so the size check fails (`R.add: sizes n = 3 and m = 4 must be equal`), in
  the interpreter and in every build with one message; or `misfit`, the symbolic dimension
  cast to a value it does not have at run time (a failing `R.match_cast`). Both end the
  program (their value is its result).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from tirc.ir import IntImm, Var
from tirc.ir.ops.sinfo_util import tensor

if TYPE_CHECKING:
    from difftest.graph_programs import Val, _Gen

FORMS = ("rename", "rename", "rename", "pin", "clash", "clash", "misfit")


def stage_cast(gen: _Gen, r: random.Random, last: bool) -> bool:
    """One of the stages above, drawn from `r`; the failing ones only when `last` (nothing
    follows them). True when the program now must fail at run time."""
    form = r.choice(FORMS if last else FORMS[:4])
    if form == "rename":
        _rename(gen, r)
    elif form == "pin":
        _pin(gen, r)
    elif form == "clash":
        return _clash(gen, r)
    else:
        return _misfit(gen, r)
    return False


def _symbolic(gen: _Gen) -> list[tuple[Val, int]]:
    """The recent values with a symbolic dimension, and where."""
    return [(v, k) for v in gen.vals[-4:] for k, (d, _) in enumerate(v.dims)
            if isinstance(d, Var)]


def _cast(gen: _Gen, a: Val, dims: tuple) -> Val:
    """`R.match_cast(a, R.Tensor(dims))`, a value the later stages may pick."""
    from difftest.graph_programs import Val

    var = gen.gb.match_cast(a.var, tensor(tuple(d for d, _ in dims), a.dt))
    val = Val(var, dims, a.dt, a.lo, a.hi, a.exact)
    gen.vals.append(val)
    return val


def _fresh(gen: _Gen, base: str) -> Var:
    """A size variable named after no other of the function."""
    taken = {d.name for v in gen.vals for d, _ in v.dims if isinstance(d, Var)}
    taken |= {d.name for _, dims, _, _ in gen.params_dims for d, _ in dims if isinstance(d, Var)}
    k = 0
    while f"{base}{k}" in taken:
        k += 1
    return gen.gb.sym(f"{base}{k}")


def _rename(gen: _Gen, r: random.Random) -> None:
    found = [(v, k) for v in gen.vals[-4:] for k, (_, size) in enumerate(v.dims) if size >= 2]
    if not found:
        return
    a, k = r.choice(found)
    c = _fresh(gen, "c")
    _cast(gen, a, tuple((c, a.dims[k][1]) if j == k else x for j, x in enumerate(a.dims)))


def _pin(gen: _Gen, r: random.Random) -> None:
    found = _symbolic(gen)
    if not found:
        return _rename(gen, r)
    a, k = r.choice(found)
    _cast(gen, a, tuple((IntImm(size, d.dtype), size) if j == k else (d, size)
                        for j, (d, size) in enumerate(a.dims)))


def _clash(gen: _Gen, r: random.Random) -> bool:
    found = [(v, k) for v, k in _symbolic(gen) if v.dt in ("float32", "int32")]
    if not found:
        _rename(gen, r)
        found = [(v, k) for v, k in _symbolic(gen) if v.dt in ("float32", "int32")]
    if not found:
        return False
    a, k = r.choice(found)
    size = a.dims[k][1]
    other = r.choice([s for s in (1, 2, 3, 5, 7) if s != size])
    m = _fresh(gen, "m")
    b = gen.param(tuple((m, other) if j == k else d for j, d in enumerate(a.dims)), a.dt)
    op = r.choice(("add", "multiply", "maximum", "subtract"))
    first, second = (a, b) if r.random() < 0.5 else (b, a)  # the result has first's shape
    gen.emit(op, first.var, second.var, dims=first.dims, dt=a.dt, lo=-1.0, hi=1.0, exact=True)
    return True


def _misfit(gen: _Gen, r: random.Random) -> bool:
    found = _symbolic(gen)
    if not found:
        _rename(gen, r)
        found = _symbolic(gen)
    if not found:
        return False
    a, k = r.choice(found)
    d, size = a.dims[k]
    wrong = r.choice([s for s in (1, 2, 3, 5, 7) if s != size])
    _cast(gen, a, tuple((IntImm(wrong, d.dtype), wrong) if j == k else x
                        for j, x in enumerate(a.dims)))
    return True
