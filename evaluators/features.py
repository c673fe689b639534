"""The built-in features: one registered numba kernel each (see `evaluators.registry`).

Boards are the engine's: a numpy ``uint16`` array of ``height`` rows, row ``y = 0`` at the top,
bit ``x`` of row ``y`` set when cell (x, y) is occupied; every kernel works on whole rows as int64
bit masks, never cell by cell. A board feature is ``f(board, width, top)``, ``top`` the first
occupied row; a row feature is ``f(row, above, width)`` summed over the rows. Beside a feature, its
*form* when it has one (`evaluators.incremental`). Registration order is slot order: the features
are registered in the order the evaluator has always added them, so values are bit-for-bit those
of earlier versions. Limits: ``width`` up to 16, ``height`` up to `MAX_HEIGHT`.

The terms the descriptions use (column height, hole, open to the sky), the forms and the limits:
docs/evaluators.md, "How features become kernels".
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from engine.board import bit_length, popcount, run_fill
from engine.jit import inner

from .incremental import column_form, local_rows
from .registry import board_feature, board_features, placement_feature, row_feature, tie_break

#: Rows a board may have at most here (the engine's rules allow 4..60).
MAX_HEIGHT = 64

# --------------------------------------------------------------------------------------------
# Helpers


@intrinsic
def stack_int64(typingctx, n):
    """A pointer to ``n`` (a literal) int64 slots on the calling function's stack, uninitialised.

    Scratch space without a heap allocation: a heap array would cost an allocation and a free
    per call, and keep the evaluator from being compiled without numba's runtime. Valid only
    until the calling function returns."""
    if not isinstance(n, types.IntegerLiteral):
        return None

    def codegen(context, builder, signature, args):
        return cgutils.alloca_once(builder, ir.IntType(64), size=n.literal_value)

    return types.CPointer(types.int64)(n), codegen


@inner
def count_holes(board, width, top):
    """Holes (empty cells with an occupied cell anywhere above them in the same column)."""
    cover = 0
    n = 0
    for y in range(top, board.shape[0]):
        r = np.int64(board[y])
        n += popcount(cover & ~r)
        cover |= r
    return n


@inner
def count_open_holes(board, width, top):
    """Open holes, by a bit-parallel flood fill of the empty cells from the row ``top``."""
    height = board.shape[0]
    if top >= height:
        return 0
    full = (1 << width) - 1
    reach = stack_int64(MAX_HEIGHT)
    # Down: every empty cell of the top row is open to the sky; below, a cell under a reached one
    # is reached, and so is the rest of its run of empty cells in the row.
    above = full & ~np.int64(board[top])
    reach[top] = above
    for y in range(top + 1, height):
        e = full & ~np.int64(board[y])
        seed = e & above
        above = seed if seed == e else run_fill(seed, e)
        reach[y] = above
    # Then up and down sweeps, each spreading to the cells next to a reached one in the row below
    # (above), until one changes nothing.
    changed = True
    while changed:
        changed = False
        for y in range(height - 2, top - 1, -1):
            e = full & ~np.int64(board[y])
            new = e & reach[y + 1] & ~reach[y]
            if new != 0:
                reach[y] = run_fill(reach[y] | new, e)
                changed = True
        if not changed:
            break
        changed = False
        for y in range(top + 1, height):
            e = full & ~np.int64(board[y])
            new = e & reach[y - 1] & ~reach[y]
            if new != 0:
                reach[y] = run_fill(reach[y] | new, e)
                changed = True
    cover = 0
    n = 0
    for y in range(top, height):
        r = np.int64(board[y])
        n += popcount(cover & ~r & reach[y])
        cover |= r
    return n


# --------------------------------------------------------------------------------------------
# Placement features


@placement_feature
def landing_height(p):
    """((height - y_top) + (height - y_bottom)) / 2 for the top and bottom rows of the piece's four
    cells where it locked (a flat I on the floor: 1.0, a vertical one: 2.5)."""
    height = p.board.shape[0]
    lo = p.y + p.cells[0, 1]
    hi = lo
    for k in range(1, 4):
        r = p.y + p.cells[k, 1]
        if r < lo:
            lo = r
        if r > hi:
            hi = r
    return ((height - lo) + (height - hi)) / 2.0


@placement_feature
def eroded_cells(p):
    """Rows cleared by the lock x the piece's own cells in those rows (Pierre Dellacherie)."""
    if p.lines == 0:
        return 0
    locked = p.locked
    height = locked.shape[0]
    full = (1 << p.width) - 1
    n = 0
    for k in range(4):
        r = p.y + p.cells[k, 1]
        if 0 <= r < height and np.int64(locked[r]) == full:
            n += 1
    return p.lines * n


@placement_feature
def lines_cleared(p):
    """Rows cleared by the lock, 0..4."""
    return p.lines


@placement_feature
def points_gained(p):
    """Points the lock scored."""
    return p.points


# --------------------------------------------------------------------------------------------
# Board features


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


# --------------------------------------------------------------------------------------------
# The literature's conventions (Thiéry and Scherrer's MdpTetris, where they differ from the above),
# Bertsekas and Tsitsiklis's features, and Thiéry and Scherrer's two


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


# --------------------------------------------------------------------------------------------
# Tie-breaks


@tie_break("none")
def no_tie_break(x, state, spawn_x, spawn_state):
    """Every placement ranks the same (ties go to the first generated)."""
    return 0


@tie_break("pd_priority")
def pd_priority(x, state, spawn_x, spawn_state):
    """Pierre Dellacherie's priority: 100 x columns moved from the spawn + rotations from the spawn
    state, lower first."""
    return 100 * abs(x - spawn_x) + ((state - spawn_state) & 3)


@tie_break("state_then_column")
def state_then_column(x, state, spawn_x, spawn_state):
    """The lowest state, then the leftmost x: under the ``standard`` rules (states and x are
    MdpTetris's orientations and columns) the first best action MdpTetris's players take."""
    return 256 * state + x + 64
