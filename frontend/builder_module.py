"""A whole file -> IRModule: the `@I.ir_module` class (or bare definitions), header imports,
imports of other `.tir` files, and the functions and schedules in source order."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tirc.frontend import syntax as S
from tirc.frontend.builder_dist import global_infos
from tirc.frontend.builder_expr import ExprBuilder
from tirc.frontend.builder_graph import ModuleNames, build_graph_func
from tirc.frontend.builder_prim_func import build_prim_func
from tirc.frontend.builder_schedule import build_schedule
from tirc.frontend.context import TOO_DEEP, BuildError, Context, walk
from tirc.frontend.imports import ImportSession
from tirc.frontend.prim_calls import signature_of_def, signature_of_func
from tirc.frontend.scope import Scope
from tirc.frontend.signature import Args, Sig, check_call
from tirc.frontend.spelling import detect_syntax, header_lines
from tirc.ir.diagnostics import CompileError
from tirc.ir.function import PrimFunc
from tirc.ir.graph import Function, GlobalVar
from tirc.ir.module import BaseFunc, IRModule
from tirc.ir.schedule import Schedule
from tirc.ir.span import Span

DECORATORS = {"T.prim_func": "prim_func", "R.function": "function", "S.schedule": "schedule"}
MODULE_DECORATORS = ("I.ir_module", "tvm.script.ir_module", "tvm.script.ir.ir_module")
DECORATOR_KWARGS = {"prim_func": ("private", "check_well_formed", "s_tir", "persistent"),
                    "function": ("pure", "private", "check_well_formed")}
MODULE_KWARGS = ("check_well_formed", "s_tir")
Loader = Callable[[Path, ImportSession], IRModule]


class ModuleBuilder:
    """Collects definitions and imports of one file, then builds its functions."""

    def __init__(self, ctx: Context, session: ImportSession, load: Loader) -> None:
        self.ctx = ctx
        self.header = header_lines(ctx.text)
        self.syntax = detect_syntax(ctx.text, self.header)
        self.session = session
        self.load = load
        self.functions: dict[str, BaseFunc] = {}
        self.schedules: list[Schedule] = []
        self.attrs: dict[str, Any] = {}
        self.global_infos: dict[str, tuple[Any, ...]] = {}
        self.class_name: str | None = None
        self.defs: list[tuple[S.FunctionDef, str, S.Expr]] = []
        self.def_names: set[str] = set()
        self.schedule_spans: list[tuple[Schedule, Span]] = []  # to check their functions
        self.flags: dict[int, dict[str, bool]] = {}  # decorator flags by id of the def

    def build(self, stmts: list[S.Stmt]) -> IRModule:
        for s in stmts:
            try:
                self.top(s)
            except BuildError:
                pass
        graph = {fn.name for fn, kind, _ in self.defs if kind == "function"} | {
            n for n, f in self.functions.items() if isinstance(f, Function)}
        sigs = {n: signature_of_func(f) for n, f in self.functions.items()
                if isinstance(f, PrimFunc)}
        sigs.update({fn.name: signature_of_def(fn) for fn, kind, _ in self.defs
                     if kind == "prim_func"})
        names = ModuleNames(self.class_name or "Module", set(self.functions) | self.def_names,
                            graph, sigs)
        for fn, kind, deco in self.defs:
            try:
                self.build_def(fn, kind, deco, names)
            except BuildError:
                pass
            except RecursionError:
                self.ctx.report(TOO_DEEP, fn.name_span)
        self.functions.update(names.lifted)  # local functions (tirc.frontend.graph_local)
        for sch, where in self.schedule_spans:
            if sch.func_name not in names.functions:
                self.ctx.report(f"schedule for unknown function '{sch.func_name}'", where)
        return IRModule(dict(self.functions), tuple(self.schedules), self.attrs,
                        self.class_name or "Module", sources=tuple(self.session.sources),
                        global_infos=dict(self.global_infos),
                        syntax=self.syntax, header=self.header)

    # ---- top level ----------------------------------------------------------------------

    def top(self, s: S.Stmt) -> None:
        if isinstance(s, S.ImportFrom):
            if s.level == 0 and (s.module == "tvm" or s.module.startswith("tvm.")
                                 or s.module == "__future__" or _typevar_import(s)):
                return
            self.import_from(s)
        elif isinstance(s, S.Import):
            self.python_import(s)
        elif isinstance(s, S.ClassDef):
            self.module_class(s)
        elif isinstance(s, S.FunctionDef):
            self.collect(s)
        elif isinstance(s, S.Pass) or _is_docstring(s):
            return
        elif isinstance(s, S.Assign) and S.call_name(s.value) == "TypeVar":
            self.module_symbol(s)
        elif isinstance(s, S.UnsupportedStmt):
            self.ctx.unsupported(s.what, s.span)
        else:
            self.ctx.unsupported("statements at the top level of a file (only imports, "
                                 "@I.ir_module classes and decorated functions)", s.span)

    def module_symbol(self, s: S.Assign) -> None:
        """`n = TypeVar("n")`: TVM prints a symbolic size that several functions of the
        module share (a Relax function and the loop functions it calls) so, above the class;
        each function then reads `n` as its own int64 size variable (tirc.frontend.scope)."""
        call = s.value
        assert isinstance(call, S.Call)
        a = check_call(self.ctx, call, "TypeVar", Sig(1, 1))
        name = a.pos[0]
        if s.more_targets or not isinstance(s.target, S.Name):
            self.ctx.error("a TypeVar is assigned to one name: `n = TypeVar(\"n\")`", s.span)
        if not (isinstance(name, S.Constant) and name.kind == "str"
                and name.value == s.target.id):
            self.ctx.error(f"expected TypeVar(\"{s.target.id}\"), the name it is assigned to",
                           name.span)
        self.ctx.module_symbols.add(s.target.id)

    def python_import(self, s: S.Import) -> None:
        """`import m` binds nothing here: `tvm` and the Python modules a TVMScript file imports
        for the code around it (numpy, IPython) are skipped; a module that names a `.tir` file
        is an error, since a file is imported with `from m import name`."""
        for m in s.modules:
            if m == "tvm" or m.startswith("tvm."):
                continue
            path, rel = self.session.find(m, 0, self.ctx.filename)
            if path is not None:
                self.ctx.unsupported(f"'import' of the file '{rel}' (write `from {m} import "
                                     "name`)", s.span)

    def module_class(self, c: S.ClassDef) -> None:
        names = [S.dotted(d.func if isinstance(d, S.Call) else d) for d in c.decorators]
        if not names or any(n not in MODULE_DECORATORS for n in names):
            self.ctx.error(f"class '{c.name}' needs the decorator @I.ir_module", c.name_span)
        for d in c.decorators:
            if isinstance(d, S.Call):
                flags = check_call(self.ctx, d, "@I.ir_module", Sig(0, 0, MODULE_KWARGS))
                self.decorator_flags(flags, "@I.ir_module")
        if self.class_name is not None:
            self.ctx.error("only one @I.ir_module class per file", c.name_span)
        if c.bases:
            self.ctx.unsupported("base classes", c.bases[0].span)
        self.class_name = c.name
        for s in c.body:
            try:
                if isinstance(s, S.FunctionDef):
                    self.collect(s)
                elif S.call_name(getattr(s, "value", None)) == "I.module_global_infos":
                    self.global_infos.update(global_infos(self.ctx, s.value))  # type: ignore[attr-defined]
                    self.ctx.global_infos = self.global_infos  # type: ignore[attr-defined]
                elif S.call_name(getattr(s, "value", None)) == "I.module_attrs":
                    call = s.value  # type: ignore[attr-defined]
                    a = check_call(self.ctx, call, "I.module_attrs", Sig(1, 1))
                    self.attrs.update(ExprBuilder(self.ctx, Scope(self.ctx)).attr_dict(a.pos[0]))
                elif not (isinstance(s, S.Pass) or _is_docstring(s)):
                    self.ctx.error("a module class holds decorated functions "
                                   "(@T.prim_func, @R.function, @S.schedule)", s.span)
            except BuildError:
                pass

    def collect(self, fn: S.FunctionDef) -> None:
        if fn.is_async:
            self.ctx.unsupported("'async'", fn.span)
        if not fn.decorators:
            self.ctx.error(f"function '{fn.name}' needs a decorator: @T.prim_func, "
                           "@R.function or @S.schedule", fn.name_span)
        if len(fn.decorators) > 1:
            self.ctx.unsupported("more than one decorator", fn.decorators[1].span)
        deco = fn.decorators[0]
        name = S.dotted(deco.func) if isinstance(deco, S.Call) else S.dotted(deco)
        kind = DECORATORS.get(name or "")
        if kind is None:
            self.ctx.error(f"unknown decorator '@{name or '...'}' (expected @T.prim_func, "
                           "@R.function or @S.schedule)", deco.span)
        if kind != "schedule":
            if isinstance(deco, S.Call):
                args = check_call(self.ctx, deco, f"@{name}", Sig(0, 0, DECORATOR_KWARGS[kind]))
                self.flags[id(fn)] = self.decorator_flags(args, f"@{name}")
            if fn.name in self.def_names or fn.name in self.functions:
                self.ctx.error(f"redefinition of function '{fn.name}'", fn.name_span)
            self.def_names.add(fn.name)
        self.defs.append((fn, kind, deco))

    def decorator_flags(self, args: Args, what: str) -> dict[str, bool]:
        """The keyword flags of a decorator, each a literal True or False."""
        flags = {}
        for key, node in args.kw.items():
            if not (isinstance(node, S.Constant) and node.kind == "bool"):
                self.ctx.error(f"{what}({key}=...) takes True or False", node.span)
            flags[key] = bool(node.value)
        return flags

    def build_def(self, fn: S.FunctionDef, kind: str, deco: S.Expr, names: ModuleNames) -> None:
        if kind == "prim_func":
            flags = self.flags.get(id(fn), {})
            func = build_prim_func(self.ctx, fn, names)
            self.check_private(fn, func.attrs)
            self.functions[fn.name] = func.replace(  # type: ignore[assignment]
                private=flags.get("private", False), s_tir=flags.get("s_tir", False))
        elif kind == "function":
            self.functions[fn.name] = build_graph_func(self.ctx, fn, names)
            self.check_private(fn, self.functions[fn.name].attrs)
        else:
            sch = build_schedule(self.ctx, fn, deco)
            self.schedules.append(sch)
            where = deco.args[0].span if isinstance(deco, S.Call) and deco.args else deco.span
            self.schedule_spans.append((sch, where))

    def check_private(self, fn: S.FunctionDef, attrs: dict[str, Any]) -> None:
        """A private function has no global symbol, as TVM's parser checks: `private=True`
        with a `"global_symbol"` attribute is an error at the func_attr."""
        symbol = attrs.get("global_symbol")
        if symbol is None or not self.flags.get(id(fn), {}).get("private", False):
            return
        where = next((s.span for s in fn.body if isinstance(s, S.ExprStmt) and
                      S.call_name(s.value) in ("T.func_attr", "R.func_attr")), fn.name_span)
        self.ctx.error(f"private function '{fn.name}' has the global symbol '{symbol}': a "
                       "private function may not have a \"global_symbol\" attribute (drop "
                       "private=True to export it)", where)

    # ---- imports ------------------------------------------------------------------------

    def import_from(self, s: S.ImportFrom) -> None:
        ctx = self.ctx
        dotted = "." * s.level + s.module
        path, rel = self.session.find(s.module, s.level, ctx.filename)
        if path is None:
            ctx.error(f"cannot find '{rel}' for 'from {dotted} import ...'", s.module_span)
        chain = self.session.cycle(path)
        if chain is not None:
            ctx.error("import cycle: " + " -> ".join(p.name for p in chain), s.module_span)
        try:
            mod = self.session.load(path, self.load)
        except CompileError as err:
            known = {id(d) for d in ctx.diag.diagnostics}
            ctx.diag.diagnostics.extend(d for d in err.diagnostics if id(d) not in known)
            ctx.error(f"cannot import from '{rel}' because of the errors in it", s.module_span)
        for n in s.names:
            func = mod.functions.get(n.name)
            if func is None:
                ctx.report(f"'{rel}' has no function '{n.name}'", n.span)
                continue
            self.add_imported(n.asname or n.name, func, mod, n.span)

    def add_imported(self, name: str, func: BaseFunc, mod: IRModule, span: Span) -> None:
        original = func.name
        if name != func.name:
            func = func.replace(name=name)  # type: ignore[assignment]
        if not self.add_function(name, func, span):
            return
        for dep in _globals(func):
            if dep in mod.functions and dep != original:
                self.add_imported(dep, mod.functions[dep], mod, span)
        for sch in mod.schedules:
            if sch.func_name == original and sch not in self.schedules:
                self.schedules.append(sch if name == original else
                                      sch.replace(func_name=name))  # type: ignore[arg-type]

    def add_function(self, name: str, func: BaseFunc, span: Span) -> bool:
        """Add an imported function; False when it is already here (the same one)."""
        old = self.functions.get(name)
        if old is func or (old is not None and old.span == func.span):
            return False
        if old is not None:
            self.ctx.report(f"redefinition of function '{name}'", span)
            return False
        self.functions[name] = func
        return True


def _globals(func: BaseFunc) -> list[str]:
    """Names of the module functions `func` refers to (R.call_tir targets)."""
    found: list[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, GlobalVar) and node.name not in found:
            found.append(node.name)

    walk(func, visit)
    return found


def _typevar_import(s: S.ImportFrom) -> bool:
    """`from typing import TypeVar`, the import of the symbolic sizes TVM prints above a
    module (`n = TypeVar("n")`)."""
    return s.module == "typing" and all(n.name == "TypeVar" and n.asname is None
                                        for n in s.names)


def _is_docstring(s: S.Stmt) -> bool:
    return isinstance(s, S.ExprStmt) and isinstance(s.value, S.Constant) \
        and s.value.kind == "str"
