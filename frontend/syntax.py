"""The syntax tree of a `.tir` file: plain Python-like nodes with spans, built by the parser.

The builders read this tree, never Lark's; it is small, typed, and every node knows where it
came from. `Unsupported` stands for Python syntax that parses but that tirc does not accept
(comprehensions, `async`, ...), so the builder can report it at its place.
"""

from __future__ import annotations

from dataclasses import field

from tirc.ir.lean_dataclass import dataclass
from tirc.ir.span import Span

# ---- expressions --------------------------------------------------------------------------


@dataclass(eq=False)
class Expr:
    """Base of expressions."""

    span: Span


@dataclass(eq=False)
class Name(Expr):
    id: str


@dataclass(eq=False)
class Attribute(Expr):
    """`value.attr`; `attr_span` covers the attribute name."""

    value: Expr
    attr: str
    attr_span: Span


@dataclass(eq=False)
class Constant(Expr):
    """A literal: int, float, str, bool or None (`kind` tells which)."""

    value: object
    kind: str  # "int", "float", "str", "bool", "none"


@dataclass(eq=False)
class Keyword:
    name: str
    value: Expr
    span: Span


@dataclass(eq=False)
class Call(Expr):
    func: Expr
    args: list[Expr]
    keywords: list[Keyword]


@dataclass(eq=False)
class Slice(Expr):
    lower: Expr | None
    upper: Expr | None
    step: Expr | None


@dataclass(eq=False)
class Subscript(Expr):
    """`value[items]`; `A[()]` has no items, `A[i, j]` two."""

    value: Expr
    items: list[Expr]


@dataclass(eq=False)
class Tuple(Expr):
    elts: list[Expr]


@dataclass(eq=False)
class List(Expr):
    elts: list[Expr]


@dataclass(eq=False)
class Dict(Expr):
    keys: list[Expr]
    values: list[Expr]


@dataclass(eq=False)
class BinOp(Expr):
    """Arithmetic, bitwise or power operator; `op` is the operator text ("+", "//", "**")."""

    op: str
    left: Expr
    right: Expr


@dataclass(eq=False)
class UnaryOp(Expr):
    op: str  # "-", "+", "~", "not"
    operand: Expr


@dataclass(eq=False)
class BoolOp(Expr):
    op: str  # "and" or "or"
    values: list[Expr]


@dataclass(eq=False)
class Compare(Expr):
    """`left op0 c0 op1 c1 ...` (chained comparisons)."""

    left: Expr
    ops: list[str]
    comparators: list[Expr]


@dataclass(eq=False)
class Lambda(Expr):
    params: list[Name]
    body: Expr


@dataclass(eq=False)
class Starred(Expr):
    """`*value` as a call argument (`T.grid(*A.shape)`)."""

    value: Expr


@dataclass(eq=False)
class Unsupported(Expr):
    """Python syntax tirc does not support; `what` names it for the diagnostic."""

    what: str


# ---- statements ---------------------------------------------------------------------------


@dataclass(eq=False)
class Stmt:
    """Base of statements."""

    span: Span


@dataclass(eq=False)
class Param:
    name: str
    annotation: Expr | None
    default: Expr | None
    span: Span
    star: bool = False


@dataclass(eq=False)
class FunctionDef(Stmt):
    name: str
    name_span: Span
    params: list[Param]
    returns: Expr | None
    body: list[Stmt]
    decorators: list[Expr] = field(default_factory=list)
    is_async: bool = False


@dataclass(eq=False)
class ClassDef(Stmt):
    name: str
    name_span: Span
    bases: list[Expr]
    body: list[Stmt]
    decorators: list[Expr] = field(default_factory=list)


@dataclass(eq=False)
class Assign(Stmt):
    """`target = value` (a tuple target unpacks); `more_targets` holds chained `a = b = c`."""

    target: Expr
    value: Expr
    more_targets: list[Expr] = field(default_factory=list)


@dataclass(eq=False)
class AnnAssign(Stmt):
    target: Expr
    annotation: Expr
    value: Expr | None


@dataclass(eq=False)
class AugAssign(Stmt):
    target: Expr
    op: str  # the operator without "=", e.g. "+"
    value: Expr


@dataclass(eq=False)
class ExprStmt(Stmt):
    value: Expr


@dataclass(eq=False)
class For(Stmt):
    target: Expr
    iter: Expr
    body: list[Stmt]
    orelse: list[Stmt] | None = None
    is_async: bool = False


@dataclass(eq=False)
class While(Stmt):
    test: Expr
    body: list[Stmt]
    orelse: list[Stmt] | None = None


@dataclass(eq=False)
class If(Stmt):
    test: Expr
    body: list[Stmt]
    orelse: list[Stmt] | None = None


@dataclass(eq=False)
class WithItem:
    context: Expr
    target: Expr | None


@dataclass(eq=False)
class With(Stmt):
    items: list[WithItem]
    body: list[Stmt]
    is_async: bool = False


@dataclass(eq=False)
class Return(Stmt):
    value: Expr | None


@dataclass(eq=False)
class Pass(Stmt):
    pass


@dataclass(eq=False)
class LoopJump(Stmt):
    """`break` or `continue` (`kind`)."""

    kind: str


@dataclass(eq=False)
class Assert(Stmt):
    test: Expr
    msg: Expr | None


@dataclass(eq=False)
class ImportName:
    name: str
    asname: str | None
    span: Span


@dataclass(eq=False)
class ImportFrom(Stmt):
    """`from a.b import c as d`; `level` counts leading dots."""

    module: str
    module_span: Span
    names: list[ImportName]
    level: int = 0


@dataclass(eq=False)
class Import(Stmt):
    """`import a.b`: accepted only for `tvm`."""

    modules: list[str]


@dataclass(eq=False)
class UnsupportedStmt(Stmt):
    what: str


def dotted(e: Expr) -> str | None:
    """`T.axis.remap` for an attribute chain on a name, else None."""
    parts: list[str] = []
    while isinstance(e, Attribute):
        parts.append(e.attr)
        e = e.value
    if not isinstance(e, Name):
        return None
    parts.append(e.id)
    return ".".join(reversed(parts))


def call_name(e: Expr) -> str | None:
    """The dotted name of a call's function (`T.grid` for `T.grid(4, 4)`), else None."""
    if isinstance(e, Call):
        return dotted(e.func)
    return None


def declared_sizes(target: Expr, value: Expr) -> list[tuple[Name, Call]] | None:
    """`m, n = T.int64(), T.int64()` (TVM's printed form of several symbolic sizes) as one
    (name, declaration) pair per size; None for any other assignment."""
    if not (isinstance(target, Tuple) and isinstance(value, Tuple)) or \
            len(target.elts) != len(value.elts):
        return None
    pairs = []
    for t, v in zip(target.elts, value.elts):
        name = call_name(v)
        if not isinstance(t, Name) or name is None or not name.startswith("T.") or \
                not isinstance(v, Call) or not is_size_declaration(v):
            return None
        pairs.append((t, v))
    return pairs


def is_size_declaration(call: Call) -> bool:
    """`T.int64()` or TVM's `T.int64(is_size_var=True)` (a size, never negative; PyTorch's
    exporter declares its dynamic dimensions so): no arguments but that literal flag."""
    return not call.args and all(k.name == "is_size_var" and isinstance(k.value, Constant)
                                 and k.value.kind == "bool" for k in call.keywords)


def is_literal(e: Expr) -> bool:
    """A plain number or bool literal, possibly negated: its dtype adapts to its use."""
    while isinstance(e, UnaryOp) and e.op in ("-", "+"):
        e = e.operand
    return isinstance(e, Constant) and e.kind in ("int", "float", "bool")


def assigned_names(stmts: list[Stmt]) -> set[str]:
    """Every name an assignment, loop or `with ... as` binds anywhere in `stmts`."""
    out: set[str] = set()

    def targets(e: Expr | None) -> None:
        if isinstance(e, Name):
            out.add(e.id)
        elif isinstance(e, Tuple):
            for x in e.elts:
                targets(x)

    def walk(body: list[Stmt] | None) -> None:
        for s in body or ():
            if isinstance(s, Assign):
                targets(s.target)
                for t in s.more_targets:
                    targets(t)
            elif isinstance(s, AnnAssign):
                targets(s.target)
            elif isinstance(s, For):
                targets(s.target)
                walk(s.body)
                walk(s.orelse)
            elif isinstance(s, (While, If)):
                walk(s.body)
                walk(s.orelse)
            elif isinstance(s, With):
                for item in s.items:
                    targets(item.target)
                walk(s.body)

    walk(stmts)
    return out
