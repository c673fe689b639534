"""Greedy: each piece goes where the evaluator values the resulting board most."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.movegen import Scratch, placements_into
from engine.play import spawn_blocked, spawn_state
from evaluators.kernel import parent_values

from ._base import TIE_BREAKS, Policy, commit, path_result, priority, value_child


@njit(cache=True)
def best_placement(board, shape, t, R, spec, tie_break, sc_fit, sc_free, sc_visited, sc_front, sc_nxt,
                   sc_layers, found, pvals, locked, cleared):
    """Index into ``found`` of the best placement of piece ``t`` on ``board`` (-1 when every
    placement tops out), and its value. ``found`` receives the placements."""
    cells = R[0]
    width = R[3]
    ss = spawn_state(t, R)
    n = placements_into(board, cells[shape], R[1][shape], width, R[5], R[6], ss, R[12], sc_fit, sc_free,
                        sc_visited, sc_front, sc_nxt, sc_layers, found)
    parent_values(board, width, spec, pvals)
    best = -1
    best_value = -np.inf
    best_rank = 0
    for k in range(n):
        x, y, s = found[k, 0], found[k, 1], found[k, 2]
        alive, v = value_child(board, pvals, cells[shape, s], x, y, R, spec, locked, cleared)
        if not alive:
            continue
        rank = priority(tie_break, x, s, R[5], ss)
        if best < 0 or v > best_value or (v == best_value and rank < best_rank):
            best, best_value, best_rank = k, v, rank
    return best, best_value


@njit(cache=True)
def greedy_run(sequence, t0, t1, board, R, spec, tie_break, threshold, score_in, kinds, out_place,
               score_by_step, sc_fit, sc_free, sc_visited, sc_front, sc_nxt, sc_layers, found):
    """Play pieces t0 .. t1-1 greedily from ``board`` (updated in place); returns (pieces done,
    score, stop code: -1 going on, 1 stuck, 2 spawn blocked, 3 aborted)."""
    height = board.shape[0]
    pvals = np.zeros(spec[0].shape[0])
    locked = np.zeros(height, np.uint16)
    cleared = np.zeros(height, np.uint16)
    score = score_in
    for t in range(t0, t1):
        shape = sequence[t]
        if spawn_blocked(board, R[0][shape, spawn_state(t, R)], R):
            return t, score, 2
        k, _ = best_placement(board, shape, t, R, spec, tie_break, sc_fit, sc_free, sc_visited, sc_front,
                              sc_nxt, sc_layers, found, pvals, locked, cleared)
        if k < 0:
            return t, score, 1
        score = commit(board, shape, found[k, 0], found[k, 1], found[k, 2], t, R, score, kinds, out_place,
                       score_by_step)
        if score < threshold[t]:
            return t + 1, score, 3
    return t1, score, -1


class Greedy(Policy):
    name = "greedy"

    def search(self, threshold, progress):
        rules, n = self.rules, self.pieces
        sc = Scratch(rules.height, rules.max_steps)
        board = np.zeros(rules.height, np.uint16)
        kinds = np.zeros(5, np.int64)
        places = np.zeros((n, 3), np.int64)
        by_step = np.zeros(n, np.int64)
        spec = self.evaluator.spec
        tie = TIE_BREAKS[self.evaluator.tie_break]
        done, score, stop = 0, 0, -1
        chunk = 500
        while done < n and stop < 0:
            done, score, stop = greedy_run(
                self.sequence, done, min(n, done + chunk), board, rules.kernel, spec, tie, threshold, score,
                kinds, places, by_step, sc.fit, sc.free, sc.visited, sc.front, sc.nxt, sc.layers, sc.out)
            if progress:
                progress(done, n, int(score))
            stop = self.chunk_stop(stop, done)
        return path_result(score, done, stop, kinds, places, by_step, threshold, done)
