"""Matmuls legalized to a BLAS: `R.matmul(x, w)` as `R.call_dps_packed("tirc_cblas_sgemm")`.

With legalize-ops' option `blas` set (`-fblas`, which also links the library; the pass-config
key `blas`), a
float32 matmul of a matrix or a batch of rows `x (..., m, k)` by a matrix `w (k, n)` calls the
C function `tirc_cblas_sgemm` (blas_library.py builds it over `cblas_sgemm`) instead of a loop
function. Other matmuls (batched weights, other dtypes) keep the tiled loops.
"""

from __future__ import annotations

from tirc.ir.graph import ExternFunc, GCall, GraphExpr, StructInfo, TensorSInfo, Tuple
from tirc.ir.ops.sinfo_util import dims_equal

BLAS_CONFIG = "blas"
SGEMM = "tirc_cblas_sgemm"


def blas_enabled(text: str) -> bool:
    """Whether the pass-config text of `blas` asks for BLAS matmuls (not 0/off/false)."""
    return text.lower() not in ("", "0", "off", "false", "no")


def blas_matmul(call: GCall, out: StructInfo | None, infer: object) -> GraphExpr | None:
    """The BLAS call for a matmul binding, or None when the BLAS does not cover it; `infer`
    gives an argument's struct info."""
    if call.op != "matmul" or len(call.args) != 2 or not isinstance(out, TensorSInfo):
        return None
    x, w = (infer(a) for a in call.args)  # type: ignore[operator]
    tensors = (x, w, out)
    if not all(isinstance(t, TensorSInfo) and t.shape is not None and str(t.dtype) == "float32"
               for t in tensors):
        return None
    if len(x.shape) < 2 or len(w.shape) != 2 or len(out.shape) != len(x.shape) or \
            not dims_equal(x.shape[-1], w.shape[0]):
        return None
    return GCall("call_dps_packed", (ExternFunc(SGEMM), Tuple(tuple(call.args))), {}, (out,),
                 span=call.span)
