"""The printer: any IR back to `.tir` text, in one canonical format that parses back equal.

Printed forms (what the frontend must accept, besides everything in LANGUAGE.md):
- a module is always `@I.ir_module class <name>:` with its functions; schedules follow the class
  at top level as `@S.schedule("f", target="llvm") def _(sch): ...`;
- a prim_func parameter whose buffer shape is all constants prints as `A: T.Buffer(...)`,
  otherwise as `a: T.handle` plus `A = T.match_buffer(a, ...)` after `n = T.int64()` lines;
- a root block with nothing but allocations prints without its `with T.block("root"):` line
  (an empty root block keeps it, so it reads back as a block);
- perfectly nested serial loops from 0 print as one `for i, j in T.grid(a, b):`;
- block iteration variables print as one `T.axis.remap("SSR", [i, j, k])` when every one is
  bound to an enclosing loop variable over the same domain, else one `T.axis.*` line each;
- `Allocate` prints as `B = T.decl_buffer(...)` (`T.event_tensor(...)` for event storage), and
  as `with T.decl_buffer(...) as B:` when statements follow it outside its scope (lets:
  `with T.LetStmt(value) as x:`);
- constants print with their dtype unless int32 (`T.int64(4)`, `T.float32(0.5)`, `True`);
- vectors print as `T.Ramp(base, stride, lanes)` / `T.Broadcast(value, lanes)` /
  `T.Shuffle([vectors], [indices])`, casts as
  `T.Cast("dtype", x)`, integer true division as `T.Div(a, b)`, unknown intrinsics as
  `T.call_intrin("dtype", "name", args...)`.
"""

from __future__ import annotations

import json
import keyword
import math
from collections.abc import Callable, Iterator
from typing import Any

from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.deep_call import deep
from tirc.ir.dist.dtensor import DTensorSInfo
from tirc.ir.dist.text import dtensor_text, global_infos_text
from tirc.ir.expr import (
    BinOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    IntImm,
    Let,
    Not,
    PrimExpr,
    Ramp,
    Select,
    Shuffle,
    StringImm,
    Var,
)
from tirc.ir.function import PrimFunc
from tirc.ir.graph import (
    BindingBlock,
    Constant,
    ExternFunc,
    Function,
    GCall,
    GlobalVar,
    GraphExpr,
    GVar,
    If,
    MatchCast,
    ObjectSInfo,
    PrimSInfo,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    ShapeSInfo,
    SparseTensorSInfo,
    StringValue,
    StructInfo,
    TensorSInfo,
    Tuple,
    TupleGetItem,
    TupleSInfo,
    VarBinding,
)
from tirc.ir.intrinsics import CALL_PRIM, NAMED, OPERATOR, STATEMENT, TYPED, intrinsic
from tirc.ir.module import IRModule
from tirc.ir.ops.registry import get_op
from tirc.ir.schedule import SchedInstr, SchedLambda, SchedRef, Schedule
from tirc.ir.sparse.buffer import SparseBuffer
from tirc.ir.sparse.iteration import SparseIteration
from tirc.ir.sparse.printing import declare_sparse, iteration_head, sparse_params
from tirc.ir.stmt import (
    DEVICE_ENTRY,
    Allocate,
    AssertStmt,
    AttrStmt,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IterKind,
    LetStmt,
    SeqStmt,
    Stmt,
    While,
)
from tirc.ir.target import TargetAttr
from tirc.ir.tirx_calls import movable_call, moved_size_params, with_sizes_moved
from tirc.ir.visitor import Visitor, any_node, post_order_visit

INDENT = "    "
SYNTAXES = ("classic", "tirx")
# Calls whose result types TVM 0.27 names `out_ty=` (its parser refuses the older `out_sinfo=`)
OUT_TY_CALLS = ("call_tir", "call_tir_inplace", "call_dps_packed")


# Python precedence levels (higher binds tighter).
_PREC = {
    "or": 10, "and": 20, "not": 30,
    "eq": 40, "ne": 40, "lt": 40, "le": 40, "gt": 40, "ge": 40,
    "bitwise_or": 45, "bitwise_xor": 46, "bitwise_and": 47, "shift_left": 48, "shift_right": 48,
    "add": 60, "sub": 60, "mul": 70, "div": 70, "floordiv": 70, "floormod": 70, "neg": 80,
}
# Bitwise intrinsics print as Python's operators, as TVM prints them.
_BIT_INFIX = {"shift_left": "<<", "shift_right": ">>", "bitwise_and": "&", "bitwise_or": "|",
              "bitwise_xor": "^"}
_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "floormod": "%",
          "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
          "and": "and", "or": "or"}
_FUNC_OPS = {"min": "T.min", "max": "T.max", "truncdiv": "T.truncdiv", "truncmod": "T.truncmod"}
_ATOM = 100


def format_float(value: float) -> str:
    """A float literal that reads back to the same value."""
    if math.isnan(value):
        return '"nan"'
    if math.isinf(value):
        return '"inf"' if value > 0 else '"-inf"'
    return repr(float(value))


def _nested_list(value: tuple[Any, ...], item: Callable[[Any], str]) -> str:
    """A tensor constant's nested tuples as the nested list `R.const` takes."""
    return "[" + ", ".join(_nested_list(x, item) if isinstance(x, tuple) else item(x)
                           for x in value) + "]"


def _str(s: str) -> str:
    return json.dumps(s)


_RESERVED = frozenset(keyword.kwlist) | {"T", "range"}


class _Names:
    """Scoped names: a definition whose name is visible for another object gets a suffix.

    Names that would read back as something else (`T`, `range`, keywords) get one too.
    """

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.visible: dict[str, int] = {}
        self.used: set[str] = set()

    def define(self, obj: Any, base: str) -> str:
        base = base or "v"
        name = base
        k = 1
        while name in _RESERVED or (name in self.visible and self.visible[name] != id(obj)):
            name = f"{base}_{k}"
            k += 1
        self.names[id(obj)] = name
        self.visible[name] = id(obj)
        return name

    def alias(self, obj: Any, name: str) -> None:
        """Give `obj` the name of another definition (a parameter and its buffer)."""
        self.names[id(obj)] = name

    def is_defined(self, obj: Any) -> bool:
        return id(obj) in self.names

    def undefine(self, obj: Any) -> None:
        name = self.names.get(id(obj))
        if name is not None and self.visible.get(name) == id(obj):
            del self.visible[name]

    def get(self, obj: Any, base: str) -> str:
        name = self.names.get(id(obj))
        return name if name is not None else base


class ExprPrinter:
    """Prints loop-level expressions with Python precedence."""

    def __init__(self, names: _Names, module_name: str = "Module") -> None:
        self.names = names
        self.module_name = module_name  # what a direct call of a loop function prints

    def __call__(self, e: Any) -> str:
        return self.expr(e)[0]

    def expr(self, e: Any) -> tuple[str, int]:
        if isinstance(e, bool):
            return str(e), _ATOM
        if isinstance(e, int):
            return str(e), _ATOM
        if isinstance(e, IntImm):
            return self.int_imm(e)
        if isinstance(e, FloatImm):
            return f"T.{e.dtype}({format_float(e.value)})", _ATOM
        if isinstance(e, StringImm):
            return _str(e.value), _ATOM
        if isinstance(e, Var):
            return self.names.get(e, e.name), _ATOM
        if isinstance(e, BinOp):
            return self.binop(e)
        if isinstance(e, Not):
            return "not " + self.wrap(e.a, _PREC["not"]), _PREC["not"]
        if isinstance(e, Select):
            args = ", ".join(self(x) for x in (e.condition, e.true_value, e.false_value))
            return f"T.Select({args})", _ATOM
        if isinstance(e, Cast):
            return f'T.Cast("{e.dtype}", {self(e.value)})', _ATOM
        if isinstance(e, Call) and e.op in _BIT_INFIX and len(e.args) == 2:
            prec = _PREC[e.op]
            left, right = self.wrap(e.args[0], prec), self.wrap(e.args[1], prec + 1)
            return f"{left} {_BIT_INFIX[e.op]} {right}", prec
        if isinstance(e, Call) and e.op == "bitwise_not" and len(e.args) == 1:
            return "~" + self.wrap(e.args[0], _PREC["neg"]), _PREC["neg"]
        if isinstance(e, Call):
            return self.call(e), _ATOM
        if isinstance(e, BufferLoad):
            return self.load(e.buffer, e.indices), _ATOM
        if isinstance(e, Ramp):
            return f"T.Ramp({self(e.base)}, {self(e.stride)}, {e.lanes})", _ATOM
        if isinstance(e, Broadcast):
            return f"T.Broadcast({self(e.value)}, {e.lanes})", _ATOM
        if isinstance(e, Shuffle):
            vectors = ", ".join(self(v) for v in e.vectors)
            return f"T.Shuffle([{vectors}], {list(e.indices)})", _ATOM
        if isinstance(e, Let):
            name = self.names.define(e.var, e.var.name)
            text = f"T.Let({self(e.body)}, where={{{name}: {self(e.value)}}})"
            self.names.undefine(e.var)
            return text, _ATOM
        raise TypeError(f"cannot print expression {type(e).__name__}")

    def int_imm(self, e: IntImm) -> tuple[str, int]:
        if e.dtype.is_bool:
            return ("True" if e.value else "False"), _ATOM
        if str(e.dtype) == "int32":
            return str(e.value), (_ATOM if e.value >= 0 else _PREC["neg"])
        return f"T.{e.dtype}({e.value})", _ATOM

    def binop(self, e: BinOp) -> tuple[str, int]:
        if e.op in _FUNC_OPS:
            return f"{_FUNC_OPS[e.op]}({self(e.a)}, {self(e.b)})", _ATOM
        if e.op == "div" and not e.dtype.is_float:
            return f"T.Div({self(e.a)}, {self(e.b)})", _ATOM
        prec = _PREC[e.op]
        is_cmp = prec == _PREC["eq"]
        # Comparisons never chain; the right operand of a same-level operator needs parens.
        left = self.wrap(e.a, prec + 1 if is_cmp else prec)
        right = self.wrap(e.b, prec + 1)
        return f"{left} {_INFIX[e.op]} {right}", prec

    def wrap(self, e: Any, min_prec: int) -> str:
        text, prec = self.expr(e)
        return f"({text})" if prec < min_prec else text

    def call(self, e: Call) -> str:
        """A call as the intrinsic table says it is written (`T.name(args)`, with the dtype
        first or as `dtype=` where it is not the declared one), else `T.call_intrin`."""
        if e.op == CALL_PRIM and e.args and isinstance(e.args[0], StringImm):
            callee = e.args[0].value
            return f"{self.module_name}.{callee}({', '.join(self(a) for a in e.args[1:])})"
        args = ", ".join(self(a) for a in e.args)
        sep = ", " if args else ""
        info = intrinsic(e.op)
        if info is not None and info.printed == TYPED:
            return f'T.{e.op}("{e.dtype}"{sep}{args})'
        if info is not None and info.printed in (NAMED, OPERATOR):
            declared = info.declared_dtype([a.dtype for a in e.args])
            if declared is not None and e.dtype != declared:
                return f'T.{e.op}({args}{sep}dtype="{e.dtype}")'
            return f"T.{e.op}({args})"
        if info is not None and info.printed == STATEMENT:
            return f"T.{e.op}({args})"
        return f'T.call_intrin("{e.dtype}", {_str(e.op)}{sep}{args})'

    def load(self, buffer: Buffer, indices: tuple[Any, ...]) -> str:
        name = self.names.get(buffer, buffer.name)
        if not indices:
            return f"{name}[()]"
        return f"{name}[{', '.join(self(i) for i in indices)}]"

    def range_text(self, r: Range) -> str:
        """`lo:hi` for a slice, or the single index when the extent is 1."""
        if isinstance(r.extent, IntImm) and r.extent.value == 1 and r.extent.dtype == r.min.dtype:
            return self(r.min)
        return f"{self(r.min)}:{_range_stop(self, r.min, r.extent)}"

    def region(self, region: BufferRegion) -> str:
        name = self.names.get(region.buffer, region.buffer.name)
        if not region.region:
            return f"{name}[()]"
        return f"{name}[{', '.join(self.range_text(r) for r in region.region)}]"


def _range_stop(p: ExprPrinter, lo: PrimExpr, extent: PrimExpr) -> str:
    if isinstance(lo, IntImm) and isinstance(extent, IntImm) and lo.dtype == extent.dtype:
        return p(IntImm(lo.value + extent.value, lo.dtype))
    return p(lo + extent)


class _FreeVars(Visitor):
    """Variables used in an expression, in order of first appearance."""

    def __init__(self) -> None:
        self.found: list[Var] = []

    def visit_Var(self, v: Var) -> None:
        if v not in self.found:
            self.found.append(v)


def undefined_vars(f: PrimFunc, defined: set[int]) -> list[Var]:
    """Integer variables the body of `f` uses but nothing defines (a symbolic size TVM
    declares in the body, `n = T.int32()`): they print as such declarations first."""
    bound: set[int] = set(defined)
    for buf in f.buffer_map.values():
        bound |= {id(v) for v in free_vars(buf.shape, buf.strides, buf.elem_offset)}

    def visit(node: Any) -> None:
        for name in ("loop_var", "var"):
            v = getattr(node, name, None)
            if isinstance(v, Var):
                bound.add(id(v))
        if isinstance(node, AttrStmt) and isinstance(node.node, Var) and \
                node.key in ("thread_extent", "virtual_thread"):
            bound.add(id(node.node))  # a thread attribute binds its variable

    post_order_visit(f.body, visit)
    return [v for v in free_vars(f.body) if id(v) not in bound and v.dtype.is_int
            and v.dtype.lanes == 1]


def free_vars(*exprs: Any) -> list[Var]:
    fv = _FreeVars()
    for e in exprs:
        fv.visit(e)
    return fv.found


class FuncPrinter:
    """Prints one prim_func or graph function at a given indentation."""

    def __init__(self, module_name: str = "Module", syntax: str = "classic",
                 functions: frozenset[str] = frozenset()) -> None:
        self.syntax = check_syntax(syntax)
        self.functions = functions  # the module's functions: a call of one prints as such
        self.moved: frozenset[str] = frozenset()  # loop functions printed with sizes moved
        self.block_kw = "sblock" if syntax == "tirx" else "block"
        # TVM 0.27 spells a block's own allocation T.sblock_alloc_buffer (its T.alloc_buffer
        # is a statement allocating over the statements after it).
        self.block_alloc = "sblock_alloc_buffer" if syntax == "tirx" else "alloc_buffer"
        self.names = _Names()
        self.p = ExprPrinter(self.names, module_name)
        self.lines: list[str] = []
        self.loop_dom: dict[int, tuple[PrimExpr, PrimExpr]] = {}
        self.views: dict[int, list[Buffer]] = {}
        self.frame: list[Any] = []  # definitions of the indented body being printed
        self.module_name = module_name

    def emit(self, depth: int, text: str) -> None:
        self.lines.append(INDENT * depth + text)

    # ---- buffers ---------------------------------------------------------------------

    def buffer_args(self, b: Buffer, with_shape: bool = True) -> str:
        parts = []
        if with_shape:
            parts.append(self.shape_tuple(b.shape))
        parts.append(_str(str(b.dtype)))
        if b.strides:
            parts.append(f"strides={self.shape_tuple(b.strides)}")
        if b.elem_offset is not None:
            parts.append(f"elem_offset={self.p(b.elem_offset)}")
        if b.scope not in ("global", "event"):
            parts.append(f"scope={_str(b.scope)}")
        if b.align != 64:
            parts.append(f"align={b.align}")
        if b.offset_factor != 1:
            parts.append(f"offset_factor={b.offset_factor}")
        if b.layout is not None:
            parts.append(f"layout={_str(str(b.layout))}")
        if b.axis_separators:
            parts.append(f"axis_separators={list(b.axis_separators)}")
        return ", ".join(parts)

    def shape_tuple(self, dims: tuple[Any, ...]) -> str:
        items = [self.p(d) for d in dims]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"

    # ---- prim_func -------------------------------------------------------------------

    def collect_views(self, body: Stmt) -> None:
        """Group the buffers accessed in `body` by their storage, to declare views of it."""

        def visit(node: Any) -> None:
            buf = getattr(node, "buffer", None)
            if isinstance(node, (BufferLoad, BufferStore, BufferRegion)) and buf is not None:
                views = self.views.setdefault(id(buf.data), [])
                if buf not in views:
                    views.append(buf)

        post_order_visit(body, visit)

    def declare_views(self, data: Var, provider: str, depth: int) -> list[Buffer]:
        """`B = T.Buffer(..., data=provider)` for each undeclared buffer stored in `data`."""
        declared = []
        for buf in self.views.get(id(data), []):
            if not self.names.is_defined(buf):
                name = self.names.define(buf, buf.name)
                self.emit(depth, f"{name} = T.Buffer({self.buffer_args(buf)}, data={provider})")
                declared.append(buf)
        return declared

    def buffer_defined(self, buf: Buffer, depth: int) -> list[Buffer]:
        """After `buf` is declared: its storage, where used as a value, prints as `buf.data`
        (unless it has a name of its own), and its views are declared through it."""
        provider = f"{self.names.get(buf, buf.name)}.data"
        if not self.names.is_defined(buf.data):
            self.names.alias(buf.data, provider)
        return self.declare_views(buf.data, provider, depth)

    def prim_func(self, f: PrimFunc, depth: int) -> list[str]:
        self.collect_views(f.body)
        flags = []
        if f.private:
            flags.append("private=True")
        if self.syntax == "tirx" and (f.s_tir or has_blocks(f.body)):
            flags.append("s_tir=True")
        self.emit(depth, "@T.prim_func" + (f"({', '.join(flags)})" if flags else ""))
        params: list[str] = []
        matches: list[tuple[str, Buffer, Var]] = []
        sparse = sparse_params(f)
        for v in f.params:
            buf = f.buffer_map.get(v)
            if v in sparse:
                params.append(f"{self.names.define(v, v.name)}: T.handle")
            elif buf is not None and all(isinstance(d, IntImm) for d in buf.shape + buf.strides) \
                    and buf.elem_offset is None:
                name = self.names.define(buf, buf.name)
                self.names.alias(v, name)
                params.append(f"{name}: T.Buffer({self.buffer_args(buf)})")
            elif buf is not None:
                base = v.name if v.name != buf.name else f"{v.name}_handle"
                name = self.names.define(v, base)
                params.append(f"{name}: T.handle")
                matches.append((name, buf, v))
            else:
                name = self.names.define(v, v.name)
                params.append(f"{name}: T.{v.dtype}")
        ret = f" -> T.{f.ret_dtype}" if f.ret_dtype is not None else ""
        self.emit(depth, f"def {f.name}({', '.join(params)}){ret}:")
        body_depth = depth + 1
        if f.attrs:
            self.emit(body_depth, f"T.func_attr({self.attr_dict(f.attrs)})")
        defined = {id(v) for v in f.params}
        # in parameter order: `sparse` is a set, whose order would change the printed text
        sized = [buf for _, buf, _ in matches] + [f.buffer_map[v] for v in f.params
                                                  if v in sparse]
        for buf in sized:
            for sv in free_vars(buf.shape, buf.strides, buf.elem_offset):
                if id(sv) not in defined:
                    defined.add(id(sv))
                    self.emit(body_depth, f"{self.names.define(sv, sv.name)} = T.{sv.dtype}()")
        for hname, buf, _ in matches:
            bname = self.names.define(buf, buf.name)
            self.emit(body_depth, f"{bname} = T.match_buffer({hname}, {self.buffer_args(buf)})")
        if sparse:
            declare_sparse(f, self.names.define, lambda x: self.names.get(x, x.name), self.p,
                           lambda line: self.emit(body_depth, line))
        for buf in f.buffer_map.values():
            self.buffer_defined(buf, body_depth)
        for v in f.params:
            if v.dtype.is_handle and v not in f.buffer_map and v not in sparse:
                self.declare_views(v, self.names.get(v, v.name), body_depth)
        for sv in undefined_vars(f, defined):
            self.emit(body_depth, f"{self.names.define(sv, sv.name)} = T.{sv.dtype}()")
        self.root_or_stmt(f.body, body_depth)
        return self.lines

    def root_or_stmt(self, body: Stmt, depth: int) -> None:
        if isinstance(body, BlockRealize) and self.is_implicit_root(body):
            blk = body.block
            for b in blk.alloc_buffers:
                self.emit(depth, f"{self.names.define(b, b.name)} = {self.alloc_call(b)}")
                self.buffer_defined(b, depth)
            self.stmt(blk.body, depth)
        else:
            self.stmt(body, depth)

    def alloc_call(self, b: Buffer) -> str:
        """`T.alloc_buffer(...)` for `b`, or `T.alloc_sparse_buffer((I, J), "dtype")` for a
        sparse buffer (its axes are declared at the top of the function)."""
        if isinstance(b, SparseBuffer):
            axes = ", ".join(self.names.get(a, a.name) for a in b.axes)
            axes = f"({axes},)" if len(b.axes) == 1 else f"({axes})"
            layout = f", layout={_str(str(b.layout))}" if b.layout is not None else ""
            return f'T.alloc_sparse_buffer({axes}, "{b.dtype}"{layout})'
        return f"T.{self.block_alloc}({self.buffer_args(b)})"

    @staticmethod
    def is_implicit_root(br: BlockRealize) -> bool:
        b = br.block
        return (b.name == "root" and bool(b.alloc_buffers) and not b.iter_vars and not b.reads
                and not b.writes and b.init is None and not b.match_buffers and not b.annotations
                and isinstance(br.predicate, IntImm) and br.predicate.value == 1)

    def attr_value(self, v: Any) -> str:
        if isinstance(v, bool) or v is None:
            return str(v)
        if isinstance(v, int):
            return str(v)
        if isinstance(v, float):
            return format_float(v)
        if isinstance(v, str):
            return _str(v)
        if isinstance(v, (tuple, list)):  # attribute sequences read back as tuples
            items = [self.attr_value(x) for x in v]
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        if isinstance(v, dict):
            return self.attr_dict(v)
        if isinstance(v, PrimExpr):
            return self.p(v)
        if isinstance(v, StructInfo):
            return self.sinfo(v)
        if isinstance(v, TargetAttr):
            return f"T.target({self.attr_value(v.spec)})"
        if isinstance(v, Buffer):
            return self.names.get(v, v.name)
        if isinstance(v, SchedLambda):  # R.layout_transform's index map, names of its own
            p = ExprPrinter(_Names())
            params = ", ".join(p.names.define(x, x.name) for x in v.params)
            body = [p(x) for x in v.body]
            return f"lambda {params}: ({body[0]},)" if len(body) == 1 else \
                f"lambda {params}: ({', '.join(body)})"
        return _str(str(v))

    def attr_dict(self, d: dict[str, Any]) -> str:
        items = ", ".join(f"{_str(k)}: {self.attr_value(v)}" for k, v in d.items())
        return "{" + items + "}"

    # ---- statements ------------------------------------------------------------------

    def body(self, s: Stmt, depth: int) -> None:
        """An indented body: lets and allocations in it stay named until it ends, as the
        frontend scopes them."""
        outer, self.frame = self.frame, []
        self.stmt(s, depth)
        for obj in self.frame:
            self.names.undefine(obj)
        self.frame = outer

    def stmt(self, s: Stmt, depth: int) -> None:
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            raise TypeError(f"cannot print statement {type(s).__name__}")
        method(s, depth)

    def stmt_SeqStmt(self, s: SeqStmt, depth: int) -> None:
        if not s.seq:
            self.emit(depth, "T.evaluate(0)")
        for i, x in enumerate(s.seq):
            if i < len(s.seq) - 1 and isinstance(x, (LetStmt, Allocate)):
                self.scoped(x, depth)  # its scope ends before the next statement
            else:
                self.stmt(x, depth)

    def scoped(self, s: LetStmt | Allocate, depth: int) -> None:
        """`with T.decl_buffer(...) as B:` / `with T.LetStmt(v) as x:` and an indented body."""
        if isinstance(s, LetStmt):
            value = self.p(s.value)
            name = self.names.define(s.var, s.var.name)
            head = f"T.LetStmt({value})"
            defined: list[Any] = [s.var]
        else:
            b = s.buffer
            if b.scope == "event":
                init = f", init={self.p(s.init)}" if s.init is not None else ""
                head = f"T.event_tensor({self.shape_tuple(b.shape)}{init})"
            else:
                head = f"T.decl_buffer({self.buffer_args(b)})"
            name = self.names.define(b, b.name)
            defined = [b]
        self.emit(depth, f"with {head} as {name}:")
        if isinstance(s, LetStmt) and s.var.dtype.is_handle:
            defined += self.declare_views(s.var, name, depth + 1)
        elif isinstance(s, Allocate):
            defined += self.buffer_defined(s.buffer, depth + 1)
        self.body(s.body, depth + 1)
        for obj in defined:
            self.names.undefine(obj)

    def stmt_BufferStore(self, s: BufferStore, depth: int) -> None:
        self.emit(depth, f"{self.p.load(s.buffer, s.indices)} = {self.p(s.value)}")

    def stmt_Evaluate(self, s: Evaluate, depth: int) -> None:
        v = s.value
        info = intrinsic(v.op) if isinstance(v, Call) else None
        if info is not None and info.printed == STATEMENT:
            self.emit(depth, self.p(v))
        else:
            self.emit(depth, f"T.evaluate({self.p(v)})")

    def stmt_LetStmt(self, s: LetStmt, depth: int) -> None:
        value = self.p(s.value)
        name = self.names.define(s.var, s.var.name)
        self.emit(depth, f"{name}: T.{s.var.dtype} = {value}")
        views = self.declare_views(s.var, name, depth) if s.var.dtype.is_handle else []
        self.frame.extend([s.var, *views])
        self.stmt(s.body, depth)

    def stmt_AssertStmt(self, s: AssertStmt, depth: int) -> None:
        self.emit(depth, f"assert {self.p(s.condition)}, {_str(s.message)}")
        self.stmt(s.body, depth)

    def stmt_IfThenElse(self, s: IfThenElse, depth: int) -> None:
        self.emit(depth, f"if {self.p(s.condition)}:")
        self.body(s.then_case, depth + 1)
        if s.else_case is not None:
            self.emit(depth, "else:")
            self.body(s.else_case, depth + 1)

    def stmt_While(self, s: While, depth: int) -> None:
        self.emit(depth, f"while {self.p(s.condition)}:")
        self.body(s.body, depth + 1)

    def stmt_AttrStmt(self, s: AttrStmt, depth: int) -> None:
        if s.key == DEVICE_ENTRY and s.node is None:
            self.emit(depth, "T.device_entry()")
            self.stmt(s.body, depth)
            return
        node = s.node
        if isinstance(node, (PrimExpr, Var)):
            node_text = self.p(node)
        elif isinstance(node, Buffer):
            node_text = self.names.get(node, node.name)
        elif isinstance(node, str):
            node_text = _str(node)
        else:
            node_text = "None"
        self.emit(depth, f"with T.attr({node_text}, {_str(s.key)}, {self.p(s.value)}):")
        self.body(s.body, depth + 1)

    def stmt_Allocate(self, s: Allocate, depth: int) -> None:
        b = s.buffer
        if b.scope == "event":
            args = f"{self.shape_tuple(b.shape)}"
            if s.init is not None:
                args += f", init={self.p(s.init)}"
            self.emit(depth, f"{self.names.define(b, b.name)} = T.event_tensor({args})")
        else:
            text = self.buffer_args(b)
            self.emit(depth, f"{self.names.define(b, b.name)} = T.decl_buffer({text})")
        views = self.buffer_defined(b, depth)
        self.frame.extend([b, *views])
        self.stmt(s.body, depth)

    def stmt_For(self, s: For, depth: int) -> None:
        loops = [s]
        while self.grid_continues(loops[-1], loops):
            loops.append(loops[-1].body)  # type: ignore[arg-type]
        if len(loops) > 1:
            extents = ", ".join(self.p(lp.extent) for lp in loops)
            names = ", ".join(self.names.define(lp.loop_var, lp.loop_var.name) for lp in loops)
            for lp in loops:
                self.loop_dom[id(lp.loop_var)] = (lp.min, lp.extent)
            self.emit(depth, f"for {names} in T.grid({extents}):")
            self.body(loops[-1].body, depth + 1)
            for lp in loops:
                self.names.undefine(lp.loop_var)
            return
        head = self.loop_head(s)
        name = self.names.define(s.loop_var, s.loop_var.name)
        self.loop_dom[id(s.loop_var)] = (s.min, s.extent)
        self.emit(depth, f"for {name} in {head}:")
        self.body(s.body, depth + 1)
        self.names.undefine(s.loop_var)

    @staticmethod
    def plain_serial(s: Stmt) -> bool:
        return (isinstance(s, For) and s.kind == ForKind.SERIAL and not s.annotations
                and isinstance(s.min, IntImm) and s.min.value == 0 and s.thread_tag is None)

    def grid_continues(self, outer: For, loops: list[For]) -> bool:
        if not self.plain_serial(outer) or not self.plain_serial(outer.body):
            return False
        inner = outer.body
        assert isinstance(inner, For)
        used = {id(v) for v in free_vars(inner.extent)}
        return not any(id(lp.loop_var) in used for lp in loops)

    def loop_head(self, s: For) -> str:
        p = self.p
        lo_zero = isinstance(s.min, IntImm) and s.min.value == 0
        extra = ""
        if s.annotations:
            extra = f", annotations={self.attr_dict(s.annotations)}"
        if s.kind == ForKind.THREAD_BINDING:
            rng = p(s.extent) if lo_zero else f"{p(s.min)}, {_range_stop(p, s.min, s.extent)}"
            return f"T.thread_binding({rng}, thread={_str(s.thread_tag or '')}{extra})"
        rng = p(s.extent) if lo_zero else f"{p(s.min)}, {_range_stop(p, s.min, s.extent)}"
        if s.kind == ForKind.SERIAL and not extra:
            return f"range({rng})"
        return f"T.{s.kind.value}({rng}{extra})"

    def stmt_BlockRealize(self, br: BlockRealize, depth: int) -> None:
        b = br.block
        self.emit(depth, f"with T.{self.block_kw}({_str(b.name)}):")
        d = depth + 1
        defined: list[Any] = []
        remap = len(b.iter_vars) > 0 and all(
            self.remappable(iv, val) for iv, val in zip(b.iter_vars, br.iter_values))
        values = [self.p(v) for v in br.iter_values]
        if remap:
            names = [self.names.define(iv.var, iv.var.name) for iv in b.iter_vars]
            kinds = "".join(iv.kind.value for iv in b.iter_vars)
            lhs = ", ".join(names)
            self.emit(d, f'{lhs} = T.axis.remap("{kinds}", [{", ".join(values)}])')
        else:
            kind_name = {IterKind.SPATIAL: "spatial", IterKind.REDUCE: "reduce",
                         IterKind.OPAQUE: "opaque"}
            for iv, val in zip(b.iter_vars, values):
                dom = iv.dom
                if isinstance(dom.min, IntImm) and dom.min.value == 0:
                    dom_text = self.p(dom.extent)
                else:
                    dom_text = f"({self.p(dom.min)}, {_range_stop(self.p, dom.min, dom.extent)})"
                name = self.names.define(iv.var, iv.var.name)
                self.emit(d, f"{name} = T.axis.{kind_name[iv.kind]}({dom_text}, {val})")
        defined.extend(iv.var for iv in b.iter_vars)
        if not (isinstance(br.predicate, IntImm) and br.predicate.value == 1):
            self.emit(d, f"T.where({self.p(br.predicate)})")
        # A buffer of the block that its regions name is declared ahead, as TVM prints it
        ahead = {id(buf): self.names.define(buf, buf.name) for buf in b.alloc_buffers
                 if not isinstance(buf, SparseBuffer) and any_node(
                     (b.reads, b.writes), lambda n, buf=buf: getattr(n, "buffer", None) is buf)}
        for buf in b.alloc_buffers:
            if id(buf) in ahead:
                self.emit(d, f"{ahead[id(buf)]} = T.Buffer({self.buffer_args(buf)})")
        self.emit(d, f"T.reads({', '.join(self.p.region(r) for r in b.reads)})")
        self.emit(d, f"T.writes({', '.join(self.p.region(r) for r in b.writes)})")
        if b.annotations:
            self.emit(d, f"T.{self.block_kw}_attr({self.attr_dict(b.annotations)})")
        for buf in b.alloc_buffers:
            name = ahead.get(id(buf)) or self.names.define(buf, buf.name)
            self.emit(d, f"{name} = {self.alloc_call(buf)}")
            defined.append(buf)
            defined.extend(self.buffer_defined(buf, d))
        for mb in b.match_buffers:
            src = self.p.region(mb.source)
            name = self.names.define(mb.buffer, mb.buffer.name)
            self.emit(d, f"{name} = T.match_buffer({src}, {self.buffer_args(mb.buffer)})")
            defined.append(mb.buffer)
            defined.extend(self.buffer_defined(mb.buffer, d))
        if b.init is not None:
            self.emit(d, "with T.init():")
            self.body(b.init, d + 1)
        self.body(b.body, d)
        for x in defined:
            self.names.undefine(x)

    def stmt_SparseIteration(self, it: SparseIteration, depth: int) -> None:
        names = [self.names.define(iv.var, iv.var.name) for iv in it.sp_iter_vars]
        self.emit(depth, iteration_head(it, lambda x: self.names.get(x, x.name), names))
        if it.annotations:
            self.emit(depth + 1, f"T.iter_attr({self.attr_dict(it.annotations)})")
        if it.init is not None:
            self.emit(depth + 1, "with T.init():")
            self.body(it.init, depth + 2)
        self.body(it.body, depth + 1)
        for iv in it.sp_iter_vars:
            self.names.undefine(iv.var)

    def remappable(self, iv: Any, value: PrimExpr) -> bool:
        if iv.kind == IterKind.OPAQUE or not isinstance(value, Var):
            return False
        dom = self.loop_dom.get(id(value))
        if dom is None:
            return False
        from tirc.ir.structural import same_expr

        return same_expr(dom[0], iv.dom.min) and same_expr(dom[1], iv.dom.extent)

    # ---- graph functions -------------------------------------------------------------

    def sinfo(self, s: StructInfo, in_params: bool = False) -> str:
        if isinstance(s, DTensorSInfo):
            return dtensor_text(s, [self.sym_dim(d, in_params) for d in s.shape or ()])
        if isinstance(s, TensorSInfo):
            parts = []
            if s.shape is not None:
                dims = [self.sym_dim(d, in_params) for d in s.shape]
                parts.append(f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})")
            elif s.ndim >= 0:
                parts.append(f"ndim={s.ndim}")
            if s.dtype is not None:
                parts.append(f"dtype={_str(str(s.dtype))}")
            return f"R.Tensor({', '.join(parts)})"
        if isinstance(s, SparseTensorSInfo):
            dims = ", ".join(self.sym_dim(d, in_params) for d in s.shape)
            parts = [f"({dims})", _str(str(s.dtype)), f"nnz={self.sym_dim(s.nnz, in_params)}"]
            if s.format != "csr":
                parts.append(f"format={_str(s.format)}")
            if s.block:
                parts.append(f"block=({', '.join(str(b) for b in s.block)})")
            if str(s.index_dtype) != "int32":
                parts.append(f"index_dtype={_str(str(s.index_dtype))}")
            return f"R.SparseTensor({', '.join(parts)})"
        if isinstance(s, TupleSInfo):
            return f"R.Tuple({', '.join(self.sinfo(f, in_params) for f in s.fields)})"
        if isinstance(s, ShapeSInfo):
            if s.values is not None:
                return f"R.Shape([{', '.join(self.sym_dim(v, in_params) for v in s.values)}])"
            return f"R.Shape(ndim={s.ndim})"
        if isinstance(s, PrimSInfo):
            if s.value is not None:
                return f"R.Prim(value={self.sym_dim(s.value, in_params)})"
            return f"R.Prim({_str(str(s.dtype))})"
        if isinstance(s, ObjectSInfo):
            return "R.Object"
        raise TypeError(f"cannot print struct info {type(s).__name__}")

    def sym_dim(self, d: PrimExpr, in_params: bool) -> str:
        if in_params and not isinstance(d, IntImm):
            return _str(self.p(d))
        return self.p(d)

    def graph_func(self, f: Function, depth: int) -> list[str]:
        impure = any_node(f.body, lambda n: isinstance(n, GCall) and n.op == "print")
        self.emit(depth, "@R.function(pure=False)" if impure else "@R.function")  # as TVM needs
        params = []
        for v in f.params:
            name = self.names.define(v, v.name)
            ann = f": {self.sinfo(v.struct_info, True)}" if v.struct_info is not None else ""
            params.append(f"{name}{ann}")
        ret = f" -> {self.sinfo(f.ret_struct_info, True)}" if f.ret_struct_info else ""
        self.emit(depth, f"def {f.name}({', '.join(params)}){ret}:")
        d = depth + 1
        if f.attrs:
            self.emit(d, f"R.func_attr({self.attr_dict(f.attrs)})")
        sym = free_vars(*[v.struct_info for v in f.params], f.ret_struct_info)
        for sv in sym:
            self.emit(d, f"{self.names.define(sv, sv.name)} = T.{sv.dtype}()")
        self.seq_expr(f.body, d)
        return self.lines

    def seq_expr(self, body: SeqExpr, depth: int) -> None:
        for blk in body.blocks:
            self.binding_block(blk, depth)
        self.emit(depth, f"return {self.gexpr(body.body)}")

    def binding_block(self, blk: BindingBlock, depth: int,
                      result: tuple[GVar, str] | None = None) -> None:
        """The bindings of a block; `result` names the variable that ends an `if` branch
        after the if's own variable."""
        d = depth
        if blk.is_dataflow:
            self.emit(depth, "with R.dataflow():")
            d = depth + 1
        for bnd in blk.bindings:
            if isinstance(bnd, VarBinding) and isinstance(bnd.value, If):
                same = result is not None and bnd.var is result[0]
                self.if_binding(bnd, d, result[1] if same and result is not None else None)
                continue
            value = self.gexpr(bnd.value)
            if isinstance(bnd, VarBinding) and bnd.var.name == "_" and \
                    isinstance(bnd.value, GCall) and bnd.value.op == "print" and \
                    (result is None or bnd.var is not result[0]):
                self.emit(d, value)  # a side effect, as written: `R.print(x, format=...)`
                continue
            if isinstance(bnd, MatchCast):
                for sv in free_vars(bnd.struct_info):
                    if not self.names.is_defined(sv):
                        self.emit(d, f"{self.names.define(sv, sv.name)} = T.{sv.dtype}()")
                value = f"R.match_cast({value}, {self.sinfo(bnd.struct_info)})"
            if result is not None and bnd.var is result[0]:
                name = result[1]
                self.names.alias(bnd.var, name)
            else:
                name = self.names.define(bnd.var, bnd.var.name)
            sinfo = bnd.var.struct_info
            ann = f": {self.sinfo(sinfo)}" if sinfo is not None and isinstance(
                bnd, VarBinding) else ""
            self.emit(d, f"{name}{ann} = {value}")
        if blk.is_dataflow:
            outs = ", ".join(self.names.get(v, v.name) for v in blk.outputs)
            self.emit(d, f"R.output({outs})")

    def if_binding(self, bnd: VarBinding, depth: int, name: str | None = None) -> None:
        """`var = If(...)` as Relax prints it: `if c:` / `else:`, each branch ending with an
        assignment of the if's variable (named `name` when it ends an outer branch)."""
        e = bnd.value
        assert isinstance(e, If)
        self.emit(depth, f"if {self.gexpr(e.cond)}:")
        if name is None:
            name = self.names.define(bnd.var, bnd.var.name)
        else:
            self.names.alias(bnd.var, name)
        for k, branch in enumerate(e.branches):
            if k:
                self.emit(depth, "else:")
            last = _branch_result(branch)
            for blk in branch.blocks:
                self.binding_block(blk, depth + 1, (last, name) if last is not None else None)
            if last is None:
                sinfo = bnd.var.struct_info
                ann = f": {self.sinfo(sinfo)}" if sinfo is not None else ""
                self.emit(depth + 1, f"{name}{ann} = {self.gexpr(branch.body)}")

    def gexpr(self, e: GraphExpr) -> str:
        if isinstance(e, GVar):
            return self.names.get(e, e.name)
        if isinstance(e, GlobalVar):
            return f"{self.module_name}.{e.name}"
        if isinstance(e, ExternFunc):
            return _str(e.symbol)
        if isinstance(e, Constant) and isinstance(e.value, tuple):
            return f"R.const({_nested_list(e.value, self.attr_value)}, {_str(str(e.dtype))})"
        if isinstance(e, Constant):
            value = self.attr_value(e.value)
            if isinstance(e.value, float) and not math.isfinite(e.value):
                value = f"float({value})"  # TVM's spelling: R.const(float("inf"), "float32")
            return f"R.const({value}, {_str(str(e.dtype))})"
        if isinstance(e, PrimValue):
            return f"R.prim_value({self.p(e.value)})"
        if isinstance(e, StringValue):
            return f"R.str({_str(e.value)})"
        if isinstance(e, ShapeExpr):
            return f"R.shape([{', '.join(self.p(v) for v in e.values)}])"
        if isinstance(e, Tuple):
            items = [self.gexpr(x) for x in e.fields]
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        if isinstance(e, TupleGetItem):
            return f"{self.gexpr(e.tuple_value)}[{e.index}]"
        if isinstance(e, GCall) and e.op in self.functions and get_op(e.op) is None:
            return f"{self.module_name}.{e.op}({', '.join(self.gexpr(a) for a in e.args)})"
        if isinstance(e, GCall):
            args = [self.gexpr(a) for a in e.args]
            if e.op == "print" and len(e.args) == 1 and isinstance(e.args[0], Tuple):
                args = [self.gexpr(a) for a in e.args[0].fields]  # R.print(x, y, format=...)
            if e.op in ("call_tir", "call_tir_inplace") and len(args) == 3:
                if self.syntax == "tirx" and movable_call(e) and \
                        getattr(e.args[0], "name", None) in self.moved:
                    values = [f"R.prim_value({self.p(v)})" for v in e.args[2].values]
                    fields = [self.gexpr(x) for x in e.args[1].fields]  # type: ignore[union-attr]
                    args[1] = f"({', '.join([*fields, *values])})"
                    args.pop()  # TVM 0.27 reads no tir_vars (tirc.ir.tirx_calls)
                else:
                    args[2] = f"tir_vars={args[2]}"
            inplace = e.attrs.get("inplace_indices") if e.op == "call_tir_inplace" else None
            args += [f"{k}={self.attr_value(v)}" for k, v in e.attrs.items()
                     if inplace is None or k != "inplace_indices"]
            if e.sinfo_args:
                outs = [self.sinfo(s) for s in e.sinfo_args]
                joined = outs[0] if len(outs) == 1 else "[" + ", ".join(outs) + "]"
                key = "out_ty" if self.syntax == "tirx" and e.op in OUT_TY_CALLS else "out_sinfo"
                args.append(f"{key}={joined}")
            if inplace is not None:  # after out_sinfo, a list, as TVM prints it
                args.append(f"inplace_indices=[{', '.join(str(i) for i in inplace)}]")
            return f"R.{e.op}({', '.join(args)})"
        raise TypeError(f"cannot print graph expression {type(e).__name__}")


def _branch_result(branch: SeqExpr) -> GVar | None:
    """The variable an `if` branch returns when its last binding (outside a dataflow block)
    binds it: that binding then prints as the assignment of the if's variable."""
    if not branch.blocks or branch.blocks[-1].is_dataflow or not branch.blocks[-1].bindings:
        return None
    last = branch.blocks[-1].bindings[-1]
    if isinstance(last, VarBinding) and last.var is branch.body:
        return last.var
    return None


class SchedulePrinter:
    """Prints `@S.schedule` functions."""

    def __init__(self) -> None:
        self.names = _Names()
        self.p = ExprPrinter(self.names)

    def arg(self, a: Any) -> str:
        if isinstance(a, SchedRef):
            return a.name
        if isinstance(a, SchedLambda):
            params = ", ".join(self.names.define(v, v.name) for v in a.params)
            body = [self.p(x) for x in a.body]
            text = f"({body[0]},)" if len(body) == 1 else f"({', '.join(body)})"
            return f"lambda {params}: {text}"
        if isinstance(a, bool) or a is None:
            return str(a)
        if isinstance(a, int):
            return str(a)
        if isinstance(a, float):
            return format_float(a)
        if isinstance(a, str):
            return _str(a)
        if isinstance(a, tuple):
            items = [self.arg(x) for x in a]
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        if isinstance(a, list):
            return f"[{', '.join(self.arg(x) for x in a)}]"
        if isinstance(a, PrimExpr):
            return self.p(a)
        return _str(str(a))

    def schedule(self, s: Schedule) -> list[str]:
        target = f", target={_str(s.target)}" if s.target is not None else ""
        lines = [f"@S.schedule({_str(s.func_name)}{target})", f"def {s.name}({s.param}):"]
        for ins in s.instrs:
            lines.append(INDENT + self.instr(ins, s.param))
        if not s.instrs:
            lines.append(INDENT + "pass")
        return lines

    def instr(self, ins: SchedInstr, param: str) -> str:
        args = [self.arg(a) for a in ins.args]
        args += [f"{k}={self.arg(v)}" for k, v in ins.kwargs.items()]
        call = f"{param}.{ins.prim}({', '.join(args)})"
        if not ins.outputs:
            return call
        lhs = ", ".join(ins.outputs)
        if ins.unpack and len(ins.outputs) == 1:
            lhs += ","
        return f"{lhs} = {call}"


def check_syntax(syntax: str) -> str:
    """`syntax` if it is one of SYNTAXES, else ValueError."""
    if syntax not in SYNTAXES:
        raise ValueError(f"unknown TVMScript syntax {syntax!r} (expected one of {SYNTAXES})")
    return syntax


def has_blocks(body: Stmt) -> bool:
    """Whether a loop function body holds a block (TVM 0.27 then wants `s_tir=True`)."""
    return any_node(body, lambda n: isinstance(n, BlockRealize))


def header_lines(mod: IRModule, syntax: str) -> list[str]:
    """The canonical `# from tvm.script import ...` lines for `mod` in `syntax`."""
    lines = ["# from tvm.script import ir as I",
             f"# from tvm.script import {'tirx' if syntax == 'tirx' else 'tir'} as T"]
    if mod.graph_funcs():
        lines.append("# from tvm.script import relax as R")
    return lines


def _module_lines(mod: IRModule, syntax: str) -> Iterator[str]:
    yield from header_lines(mod, syntax)
    yield ""
    yield "@I.ir_module"
    yield f"class {mod.name}:"
    first = True
    if mod.global_infos:
        yield INDENT + global_infos_text(mod.global_infos)
        first = False
    moved = moved_size_params(mod) if syntax == "tirx" else {}
    for name, func in mod.functions.items():
        if not first:
            yield ""
        first = False
        if name in moved:
            func = with_sizes_moved(func, moved[name])  # type: ignore[arg-type]
        yield from print_function(func, 1, mod.name, syntax, frozenset(mod.functions),
                                  frozenset(moved))
    if not mod.functions:
        yield INDENT + "pass"
    for s in mod.schedules:
        yield ""
        yield ""
        yield from SchedulePrinter().schedule(s)


@deep
def print_function(func: PrimFunc | Function, depth: int = 0,
                   module_name: str = "Module", syntax: str = "classic",
                   functions: frozenset[str] = frozenset(),
                   moved: frozenset[str] = frozenset()) -> list[str]:
    """The lines of one function at the given indentation depth, in `syntax`; `moved`: the
    loop functions whose calls pass their sizes in the argument tuple (tirx)."""
    fp = FuncPrinter(module_name, syntax, functions)
    fp.moved = moved
    if isinstance(func, PrimFunc):
        return fp.prim_func(func, depth)
    return fp.graph_func(func, depth)


@deep
def print_module(mod: IRModule, syntax: str | None = None) -> str:
    """The whole module as `.tir` text, ending with a newline, in `syntax`: "classic"
    (`tir`, `T.block`) or "tirx" (`tirx`, `T.sblock`, `@T.prim_func(s_tir=True)`); by
    default the spelling the module was read in (`mod.syntax`)."""
    return "\n".join(_module_lines(mod, check_syntax(syntax or mod.syntax))) + "\n"


@deep
def print_node(node: Any) -> str:
    """Any node as text, for debugging and error messages."""
    if isinstance(node, IRModule):
        return print_module(node)
    if isinstance(node, (PrimFunc, Function)):
        return "\n".join(print_function(node)) + "\n"
    if isinstance(node, Schedule):
        return "\n".join(SchedulePrinter().schedule(node)) + "\n"
    fp = FuncPrinter()
    if isinstance(node, Stmt):
        fp.stmt(node, 0)
        return "\n".join(fp.lines) + "\n"
    if isinstance(node, StructInfo):
        return fp.sinfo(node)
    if isinstance(node, GraphExpr):
        return fp.gexpr(node)
    return fp.p(node)
