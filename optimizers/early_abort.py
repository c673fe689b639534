"""Early abort of losing candidates (a pruner, in Optuna's vocabulary): `EarlyAbort`.

The threshold curve of generation g is built from the ``best_by_step`` curves of the K best finished
(not aborted) distinct candidates of generations before g: at each ``every``-th piece t,

    threshold[t] = kth[t] x (1 - relative) - margin,

kth[t] being the K-th best of their values at t (a shorter curve counts with its last value
afterwards), ``lag`` pieces late. A ``reference`` record's score (`reference_curve`,
``reference_lag`` pieces late) is a floor under kth[t], and gives a threshold from the first
generation; otherwise there is none until K candidates have finished. Since generation g's
threshold depends only on earlier generations, a run is deterministic whatever the number of workers.

Why the relative part and the lags, and measuring a rule: docs/tuning.md, 'Tuning runs'.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from engine.provenance import ROOT
from solver import Threshold

from .config import EarlyAbortConfig, RunConfig


#: replayed reference records kept in memory (a run uses one; a notebook comparing runs a few)
REPLAYS_KEPT = 8


def reference_curve(path: str | Path, rules: str) -> np.ndarray:
    """The score after each piece (piece 1 first) of the contest record in ``path``, replayed by the
    engine under the named rules; a relative ``path`` is the project's, from the checkout (as a
    resolved run config records it). Raises ValueError for a record the engine rejects. A record is
    replayed once per process while its file is unchanged (a run's config check, its pruner and
    its figures all ask for it)."""
    p = Path(path)
    p = (p if p.is_absolute() else ROOT / p).resolve()
    stat = p.stat()
    return _replayed(p, stat.st_mtime_ns, stat.st_size, rules).copy()


@functools.lru_cache(maxsize=REPLAYS_KEPT)
def _replayed(path: Path, mtime_ns: int, size: int, rules: str) -> np.ndarray:
    from engine import get_rules, replay
    from engine.files import MAX_RECORD_BYTES, read_text

    verdict = replay(read_text(path, MAX_RECORD_BYTES, "a record"), get_rules(rules))  # (ReadError: a ValueError)
    if not verdict.valid:
        raise ValueError(f"{path}: not a valid record ({verdict.error})")
    return np.asarray(verdict.score_by_piece[1:], dtype=np.float64)


def _extended(curve: np.ndarray, n: int) -> np.ndarray:
    """``curve`` as n values, its last value repeated (-inf for an empty curve)."""
    out = np.empty(n, dtype=np.float64)
    out[: len(curve)] = curve[:n]
    out[len(curve):] = curve[-1] if len(curve) else -np.inf
    return out


def _lagged(curve: np.ndarray, lag: int) -> np.ndarray:
    """``curve`` ``lag`` pieces later: its value at piece t is ``curve``'s at t - lag (its first
    value before that)."""
    return curve[np.maximum(np.arange(len(curve)) - lag, 0)]


class EarlyAbort:
    def __init__(self, settings: EarlyAbortConfig, reference: np.ndarray | None = None):
        self.settings = settings
        self.reference = reference
        # the K best finished candidates: (fitness, generation, index, key, curve), best first
        self.best: list[tuple[float, int, int, str, np.ndarray]] = []

    @classmethod
    def for_run(cls, config: RunConfig) -> "EarlyAbort":
        """The pruner of a resolved run config, its reference record (if any) replayed."""
        settings = config.early_abort
        reference = None
        if settings.enabled and settings.reference is not None:
            reference = reference_curve(settings.reference, config.solver.rules)
        return cls(settings, reference)

    def state_dict(self) -> dict:
        """What the pruner carries between generations: its K best finished candidates (the
        settings and the reference come from the run's config)."""
        return {"best": [{"fitness": f, "generation": g, "index": i, "key": k, "curve": c}
                         for f, g, i, k, c in self.best]}

    def load_state(self, f) -> None:
        """Take back the candidates `state_dict` saved (`engine.statefile.Fields`)."""
        best = []
        for e in f.subs("best"):
            best.append((e.float("fitness"), e.int("generation", 0), e.int("index", 0), e.str("key"),
                         e.array("curve", np.int64, ndim=1)))
        if len(best) > self.settings.k:
            f.fail("best", f"{len(best)} candidates, more than k = {self.settings.k}")
        self.best = best

    @property
    def ready(self) -> bool:
        return self.settings.enabled and len(self.best) >= self.settings.k

    def threshold(self) -> np.ndarray | None:
        """The per-piece threshold (-inf where not checked), or None when there is none yet."""
        if not self.settings.enabled:
            return None
        floors = []
        if self.ready:
            curves = [c for *_, c in self.best]
            n = max(len(c) for c in curves)
            kth = np.min([_extended(c, n) for c in curves], axis=0)
            floors.append(_lagged(kth, self.settings.lag))
        if self.reference is not None:
            floors.append(_lagged(self.reference, self.settings.reference_lag))
        if not floors:
            return None
        n = max(len(f) for f in floors)
        floor = np.max([_extended(f, n) for f in floors], axis=0)
        curve = floor * (1.0 - self.settings.relative) - self.settings.margin
        return Threshold(curve, self.settings.every).kernel_arrays(n)

    def against(self, curve) -> np.ndarray | None:
        """The threshold a candidate is held to on an instance where the incumbent's ``best_by_step``
        is ``curve`` (a race on the known sequence: the same tie seed): the incumbent's curve
        ``lag`` pieces later, times (1 - ``relative``), less ``margin``; None when off."""
        if not self.settings.enabled or curve is None or len(curve) == 0:
            return None
        floor = _lagged(np.asarray(curve, dtype=np.float64), self.settings.lag)
        n = len(floor)
        return Threshold(floor * (1.0 - self.settings.relative) - self.settings.margin,
                         self.settings.every).kernel_arrays(n)

    def kth_best(self) -> float | None:
        """The K-th best finished fitness the threshold is built from (None without a threshold)."""
        return float(self.best[-1][0]) if self.ready else None

    def observe(self, generation: int, entries) -> None:
        """Take in a finished generation: ``entries`` of (index, key, record, curve), each record a
        `optimizers.fitness.TuningRecord`."""
        if not self.settings.enabled:
            return
        known = {key for _, _, _, key, _ in self.best}
        for index, key, record, curve in entries:
            if record.aborted or key in known:
                continue
            known.add(key)
            self.best.append((float(record.fitness), generation, index, key, np.asarray(curve, dtype=np.int64)))
        self.best.sort(key=lambda e: (-e[0], e[1], e[2]))
        del self.best[self.settings.k:]
