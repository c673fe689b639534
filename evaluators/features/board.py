"""The built-in board features (Dellacherie's, Böhm's and the common ones): each ``f(board,
width, top)`` or, for a row feature, ``f(row, above, width)`` summed over the rows, with the column
form of those that have one (`evaluators.incremental.column_form`).
"""

from __future__ import annotations

import numpy as np

from engine._jit.decorators import inner
from engine.board import bit_length, popcount

from ..incremental import column_form, local_rows
from ..registry import board_feature, board_features, row_feature
from .helpers import MAX_HEIGHT, count_holes, count_open_holes, stack_int64


@row_feature
def row_transitions(row, above, width):
    """Per row, horizontally adjacent cells that differ, the walls counting as occupied cells (an
    empty row counts 2), summed over all rows (Pierre Dellacherie)."""
    e = (row << 1) | 1 | (1 << (width + 1))  # the row between its walls
    return popcount((e ^ (e >> 1)) & ((1 << (width + 1)) - 1))


local_rows("row_transitions")


@row_feature
def interior_row_transitions(row, above, width):
    """Per row, adjacent cells (x, x + 1), x = 0..width-2, of which one is occupied and the other
    empty (walls not counted; an empty or a full row counts 0), summed over all rows."""
    return popcount((row ^ (row >> 1)) & ((1 << (width - 1)) - 1))


local_rows("interior_row_transitions")


@board_feature
def column_transitions(board, width, top):
    """Per column, vertically adjacent cells that differ, with the space above row 0 empty and a
    floor below the last row occupied (an empty column counts 1), summed over all columns."""
    height = board.shape[0]
    full = (1 << width) - 1
    if top >= height:
        return width
    prev = 0
    n = 0
    for y in range(top, height):
        r = np.int64(board[y])
        n += popcount(r ^ prev)
        prev = r
    return n + popcount(prev ^ full)


@column_form("column_transitions")
def column_transitions_by_column(left, col, right, height):
    """Cells of the column that differ from the cell below them, from the floor (occupied) to the
    row above the board (empty)."""
    return popcount((col ^ ((col << 1) | 1)) & ((np.int64(1) << (height + 1)) - 1))


@row_feature
def occupied_cells(row, above, width):
    """Occupied cells."""
    return popcount(row)


local_rows("occupied_cells")


@row_feature
def occupied_rows(row, above, width):
    """Rows holding at least one occupied cell."""
    return 1 if row != 0 else 0


local_rows("occupied_rows")


@board_feature
def buried_cells(board, width, top):
    """Occupied cells with at least one empty cell anywhere below them in the same column."""
    full = (1 << width) - 1
    below = 0
    n = 0
    for y in range(board.shape[0] - 1, top - 1, -1):
        r = np.int64(board[y])
        n += popcount(r & below)
        below |= full & ~r
    return n


@column_form("buried_cells")
def buried_cells_by_column(left, col, right, height):
    """Occupied cells of the column above its lowest empty cell."""
    empty = ~col & ((np.int64(1) << height) - 1)
    if empty == 0:
        return 0
    lowest = empty & -empty
    return popcount(col & ~((lowest << 1) - 1))


@board_feature
def wells(board, width, top):
    """Cumulative wells: a well cell is an empty cell whose left and right neighbours are occupied
    (a wall counts as occupied); each maximal vertical run of k well cells in a column counts
    1 + 2 + ... + k (Pierre Dellacherie; covered cells count too)."""
    # A well cell at depth d of its run (d = 1 at the top of the run) counts d, so a run of k counts
    # 1 + ... + k. chain[d] holds the columns whose well runs reach d + 1 rows up to the current
    # row (chain[0] = the well cells of this row, chain[d] = chain[d - 1] of the row above & them);
    # a row adds the popcounts of its non-empty chains.
    height = board.shape[0]
    full = (1 << width) - 1
    left_wall = 1
    right_wall = 1 << (width - 1)
    chain = stack_int64(MAX_HEIGHT)
    depth = 0
    n = 0
    for y in range(top, height):
        r = np.int64(board[y])
        w = full & ~r & ((r << 1) | left_wall) & ((r >> 1) | right_wall)
        if w == 0:
            depth = 0
        else:
            for d in range(depth, 0, -1):
                chain[d] = chain[d - 1] & w
            chain[0] = w
            d = 0
            while d <= depth and chain[d] != 0:
                n += popcount(chain[d])
                d += 1
            depth = d
    return n


@column_form("wells", reach=1)
def wells_by_column(left, col, right, height):
    """The column's well cells (empty, both neighbours occupied): each run of k of them, one above
    the other, counts 1 + 2 + ... + k."""
    w = ~col & left & right & ((np.int64(1) << height) - 1)
    n = 0
    while w:
        run = ((w + (w & -w)) ^ w) & w  # the lowest run of well cells
        k = popcount(run)
        n += k * (k + 1) // 2
        w ^= run
    return n


@row_feature
def rows_with_holes(row, above, width):
    """Rows holding at least one hole (an empty cell with an occupied cell above it)."""
    return 1 if above & ~row != 0 else 0


@column_form("rows_with_holes", combine="or")
def rows_with_holes_by_column(left, col, right, height):
    """The column's holes, as bits: its empty cells below its highest occupied one."""
    return ~col & ((np.int64(1) << bit_length(col)) - 1)


@row_feature(aliases=("covered_empty_cells",))
def holes(row, above, width):
    """Holes: empty cells with at least one occupied cell anywhere above them in the same column
    (alias ``covered_empty_cells``, the 1,395,326 solution's name)."""
    return popcount(above & ~row)


@column_form("holes")
def holes_by_column(left, col, right, height):
    """The column's empty cells below its highest occupied one."""
    return bit_length(col) - popcount(col)


@board_features(
    open_holes="Holes connected through empty cells (up, down, left, right, inside the board) to an empty cell "
               "open to the sky (\"virtual\" holes).",
    covered_holes="Holes not connected so (\"real\" holes); open_holes + covered_holes == holes.",
)
def hole_kinds(board, width, top):
    """(open holes, covered holes); the flood fill runs only when there are holes."""
    n = count_holes(board, width, top)
    if n == 0:
        return 0, 0
    n_open = count_open_holes(board, width, top)
    return n_open, n - n_open


@board_feature
def aggregate_height(board, width, top):
    """Sum of the column heights."""
    # Sum over rows of the skyline mask (the columns whose top is at this row or above); once
    # every column has started, each remaining row adds ``width``.
    height = board.shape[0]
    full = (1 << width) - 1
    cover = 0
    n = 0
    y = top
    while y < height and cover != full:
        cover |= np.int64(board[y])
        n += popcount(cover)
        y += 1
    return n + width * (height - y)


@column_form("aggregate_height")
def aggregate_height_by_column(left, col, right, height):
    """The column's height."""
    return bit_length(col)


@board_feature
def max_height(board, width, top):
    """Largest column height (0 for an empty board)."""
    return board.shape[0] - top


@board_feature
def bumpiness(board, width, top):
    """Sum over x = 0..width-2 of abs(h[x] - h[x+1]), h the column heights."""
    # The skyline mask of row y (the columns whose top is at row y or above) differs between
    # columns x and x + 1 in exactly |h[x] - h[x+1]| rows.
    full = (1 << width) - 1
    m = (1 << (width - 1)) - 1
    height = board.shape[0]
    cover = 0
    n = 0
    y = top
    while y < height and cover != full:
        cover |= np.int64(board[y])
        n += popcount((cover ^ (cover >> 1)) & m)
        y += 1
    return n


@board_features(
    platforms="Neighbouring columns (x, x + 1) of equal height (two empty columns included).",
    steps_up_1="Neighbouring columns (x, x + 1) where the right column is higher by exactly 1.",
    steps_up_2="Neighbouring columns (x, x + 1) where the right column is higher by exactly 2.",
    steps_up_3plus="Neighbouring columns (x, x + 1) where the right column is higher by 3 or more.",
    steps_down_1="Neighbouring columns (x, x + 1) where the left column is higher by exactly 1.",
    steps_down_2="Neighbouring columns (x, x + 1) where the left column is higher by exactly 2.",
    steps_down_3plus="Neighbouring columns (x, x + 1) where the left column is higher by 3 or more.",
)
def step_counts(board, width, top):
    """The seven step counts in one pass (`step_masks`)."""
    m, u1, u2, u3, d1, d2, d3 = step_masks(board, width, top)
    return (popcount(m & ~(u1 | d1)), popcount(u1 & ~u2), popcount(u2 & ~u3), popcount(u3),
            popcount(d1 & ~d2), popcount(d2 & ~d3), popcount(d3))


@inner
def step_masks(board, width, top):
    """``(m, u1, u2, u3, d1, d2, d3)``: bit x of ``m`` for each neighbouring pair (x, x + 1); bit x
    of ``uk`` set when h[x+1] - h[x] >= k, of ``dk`` when h[x] - h[x+1] >= k.

    Row by row the skyline mask says which columns have started; bit x of ``up`` is set in exactly
    h[x+1] - h[x] rows when that is positive (``down`` likewise for h[x] - h[x+1]). Saturating
    bit-sliced counters (at least 1, 2, 3 such rows) classify every pair at once."""
    full = (1 << width) - 1
    m = (1 << (width - 1)) - 1
    cover = 0
    u1 = 0
    u2 = 0
    u3 = 0
    d1 = 0
    d2 = 0
    d3 = 0
    height = board.shape[0]
    y = top
    while y < height and cover != full:
        cover |= np.int64(board[y])
        y += 1
        sh = cover >> 1
        u = sh & ~cover & m
        d = cover & ~sh & m
        u3 |= u2 & u
        u2 |= u1 & u
        u1 |= u
        d3 |= d2 & d
        d2 |= d1 & d
        d1 |= d
    return m, u1, u2, u3, d1, d2, d3
