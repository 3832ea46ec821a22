"""Store features, the roofline estimate and the learned model: real outcomes on matmuls."""

from __future__ import annotations

import math

from tirc.tune.cost_model import AnalyticModel, BoostedModel, have_xgboost, make_model
from tirc.tune.features import lower_for_features, stores, traffic, workload_cost
from tirc.tune.roofline import FEATURE_NAMES, estimate
from tirc.tune.tasks import extract_tasks
from tune_support import MACHINE, matmul_module


def space():
    return extract_tasks(matmul_module(), "llvm", {})[0].space


def test_work_of_a_matmul():
    mod = matmul_module()
    flops, nbytes = workload_cost(mod["mm"])  # type: ignore[arg-type]
    assert flops == 2 * 64 ** 3 and nbytes == 3 * 64 * 64 * 4


def test_store_features_of_a_tiled_matmul():
    cand = space().apply({"tile_i": [8, 8], "tile_j": [2, 32], "u": 0})
    lowered = lower_for_features(cand.func)
    found = list(stores(lowered.body))
    update = [s for s in found if s.reduction][0]
    assert [lp.extent for lp in update.loops] == [8, 2, 64, 8, 32]
    assert update.flops == 2 and update.trip == 64 ** 3
    a = [x for x in update.accesses if x.buffer.name == "A"][0]
    assert a.strides == [512, 0, 1, 64, 0]  # i_0 moves 8 rows, k one element, i_1 one row
    # the whole nest touches A, B and C once: 48 KiB fits a 64 KiB cache
    assert traffic(update, 65536) == 3 * 64 * 64 * 4


def test_roofline_ranks_vectorised_register_tiles_above_scalar_rows():
    sp = space()
    good = estimate(sp.apply({"tile_i": [8, 8], "tile_j": [2, 32], "u": 0}).func, MACHINE)
    bad = estimate(sp.apply({"tile_i": [2, 32], "tile_j": [64, 1], "u": 0}).func, MACHINE)
    assert good.seconds * 4 < bad.seconds
    assert len(good.features) == len(FEATURE_NAMES)
    assert all(math.isfinite(x) for x in good.features)


def test_models():
    sp = space()
    ests = [estimate(sp.apply({}, seed).func, MACHINE) for seed in range(8)]
    assert AnalyticModel().predict(ests) == [e.seconds for e in ests]
    assert make_model("analytic").name == "analytic"
    if not have_xgboost():
        return
    model = BoostedModel()
    assert model.predict(ests) == [e.seconds for e in ests]  # the prior before any data
    truth = [e.seconds * (3.0 if e.features[7] > 4 else 1.0) for e in ests]
    model.update(ests, truth)
    got = model.predict(ests)
    assert all(abs(math.log10(g / t)) < 0.2 for g, t in zip(got, truth))
