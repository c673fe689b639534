"""Placements under drop-only rules (``Rules.placement == "drop"``, ``max_steps < 0`` in the
kernels): where a piece falling straight down from above the board, in any state and column,
comes to rest, provided all its cells are inside the board (under the ``clear_first`` overflow
rule, wherever it rests). No move search: each column's top (`column_tops`) and the piece's lowest
cells give its resting row.
"""

from __future__ import annotations

import numpy as np

from .._jit.decorators import inlined, inner
from .._jit.dispatch import fixed
from ..board import popcount
from ..rules import OVERFLOW_CLEAR_FIRST

@inlined
def column_tops(board, width, tops):
    """``tops[x]``: the row of the highest occupied cell of column x (``height`` for an empty
    column), for x in 0..width-1, by one pass over the rows from the first occupied one down to
    the row where every column has started."""
    height = board.shape[0]
    for x in range(width):
        tops[x] = height
    full = (np.int64(1) << width) - 1
    cover = np.int64(0)
    y = 0
    while y < height and cover != full:
        new = np.int64(board[y]) & ~cover
        cover |= new
        while new:
            low = new & -new
            tops[popcount(low - 1)] = y
            new ^= low
        y += 1


def generator_of(rules) -> str:
    """The placement generator (`Rules.generator`: ``"reachable"`` or ``"drop"``) that the numba type
    of a `KernelRules` names: for an overload that chooses its kernel by it when a kernel calling it
    is compiled."""
    return dict(zip(rules.fields, rules.types))["placements"].value.name


@inlined
def drop_offsets(cells_c):
    """A state's cell offsets as a tuple (dx0, dy0, ..., dx3, dy3), held in registers while a kernel
    drops the piece in column after column."""
    return (cells_c[0, 0], cells_c[0, 1], cells_c[1, 0], cells_c[1, 1], cells_c[2, 0], cells_c[2, 1], cells_c[3, 0],
            cells_c[3, 1])


@inlined
def drop_columns(offsets, width):
    """The centre columns ``x0 .. x1 - 1`` where the piece of `drop_offsets` ``offsets`` lies within
    the walls, and its top cell's dy (rows grow downwards): (x0, x1, lo)."""
    left = min(min(offsets[0], offsets[2]), min(offsets[4], offsets[6]))
    right = max(max(offsets[0], offsets[2]), max(offsets[4], offsets[6]))
    lo = min(min(offsets[1], offsets[3]), min(offsets[5], offsets[7]))
    return -left, width - right, lo


@inlined
def drop_row(tops, offsets, x):
    """The centre row where the piece of `drop_offsets` ``offsets``, falling from above in centre
    column ``x``, comes to rest: it meets, in each column it covers, that column's highest occupied
    cell first (`column_tops`; nothing above it is occupied), so ``min over its cells (tops[x + dx]
    - 1 - dy)``."""
    return min(min(tops[x + offsets[0]] - offsets[1], tops[x + offsets[2]] - offsets[3]),
               min(tops[x + offsets[4]] - offsets[5], tops[x + offsets[6]] - offsets[7])) - 1


@inlined
def drop_kept(rules, y, lo):
    """Whether a piece resting at centre row ``y``, its top cell's dy ``lo``, is a placement: every
    cell inside the board, or anywhere under the ``clear_first`` overflow rule (a piece resting
    partly above the top row may survive its lock; `engine.lock` judges it)."""
    return fixed(rules.overflow) == OVERFLOW_CLEAR_FIRST or y + lo >= 0


@inner(_nrt=False)
def drop_placements_into(board, rules, shape, sc, out):
    """Drop-only placements: for each distinct state, every column where the piece fits above the
    board, dropped straight down to the first row it cannot enter (`drop_row`), kept by `drop_kept`.
    Rows (x, y, state) of ``out``, ordered by state, then y, then x; returns how many. No search:
    the columns' highest cells (`column_tops`) say where a piece rests."""
    cells, alias, width = rules.cells[shape], rules.alias[shape], rules.width
    tops = sc.tops
    column_tops(board, width, tops)
    n = 0
    for c in range(4):
        if alias[c] != c:
            continue
        offsets = drop_offsets(cells[c])
        x0, x1, lo = drop_columns(offsets, width)
        first = n
        for x in range(x0, x1):
            y = drop_row(tops, offsets, x)
            if not drop_kept(rules, y, lo):
                continue
            j = n  # insertion by y: x ascending within a row, as the placements are ordered
            while j > first and out[j - 1, 1] > y:
                out[j, 0] = out[j - 1, 0]
                out[j, 1] = out[j - 1, 1]
                out[j, 2] = c
                j -= 1
            out[j, 0] = x
            out[j, 1] = y
            out[j, 2] = c
            n += 1
    return n
