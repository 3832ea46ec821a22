"""Sparse lowering and sparse schedules: sparse iterations onto loops with data-dependent
extents, sparse buffers onto flat storage, format decomposition."""
