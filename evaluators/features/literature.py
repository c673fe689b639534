"""The literature's conventions where they differ from `evaluators.features.board` (Thiéry and
Scherrer's MdpTetris), Bertsekas and Tsitsiklis's features, and Thiéry and Scherrer's two
(`hole_depth`, `pattern_diversity`), with their column forms.
"""

from __future__ import annotations

import numpy as np

from engine.board import bit_length, popcount

from ..incremental import column_form
from ..registry import board_feature, board_features, placement_feature
from .board import step_masks
from .helpers import stack_int64
from .placement import landing_height


@placement_feature
def landing_height_zero_based(p):
    """Landing height as MdpTetris computes it (Dellacherie's feature 1 there): the row of the
    piece's lowest cell where it locked, counted from 0 at the floor, plus (the piece's height - 1)
    / 2 (a flat I on the floor: 0, an O: 0.5, a vertical I: 1.5); always ``landing_height`` - 1."""
    return landing_height(p) - 1.0


@board_feature
def wells_empty_below(board, width, top):
    """Dellacherie's well sums as MdpTetris computes them (its feature 6): each well cell (empty,
    its left and right neighbours occupied, a wall counting as occupied) counts 1 + the empty cells
    directly below it down to the first occupied cell or the floor, well cells or not (``wells``
    counts runs of well cells only; a plain well of depth d gives d(d + 1) / 2 in both)."""
    # Row by row from the top, c[x] = the well cells in column x's current run of empty cells
    # (0 at an occupied cell), kept as six bit planes (runs up to 63 rows); every empty cell adds
    # c[x], so each well cell is counted once for itself and once per empty cell below it.
    height = board.shape[0]
    full = (1 << width) - 1
    left_wall = 1
    right_wall = 1 << (width - 1)
    p0 = p1 = p2 = p3 = p4 = p5 = np.int64(0)
    n = 0
    for y in range(top, height):
        r = np.int64(board[y])
        e = full & ~r
        carry = e & ((r << 1) | left_wall) & ((r >> 1) | right_wall)
        p0 &= e
        p1 &= e
        p2 &= e
        p3 &= e
        p4 &= e
        p5 &= e
        t = p0 & carry
        p0 ^= carry
        carry = t
        t = p1 & carry
        p1 ^= carry
        carry = t
        t = p2 & carry
        p2 ^= carry
        carry = t
        t = p3 & carry
        p3 ^= carry
        carry = t
        t = p4 & carry
        p4 ^= carry
        p5 ^= t
        n += (popcount(p0) + 2 * popcount(p1) + 4 * popcount(p2) + 8 * popcount(p3) + 16 * popcount(p4)
              + 32 * popcount(p5))
    return n


@column_form("wells_empty_below", reach=1)
def wells_empty_below_by_column(left, col, right, height):
    """The column's well cells, each counting 1 + the empty cells directly below it (down to the
    first occupied cell or the floor)."""
    empty = ~col & ((np.int64(1) << height) - 1)
    reach = empty & left & right  # d rows down: the well cells with d empty cells below them
    n = 0
    while reach:
        n += popcount(reach)
        reach = (reach >> 1) & empty
    return n


@board_feature
def hole_depth(board, width, top):
    """Hole depth (Thiéry and Scherrer; MdpTetris feature -1): occupied cells in an unbroken
    vertical run that starts directly above an empty cell, i.e. above each hole the occupied cells
    up to the next empty one (a column reading, from the floor up, empty, occupied, empty,
    occupied, occupied: 3)."""
    height = board.shape[0]
    run = np.int64(0)  # cells of the current row in such a run
    n = 0
    for y in range(height - 2, top - 1, -1):
        r = np.int64(board[y])
        run = r & (~np.int64(board[y + 1]) | run)
        n += popcount(run)
    return n


@column_form("hole_depth")
def hole_depth_by_column(left, col, right, height):
    """The column's occupied cells in runs whose lowest cell stands on an empty cell (not the floor):
    adding each such run's lowest bit carries through the run."""
    starts = col & ~(col << 1) & ~np.int64(1)
    return popcount(((col + starts) ^ col) & col)


@board_feature
def constant(board, width, top):
    """1 whatever the board (Bertsekas and Tsitsiklis's constant feature, a value function's bias)."""
    return 1


#: columns the per-column features cover (a board has at most 16: 16-bit rows)
COLUMNS = 16


@board_features(
    **{f"column_height_{x}": f"Height of column {x} (Bertsekas and Tsitsiklis's h; 0 for an empty column "
                             "or one the board does not have)." for x in range(COLUMNS)},
    **{f"column_height_diff_{x}": f"abs(h[{x}] - h[{x + 1}]) for the column heights h (Bertsekas and "
                                  f"Tsitsiklis's; 0 when the board has no column {x + 1})." for x in range(COLUMNS - 1)},
)
def column_heights(board, width, top):
    """The column heights and their absolute differences in one pass (Bertsekas and Tsitsiklis's
    per-column features)."""
    height = board.shape[0]
    h = stack_int64(COLUMNS)
    for x in range(COLUMNS):
        h[x] = 0
    cover = np.int64(0)
    full = (1 << width) - 1
    y = top
    while y < height and cover != full:
        new = np.int64(board[y]) & ~cover
        cover |= new
        while new:
            low = new & -new
            h[popcount(low - 1)] = height - y
            new ^= low
        y += 1
    d = stack_int64(COLUMNS)
    for x in range(COLUMNS - 1):
        d[x] = abs(h[x] - h[x + 1]) if x + 1 < width else 0
    return (h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8], h[9], h[10], h[11], h[12], h[13], h[14], h[15],
            d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12], d[13], d[14])


@board_feature
def pattern_diversity(board, width, top):
    """Pattern diversity (MdpTetris's ``diversity``, the ninth of the D-T features of Gabillon,
    Ghavamzadeh and Scherrer's CBMPI): how many of the height differences -2, -1, 0, 1, 2 occur
    between neighbouring columns, h[x+1] - h[x] for x = 0..width-2; 0 to 5 (an empty board: 1)."""
    m, u1, u2, u3, d1, d2, d3 = step_masks(board, width, top)
    return (int((m & ~(u1 | d1)) != 0) + int((u1 & ~u2) != 0) + int((u2 & ~u3) != 0) + int((d1 & ~d2) != 0)
            + int((d2 & ~d3) != 0))


@column_form("pattern_diversity", combine="or", reach=1, edge="none")
def pattern_diversity_by_column(left, col, right, height):
    """The difference h[x+1] - h[x] of the column and its right neighbour as one bit (bit d + 2),
    when it lies in -2..2 and the column has a right neighbour (``right`` -1: none)."""
    if right == -1:
        return np.int64(0)
    d = bit_length(right) - bit_length(col)
    if d < -2 or d > 2:
        return np.int64(0)
    return np.int64(1) << (d + 2)
