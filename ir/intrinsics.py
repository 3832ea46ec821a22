"""The intrinsic table: every `Call` operator that passes, the interpreter and the backends share.

An intrinsic is a `Call(op, args, dtype)` of the loop IR. Each one is declared here once, with:
- `operands`: what each argument is (`float`, `int`, `bool`, `event` for an element `E[i]` of an
  event tensor, `handle`, `str` for a string literal, `any`; `...` repeats the last one,
  a trailing `?` marks an optional one);
- `result`: the dtype of the call (`operand` when it is the operands' dtype, `given` when the
  call states it, or a dtype name);
- `printed`: how the printer writes it: `named` as `T.name(args)`, `statement` as `T.name(args)`
  on a line of its own when it is a whole statement, `intrin` as
  `T.call_intrin("dtype", "name", args)`;
- `interpreted`: the rule of the reference interpreter that runs it (tirc.ir.interpreter.intrin
  and, for the GPU ones, tirc.ir.interpreter.gpu), or None when only a backend runs it (DLTensor
  access in entry points, OpenMP queries) and the interpreter reports it as unsupported;
- `doc`: what it means.

The names are module constants (`EVENT_WAIT`, `LAUNCH_KERNEL`, ...): code that builds or
recognises an intrinsic uses them, never the string. Backends map the names to code (the LLVM
backend's `call_<name>`/`builtin_<name>` methods and math table, the NVPTX backend's tables);
tests/ir/test_intrinsics.py checks that they name intrinsics of this table.
"""

from __future__ import annotations

from dataclasses import dataclass

NAMED = "named"
STATEMENT = "statement"
INTRIN = "intrin"


@dataclass(frozen=True)
class Intrinsic:
    """One intrinsic (see the module docstring for the fields)."""

    name: str
    operands: tuple[str, ...]
    result: str
    printed: str
    interpreted: str | None
    doc: str

    @property
    def arity(self) -> int:
        """The number of required operands (`...` and optional ones not counted)."""
        return sum(1 for o in self.operands if o != "..." and not o.endswith("?"))


INTRINSICS: dict[str, Intrinsic] = {}


def _declare(name: str, operands: tuple[str, ...], result: str, printed: str,
             interpreted: str | None, doc: str) -> str:
    """Add an intrinsic to the table and return its name (the constant code uses)."""
    if name in INTRINSICS:
        raise ValueError(f"intrinsic '{name}' is declared twice")
    INTRINSICS[name] = Intrinsic(name, operands, result, printed, interpreted, doc)
    return name


def intrinsic(name: str) -> Intrinsic | None:
    """The table entry of `name`, or None for an operator that is not an intrinsic."""
    return INTRINSICS.get(name)


# ---- math: one float operand (abs also int), computed in the operand's precision -----------

_UNARY_MATH = {
    "exp": "e to the x", "exp2": "2 to the x", "log": "natural logarithm",
    "log2": "base-2 logarithm", "sqrt": "square root", "rsqrt": "1 / sqrt(x)",
    "tanh": "hyperbolic tangent", "sigmoid": "1 / (1 + exp(-x))", "erf": "error function",
    "abs": "absolute value (integers wrap: abs of the minimum is the minimum)",
    "floor": "round down", "ceil": "round up", "round": "round to nearest, ties to even",
    "trunc": "round toward zero", "sin": "sine", "cos": "cosine",
    "fast_exp": "exp by a polynomial on float32 (docs/fast_math.md); exp elsewhere",
}
for _name, _doc in _UNARY_MATH.items():
    _declare(_name, ("float",), "operand", NAMED, "math", _doc)
POW = _declare("pow", ("float", "float"), "operand", NAMED, "math", "x to the power y")
FMA = _declare("fma", ("float", "float", "float"), "operand", NAMED, "math",
               "x * y + z (one rounding where the target has it)")

# Math intrinsics and their operand counts (what `T.<name>(...)` takes in the language).
MATH_INTRINSICS: dict[str, int] = {n: i.arity for n, i in INTRINSICS.items()
                                   if i.interpreted == "math"}

# ---- values -----------------------------------------------------------------------------

IF_THEN_ELSE = _declare("if_then_else", ("bool", "any", "any"), "operand", NAMED, "select",
                        "the second operand when the first holds, else the third; only the "
                        "chosen one is evaluated")
LIKELY = _declare("likely", ("bool",), "operand", INTRIN, "identity",
                  "its operand; a hint that it usually holds")
MAX_VALUE = _declare("max_value", (), "given", INTRIN, "limit", "the largest value of the dtype")
MIN_VALUE = _declare("min_value", (), "given", INTRIN, "limit",
                     "the smallest (most negative) value of the dtype")
REINTERPRET = _declare("reinterpret", ("any",), "given", INTRIN, "reinterpret",
                       "the operand's bits read as the call's dtype (same width)")
SHIFT_LEFT = _declare("shift_left", ("int", "int"), "operand", INTRIN, "bitwise", "a << b")
SHIFT_RIGHT = _declare("shift_right", ("int", "int"), "operand", INTRIN, "bitwise",
                       "a >> b (arithmetic for signed types)")
BITWISE_AND = _declare("bitwise_and", ("int", "int"), "operand", INTRIN, "bitwise", "a & b")
BITWISE_OR = _declare("bitwise_or", ("int", "int"), "operand", INTRIN, "bitwise", "a | b")
BITWISE_XOR = _declare("bitwise_xor", ("int", "int"), "operand", INTRIN, "bitwise", "a ^ b")
BITWISE_NOT = _declare("bitwise_not", ("int",), "operand", INTRIN, "bitwise", "~a")

# ---- statements with no value -----------------------------------------------------------

ASSUME = _declare("assume", ("bool",), "int32", STATEMENT, "noop",
                  "a fact the compiler may use; does nothing when run")
NOP = _declare("nop", (), "int32", INTRIN, "noop", "does nothing")
STORAGE_SYNC = _declare("tvm_storage_sync", ("str",), "int32", STATEMENT, "noop",
                        "a barrier over the threads of a GPU block for the named storage "
                        "scope (\"shared\"); the GPU interpreter runs it as a barrier")
THREAD_FENCE = _declare("tvm_thread_fence", (), "int32", INTRIN, "noop",
                        "orders this thread's memory operations")

# ---- event tensors and megakernels ------------------------------------------------------

EVENT_WAIT = _declare("event_wait", ("event",), "int32", STATEMENT, "event",
                      "wait until the event counter E[i] has reached zero (acquire)")
EVENT_NOTIFY = _declare("event_notify", ("event", "int?"), "int32", STATEMENT, "event",
                        "subtract the count (default 1) from the counter E[i] (release)")
EVENT_WAIT_WATCHDOG = _declare("tirc.event_wait_watchdog", ("event", "int", "str", "str", "int"),
                               "int32", INTRIN, None,
                               "event_wait that fails the call when it waits longer than "
                               "the given seconds; the message names the task, the event "
                               "tensor and the index")
ATOMIC_ADD = _declare("tirc.atomic_add", ("event", "int"), "int32", INTRIN, "event",
                      "add to the counter E[i] and return its old value (a queue head)")
OMP_MAX_THREADS = _declare("tirc.omp_max_threads", (), "int32", INTRIN, None,
                           "the size of the OpenMP team a parallel region would start")
OMP_NUM_THREADS = _declare("tirc.omp_num_threads", (), "int32", INTRIN, None,
                           "the size of the running OpenMP team")
OMP_THREAD_NUM = _declare("tirc.omp_thread_num", (), "int32", INTRIN, None,
                          "the number of the running OpenMP thread in its team")
OMP_BARRIER = _declare("tirc.omp_barrier", (), "int32", INTRIN, None,
                       "a barrier over the running OpenMP team")

# ---- GPU host code ----------------------------------------------------------------------

LAUNCH_KERNEL = _declare("tirc.launch_kernel", ("str", "int", "int", "int", "int", "int", "int",
                                                "any", "..."),
                         "int32", INTRIN, "launch",
                         "launch kernel `name` with grid (x, y, z) and block (x, y, z) extents "
                         "on the arguments that follow (split-host-device writes it)")

# ---- external functions (R.call_dps_packed in host code) --------------------------------

CALL_PACKED = _declare("tirc.call_packed", ("str", "str", "handle", "..."), "int32", INTRIN,
                       "packed",
                       "call C function `symbol` from function `caller` on DLTensor "
                       "arguments (tirc.ir.packed_call)")
DLTENSOR = _declare("tirc.dltensor", ("str", "any", "int", "..."), "handle", INTRIN, None,
                    "one tensor argument of tirc.call_packed: role, first element, extents "
                    "(run as part of the call)")

# ---- entry points: the DLTensor ABI (make-entry writes these; docs/abi.md) ---------------

ARG = _declare("tirc.arg", ("handle", "int"), "handle", INTRIN, None,
               "the i-th DLTensor pointer of the packed arguments")
IS_NULL = _declare("tirc.is_null", ("handle",), "bool", INTRIN, None, "whether a pointer is NULL")
DL_NDIM = _declare("tirc.dl_ndim", ("handle",), "given", INTRIN, None, "a DLTensor's ndim")
DL_DTYPE_CODE = _declare("tirc.dl_dtype_code", ("handle",), "given", INTRIN, None,
                         "a DLTensor's dtype code")
DL_DTYPE_BITS = _declare("tirc.dl_dtype_bits", ("handle",), "given", INTRIN, None,
                         "a DLTensor's dtype bits")
DL_DTYPE_LANES = _declare("tirc.dl_dtype_lanes", ("handle",), "given", INTRIN, None,
                          "a DLTensor's dtype lanes")
DL_DEVICE_TYPE = _declare("tirc.dl_device_type", ("handle",), "given", INTRIN, None,
                          "a DLTensor's device type")
DL_SHAPE = _declare("tirc.dl_shape", ("handle", "int"), "given", INTRIN, None,
                    "dimension k of a DLTensor's shape")
DL_STRIDE = _declare("tirc.dl_stride", ("handle", "int"), "given", INTRIN, None,
                     "stride k of a DLTensor (elements)")
DL_STRIDES_NULL = _declare("tirc.dl_strides_null", ("handle",), "bool", INTRIN, None,
                           "whether a DLTensor's strides pointer is NULL")
DL_SHAPE_NULL = _declare("tirc.dl_shape_null", ("handle",), "bool", INTRIN, None,
                         "whether a DLTensor's shape pointer is NULL")
DL_DATA = _declare("tirc.dl_data", ("handle",), "handle", INTRIN, None,
                   "a DLTensor's data pointer plus its byte offset")
DL_SCALAR = _declare("tirc.dl_scalar", ("handle",), "given", INTRIN, None,
                     "the value a 0-d DLTensor points at")
DTYPE_KIND = _declare("tirc.dtype_kind", ("int",), "handle", INTRIN, None,
                      "the name of a DLPack type code, for error messages")
ADDRESS = _declare("tirc.address", ("handle",), "uint64", INTRIN, None,
                   "a pointer as an integer (alignment and overlap checks)")
CHECK = _declare("tirc.check", ("bool", "str", "any", "..."), "int32", INTRIN, None,
                 "when the condition fails, set the error message (printf format and "
                 "values) and return -1 from the entry point")
BOUNDS_CHECK = _declare("tirc.bounds_check", ("bool", "str", "any", "..."), "int32", INTRIN,
                        "bounds_check", "-fbounds-check: when the condition (an access or "
                        "binding in bounds) fails, set the error message (printf format and "
                        "values) and return -5")

# ---- code generation only ---------------------------------------------------------------

EXTRACT_LANE = _declare("tirc.extract_lane", ("any", "int"), "given", INTRIN, None,
                        "lane k of a vector (made and used inside the LLVM backend)")
