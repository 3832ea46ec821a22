"""`@R.function def main(...)`: graph-level functions (parameters with struct info, bindings,
dataflow blocks, operator calls, cross-level calls)."""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.frontend import syntax as S
from tirc.frontend.builder_expr import ExprBuilder, literal_value
from tirc.frontend.builder_sinfo import TYPE_NAMES, SInfoBuilder
from tirc.frontend.context import TOO_DEEP, BuildError, Context
from tirc.frontend.graph_calls import SPECIAL_CALLS
from tirc.frontend.graph_local import LocalFunction, lift_local, local_call
from tirc.frontend.graph_memory import (
    MemoryState,
    is_memory_stmt,
    memory_binding,
    storage_value_error,
)
from tirc.frontend.graph_ops import OP_SIGNATURES
from tirc.frontend.scope import POISON, Scope
from tirc.frontend.signature import Sig, check_call
from tirc.ir.dtype import DType, DTypeError
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.graph import (
    Binding,
    BindingBlock,
    Constant,
    Function,
    GCall,
    GlobalVar,
    GraphExpr,
    GVar,
    If,
    MatchCast,
    PrimSInfo,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringValue,
    StructInfo,
    Tuple,
    TupleGetItem,
    VarBinding,
)
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.ops.registry import get_op
from tirc.ir.schedule import SchedLambda

GRAPH_OPERATORS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide",
                   "//": "floor_divide", "**": "power"}
GRAPH_COMPARE = {"==": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal",
                 ">": "greater", ">=": "greater_equal"}


@dataclass
class ModuleNames:
    """What a graph function may refer to: the module's name and its functions."""

    class_name: str
    functions: set[str]
    graph: set[str] = dataclasses.field(default_factory=set)  # the graph functions among them
    # Call signatures of the loop functions, for direct calls (tirc.frontend.prim_calls).
    prim_sigs: dict[str, Any] = dataclasses.field(default_factory=dict)
    # The local functions lifted so far, by their module names (tirc.frontend.graph_local).
    lifted: dict[str, Function] = dataclasses.field(default_factory=dict)


class GraphBuilder:
    """Builds one graph function; errors are reported into the context."""

    def __init__(self, ctx: Context, fn: S.FunctionDef, module: ModuleNames) -> None:
        self.ctx = ctx
        self.fn = fn
        self.module = module
        self.scope = Scope(ctx, S.assigned_names(fn.body))
        self.eb = ExprBuilder(ctx, self.scope)
        self.sb = SInfoBuilder(self.eb)
        self.attrs: dict[str, Any] = {}
        self.module_aliases: set[str] = set()
        self.dataflow_locals: set[str] = set()  # bound in a dataflow block, not output
        self.branch_locals: set[str] = set()  # bound inside a branch of an 'if'
        self.captures: dict[GVar, GVar] = {}  # a lifted local function's: outer -> parameter
        self.qualified_name = fn.name  # its name in the module (a lifted function's differs)
        self.mem = MemoryState()  # TVM's memory-planned forms (tirc.frontend.graph_memory)

    def module_names(self) -> set[str]:
        """Names that denote this module: `Module.f`, `cls.f`, or an alias `cls = Module`."""
        return {"cls", "Module", self.module.class_name} | self.module_aliases

    def build(self) -> Function:
        fn = self.fn
        params = []
        for p in fn.params:
            try:
                params.append(self.param(p))
            except BuildError:
                self.scope.poison(p.name)
        ret_sinfo = None
        if fn.returns is not None:
            try:
                ret_sinfo = self.sb.sinfo(fn.returns)
            except BuildError:
                pass
        blocks, ret = self.body(fn.body)
        body = SeqExpr(tuple(blocks), ret, span=fn.span)
        return Function(fn.name, tuple(params), body, ret_sinfo, self.attrs, span=fn.span)

    def param(self, p: S.Param) -> GVar:
        if p.star:
            self.ctx.unsupported("'*' parameters", p.span)
        if p.default is not None:
            self.ctx.unsupported("default parameter values", p.default.span)
        sinfo = self.sb.sinfo(p.annotation) if p.annotation is not None else None
        var = GVar(p.name, sinfo, False, span=p.span)
        self.scope.define(p.name, var, p.span)
        return var

    # ---- statements -----------------------------------------------------------------------

    def body(self, stmts: list[S.Stmt]) -> tuple[list[BindingBlock], GraphExpr]:
        blocks: list[BindingBlock] = []
        current: list[Binding] = []
        ret: GraphExpr | None = None
        returned = False
        for s in stmts:
            if returned:
                self.ctx.report("statement after 'return'", s.span)
                break
            try:
                if isinstance(s, S.Return):
                    returned = True
                    if s.value is None:
                        self.ctx.error("a graph function returns a value", s.span)
                    ret = self.gexpr(s.value)
                elif isinstance(s, S.With):
                    block = self.dataflow(s)
                    if current:
                        blocks.append(BindingBlock(tuple(current), False, span=current[0].span))
                        current = []
                    blocks.append(block)
                else:
                    binding = self.stmt(s, dataflow=None)
                    if isinstance(binding, list):
                        current.extend(binding)
                    elif binding is not None:
                        current.append(binding)
            except BuildError:
                self.poison(s)
            except RecursionError:
                self.ctx.report(TOO_DEEP, s.span)
                self.poison(s)
        if current:
            blocks.append(BindingBlock(tuple(current), False, span=current[0].span))
        if not returned:
            self.ctx.report(f"graph function '{self.fn.name}' must end with 'return'",
                            self.fn.name_span)
        if ret is None:
            raise BuildError("no return value")
        return blocks, ret

    def poison(self, s: S.Stmt) -> None:
        target = getattr(s, "target", None)
        if isinstance(target, S.Name):
            self.scope.poison(target.id)
        if isinstance(s, S.If):
            for name in S.assigned_names([s]):
                self.scope.poison(name)

    def stmt(self, s: S.Stmt, dataflow: set[str] | None) -> Binding | list[Binding] | None:
        """One statement; `dataflow` holds the output names when inside `R.dataflow()`."""
        if isinstance(s, S.Pass):
            return None
        if isinstance(s, S.FunctionDef):
            lift_local(self, s, dataflow is not None)
            return None
        value = getattr(s, "value", None)
        if S.call_name(value) == "R.print" and dataflow is not None:
            self.ctx.error("R.print has a side effect: it cannot be inside R.dataflow() (put it "
                           "before or after the block)", value.span)  # type: ignore[union-attr]
        if isinstance(s, S.ExprStmt) and S.call_name(s.value) == "R.print":
            var = GVar("_", None, False, span=s.span)  # TVM binds the empty result to `_`
            self.scope.rebind("_", var, s.span)
            return VarBinding(var, self.gexpr(s.value), span=s.span)
        if isinstance(s, S.ExprStmt):
            v = s.value
            if isinstance(v, S.Constant) and v.kind == "str":
                return None
            name = S.call_name(v)
            if name == "R.func_attr" and dataflow is None:
                assert isinstance(v, S.Call)
                a = check_call(self.ctx, v, name, Sig(1, 1))
                self.attrs.update(self.eb.attr_dict(a.pos[0]))
                return None
            if name == "R.output":
                self.ctx.error("R.output must be the last statement of a dataflow block",
                               v.span)
            if is_memory_stmt(self, v):
                assert isinstance(v, S.Call)
                memory = memory_binding(self, "_", v, name or "", s.span)
                if memory is not None:
                    return memory
                self.gexpr(v)  # a loop function writing no allocation: call_tir's error
            self.ctx.unsupported("an expression statement in a graph function (bind it to "
                                 "a name)", s.span)
        if isinstance(s, (S.Assign, S.AnnAssign)):
            return self.binding(s, dataflow)
        if isinstance(s, S.If) and dataflow is None:
            return self.if_binding(s)
        if isinstance(s, S.If):
            self.ctx.error("'if' inside R.dataflow() (a dataflow block has no control flow; "
                           "put the 'if' after the block)", s.span)
        if isinstance(s, S.UnsupportedStmt):
            self.ctx.unsupported(s.what, s.span)
        what = {S.For: "loops", S.While: "loops", S.With: "nested 'with'",
                S.LoopJump: "'break' and 'continue'"}.get(
            type(s), f"{type(s).__name__} statements")
        self.ctx.unsupported(f"{what} in a graph function", s.span)

    def binding(self, s: S.Assign | S.AnnAssign, dataflow: set[str] | None
                ) -> Binding | list[Binding] | None:
        if isinstance(s, S.Assign) and s.more_targets:
            self.ctx.unsupported("chained assignment", s.span)
        t = s.target
        if isinstance(t, S.Tuple) and isinstance(s, S.Assign):
            sizes = S.declared_sizes(t, s.value)
            if sizes is not None:  # `m, n = T.int64(), T.int64()`, as TVM prints sizes
                for name, call in sizes:
                    self.symbolic(name, call, S.call_name(call) or "")
                return []
            return self.unpack(t, s, dataflow)
        if not isinstance(t, S.Name):
            self.ctx.error("a binding assigns to a name", t.span)
        if s.value is None:
            self.ctx.unsupported("a declaration without a value", s.span)
        if isinstance(s.value, S.Name) and s.value.id in self.module_names() and \
                self.scope.lookup(s.value.id) is None:
            self.module_aliases.add(t.id)  # `cls = Module`, as TVM prints it
            return None
        name = S.call_name(s.value)
        call = s.value
        if name is not None and name.startswith("T.") and isinstance(call, S.Call) \
                and S.is_size_declaration(call):
            self.symbolic(t, call, name)
            return None
        if name == "T.Var" and isinstance(call, S.Call):
            self.symbolic(t, call, "T." + self.var_dtype(call))
            return None
        annotation = self.sb.sinfo(s.annotation) if isinstance(s, S.AnnAssign) else None
        is_df = dataflow is not None and t.id not in dataflow
        if name == "R.match_cast":
            assert isinstance(call, S.Call)
            a = check_call(self.ctx, call, name, Sig(2, 2))
            value = self.gexpr(a.pos[0])
            sinfo = self.sb.sinfo(a.pos[1])
            var = GVar(t.id, sinfo, is_df, span=t.span)
            self.scope.rebind(t.id, var, t.span)
            self.mem.note_binding(var, value, t.id)
            return MatchCast(var, value, sinfo, span=s.span)
        if isinstance(call, S.Call):
            memory = memory_binding(self, t.id, call, name or "", s.span)
            if memory is not None:
                return memory
        value = self.gexpr(s.value)
        var = GVar(t.id, annotation, is_df, span=t.span)
        self.scope.rebind(t.id, var, t.span)
        self.mem.note_binding(var, value, t.id)
        return VarBinding(var, value, span=s.span)

    def if_binding(self, s: S.If) -> VarBinding:
        """`if c: ... y = a else: ... y = b`: `y` bound to an If of the two branches (as
        Relax binds it); each branch ends by assigning the if's result."""
        cond = self.gexpr(s.test)
        if not s.orelse:
            self.ctx.error("'if' in a graph function needs an 'else' branch: the 'if' is a "
                           "value, which both branches assign", s.span)
        assert s.orelse is not None
        true_branch, t_var = self.branch(s.body)
        false_branch, f_var = self.branch(s.orelse)
        if t_var.name != f_var.name:
            self.ctx.error(f"the branches of 'if' assign different results: '{t_var.name}' "
                           f"in the 'if' branch, '{f_var.name}' in the 'else' branch (both "
                           "must end by assigning the same variable)", s.orelse[-1].span)
        sinfo = t_var.struct_info or f_var.struct_info
        var = GVar(t_var.name, sinfo, False, span=s.span)
        self.scope.define(var.name, var, s.span)
        return VarBinding(var, If(cond, true_branch, false_branch, span=s.span), span=s.span)

    def branch(self, stmts: list[S.Stmt]) -> tuple[SeqExpr, GVar]:
        """One branch of an `if`: its bindings (local to it) and the variable its last
        statement assigns, the branch's result."""
        blocks: list[BindingBlock] = []
        current: list[Binding] = []
        failed = False
        result: GVar | None = None
        with self.scope.frame():
            for st in stmts:
                result = None
                try:
                    if isinstance(st, S.With):
                        if current:
                            blocks.append(BindingBlock(tuple(current), False,
                                                       span=current[0].span))
                            current = []
                        blocks.append(self.dataflow(st))
                        continue
                    b = self.stmt(st, dataflow=None)
                except BuildError:
                    self.poison(st)
                    failed = True
                    continue
                except RecursionError:
                    self.ctx.report(TOO_DEEP, st.span)
                    self.poison(st)
                    failed = True
                    continue
                if isinstance(b, list):
                    current.extend(b)
                elif b is not None:
                    current.append(b)
                target = getattr(st, "target", None)
                if isinstance(b, VarBinding) and (isinstance(st, S.If) or isinstance(
                        target, S.Name) and target.id == b.var.name):
                    result = b.var
            self.branch_locals.update(n for n, v in self.scope.frames[-1].items()
                                      if isinstance(v, GVar))
        if failed:
            raise BuildError("a statement of the branch failed")
        if result is None:
            self.ctx.error("each branch of an 'if' in a graph function must end by assigning "
                           "the if's result (`y = ...`)", stmts[-1].span)
        if current:
            blocks.append(BindingBlock(tuple(current), False, span=current[0].span))
        return SeqExpr(tuple(blocks), result, span=stmts[0].span), result

    def unpack(self, t: S.Tuple, s: S.Assign, dataflow: set[str] | None) -> list[Binding]:
        """`a, b = value`: the tuple bound to a name, then each field (as TVM binds it)."""
        names = []
        for e in t.elts:
            if not isinstance(e, S.Name):
                self.ctx.error("tuple unpacking assigns to names", e.span)
            names.append(e.id)
        value = self.gexpr(s.value)
        in_df = dataflow is not None
        tmp = GVar("_".join(names) + "_tuple", None, in_df, span=t.span)
        out: list[Binding] = [VarBinding(tmp, value, span=s.span)]
        for i, e in enumerate(t.elts):
            assert isinstance(e, S.Name)
            var = GVar(e.id, None, in_df and e.id not in dataflow, span=e.span)  # type: ignore
            self.scope.define(e.id, var, e.span)
            out.append(VarBinding(var, TupleGetItem(tmp, i, span=e.span), span=s.span))
        return out

    def var_dtype(self, call: S.Call) -> str:
        """The dtype of `a = T.Var("a", "int64")` (TVM's other spelling of `a = T.int64()`)."""
        kw = {k.name: k.value for k in call.keywords}
        if set(kw) - {"name", "dtype"} or len(call.args) + len(kw) != 2:
            self.ctx.error('T.Var takes a name and a dtype: T.Var("n", "int64")', call.span)
        args = [*call.args, *(kw[k] for k in ("name", "dtype") if k in kw)]
        self.eb.str_literal(args[0], "the name of T.Var")
        return self.eb.str_literal(args[1], "the dtype of T.Var")

    def symbolic(self, t: S.Name, call: S.Call, name: str) -> None:
        """`n = T.int64()`: a symbolic size (the same variable as a `"n"` in a signature)."""
        try:
            dt = DType.parse(name[2:])
        except DTypeError:
            self.ctx.unsupported(name, call.func.span)
        if not dt.is_int:
            self.ctx.error(f"a symbolic size must be an integer, not {dt}", call.span)
        old = self.scope.lookup(t.id)
        if isinstance(old, Var) and old.dtype == dt:
            return
        self.scope.define(t.id, Var(t.id, dt, span=t.span), t.span)

    def dataflow(self, s: S.With) -> BindingBlock:
        call = s.items[0].context
        if len(s.items) != 1 or S.call_name(call) != "R.dataflow":
            self.ctx.unsupported("'with' in a graph function other than R.dataflow()", s.span)
        assert isinstance(call, S.Call)
        check_call(self.ctx, call, "R.dataflow", Sig(0, 0))
        if s.items[0].target is not None:
            self.ctx.unsupported("'with R.dataflow() as'", s.items[0].target.span)
        stmts = list(s.body)
        out_call = stmts[-1].value if stmts and isinstance(stmts[-1], S.ExprStmt) else None
        has_output = S.call_name(out_call) == "R.output" if out_call is not None else False
        if has_output:
            stmts.pop()
            assert isinstance(out_call, S.Call)
            check_call(self.ctx, out_call, "R.output", Sig(0, None))
        names = [a.id for a in out_call.args if isinstance(a, S.Name)] if has_output else []
        bindings: list[Binding] = []
        outputs: list[GVar] = []
        failed: list[str] = []
        with self.scope.frame():
            for st in stmts:
                try:
                    b = self.stmt(st, dataflow=set(names))
                    if isinstance(b, list):
                        bindings.extend(b)
                    elif b is not None:
                        bindings.append(b)
                except BuildError:
                    self.poison(st)
            exported = dict(self.scope.frames[-1])
            for a in out_call.args if has_output else []:
                var = exported.get(a.id) if isinstance(a, S.Name) else None
                if var is POISON:
                    failed.append(a.id)  # type: ignore[union-attr]
                    continue
                if not isinstance(var, GVar):
                    self.ctx.report("R.output names a value bound in this dataflow block",
                                    a.span)
                    continue
                outputs.append(var)
        for var in outputs:
            self.scope.define(var.name, var, var.span)
        for name in failed:
            self.scope.poison(name)
        self.dataflow_locals.update(n for n, v in exported.items()
                                    if isinstance(v, GVar) and v not in outputs)
        for name, value in exported.items():
            if isinstance(value, Var):
                self.scope.define(name, value, value.span)
        return BindingBlock(tuple(bindings), True, tuple(outputs), span=s.span)

    # ---- expressions ----------------------------------------------------------------------

    def gexpr(self, node: S.Expr) -> GraphExpr:
        if isinstance(node, S.Name):
            return self.name(node)
        if isinstance(node, S.Attribute):
            return self.global_var(node)
        if isinstance(node, S.Tuple):
            return Tuple(tuple(self.gexpr(e) for e in node.elts), span=node.span)
        if isinstance(node, S.Subscript):
            value = self.gexpr(node.value)
            idx = literal_value(node.items[0]) if len(node.items) == 1 else None
            if not isinstance(idx, int) or isinstance(idx, bool) or idx < 0:
                self.ctx.error("a tuple index is a non-negative integer literal", node.span)
            return TupleGetItem(value, idx, span=node.span)
        if isinstance(node, S.Call):
            return self.call(node)
        if isinstance(node, S.BinOp) and node.op in GRAPH_OPERATORS:
            # Relax overloads Python's operators on tensors: `A + B` is R.add(A, B).
            args = (self.operand(node.left), self.operand(node.right))
            return GCall(GRAPH_OPERATORS[node.op], args, span=node.span)
        if isinstance(node, S.UnaryOp) and node.op == "-" and literal_value(node) is None:
            return GCall("negative", (self.operand(node.operand),), span=node.span)
        if isinstance(node, S.Compare) and len(node.ops) == 1 and node.ops[0] in GRAPH_COMPARE:
            args = (self.operand(node.left), self.operand(node.comparators[0]))
            return GCall(GRAPH_COMPARE[node.ops[0]], args, span=node.span)
        if isinstance(node, S.Unsupported):
            self.ctx.unsupported(node.what, node.span)
        if isinstance(node, S.Constant) and node.kind in ("int", "float", "bool"):
            self.ctx.error("a number is not a graph value here; use R.const(...)", node.span)
        self.ctx.error("this is not a graph-level value", node.span)

    def name(self, node: S.Name) -> GraphExpr:
        value = self.scope.lookup(node.id)
        if value is None and node.id in self.module.functions:
            return GlobalVar(node.id, span=node.span)
        if value is None and node.id in self.branch_locals:
            self.ctx.error(f"'{node.id}' is local to a branch of 'if'; only the variable both "
                           "branches assign is bound after it", node.span)
        if value is None and node.id in self.dataflow_locals:
            self.ctx.error(f"'{node.id}' is local to its R.dataflow() block; list it in "
                           "R.output(...) to use it after the block", node.span)
        value = self.scope.require(node.id, node.span)
        if isinstance(value, GVar):
            self.mem.check_use(self, value, node.span)
            return value
        storage_value_error(self, value, node)
        if isinstance(value, LocalFunction):
            self.ctx.unsupported(f"the local function '{node.id}' as a value (only calls of "
                                 "it)", node.span)
        if isinstance(value, PrimExpr):
            # a symbolic size as a value is R.prim_value(n), as TVM 0.27 reads (and prints)
            # it: `R.call_tir(f, (x, n), ...)` passes n to a loop function's scalar parameter
            return PrimValue(value, span=node.span)
        self.ctx.error(f"'{node.id}' is not a graph-level value", node.span)

    def global_var(self, node: S.Expr) -> GlobalVar:
        """`Module.f`, `cls.f` (or a bare `f`): a function of this module."""
        if isinstance(node, S.Name) and node.id in self.module.functions:
            return GlobalVar(node.id, span=node.span)
        if isinstance(node, S.Attribute) and isinstance(node.value, S.Name) and \
                node.value.id in self.module_names():
            if node.attr not in self.module.functions:
                self.ctx.error(f"module has no function '{node.attr}'", node.attr_span)
            return GlobalVar(node.attr, span=node.span)
        name = S.dotted(node)
        if name in TYPE_NAMES:
            self.ctx.error(f"'{name}' is a type, not a value", node.span)
        if isinstance(node, S.Name):
            self.scope.require(node.id, node.span)
        self.ctx.error("expected a function of this module, such as Module.kernel",
                       node.span)

    def call(self, call: S.Call) -> GraphExpr:
        if isinstance(call.func, S.Name):
            local = self.scope.lookup(call.func.id)
            if isinstance(local, LocalFunction):
                return local_call(self, call, local)
        name = S.dotted(call.func)
        if name is None or not name.startswith("R."):
            if name is not None and name.startswith("T."):
                self.ctx.error(f"loop-level {name} in a graph function", call.func.span)
            if isinstance(call.func, S.Attribute) or isinstance(call.func, S.Name):
                gv = self.global_var(call.func)
                if gv.name not in self.module.graph:
                    self.ctx.error(f"'{gv.name}' is a loop function; call it with "
                                   "R.call_tir(...)", call.span)
                if get_op(gv.name) is not None:
                    self.ctx.unsupported(f"calling graph function '{gv.name}', which has the "
                                         f"name of the operator R.{gv.name} (rename it)",
                                         call.func.span)
                check_call(self.ctx, call, gv.name, Sig(0, None))
                args = tuple(self.operand(a) for a in call.args)
                return GCall(gv.name, args, span=call.span)
            self.ctx.error("this is not a function that can be called here", call.func.span)
        op = name[2:]
        handler = SPECIAL_CALLS.get(op)
        if handler is not None:
            return handler(self, call, name)
        if name in TYPE_NAMES:
            self.ctx.error(f"'{name}' is a type, not a value", call.span)
        if op in ("match_cast", "output", "dataflow", "func_attr"):
            self.ctx.error(f"{name} cannot be used in an expression", call.span)
        return self.op_call(call, op)

    def op_call(self, call: S.Call, op: str) -> GCall:
        if op == "nn.attention_bias":  # TVM's attention with a bias: R.nn.attention's 4th
            if len(call.args) < 4 and not any(k.name == "bias" for k in call.keywords):
                self.ctx.error("R.nn.attention_bias takes a bias: (query, key, value, bias)",
                               call.span)
            op = "nn.attention"
        if op in ("sort", "argsort"):
            return self.sort_call(call, op)
        sig = OP_SIGNATURES.get(op)
        args: list[GraphExpr] = []
        attrs: dict[str, Any] = {}
        for i, a in enumerate(call.args):
            if sig is not None and i >= sig.operands:
                k = i - sig.operands
                if k >= len(sig.attrs):
                    self.ctx.error(f"R.{op} takes at most {sig.operands + len(sig.attrs)} "
                                   f"positional arguments, got {len(call.args)}", a.span)
                attrs[sig.attrs[k]] = self.attr_operand(a)
            else:
                args.append(self.operand(a))
        sinfo_args: tuple[StructInfo, ...] = ()
        for kw in call.keywords:
            if kw.name in attrs:
                self.ctx.error(f"R.{op} got argument '{kw.name}' twice", kw.span)
            if kw.name == "out_sinfo":
                sinfo_args = self.out_sinfo(kw.value)
            else:
                attrs[kw.name] = self.attr_operand(kw.value)
        # TVM prints a dtype left unset as "void" (`R.full_like(x, v, dtype="void")`; older
        # ones as ""): the operator's default (the input's dtype) applies, as if not written
        attrs = {k: v for k, v in attrs.items()
                 if not (k.endswith("dtype") and v in ("void", ""))}
        return GCall(op, tuple(args), attrs, sinfo_args, span=call.span)

    def sort_call(self, call: S.Call, op: str) -> GCall:
        """TVM's `R.sort(x, axis=-1, descending=False)` and `R.argsort(x, axis=-1,
        descending=False, dtype="int32")`: the whole axis in order (equal values by position),
        as `R.topk` with k=0 gives its values or positions."""
        names = ("axis", "descending") + (("dtype",) if op == "argsort" else ())
        a = check_call(self.ctx, call, f"R.{op}", Sig(1, 1 + len(names), names))
        attrs: dict[str, Any] = {"k": 0, "ret_type": "indices" if op == "argsort" else "values"}
        for n, name in enumerate(names):
            node = a.get(1 + n, name)
            if node is not None:
                attrs["largest" if name == "descending" else name] = self.attr_operand(node)
        attrs.setdefault("largest", False)
        return GCall("topk", (self.operand(a.pos[0]),), attrs, span=call.span)

    def attr_operand(self, node: S.Expr) -> Any:
        """An operator attribute: TVM passes some (`R.clip`'s bounds, `R.strided_slice`'s
        `(R.prim_value(1),)`) as graph values, written `R.prim_value(...)` or `R.const(...)`;
        the operator table reads those as numbers."""
        if S.call_name(node) in ("R.prim_value", "R.const"):
            assert isinstance(node, S.Call)
            plain = literal_value(node.args[0]) if len(node.args) == 1 else None
            if S.call_name(node) == "R.prim_value" and isinstance(plain, int):
                return plain  # `R.prim_value(2)` is 2, as it prints (and parses back)
            value = self.gexpr(node)
            return value.value if isinstance(value, (PrimValue, Constant)) else value
        if isinstance(node, (S.Tuple, S.List)):
            return tuple(self.attr_operand(e) for e in node.elts)
        if isinstance(node, S.Lambda) or S.call_name(node) == "T.index_map":
            return self.index_map(node)
        known = self.scope.lookup(node.id) if isinstance(node, S.Name) else None
        if isinstance(known, GVar) and isinstance(known.struct_info, PrimSInfo) and \
                known.struct_info.value is not None:
            return known.struct_info.value  # `p: R.Prim(value="k")` stands for k, as in TVM
        return self.eb.attr_value(node)

    def index_map(self, node: S.Expr) -> SchedLambda:
        """`lambda i, j: (i // 4, j, i % 4)` (R.layout_transform's index map), also as TVM
        prints it, `T.index_map(lambda ..., index_dtype="int64")`: int64 indices."""
        if isinstance(node, S.Call):
            a = check_call(self.ctx, node, "T.index_map", Sig(1, 1, ("index_dtype",
                                                                     "inverse_index_map")))
            node = a.pos[0]
            if not isinstance(node, S.Lambda):
                self.ctx.error("T.index_map takes a lambda", node.span)
        assert isinstance(node, S.Lambda)
        scope = Scope(self.ctx)
        params = []
        for p in node.params:
            v = Var(p.id, DType.parse("int64"), span=p.span)
            scope.define(p.id, v, p.span)
            params.append(v)
        eb = ExprBuilder(self.ctx, scope)
        items = node.body.elts if isinstance(node.body, (S.Tuple, S.List)) else [node.body]
        return SchedLambda(tuple(params), tuple(eb.expr(e) for e in items), span=node.span)

    def operand(self, node: S.Expr) -> GraphExpr:
        """An operator operand: a graph value, a shape `(n, 4)`, or a number (a constant)."""
        value = literal_value(node)
        if isinstance(value, (bool, int, float)):
            dt = "bool" if isinstance(value, bool) else "float32" if isinstance(value, float) \
                else "int32"
            return Constant(value, DType.parse(dt), span=node.span)
        if isinstance(node, S.Constant) and node.kind == "str":
            return StringValue(str(node.value), span=node.span)
        if isinstance(node, (S.Tuple, S.List)) and node.elts and self.is_shape(node):
            return ShapeExpr(tuple(self.eb.index(e, "a shape dimension") for e in node.elts),
                             span=node.span)
        if isinstance(node, S.List):
            return Tuple(tuple(self.gexpr(e) for e in node.elts), span=node.span)
        return self.gexpr(node)

    def is_shape(self, node: S.Tuple | S.List) -> bool:
        """Whether a tuple holds sizes (numbers, symbolic variables) rather than tensors."""
        for e in node.elts:
            if isinstance(e, S.Name):
                if not isinstance(self.scope.lookup(e.id), PrimExpr):
                    return False
            elif not isinstance(e, (S.Constant, S.BinOp, S.UnaryOp)) and \
                    not (S.call_name(e) or "").startswith("T."):
                return False
        return True

    def out_sinfo(self, node: S.Expr) -> tuple[StructInfo, ...]:
        if isinstance(node, S.List):
            return tuple(self.sb.sinfo(x) for x in node.elts)
        return (self.sb.sinfo(node),)

    def args_tuple(self, node: S.Expr) -> Tuple:
        """The arguments of a call: a tuple or list of values (`(x, y)`, `[x, y]`), or one; an
        integer written bare among them is `R.prim_value(T.int64(...))`, as TVM 0.27 prints
        and reads an int64 primitive argument (`R.call_tir(cls.f, (x, 64), ...)`)."""
        if isinstance(node, (S.Tuple, S.List)):
            return Tuple(tuple(self.bare_int(e) or self.gexpr(e) for e in node.elts),
                         span=node.span)
        value = self.gexpr(node)
        return value if isinstance(value, Tuple) else Tuple((value,), span=node.span)

    def bare_int(self, node: S.Expr) -> PrimValue | None:
        """`R.prim_value(T.int64(v))` for an integer literal `v` (not a bool), else None."""
        v = literal_value(node)
        if isinstance(v, int) and not isinstance(v, bool):
            return PrimValue(IntImm(v, DType.parse("int64")), span=node.span)
        return None

    def shape_value(self, node: S.Expr) -> ShapeExpr:
        if S.call_name(node) in ("R.shape", "R.ShapeExpr"):
            value = self.call(node)  # type: ignore[arg-type]
            assert isinstance(value, ShapeExpr)
            return value
        if not isinstance(node, (S.Tuple, S.List)):
            self.ctx.error("expected R.shape([...]) or a tuple of sizes", node.span)
        return ShapeExpr(tuple(self.eb.index(e, "a size") for e in node.elts), span=node.span)


def build_graph_func(ctx: Context, fn: S.FunctionDef, module: ModuleNames) -> Function:
    """The Function of `@R.function def ...` (errors are reported into `ctx`)."""
    return GraphBuilder(ctx, fn, module).build()
