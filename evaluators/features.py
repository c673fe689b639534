"""The features an evaluator weighs: one numba kernel per feature, and their registry.

Boards are the engine's: a numpy ``uint16`` array of ``height`` rows, row ``y = 0`` at the top,
bit ``x`` of row ``y`` set when cell (x, y) is occupied; ``width`` is given separately. Every
kernel works on whole rows as int64 bit masks (shifts, masks, `engine.board.popcount`), never cell by
cell. Terms used below:

- *column height*: ``height - y`` where ``y`` is the row of the column's top occupied cell; 0 for an
  empty column. A flat stack one row high has height 1 in every column.
- *hole*: an empty cell with at least one occupied cell anywhere above it in the same column.
- *open to the sky*: an empty cell with no occupied cell above it in its column.

Board features (``f(board, width)``, measured on the board after the lock and the clear):

| name | what it counts |
|---|---|
| ``row_transitions`` | per row, horizontally adjacent cells that differ, the walls counting as occupied cells (an empty row counts 2), summed over all rows (Pierre Dellacherie) |
| ``interior_row_transitions`` | per row, adjacent cells (x, x+1), x = 0..width-2, that differ, walls not counted, summed over all rows |
| ``column_transitions`` | per column, vertically adjacent cells that differ, with the space above row 0 empty and a floor below the last row occupied, summed over all columns |
| ``holes`` | holes (alias ``covered_empty_cells``) |
| ``open_holes`` | holes connected through empty cells (4-neighbourhood, inside the board) to an empty cell open to the sky ("virtual" holes) |
| ``covered_holes`` | holes not connected so ("real" holes); ``open_holes + covered_holes == holes`` |
| ``rows_with_holes`` | rows holding at least one hole |
| ``buried_cells`` | occupied cells with at least one empty cell anywhere below them in the same column |
| ``wells`` | cumulative wells: a well cell is an empty cell whose left and right neighbours are occupied (a wall counts as occupied); each maximal vertical run of k well cells in a column counts 1 + 2 + ... + k |
| ``occupied_cells`` | occupied cells |
| ``occupied_rows`` | rows holding at least one occupied cell |
| ``aggregate_height`` | sum of the column heights |
| ``max_height`` | largest column height |
| ``bumpiness`` | sum over x = 0..width-2 of abs(h[x] - h[x+1]) |
| ``platforms`` | neighbouring columns (x, x+1) of equal height |
| ``steps_up_1``, ``steps_up_2``, ``steps_up_3plus`` | neighbouring columns (x, x+1) with h[x+1] - h[x] equal to 1, 2, or at least 3 |
| ``steps_down_1``, ``steps_down_2``, ``steps_down_3plus`` | neighbouring columns (x, x+1) with h[x] - h[x+1] equal to 1, 2, or at least 3 |

Placement features (they describe the lock itself; the caller passes what the engine counted):

| name | what it counts |
|---|---|
| ``landing_height`` | ((height - y_top) + (height - y_bottom)) / 2 for the top and bottom rows of the piece's four cells where it locked (a flat I on the floor: 1.0, a vertical one: 2.5) |
| ``eroded_cells`` | rows cleared by the lock × the piece's own cells in those rows (Pierre Dellacherie) |
| ``lines_cleared`` | rows cleared by the lock, 0..4 |
| ``points_gained`` | points the lock scored |

``covered_empty_cells`` is an alias of ``holes`` (the name the 1,395,326 solution uses): the same
kernel and the same weight-vector slot. `FEATURES` fixes the order of the weight vector.

Limits: ``width`` up to 16 (16-bit rows), ``height`` up to `MAX_HEIGHT` = 64 (the engine's rules
allow 60): ``open_holes`` and ``wells`` keep one word per row in a fixed stack buffer.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from engine.board import popcount

#: Rows a board may have at most here (the engine's rules allow 4..60).
MAX_HEIGHT = 64

# --------------------------------------------------------------------------------------------
# Helpers


@intrinsic
def stack_int64(typingctx, n):
    """A pointer to ``n`` (a literal) int64 slots on the calling function's stack, uninitialised.

    Scratch space without a heap allocation: a heap array would cost an allocation and a free
    per call, and keep `kernel.evaluate` from being compiled without numba's runtime. Valid only
    until the calling function returns."""
    if not isinstance(n, types.IntegerLiteral):
        return None

    def codegen(context, builder, signature, args):
        return cgutils.alloca_once(builder, ir.IntType(64), size=n.literal_value)

    return types.CPointer(types.int64)(n), codegen


@njit(cache=True)
def top_row(board):
    """Row of the highest occupied cell (smallest y), or ``height`` for an empty board."""
    height = board.shape[0]
    y = 0
    while y < height and board[y] == 0:
        y += 1
    return y


@njit(cache=True)
def hfill(seed, empty):
    """The cells of ``empty`` reached from ``seed`` (a subset of it) by moving left or right
    through ``empty`` (Kogge-Stone occluded fill, rows of at most 16 bits)."""
    g = seed
    p = empty
    g |= p & (g << 1)
    p &= p << 1
    g |= p & (g << 2)
    p &= p << 2
    g |= p & (g << 4)
    p &= p << 4
    g |= p & (g << 8)
    h = seed
    p = empty
    h |= p & (h >> 1)
    p &= p >> 1
    h |= p & (h >> 2)
    p &= p >> 2
    h |= p & (h >> 4)
    p &= p >> 4
    h |= p & (h >> 8)
    return g | h


# --------------------------------------------------------------------------------------------
# Placement features


@njit(cache=True)
def landing_height(cells, y, height):
    """((height - y_top) + (height - y_bottom)) / 2, y_top and y_bottom the smallest and largest row
    of the piece's cells ``(x + dx, y + dy)`` where it locked (a flat I on the floor: 1.0)."""
    lo = y + cells[0, 1]
    hi = lo
    for k in range(1, 4):
        r = y + cells[k, 1]
        if r < lo:
            lo = r
        if r > hi:
            hi = r
    return ((height - lo) + (height - hi)) / 2.0


@njit(cache=True)
def eroded_cells(locked, cells, y, lines, width):
    """``lines`` (rows cleared by the lock) × the piece's cells lying in a full row of ``locked``
    (the board after placing the piece, before clearing)."""
    if lines == 0:
        return 0
    height = locked.shape[0]
    full = (1 << width) - 1
    n = 0
    for k in range(4):
        r = y + cells[k, 1]
        if 0 <= r < height and np.int64(locked[r]) == full:
            n += 1
    return lines * n


# --------------------------------------------------------------------------------------------
# Board features. Each ``<name>_from(board, width, top)`` is ``<name>(board, width)`` given
# ``top = top_row(board)`` (every row above ``top`` empty), for callers that share it.


@njit(cache=True)
def occupied_cells_from(board, width, top):
    """`occupied_cells` given the top row ``top`` (see the section comment)."""
    n = 0
    for y in range(top, board.shape[0]):
        n += popcount(np.int64(board[y]))
    return n


@njit(cache=True)
def occupied_cells(board, width):
    """Occupied cells on the board."""
    return occupied_cells_from(board, width, top_row(board))


@njit(cache=True)
def occupied_rows_from(board, width, top):
    """`occupied_rows` given the top row ``top`` (see the section comment)."""
    n = 0
    for y in range(top, board.shape[0]):
        if board[y] != 0:
            n += 1
    return n


@njit(cache=True)
def occupied_rows(board, width):
    """Rows holding at least one occupied cell."""
    return occupied_rows_from(board, width, top_row(board))


@njit(cache=True)
def row_transitions_from(board, width, top):
    """`row_transitions` given the top row ``top`` (see the section comment)."""
    inner = (1 << (width + 1)) - 1
    walls = 1 | (1 << (width + 1))
    n = 2 * top
    for y in range(top, board.shape[0]):
        e = (np.int64(board[y]) << 1) | walls
        n += popcount((e ^ (e >> 1)) & inner)
    return n


@njit(cache=True)
def row_transitions(board, width):
    """Pierre Dellacherie's row transitions: for every row, the horizontally adjacent pairs of
    cells that differ, counting the left and right walls as occupied cells (an empty row counts 2),
    summed over all ``height`` rows."""
    return row_transitions_from(board, width, top_row(board))


@njit(cache=True)
def interior_row_transitions_from(board, width, top):
    """`interior_row_transitions` given the top row ``top`` (see the section comment)."""
    m = (1 << (width - 1)) - 1
    n = 0
    for y in range(top, board.shape[0]):
        r = np.int64(board[y])
        n += popcount((r ^ (r >> 1)) & m)
    return n


@njit(cache=True)
def interior_row_transitions(board, width):
    """For every row, the pairs of cells (x, x + 1), x = 0..width-2, of which one is occupied and
    the other empty (walls not counted; an empty or a full row counts 0), summed over all rows."""
    return interior_row_transitions_from(board, width, top_row(board))


@njit(cache=True)
def column_transitions_from(board, width, top):
    """`column_transitions` given the top row ``top`` (see the section comment)."""
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


@njit(cache=True)
def column_transitions(board, width):
    """For every column, the vertically adjacent pairs of cells that differ, counting the space
    above row 0 as empty and a floor below the last row as occupied (an empty column counts 1),
    summed over all columns."""
    return column_transitions_from(board, width, top_row(board))


@njit(cache=True)
def holes_from(board, width, top):
    """`holes` given the top row ``top`` (see the section comment)."""
    cover = 0
    n = 0
    for y in range(top, board.shape[0]):
        r = np.int64(board[y])
        n += popcount(cover & ~r)
        cover |= r
    return n


@njit(cache=True)
def holes(board, width):
    """Holes: empty cells with at least one occupied cell anywhere above them in the same column.
    Also registered as ``covered_empty_cells`` (same kernel, same weight slot)."""
    return holes_from(board, width, top_row(board))


@njit(cache=True)
def holes_and_rows_from(board, width, top):
    """``(holes, rows_with_holes)`` in one pass."""
    cover = 0
    n = 0
    rows = 0
    for y in range(top, board.shape[0]):
        r = np.int64(board[y])
        h = cover & ~r
        if h != 0:
            n += popcount(h)
            rows += 1
        cover |= r
    return n, rows


@njit(cache=True)
def rows_with_holes(board, width):
    """Rows holding at least one hole (an empty cell with an occupied cell above it)."""
    return holes_and_rows_from(board, width, top_row(board))[1]


@njit(cache=True)
def open_holes_from(board, width, top):
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
        above = seed if seed == e else hfill(seed, e)
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
                reach[y] = hfill(reach[y] | new, e)
                changed = True
        if not changed:
            break
        changed = False
        for y in range(top + 1, height):
            e = full & ~np.int64(board[y])
            new = e & reach[y - 1] & ~reach[y]
            if new != 0:
                reach[y] = hfill(reach[y] | new, e)
                changed = True
    cover = 0
    n = 0
    for y in range(top, height):
        r = np.int64(board[y])
        n += popcount(cover & ~r & reach[y])
        cover |= r
    return n


@njit(cache=True)
def open_holes(board, width):
    """"Virtual" holes: holes connected through empty cells (up, down, left, right, inside the
    board) to an empty cell open to the sky (no occupied cell above it)."""
    return open_holes_from(board, width, top_row(board))


@njit(cache=True)
def covered_holes(board, width):
    """"Real" holes: holes not connected through empty cells (up, down, left, right, inside the
    board) to any empty cell open to the sky; ``holes - open_holes``."""
    top = top_row(board)
    n = holes_from(board, width, top)
    if n == 0:
        return 0
    return n - open_holes_from(board, width, top)


@njit(cache=True)
def buried_cells_from(board, width, top):
    """`buried_cells` given the top row ``top`` (see the section comment)."""
    full = (1 << width) - 1
    below = 0
    n = 0
    for y in range(board.shape[0] - 1, top - 1, -1):
        r = np.int64(board[y])
        n += popcount(r & below)
        below |= full & ~r
    return n


@njit(cache=True)
def buried_cells(board, width):
    """Occupied cells with at least one empty cell anywhere below them in the same column."""
    return buried_cells_from(board, width, top_row(board))


@njit(cache=True)
def wells_from(board, width, top):
    """`wells` given the top row ``top`` (see the section comment)."""
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


@njit(cache=True)
def wells(board, width):
    """Pierre Dellacherie's cumulative wells. A well cell is an empty cell whose left and right
    neighbours are both occupied (a wall counts as occupied); in every column, each maximal
    vertical run of k well cells counts 1 + 2 + ... + k. Covered cells count too."""
    return wells_from(board, width, top_row(board))


@njit(cache=True)
def aggregate_height_from(board, width, top):
    """`aggregate_height` given the top row ``top`` (see the section comment)."""
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


@njit(cache=True)
def aggregate_height(board, width):
    """Sum of the column heights (height - row of the column's top occupied cell; 0 if empty)."""
    return aggregate_height_from(board, width, top_row(board))


@njit(cache=True)
def max_height(board, width):
    """Largest column height: height - row of the highest occupied cell (0 for an empty board)."""
    return board.shape[0] - top_row(board)


@njit(cache=True)
def bumpiness_from(board, width, top):
    """`bumpiness` given the top row ``top`` (see the section comment)."""
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


@njit(cache=True)
def bumpiness(board, width):
    """Sum over x = 0..width-2 of abs(h[x] - h[x+1]), h the column heights."""
    return bumpiness_from(board, width, top_row(board))


@njit(cache=True)
def step_counts_from(board, width, top):
    """``(platforms, up1, up2, up3plus, down1, down2, down3plus)`` in one pass.

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
    return (popcount(m & ~(u1 | d1)), popcount(u1 & ~u2), popcount(u2 & ~u3), popcount(u3),
            popcount(d1 & ~d2), popcount(d2 & ~d3), popcount(d3))


@njit(cache=True)
def platforms(board, width):
    """Neighbouring columns (x, x + 1) of equal height (two empty columns included)."""
    return step_counts_from(board, width, top_row(board))[0]


@njit(cache=True)
def steps_up_1(board, width):
    """Neighbouring columns (x, x + 1) where the right column is higher by exactly 1."""
    return step_counts_from(board, width, top_row(board))[1]


@njit(cache=True)
def steps_up_2(board, width):
    """Neighbouring columns (x, x + 1) where the right column is higher by exactly 2."""
    return step_counts_from(board, width, top_row(board))[2]


@njit(cache=True)
def steps_up_3plus(board, width):
    """Neighbouring columns (x, x + 1) where the right column is higher by 3 or more."""
    return step_counts_from(board, width, top_row(board))[3]


@njit(cache=True)
def steps_down_1(board, width):
    """Neighbouring columns (x, x + 1) where the left column is higher by exactly 1."""
    return step_counts_from(board, width, top_row(board))[4]


@njit(cache=True)
def steps_down_2(board, width):
    """Neighbouring columns (x, x + 1) where the left column is higher by exactly 2."""
    return step_counts_from(board, width, top_row(board))[5]


@njit(cache=True)
def steps_down_3plus(board, width):
    """Neighbouring columns (x, x + 1) where the left column is higher by 3 or more."""
    return step_counts_from(board, width, top_row(board))[6]


# Python-level stand-ins so that every feature has a function with a docstring; the kernel takes
# these two from its arguments.
def lines_cleared(lines):
    """Rows cleared by the lock (0..4), as the caller counted them."""
    return lines


def points_gained(points):
    """Points the lock scored, as the caller counted them."""
    return points


# --------------------------------------------------------------------------------------------
# Registry

#: Feature names in weight-vector order (the index of a name is its slot in every spec array).
FEATURES: tuple[str, ...] = (
    "landing_height",
    "eroded_cells",
    "lines_cleared",
    "points_gained",
    "row_transitions",
    "interior_row_transitions",
    "column_transitions",
    "holes",
    "open_holes",
    "covered_holes",
    "rows_with_holes",
    "buried_cells",
    "wells",
    "occupied_cells",
    "occupied_rows",
    "aggregate_height",
    "max_height",
    "bumpiness",
    "platforms",
    "steps_up_1",
    "steps_up_2",
    "steps_up_3plus",
    "steps_down_1",
    "steps_down_2",
    "steps_down_3plus",
)

#: Features that describe the lock rather than the resulting board (no parent value, no delta).
PLACEMENT_FEATURES: frozenset[str] = frozenset({"landing_height", "eroded_cells", "lines_cleared", "points_gained"})

#: Other names accepted for a feature: alias -> feature.
ALIASES: dict[str, str] = {"covered_empty_cells": "holes"}

#: Feature name -> its function (board features: ``f(board, width)``).
FUNCTIONS = {
    "landing_height": landing_height,
    "eroded_cells": eroded_cells,
    "lines_cleared": lines_cleared,
    "points_gained": points_gained,
    "row_transitions": row_transitions,
    "interior_row_transitions": interior_row_transitions,
    "column_transitions": column_transitions,
    "holes": holes,
    "open_holes": open_holes,
    "covered_holes": covered_holes,
    "rows_with_holes": rows_with_holes,
    "buried_cells": buried_cells,
    "wells": wells,
    "occupied_cells": occupied_cells,
    "occupied_rows": occupied_rows,
    "aggregate_height": aggregate_height,
    "max_height": max_height,
    "bumpiness": bumpiness,
    "platforms": platforms,
    "steps_up_1": steps_up_1,
    "steps_up_2": steps_up_2,
    "steps_up_3plus": steps_up_3plus,
    "steps_down_1": steps_down_1,
    "steps_down_2": steps_down_2,
    "steps_down_3plus": steps_down_3plus,
}

BOARD_FEATURES: tuple[str, ...] = tuple(n for n in FEATURES if n not in PLACEMENT_FEATURES)


def canonical(name: str) -> str:
    """The feature a name stands for (an alias's target, else the name itself)."""
    return ALIASES.get(name, name)


def index(name: str) -> int:
    """Slot of a feature (or alias) in the weight vector; ValueError for an unknown name."""
    try:
        return FEATURES.index(canonical(name))
    except ValueError:
        raise ValueError(f"unknown feature {name!r}") from None


def known_names() -> list[str]:
    """Every accepted name, features and aliases, sorted."""
    return sorted(set(FEATURES) | set(ALIASES))


def describe() -> dict[str, str]:
    """Name -> first line of its docstring, in `FEATURES` order, aliases last (for the README)."""
    out = {}
    for name in FEATURES:
        doc = (FUNCTIONS[name].__doc__ or "").strip()
        out[name] = " ".join(doc.split("\n\n")[0].split())
    for alias, target in ALIASES.items():
        out[alias] = f"Alias of ``{target}`` (same kernel, same weight slot)."
    return out
