"""The loop-level form of `R.call_dps_packed`: one intrinsic call in the host function, which
the CPU backend turns into a call of a C function with tirc's DLTensor ABI (docs/abi.md).

    T.evaluate(T.call_intrin("int32", "tirc.call_packed", "mlp_bias_relu", "main",
        T.call_intrin("handle", "tirc.dltensor", "in", h[0, 0], n, T.int64(128)),
        T.call_intrin("handle", "tirc.dltensor", "in", b1[0], T.int64(128)),
        T.call_intrin("handle", "tirc.dltensor", "out", a[0, 0], n, T.int64(128))))

The first two arguments are the C symbol and the calling function (for the error message).
A name that is not a C identifier but a dotted one, `"env.relu"` (TVM's registered functions,
`tvm.register_func("env.relu")`), is no C symbol: the library calls it through a slot, a
function pointer with the same ABI that the loader fills (docs/abi.md, "Functions named by
dotted names"); `is_slot_name` tells them apart.
Each `tirc.dltensor` is one tensor argument, destination-passing (inputs, then outputs): its
role ("in" or "out"), the first element of its buffer (the storage, element offset and dtype
the tensor points at; flatten-buffers rewrites it like any access) and its extents. The call
gives 0, or makes the function fail with the C function's nonzero code and the message
`<caller>: external function '<symbol>' returned <code>`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import HANDLE, INT32, INT64
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, StringImm, cast
from tirc.ir.function import PrimFunc
from tirc.ir.intrinsics import CALL_PACKED, DLTENSOR
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.visitor import post_order_visit

ROLES = ("in", "out")


@dataclass(frozen=True)
class TensorArg:
    """One `tirc.dltensor` argument, taken apart."""

    role: str
    first: BufferLoad
    shape: tuple[PrimExpr, ...]

    @property
    def buffer(self) -> Buffer:
        return self.first.buffer  # type: ignore[no-any-return]


@dataclass(frozen=True)
class PackedCall:
    """One `tirc.call_packed` call, taken apart."""

    symbol: str
    caller: str
    tensors: tuple[TensorArg, ...]

    @property
    def through_slot(self) -> bool:
        """Whether the library calls the function through a slot (a dotted name)."""
        return is_slot_name(self.symbol)


def is_slot_name(name: str) -> bool:
    """A dotted name (`env.relu`, `tvm.contrib.f`): identifiers joined by dots, which a C
    symbol cannot be, so the function is reached through a slot the runtime fills."""
    parts = name.split(".")
    return len(parts) > 1 and all(p.isidentifier() for p in parts)


def dltensor(role: str, buf: Buffer) -> Call:
    """The `tirc.dltensor` argument for the whole of `buf`."""
    first = BufferLoad(buf, tuple(IntImm(0, INT32) for _ in buf.shape), buf.dtype)
    return Call(DLTENSOR, (StringImm(role), first, *(cast(INT64, d) for d in buf.shape)),
                HANDLE)


def call_packed(caller: str, symbol: str, inputs: Sequence[Buffer],
                outputs: Sequence[Buffer]) -> Call:
    """`symbol(inputs..., outputs...)` through the DLTensor ABI, called from `caller`."""
    tensors = [dltensor("in", b) for b in inputs] + [dltensor("out", b) for b in outputs]
    return Call(CALL_PACKED, (StringImm(symbol), StringImm(caller), *tensors), INT32)


def _bad(message: str, e: Any) -> CompileError:
    return CompileError(f"{CALL_PACKED}: {message}", getattr(e, "span", None))


def tensor_arg(e: PrimExpr) -> TensorArg:
    """The parts of a `tirc.dltensor` call; a malformed one is a CompileError."""
    if not isinstance(e, Call) or e.op != DLTENSOR:
        raise _bad(f"every argument after the names must be a {DLTENSOR} call", e)
    if len(e.args) < 2 or not isinstance(e.args[0], StringImm) or e.args[0].value not in ROLES:
        raise _bad(f'{DLTENSOR} takes a role ("in" or "out"), a buffer element and the '
                   "extents", e)
    first = e.args[1]
    if not isinstance(first, BufferLoad) or first.dtype.lanes != 1:
        raise _bad(f"the second argument of {DLTENSOR} must be a scalar buffer element", e)
    shape = tuple(e.args[2:])
    if any(not d.dtype.is_int or d.dtype.lanes != 1 for d in shape):
        raise _bad(f"the extents of {DLTENSOR} must be integers", e)
    return TensorArg(e.args[0].value, first, shape)


def packed_call(e: Call) -> PackedCall:
    """The parts of a `tirc.call_packed` call; a malformed one is a CompileError."""
    if len(e.args) < 2 or not all(isinstance(a, StringImm) for a in e.args[:2]):
        raise _bad("takes the C symbol and the calling function's name, then the tensors", e)
    symbol, caller = e.args[0], e.args[1]
    assert isinstance(symbol, StringImm) and isinstance(caller, StringImm)
    if not symbol.value.isidentifier() and not is_slot_name(symbol.value):
        raise _bad(f"'{symbol.value}' is neither a C identifier nor a dotted name such as "
                   "'env.relu'", e)
    return PackedCall(symbol.value, caller.value, tuple(tensor_arg(a) for a in e.args[2:]))


def output_loads(node: Any) -> set[int]:
    """The ids of the BufferLoads that name an output tensor of a `tirc.call_packed` in `node`
    (they stand for a write of the whole tensor, not a read)."""
    found: set[int] = set()

    def visit(n: Any) -> None:
        if isinstance(n, Call) and n.op == DLTENSOR and len(n.args) > 1 and \
                isinstance(n.args[0], StringImm) and n.args[0].value == "out":
            found.add(id(n.args[1]))

    post_order_visit(node, visit)
    return found


def external_symbols(mod: IRModule) -> list[str]:
    """The C symbols the loop functions of `mod` call through `tirc.call_packed`, in order
    (the functions a link must find; dotted names are `slot_symbols`)."""
    return [s for s in _called_symbols(mod) if not is_slot_name(s)]


def slot_symbols(mod: IRModule) -> list[str]:
    """The dotted names the loop functions of `mod` call, in order: one slot each."""
    return [s for s in _called_symbols(mod) if is_slot_name(s)]


# The last module `_called_symbols` walked and its answer: a build asks three times (the
# metadata, the slots, the link) of one module, which is immutable.
_last_walked: list[tuple[IRModule, list[str]]] = []


def _called_symbols(mod: IRModule) -> list[str]:
    """Every name the loop functions of `mod` call through `tirc.call_packed`, in order."""
    if _last_walked and _last_walked[0][0] is mod:
        return list(_last_walked[0][1])
    found: dict[str, None] = {}

    def visit(n: Any) -> None:
        if isinstance(n, Call) and n.op == CALL_PACKED and n.args and \
                isinstance(n.args[0], StringImm):
            found[n.args[0].value] = None

    for f in mod.functions.values():
        if isinstance(f, PrimFunc):
            post_order_visit(f.body, visit)
    _last_walked[:] = [(mod, list(found))]
    return list(found)


def module_function_of_symbol(mod: IRModule, symbol: str) -> str | None:
    """The name of the public loop function of `mod` exported as `symbol` (its
    `global_symbol`, else its name), which `R.call_dps_packed("symbol", ...)` calls as TVM's VM
    finds a compiled function of its own library by name; None when there is none."""
    for name, f in mod.functions.items():
        if isinstance(f, PrimFunc) and not f.private and \
                f.attrs.get("global_symbol", name) == symbol:
            return name
    return None
