"""A whole module to LLVM IR: one exported function per entry point, plus the two ABI helpers
`<library>_last_error()` (this thread's last message) and `<library>_metadata()` (the JSON
description), also exported as `tirc_last_error`/`tirc_metadata` for loaders that look them up
through the library's handle (names chosen by tirc.backends.symbols); a library calling
functions by dotted names also exports `<library>_extern_slots()`, its slot array.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from tirc.backends.llvm.context import ModuleContext, as_ptr
from tirc.backends.llvm.extern_call import declare_extern_slots
from tirc.backends.llvm.function import FunctionCodegen
from tirc.backends.llvm.prim_call import declare_internal, emit_internal
from tirc.backends.llvm.types import I8, I32, PTR
from tirc.backends.symbols import EXTERN_SLOTS, UNPREFIXED_HELPERS, ExportNames
from tirc.ir.analysis.narrow_floats import refuse_narrow_floats
from tirc.ir.attrs import ENTRY, GLOBAL_SYMBOL
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import BufferLoad, Var
from tirc.ir.function import PrimFunc
from tirc.ir.module import IRModule
from tirc.ir.packed_call import slot_symbols
from tirc.ir.prim_call import INTERNAL
from tirc.ir.stmt import Allocate, BufferStore
from tirc.ir.visitor import post_order_visit, remembered_walks


def _buffers_by_data(func: PrimFunc) -> dict[Var, Buffer]:
    out: dict[Var, Buffer] = {}

    def visit(node: Any) -> None:
        if isinstance(node, (BufferLoad, BufferStore, Allocate)):
            out.setdefault(node.buffer.data, node.buffer)

    post_order_visit(func.body, visit)
    return out


def emit_entry(ctx: ModuleContext, func: PrimFunc, names: ExportNames) -> ir.Function:
    """`int32_t <symbol>(DLTensor **args, int32_t num_args)` from a make-entry function."""
    symbol = names.function(str(func.attrs.get(GLOBAL_SYMBOL, func.name)))
    if symbol in ctx.module.globals:
        raise CompileError(f"codegen: two functions export the symbol '{symbol}'", func.span)
    fn = ir.Function(ctx.module, ir.FunctionType(I32, [PTR, I32]), name=symbol)
    # The entry only checks its arguments and calls the outlined compute function: optimising
    # its many cold branches cost a third of LLVM's time on a small module and saved nothing.
    fn.attributes.add("noinline")
    fn.attributes.add("optnone")
    args_var, num_var = func.params
    fn.args[0].name, fn.args[1].name = "args", "num_args"
    cg = FunctionCodegen(ctx, fn, {args_var: fn.args[0], num_var: fn.args[1]},
                         buffers=_buffers_by_data(func))
    cg.stmt(func.body)
    cg.finish(ir.Constant(I32, 0))
    return fn


def _helper(ctx: ModuleContext, name: str, value: ir.Value) -> None:
    """`const char *name(void)` returning `value`."""
    if name in ctx.module.globals:
        raise CompileError(f"codegen: a function is exported as '{name}', the name of the "
                           "library's ABI helper; choose another --symbol-prefix")
    fn = ir.Function(ctx.module, ir.FunctionType(PTR, []), name=name)
    ir.IRBuilder(fn.append_basic_block("entry")).ret(value)


def emit_abi_helpers(ctx: ModuleContext, metadata_json: str, names: ExportNames) -> None:
    """`<library>_last_error`/`<library>_metadata`, and their unprefixed aliases."""
    data = bytearray(metadata_json.encode("utf-8")) + b"\0"
    ty = ir.ArrayType(I8, len(data))
    g = ir.GlobalVariable(ctx.module, ty, name="tirc.metadata_json")
    g.linkage = "private"
    g.global_constant = True
    g.initializer = ir.Constant(ty, data)
    values = {"last_error": ctx.error_buffer, "metadata": as_ptr(g)}
    for what, short in UNPREFIXED_HELPERS.items():
        _helper(ctx, names.helper(what), values[what])
        if short != names.helper(what):
            _helper(ctx, short, values[what])
    if ctx.extern_slot_array is not None:  # `void **<library>_extern_slots(void)`
        _helper(ctx, names.helper(EXTERN_SLOTS), as_ptr(ctx.extern_slot_array))


def codegen_module(mod: IRModule, metadata_json: str, triple: str = "",
                   data_layout: str = "", fp_contract: bool = True,
                   names: ExportNames | None = None) -> ModuleContext:
    """LLVM IR for every entry point of `mod` (run make-entry first), exported as `names`
    says."""
    with remembered_walks():  # the analyses below walk each function a dozen times
        return _codegen_module(mod, metadata_json, triple, data_layout, fp_contract, names)


def _codegen_module(mod: IRModule, metadata_json: str, triple: str, data_layout: str,
                    fp_contract: bool, names: ExportNames | None) -> ModuleContext:
    """`codegen_module`'s work."""
    names = names or ExportNames()
    ctx = ModuleContext(mod.name, triple, data_layout)
    ctx.fp_contract = fp_contract
    declare_extern_slots(ctx, slot_symbols(mod))
    internal = []
    for name, func in mod.functions.items():
        if not isinstance(func, PrimFunc):
            raise CompileError(f"codegen: graph function '{name}' must be lowered to loop "
                               "functions before code generation", func.span)
        if INTERNAL in func.attrs:
            internal.append(func)
            declare_internal(ctx, func)
        elif ENTRY not in func.attrs:
            raise CompileError(f"codegen: function '{name}' is not an entry point "
                               "(run make-entry)", func.span)
    for func in internal:
        refuse_narrow_floats(func, "CPU (LLVM)")
        emit_internal(ctx, func, FunctionCodegen, _buffers_by_data(func))
    for func in mod.functions.values():
        if isinstance(func, PrimFunc) and INTERNAL not in func.attrs:
            refuse_narrow_floats(func, "CPU (LLVM)")
            emit_entry(ctx, func, names)
    emit_abi_helpers(ctx, metadata_json, names)
    return ctx
