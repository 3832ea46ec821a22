"""The Analyzer: what is known about variables (loop ranges, lets, branch conditions).

Each variable has lists of inclusive lower and upper bounds, which may be symbolic
(`i` in a loop over `range(n)` has upper bound `n - 1`). Constant bounds come from interval
arithmetic; a comparison such as `i < n` is proved by substituting each variable's symbolic
bound into the linear form of the difference (`i - n <= (n - 1) - n = -1`).

Every answer depends only on the expression and on what is known, so the Analyzer memoises
answers per node identity for each state of its knowledge (a version number that changes with
every binding and returns to its old value when a scope or constraint ends). Large expressions
built as DAGs (the megakernel's event conditions) are then analysed once per node, not once per
path to it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import field

from tirc.ir.arith.bounds import UNBOUNDED, Bound, const_int_bound, intersect
from tirc.ir.arith.linear import Linear, from_linear, is_index_dtype, to_linear
from tirc.ir.buffer import Range
from tirc.ir.expr import BinOp, FloatImm, IntImm, Not, PrimExpr, StringImm, Var, binop
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.visitor import field_names

BoundLike = int | PrimExpr | None

_SUBSTITUTION_ROUNDS = 4
_MAX_FORMS = 24
_MAX_MEMO_ENTRIES = 400_000  # beyond this many memoised answers, the memo starts afresh

_versions = itertools.count(1)
# Constant expressions: no variable under them (answered without the memo).
_CONSTANTS = frozenset({IntImm, FloatImm, StringImm})
_NO_VARS: frozenset[Var] = frozenset()


@dataclass
class VarInfo:
    """Inclusive lower and upper bounds of one variable (every one of them holds)."""

    lo: list[PrimExpr] = field(default_factory=list)
    hi: list[PrimExpr] = field(default_factory=list)

    def copy(self) -> VarInfo:
        return VarInfo(list(self.lo), list(self.hi))


@dataclass
class _Memo:
    """Answers for one state of knowledge, keyed by node identity (the node is kept alive
    beside its answer, so an id is never mistaken for a later object's)."""

    simplified: dict[int, tuple[PrimExpr, PrimExpr]] = field(default_factory=dict)
    visited: dict[int, tuple[PrimExpr, PrimExpr]] = field(default_factory=dict)
    bounds: dict[frozenset[int], dict[int, tuple[PrimExpr, Bound]]] = field(default_factory=dict)
    var_bounds: dict[tuple[int, frozenset[int]], tuple[Var, Bound]] = field(default_factory=dict)
    linear: dict[tuple, tuple[Linear, Bound]] = field(default_factory=dict)
    var_deps: dict[Var, frozenset[Var]] = field(default_factory=dict)


class _AtomKey:
    """An atom compared structurally (as the atom itself), with its hash precomputed."""

    __slots__ = ("atom", "hash")

    def __init__(self, atom: PrimExpr, h: int) -> None:
        self.atom = atom
        self.hash = h

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _AtomKey) and (self.atom is other.atom or
                                                bool(self.atom == other.atom))


def _as_bound_expr(b: BoundLike, like: Var) -> PrimExpr | None:
    if b is None or isinstance(b, PrimExpr):
        return b
    return IntImm(int(b), like.dtype)


class Analyzer:
    """Variable bounds plus the simplifier and prover that use them.

    `bind(var, Range(min, extent))` records `min <= var <= min + extent - 1`;
    `bind(var, (lo, hi))` records inclusive bounds (None: unbounded);
    `bind(var, expr)` records `var == expr` (a let).
    """

    def __init__(self) -> None:
        self._vars: dict[Var, VarInfo] = {}
        self._busy: set[int] = set()
        self._version = next(_versions)
        self._memos: dict[int, _Memo] = {}
        self._memo_entries = 0
        self._sizes: dict[int, tuple[PrimExpr, int]] = {}
        self._forms: dict[int, tuple[PrimExpr, Linear]] = {}
        self._hashes: dict[int, tuple[PrimExpr, int]] = {}
        self._free: dict[int, tuple[PrimExpr, frozenset[Var]]] = {}
        # version -> (the version it was made from, the variables whose knowledge differs)
        self._parents: dict[int, tuple[int, frozenset[Var]]] = {}

    # ---- memoisation -----------------------------------------------------------------

    def _changed(self, changed: frozenset[Var] | None = None) -> None:
        """What is known changed: a new version, with nothing memoised yet. `changed` names
        the variables whose knowledge differs from the version before (None: unknown)."""
        new = next(_versions)
        if changed is not None:
            self._parents[new] = (self._version, changed)
        self._version = new

    def memo(self) -> _Memo:
        """The memoised answers for the current state of knowledge."""
        return self._memo_at(self._version)

    def _memo_at(self, version: int) -> _Memo:
        memo = self._memos.get(version)
        if memo is None:
            self._memo_entries += 1
            if self._memo_entries > _MAX_MEMO_ENTRIES:
                self.forget()
            memo = self._memos[version] = _Memo()
        return memo

    def memo_for(self, e: PrimExpr) -> _Memo:
        """The memoised answers about `e`: those of the oldest version from which only
        variables `e` does not depend on have changed (a loop variable bound since does not
        hide what was learnt about an expression without it)."""
        version = self._version
        link = self._parents.get(version)
        if link is None or not link[1].isdisjoint(self._free_vars(e)):
            return self._memo_at(version)
        deps = self._deps(e)
        while link is not None and link[1].isdisjoint(deps):
            version = link[0]
            link = self._parents.get(version)
        return self._memo_at(version)

    def _deps(self, e: PrimExpr) -> frozenset[Var]:
        """The variables whose knowledge can affect an answer about `e`: its own and, through
        their bounds, the variables those mention."""
        free = self._free_vars(e)
        if not free:
            return free
        per_var = self.memo().var_deps
        out: frozenset[Var] | None = None
        for v in free:
            d = per_var.get(v)
            if d is None:
                d = per_var[v] = self._var_deps(v)
            out = d if out is None else (out if d <= out else out | d)
        assert out is not None
        return out

    def _var_deps(self, var: Var) -> frozenset[Var]:
        """`var` and the variables its bounds mention, transitively."""
        out = {var}
        todo = [var]
        while todo:
            info = self._vars.get(todo.pop())
            if info is None:
                continue
            for b in (*info.lo, *info.hi):
                for w in self._free_vars(b):
                    if w not in out:
                        out.add(w)
                        todo.append(w)
        return frozenset(out)

    def _free_vars(self, e: PrimExpr) -> frozenset[Var]:
        """Every variable under `e` (a load's buffer not included: only its indices are
        analysed), memoised per node."""
        if isinstance(e, Var):
            return frozenset((e,))
        if type(e) in _CONSTANTS:
            return _NO_VARS
        hit = self._free.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        found: frozenset[Var] = frozenset()
        names = field_names(type(e))
        for name in names if names is not None else [n for n, _ in e.node_fields()]:
            value = getattr(e, name)
            items = value if isinstance(value, tuple) else (value,)
            for item in items:
                if isinstance(item, PrimExpr):
                    inner = self._free_vars(item)
                    if inner and not inner <= found:
                        found = found | inner
        self._free[id(e)] = (e, found)
        return found

    def count_memo_entry(self) -> None:
        """Account for one more memoised answer (the memo is dropped when it grows too big)."""
        self._memo_entries += 1
        if self._memo_entries > _MAX_MEMO_ENTRIES:
            self.forget()

    def forget(self) -> None:
        """Drop every memoised answer."""
        self._memos = {}
        self._memo_entries = 0
        self._sizes = {}
        self._forms = {}
        self._hashes = {}
        self._free = {}

    def expr_size(self, e: PrimExpr) -> int:
        """`expr_size(e)`, memoised per node (sizes do not depend on what is known)."""
        from tirc.ir.arith.rewrite import expr_size

        return expr_size(e, self._sizes)

    def to_linear(self, e: PrimExpr) -> Linear:
        """`to_linear(e)` (a fresh copy), memoised per node (forms do not depend on what is
        known)."""
        return to_linear(e, self._forms)

    def _atom_key(self, atom: PrimExpr) -> _AtomKey:
        """`atom` for a set of structurally compared atoms, its hash computed once per node."""
        hit = self._hashes.get(id(atom))
        if hit is None or hit[0] is not atom:
            hit = self._hashes[id(atom)] = (atom, hash(atom))
        return _AtomKey(atom, hit[1])

    # ---- what is known ---------------------------------------------------------------

    def bind(self, var: Var, value: Range | tuple[BoundLike, BoundLike] | PrimExpr | int) -> None:
        """Record the range or value of `var`, replacing what was known about it."""
        if isinstance(value, Range):
            last = binop("sub", binop("add", value.min, value.extent), 1)
            lo: PrimExpr | None = self.simplify(value.min)
            hi: PrimExpr | None = self.simplify(last)
        elif isinstance(value, tuple):
            lo = _as_bound_expr(value[0], var)
            hi = _as_bound_expr(value[1], var)
        else:
            lo = hi = _as_bound_expr(value, var)
        self._vars[var] = VarInfo([lo] if lo is not None else [], [hi] if hi is not None else [])
        self._changed(frozenset((var,)))

    def unbind(self, var: Var) -> None:
        if self._vars.pop(var, None) is not None:
            self._changed(frozenset((var,)))

    def is_bound(self, var: Var) -> bool:
        return var in self._vars

    @contextmanager
    def scope(self) -> Iterator[None]:
        """Bindings made inside the `with` are forgotten at its end."""
        saved = {v: info.copy() for v, info in self._vars.items()}
        version = self._version
        try:
            yield
        finally:
            self._vars = saved
            self._version = version

    @contextmanager
    def constraint(self, cond: PrimExpr) -> Iterator[None]:
        """Assume `cond` inside the `with` (a branch condition): `i < n - 4` bounds `i`."""
        saved: dict[Var, VarInfo | None] = {}
        for var, is_upper, bound in self._facts(cond):
            if var not in saved:
                saved[var] = self._vars[var].copy() if var in self._vars else None
            info = self._vars.setdefault(var, VarInfo())
            (info.hi if is_upper else info.lo).append(bound)
        version = self._version
        if saved:
            self._changed(frozenset(saved))
        inside = self._version
        try:
            yield
        finally:
            for var, info in saved.items():
                if info is None:
                    self._vars.pop(var, None)
                else:
                    self._vars[var] = info
            # Back to the old knowledge only when nothing else was bound meanwhile.
            if self._version == inside:
                self._version = version
            else:
                self._changed()

    def _facts(self, cond: PrimExpr) -> Iterator[tuple[Var, bool, PrimExpr]]:
        """Bounds on single variables implied by a condition (conjunctions of comparisons)."""
        if isinstance(cond, BinOp) and cond.op == "and":
            yield from self._facts(cond.a)
            yield from self._facts(cond.b)
            return
        if isinstance(cond, Not) and isinstance(cond.a, BinOp) and cond.a.op in _NEGATE:
            a = cond.a
            cond = BinOp(_NEGATE[a.op], a.a, a.b, a.dtype)
        if not (isinstance(cond, BinOp) and cond.op in _NEGATE
                and is_index_dtype(cond.a.dtype) and cond.a.dtype == cond.b.dtype):
            return
        diff = self.to_linear(cond.a)
        diff.add(self.to_linear(cond.b), -1)
        # Every fact is written as `m <= 0`.
        forms: list[Linear] = []
        if cond.op == "lt":
            forms.append(_plus(diff, 1))
        elif cond.op == "le":
            forms.append(diff)
        elif cond.op == "gt":
            forms.append(_plus(diff.scaled(-1), 1))
        elif cond.op == "ge":
            forms.append(diff.scaled(-1))
        elif cond.op == "eq":
            forms += [diff, diff.scaled(-1)]
        for m in forms:
            for atom, coef in m.terms.items():
                if isinstance(atom, Var) and coef in (1, -1):
                    rest = m.copy()
                    rest.add_term(atom, -coef)
                    if coef == 1:  # atom + rest <= 0  ->  atom <= -rest
                        yield atom, True, from_linear(rest.scaled(-1))
                    else:  # rest - atom <= 0  ->  atom >= rest
                        yield atom, False, from_linear(rest)

    # ---- bounds ----------------------------------------------------------------------

    def var_bound(self, var: Var) -> Bound:
        """Constant bounds of a variable from all of its (possibly symbolic) bounds."""
        info = self._vars.get(var)
        if info is None or id(var) in self._busy:
            return UNBOUNDED
        memo = self.memo().var_bounds
        key = (id(var), frozenset(self._busy))
        hit = memo.get(key)
        if hit is not None and hit[0] is var:
            return hit[1]
        bound = self._var_bound(var, info)
        memo[key] = (var, bound)
        self.count_memo_entry()
        return bound

    def _var_bound(self, var: Var, info: VarInfo) -> Bound:
        self._busy.add(id(var))
        try:
            lo: int | None = None
            hi: int | None = None
            for b in info.lo:
                v = self.const_int_bound(b)[0]
                if v is not None:
                    lo = v if lo is None else max(lo, v)
            for b in info.hi:
                v = self.const_int_bound(b)[1]
                if v is not None:
                    hi = v if hi is None else min(hi, v)
            return (lo, hi)
        finally:
            self._busy.discard(id(var))

    def const_int_bound(self, e: PrimExpr) -> Bound:
        """Inclusive constant bounds `(lo, hi)` of an integer expression; None: unbounded."""
        per_busy = self.memo().bounds
        busy = frozenset(self._busy)
        memo = per_busy.get(busy)
        if memo is None:
            memo = per_busy[busy] = {}
        before = len(memo)
        out = const_int_bound(e, self.var_bound, memo)
        self._memo_entries += len(memo) - before
        if self._memo_entries > _MAX_MEMO_ENTRIES:
            self.forget()
        return out

    def linear_bound(self, lin: Linear) -> Bound:
        """Bounds of a linear form, using symbolic variable bounds where they cancel."""
        if self._busy:
            return (self._side(lin, upper=False), self._side(lin, upper=True))
        memo = self.memo().linear
        key = (lin.dtype, lin.const, *[(id(a), c) for a, c in lin.terms.items()])
        hit = memo.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0].terms, lin.terms)):
            return hit[1]
        out = (self._side(lin, upper=False), self._side(lin, upper=True))
        memo[key] = (lin.copy(), out)
        self.count_memo_entry()
        return out

    def bound_of(self, e: PrimExpr) -> Bound:
        """Like const_int_bound, but proves through symbolic bounds (`i - n` <= -1)."""
        if not is_index_dtype(e.dtype):
            return self.const_int_bound(e)
        return intersect(self.linear_bound(self.to_linear(e)), self.const_int_bound(e))

    def _side(self, lin: Linear, upper: bool) -> int | None:
        """The best constant bound over `lin` and forms with variables replaced by their
        symbolic bounds, one variable at a time (a small breadth-first search)."""
        best: int | None = None
        frontier = [lin]
        seen: set[frozenset] = set()
        for _ in range(_SUBSTITUTION_ROUNDS + 1):
            following: list[Linear] = []
            for form in frontier:
                key = frozenset((self._atom_key(a), c) for a, c in form.terms.items()) \
                    | {("const", form.const)}
                if key in seen or len(seen) >= _MAX_FORMS:
                    continue
                seen.add(key)
                value = self._const_side(form, upper)
                if value is not None:
                    best = value if best is None else (min(best, value) if upper
                                                       else max(best, value))
                following.extend(self._substitutions(form, upper))
            frontier = following
        return best

    def _substitutions(self, form: Linear, upper: bool) -> list[Linear]:
        """`form` with one variable replaced by one of its symbolic bounds on the wanted side."""
        out = []
        for atom, coef in form.terms.items():
            info = self._vars.get(atom) if isinstance(atom, Var) else None
            if info is None:
                continue
            for cand in info.hi if (coef > 0) == upper else info.lo:
                if isinstance(cand, IntImm) or cand.dtype != form.dtype:
                    continue
                new = form.copy()
                new.add_term(atom, -coef)
                new.add(self.to_linear(cand), coef)
                out.append(new)
        return out

    def _const_side(self, lin: Linear, upper: bool) -> int | None:
        total = lin.const
        for atom, coef in lin.terms.items():
            lo, hi = self.const_int_bound(atom)
            b = (hi if coef > 0 else lo) if upper else (lo if coef > 0 else hi)
            if b is None:
                return None
            total += coef * b
        return total

    # ---- simplification and proofs ---------------------------------------------------

    def simplify(self, e: PrimExpr) -> PrimExpr:
        """An equivalent expression, never structurally larger than `e`."""
        from tirc.ir.arith.rewrite import Rewriter

        memo = self.memo_for(e).simplified
        hit = memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        out = Rewriter(self).simplify(e)
        memo[id(e)] = (e, out)
        self.count_memo_entry()
        return out

    def can_prove(self, cond: PrimExpr) -> bool:
        """True when `cond` holds for every value of the variables within their bounds."""
        result = self.simplify(cond)
        return isinstance(result, IntImm) and result.value != 0

    def can_prove_equal(self, a: PrimExpr, b: PrimExpr) -> bool:
        return self.can_prove(binop("eq", a, b))


_NEGATE = {"lt": "ge", "ge": "lt", "le": "gt", "gt": "le", "eq": "ne", "ne": "eq"}


def _plus(lin: Linear, k: int) -> Linear:
    out = lin.copy()
    out.const += k
    return out

