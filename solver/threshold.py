"""A threshold curve: the least best-so-far score a search must show at each checkpoint.

``curve[t]`` is the minimum ``best_by_step[t]`` (the best score present in the search once piece
t + 1 is placed); checks happen after pieces ``every, 2 * every, ...``; NaN entries are not checked.
A policy given a threshold stops at the first failed check and reports ``stop = "aborted"`` with
the piece and the threshold (Optuna's pruners compare a trial with finished trials the same way).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Threshold:
    curve: np.ndarray
    every: int = 1

    def __post_init__(self):
        if self.every < 1:
            raise ValueError("a threshold's checkpoint interval must be at least 1")

    def kernel_arrays(self, pieces: int) -> np.ndarray:
        """A float64 array of length ``pieces``: the threshold at checked pieces, -inf elsewhere."""
        out = np.full(pieces, -np.inf)
        curve = np.asarray(self.curve, dtype=np.float64)[:pieces]
        checked = np.arange(len(curve))
        checked = checked[(checked + 1) % self.every == 0]
        values = curve[checked]
        out[checked[~np.isnan(values)]] = values[~np.isnan(values)]
        return out
