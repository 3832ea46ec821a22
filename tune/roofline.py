"""The analytic cost model: a roofline estimate of a candidate's time from its store features.

Per store, the time is the largest of: its floating-point work at the rate its vector lanes,
accumulation chains and parallel loops allow; its bytes through L1, into L1 from L2, and into L2
from memory at each level's bandwidth; plus the overhead of scalar loop iterations and of
starting parallel regions. The function's time is the sum over its stores. Without measurements
this ranks candidates on its own; with them, it is the prior the learned model corrects
(cost_model.py). `features` is the vector both models read.
"""

from __future__ import annotations

import math

from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.stmt import ForKind
from tirc.tune.features import (
    Access,
    Store,
    accumulators,
    lower_for_features,
    parallel_extent,
    stores,
    traffic,
    vector_lanes,
)
from tirc.tune.machine import Machine

FMA_LATENCY = 4          # cycles before an accumulator can be updated again
FMA_PORTS = 2
L1_BYTES_PER_CYCLE = 64.0
L2_BYTES_PER_CYCLE = 32.0
LOOP_CYCLES = 1.0        # per scalar iteration of a loop that is not unrolled or vectorized
PARALLEL_START = 3e-6    # seconds to start one parallel region
SPECIAL_FLOPS = 8        # a math call (exp, sqrt) costs like this many operations

FEATURE_NAMES = ("log_estimate", "log_compute", "log_l1", "log_l2", "log_memory",
                 "log_overhead", "log_flops", "lanes", "chains", "log_parallel", "balance",
                 "log_unroll", "stores", "depth", "log_trip_scalar", "reduction_share")


@dataclass(frozen=True)
class Estimate:
    """The roofline estimate of a candidate and the features it came from."""

    seconds: float
    features: tuple[float, ...]


def store_terms(st: Store, m: Machine) -> dict[str, float]:
    """The time terms of one store on machine `m`."""
    lanes_hw = max(m.vector_bits // 32, 1)
    hz = m.mhz * 1e6
    par = parallel_extent(st)
    used = min(par, m.cores) if par > 1 else 1
    balance = (math.ceil(par / m.cores) * m.cores / par) if par > 1 else 1.0
    lanes = vector_lanes(st, lanes_hw)
    chains = accumulators(st, lanes_hw)
    ops = (st.flops + SPECIAL_FLOPS * st.special) * st.trip
    fma = 2.0 if m.fma else 1.0
    per_cycle = lanes * fma * FMA_PORTS * min(1.0, chains / (FMA_LATENCY * FMA_PORTS))
    compute = ops / (per_cycle * hz * used) * balance
    moved = sum(_moved(st, a) for a in st.accesses if a.buffer.scope != "local")
    l1 = moved / (L1_BYTES_PER_CYCLE * hz * used) * balance
    l2 = traffic(st, m.l1) / (L2_BYTES_PER_CYCLE * hz * used) * balance
    memory = traffic(st, m.l2) / (m.memory_gbps * 1e9)
    scalar = math.prod(lp.extent for lp in st.loops
                       if lp.kind in (ForKind.SERIAL, ForKind.PARALLEL))
    overhead = scalar * LOOP_CYCLES / (hz * used) * balance
    unroll = math.prod(lp.extent for lp in st.loops if lp.kind == ForKind.UNROLLED)
    return {"compute": compute, "l1": l1, "l2": l2, "memory": memory, "overhead": overhead,
            "ops": float(ops), "lanes": lanes, "chains": min(chains, 64.0),
            "parallel": float(par), "balance": balance, "unroll": float(unroll),
            "depth": float(len(st.loops)), "scalar": float(scalar),
            "reduction": 1.0 if st.reduction else 0.0}


def _moved(st: Store, a: Access) -> float:
    """Bytes an access loads or stores over all trips; a broadcast along the vectorized loop
    is one load per vector."""
    vec = st.loops[-1].extent if st.loops and st.loops[-1].kind == ForKind.VECTORIZED else 1
    per_vector = vec if a.strides and a.strides[-1] == 0 else 1
    return a.elem_bytes * st.trip / per_vector


def estimate(func: PrimFunc, m: Machine, lowered: bool = False) -> Estimate:
    """The roofline time of a scheduled function and its feature vector."""
    body = (func if lowered else lower_for_features(func)).body
    terms = [store_terms(st, m) for st in stores(body)]
    starts = _parallel_regions(body)
    if not terms:
        return Estimate(PARALLEL_START, tuple([0.0] * len(FEATURE_NAMES)))
    per_store = [max(t["compute"], t["l1"], t["l2"], t["memory"]) + t["overhead"]
                 for t in terms]
    seconds = sum(per_store) + starts * PARALLEL_START
    total_ops = sum(t["ops"] for t in terms) or 1.0

    def weighted(key: str) -> float:
        return sum(t[key] * t["ops"] for t in terms) / total_ops if total_ops > 1 else \
            sum(t[key] for t in terms) / len(terms)

    def total(key: str) -> float:
        return math.log10(sum(t[key] for t in terms) + 1e-12)

    feats = (math.log10(seconds), total("compute"), total("l1"), total("l2"), total("memory"),
             total("overhead"), math.log10(total_ops), weighted("lanes"), weighted("chains"),
             math.log10(weighted("parallel") + 1), weighted("balance"),
             math.log10(weighted("unroll") + 1), float(len(terms)),
             max(t["depth"] for t in terms), total("scalar"), weighted("reduction"))
    return Estimate(seconds, feats)


def _parallel_regions(body: object) -> int:
    """How many times a parallel loop starts (its enclosing loops' trips)."""
    from tirc.ir.stmt import For
    from tirc.tune.features import UNKNOWN_EXTENT

    count = 0

    def walk(node: object, trips: int) -> None:
        nonlocal count
        if isinstance(node, For):
            if node.kind == ForKind.PARALLEL:
                count += trips
                return
            ext = getattr(node.extent, "value", UNKNOWN_EXTENT)
            walk(node.body, trips * ext)
            return
        for name in ("body", "then_case", "else_case", "block"):
            child = getattr(node, name, None)
            if child is not None:
                walk(child, trips)
        for child in getattr(node, "seq", ()):
            walk(child, trips)

    walk(body, 1)
    return count
