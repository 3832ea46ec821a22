"""TVM's named intrinsics that tirc reads, prints and (where they have one) runs: the table
behind `T.<name>(...)` calls that are not tirc's own math or statement builtins.

Each entry says how many operands the call takes, what its result dtype is, how TVM writes
it, and where it has a meaning:
- `result`: "operands" (the operands' common dtype), "float" (same, float operands),
  "dtype" (given by `dtype=` or, with `leading_dtype`, as the first argument), "bool",
  "int32" or "handle";
  (`lo`..`hi` count the operands after a leading dtype)
- `leading_dtype`: TVM writes the result dtype first (`T.call_extern("float32", "f", x)`);
- `device`: "cpu+gpu", "gpu" (warp-matrix and PTX intrinsics: a CPU build reaching one is
  an error at its place) or "scalable" (vscale: needs a scalable-vector target).
Whole device namespaces (`T.ptx.*`, `T.cuda.*`, ...) are GPU intrinsics of any name.
The reference interpreter and the backends implement the entries by name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TvmIntrinsic:
    """How one TVM intrinsic is called, typed and where it has a meaning."""

    name: str
    lo: int
    hi: int | None
    result: str
    leading_dtype: bool = False
    device: str = "cpu+gpu"
    strings: bool = False  # takes string operands (symbol names)


def _table(*entries: TvmIntrinsic) -> dict[str, TvmIntrinsic]:
    return {e.name: e for e in entries}


I = TvmIntrinsic  # noqa: E741 (a table, read as rows)

TVM_INTRINSICS: dict[str, TvmIntrinsic] = _table(
    # ---- integer and bit operations (printed as operators where Python has one) ---------
    I("shift_left", 2, 2, "operands"), I("shift_right", 2, 2, "operands"),
    I("bitwise_and", 2, 2, "operands"), I("bitwise_or", 2, 2, "operands"),
    I("bitwise_xor", 2, 2, "operands"), I("bitwise_not", 1, 1, "operands"),
    I("popcount", 1, 1, "operands"), I("clz", 1, 1, "operands"),
    I("q_multiply_shift", 4, 4, "operands"),
    # ---- float operations beyond tirc's math set ------------------------------------------
    I("fabs", 1, 1, "float"), I("isnan", 1, 1, "bool"), I("isinf", 1, 1, "bool"),
    I("isfinite", 1, 1, "bool"), I("nearbyint", 1, 1, "float"), I("log10", 1, 1, "float"),
    I("log1p", 1, 1, "float"), I("exp10", 1, 1, "float"), I("tan", 1, 1, "float"),
    I("sinh", 1, 1, "float"), I("cosh", 1, 1, "float"), I("asin", 1, 1, "float"),
    I("acos", 1, 1, "float"), I("atan", 1, 1, "float"), I("asinh", 1, 1, "float"),
    I("acosh", 1, 1, "float"), I("atanh", 1, 1, "float"), I("atan2", 2, 2, "float"),
    I("copysign", 2, 2, "float"), I("hypot", 2, 2, "float"), I("fmod", 2, 2, "float"),
    I("nextafter", 2, 2, "float"), I("ldexp", 2, 2, "float"),
    I("reinterpret", 1, 1, "dtype", leading_dtype=True),
    # ---- vector halves -------------------------------------------------------------------
    I("vectorlow", 1, 1, "dtype"), I("vectorhigh", 1, 1, "dtype"),
    I("vectorcombine", 2, 2, "dtype"),
    # ---- calls out of the kernel ---------------------------------------------------------
    I("call_extern", 1, None, "dtype", leading_dtype=True, strings=True),
    I("call_pure_extern", 1, None, "dtype", leading_dtype=True, strings=True),
    I("call_llvm_pure_intrin", 1, None, "dtype", leading_dtype=True, strings=True),
    I("call_llvm_intrin", 1, None, "dtype", leading_dtype=True, strings=True),
    I("address_of", 1, 1, "handle"),
    I("llvm_lookup_intrinsic_id", 1, 1, "int32", strings=True),
    # ---- scalable vectors (SVE) ----------------------------------------------------------
    I("vscale", 0, 0, "int32", device="scalable"),
    I("get_active_lane_mask", 2, 2, "dtype", leading_dtype=True, device="scalable"),
    # ---- warp-level matrix intrinsics and other GPU-only calls ---------------------------
    *(I(n, 0, None, "handle", device="gpu", strings=True) for n in (
        "tvm_mma_sync", "tvm_bmma_sync", "tvm_fill_fragment", "tvm_load_matrix_sync",
        "tvm_store_matrix_sync", "ptx_mma", "ptx_mma_sp", "ptx_ldmatrix", "ptx_cp_async",
        "ptx_cp_async_bulk", "ptx_commit_group", "ptx_wait_group", "ptx_cp_async_barrier",
        "ptx_init_barrier_thread_count", "ptx_arrive_barrier", "ptx_arrive_barrier_expect_tx",
        "ptx_wait_barrier", "mma_store", "mma_fill", "tvm_global_barrier_kinit",
        "tvm_thread_allreduce")),
    *(I(n, 0, None, "dtype", device="gpu") for n in (
        "tvm_warp_shuffle", "tvm_warp_shuffle_up", "tvm_warp_shuffle_down",
        "tvm_warp_shuffle_xor", "tvm_warp_activemask")),
)

# Device namespaces: `T.ptx.mov.b64(...)`, `T.cuda.warp_sync()`, ... (any member).
GPU_NAMESPACES = ("ptx", "ptx_legacy", "cuda", "metal", "nki", "nvshmem", "webgpu")


def tvm_intrinsic(name: str) -> TvmIntrinsic | None:
    """The entry for `name` (`"fabs"`, `"ptx.mov.b64"`), or None."""
    entry = TVM_INTRINSICS.get(name)
    if entry is not None:
        return entry
    head = name.split(".", 1)[0]
    if head in GPU_NAMESPACES and "." in name:
        return TvmIntrinsic(name, 0, None, "dtype", device="gpu", strings=True)
    return None


def gpu_only(name: str) -> bool:
    """Whether the intrinsic `name` only has a meaning on a GPU."""
    entry = tvm_intrinsic(name)
    return entry is not None and entry.device == "gpu"
