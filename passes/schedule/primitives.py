"""The table of schedule primitives by name: what `sch.<name>(...)` calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tirc.passes.schedule import (
    blockize,
    caching,
    compute_at,
    dispatch,
    inline,
    layout,
    lookup,
    loops,
    reduction,
    sampling,
    sparse,
    tensorize,
)

PRIMITIVES: dict[str, Callable[..., Any]] = {
    "get_block": lookup.get_block,
    "get_loops": lookup.get_loops,
    "get_child_blocks": lookup.get_child_blocks,
    "split": loops.split,
    "fuse": loops.fuse,
    "reorder": loops.reorder,
    "parallel": loops.parallel,
    "vectorize": loops.vectorize,
    "unroll": loops.unroll,
    "bind": loops.bind,
    "annotate": loops.annotate,
    "add_unit_loop": loops.add_unit_loop,
    "unannotate": loops.unannotate,
    "compute_at": compute_at.compute_at,
    "reverse_compute_at": compute_at.reverse_compute_at,
    "compute_inline": inline.compute_inline,
    "reverse_compute_inline": inline.reverse_compute_inline,
    "cache_read": caching.cache_read,
    "cache_write": caching.cache_write,
    "set_scope": caching.set_scope,
    "storage_align": caching.storage_align,
    "decompose_reduction": reduction.decompose_reduction,
    "rfactor": reduction.rfactor,
    "blockize": blockize.blockize,
    "tensorize": tensorize.tensorize,
    "transform_layout": layout.transform_layout,
    "dispatch": dispatch.dispatch,
    "sample_perfect_tile": sampling.sample_perfect_tile,
    "sample_categorical": sampling.sample_categorical,
    **sparse.PRIMITIVES,
}
