"""Cost models that rank candidates before any is built.

`AnalyticModel` is the roofline estimate alone (roofline.py). `BoostedModel` (xgboost, from the
optional extra `tirc[tune]`) learns, from the candidates measured so far, the error of that
estimate: it fits log(measured / estimated) on the store features and predicts the estimate
times its correction, so from the first trial on the ranking is the roofline's, bent by what
was measured (no random warm-up). `make_model` picks the boosted one when xgboost is installed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from tirc.tune.roofline import Estimate

MIN_SAMPLES = 4   # measured candidates before the learned correction is used


class CostModel(Protocol):
    """Predicted seconds for candidates, improved by measurements."""

    name: str

    def predict(self, estimates: Sequence[Estimate]) -> list[float]:
        ...

    def update(self, estimates: Sequence[Estimate], seconds: Sequence[float]) -> None:
        ...


class AnalyticModel:
    """The roofline estimate, unchanged by measurements."""

    name = "analytic"

    def predict(self, estimates: Sequence[Estimate]) -> list[float]:
        return [e.seconds for e in estimates]

    def update(self, estimates: Sequence[Estimate], seconds: Sequence[float]) -> None:
        """Nothing to learn."""


class BoostedModel:
    """Gradient-boosted trees on the store features, fitting the roofline's log error."""

    name = "xgboost"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.xs: list[tuple[float, ...]] = []
        self.ys: list[float] = []
        self.booster: object | None = None

    def update(self, estimates: Sequence[Estimate], seconds: Sequence[float]) -> None:
        for e, s in zip(estimates, seconds):
            if math.isfinite(s) and s > 0:
                self.xs.append(e.features)
                self.ys.append(math.log10(s) - math.log10(e.seconds))
        if len(self.ys) >= MIN_SAMPLES:
            self._fit()

    def _fit(self) -> None:
        import numpy as np
        import xgboost as xgb

        data = xgb.DMatrix(np.array(self.xs, dtype=np.float32), label=np.array(self.ys))
        params = {"max_depth": 4, "eta": 0.2, "subsample": 1.0, "min_child_weight": 1,
                  "objective": "reg:squarederror", "seed": self.seed, "nthread": 1,
                  "verbosity": 0}
        rounds = min(20 + 2 * len(self.ys), 120)
        self.booster = xgb.train(params, data, num_boost_round=rounds)

    def predict(self, estimates: Sequence[Estimate]) -> list[float]:
        if self.booster is None or not estimates:
            return [e.seconds for e in estimates]
        import numpy as np
        import xgboost as xgb

        data = xgb.DMatrix(np.array([e.features for e in estimates], dtype=np.float32))
        fix = self.booster.predict(data)  # type: ignore[attr-defined]
        return [e.seconds * 10.0 ** float(f) for e, f in zip(estimates, fix)]


def have_xgboost() -> bool:
    try:
        import xgboost  # noqa: F401
    except ImportError:
        return False
    return True


def make_model(kind: str = "auto", seed: int = 0) -> CostModel:
    """`xgboost` (an error without it), `analytic`, or `auto`: xgboost when installed."""
    if kind == "analytic" or (kind == "auto" and not have_xgboost()):
        return AnalyticModel()
    if not have_xgboost():
        raise RuntimeError("the xgboost cost model needs the tune extra: "
                           "pip install 'tirc[tune]'")
    return BoostedModel(seed)
