"""Kernels shared by the policies for unknown pieces: the workspace and the greedy ply.

Terms: the *current* piece is the one to place now; the *preview* is the next piece when the game
shows it (-1 when unknown); a *child* is the board after locking a piece at one of its placements
and clearing. A child is *dead* when its lock loses the game (`engine.lock.lost`: every row
occupied under ``top_out: all_rows``, or a cell left above the top row under an ``overflow`` rule
that ends the game). Values are the evaluator's (`evaluators.evaluate`).

A search writes the placements of each piece it considers at a *ply level* of the workspace:
`CURRENT` for the current piece (a policy's choice is an index into ``ws.found[CURRENT]``),
`NEXT` for a piece after it (the second ply, the pieces of an MCTS rollout), `TREE` for a decision
node MCTS expands.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from engine._jit.decorators import inlined
from engine.lock import spawn_blocked, spawn_state
from engine.movegen import MoveScratch, capacity
from engine.movegen.tables import new_scratch, rows_for
from evaluators.incremental import ColumnView, column_scratch

from .._base import ValueScratch
from ..greedy import best_placement

#: worth of a line that ends the game (minus any value): any surviving line is preferred
DEAD = 1e15
#: the tetromino shapes, numbered 0 .. SHAPES - 1
SHAPES = 7
#: ply levels of the workspace (see the module docstring)
CURRENT, NEXT, TREE = (np.int64(level) for level in range(3))  # numba types a global int as a
# literal and compiles a callee once per literal value: numpy integers are one type
PLY_LEVELS = 3


class Workspace(NamedTuple):
    """The scratch of the online kernels, one per policy object (a move allocates nothing).

    ``moves``: the move generator's; per ply level (`CURRENT`, `NEXT`, `TREE`): ``found[level]``
    (capacity, 3) the placements (x, y, state) of its piece, ``pvals[level]`` its board's feature
    values (`evaluators.board_values`), ``locked[level]`` and ``cleared[level]`` a child before
    and after its clear, ``column_views`` (each array with the level first) its board's columns
    (`evaluators.incremental.ColumnView`); for the current piece's placements: ``values``
    (-`DEAD` for a dead child) and tie-break ``ranks``; ``spare``: a board the kernels may
    overwrite (a first-ply child, the board of a rollout)."""

    moves: MoveScratch
    found: np.ndarray
    pvals: np.ndarray
    locked: np.ndarray
    cleared: np.ndarray
    values: np.ndarray
    ranks: np.ndarray
    spare: np.ndarray
    column_views: ColumnView


def workspace(height: int, width: int, n_features: int) -> Workspace:
    """A `Workspace` for boards of ``height`` x ``width`` and evaluators of ``n_features`` slots."""
    # the kernels' Python functions (numpy arrays of the same layout), so that building a workspace
    # loads no compiled kernel: a warm protocol bot's first answer waits for the one it plays with
    cap = capacity.py_func(height, width)
    views = ColumnView(*(np.zeros((PLY_LEVELS, *a.shape), a.dtype) for a in column_scratch.py_func(n_features)))
    return Workspace(new_scratch.py_func(rows_for.py_func(height), 1), np.zeros((PLY_LEVELS, cap, 3), np.int64),
                     np.zeros((PLY_LEVELS, n_features)), np.zeros((PLY_LEVELS, height), np.uint16),
                     np.zeros((PLY_LEVELS, height), np.uint16), np.zeros(cap), np.zeros(cap, np.int64),
                     np.zeros(height, np.uint16), views)


@njit(cache=True, inline="always")  # returns views: typed in each caller, under its reference counting
def ply_scratch(ws, level):
    """The valuing scratch (`solver._base.ValueScratch`) of ply ``level``."""
    v = ws.column_views
    view = ColumnView(v.cols[level], v.child[level], v.values[level], v.totals[level], v.before[level], v.after[level])
    return ValueScratch(ws.pvals[level], ws.locked[level], ws.cleared[level], view)


@inlined
def ply(level, board, shape, t, rules, spec, ws):
    """The best placement of piece ``t`` of ``shape`` on ``board``, as greedy chooses it
    (`solver.greedy.best_placement`, placements written into ``ws.found[level]``): (its index, its
    value), or (-1, -DEAD) when the spawn is blocked or every child is dead."""
    if spawn_blocked(board, rules, shape, spawn_state(t, rules)):
        return -1, -DEAD
    best, value = best_placement(board, shape, t, rules, spec, ws.moves, ws.found[level], ply_scratch(ws, level))
    return best, (value if best >= 0 else -DEAD)
