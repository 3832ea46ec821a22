"""The pass registry: every pass by its kebab-case name, and where its class lives.

The table is written out (name -> `module:Class`) and a pass's module is imported the first time
the pass is asked for, so a compile imports only the passes it runs. Adding a pass is adding
its line here; tests/passes/test_registry.py checks that every Pass subclass in tirc.passes
has its line, under its own name, and registering a name twice is an error.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tirc.passes.pass_base import Pass


class RegistryError(ValueError):
    """A pass registered twice, or a registry line that does not name its pass."""


def _table(entries: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """The registry from (name, `module:Class`) pairs; a name given twice is an error."""
    table: dict[str, str] = {}
    for name, where in entries:
        if name in table:
            raise RegistryError(f"pass '{name}' is registered twice ({table[name]}, {where})")
        table[name] = where
    return table


PASSES: dict[str, str] = _table((
    # whole module
    ("verify", "tirc.passes.verify:Verify"),
    ("static-check", "tirc.passes.static_check.static_check_pass:StaticCheck"),
    ("apply-schedules", "tirc.passes.schedule.apply:ApplySchedules"),
    # graph level
    ("inline-calls", "tirc.passes.graph.inline_calls:InlineCalls"),
    ("normalize", "tirc.passes.graph.normalize:Normalize"),
    ("propagate-sharding", "tirc.passes.dist.propagate:PropagateSharding"),
    ("lower-sharding", "tirc.passes.dist.lower:LowerSharding"),
    ("legalize-ops", "tirc.passes.graph.legalize_ops:LegalizeOps"),
    ("lower-sparse-iterations", "tirc.passes.sparse.lower_sparse_iterations:LowerSparseIterations"),
    ("annotate-op-pattern", "tirc.passes.graph.annotate_op_pattern:AnnotateOpPattern"),
    ("fold-constants", "tirc.passes.graph.fold_constants:FoldConstants"),
    ("fuse-ops", "tirc.passes.graph.fuse_ops:FuseOps"),
    ("fuse-tir", "tirc.passes.graph.fuse_tir:FuseTIR"),
    ("dead-code-elim", "tirc.passes.graph.dead_code_elim:DeadCodeElim"),
    ("default-schedule", "tirc.passes.graph.default_schedule:DefaultSchedule"),
    ("memory-plan", "tirc.passes.graph.memory_plan:MemoryPlanPass"),
    ("lower-graph", "tirc.passes.graph.lower_graph:LowerGraph"),
    # megakernels
    ("megakernel", "tirc.passes.megakernel.megakernel_pass:Megakernel"),
    ("megakernel-runtime", "tirc.passes.megakernel.megakernel_pass:MegakernelRuntime"),
    ("megakernel-gpu-tiles", "tirc.passes.megakernel.gpu_runtime:MegakernelGPUTiles"),
    ("megakernel-gpu", "tirc.passes.megakernel.gpu_runtime:MegakernelGPU"),
    # loop level
    ("bounds-check", "tirc.passes.bounds_check:BoundsCheck"),
    ("lower-init", "tirc.passes.lower_init:LowerInit"),
    ("lower-blocks", "tirc.passes.lower_blocks:LowerBlocks"),
    ("compact-buffers", "tirc.passes.compact_buffers:CompactBuffers"),
    ("lower-layouts", "tirc.passes.lower_layouts:LowerLayouts"),
    ("flatten-buffers", "tirc.passes.flatten_buffers:FlattenBuffers"),
    ("simplify", "tirc.passes.simplify:Simplify"),
    ("inject-vthread", "tirc.passes.vthread:InjectVirtualThread"),
    ("hoist-invariant-lets", "tirc.passes.hoist_invariant_lets:HoistInvariantLets"),
    ("unswitch-guards", "tirc.passes.unswitch_guards:UnswitchGuards"),
    ("speculate-guards", "tirc.passes.speculate_guards:SpeculateGuards"),
    ("vectorize", "tirc.passes.vectorize:Vectorize"),
    ("unroll", "tirc.passes.unroll:Unroll"),
    ("storage-rewrite", "tirc.passes.storage_rewrite:StorageRewrite"),
    ("make-entry", "tirc.passes.make_entry:MakeEntry"),
    # GPU
    ("gpu-default-schedule", "tirc.passes.gpu.default_schedule_gpu:GPUDefaultSchedule"),
    ("gpu-bind-graph-host", "tirc.passes.gpu.bind_graph_host:GPUBindGraphHost"),
    ("gpu-lower-cross-thread-reduction",
     "tirc.passes.gpu.lower_cross_thread:GPULowerCrossThreadReduction"),
    ("gpu-thread-binding", "tirc.passes.gpu.thread_binding:GPUThreadBinding"),
    ("gpu-launch-dims", "tirc.passes.gpu.launch_dims:GPULaunchDims"),
    ("gpu-storage-scope", "tirc.passes.gpu.storage_scope:GPUStorageScope"),
    ("gpu-storage-sync", "tirc.passes.gpu.storage_sync:GPUStorageSync"),
    ("gpu-split-host-device", "tirc.passes.gpu.split_host_device:GPUSplitHostDevice"),
    ("gpu-bounds-record", "tirc.passes.gpu.bounds_record:GPUBoundsRecord"),
    ("verify-gpu", "tirc.passes.gpu.verify_gpu:VerifyGPU"),
))


class UnknownPassError(KeyError):
    """A pass name that no pass has."""


def pass_names() -> list[str]:
    """Every registered pass name, in name order (imports no pass)."""
    return sorted(PASSES)


def pass_class(name: str) -> type[Pass]:
    """The class of the pass called `name`, importing its module on first use."""
    where = PASSES.get(name)
    if where is None:
        raise UnknownPassError(name)
    module, _, attr = where.partition(":")
    cls: type[Pass] = getattr(importlib.import_module(module), attr)
    if cls.name != name:
        raise RegistryError(f"registry line '{name}' names {where}, whose pass is '{cls.name}'")
    return cls


def all_passes() -> dict[str, type[Pass]]:
    """Every registered pass class by name, in name order (imports every pass module)."""
    return {name: pass_class(name) for name in pass_names()}


def get_pass(name: str, **options: object) -> Pass:
    """An instance of the pass called `name`, with dataclass options set."""
    return pass_class(name)(**options)
