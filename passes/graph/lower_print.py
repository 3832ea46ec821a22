"""lower-graph's `R.print`: a call of the print's slot with its values as tensors (the form is
in tirc.ir.print_call).

Each shape or `R.Prim` value is a small buffer the host function allocates and stores into
just before the call (as a collective's integers are); tensors are passed as they are, in the
workspace or among the arguments.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, INT64, DType
from tirc.ir.expr import IntImm, PrimExpr, Var, cast
from tirc.ir.graph import GCall, PrimSInfo, ShapeExpr, ShapeSInfo, Tuple, TupleGetItem, TupleSInfo
from tirc.ir.packed_call import call_packed
from tirc.ir.print_call import PRIM, SHAPE, TENSOR, Structure, print_symbol
from tirc.ir.stmt import BufferStore, Evaluate


def lower_print(host: Any, call: GCall, aliases: dict[Any, Any]) -> None:
    """Append to `host` (lower-graph's _HostBuilder) the statements of one `R.print`."""
    values = call.args[0]
    fields = values.fields if isinstance(values, Tuple) else (values,)
    leaves: list[Buffer] = []
    structure = [_leaf(host, v, aliases, leaves) for v in fields]
    symbol = print_symbol(str(call.attrs.get("format", "")), structure)
    host.items.append(Evaluate(call_packed(host.func.name, symbol, leaves, []), span=call.span))


def _leaf(host: Any, e: Any, aliases: dict[Any, Any], leaves: list[Buffer]) -> Structure:
    """The structure of one printed value; its leaves' buffers appended to `leaves`."""
    s = getattr(e, "struct_info", None)
    if isinstance(e, Tuple):
        return [_leaf(host, f, aliases, leaves) for f in e.fields]
    if host.is_scalar(e) or isinstance(s, PrimSInfo):
        value = host.scalar(e) if host.is_scalar(e) else _known_prim(host, e, s)
        leaves.append(_stored(host, "print_value", value.dtype, [value], scalar=True))
        return PRIM
    if isinstance(e, ShapeExpr) or isinstance(s, ShapeSInfo):
        dims = e.values if isinstance(e, ShapeExpr) else s.values
        if dims is None:
            raise host.error("R.print of a shape whose values are unknown is not compiled: "
                             "print R.shape([...]) of its sizes", e)
        leaves.append(_stored(host, "print_shape", INT64,
                              [cast(INT64, host.prim(d)) for d in dims]))
        return SHAPE
    if isinstance(s, TupleSInfo):
        return [_leaf(host, TupleGetItem(e, k), aliases, leaves) for k in range(len(s.fields))]
    leaves.append(host.tensor(e, aliases))
    return TENSOR


def _known_prim(host: Any, e: Any, s: PrimSInfo) -> PrimExpr:
    """An `R.Prim` value the host function has no variable for: its known value."""
    if s.value is None:
        raise host.error("R.print of an R.Prim value the function does not know is not "
                         "compiled: print an R.Prim parameter, binding or R.prim_value", e)
    return host.prim(s.value)  # type: ignore[no-any-return]


def _stored(host: Any, base: str, dtype: DType, values: list[PrimExpr],
            scalar: bool = False) -> Buffer:
    """A new buffer of `values` (a 0-d one for a scalar), allocated and stored in order."""
    name = f"{base}{len(host.items)}"
    shape = () if scalar else (IntImm(len(values), INT64),)
    buf = Buffer(name=name, shape=shape, dtype=dtype, data=Var(name, HANDLE))
    host.items.append(("alloc", buf))
    for k, v in enumerate(values):
        host.items.append(BufferStore(buf, cast(dtype, v), () if scalar else
                                      (IntImm(k, INT64),)))
    return buf
