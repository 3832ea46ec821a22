"""Tensor intrinsics declared in a `.tir` file, for `tensorize`.

An intrinsic is a pair of prim_funcs sharing a name in their attributes:

    @T.prim_func
    def dot4_desc(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32"),
                  C: T.Buffer((1,), "float32")):
        T.func_attr({"tensor_intrin": "dot4", "role": "desc"})
        for k in range(4):
            with T.block("update"):
                vk = T.axis.remap("R", [k])
                C[0] = C[0] + A[vk] * B[vk]

    @T.prim_func
    def dot4_impl(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32"),
                  C: T.Buffer((1,), "float32")):
        T.func_attr({"tensor_intrin": "dot4", "role": "impl"})
        C[0] = C[0] + A[0] * B[0] + A[1] * B[1] + A[2] * B[2] + A[3] * B[3]

The description is the computation the intrinsic performs (a loop nest over one block, matched
against the scheduled code); the implementation is what replaces it. Both take the same buffers
in the same order; the implementation's buffers become views (`T.match_buffer`) of the regions
the matched code accesses. `sch.tensorize(loop, "dot4")` names the intrinsic.
"""

from __future__ import annotations

from tirc.ir.function import PrimFunc
from tirc.ir.module import IRModule

Intrinsic = tuple[PrimFunc, PrimFunc]


def is_intrinsic(func: PrimFunc) -> bool:
    return "tensor_intrin" in func.attrs


def collect_intrinsics(mod: IRModule) -> dict[str, dict[str, PrimFunc]]:
    """Intrinsic name -> {"desc": func, "impl": func} (a role may be missing)."""
    out: dict[str, dict[str, PrimFunc]] = {}
    for func in mod.prim_funcs().values():
        if is_intrinsic(func):
            name = str(func.attrs["tensor_intrin"])
            role = str(func.attrs.get("role", ""))
            out.setdefault(name, {})[role] = func
    return out
