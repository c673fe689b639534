"""Early abort of losing candidates (a pruner, in Optuna's vocabulary).

The threshold curve of generation g is built from the ``best_by_step`` curves of the K best finished
(not aborted) distinct candidates of generations before g: at each piece t,

    threshold[t] = kth[t] x (1 - relative) - margin,

kth[t] being the K-th best of their values at t (the lowest of the K); only every ``every``-th
piece is checked. The relative part widens the margin in proportion to the score reached: early in
the game a candidate storing cells for a big clear can trail by a large share and still finish
ahead, late in the game it cannot (`benchmarks/abort_whatif.py` measures this on finished runs). A curve
shorter than the others (a candidate that got stuck) counts with its last value afterwards. Until K
candidates have finished there is no threshold. Since generation g's threshold depends only on
earlier generations, a run is deterministic whatever the number of workers.
"""

from __future__ import annotations

import numpy as np

from solver import Threshold

from .config import EarlyAbortConfig


class EarlyAbort:
    def __init__(self, settings: EarlyAbortConfig):
        self.settings = settings
        # the K best finished candidates: (fitness, generation, index, key, curve), best first
        self.best: list[tuple[float, int, int, str, np.ndarray]] = []

    @property
    def ready(self) -> bool:
        return self.settings.enabled and len(self.best) >= self.settings.k

    def threshold(self) -> np.ndarray | None:
        """The per-piece threshold (-inf where not checked), or None when there is none yet."""
        if not self.ready:
            return None
        curves = [c for *_, c in self.best]
        n = max(len(c) for c in curves)
        stacked = np.empty((len(curves), n), dtype=np.float64)
        for i, c in enumerate(curves):
            stacked[i, : len(c)] = c
            stacked[i, len(c):] = c[-1] if len(c) else -np.inf
        curve = stacked.min(axis=0) * (1.0 - self.settings.relative) - self.settings.margin
        return Threshold(curve, self.settings.every).kernel_arrays(n)

    def kth_best(self) -> float | None:
        """The K-th best finished fitness the threshold is built from (None without a threshold)."""
        return float(self.best[-1][0]) if self.ready else None

    def observe(self, generation: int, entries) -> None:
        """Take in a finished generation: ``entries`` of (index, key, record, curve)."""
        if not self.settings.enabled:
            return
        known = {key for _, _, _, key, _ in self.best}
        for index, key, record, curve in entries:
            if record["aborted"] or key in known:
                continue
            known.add(key)
            self.best.append((float(record["fitness"]), generation, index, key, np.asarray(curve, dtype=np.int64)))
        self.best.sort(key=lambda e: (-e[0], e[1], e[2]))
        del self.best[self.settings.k:]
