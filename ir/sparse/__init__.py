"""Sparse tensors in the IR: axes (formats), sparse buffers and sparse iterations."""

from tirc.ir.sparse.axis import Axis, AxisKind, ancestors, num_positions, row_range
from tirc.ir.sparse.buffer import SparseBuffer, axis_groups, is_dense, is_detached, storage_shape
from tirc.ir.sparse.iteration import SparseIteration, SpIterVar, iterated_parent, parent_axis

__all__ = [
    "Axis", "AxisKind", "SpIterVar", "SparseBuffer", "SparseIteration", "ancestors",
    "axis_groups", "is_dense", "is_detached", "iterated_parent", "num_positions", "parent_axis",
    "row_range",
    "storage_shape",
]
