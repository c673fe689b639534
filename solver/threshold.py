"""Early abort: the least best-so-far score a search must show after each piece, and the one rule
that checks it.

A `Threshold` is a curve as a tuner gives it: ``curve[t]`` is the minimum ``best_by_step[t]`` (the
best score present in the search once piece t + 1 is placed); checks happen after pieces ``every,
2 * every, ...``; NaN entries are not checked. A search is held to it through a `Pruner`, its
per-piece array (-inf where nothing is checked) with one question, `Pruner.should_stop`: a policy
stops at the first failed check and reports ``stop = "aborted"`` with the piece and the threshold
(Optuna's pruners compare a trial with finished trials the same way).

The rule itself is `below`, a kernel: the searches' kernels (greedy, lookahead, beam, backsearch)
call it per piece on the pruner's array, which is what they take at their boundary (a kernel cannot
ask a Python object), and `Pruner.should_stop` runs the same function as written; `first_below`
finds the first failed check of a whole curve (a remembered candidate's, a backsearch's tail).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine._jit.decorators import inlined


@inlined
def below(threshold, t, best):
    """Whether a search whose best score after piece ``t`` (0-based) is ``best`` fails its check
    there: ``best`` under ``threshold[t]`` (-inf or NaN: no check, never fails)."""
    return best < threshold[t]


@inlined
def first_below(scores, threshold, lo, hi):
    """The first piece u in [lo, hi) whose score ``scores[u]`` fails its check (`below`), or -1."""
    for u in range(max(lo, 0), hi):
        if below(threshold, u, scores[u]):
            return u
    return -1


class Pruner:
    """The early abort a search of ``pieces`` pieces is held to: ``curve``, a float64 array of one
    threshold a piece (-inf where nothing is checked), which kernels take as it is; `should_stop`
    is the question a search's Python side asks after a piece."""

    def __init__(self, curve):
        self.curve = np.ascontiguousarray(curve, dtype=np.float64)

    @classmethod
    def unchecked(cls, pieces: int) -> "Pruner":
        """The pruner that never stops a search of ``pieces`` pieces."""
        return cls(np.full(pieces, -np.inf))

    def should_stop(self, t: int, best) -> bool:
        """Whether a search whose best score after piece ``t`` (0-based) is ``best`` stops there (`below`)."""
        return bool(below.py_func(self.curve, t, best))


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

    def pruner(self, pieces: int) -> Pruner:
        """The `Pruner` of a search of ``pieces`` pieces (`kernel_arrays`)."""
        return Pruner(self.kernel_arrays(pieces))
