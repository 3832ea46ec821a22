"""The intrinsic table: every `Call` operator that the frontend, passes, the interpreter and the
backends share, tirc's own and TVM's alike.

An intrinsic is a `Call(op, args, dtype)` of the loop IR. Each one is declared here once, with:
- `operands`: what each argument is (`float`, `int`, `bool`, `event` for an element `E[i]` of an
  event tensor, `handle`, `str` for a string literal, `any`, `any|str` for a value or a string
  literal; `...` repeats the last one, a trailing `?` marks an optional one). Operands declared
  `int` or `float` meet in one dtype (integer literals become float32 for `float`);
- `result`: the dtype of the call (`operand` when it is the operands' dtype, `operand:k` when
  it is operand k's, `given` when the call states it, or a dtype name, which takes the
  operands' lanes and which `dtype=` may override);
- `printed`: how the printer writes it: `named` as `T.name(args)` (with `dtype=` where the call's
  dtype is not the declared one), `typed` as `T.name("dtype", args)` (TVM's form for calls whose
  dtype is stated first), `operator` as Python's operator (`a << b`), `statement` as
  `T.name(args)` on a line of its own when it is a whole statement, `intrin` as
  `T.call_intrin("dtype", "name", args)`;
- `interpreted`: the rule of the reference interpreter that runs it (tirc.ir.interpreter.intrin
  and, for the GPU ones, tirc.ir.interpreter.gpu), or None when only a backend runs it (DLTensor
  access in entry points, OpenMP queries, LLVM intrinsics) and the interpreter reports it as
  unsupported;
- `device`: `any`, or `gpu` / `scalable` for intrinsics that only have a meaning on a GPU or a
  scalable-vector target: they parse, print and round-trip everywhere, and a CPU build or the
  interpreter reaching one is an error at its place;
- `doc`: what it means.

The names are module constants (`EVENT_WAIT`, `LAUNCH_KERNEL`, ...): code that builds or
recognises an intrinsic uses them, never the string. Backends map the names to code (the LLVM
backend's `call_<name>`/`builtin_<name>` methods and math table, the NVPTX backend's tables);
tests/ir/test_intrinsics.py checks that they name intrinsics of this table. Members of TVM's
device namespaces (`T.ptx.*`, `T.cuda.*`, ...) are GPU intrinsics of any name (`intrinsic`).
"""

from __future__ import annotations

from collections.abc import Sequence

from tirc.ir.dtype import DType
from tirc.ir.lean_dataclass import dataclass

NAMED = "named"
TYPED = "typed"  # T.name("dtype", args): TVM's form when the result dtype is stated first
STATEMENT = "statement"
INTRIN = "intrin"
OPERATOR = "operator"  # Python's operator (`a << b`), as TVM prints its bitwise intrinsics

ANY_DEVICE = "any"
GPU = "gpu"
SCALABLE = "scalable"


@dataclass(frozen=True)
class Intrinsic:
    """One intrinsic (see the module docstring for the fields)."""

    name: str
    operands: tuple[str, ...]
    result: str
    printed: str
    interpreted: str | None
    doc: str
    device: str = ANY_DEVICE

    @property
    def arity(self) -> int:
        """The number of required operands (`...` and optional ones not counted)."""
        return sum(1 for o in self.operands if o != "..." and not o.endswith("?"))

    @property
    def max_arity(self) -> int | None:
        """The most operands the call takes (None when `...` repeats the last one)."""
        return None if "..." in self.operands else len(self.operands)

    def operand_kind(self, k: int) -> str:
        """What operand `k` is (`float`, `any|str`, ...), without the optional mark."""
        kinds = [o for o in self.operands if o != "..."]
        kind = kinds[min(k, len(kinds) - 1)] if kinds else "any"
        return kind.rstrip("?")

    def declared_dtype(self, operands: Sequence[DType]) -> DType | None:
        """The dtype of a call that states none, given its operands' dtypes: void for a
        `given` result, the named dtype with the operands' lanes, None for `operand`."""
        if self.result == "operand":
            return None
        if self.result == "given":
            return DType("void", 0)
        if self.result.startswith("operand:"):  # operand k's dtype (a shuffled value's)
            k = int(self.result.split(":")[1])
            return operands[k] if len(operands) > k else DType("void", 0)
        lanes = operands[0].lanes if operands and self.numeric else 1
        return DType.parse(self.result).with_lanes(lanes)

    @property
    def numeric(self) -> str | None:
        """`int` or `float` when every operand is one (they meet in one dtype), else None."""
        kinds = {self.operand_kind(k) for k in range(len(self.operands))} - {"..."}
        return kinds.pop() if len(kinds) == 1 and kinds <= {"int", "float"} else None


INTRINSICS: dict[str, Intrinsic] = {}


def _declare(name: str, operands: tuple[str, ...], result: str, printed: str,
             interpreted: str | None, doc: str, device: str = ANY_DEVICE) -> str:
    """Add an intrinsic to the table and return its name (the constant code uses)."""
    if name in INTRINSICS:
        raise ValueError(f"intrinsic '{name}' is declared twice")
    INTRINSICS[name] = Intrinsic(name, operands, result, printed, interpreted, doc, device)
    return name


# TVM's device namespaces: `T.ptx.mov.b64(...)`, `T.cuda.warp_sync()`, ... (any member).
DEVICE_NAMESPACES = ("ptx", "ptx_legacy", "cuda", "metal", "nki", "nvshmem", "webgpu")


def intrinsic(name: str) -> Intrinsic | None:
    """The table entry of `name`, or None for an operator that is not an intrinsic. A member
    of a device namespace (`ptx.mov.b64`) is a GPU intrinsic of any operands."""
    info = INTRINSICS.get(name)
    if info is None and "." in name and name.split(".", 1)[0] in DEVICE_NAMESPACES:
        return Intrinsic(name, ("any|str?", "..."), "given", NAMED, None,
                         "a member of a GPU device namespace", GPU)
    return info


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
_UNARY_MATH |= {  # TVM's further float functions
    "fabs": "absolute value of a float", "nearbyint": "round to nearest in the current mode",
    "log10": "base-10 logarithm", "log1p": "log(1 + x)", "exp10": "10 to the x",
    "tan": "tangent", "sinh": "hyperbolic sine", "cosh": "hyperbolic cosine",
    "asin": "arc sine", "acos": "arc cosine", "atan": "arc tangent",
    "asinh": "inverse hyperbolic sine", "acosh": "inverse hyperbolic cosine",
    "atanh": "inverse hyperbolic tangent",
}
for _name, _doc in _UNARY_MATH.items():
    _declare(_name, ("float",), "operand", NAMED, "math", _doc)
POW = _declare("pow", ("float", "float"), "operand", NAMED, "math", "x to the power y")
_BINARY_MATH = {
    "atan2": "arc tangent of y / x in the quadrant of (x, y)",
    "copysign": "x with the sign of y", "hypot": "sqrt(x * x + y * y) without overflow",
    "fmod": "remainder of x / y with the sign of x", "nextafter": "next float after x toward y",
    "ldexp": "x * 2^y (y a whole number)",
}
for _name, _doc in _BINARY_MATH.items():
    _declare(_name, ("float", "float"), "operand", NAMED, "math", _doc)
FMA = _declare("fma", ("float", "float", "float"), "operand", NAMED, "math",
               "x * y + z (one rounding where the target has it)")

# Math intrinsics and their operand counts (what `T.<name>(...)` takes in the language).
MATH_INTRINSICS: dict[str, int] = {n: i.arity for n, i in INTRINSICS.items()
                                   if i.interpreted == "math"}

# The math a CPU computes one lane at a time: libm functions, which no vector math library
# replaces (LLVM scalarizes a vector `llvm.exp` into an `expf` call per lane, extracting and
# inserting the lanes and spilling vectors around each call). `T.fast_exp` is vector code.
PER_LANE_MATH = frozenset({
    "exp", "exp2", "log", "log2", "log10", "tanh", "sigmoid", "erf", "sin", "cos", "pow",
    "log1p", "exp10", "tan", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh",
    "atanh", "atan2", "hypot", "nextafter",
})

# ---- values -----------------------------------------------------------------------------

IF_THEN_ELSE = _declare("if_then_else", ("bool", "any", "any"), "operand", NAMED, "select",
                        "the second operand when the first holds, else the third; only the "
                        "chosen one is evaluated")
LIKELY = _declare("likely", ("bool",), "operand", INTRIN, "identity",
                  "its operand; a hint that it usually holds")
MAX_VALUE = _declare("max_value", (), "given", INTRIN, "limit", "the largest value of the dtype")
MIN_VALUE = _declare("min_value", (), "given", INTRIN, "limit",
                     "the smallest (most negative) value of the dtype")
REINTERPRET = _declare("reinterpret", ("any",), "given", TYPED, "reinterpret",
                       "the operand's bits read as the call's dtype (same width)")
SHIFT_LEFT = _declare("shift_left", ("int", "int"), "operand", OPERATOR, "bitwise", "a << b")
SHIFT_RIGHT = _declare("shift_right", ("int", "int"), "operand", OPERATOR, "bitwise",
                       "a >> b (arithmetic for signed types)")
BITWISE_AND = _declare("bitwise_and", ("int", "int"), "operand", OPERATOR, "bitwise", "a & b")
BITWISE_OR = _declare("bitwise_or", ("int", "int"), "operand", OPERATOR, "bitwise", "a | b")
BITWISE_XOR = _declare("bitwise_xor", ("int", "int"), "operand", OPERATOR, "bitwise", "a ^ b")
BITWISE_NOT = _declare("bitwise_not", ("int",), "operand", OPERATOR, "bitwise", "~a")
POPCOUNT = _declare("popcount", ("int",), "operand", NAMED, "bitcount", "the number of set bits")
CLZ = _declare("clz", ("int",), "int32", NAMED, "bitcount",
               "the number of leading zero bits of the operand in its width (the width for "
               "zero), an int32 for any operand as in TVM")
Q_MULTIPLY_SHIFT = _declare("q_multiply_shift", ("int", "int", "int", "int"), "operand", NAMED,
                            "fixed_point",
                            "TVM's fixed-point multiply: round(x * y * 2^-(q - s)), ties up, "
                            "through int64")
ISNAN = _declare("isnan", ("float",), "bool", NAMED, "float_class", "whether x is a NaN")
ISINF = _declare("isinf", ("float",), "bool", NAMED, "float_class", "whether x is infinite")
ISFINITE = _declare("isfinite", ("float",), "bool", NAMED, "float_class",
                    "whether x is neither infinite nor a NaN")

# ---- vectors ----------------------------------------------------------------------------

# TVM's form states the result dtype first: T.vectorhigh("int16x4", v); the frontend also
# infers it (the operand's element type, half or twice its lanes) when it is left out.
VECTOR_LOW = _declare("vectorlow", ("any",), "given", TYPED, "halves",
                      "the low half of a vector's lanes")
VECTOR_HIGH = _declare("vectorhigh", ("any",), "given", TYPED, "halves",
                       "the high half of a vector's lanes")
VECTOR_COMBINE = _declare("vectorcombine", ("any", "any"), "given", TYPED, "halves",
                          "two vectors of one dtype joined, the first one's lanes first")

# ---- calls out of the kernel (TVM's) ----------------------------------------------------

CALL_EXTERN = _declare("call_extern", ("str", "any|str?", "..."), "given", TYPED, "extern",
                       "call the C function named first on the other operands (resolved when "
                       "the library is linked or loaded)")
CALL_PURE_EXTERN = _declare("call_pure_extern", ("str", "any|str?", "..."), "given", TYPED,
                            "extern", "call_extern of a function without side effects")
CALL_LLVM_PURE_INTRIN = _declare("call_llvm_pure_intrin", ("any|str", "any|str?", "..."),
                                 "given", TYPED, None,
                                 "call the named LLVM intrinsic (its name, or "
                                 "T.llvm_lookup_intrinsic_id of it, first; TVM's older form "
                                 "passes the operand count next)")
CALL_LLVM_INTRIN = _declare("call_llvm_intrin", ("any|str", "any|str?", "..."), "given", TYPED,
                            None, "call_llvm_pure_intrin of an intrinsic with side effects")
LLVM_LOOKUP_INTRINSIC_ID = _declare("llvm_lookup_intrinsic_id", ("str",), "int32", NAMED, None,
                                    "the LLVM intrinsic of that name (an operand of "
                                    "call_llvm_pure_intrin)")
ADDRESS_OF = _declare("address_of", ("any",), "handle", NAMED, "address",
                      "the address of a buffer element A[i]")

# ---- scalable vectors (SVE): no meaning on fixed-width targets --------------------------

VSCALE = _declare("vscale", (), "int32", NAMED, None,
                  "the hardware's vector-length multiple", SCALABLE)
GET_ACTIVE_LANE_MASK = _declare("get_active_lane_mask", ("int", "int"), "given", TYPED, None,
                                "the predicate of lanes base + k < limit", SCALABLE)

# ---- GPU-only: warp-level matrix and PTX intrinsics, warp shuffles ----------------------

for _name in ("tvm_mma_sync", "tvm_bmma_sync", "tvm_fill_fragment", "tvm_load_matrix_sync",
              "tvm_store_matrix_sync", "ptx_mma", "ptx_mma_sp", "ptx_ldmatrix", "ptx_cp_async",
              "ptx_cp_async_bulk", "ptx_commit_group", "ptx_wait_group", "ptx_cp_async_barrier",
              "ptx_init_barrier_thread_count", "ptx_arrive_barrier",
              "ptx_arrive_barrier_expect_tx", "ptx_wait_barrier", "mma_store", "mma_fill",
              "tvm_global_barrier_kinit", "tvm_thread_allreduce"):
    _declare(_name, ("any|str?", "..."), "handle", NAMED, None,
             "TVM's warp-level matrix / PTX intrinsic of that name", GPU)
for _name in ("tvm_warp_shuffle", "tvm_warp_shuffle_up", "tvm_warp_shuffle_down",
              "tvm_warp_shuffle_xor"):  # (mask, value, lane or delta, width, warp size)
    _declare(_name, ("any?", "..."), "operand:1", NAMED, None,
             "TVM's warp shuffle of that name: the value's dtype, as TVM's T.tvm_warp_shuffle",
             GPU)
_declare("tvm_warp_activemask", (), "uint32", NAMED, None,
         "the mask of the warp's active threads (TVM's; uint32)", GPU)

# ---- direct calls between loop functions and their results -----------------------------

CALL_PRIM = _declare("tirc.call_prim", ("str", "any?", "..."), "given", INTRIN, "call_prim",
                     "call the loop function of this module named first on the other "
                     "operands (storage handles such as A.data, and scalars); its value is "
                     "what the callee returns (printed `Module.name(args)`)")
RET = _declare("ret", ("any",), "operand", STATEMENT, "ret",
               "return the operand from the loop function (`return value`, TVM's T.ret); "
               "the function's declared result dtype")

# ---- sparse formats: position searches (lower-sparse-iterations writes them) -------------

LOWER_BOUND = _declare("tirc.lower_bound", ("handle", "int", "int", "int"), "given", INTRIN,
                       "search",
                       "the first position p in [begin, end) of the sorted integer storage "
                       "`data` with data[p] >= value, or end (operands: data, value, begin, end)")
UPPER_BOUND = _declare("tirc.upper_bound", ("handle", "int", "int", "int"), "given", INTRIN,
                       "search",
                       "the first position p in [begin, end) of the sorted integer storage "
                       "`data` with data[p] > value, or end (operands: data, value, begin, end)")

# ---- statements with no value -----------------------------------------------------------

BREAK_LOOP = _declare("break_loop", (), "int32", STATEMENT, "loop_jump",
                      "leave the innermost enclosing serial loop (`for` or `while`) now: "
                      "Python's `break` (TVM's T.break_loop); tirc.ir.loop_jumps")
CONTINUE_LOOP = _declare("continue_loop", (), "int32", STATEMENT, "loop_jump",
                         "go on with the next iteration of the innermost enclosing serial "
                         "loop: Python's `continue` (TVM's T.continue_loop); "
                         "tirc.ir.loop_jumps")

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
DL_SHAPE = _declare("tirc.dl_shape", ("handle", "int"), "given", INTRIN, None,
                    "dimension k of a DLTensor's shape")
DL_STRIDE = _declare("tirc.dl_stride", ("handle", "int"), "given", INTRIN, None,
                     "stride k of a DLTensor (elements)")
DL_STRIDES_NULL = _declare("tirc.dl_strides_null", ("handle",), "bool", INTRIN, None,
                           "whether a DLTensor's strides pointer is NULL")
DL_DATA = _declare("tirc.dl_data", ("handle",), "handle", INTRIN, None,
                   "a DLTensor's data pointer plus its byte offset")
DL_SCALAR = _declare("tirc.dl_scalar", ("handle",), "given", INTRIN, None,
                     "the value a 0-d DLTensor points at")
ADDRESS = _declare("tirc.address", ("handle",), "uint64", INTRIN, None,
                   "a pointer as an integer (alignment and overlap checks)")
CHECK = _declare("tirc.check", ("bool", "str", "any", "..."), "int32", INTRIN, "check",
                 "when the condition fails, set the error message (printf format and "
                 "values) and return -1 from the entry point")
CHECK_TENSOR = _declare("tirc.check_tensor", ("handle", "str", "str", "int", "..."), "int32",
                        INTRIN, None,
                        "an entry's checks of one DLTensor argument (message prefix, dtype "
                        "name, then rank, type code, bits, lanes, device type, element bytes): "
                        "not NULL, its rank, dtype and device, data and shape pointers, "
                        "extents not negative and a size within int64; on failure, set the "
                        "error message and return -1 from the entry point")
BOUNDS_CHECK = _declare("tirc.bounds_check", ("bool", "str", "any", "..."), "int32", INTRIN,
                        "bounds_check", "-fbounds-check: when the condition (an access or "
                        "binding in bounds) fails, set the error message (printf format and "
                        "values) and return -5")

# ---- code generation only ---------------------------------------------------------------

EXTRACT_LANE = _declare("tirc.extract_lane", ("any", "int"), "given", INTRIN, None,
                        "lane k of a vector (made and used inside the LLVM backend)")
