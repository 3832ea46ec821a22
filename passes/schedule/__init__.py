"""Schedule primitives (TensorIR, with TVM's names and meanings) and the apply-schedules pass.

    apply.py         the `apply-schedules` pass (target matching, seed, intrinsics)
    runner.py        runs a Schedule's instructions; primitives.py is the name -> function table
    state.py         ScheduleState (the function being scheduled), BlockRV, LoopRV, ScheduleError
    lookup.py        get_block, get_loops, get_child_blocks
    loops.py         split, fuse, reorder, parallel, vectorize, unroll, bind, annotate
    compute_at.py    compute_at, reverse_compute_at (domain_solve.py solves the moved block's
                     domain; tiling.py checks reverse_compute_at runs each instance once)
    inline.py        compute_inline, reverse_compute_inline
    caching.py       cache_read, cache_write, set_scope, storage_align
    reduction.py     decompose_reduction, rfactor
    blockize.py      blockize; tensorize.py tensorize; tensor_intrin.py how intrinsics are declared
    layout.py        transform_layout (index maps and Axe layout strings)
    sampling.py      sample_perfect_tile, sample_categorical
    dispatch.py      dispatch (a run-time choice between a variant for one size value and
                     the general body)
    dependence.py    block scopes, producers/consumers, loop-carried dependence checks
    access.py, regions.py, scope.py, tree.py   regions of blocks, relaxation, tree surgery

From Python: `run_schedule(func, schedule)` (runner.py), or call the primitives directly on a
`ScheduleState(func)` (e.g. `loops.split(state, LoopRV(var), [None, 4])`).
"""
