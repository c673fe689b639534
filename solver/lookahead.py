"""Lookahead: a depth-first search over the next ``depth`` known pieces with a kept fraction.

For the current piece, every child (placement) is valued by the evaluator; the best
``keep_fraction`` of them (at least one) are expanded with the next piece, and so on to ``depth``
pieces. A path's worth is the sum of the values along it (``sum``) or its last value (``last``);
a path that cannot go on (every placement tops out) is worth its value so far minus 10^12, so any
surviving path is preferred. The current piece goes to the first placement of the best path.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from engine.movegen import capacity
from engine.board import popcount
from engine.movegen import placements_into
from engine.lock import lock_piece, spawn_blocked, spawn_state
from evaluators import board_values, priority

from ._base import Policy, best_first, commit, path_result, value_child

DEAD = 1e12


@njit(cache=True)
def base_allowed(locked, base_rows, width):
    """Whether a lock (``locked``: the board with the piece placed, before any clear) may be part of
    a base of the bottom ``base_rows`` rows, built from the floor up so that each of those rows can
    still end with exactly one empty cell: none of them is full, none holds more than one hole (an
    empty cell with an occupied cell above it), and a row holds ``width - 1`` cells only if every
    base row below it does. Rows above the base may be filled (and cleared)."""
    height = locked.shape[0]
    full = (1 << width) - 1
    above = 0
    for y in range(height - base_rows):
        above |= np.int64(locked[y])
    covered = np.zeros(base_rows, np.int64)  # the occupied columns above each base row
    for i in range(base_rows):
        covered[i] = above
        above |= np.int64(locked[height - base_rows + i])
    below_done = True
    for i in range(base_rows - 1, -1, -1):
        r = np.int64(locked[height - base_rows + i])
        n = popcount(r)
        if r == full or popcount(full & ~r & covered[i]) > 1 or (n == width - 1 and not below_done):
            return False
        below_done = below_done and n == width - 1
    return True


@njit(cache=True)
def _expand(level, boards, t, sequence, R, spec, tie_break, keep_fraction, found, values, ranks, order, nkept,
            pvals, locked, cleared, sc_fit, sc_free, sc_visited, sc_front, sc_nxt, sc_layers, base_rows=0,
            base_cell_value=0.0):
    """Children of ``boards[level]`` for piece ``t``: placements into ``found[level]``, values into
    ``values[level]``, and the kept ones, best first, into ``order[level, :nkept[level]]``. With
    ``base_rows`` > 0 (base building) only children that `base_allowed` lets through count, and each
    is worth ``base_cell_value`` more per occupied cell in the bottom ``base_rows`` rows."""
    cells = R[0]
    width = R[3]
    shape = sequence[t]
    ss = spawn_state(t, R)
    board = boards[level]
    nkept[level] = 0
    if spawn_blocked(board, cells[shape, ss], R):
        return
    n = placements_into(board, cells[shape], R[1][shape], width, R[5], R[6], ss, R[12], sc_fit, sc_free,
                        sc_visited, sc_front, sc_nxt, sc_layers, found[level])
    parent_values(board, width, spec, pvals)
    alive = 0
    for k in range(n):
        x, y, s = found[level, k, 0], found[level, k, 1], found[level, k, 2]
        ok, v = value_child(board, pvals, cells[shape, s], x, y, R, spec, locked, cleared)
        if not ok:
            continue
        if base_rows > 0:
            if not base_allowed(locked, base_rows, width):
                continue
            for yb in range(locked.shape[0] - base_rows, locked.shape[0]):
                v += base_cell_value * popcount(np.int64(locked[yb]))
        values[level, alive] = v
        ranks[level, alive] = priority(tie_break, x, s, R[5], ss)
        order[level, alive] = k
        alive += 1
    if alive == 0:
        return
    # best first: value descending, then tie-break rank, then generation order
    idx = best_first(values[level], ranks[level], alive)
    keep = max(1, int(math.ceil(keep_fraction * alive)))
    ks = order[level, :alive].copy()
    vs = values[level, :alive].copy()
    for i in range(keep):
        order[level, i] = ks[idx[i]]
        values[level, i] = vs[idx[i]]
    nkept[level] = keep


@njit(cache=True)
def lookahead_choice(board, t, n_total, sequence, R, spec, tie_break, depth, keep_fraction, last_only,
                     found, values, ranks, order, nkept, pos, acc, boards, pvals, locked, cleared,
                     sc_fit, sc_free, sc_visited, sc_front, sc_nxt, sc_layers, base_rows=0, base_cell_value=0.0):
    """The best first placement (x, y, s) for piece ``t``, the number of nodes searched and the
    best path's worth (below -`DEAD` / 2 when every searched path dies within the depth);
    x = -1 when no placement survives. ``base_rows``: see `_expand`."""
    depth = min(depth, n_total - t)
    boards[0] = board
    _expand(0, boards, t, sequence, R, spec, tie_break, keep_fraction, found, values, ranks, order, nkept,
            pvals, locked, cleared, sc_fit, sc_free, sc_visited, sc_front, sc_nxt, sc_layers, base_rows,
            base_cell_value)
    nodes = nkept[0]
    if nkept[0] == 0:
        return -1, 0, 0, nodes, -np.inf
    best_worth = -np.inf
    best_first = 0
    first = 0
    level = 0
    pos[0] = 0
    acc[0] = 0.0
    cells = R[0]
    while level >= 0:
        if pos[level] >= nkept[level]:
            level -= 1
            continue
        i = pos[level]
        pos[level] += 1
        if level == 0:
            first = i
        v = values[level, i]
        worth = v if last_only else acc[level] + v
        if level == depth - 1:
            if worth > best_worth:
                best_worth, best_first = worth, first
            continue
        k = order[level, i]
        shape = sequence[t + level]
        boards[level + 1] = boards[level]
        lock_and_score(boards[level + 1], cells[shape, found[level, k, 2]], found[level, k, 0],
                       found[level, k, 1], t + level + 1, R)
        _expand(level + 1, boards, t + level + 1, sequence, R, spec, tie_break, keep_fraction, found, values,
                ranks, order, nkept, pvals, locked, cleared, sc_fit, sc_free, sc_visited, sc_front, sc_nxt,
                sc_layers, base_rows, base_cell_value)
        nodes += nkept[level + 1]
        if nkept[level + 1] == 0:
            if worth - DEAD > best_worth:
                best_worth, best_first = worth - DEAD, first
            continue
        acc[level + 1] = worth
        pos[level + 1] = 0
        level += 1
    k = order[0, best_first]
    return found[0, k, 0], found[0, k, 1], found[0, k, 2], nodes, best_worth


@njit(cache=True)
def lookahead_workspace(depth, cap, height):
    """The per-depth arrays `lookahead_choice` works in, for ``depth`` pieces of at most ``cap``
    placements on boards of ``height`` rows: (found, values, ranks, order, nkept, pos, acc, boards)."""
    return (np.zeros((depth, cap, 3), np.int64), np.zeros((depth, cap)), np.zeros((depth, cap), np.int64),
            np.zeros((depth, cap), np.int64), np.zeros(depth, np.int64), np.zeros(depth, np.int64),
            np.zeros(depth), np.zeros((depth, height), np.uint16))


@njit(cache=True)
def lookahead_run(sequence, t0, t1, n_total, board, R, spec, tie_break, depth, keep_fraction, last_only,
                  threshold, score_in, kinds, out_place, score_by_step, cap):
    height = board.shape[0]
    rows = height + 4
    found, values, ranks, order, nkept, pos, acc, boards = lookahead_workspace(depth, cap, height)
    pvals = np.zeros(spec[0].shape[0])
    locked = np.zeros(height, np.uint16)
    cleared = np.zeros(height, np.uint16)
    sc_fit, sc_free, sc_visited, sc_front, sc_nxt, sc_layers = scratch_arrays(rows)
    score = score_in
    nodes = 0
    for t in range(t0, t1):
        shape = sequence[t]
        if spawn_blocked(board, R[0][shape, spawn_state(t, R)], R):
            return t, score, 2, nodes
        x, y, s, searched, _ = lookahead_choice(
            board, t, n_total, sequence, R, spec, tie_break, depth, keep_fraction, last_only, found, values,
            ranks, order, nkept, pos, acc, boards, pvals, locked, cleared, sc_fit, sc_free, sc_visited,
            sc_front, sc_nxt, sc_layers)
        nodes += searched
        if x == -1 and searched == 0:
            return t, score, 1, nodes
        score = commit(board, shape, x, y, s, t, R, score, kinds, out_place, score_by_step)
        if score < threshold[t]:
            return t + 1, score, 3, nodes
    return t1, score, -1, nodes


class Lookahead(Policy):
    name = "lookahead"

    def search(self, threshold, progress):
        rules, n, cfg = self.rules, self.pieces, self.config.lookahead
        board = np.zeros(rules.height, np.uint16)
        kinds = np.zeros(5, np.int64)
        places = np.zeros((n, 3), np.int64)
        by_step = np.zeros(n, np.int64)
        tie = TIE_BREAKS[self.evaluator.tie_break]
        done, score, stop, nodes = 0, 0, -1, 0
        chunk = max(10, 2000 // (cfg.depth ** 2))
        while done < n and stop < 0:
            done, score, stop, searched = lookahead_run(
                self.sequence, done, min(n, done + chunk), n, board, rules.kernel, self.evaluator.spec, tie,
                cfg.depth, cfg.keep_fraction, cfg.objective == "last", threshold, score, kinds, places, by_step,
                capacity(rules))
            nodes += searched
            if progress:
                progress(done, n, int(score))
            stop = self.chunk_stop(stop, done)
        return path_result(score, done, stop, kinds, places, by_step, threshold, nodes)
