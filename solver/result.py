"""What a solve returns, typed: `Outcome`, the fields every result has, and its kinds: `SolveResult`,
the path a policy found along the known sequence (with a policy's own `Report`, if it keeps one);
for a policy of unknown pieces, a series of seeded games (`solver.online.games.GamesSeries`) or of
splitting estimates (`solver.online.splitting.SplittingSeries`). Each kind's ``summary()`` is its
``summary.json``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np


@dataclass(kw_only=True)
class Outcome:
    """What every solve returns.

    - ``score``: the result's score (a path's points; a series' mean, rounded); ``pieces``: pieces
      placed (a series: over all its games or estimates);
    - ``best_by_step``: the curve early abort compares with its threshold, one value a step: the
      best score in the search after each piece of the known sequence, or a series' running mean
      after each game or estimate;
    - ``clear_kinds``: clear events by rows cleared, index 1..4 (index 0 unused);
    - ``stop``: why it stopped: ``done``, ``stuck`` (no placement survives), ``spawn_blocked``,
      ``aborted`` (below the threshold curve, see ``abort_piece`` and ``abort_threshold``: the
      step, 1-based, and the value it fell below) or ``interrupted`` (Ctrl-C: the best found so far);
    - ``nodes``: positions the search valued (0 for a series);
    - ``seconds``: wall time of the search, kernels already compiled or loaded;
    - ``record``, ``end``: the contest record and the project replayer's verdict on it (a path's,
      filled in by `solver.record.attach_record`; a series has none).
    """

    score: int
    pieces: int
    best_by_step: np.ndarray
    clear_kinds: tuple
    stop: str = "done"
    abort_piece: int | None = None
    abort_threshold: float | None = None
    nodes: int = 0
    seconds: float = 0.0
    record: str | None = None
    end: str | None = None

    @property
    def aborted(self) -> bool:
        return self.stop == "aborted"

    def summary(self) -> dict:
        """A JSON-ready dict (curves as lists): summary.json's fields."""
        return {
            "score": int(self.score),
            "pieces": int(self.pieces),
            "end": self.end,
            "stop": self.stop,
            "abort_piece": self.abort_piece,
            "abort_threshold": self.abort_threshold,
            "clears": {str(k): int(self.clear_kinds[k]) for k in range(1, 5)},
            "nodes": int(self.nodes),
            "seconds": round(float(self.seconds), 3),
        }


class Report:
    """A policy's own account of its search, beside its path (`SolveResult.report`): a typed
    dataclass of its kind, whose ``summary()`` is summary.json's section ``key`` (the policy's name)."""

    key: ClassVar[str]
    #: the sittings a saved search ran in, oldest first (each with its ``seconds``): a resumable
    #: policy's report overrides it; a search made in one go has none
    sittings: tuple = ()

    def summary(self) -> dict:
        raise NotImplementedError


@dataclass(kw_only=True)
class SolveResult(Outcome):
    """What a policy found along the known sequence (every field of `Outcome`, and):

    - ``score_by_step[t]``: the path's score after its piece t + 1 (length ``pieces``);
      ``best_by_step[t]`` the best score present in the search after piece t + 1 (a beam layer's
      maximum; the path's own score for greedy and lookahead);
    - ``placements``: (pieces, 3) array of (x, y, state), one per piece;
    - ``report``: the policy's own `Report` (`backsearch`, `profile_dp`, `segment`), else None;
    - ``seconds``: wall time of the search (`Policy.run` warms the kernels up first).
    """

    score_by_step: np.ndarray
    placements: np.ndarray
    report: Report | None = None

    def summary(self) -> dict:
        out = {**super().summary(),
               "score_by_step": [int(v) for v in self.score_by_step],
               "best_by_step": [int(v) for v in self.best_by_step]}
        if self.report is not None:
            out[self.report.key] = self.report.summary()
        return out
