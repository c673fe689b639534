"""Profiles (hole-free surfaces of the window, packed in one int64), the bundles the profile DP's
kernels read (`DropTables`, `Window`, `States`, `SurfaceKey`, `LayerBuffers`) and the drops: the
transitions that keep a surface hole-free."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from engine._jit.decorators import inlined




BITS = 5  #: bits per column in a packed profile
MASK = (1 << BITS) - 1
PROFILE_BITS = 63  #: a packed profile is a non-negative int64
MOVE_BITS = 6  #: bits of the move index in a link (moves per piece < 64)
MOVE_MASK = (1 << MOVE_BITS) - 1
LINK = np.uint32  #: a link: ``parent << MOVE_BITS | move``
LINK_BYTES = np.dtype(LINK).itemsize
MIB = 2**20
BASE_NODES = 200_000  #: most placements the base search tries
START_LOOKAHEAD = 10  #: the DP starts on a base from which this many pieces have a chain of transitions
PIECE_CELLS = 4  #: cells of a piece (the base holds at most height x width / 4 + 1 pieces)
EXPAND_CHUNKS = 256  #: most chunks a layer's states are split into for the threads
HASH_SPREAD = 2  #: the merge's hash table has at least this many slots per child
#: columns of `DropTables.moves`
MOVE_FIELDS = 4
MOVE_STATE, MOVE_X, MOVE_LEFT, MOVE_COLUMNS = range(MOVE_FIELDS)


# --------------------------------------------------------------------------- profiles
@inlined
def pack_profile(h, width):
    """The packed profile of column heights ``h[0 .. width-1]`` (each 0..31)."""
    p = np.int64(0)
    for i in range(width):
        p |= np.int64(h[i]) << (BITS * i)
    return p


@inlined
def unpack_profile(p, width, h):
    """Write the column heights of packed profile ``p`` into ``h``."""
    for i in range(width):
        h[i] = (p >> (BITS * i)) & MASK


def profile_of(heights) -> int:
    """Python form of `pack_profile`."""
    return int(sum(int(v) << (BITS * i) for i, v in enumerate(heights)))


def heights_of(p: int, width: int) -> list[int]:
    """Python form of `unpack_profile`."""
    return [(int(p) >> (BITS * i)) & MASK for i in range(width)]


def profile_board(p: int, base: np.ndarray, window: int, width: int) -> np.ndarray:
    """The whole board of profile ``p`` over ``base`` (the board's rows below the window)."""
    board = np.zeros(window + len(base), np.uint16)
    board[window:] = base
    for i, hi in enumerate(heights_of(p, width)):
        for r in range(window - hi, window):
            board[r] |= 1 << i
    return board


# --------------------------------------------------------------------------- bundles
class DropTables(NamedTuple):
    """Per shape, every (distinct state, leftmost column) the piece can be dropped at (`drop_tables`):
    ``moves[shape, m]`` = (state, centre x, leftmost column, columns) (`MOVE_STATE` .. `MOVE_COLUMNS`);
    ``low[shape, m, j]`` and ``high[shape, m, j]`` the largest and smallest dy of the piece's cells
    in its column j; ``count[shape]`` the number of moves."""

    moves: np.ndarray
    low: np.ndarray
    high: np.ndarray
    count: np.ndarray


class Window(NamedTuple):
    """The window as the transitions see it: ``rows`` (its height) and ``width``; ``cap``, the
    highest a column may stand after a lock's clear; ``floor``, bit i set when column i's top base
    cell is empty (the column keeps at least one cell); ``base_cells``, the base's occupied cells
    (every lock counts them)."""

    rows: int
    width: int
    cap: int
    floor: int
    base_cells: int


class States(NamedTuple):
    """States of a layer, or children of one: ``profiles`` (packed; -1: no child in this slot) and
    ``scores``."""

    profiles: np.ndarray
    scores: np.ndarray


class SurfaceKey(NamedTuple):
    """What a layer keeps its states by (`surface_key`): the score, or with ``surface`` the score +
    ``cells_weight`` x window cells + ``bumpiness_weight`` x bumpiness."""

    surface: bool
    cells_weight: float
    bumpiness_weight: float


class LayerBuffers(NamedTuple):
    """A layer's arrays, allocated once per search (`layer_buffers`): ``children`` (slot
    ``i * moves + m``: move m of state i), the merge's hash table (``slots``: an index into the
    distinct children; ``stamps``: the layer that last wrote each slot), and the kept states
    (``kept``, in slot order) with their ``links``."""

    children: States
    slots: np.ndarray
    stamps: np.ndarray
    kept: States
    links: np.ndarray


def layer_buffers(states: int, moves: int) -> LayerBuffers:
    """`LayerBuffers` for layers of at most ``states`` states and ``moves`` moves per state."""
    size = table_size(states * moves)
    return LayerBuffers(States(np.empty(states * moves, np.int64), np.empty(states * moves, np.int64)),
                        np.zeros(size, np.int64), np.full(size, -1, np.int64),
                        States(np.empty(states, np.int64), np.empty(states, np.int64)), np.empty(states, LINK))


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def table_size(entries):
    """The merge's hash table size for ``entries`` children: a power of two, at least
    `HASH_SPREAD` slots per child."""
    size = 1
    while size < HASH_SPREAD * entries:
        size <<= 1
    return size


# --------------------------------------------------------------------------- moves
def drop_tables(rules) -> DropTables:
    """The `DropTables` of ``rules`` (a `Rules`)."""
    shapes = rules.cells.shape[0]
    entries = [drop_entries(rules, shape) for shape in range(shapes)]
    M = max(len(e) for e in entries)
    if M >= 1 << MOVE_BITS:
        raise ValueError(f"rules {rules.name!r}: {M} moves per piece do not fit a link")
    tables = DropTables(np.zeros((shapes, M, MOVE_FIELDS), np.int64), np.zeros((shapes, M, PIECE_CELLS), np.int64),
                        np.zeros((shapes, M, PIECE_CELLS), np.int64), np.zeros(shapes, np.int64))
    for shape, es in enumerate(entries):
        tables.count[shape] = len(es)
        for m, (s, cx, x0, w, lows, highs) in enumerate(es):
            tables.moves[shape, m] = (s, cx, x0, w)
            tables.low[shape, m, :w] = lows
            tables.high[shape, m, :w] = highs
    return tables


def drop_entries(rules, shape: int) -> list[tuple]:
    """The moves of ``shape``: (state, centre x, leftmost column, columns, lows, highs) per distinct
    state and leftmost column."""
    cells, alias = rules.cells, rules.alias
    entries = []
    for s in range(4):
        if alias[shape, s] != s:
            continue
        dx, dy = cells[shape, s, :, 0], cells[shape, s, :, 1]
        lo_x = int(dx.min())
        w = int(dx.max()) - lo_x + 1
        lows = [int(dy[dx - lo_x == j].max()) for j in range(w)]
        highs = [int(dy[dx - lo_x == j].min()) for j in range(w)]
        for x0 in range(rules.width - w + 1):
            entries.append((s, x0 - lo_x, x0, w, lows, highs))
    return entries


def free_rows(rules) -> int:
    """Rows at the top that must stay empty so that every state of every piece fits at the spawn
    row in any column (the deepest cell below the spawn centre, plus one)."""
    return int(rules.spawn_y + rules.cells[:, :, :, 1].max() + 1)


@inlined
def drop(h, out, tables, win, shape, m):
    """Drop move ``m`` of ``shape`` on heights ``h`` in the window ``win``; ``out`` receives the
    heights after the lock and the clear of the rows it filled. Returns (centre y on the board,
    cells in the window after the lock, rows filled), or y = -1 when the drop leaves a hole, tops
    out, or ends with the stack above the cap or a column below its floor."""
    return drop_move(h, out, tables.moves[shape], tables.low[shape], tables.high[shape], win, m)


@inlined
def drop_move(h, out, moves, low, high, win, m):
    """`drop` on the shape's rows of the `DropTables` (``moves``, ``low``, ``high``). Hot loops take
    the rows out of the bundle once, before the loop, and call this: an array taken out of a tuple
    inside the loop costs reference counting on every call (`expand_layer` ran about 1.5 x slower
    through `drop`)."""
    x0 = moves[m, MOVE_LEFT]
    w = moves[m, MOVE_COLUMNS]
    window, width = win.rows, win.width
    # resting without a hole: every column of the piece lands on the surface, at the same centre row
    cy = window - 1 - h[x0] - low[m, 0]
    for j in range(1, w):
        if window - 1 - h[x0 + j] - low[m, j] != cy:
            return -1, 0, 0
    for i in range(width):
        out[i] = h[i]
    for j in range(w):
        nh = window - cy - high[m, j]
        if nh > window - 1:  # the top row occupied: every row holds a cell, the game ends
            return -1, 0, 0
        out[x0 + j] = nh
    f = out[0]
    cells = 0
    for i in range(width):
        cells += out[i]
        if out[i] < f:
            f = out[i]
    for i in range(width):
        out[i] -= f
        if out[i] > win.cap or out[i] < ((win.floor >> i) & 1):
            return -1, 0, 0
    return cy, cells, f
