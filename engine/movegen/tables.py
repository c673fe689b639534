"""The move generator's scratch arrays and its tables of where a piece fits.

`MoveScratch` bundles the arrays every search writes (so the hot loop allocates nothing);
`fit_masks` fills its ``fit`` table: at bit ``x + XOFF`` of ``fit[s, y]``, whether the piece in
state ``s`` centred at (x, y) is valid. Also the step codes and the sizes the searches share, and
`capacity`, the bound on one piece's placements that callers size their output by.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .._jit.decorators import inlined

STEP_L, STEP_R, STEP_D, STEP_C = 0, 1, 2, 3
STEP_LETTERS = "LRDC"
XOFF = 8  # bit x + XOFF of a mask stands for centre column x (room for centres left of the wall)
EXTRA_ROWS = 4  # centre rows 0 .. height + EXTRA_ROWS - 1 are searched
PAD = 4  # `fit_masks`' row words reach this many rows above and below the searched centre rows
#: the four rotation states, as an argument of the kernels (a numpy integer: numba compiles a
#: callee once per literal value, so a literal 4 beside a variable count would compile it twice)
ALL_STATES = np.int64(4)
#: columns a board may have at most (16-bit rows)
MAX_COLUMNS = 16


@njit(cache=True)
def rows_for(height):
    """Number of centre rows in the search masks of a board of ``height`` rows."""
    return height + EXTRA_ROWS


class MoveScratch(NamedTuple):
    """The move generator's scratch arrays (int64 masks, bit ``x + XOFF`` for centre column x):
    ``fit[s, cy]`` / ``free[s]`` (`fit_masks`), ``visited``, ``front`` and ``nxt`` (the search's
    sets and frontiers, (4, rows) each), and ``layers`` (the frontier of each step count, kept for
    routes: (max_steps + 1, 4, rows); one layer is enough for placements), `fit_masks`' own
    scratch (``ext``, ``lowest``, ``shift``), and ``tops`` (`column_tops`, for drop-only rules)."""

    fit: np.ndarray
    free: np.ndarray
    visited: np.ndarray
    front: np.ndarray
    nxt: np.ndarray
    layers: np.ndarray
    ext: np.ndarray
    lowest: np.ndarray
    shift: np.ndarray
    tops: np.ndarray


@njit(cache=True)
def new_scratch(rows, layers):
    """A `MoveScratch` for boards searched over ``rows`` centre rows, with ``layers`` stored layers
    (1 for placements, ``max_steps + 1`` for routes)."""
    return MoveScratch(np.zeros((4, rows), np.int64), np.zeros(4, np.int64), np.zeros((4, rows), np.int64),
                       np.zeros((4, rows), np.int64), np.zeros((4, rows), np.int64),
                       np.zeros((layers, 4, rows), np.int64), np.zeros(rows + 2 * PAD, np.int64),
                       np.zeros(4, np.int64), np.zeros((4, 4, 3), np.int64), np.zeros(MAX_COLUMNS, np.int64))


@njit(cache=True)
def capacity(height, width):
    """An upper bound on the placements of one piece on a board of ``height`` x ``width``: one per
    (state, centre row, centre column)."""
    return 4 * (height + EXTRA_ROWS) * (width + 8)


@inlined
def fit_masks(board, cells, width, fit, free, states, ext, lowest_dy, cell_shift):
    """Fill ``fit[s, cy]`` (s in 0..states-1, cy in 0..rows-1): bit ``cx + XOFF`` set when the piece
    with offsets ``cells[s]`` centred at (cx, cy) is valid on ``board``; and ``free[s]``, the same
    mask for a row where every cell the piece covers is empty (only the walls limit it). ``ext``
    (rows + 2 x `PAD` words) receives each row's blocked columns, walls included (rows above the
    board: the walls only; below it: everything), so a cell's test is a shift; ``lowest_dy`` (4) and
    ``cell_shift`` (4, 4, 3) are scratch. Rows are computed from the top down to the first where no
    state fits: no piece gets below it (it moves down one row at a time), so the rows below are 0."""
    height = board.shape[0]
    rows = fit.shape[1]
    wall = ~(((1 << width) - 1) << XOFF)
    span = ((1 << (width + 8)) - 1) << (XOFF - 4)
    top = 0  # the first occupied row: centres with every cell above it fit as on an empty board
    while top < height and board[top] == 0:
        top += 1
    for y in range(PAD):
        ext[y] = wall
    for y in range(height):
        ext[y + PAD] = wall | (np.int64(board[y]) << XOFF)
    for y in range(height + PAD, rows + 2 * PAD):
        ext[y] = -1
    lowest, shift = lowest_dy, cell_shift  # per state: its lowest cell's dy; per cell: shifts, row
    for s in range(states):
        bad_free = 0
        lowest[s] = -4
        for k in range(4):
            dx = cells[s, k, 0]
            bad_free |= (wall >> dx) if dx >= 0 else (wall << (-dx))
            lowest[s] = max(lowest[s], cells[s, k, 1])
            shift[s, k, 0] = max(dx, 0)
            shift[s, k, 1] = max(-dx, 0)
            shift[s, k, 2] = cells[s, k, 1] + PAD
        free[s] = ~bad_free & span
    cy = 0
    while cy < rows:
        blocked = True
        for s in range(states):
            if cy + lowest[s] < top:
                m = free[s]
            else:
                bad = 0
                for k in range(4):
                    bad |= (ext[cy + shift[s, k, 2]] >> shift[s, k, 0]) << shift[s, k, 1]
                m = ~bad & span
            fit[s, cy] = m
            if m != 0:
                blocked = False
        cy += 1
        if blocked:  # no state fits this row: no piece gets below it (it moves down one row at a time)
            break
    for s in range(states):
        for y in range(cy, rows):
            fit[s, y] = 0


def scratch(rules, routes: bool = False) -> MoveScratch:
    """A `MoveScratch` for ``rules``' boards; ``routes`` keeps every layer (for `route_into`)."""
    return new_scratch(rows_for(rules.height), rules.max_steps + 1 if routes else 1)
