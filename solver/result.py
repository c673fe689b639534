"""The one result type every policy returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class SolveResult:
    """What a policy found along the known sequence.

    - ``score``: points of the chosen path; ``pieces``: pieces it places;
    - ``score_by_step[t]``: the path's score after its piece t + 1 (length ``pieces``);
    - ``best_by_step[t]``: the best score present in the search after piece t + 1 (a beam layer's
      maximum; the path's own score for greedy and lookahead), the curve early abort compares;
    - ``clear_kinds``: clear events of the path by rows cleared, index 1..4 (index 0 unused);
    - ``placements``: (pieces, 3) array of (x, y, state), one per piece;
    - ``stop``: why the policy stopped: ``done`` (all pieces placed), ``stuck`` (no placement
      survives), ``spawn_blocked``, ``aborted`` (below the threshold curve, see ``abort_piece``
      and ``abort_threshold``) or ``interrupted`` (Ctrl-C in an interruptible run: the best path
      found so far);
    - ``record``, ``end``: filled in by `solver.record.attach_record` (the record and the
      project replayer's verdict on it); ``seconds``: wall time of the search, kernels already
      compiled or loaded (`Policy.run` warms them up first).
    """

    score: int
    pieces: int
    score_by_step: np.ndarray
    best_by_step: np.ndarray
    clear_kinds: tuple
    placements: np.ndarray
    stop: str = "done"
    abort_piece: int | None = None
    abort_threshold: float | None = None
    nodes: int = 0
    seconds: float = 0.0
    record: str | None = None
    end: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def aborted(self) -> bool:
        return self.stop == "aborted"

    def summary(self) -> dict:
        """A JSON-ready dict (curves as lists)."""
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
            "score_by_step": [int(v) for v in self.score_by_step],
            "best_by_step": [int(v) for v in self.best_by_step],
            **self.extra,
        }
