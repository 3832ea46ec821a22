"""Every attribute key that one stage writes and another reads, declared once.

Function attributes (`PrimFunc.attrs`, `T.func_attr`), statement attributes (`AttrStmt.key`,
`T.attr(node, key, value)`) and loop annotations travel in the IR from the pass that writes
them to the passes and backends that read them; both sides import the key from here. A key used
inside one module only stays in that module.
"""

from __future__ import annotations

# ---- function attributes ----------------------------------------------------------------

# The exported C symbol of a function (default: its name); written by the frontend,
# lower-graph, make-entry and split-host-device, read by the backends.
GLOBAL_SYMBOL = "global_symbol"
# The function's buffer parameters do not alias one another (LLVM `noalias` pointers).
NOALIAS = "tir.noalias"
# The logical buffer of each handle parameter, when a pass replaced the body's view of them.
PARAM_BUFFERS = "param_buffers"
# An exported entry point and its metadata (the JSON `signature`); written by make-entry, read
# by the CPU backend (metadata, header) and by the runtime through the library.
ENTRY = "tirc.entry"
# The host loop function lower-graph made from a graph function.
GRAPH_FUNC = "tirc.graph_func"
# Its result parameters, by name (lower-graph -> the entry signature): a result is an output
# even where nothing is stored into it (an empty tensor).
GRAPH_RESULTS = "tirc.graph_results"
# Its tuple parameters: per `R.Tuple` parameter, its name and the names of the consecutive
# parameters that take its fields (lower-graph -> make-entry, which copies it into the entry
# metadata's "tuples", which the runtime reads to accept one tuple for them).
GRAPH_TUPLES = "tirc.graph_tuples"
# Its returned value when that is not one tensor or a flat tuple of tensors: the value's
# structure over its result parameters (a tensor's name, {"shape": name} for an int64 result
# of one entry per dimension, {"prim": name} for a 0-d one, a tuple for a tuple); lower-graph
# -> make-entry, which copies it into the metadata's "returns", which the runtime reads.
GRAPH_RETURNS = "tirc.graph_returns"
# The fusion pattern of a generated kernel (annotate-op-pattern -> fuse-ops, default-schedule).
OP_PATTERN = "op_pattern"
# A fused graph function that fuse-tir turns into one kernel (fuse-ops -> fuse-tir, memory-plan).
PRIMITIVE = "Primitive"
# A graph function the frontend lifted out of another (a local `@R.function` in its body, as
# TVM's LambdaLift): inline-calls inlines its calls and drops it (it is no entry point).
LIFTED = "tirc.lifted"
# The global view of a per-device function: its mesh and the placement of each parameter and
# result (lower-sharding -> lower-graph -> the entry signature's "sharding", the runtime).
SHARDING = "tirc.sharding"
# A kernel default-schedule has scheduled (it is not scheduled twice).
SCHEDULED = "tirc.scheduled"
# `T.func_attr({"tirc.schedule": "none"})`: a loop function the schedule rules leave alone.
SCHEDULE = "tirc.schedule"
# On each variant block of a dispatch (passes/schedule/dispatch.py): the condition it runs
# under (the megakernel's tiling opens these blocks).
VARIANT = "tirc.variant"
# memory-plan's workspace sizes and storage tokens of a graph function (-> lower-graph).
WORKSPACE_BYTES = "tirc.workspace_bytes"
STORAGE = "tirc.storage"
# A graph function run as a megakernel, with its schedule (-fmegakernel, megakernel pass).
MEGAKERNEL = "megakernel"
MEGAKERNEL_MODES = ("static", "dynamic")
# Which megakernel runtime lowered a task graph ("gpu" for megakernel-gpu).
MEGAKERNEL_RUNTIME = "megakernel.runtime"
# The sparse tensors of a lowered sparse function: per tensor its format, its parameters
# (data, indptr, indices) and the sizes it determines (lower-sparse-iterations -> make-entry,
# which copies it into the entry metadata the runtime reads to accept one SciPy matrix).
SPARSE_TENSORS = "tirc.sparse_tensors"
# The conversion plan of a decomposed sparse function: the generated conversion functions and
# how their outputs become arguments (decompose_format -> make-entry -> runtime).
SPARSE_PLAN = "tirc.sparse_plan"
# GPU: a device kernel (split-host-device -> NVPTX backend), its launch tags, and the host
# function that launches kernels.
KERNEL = "tirc.kernel"
KERNEL_LAUNCH_PARAMS = "tir.kernel_launch_params"
GPU_HOST = "tirc.gpu_host"
# GPU -fbounds-check: the int32 error record a host function's kernels fill when a bounds
# check fails (an AttrStmt just inside its Allocate; gpu-bounds-record -> launch plan ->
# runtime).
BOUNDS_RECORD = "tirc.bounds_record"

# ---- statement attributes (AttrStmt keys) -----------------------------------------------

# The checked body of an entry point, after its argument checks (make-entry -> LLVM backend).
COMPUTE_SCOPE = "tirc.compute_scope"
# One task kind of a megakernel, and the condition under which its tasks run in order.
TASK = "task"
MEGAKERNEL_IN_ORDER = "megakernel.in_order"
# What the LLVM backend outlines into a function of its own per task kind (never inlined, so
# LLVM optimises one kernel at a time): a whole task (waits, compute, notifications), and,
# within it, the compute, whose buffer pointers may be `noalias` (no other thread touches its
# data while it runs, which is not so across the waits and notifications).
TASK_FUNCTION = "tirc.task_function"
TASK_COMPUTE = "tirc.task_compute"
OUTLINED = (TASK_FUNCTION, TASK_COMPUTE)
# A parallel loop whose body every thread of the OpenMP team runs exactly once, with the loop
# variable its thread number; the extent is the team size asked for (megakernel-runtime -> LLVM).
PARALLEL_TEAM = "parallel.team"
# `T.attr(buffer, "storage_kind", "stack" | "heap")` just inside an Allocate (storage-rewrite ->
# LLVM backend).
STORAGE_KIND = "storage_kind"
# Thread bindings in TVM's attribute form.
THREAD_EXTENT = "thread_extent"
VIRTUAL_THREAD = "virtual_thread"
LAUNCH_THREAD = "launch_thread"

# ---- loop annotations -------------------------------------------------------------------

# A parallel loop whose iterations are handed out in chunks of this many to whichever thread
# asks next, instead of one static range per thread (`sch.annotate(loop, "parallel.chunk", 32)`;
# the LLVM backend's parallel regions): for iterations of uneven cost, such as sparse rows.
PARALLEL_CHUNK = "parallel.chunk"

# A loop left for LLVM's unroller (unroll -> LLVM loop metadata): True (or 1) lets LLVM's cost
# model decide, a count N > 1 asks for N copies, 0 keeps the loop rolled and scalar (no unrolling,
# no vectorizing: for code that runs once per call and would only grow the binary and the compile
# time, such as a sparse plan's copy loops).
PRAGMA_UNROLL = "pragma_unroll"

# ---- launch-plan symbols ----------------------------------------------------------------

# The number of SMs of the device, bound by the runtime at call time (a megakernel's grid).
SM_COUNT = "tirc_sm_count"
