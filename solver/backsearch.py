"""Base + back-search: the 881,026 Go solver's approach, three modes over one lookahead kernel.

Terms (pieces are 0-based here; a *mode* is which evaluator and lookahead chose a piece):

- **base** (optional): the first pieces build a foundation of the bottom ``base_rows`` rows in which
  every row has exactly one empty cell. They are chosen by the survival lookahead among placements
  that fill none of those rows and leave at most one hole in each (`lookahead.base_allowed`),
  each placement worth ``base_cell_value`` more per occupied cell in those rows (so the lookahead
  fills them first).
  The base is done once each of those rows holds ``width - 1`` cells; if no allowed placement
  survives the lookahead first, or ``base_max_pieces`` pieces have not done it, the base is given
  up where it stands and play goes on for points.
- **points**: the points-first lookahead (its evaluator, ``depth``, ``keep_fraction``).
- **death**: the lookahead of piece t finds no path that survives its depth (or no placement).
  Piece t is then the *point of death*: the path is cut back ``backup`` pieces (never into the
  base) and replayed from there by the survival-first lookahead up to and including piece t; then
  points-first play resumes.
- **survival**: the survival-first lookahead (its evaluator, ``survival_depth``,
  ``survival_keep_fraction``). If it too finds death during a replay, the replay restarts
  ``backup`` pieces further back, at most ``max_backups`` times per point of death; after that the
  best placement is taken as it is, and the game stops (``stuck``) only when none survives.

The threshold curve (early abort) is checked on the final path: piece t once no back-up can undo it
any more, after piece t + ``backup`` x (1 + ``max_backups``), or at the end of the game; a failed
check ends the path at piece t (``stop = "aborted"``).

The search is `lookahead.lookahead_choice` (numba); the loop over pieces, back-ups included, is one
numba kernel too (`backsearch_run`), so no Python runs per piece. Deterministic: no randomness, and
ties are broken as in the lookahead policy.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.movegen import capacity
from engine.board import popcount
from engine.lock import spawn_blocked, spawn_state
from evaluators import load_evaluator

from ._base import Policy, commit, path_result, path_scores
from .lookahead import DEAD, lookahead_choice

#: modes, as stored per piece
BASE, POINTS, SURVIVAL = 0, 1, 2
MODE_NAMES = ("base", "points", "survival")
#: a result's ``extra["backsearch"]`` holds: ``modes`` (pieces of the final path placed in each
#: mode), ``placements_made`` (every placement made in each mode, undone ones included),
#: ``backups``, ``pieces_undone``, ``base_end`` (pieces before the base was done or given up; null
#: when the run stopped first) and ``mode_by_step`` (one letter per piece of the path: b, p, s)

# slots of the kernel's state vector (kept between calls, so progress can be shown between them)
T, SCORE, BASE_DONE, BASE_END, SURVIVAL_END, SEGMENT, BACKUPS_HERE, BACKUPS, UNDONE, NODES = range(10)
N_STATE = 10


@njit(cache=True)
def _base_complete(board, base_rows, width):
    """Whether each of the bottom ``base_rows`` rows holds exactly ``width - 1`` cells."""
    height = board.shape[0]
    for y in range(height - base_rows, height):
        if popcount(np.int64(board[y])) != width - 1:
            return False
    return True


@njit(cache=True)
def _cut_back(st, by_step, start, t):
    """Cut the path back from piece ``t`` to piece ``start`` (a back-up): pieces start..t-1 are undone."""
    st[UNDONE] += t - start
    st[BACKUPS] += 1
    st[T] = start
    st[SCORE] = by_step[start - 1] if start > 0 else 0


@njit(cache=True)
def _first_below(by_step, threshold, lo, hi):
    """The first piece u in [lo, hi) whose score is below ``threshold[u]``, or -1."""
    for u in range(max(lo, 0), hi):
        if by_step[u] < threshold[u]:
            return u
    return -1


@njit(cache=True)
def backsearch_run(sequence, budget, n_total, hist, R, pspec, ptie, sspec, stie, p_depth, p_keep, s_depth,
                   s_keep, last_only, base_rows, base_max, base_cell_value, backup, max_backups, reach, threshold,
                   st, places, by_step, modes, made, cap):
    """Advance the game in ``st`` (see the slot names) by at most ``budget`` placements, back-ups
    included. ``hist[t]`` is the board before piece t of the current path, ``places``/``by_step``/
    ``modes`` its placements, scores and modes; ``made[mode]`` counts every placement made
    (undone ones too). Piece t's score is checked against ``threshold[t]`` once piece t + ``reach``
    is placed (no back-up reaches further), and the last ``reach`` pieces when the game stops.
    Returns the stop code: -1 going on, 0 done, 1 stuck, 2 spawn blocked, 3 aborted (the path then
    ends at the failed piece)."""
    height = hist.shape[1]
    width = R[3]
    depth = max(p_depth, s_depth)
    rows = height + 4
    found, values, ranks, order, nkept, pos, acc, boards = lookahead_workspace(depth, cap, height)
    pvals = np.zeros(max(pspec[0].shape[0], sspec[0].shape[0]))
    locked = np.zeros(height, np.uint16)
    cleared = np.zeros(height, np.uint16)
    sc_fit, sc_free, sc_visited, sc_front, sc_nxt, sc_layers = scratch_arrays(rows)
    kinds = np.zeros(5, np.int64)  # recomputed from the final path by the caller
    board = np.zeros(height, np.uint16)
    if base_rows == 0 and st[BASE_DONE] == 0:
        st[BASE_DONE] = 1
        st[BASE_END] = 0
    stop = -1
    for _ in range(budget):
        t = st[T]
        if t >= n_total:
            stop = 0
            break
        board[:] = hist[t]
        shape = sequence[t]
        floor = st[BASE_END]
        if st[BASE_DONE] == 0 and t >= base_max:
            st[BASE_DONE] = 1
            st[BASE_END] = t
        # the mode decides the lookahead: survival-first (base and survival) or points-first
        if st[BASE_DONE] == 0:
            mode = BASE
        elif t <= st[SURVIVAL_END]:
            mode = SURVIVAL
        else:
            mode = POINTS
            st[BACKUPS_HERE] = 0
        if mode == POINTS:
            spec, tie, d, keep, rows_kept, cell_value = pspec, ptie, p_depth, p_keep, 0, 0.0
        else:
            spec, tie, d, keep = sspec, stie, s_depth, s_keep
            rows_kept, cell_value = (base_rows, base_cell_value) if mode == BASE else (0, 0.0)
        x, y, s, nodes, worth = lookahead_choice(
            board, t, n_total, sequence, R, spec, tie, d, keep, last_only, found, values, ranks, order, nkept,
            pos, acc, boards, pvals[: spec[0].shape[0]], locked, cleared, sc_fit, sc_free, sc_visited, sc_front,
            sc_nxt, sc_layers, rows_kept, cell_value)
        st[NODES] += nodes
        if x == -1 or worth < -DEAD / 2:  # every path dies within the lookahead
            if mode == BASE:  # no base placement survives: give the base up
                st[BASE_DONE] = 1
                st[BASE_END] = t
                continue
            if mode == POINTS:  # the point of death: replay from back there, survival-first
                start = max(floor, t - backup)
                st[SURVIVAL_END] = t
                st[SEGMENT] = start
                if start < t:
                    _cut_back(st, by_step, start, t)
                continue
            if st[BACKUPS_HERE] < max_backups and st[SEGMENT] > floor and backup > 0:  # back up further
                start = max(floor, st[SEGMENT] - backup)
                st[SEGMENT] = start
                st[BACKUPS_HERE] += 1
                _cut_back(st, by_step, start, t)
                continue
        if x == -1:
            stop = 2 if spawn_blocked(board, R[0][shape, spawn_state(t, R)], R) else 1
            break
        made[mode] += 1
        modes[t] = mode
        st[SCORE] = commit(board, shape, x, y, s, t, R, st[SCORE], kinds, places, by_step)
        hist[t + 1] = board
        st[T] = t + 1
        if mode == BASE and _base_complete(board, base_rows, width):
            st[BASE_DONE] = 1
            st[BASE_END] = t + 1
        u = t - reach  # the newest piece no back-up can undo any more
        if u >= 0 and by_step[u] < threshold[u]:
            stop = 3
            break
    else:
        if st[T] < n_total:
            return -1
        stop = 0
    if stop != 3:  # the game stopped: the last pieces, which no back-up can undo now
        u = _first_below(by_step, threshold, st[T] - reach, st[T])
        if u == -1:
            return stop
        stop = 3
    st[T] = u + 1
    st[SCORE] = by_step[u]
    return 3


class Backsearch(Policy):
    name = "backsearch"

    def __init__(self, config, rules, evaluator, sequence, pieces):
        super().__init__(config, rules, evaluator, sequence, pieces)
        cfg = config.backsearch
        self.points = evaluator if cfg.points_evaluator is None else load_evaluator(cfg.points_evaluator)
        self.survival = load_evaluator(cfg.survival_evaluator)

    def search(self, threshold, progress):
        rules, n, cfg = self.rules, self.pieces, self.config.backsearch
        hist = np.zeros((n + 1, rules.height), np.uint16)
        places = np.zeros((n, 3), np.int64)
        by_step = np.zeros(n, np.int64)
        modes = np.zeros(n, np.int64)
        made = np.zeros(3, np.int64)
        st = np.zeros(N_STATE, np.int64)
        st[SURVIVAL_END] = -1
        base_rows = min(cfg.base_rows, rules.height - 1)
        stop = -1
        reach = cfg.backup * (1 + cfg.max_backups)
        budget = max(10, 2000 // max(cfg.depth, cfg.survival_depth) ** 2)
        while stop < 0:
            stop = backsearch_run(
                self.sequence, budget, n, hist, rules.kernel, self.points.spec, TIE_BREAKS[self.points.tie_break],
                self.survival.spec, TIE_BREAKS[self.survival.tie_break], cfg.depth, cfg.keep_fraction,
                cfg.survival_depth, cfg.survival_keep_fraction, cfg.objective == "last", base_rows,
                cfg.base_max_pieces, cfg.base_cell_value, cfg.backup, cfg.max_backups, reach, threshold, st, places,
                by_step, modes, made, capacity(rules))
            if progress:
                progress(int(st[T]), n, int(st[SCORE]))
            stop = self.chunk_stop(stop, int(st[T]))
        done = int(st[T])
        scores, kinds = path_scores(places[:done], self.sequence, rules.kernel)
        if done and scores[-1] != st[SCORE]:
            raise RuntimeError(f"backsearch: the path scores {scores[-1]:,}, the kernel counted {st[SCORE]:,}")
        result = path_result(st[SCORE], done, stop, kinds, places, by_step, threshold, int(st[NODES]))
        counts = np.bincount(modes[:done], minlength=3)
        result.extra["backsearch"] = {
            "modes": {name: int(counts[i]) for i, name in enumerate(MODE_NAMES)},
            "placements_made": {name: int(made[i]) for i, name in enumerate(MODE_NAMES)},
            "backups": int(st[BACKUPS]),
            "pieces_undone": int(st[UNDONE]),
            "base_end": int(st[BASE_END]) if st[BASE_DONE] else None,
            "mode_by_step": "".join("bps"[m] for m in modes[:done]),
        }
        return result
