"""Statement code generation: stores, control flow, loops and allocations.

Loops are emitted as header/body/latch blocks with a phi for the loop variable. `unroll` loops
carry `llvm.loop` unroll metadata, a `vectorized` loop the vectorizer passes left scalar carries a
vectorize hint, and `parallel` loops are outlined into an OpenMP region (see parallel.py). A
break or continue (tirc.ir.loop_jumps) branches to the exit or the latch of the loop it targets.
A serial loop of one or two iterations over a small loop-free body is written out as copies
of the body (`straight_line_trips`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from llvmlite import ir
from tirc.backends.llvm import loop_metadata
from tirc.backends.llvm.entry_checks import tensor_checker
from tirc.backends.llvm.expr import ExprCodegen
from tirc.backends.llvm.intrinsics import LIBM_FUNCTIONS
from tirc.backends.llvm.memory import const_int
from tirc.backends.llvm.types import I64, PTR, const_like, elem_align, mem_type, to_memory
from tirc.ir import intrinsics as intrin
from tirc.ir.attrs import (
    COMPUTE_SCOPE,
    OUTLINED,
    PRAGMA_UNROLL,
    STORAGE_KIND,
    THREAD_EXTENT,
    VIRTUAL_THREAD,
)
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import DType
from tirc.ir.expr import (
    BinOp,
    BufferLoad,
    Call,
    Cast,
    IntImm,
    PrimExpr,
    StringImm,
    Var,
    binop,
    cast,
)
from tirc.ir.gpu.threads import is_vthread_loop
from tirc.ir.loop_jumps import JUMP_TARGET_KINDS, escaping_loop_jumps, jump_kind
from tirc.ir.node import Node
from tirc.ir.rebind import used_vars
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    While,
)
from tirc.ir.visitor import post_order_visit

# Calls LLVM's vectorizer cannot widen: C functions, and the math that lowers to scalar libm.
_SCALAR_CALLS = frozenset(LIBM_FUNCTIONS) | {intrin.CALL_EXTERN, intrin.CALL_PURE_EXTERN}


# A serial loop of at most this many iterations whose body is small and holds no loop, no
# allocation and no break or continue is emitted as copies of its body (`straight_line_trips`).
STRAIGHT_LINE_TRIPS = 2
STRAIGHT_LINE_NODES = 256


def straight_line_trips(s: For) -> range | None:
    """The loop variable's values when `s` is emitted as straight-line code, else None.

    LLVM's full unrolling turns such a loop into straight-line code at -O1 and above anyway,
    but only after its loop passes (rotation, induction-variable simplification, unrolling)
    have run on it: for the small vector loops a vectorized schedule leaves
    (`for j_o in range(2)` around a 16-lane store) that work was about 40% of LLVM's time for
    samples/matmul.tir. A body with an allocation stays a loop, so that its storage is not
    duplicated."""
    extent, lo = const_int(s.extent), const_int(s.min)
    if extent is None or lo is None or extent > STRAIGHT_LINE_TRIPS or s.annotations:
        return None
    nodes = 0
    kept = False  # a loop, an allocation or a jump: the loop stays a loop

    def count(n: Node) -> None:
        nonlocal nodes, kept
        nodes += 1
        kept = kept or isinstance(n, (For, While, Allocate)) or jump_kind(n) is not None

    post_order_visit(s.body, count)
    if kept or nodes > STRAIGHT_LINE_NODES:
        return None
    return range(lo, lo + max(0, extent))


def unvectorizable(body: Stmt) -> bool:
    """True when `body` holds a store under an `if` (LLVM's vectorizer cannot turn that branch
    into a select), a loop of its own (it vectorizes innermost loops only) or a call of a C or
    libm function: a loop forced to vectorize would then only earn a 'loop not vectorized'
    warning."""
    found: list[bool] = []

    def visit(n: object) -> None:
        if found:
            return
        if isinstance(n, (For, While)) or isinstance(n, Call) and n.op in _SCALAR_CALLS:
            found.append(True)
        elif isinstance(n, IfThenElse):
            post_order_visit(n, lambda m: found.append(True) if isinstance(m, BufferStore)
                             else None)

    post_order_visit(body, visit)
    return bool(found)


def _consecutive(index: PrimExpr, var: Var) -> bool:
    """Whether `index` is `var` (or its cast) plus something that does not depend on it."""
    if var not in used_vars(index):
        return True
    if isinstance(index, Cast):
        return _consecutive(index.value, var)
    if index is var:
        return True
    if isinstance(index, BinOp) and index.op in ("add", "sub"):
        a_moves, b_moves = var in used_vars(index.a), var in used_vars(index.b)
        if a_moves != b_moves and (index.op == "add" or a_moves):
            return _consecutive(index.a if a_moves else index.b, var)
    return False


def gathers(body: Stmt, var: Var) -> bool:
    """True when `body` loads or stores at an index that is not `var` plus an invariant (a
    gather or scatter, `A[i * 11 % 16]`, or a load under `T.if_then_else` that would need a
    masked gather): LLVM's cost model often declines those, and a loop forced to vectorize then
    earns a 'loop not vectorized' warning."""
    found: list[bool] = []

    def visit(n: object) -> None:
        if not found and isinstance(n, BufferLoad | BufferStore) and \
                not all(_consecutive(i, var) for i in n.indices):
            found.append(True)

    post_order_visit(body, visit)
    return bool(found)


# The unroll count asked of LLVM for a loop of symbolic extent: a plain "unroll.enable" there
# needs runtime unrolling, which LLVM refuses for a loop that breaks or for the scalar remainder
# its vectorizer leaves, and then prints "loop not unrolled" warnings; a count it always honours.
RUNTIME_UNROLL = 4

# Without storage-rewrite's classification, allocations of at most this many bytes with a
# constant size live on the stack.
STACK_LIMIT = 64 * 1024
HEAP_ALIGN = 64

# Error codes an entry point returns (0 is success).
ERR_ARGUMENT = -1
ERR_OUT_OF_MEMORY = -2
ERR_ASSERT = -3
ERR_BOUNDS = -5   # -4 is the megakernel watchdog (events.py)

# The unroll pass marks loops it leaves to LLVM with this annotation (True, or a count).
# storage-rewrite's `T.attr(buffer, "storage_kind", "stack" | "heap")` just inside an Allocate.


def c_format_escape(text: str) -> str:
    """A literal message as a printf format string."""
    return text.replace("%", "%%")


class StmtCodegen(ExprCodegen):
    """Emits statements; `fail`, `alloca`, the parallel and compute-scope hooks come from
    the function code generator."""

    parallel_depth: int

    def fail(self, code: int | ir.Value) -> None:
        raise NotImplementedError

    def alloca(self, ty: ir.Type, align: int) -> ir.Value:
        raise NotImplementedError

    def emit_parallel_for(self, s: For) -> None:
        raise NotImplementedError

    def emit_compute_scope(self, s: AttrStmt) -> None:
        raise NotImplementedError

    def emit_task_scope(self, s: AttrStmt) -> None:
        raise NotImplementedError

    def stmt(self, s: Stmt) -> None:
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            hint = " (run lower-blocks first)" if type(s).__name__ in ("Block", "BlockRealize") \
                else ""
            raise CompileError(f"codegen: unsupported statement {type(s).__name__}{hint}", s.span)
        method(s)

    def stmt_SeqStmt(self, s: SeqStmt) -> None:
        for x in s.seq:
            self.stmt(x)

    def stmt_LetStmt(self, s: LetStmt) -> None:
        self.env[s.var] = self.expr_as(s.value, s.var.dtype) if not s.var.dtype.is_handle \
            else self.expr(s.value)
        self.stmt(s.body)

    def stmt_AttrStmt(self, s: AttrStmt) -> None:
        if s.key == COMPUTE_SCOPE:
            self.emit_compute_scope(s)
        elif s.key in OUTLINED:
            self.emit_task_scope(s)
        elif s.key in (THREAD_EXTENT, VIRTUAL_THREAD):
            with self.jump_barrier("a thread launch"):
                self.stmt(s.body)
        else:
            self.stmt(s.body)

    # ---- break and continue ----------------------------------------------------------
    # The loops around the statement being emitted, innermost last: (continue block, break
    # block, heap allocations open when the loop began) for a loop a jump may target, or the
    # words for what a jump may not leave (a parallel loop, a thread launch). A child
    # codegen (an outlined region) starts with none: a jump cannot leave its function.

    def _jump_targets(self) -> list[tuple[ir.Block, ir.Block, int] | str]:
        targets = self.__dict__.get("_loop_jump_targets")
        if targets is None:
            targets = self.__dict__["_loop_jump_targets"] = []
        return targets

    def _heap_scopes(self) -> list[ir.Value]:
        """The heap allocations open around the statement being emitted (freed in order)."""
        scopes = self.__dict__.get("_open_heap")
        if scopes is None:
            scopes = self.__dict__["_open_heap"] = []
        return scopes

    @contextlib.contextmanager
    def jump_target(self, cont: ir.Block | None, brk: ir.Block | None,
                    refused: str = "") -> Iterator[None]:
        """Jumps in the body go to `cont` / `brk` (or are refused, naming the loop)."""
        targets = self._jump_targets()
        targets.append(refused if cont is None or brk is None
                       else (cont, brk, len(self._heap_scopes())))
        try:
            yield
        finally:
            targets.pop()

    def jump_barrier(self, what: str) -> contextlib.AbstractContextManager[None]:
        """Jumps in the body may not leave it (`what` names it)."""
        return self.jump_target(None, None, f"cannot leave {what}")

    def emit_loop_jump(self, s: Evaluate) -> None:
        """`T.break_loop()` / `T.continue_loop()`: free the heap storage allocated inside the
        target loop's body, branch, and go on in an unreachable block."""
        kind = jump_kind(s)
        what = "'break'" if kind == intrin.BREAK_LOOP else "'continue'"
        targets = self._jump_targets()
        if not targets:
            raise CompileError(f"codegen: {what} outside a loop", s.span)
        target = targets[-1]
        if isinstance(target, str):
            raise CompileError(f"codegen: {what} {target}", s.span)
        cont, brk, depth = target
        free = self.ctx.declare("free", ir.FunctionType(ir.VoidType(), [PTR]))
        for ptr in reversed(self._heap_scopes()[depth:]):
            self.b.call(free, [ptr])
        self.b.branch(brk if kind == intrin.BREAK_LOOP else cont)
        self.b.position_at_end(self.b.append_basic_block(f"after.{kind}"))

    def stmt_Evaluate(self, s: Evaluate) -> None:
        if jump_kind(s) is not None:
            self.emit_loop_jump(s)
        elif isinstance(s.value, Call) and s.value.op in (intrin.CHECK, intrin.BOUNDS_CHECK):
            self.emit_check(s.value, ERR_BOUNDS if s.value.op == intrin.BOUNDS_CHECK
                            else ERR_ARGUMENT)
        elif isinstance(s.value, Call) and s.value.op == intrin.CHECK_TENSOR:
            self.emit_tensor_check(s.value)
        elif isinstance(s.value, Call):
            self.expr(s.value)

    def stmt_AssertStmt(self, s: AssertStmt) -> None:
        self.guard(self.expr(s.condition), c_format_escape(s.message), [], ERR_ASSERT)
        self.stmt(s.body)

    # ---- failures --------------------------------------------------------------------

    def guard(self, ok: ir.Value, fmt: str | None,
              values: list[ir.Value] | Callable[[], list[ir.Value]], code: int) -> None:
        """Continue when `ok` holds; otherwise set the error message and return `code` (with
        `fmt` None, what failed has set the message already).

        `values` (the message's printf arguments) may be a function, so that they are computed
        only on the failing path (reading strides that may be NULL, for instance).
        """
        b = self.b
        ok_bb = b.append_basic_block("check.ok")
        fail_bb = b.append_basic_block("check.fail")
        br = b.cbranch(ok, ok_bb, fail_bb)
        br.set_weights([1 << 20, 1])
        b.position_at_end(fail_bb)
        if fmt is not None:
            self.ctx.set_error(b, fmt, values() if callable(values) else values)
        self.fail(code)
        b.position_at_end(ok_bb)

    def emit_check(self, call: Call, code: int = ERR_ARGUMENT) -> None:
        """`tirc.check(cond, "format", values...)`: an entry point's argument check (and
        `tirc.bounds_check`, the same with its own error code)."""
        cond, fmt = call.args[0], call.args[1]
        if not isinstance(fmt, StringImm):
            raise CompileError("codegen: tirc.check needs a format string", call.span)
        self.guard(self.expr(cond), fmt.value,
                   lambda: [self._printf_value(v) for v in call.args[2:]], code)

    def emit_tensor_check(self, call: Call) -> None:
        """`tirc.check_tensor(h, prefix, dtype, ndim, code, bits, lanes, device, elem_bytes)`:
        one call to the module's checking function for that rank
        (backends/llvm/entry_checks.py), which sets the message."""
        h, prefix, dtype, ndim = call.args[:4]
        if not (isinstance(prefix, StringImm) and isinstance(dtype, StringImm)
                and isinstance(ndim, IntImm) and len(call.args) == 9):
            raise CompileError("codegen: tirc.check_tensor needs a prefix and a dtype string, "
                               "a constant rank and five values", call.span)
        values = [self.expr_as(v, DType("int", 32)) for v in call.args[4:8]]
        elem = self.expr_as(call.args[8], DType("int", 64))
        failed = self.b.call(tensor_checker(self.ctx, ndim.value), [
            self.expr(h), self.ctx.string(prefix.value), self.ctx.string(dtype.value), *values,
            elem])
        self.guard(self.b.icmp_signed("==", failed, ir.Constant(failed.type, 0)), None, [],
                   ERR_ARGUMENT)

    def _printf_value(self, e: PrimExpr) -> ir.Value:
        v = self.expr(e)
        if e.dtype.is_handle:
            return v
        if e.dtype.is_float:
            return self.expr_as(e, DType("float", 64))
        return self.expr_as(e, DType("int" if e.dtype.kind != "uint" else "uint", 64))

    # ---- control flow ----------------------------------------------------------------

    def stmt_IfThenElse(self, s: IfThenElse) -> None:
        b = self.b
        cond = self.expr(s.condition)
        then_bb = b.append_basic_block("if.then")
        end_bb = b.append_basic_block("if.end")
        else_bb = b.append_basic_block("if.else") if s.else_case is not None else end_bb
        b.cbranch(cond, then_bb, else_bb)
        b.position_at_end(then_bb)
        self.stmt(s.then_case)
        b.branch(end_bb)
        if s.else_case is not None:
            b.position_at_end(else_bb)
            self.stmt(s.else_case)
            b.branch(end_bb)
        b.position_at_end(end_bb)

    def stmt_While(self, s: While) -> None:
        b = self.b
        head = b.append_basic_block("while.cond")
        body = b.append_basic_block("while.body")
        end = b.append_basic_block("while.end")
        b.branch(head)
        b.position_at_end(head)
        b.cbranch(self.expr(s.condition), body, end)
        b.position_at_end(body)
        with self.jump_target(head, end):
            self.stmt(s.body)
        b.branch(head)
        b.position_at_end(end)

    def stmt_For(self, s: For) -> None:
        if is_vthread_loop(s):
            raise CompileError(f"codegen: loop '{s.loop_var.name}' is bound to virtual thread "
                               f"'{s.thread_tag}', which inject-vthread makes a plain loop: "
                               "the pipeline must run inject-vthread", s.span)
        if s.kind == ForKind.THREAD_BINDING:
            raise CompileError(f"codegen: loop '{s.loop_var.name}' is bound to GPU thread "
                               f"'{s.thread_tag}', which the CPU target cannot run", s.span)
        if s.kind == ForKind.PARALLEL and self.parallel_depth == 0:
            self.emit_parallel_for(s)
            return
        md = None
        pragma = s.annotations.get(PRAGMA_UNROLL)
        if isinstance(pragma, int) and not isinstance(pragma, bool) and pragma > 1:
            md = loop_metadata.unroll_count(self.ctx.module, pragma)
        elif isinstance(pragma, int) and not isinstance(pragma, bool) and pragma == 0:
            md = loop_metadata.unroll_disable(self.ctx.module)
        elif pragma:
            md = loop_metadata.unroll_enable(self.ctx.module) if const_int(s.extent) is not None \
                else loop_metadata.unroll_count(self.ctx.module, RUNTIME_UNROLL)
        elif s.kind == ForKind.UNROLLED:
            md = loop_metadata.unroll_full(self.ctx.module) if const_int(s.extent) is not None \
                else loop_metadata.unroll_count(self.ctx.module, RUNTIME_UNROLL)
        elif s.kind == ForKind.VECTORIZED and not unvectorizable(s.body) and \
                not gathers(s.body, s.loop_var):
            md = loop_metadata.vectorize_enable(self.ctx.module)
        dt = s.loop_var.dtype
        trips = straight_line_trips(s) if md is None and s.kind == ForKind.SERIAL else None
        if trips is not None:
            self.straight_line_loop(s.loop_var, trips, s.body)
            return
        begin = self.expr_as(s.min, dt)
        end = self.b.add(begin, self.expr_as(s.extent, dt))
        refused = "" if s.kind in JUMP_TARGET_KINDS else \
            f"in a {s.kind.value} loop (only a serial loop can be left or continued early)"
        self.serial_loop(s.loop_var, begin, end, lambda: self.stmt(s.body), md,
                         jumps=bool(escaping_loop_jumps(s.body)), refused=refused)

    def straight_line_loop(self, var: Var, trips: range, body: Stmt) -> None:
        """`body` once per value of `trips` (what `straight_line_trips` gave for its loop),
        with the loop variable `var` that constant in each copy."""
        old = self.env.get(var)
        for value in trips:
            self.env[var] = ir.Constant(ir.IntType(var.dtype.bits), value)
            self.stmt(body)
        if old is None:
            self.env.pop(var, None)
        else:
            self.env[var] = old

    def serial_loop(self, var: Var, begin: ir.Value, end: ir.Value, body: Callable[[], None],
                    md: ir.values.MDValue | None = None, jumps: bool = False,
                    refused: str = "") -> None:
        """`for var in [begin, end): body()` with the loop variable as a phi. With `jumps`
        (a break or continue in the body targets this loop), the increment has a block of
        its own, where a continue goes; a break goes to the exit. Without, a jump in
        `body()` is refused (`refused` says why) unless it targets a loop inside."""
        b = self.b
        pre = b.block
        head = b.append_basic_block(f"for.{var.name}")
        body_bb = b.append_basic_block(f"for.{var.name}.body")
        exit_bb = b.append_basic_block(f"for.{var.name}.end")
        b.branch(head)
        b.position_at_end(head)
        phi = b.phi(begin.type, name=var.name)
        phi.add_incoming(begin, pre)
        signed = var.dtype.kind != "uint"
        cond = b.icmp_signed("<", phi, end) if signed else b.icmp_unsigned("<", phi, end)
        b.cbranch(cond, body_bb, exit_bb)
        b.position_at_end(body_bb)
        old = self.env.get(var)
        self.env[var] = phi
        latch_bb = b.append_basic_block(f"for.{var.name}.latch") if jumps and not refused \
            else None
        with self.jump_target(latch_bb, exit_bb if latch_bb is not None else None,
                              refused or "cannot leave this loop"):
            body()
        if latch_bb is not None:
            b.branch(latch_bb)
            b.position_at_end(latch_bb)
        if old is None:
            del self.env[var]
        else:
            self.env[var] = old
        nxt = b.add(phi, const_like(phi.type, 1), flags=["nsw"] if signed else ["nuw"])
        latch = b.block
        br = b.branch(head)
        if md is not None:
            br.set_metadata("llvm.loop", md)
        phi.add_incoming(nxt, latch)
        b.position_at_end(exit_bb)

    # ---- storage ---------------------------------------------------------------------

    def stmt_Allocate(self, s: Allocate) -> None:
        buf = s.buffer
        body = s.body
        kind = None
        if isinstance(body, AttrStmt) and body.key == STORAGE_KIND and body.node is buf:
            kind = body.value.value if isinstance(body.value, StringImm) else None
            body = body.body
        count = self._element_count(buf)
        ety = mem_type(buf.dtype)
        esize = 1 if buf.dtype.is_bool else buf.dtype.bytes
        const_count = const_int(count)
        fits = const_count is not None and const_count * esize <= STACK_LIMIT
        on_stack = fits if kind is None else (kind == "stack" and const_count is not None)
        b = self.b
        if on_stack:
            ptr = self.alloca(ir.ArrayType(ety, max(1, const_count or 0)), HEAP_ALIGN)
        else:
            nbytes = b.mul(self.expr_as(count, DType("int", 64)), ir.Constant(I64, esize))
            # aligned_alloc wants a multiple of the alignment; round up, and never ask for 0.
            rounded = b.and_(b.add(nbytes, ir.Constant(I64, 2 * HEAP_ALIGN - 1)),
                             ir.Constant(I64, -HEAP_ALIGN))
            alloc = self.ctx.declare("aligned_alloc", ir.FunctionType(PTR, [I64, I64]))
            ptr = b.call(alloc, [ir.Constant(I64, HEAP_ALIGN), rounded])
            self.guard(b.icmp_unsigned("!=", ptr, ir.Constant(PTR, None)),
                       f"out of memory allocating %lld bytes for buffer '{buf.name}'",
                       [nbytes], ERR_OUT_OF_MEMORY)
        self.env[buf.data] = ptr
        if s.init is not None:
            self._fill(buf, count, s.init)
        if not on_stack:
            self._heap_scopes().append(ptr)
        try:
            self.stmt(body)
        finally:
            if not on_stack:
                self._heap_scopes().pop()
        if not on_stack:
            free = self.ctx.declare("free", ir.FunctionType(ir.VoidType(), [PTR]))
            b.call(free, [ptr])
        del self.env[buf.data]

    def _element_count(self, buf: Buffer) -> PrimExpr:
        count: PrimExpr = IntImm(1, DType("int", 64))
        for dim in buf.shape:
            c, d = const_int(count), const_int(dim)
            if c is not None and d is not None:
                count = IntImm(c * d, DType("int", 64))
            else:
                count = binop("mul", count, cast("int64", dim))
        return count

    def _fill(self, buf: Buffer, count: PrimExpr, init: PrimExpr) -> None:
        i = Var("fill", DType("int", 64))
        value = to_memory(self.b, self.expr_as(init, buf.dtype), buf.dtype)
        ptr = self.env[buf.data]

        def body() -> None:
            addr = self.b.gep(ptr, [self.env[i]], source_etype=mem_type(buf.dtype))
            self.b.store(value, addr, align=elem_align(buf.dtype))

        self.serial_loop(i, ir.Constant(I64, 0), self.expr_as(count, DType("int", 64)), body)

