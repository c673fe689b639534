"""Kernels shared by the policies for unknown pieces: the workspace and the valued first ply.

Terms: the *current* piece is the one to place now; the *preview* is the next piece when the game
shows it (-1 when unknown); a *first-ply child* is the board after locking the current piece at one
of its placements and clearing. A child is *dead* when its lock ends the game (every row occupied
under ``top_out: all_rows``). Values are the evaluator's (`evaluators.kernel.evaluate`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.lock import lock_piece
from engine.movegen import placements_into
from engine.lock import spawn_blocked, spawn_state
from evaluators import board_values, priority

from .._base import best_first, value_child
from ..greedy import best_placement

#: worth of a line that ends the game (minus any value): any surviving line is preferred
DEAD = 1e15

#: parameter slots of the policies' float64 parameter vector
P_OBJECTIVE_LAST, P_KEEP, P_REDUCE_MIN, P_SIMULATIONS, P_MS, P_EXPLORATION, P_ROLLOUT, P_VALUE_WEIGHT, \
    P_DEATH, P_USE_PREVIEW = range(10)
N_PARAMS = 10


def workspace(height: int, capacity: int, n_features: int, rows: int) -> tuple:
    """Scratch for the kernels: (fit, free, visited, front, nxt, layers) for move generation, then
    ``found`` (3, capacity, 3) placements per ply, ``pvals`` (3, n_features) parent values,
    ``locked`` and ``cleared`` (3, height) boards per ply, ``values`` (capacity,) and ``ranks``
    (capacity,) of the first ply."""
    return (np.zeros((4, rows), np.int64), np.zeros(4, np.int64), np.zeros((4, rows), np.int64),
            np.zeros((4, rows), np.int64), np.zeros((4, rows), np.int64), np.zeros((1, 4, rows), np.int64),
            np.zeros((3, capacity, 3), np.int64), np.zeros((3, n_features)), np.zeros((3, height), np.uint16),
            np.zeros((3, height), np.uint16), np.zeros(capacity), np.zeros(capacity, np.int64))


@njit(cache=True)
def ply(level, board, shape, t, R, spec, tie_break, ws):
    """The best placement of piece ``t`` of ``shape`` on ``board``, as greedy chooses it
    (`solver.greedy.best_placement`, placements written into ``ws.found[level]``): (its index, its
    value), or (-1, -DEAD) when the spawn is blocked or every child is dead."""
    fit, free, visited, front, nxt, layers, found, pvals, locked, cleared, values, ranks = ws
    if spawn_blocked(board, R[0][shape, spawn_state(t, R)], R):
        return -1, -DEAD
    best, value = best_placement(board, shape, t, R, spec, tie_break, fit, free, visited, front, nxt, layers,
                                 found[level], pvals[level], locked[level], cleared[level])
    return best, (value if best >= 0 else -DEAD)


@njit(cache=True)
def first_ply(board, shape, t, R, spec, tie_break, ws):
    """Value every placement of the current piece into ``ws.values`` (-DEAD for a dead child) and
    its tie-break rank into ``ws.ranks``; returns (n, order): ``order`` the placement indices, best
    first (value descending, then rank, then generation order)."""
    fit, free, visited, front, nxt, layers, found, pvals, locked, cleared, values, ranks = ws
    cells = R[0]
    ss = spawn_state(t, R)
    n = placements_into(board, cells[shape], R[1][shape], R[3], R[5], R[6], ss, R[12], fit, free, visited,
                        front, nxt, layers, found[0])
    parent_values(board, R[3], spec, pvals[0])
    for k in range(n):
        x, y, s = found[0, k, 0], found[0, k, 1], found[0, k, 2]
        alive, v = value_child(board, pvals[0], cells[shape, s], x, y, R, spec, locked[0], cleared[0])
        values[k] = v if alive else -DEAD
        ranks[k] = priority(tie_break, x, s, R[5], ss)
    return n, best_first(values, ranks, n)


@njit(cache=True)
def child_board(board, shape, k, R, spec, ws, out):
    """The first-ply child of placement ``k`` (of ``ws.found[0]``) into ``out``."""
    found = ws[6]
    x, y, s = found[0, k, 0], found[0, k, 1], found[0, k, 2]
    out[:] = board
    lock(out, R[0][shape, s], x, y, (1 << R[3]) - 1)


@njit(cache=True)
def two_ply(board, shape, t, s_lo, s_hi, R, spec, tie_break, params, ws, child):
    """Index into ``ws.found[0]`` of the placement of the current piece worth most over two plies
    (-1 when every child is dead): each of the ``keep`` best first-ply children (0: all) is
    followed by the best placement of every next shape ``s_lo <= s < s_hi`` (the seven unknown
    ones, or the one shown); their values, -10^15 for a shape with no surviving placement, are
    reduced by their mean or minimum (``reduce``); a child is worth its value plus that
    (``objective: sum``) or that alone (``last``). Ties: the first in `first_ply`'s order."""
    values = ws[10]
    n, order = first_ply(board, shape, t, R, spec, tie_break, ws)
    keep = n if params[P_KEEP] <= 0 else min(n, int(params[P_KEEP]))
    last = params[P_OBJECTIVE_LAST] > 0
    use_min = params[P_REDUCE_MIN] > 0
    best = -1
    best_worth = -3 * DEAD
    for i in range(keep):
        k = order[i]
        v = values[k]
        if v <= -DEAD:
            break
        child_board(board, shape, k, R, spec, ws, child)
        total = 0.0
        worst = DEAD
        for s in range(s_lo, s_hi):
            b, v2 = ply(1, child, s, t + 1, R, spec, tie_break, ws)
            if b < 0:
                v2 = -DEAD
            total += v2
            worst = min(worst, v2)
        red = worst if use_min else total / (s_hi - s_lo)
        worth = red if last else v + red
        if worth > best_worth:
            best, best_worth = k, worth
    return best
