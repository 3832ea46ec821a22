"""`@S.schedule("func", target="llvm") def name(sch): ...`: straight-line primitive calls."""

from __future__ import annotations

from typing import Any

from tirc.frontend import syntax as S
from tirc.frontend.builder_expr import ExprBuilder, literal_value
from tirc.frontend.context import TOO_DEEP, BuildError, Context
from tirc.frontend.scope import Scope
from tirc.frontend.signature import Sig, check_call
from tirc.ir.diagnostics import did_you_mean
from tirc.ir.expr import Var
from tirc.ir.schedule import SchedInstr, SchedLambda, SchedRef, Schedule

SHAPE_HINT = "a schedule is a list of primitive calls such as `b = sch.get_block(\"C\")`"


class ScheduleBuilder:
    """Builds one schedule; each instruction's errors are reported, then the next is read."""

    def __init__(self, ctx: Context, fn: S.FunctionDef, deco: S.Expr) -> None:
        self.ctx = ctx
        self.fn = fn
        self.deco = deco
        self.defined: set[str] = set()
        self.param = "sch"

    def build(self) -> Schedule:
        ctx, fn = self.ctx, self.fn
        if not isinstance(self.deco, S.Call):
            ctx.error("@S.schedule needs the function it applies to: "
                      "@S.schedule(\"main\", target=\"llvm\")", self.deco.span)
        a = check_call(ctx, self.deco, "S.schedule", Sig(1, 1, ("target",)))
        eb = ExprBuilder(ctx, Scope(ctx))
        func_name = eb.str_literal(a.pos[0], "the scheduled function's name")
        target = None
        if "target" in a.kw and literal_value(a.kw["target"]) is not None:
            target = eb.str_literal(a.kw["target"], "the target")
        if len(fn.params) != 1 or fn.params[0].star or fn.params[0].default is not None:
            ctx.error("a schedule takes one parameter, the schedule: def f(sch):", fn.span)
        self.param = fn.params[0].name
        instrs = []
        for s in fn.body:
            try:
                ins = self.instr(s)
            except BuildError:
                self.poison(s)
                continue
            except RecursionError:
                self.ctx.report(TOO_DEEP, s.span)
                continue
            if ins is not None:
                instrs.append(ins)
        return Schedule(func_name, target, fn.name, self.param, tuple(instrs), span=fn.span)

    def poison(self, s: S.Stmt) -> None:
        target = getattr(s, "target", None)
        for t in target.elts if isinstance(target, S.Tuple) else [target]:
            if isinstance(t, S.Name):
                self.defined.add(t.id)

    def instr(self, s: S.Stmt) -> SchedInstr | None:
        if isinstance(s, S.Pass) or (isinstance(s, S.ExprStmt) and isinstance(s.value, S.Constant)
                                     and s.value.kind == "str"):
            return None
        outputs: tuple[str, ...] = ()
        unpack = False
        if isinstance(s, S.ExprStmt):
            call = s.value
        elif isinstance(s, S.Assign) and not s.more_targets:
            call = s.value
            if isinstance(s.target, S.Name):
                outputs = (s.target.id,)
            elif isinstance(s.target, S.Tuple) and all(isinstance(e, S.Name)
                                                       for e in s.target.elts):
                outputs = tuple(e.id for e in s.target.elts)  # type: ignore[attr-defined]
                unpack = True
            else:
                self.ctx.error(SHAPE_HINT, s.target.span)
        else:
            self.ctx.error(SHAPE_HINT, s.span)
        if not (isinstance(call, S.Call) and isinstance(call.func, S.Attribute)
                and isinstance(call.func.value, S.Name) and call.func.value.id == self.param):
            self.ctx.error(f"expected a primitive call on '{self.param}', such as "
                           f"{self.param}.split(...)", call.span)
        args = tuple(self.arg(a) for a in call.args)
        kwargs = {k.name: self.arg(k.value) for k in call.keywords}
        self.defined.update(outputs)
        return SchedInstr(outputs, call.func.attr, args, kwargs, unpack, span=s.span)

    def arg(self, node: S.Expr) -> Any:
        if isinstance(node, S.Name):
            if node.id not in self.defined:
                self.ctx.error(f"unknown name '{node.id}'{did_you_mean(node.id, self.defined)}",
                               node.span)
            return SchedRef(node.id, span=node.span)
        if isinstance(node, S.Constant):
            return node.value
        value = literal_value(node)
        if value is not None:
            return value
        if isinstance(node, S.Tuple):
            return tuple(self.arg(e) for e in node.elts)
        if isinstance(node, S.List):
            return [self.arg(e) for e in node.elts]
        if isinstance(node, S.Dict):
            return {self.key(k): self.arg(v) for k, v in zip(node.keys, node.values)}
        if isinstance(node, S.Lambda):
            return self.index_map(node)
        if isinstance(node, S.Unsupported):
            self.ctx.unsupported(node.what, node.span)
        if S.call_name(node) is not None and (S.call_name(node) or "").startswith("T."):
            return ExprBuilder(self.ctx, Scope(self.ctx)).expr(node)
        self.ctx.error("a schedule argument is a name, a literal, a list, a tuple or a "
                       "lambda", node.span)

    def key(self, node: S.Expr) -> str:
        if not (isinstance(node, S.Constant) and node.kind == "str"):
            self.ctx.error("a dictionary key must be a string", node.span)
        return str(node.value)

    def index_map(self, node: S.Lambda) -> SchedLambda:
        """`lambda i, j: (i // 16, j, i % 16)`: parameters are int32 index variables."""
        scope = Scope(self.ctx)
        params = []
        for p in node.params:
            v = Var(p.id, span=p.span)
            scope.define(p.id, v, p.span)
            params.append(v)
        eb = ExprBuilder(self.ctx, scope)
        items = node.body.elts if isinstance(node.body, (S.Tuple, S.List)) else [node.body]
        return SchedLambda(tuple(params), tuple(eb.expr(e) for e in items), span=node.span)


def build_schedule(ctx: Context, fn: S.FunctionDef, deco: S.Expr) -> Schedule:
    """The Schedule of `@S.schedule(...) def ...` (errors are reported into `ctx`)."""
    return ScheduleBuilder(ctx, fn, deco).build()
