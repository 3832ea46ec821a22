"""Helpers for the multi-device tests: compile a distributed program's graph steps, run it on
the numpy-simulated mesh and, for comparison, in the reference interpreter as one process."""

from __future__ import annotations

from typing import Any

import numpy as np
from tirc.frontend import parse
from tirc.ir.dist.simulate import simulate
from tirc.ir.interpreter import Interpreter
from tirc.ir.module import IRModule
from tirc.passes.manager import run_pipeline
from tirc.passes.pass_base import PassContext
from tirc.passes.pipeline import build_pipeline

HEADER = """from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T

@I.ir_module
class Module:
    I.module_global_infos({{"mesh": [R.device_mesh({shape}, I.Range(0, {size}))]}})

"""


def module_text(body: str, mesh: tuple[int, ...] = (2,)) -> str:
    """A module with one mesh and the (4-space indented) functions of `body`."""
    shape = f"({mesh[0]},)" if len(mesh) == 1 else str(tuple(mesh))
    size = int(np.prod(mesh))
    lines = "\n".join("    " + line if line.strip() else "" for line in body.splitlines())
    return HEADER.format(shape=shape, size=size) + lines + "\n"


def propagated(text: str, ctx: PassContext | None = None) -> IRModule:
    """The module after normalize and propagate-sharding."""
    return run_pipeline(parse(text), build_pipeline(["normalize", "propagate-sharding"]),
                        ctx or PassContext())


def lowered(text: str, ctx: PassContext | None = None) -> IRModule:
    """The module after normalize, propagate-sharding and lower-sharding."""
    return run_pipeline(parse(text), build_pipeline(
        ["normalize", "propagate-sharding", "lower-sharding"]), ctx or PassContext())


def single_process(text: str, name: str, *args: np.ndarray) -> Any:
    """The reference: the global-view program interpreted in one process."""
    mod = run_pipeline(parse(text), build_pipeline(["normalize"]))
    return Interpreter(mod).call(name, *args)


def check_simulated(text: str, name: str, *args: np.ndarray, rtol: float = 1e-5,
                    atol: float = 1e-5) -> IRModule:
    """The per-device program on the simulated mesh equals the single-process run."""
    low = lowered(text)
    got = simulate(low, name, *args)
    want = single_process(text, name, *args)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return low


def placements(mod: IRModule, name: str = "main") -> dict[str, str]:
    """Each bound variable's placement after propagate-sharding, by name."""
    from tirc.ir.dist.dtensor import DTensorSInfo

    f = mod.functions[name]
    out = {p.name: str(p.struct_info.placement) for p in f.params  # type: ignore[union-attr]
           if isinstance(p.struct_info, DTensorSInfo)}
    for blk in f.body.blocks:  # type: ignore[union-attr]
        for b in blk.bindings:
            if isinstance(b.var.struct_info, DTensorSInfo):
                out[b.var.name] = str(b.var.struct_info.placement)
    return out


def ccl_ops(mod: IRModule, name: str = "main") -> list[tuple[str, dict[str, Any]]]:
    """The collectives of a per-device function, in order, with their attributes."""
    f = mod.functions[name]
    return [(b.value.op, dict(b.value.attrs)) for blk in f.body.blocks  # type: ignore[union-attr]
            for b in blk.bindings if getattr(b.value, "op", "").startswith("ccl.")]
