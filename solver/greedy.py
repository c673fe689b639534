"""Greedy: each piece goes where the evaluator values the resulting board most."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.movegen import Scratch, placements_into
from engine.play import GOING_ON, lock_and_score, spawn_blocked, spawn_state
from evaluators.kernel import parent_values

from ._base import TIE_BREAKS, Policy, priority, value_child
from .result import SolveResult

STOP_NAMES = ("done", "stuck", "spawn_blocked", "aborted")


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
        x, y, s = found[k, 0], found[k, 1], found[k, 2]
        end, f, points = lock_and_score(board, R[0][shape, s], x, y, t + 1, R)
        score += points
        if f and end == GOING_ON:
            kinds[f] += 1
        out_place[t, 0] = x
        out_place[t, 1] = y
        out_place[t, 2] = s
        score_by_step[t] = score
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
        result = SolveResult(
            score=int(score), pieces=done, score_by_step=by_step[:done], best_by_step=by_step[:done].copy(),
            clear_kinds=tuple(int(v) for v in kinds), placements=places[:done],
            stop=STOP_NAMES[stop] if stop >= 0 else "done", nodes=done)
        if result.aborted:
            result.abort_piece = done
            result.abort_threshold = float(threshold[done - 1])
        return result
