"""The base under the window: built once by the survival evaluator, a depth-first search under hard
rules until every column reaches the window and the next pieces have a chain of transitions."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from engine._jit.decorators import inner
from engine.board import place
from engine.lock import spawn_state
from engine.movegen import MoveScratch, capacity
from engine.movegen.generators import placements_into
from engine.movegen.tables import new_scratch, rows_for
from evaluators import board_values, priority

from .._base import DONE, GOING, STUCK, ValueScratch, best_first, value_child, value_scratch
from .surfaces import PIECE_CELLS, START_LOOKAHEAD, Window, drop_move



# --------------------------------------------------------------------------- the base
class BaseLimits(NamedTuple):
    """The base search's bounds: ``window`` (the DP's `Window`, whose floor the base fixes),
    ``base_cap`` (the highest the base builder stacks a column into the window) and ``max_nodes``
    (the most placements it tries)."""

    window: Window
    base_cap: int
    max_nodes: int


class BaseScratch(NamedTuple):
    """The base search's scratch: ``moves`` (the move generator's), ``found`` (a piece's
    placements), ``values`` (the evaluator's) and ``h`` (column heights)."""

    moves: MoveScratch
    found: np.ndarray
    values: ValueScratch
    h: np.ndarray


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def window_heights(board, window, width, h):
    """``h[i]``: the height of column i's stack in the window (rows 0 .. window-1), standing on the
    window's bottom row. Returns False when some column's window cells do not form such a stack."""
    for i in range(width):
        k = 0
        r = window - 1
        while r >= 0 and (np.int64(board[r]) >> i) & 1:
            k += 1
            r -= 1
        while r >= 0:
            if (np.int64(board[r]) >> i) & 1:
                return False
            r -= 1
        h[i] = k
    return True


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def base_ready(board, window, cap, width, h):
    """Whether the DP can start on ``board``: the window is a profile no higher than ``cap`` and
    every column whose top base cell is empty is covered by the window."""
    if not window_heights(board, window, width, h):
        return False
    for i in range(width):
        if h[i] > cap:
            return False
        if window < board.shape[0] and (np.int64(board[window]) >> i) & 1 == 0 and h[i] == 0:
            return False
    return True


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def floor_of(board, window, width):
    """The floor mask: bit i set when column i's top base cell is empty (0 without a base)."""
    floor = 0
    if window < board.shape[0]:
        for i in range(width):
            if (np.int64(board[window]) >> i) & 1 == 0:
                floor |= 1 << i
    return floor


@inner
def survives(h, t, depth, sequence, tables, win):
    """Whether pieces t .. t + depth - 1 have a chain of transitions from heights ``h``: a
    depth-first search over their moves in table order. Iterative, not recursive: numba cannot
    link a recursive kernel loaded from its cache into a caller compiled afresh (a base built for
    another evaluator)."""
    if depth == 0:
        return True
    hs = np.empty((depth + 1, win.width), np.int64)  # hs[d]: the heights before piece t + d
    hs[0] = h
    tried = np.zeros(depth, np.int64)  # tried[d]: moves of piece t + d tried so far
    d = 0
    while d >= 0:
        shape = sequence[t + d]
        moves, low, high = tables.moves[shape], tables.low[shape], tables.high[shape]
        found = False
        while tried[d] < tables.count[shape] and not found:
            cy, _, _ = drop_move(hs[d], hs[d + 1], moves, low, high, win, tried[d])
            tried[d] += 1
            found = cy >= 0
        if not found:
            d -= 1
        elif d + 1 == depth:
            return True
        else:
            d += 1
            tried[d] = 0
    return False


@inner
def can_start(board, t, n, sequence, tables, limits, h):
    """`base_ready` (no higher than ``limits.base_cap``), and the next pieces (up to
    `START_LOOKAHEAD`) have a chain of transitions from the board's profile (under the DP's cap)."""
    win = limits.window
    if not base_ready(board, win.rows, limits.base_cap, win.width, h):
        return False
    floored = Window(win.rows, win.width, win.cap, floor_of(board, win.rows, win.width), win.base_cells)
    return survives(h, t, min(START_LOOKAHEAD, n - t), sequence, tables, floored)


@inner
def is_base_child(locked, window, cap, full, h):
    """Whether ``locked`` (a board with the piece placed, before any clear) is a base placement's:
    no row full (``full``: a full row's mask), and every column's window cells a stack standing on
    the window's bottom row, no higher than ``cap`` (``h`` receives the heights)."""
    for r in range(locked.shape[0]):
        if np.int64(locked[r]) == full:
            return False
    if not window_heights(locked, window, h.shape[0], h):
        return False
    for i in range(h.shape[0]):
        if h[i] > cap:
            return False
    return True


@inner
def base_candidates(board, shape, t, rules, spec, limits, ws, out):
    """The base placements of piece ``t`` (``shape``) on ``board`` (`is_base_child`, stacks no
    higher than ``limits.base_cap``), best first by the evaluator (ties: its tie-break, then
    generation order), as rows (x, y, state) of ``out``; returns how many."""
    found, vs, locked = ws.found, ws.values, ws.values.locked
    ss = spawn_state(t, rules)
    m = placements_into(board, rules, shape, ss, ws.moves, found)
    board_values(board, rules.width, spec, vs.pvals)
    values = np.empty(m, np.float64)
    ranks = np.empty(m, np.int64)
    kept = np.empty(m, np.int64)
    n = 0
    for k in range(m):
        x, y, s = found[k, 0], found[k, 1], found[k, 2]
        alive, v = value_child(board, rules, shape, s, x, y, t + 1, spec, vs)
        if not alive or not is_base_child(locked, limits.window.rows, limits.base_cap, rules.full_row, ws.h):
            continue
        values[n] = v
        ranks[n] = priority(spec, x, s, rules.spawn_x, ss)
        kept[n] = k
        n += 1
    idx = best_first(values, ranks, n)
    for i in range(n):
        k = kept[idx[i]]
        out[i, 0], out[i, 1], out[i, 2] = found[k, 0], found[k, 1], found[k, 2]
    return n


@inner
def base_scratch(rules, spec):
    """A `BaseScratch` for ``rules``' boards and the evaluator ``spec``."""
    return BaseScratch(new_scratch(rows_for(rules.height), 1),
                       np.zeros((capacity(rules.height, rules.width), 3), np.int64),
                       value_scratch(spec.terms.shape[1], rules.height), np.zeros(rules.width, np.int64))


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def build_base(sequence, n, rules, spec, tables, limits, path):
    """A base: pieces placed from the empty board by a depth-first search in the evaluator's order
    (so the greedy path whenever that works), each a base placement (`base_candidates`), until
    `can_start`. Returns (pieces placed, stop, board): stop `GOING` the base is ready, `DONE` the
    pieces ran out first, `STUCK` no base within ``limits.max_nodes`` placements tried.
    ``path.placements`` receives the path."""
    depth_max = min(n, rules.height * rules.width // PIECE_CELLS + 1)
    ws = base_scratch(rules, spec)
    boards = np.zeros((depth_max + 1, rules.height), np.uint16)
    cand = np.zeros((depth_max + 1, ws.found.shape[0], 3), np.int64)
    ncand = np.zeros(depth_max + 1, np.int64)
    pos = np.zeros(depth_max + 1, np.int64)
    placements = path.placements
    depth = 0
    fresh = True
    nodes = 0
    while True:
        if fresh:
            if can_start(boards[depth], depth, n, sequence, tables, limits, ws.h):
                return depth, GOING, boards[depth].copy()
            if depth == n:
                return n, DONE, boards[depth].copy()
            ncand[depth] = 0
            if depth < depth_max:
                ncand[depth] = base_candidates(boards[depth], sequence[depth], depth, rules, spec, limits, ws,
                                               cand[depth])
            pos[depth] = 0
        if pos[depth] < ncand[depth] and nodes < limits.max_nodes:
            x, y, s = cand[depth, pos[depth], 0], cand[depth, pos[depth], 1], cand[depth, pos[depth], 2]
            pos[depth] += 1
            nodes += 1
            boards[depth + 1] = boards[depth]
            place(boards[depth + 1], rules.cells[sequence[depth], s], x, y)
            placements[depth, 0], placements[depth, 1], placements[depth, 2] = x, y, s
            depth += 1
            fresh = True
        else:
            if depth == 0 or nodes >= limits.max_nodes:
                return 0, STUCK, boards[0].copy()
            depth -= 1
            fresh = False
