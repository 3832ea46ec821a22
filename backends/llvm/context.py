"""The LLVM module being built: declarations, string constants and the error message buffer.

Globals are handed out as opaque `ptr` constants: llvmlite types a global's address by its
value type, which would not compare equal to the `ptr` parameters they are passed to.
"""

from __future__ import annotations

from llvmlite import ir
from tirc.backends.llvm.types import I8, I32, I64, PTR

ERROR_BUFFER_SIZE = 1024


def as_ptr(g: ir.GlobalValue) -> ir.Constant:
    """The address of a global (variable or function) as a value of type `ptr` exactly."""
    return ir.FormattedConstant(PTR, g.get_reference())


class ModuleContext:
    """One `llvmlite.ir.Module` plus the globals every function of it shares."""

    def __init__(self, name: str, triple: str = "", data_layout: str = "") -> None:
        self.module = ir.Module(name=name)
        if triple:
            self.module.triple = triple
        if data_layout:
            self.module.data_layout = data_layout
        self._strings: dict[str, ir.Constant] = {}
        self._names: dict[str, int] = {}
        self._error_buffer: ir.Constant | None = None
        self._team_error: ir.Constant | None = None
        # The internal function of each directly called loop function, by its IR name.
        self.prim_functions: dict[str, ir.Function] = {}
        # Set when a parallel loop calls into the OpenMP runtime (the link needs -fopenmp).
        self.uses_openmp = False
        # Float multiply and add may fuse into FMA (`-fp-contract=off` in the target turns it off).
        self.fp_contract = True
        # Functions called by dotted names (`R.call_dps_packed("env.relu", ...)`): the slot
        # array the loader fills (tirc.backends.llvm.extern_call) and each name's slot.
        self.extern_slots: dict[str, int] = {}
        self.extern_slot_array: ir.GlobalVariable | None = None

    def unique_name(self, base: str) -> str:
        """A fresh symbol name starting with `base`."""
        n = self._names.get(base, 0)
        self._names[base] = n + 1
        return base if n == 0 and base not in self.module.globals else f"{base}.{n}"

    def declare(self, name: str, fnty: ir.FunctionType) -> ir.Function:
        """The function `name` (an LLVM intrinsic or a C function), declared once."""
        existing = self.module.globals.get(name)
        if isinstance(existing, ir.Function):
            return existing
        return ir.Function(self.module, fnty, name=name)

    def string(self, text: str) -> ir.Constant:
        """A `ptr` to a private NUL-terminated constant holding `text`."""
        if text in self._strings:
            return self._strings[text]
        data = bytearray(text.encode("utf-8")) + b"\0"
        ty = ir.ArrayType(I8, len(data))
        g = ir.GlobalVariable(self.module, ty, name=self.unique_name(".str"))
        g.linkage = "private"
        g.global_constant = True
        g.unnamed_addr = True
        g.initializer = ir.Constant(ty, data)
        self._strings[text] = as_ptr(g)
        return self._strings[text]

    @property
    def error_buffer(self) -> ir.Constant:
        """The thread-local buffer holding the last error message (`tirc_last_error`)."""
        if self._error_buffer is None:
            ty = ir.ArrayType(I8, ERROR_BUFFER_SIZE)
            g = ir.GlobalVariable(self.module, ty, name="tirc.error_message")
            g.linkage = "internal"
            g.storage_class = "thread_local"
            g.initializer = ir.Constant(ty, None)
            self._error_buffer = as_ptr(g)
        return self._error_buffer

    @property
    def team_error(self) -> ir.Constant:
        """A thread-local pointer to the error word of the megakernel team the thread works
        in (NULL outside one): a waiting worker gives up once another worker has failed."""
        if self._team_error is None:
            g = ir.GlobalVariable(self.module, PTR, name="tirc.team_error")
            g.linkage = "internal"
            g.storage_class = "thread_local"
            g.initializer = ir.Constant(PTR, None)
            self._team_error = as_ptr(g)
        return self._team_error

    def snprintf(self) -> ir.Function:
        return self.declare("snprintf", ir.FunctionType(I32, [PTR, I64, PTR], var_arg=True))

    def set_error(self, b: ir.IRBuilder, fmt: str, values: list[ir.Value]) -> None:
        """Format a message into this thread's error buffer (printf-style, C's snprintf)."""
        b.call(self.snprintf(), [self.error_buffer, ir.Constant(I64, ERROR_BUFFER_SIZE),
                                 self.string(fmt), *values])
