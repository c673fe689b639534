"""Kernels shared by the policies for unknown pieces: the workspace and the valued first ply.

Terms: the *current* piece is the one to place now; the *preview* is the next piece when the game
shows it (-1 when unknown); a *first-ply child* is the board after locking the current piece at one
of its placements and clearing. A child is *dead* when its lock ends the game (every row occupied
under ``top_out: all_rows``). Values are the evaluator's (`evaluators.kernel.evaluate`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.movegen import placements_into
from engine.play import spawn_blocked, spawn_state
from evaluators.kernel import parent_values

from .._base import priority, value_child

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
    """Place piece ``t`` of ``shape`` on ``board`` at every placement into ``ws.found[level]``;
    returns (n, best index or -1, best value). Dead children and a blocked spawn give -1."""
    fit, free, visited, front, nxt, layers, found, pvals, locked, cleared, values, ranks = ws
    cells = R[0]
    ss = spawn_state(t, R)
    if spawn_blocked(board, cells[shape, ss], R):
        return 0, -1, -DEAD
    n = placements_into(board, cells[shape], R[1][shape], R[3], R[5], R[6], ss, R[12], fit, free, visited,
                        front, nxt, layers, found[level])
    parent_values(board, R[3], spec, pvals[level])
    best = -1
    best_value = -DEAD
    best_rank = 0
    for k in range(n):
        x, y, s = found[level, k, 0], found[level, k, 1], found[level, k, 2]
        alive, v = value_child(board, pvals[level], cells[shape, s], x, y, R, spec, locked[level],
                               cleared[level])
        if not alive:
            continue
        rank = priority(tie_break, x, s, R[5], ss)
        if best < 0 or v > best_value or (v == best_value and rank < best_rank):
            best, best_value, best_rank = k, v, rank
    return n, best, best_value


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
    by_rank = np.argsort(ranks[:n], kind="mergesort")
    by_value = np.argsort(-values[:n][by_rank], kind="mergesort")
    return n, by_rank[by_value]


@njit(cache=True)
def child_board(board, shape, k, R, spec, ws, out):
    """The first-ply child of placement ``k`` (of ``ws.found[0]``) into ``out``."""
    fit, free, visited, front, nxt, layers, found, pvals, locked, cleared, values, ranks = ws
    x, y, s = found[0, k, 0], found[0, k, 1], found[0, k, 2]
    value_child(board, pvals[0], R[0][shape, s], x, y, R, spec, locked[1], out)
