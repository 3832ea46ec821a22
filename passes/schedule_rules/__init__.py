"""Schedule rules: the default schedule of every loop function, made of schedule primitives.

In the design of TVM's dlight and MetaSchedule rules, each rule recognises a kind of block from
its iteration kinds and access regions and schedules it by calling the same primitives an
`@S.schedule` calls (passes/schedule), whose checks keep the function correct. Every choice a
rule makes is a named `sample_*` decision with the rule's default as its value; the applied
schedule prints as an `@S.schedule` (`tirc schedule FILE`) that reproduces the same function.

    traced.py        TracedSchedule: primitive calls recorded as schedule text, decisions
    block_info.py    what a rule sees of a block: iteration kinds, regions, matmul roles
    rule.py          the rule interface and the target as rules see it
    driver.py        dispatch, inlining, and each block to the first rule that takes it
    inline.py        the inlining step (AutoInline)
    nest.py          loop steps the CPU rules share (parallel/vector nests, rfactor lanes)
    cpu_*.py         CPU rules: matmul, conv, matvec, norm, reduction, injective, fallback
    gpu_*.py         GPU rules: the same kinds with thread bindings
    api.py           for a tuner: each function's trace and decisions; apply with overrides
"""
