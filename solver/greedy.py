"""Greedy: each piece goes where the evaluator values the resulting board most."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.lock import spawn_blocked, spawn_state
from engine.movegen import capacity, new_scratch, placements_into, rows_for
from evaluators import board_values, priority

from ._base import ABORTED, BLOCKED, GOING, STUCK, Policy, commit, new_path, path_result, value_child, value_scratch
from .config import GreedyConfig
from .registry import register

#: pieces per kernel call (progress and Ctrl-C between calls)
CHUNK = 500


@njit(cache=True)
def best_placement(board, shape, t, rules, spec, sc, found, vs):
    """Index into ``found`` of the best placement of piece ``t`` on ``board`` (-1 when every
    placement tops out), and its value; ties go to the lower `evaluators.priority`, then the first
    generated. ``found`` receives the placements (``sc``: the move generator's scratch, ``vs``: the
    valuing scratch)."""
    ss = spawn_state(t, rules)
    n = placements_into(board, rules, shape, ss, sc, found)
    board_values(board, rules.width, spec, vs.pvals)
    best = -1
    best_value = -np.inf
    best_rank = 0
    for k in range(n):
        x, y, s = found[k, 0], found[k, 1], found[k, 2]
        alive, v = value_child(board, rules, shape, s, x, y, t + 1, spec, vs)
        if not alive:
            continue
        rank = priority(spec, x, s, rules.spawn_x, ss)
        if best < 0 or v > best_value or (v == best_value and rank < best_rank):
            best, best_value, best_rank = k, v, rank
    return best, best_value


@njit(cache=True)
def greedy_run(sequence, t0, t1, board, rules, spec, threshold, score, path):
    """Play pieces t0 .. t1-1 greedily from ``board`` (updated in place), recording into ``path``;
    returns (pieces done, score, stop code: `GOING`, `STUCK`, `BLOCKED` or `ABORTED`)."""
    sc = new_scratch(rows_for(rules.height), 1)
    vs = value_scratch(spec.terms.shape[1], rules.height)
    found = np.zeros((capacity(rules.height, rules.width), 3), np.int64)
    for t in range(t0, t1):
        shape = sequence[t]
        if spawn_blocked(board, rules, shape, spawn_state(t, rules)):
            return t, score, BLOCKED
        k, _ = best_placement(board, shape, t, rules, spec, sc, found, vs)
        if k < 0:
            return t, score, STUCK
        score = commit(board, rules, shape, found[k, 0], found[k, 1], found[k, 2], t, score, path)
        if score < threshold[t]:
            return t + 1, score, ABORTED
    return t1, score, GOING


@register
class Greedy(Policy):
    name = "greedy"
    Settings = GreedyConfig

    def search(self, threshold, progress):
        rules, n = self.rules, self.pieces
        board = np.zeros(rules.height, np.uint16)
        path = new_path(n)
        done, score, stop = 0, 0, GOING
        while done < n and stop == GOING:
            done, score, stop = greedy_run(self.sequence, done, min(n, done + CHUNK), board, rules.kernel,
                                           self.evaluator.spec, threshold, score, path)
            if progress:
                progress(done, n, int(score))
            stop = self.chunk_stop(stop, done)
        return path_result(score, done, stop, path, threshold, done)

