"""Profile dynamic programming: a layered DP over hole-free surfaces above a fixed base (the design
of the ≈1.2 M GPU solution, on the CPU).

Terms:
- the *window* is the top ``window`` rows of the board; the *base* is the rows below it. The base is
  built first by the survival evaluator: a depth-first search over placements in the evaluator's
  order (the greedy path unless it gets stuck) under hard rules (no row filled; the window part of
  every column stays a stack standing on the base, at most ``base_cap`` rows high), until every column
  reaches the window and the next `START_LOOKAHEAD` pieces have a chain of transitions. From then
  on the base never changes: its rows are never full and each of its empty cells is covered.
- a *profile* is a hole-free surface of the window: column i is filled from the window's bottom row
  up to height ``h[i]`` (0 .. window). It is packed into one int64, ``sum h[i] << (5 * i)``
  (`pack_profile`). A column whose top base cell is empty must keep ``h[i] >= 1`` (its *floor*),
  or the piece above could fall into the base.
- a *transition* is a resting placement that keeps the surface hole-free: every column of the piece
  lands with its lowest cell on the surface (a straight drop), so the new profile adds the piece's
  column heights. Full window rows (``min h`` of them) are then cleared. Placements are (state,
  leftmost column) pairs of the piece's distinct states: at most 34 per piece (`DropTables`).
- *reachability*: a transition is kept only when the board afterwards leaves the top ``free_rows``
  rows empty (3 here: every state of every piece fits at the spawn row at any column). Then the next
  piece can turn at the spawn, shift, and drop straight to any hole-free placement, so every
  transition has a route; the record's routes are found afterwards by the engine's own search.
- *layers*: one per piece. Every state of the layer is expanded (numba ``prange`` over states);
  children with equal profiles keep the higher score (equal scores: the first generated); the best
  ``states`` (K) children by the *key* are kept: the score, or the score plus a surface heuristic
  (``cells_weight`` per window cell + ``bumpiness_weight`` per unit of sum |h[i] - h[i+1]|). Ties go
  to the smaller packed profile, so results do not depend on the number of threads.
- *links*: each kept state stores ``parent << 6 | move`` (uint32) per layer, in memory or in a
  temporary file (``links``), so memory stays bounded; the best state is traced back to placements,
  which are replayed by the engine and must give the DP's score.

Scoring is the game's, by the engine's own rule (`engine.lock.lock_points`): a lock that fills f
rows scores (base cells + window cells, counted after the lock) x table[f], and the piece at the
rules' limit scores nothing. A lock that occupies every row would end the game: the base occupies
all its rows, so a transition never fills the window's top row.

The kernels read bundles: the rules (`KernelRules`), the drop tables (`DropTables`), the window's
geometry (`Window`), a layer's states (`States`), the selection key (`SurfaceKey`), a layer's
buffers (`LayerBuffers`), and for the base `BaseLimits` and `BaseScratch`.
"""

from __future__ import annotations

import os
import resource
import tempfile
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from engine.board import copy_rows, place, popcount
from engine.jit import inlined, inner
from engine.lock import lock_points, spawn_state
from engine.movegen import MoveScratch, capacity, new_scratch, placements_into, rows_for
from evaluators import board_values, priority

from ._base import (
    ABORTED, DONE, GOING, STOP_NAMES, STUCK, Path, Policy, ValueScratch, best_first, new_path, path_result,
    path_scores, value_child, value_scratch,
)
from ._splitmix import GOLDEN, mix64
from .config import ProfileDPConfig
from .registry import register
from .result import Report, SolveResult

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


# --------------------------------------------------------------------------- a layer
@inner(parallel=True)
def expand_layer(states, shape, number, tables, win, rules, children):
    """Children of ``states`` by piece ``number`` (1-based) of ``shape``: slot ``i * count[shape] + m``
    of ``children`` holds move m of state i (profile -1 when the move is not a transition), scored by
    the rules (`lock_points`)."""
    profiles, scores = states.profiles, states.scores
    out_profile, out_score = children.profiles, children.scores
    moves, low, high = tables.moves[shape], tables.low[shape], tables.high[shape]
    n = profiles.shape[0]
    width = win.width
    nm = tables.count[shape]
    chunks = min(n, EXPAND_CHUNKS)
    for c in prange(chunks):
        h = np.empty(width, np.int64)
        nh = np.empty(width, np.int64)
        for i in range(c * n // chunks, (c + 1) * n // chunks):
            unpack_profile(profiles[i], width, h)
            for m in range(nm):
                slot = i * nm + m
                cy, cells, f = drop_move(h, nh, moves, low, high, win, m)
                if cy < 0:
                    out_profile[slot] = -1
                    continue
                out_profile[slot] = pack_profile(nh, width)
                out_score[slot] = scores[i] + lock_points(rules, f, win.base_cells + cells, number)


@inlined
def surface_key(p, score, width, key):
    """The selection key of a state: its score, plus with ``key.surface`` the surface heuristic
    ``cells_weight * cells + bumpiness_weight * bumpiness`` of its profile."""
    if not key.surface:
        return np.float64(score)
    prev = p & MASK
    cells = prev
    bump = 0
    for i in range(1, width):
        v = (p >> (BITS * i)) & MASK
        cells += v
        bump += abs(v - prev)
        prev = v
    return score + key.cells_weight * cells + key.bumpiness_weight * bump


@inner
def merge_children(children, total, slots, stamps, layer):
    """The distinct children among slots 0 .. total-1 (equal profiles: the higher score wins; equal
    scores: the first slot), as their slots in slot order. ``slots`` and ``stamps`` are the hash
    table; a slot whose stamp is not ``layer`` is free."""
    profiles, scores = children.profiles, children.scores
    valid = 0
    for slot in range(total):
        if profiles[slot] >= 0:
            valid += 1
    size = table_size(valid)
    mask = np.uint64(size - 1)
    uniq = np.empty(valid, np.int64)
    u = 0
    for slot in range(total):
        p = profiles[slot]
        if p < 0:
            continue
        pos = np.int64(mix64(np.uint64(p) + GOLDEN) & mask)
        while True:
            if stamps[pos] != layer:
                stamps[pos] = layer
                slots[pos] = u
                uniq[u] = slot
                u += 1
                break
            j = uniq[slots[pos]]
            if profiles[j] == p:
                if scores[slot] > scores[j]:
                    uniq[slots[pos]] = slot
                break
            pos = (pos + 1) & (size - 1)
    return uniq[:u]


@inner
def select_best(children, uniq, K, width, key):
    """Which of the distinct children ``uniq`` (their slots) to keep: all when at most ``K``, else
    the best ``K`` by key (ties: the smaller profile)."""
    u = uniq.shape[0]
    take = np.ones(u, np.bool_)
    if u <= K:
        return take
    profiles, scores = children.profiles, children.scores
    keys = np.empty(u, np.float64)
    for a in range(u):
        s = uniq[a]
        keys[a] = -surface_key(profiles[s], scores[s], width, key)
    bound = np.partition(keys, K - 1)[K - 1]
    # every key below the bound is taken; at the bound, the smallest profiles fill the rest
    n_below = 0
    for a in range(u):
        if keys[a] < bound:
            n_below += 1
    ties = np.empty(u - n_below, np.int64)
    nt = 0
    for a in range(u):
        if keys[a] > bound:
            take[a] = False
        elif keys[a] == bound:
            take[a] = False
            ties[nt] = profiles[uniq[a]]
            nt += 1
    room = K - n_below
    if room > 0:
        ties = np.sort(ties[:nt])
        cut = ties[room - 1]
        for a in range(u):
            if keys[a] == bound and profiles[uniq[a]] <= cut:
                take[a] = True
    return take


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def merge_and_select(buf, total, nm, K, width, key, layer):
    """Merge equal children of ``buf.children`` (`merge_children`), then keep the best ``K`` by
    ``key`` (`select_best`). Writes the kept states, in slot order, to ``buf.kept`` and their links
    (``parent << MOVE_BITS | move``; ``nm`` moves per parent) to ``buf.links``; returns (kept,
    distinct children, best score)."""
    children = buf.children
    profiles, scores = children.profiles, children.scores
    kept_profiles, kept_scores, links = buf.kept.profiles, buf.kept.scores, buf.links
    uniq = merge_children(children, total, buf.slots, buf.stamps, layer)
    best = np.int64(-1)
    for a in range(uniq.shape[0]):
        if scores[uniq[a]] > best:
            best = scores[uniq[a]]
    take = select_best(children, uniq, K, width, key)
    k = 0
    for a in range(uniq.shape[0]):
        if take[a]:
            s = uniq[a]
            kept_profiles[k] = profiles[s]
            kept_scores[k] = scores[s]
            links[k] = LINK(((s // nm) << MOVE_BITS) | (s % nm))
            k += 1
    return k, uniq.shape[0], best


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


# --------------------------------------------------------------------------- links
class Links:
    """Per layer, the kept states' links (`LINK`: ``parent << MOVE_BITS | move``): in memory, or
    appended to an unnamed temporary file (deleted when closed) so that memory stays bounded."""

    def __init__(self, on_disk: bool):
        self.layers: list[np.ndarray] = []
        self.offsets: list[int] = []
        self.file = tempfile.TemporaryFile(prefix="profile_dp-links-") if on_disk else None
        self.size = 0
        self.count = 0

    @property
    def on_disk(self) -> bool:
        return self.file is not None

    def append(self, links: np.ndarray) -> None:
        if self.file is None:
            self.layers.append(links.copy())
        else:
            self.offsets.append(self.size)
            self.file.write(links.tobytes())
            self.size += links.nbytes
        self.count += 1

    def get(self, layer: int, i: int) -> int:
        if self.file is None:
            return int(self.layers[layer][i])
        self.file.flush()
        raw = os.pread(self.file.fileno(), LINK_BYTES, self.offsets[layer] + LINK_BYTES * i)
        return int(np.frombuffer(raw, LINK)[0])

    def trace_back(self, layer: int, i: int) -> np.ndarray:
        """The moves of layers 0 .. ``layer`` leading to state ``i`` of ``layer`` (none for -1)."""
        codes = np.zeros(layer + 1, np.int64)
        for back in range(layer, -1, -1):
            link = self.get(back, i)
            codes[back] = link & MOVE_MASK
            i = link >> MOVE_BITS
        return codes

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def replay_moves(h, codes, shapes, tables, win, out_place):
    """Placements (x, y, state) on the whole board of the DP moves ``codes`` from heights ``h``
    (updated); returns False when a move is not a transition (a bug)."""
    nh = np.empty(win.width, np.int64)
    for t in range(codes.shape[0]):
        shape, m = shapes[t], codes[t]
        cy, cells, f = drop(h, nh, tables, win, shape, m)
        if cy < 0:
            return False
        out_place[t, 0] = tables.moves[shape, m, MOVE_X]
        out_place[t, 1] = cy
        out_place[t, 2] = tables.moves[shape, m, MOVE_STATE]
        copy_rows(h, nh)
    return True


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def best_index(profiles, scores):
    """The index of the highest score (ties: the smaller profile)."""
    b = 0
    for i in range(1, profiles.shape[0]):
        if scores[i] > scores[b] or (scores[i] == scores[b] and profiles[i] < profiles[b]):
            b = i
    return b


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MiB (``getrusage``)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def warm_layer_kernels(rules, win: Window, key: SurfaceKey) -> None:
    """Run each layer kernel once on a tiny layer (one state, the empty window ``win``)."""
    tables = drop_tables(rules)
    buf = layer_buffers(1, int(tables.count.max()))
    states = States(np.zeros(1, np.int64), np.zeros(1, np.int64))
    expand_layer(states, 0, 1, tables, win, rules.kernel, buf.children)
    nm = int(tables.count[0])
    merge_and_select(buf, nm, nm, 1, win.width, key, 0)
    best_index(states.profiles, states.scores)
    replay_moves(np.zeros(win.width, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), tables, win,
                 np.zeros((0, 3), np.int64))


# --------------------------------------------------------------------------- the policy
@dataclass(frozen=True)
class ProfileDPReport(Report):
    """The DP's account of its run (`SolveResult.report`, summary.json's ``profile_dp``): the base's
    ``base_pieces``, ``base_rows`` (rows below the window) and ``base_cells``; once layers ran, the
    ``states`` kept per layer, where the ``links`` were kept (``memory`` or ``disk``), the
    ``children`` valued and the ``distinct_children`` among them, and the process's ``peak_rss_mb``
    (None when no layer ran: the pieces ran out in the base, or the threshold stopped it)."""

    key = "profile_dp"
    base_pieces: int
    base_rows: int
    base_cells: int
    states: int | None = None
    links: str | None = None
    children: int | None = None
    distinct_children: int | None = None
    peak_rss_mb: float | None = None

    def summary(self) -> dict:
        out = {"base_pieces": self.base_pieces, "base_rows": self.base_rows, "base_cells": self.base_cells}
        if self.states is not None:
            out.update(states=self.states, links=self.links, children=self.children,
                       distinct_children=self.distinct_children, peak_rss_mb=self.peak_rss_mb)
        return out


@dataclass
class Base:
    """The base as `build_base` left it: ``pieces`` placed (their placements in ``path``), ``stop``
    (`GOING`: the DP starts on ``board``), the ``board``, and the `Window` over it (its floor and
    base cells those of the board's rows below the window)."""

    pieces: int
    stop: int
    board: np.ndarray
    path: Path
    window: Window

    def report(self) -> ProfileDPReport:
        """The base's part of the `ProfileDPReport` (no layers run)."""
        return ProfileDPReport(base_pieces=self.pieces, base_rows=len(self.board) - self.window.rows,
                               base_cells=self.window.base_cells)

    def heights(self) -> np.ndarray:
        """The window's column heights on the base's board."""
        h = np.zeros(self.window.width, np.int64)
        window_heights(self.board, self.window.rows, self.window.width, h)
        return h


@dataclass
class LayerRun:
    """What the layers found: the best state so far (``best_score``, its ``best_layer`` counted from
    the DP's first piece, and ``best_state``, its index there), the best score per piece
    (``best_by_step``), counts, why they stopped, and the traced-back moves (``codes``)."""

    best_by_step: np.ndarray
    nodes: int
    best_score: int = -1
    best_layer: int = -1
    best_state: int = 0
    children: int = 0
    distinct: int = 0
    layers: int = 0
    on_disk: bool = False
    stop: str = STOP_NAMES[DONE]
    abort_piece: int | None = None
    abort_threshold: float | None = None
    codes: np.ndarray | None = None

    def keep_best(self, states: States, layer: int) -> None:
        """The best state: the higher score, then the later layer, then the smaller profile."""
        i = best_index(states.profiles, states.scores)
        if states.scores[i] >= self.best_score:
            self.best_score, self.best_layer, self.best_state = int(states.scores[i]), layer, i


@register
class ProfileDP(Policy):
    name = "profile_dp"
    Settings = ProfileDPConfig

    def warm_up(self):
        """`Policy.warm_up`, and the layer kernels, which the two-piece warm-up never reaches (it
        ends inside the base)."""
        warm_layer_kernels(self.rules, self.window(), self.key())
        super().warm_up()

    def search(self, threshold, progress):
        tables = drop_tables(self.rules)
        base = self.base(tables)
        pieces, stop = self.base_stop(base, threshold)
        if stop != GOING:
            return self.base_result(base, pieces, stop, threshold)
        run = self.run_layers(base, tables, threshold, progress)
        return self.result(base, tables, run)

    # ---- settings
    def window(self) -> Window:
        """The `Window` of the settings on an empty base (no floor, no cells), checked."""
        window = min(self.config.profile_dp.window, self.rules.height)
        width = self.rules.width
        cap = window - free_rows(self.rules)
        if cap < 1:
            raise ValueError(f"profile_dp.window: {window} rows leave no room under the {free_rows(self.rules)} "
                             "rows kept free at the top")
        if width * BITS > PROFILE_BITS:
            raise ValueError(f"profile_dp: boards wider than {PROFILE_BITS // BITS} columns do not fit a packed "
                             "profile")
        return Window(window, width, cap, 0, 0)

    def key(self) -> SurfaceKey:
        cfg = self.config.profile_dp
        return SurfaceKey(cfg.key == "score_surface", float(cfg.cells_weight), float(cfg.bumpiness_weight))

    def links_on_disk(self, first: int) -> bool:
        """Whether the links of the layers from piece ``first`` on go to a temporary file."""
        cfg = self.config.profile_dp
        link_bytes = LINK_BYTES * cfg.states * (self.pieces - first)
        return cfg.links == "disk" or (cfg.links == "auto" and link_bytes > cfg.links_memory_mb * MIB)

    # ---- the base
    def base(self, tables: DropTables) -> Base:
        """The base, by a depth-first search in the evaluator's order; its window's floor and cells
        filled in."""
        window = self.window()
        limits = BaseLimits(window, min(self.config.profile_dp.base_cap, window.cap), BASE_NODES)
        path = new_path(self.pieces)
        pieces, stop, board = build_base(self.sequence, self.pieces, self.rules.kernel, self.evaluator.spec, tables,
                                         limits, path)
        cells = sum(popcount(np.int64(r)) for r in board[window.rows:])
        window = window._replace(floor=int(floor_of(board, window.rows, window.width)), base_cells=int(cells))
        return Base(int(pieces), int(stop), board, path, window)

    @staticmethod
    def base_stop(base: Base, threshold) -> tuple[int, int]:
        """(pieces, stop) of the base: its own, or `ABORTED` at the first piece whose threshold is
        above the base's score, 0 (nothing clears in the base)."""
        checked = np.flatnonzero(threshold[:base.pieces] > 0)
        if len(checked):
            return int(checked[0]) + 1, ABORTED
        return base.pieces, base.stop

    @staticmethod
    def base_result(base: Base, pieces: int, stop: int, threshold) -> SolveResult:
        """The result without a DP: the pieces ran out, no base was found (no path either), or the
        threshold stopped the base."""
        if stop == STUCK:
            pieces = 0
        result = path_result(0, pieces, stop, base.path, threshold, pieces)
        result.report = base.report()
        return result

    # ---- the layers
    def run_layers(self, base: Base, tables: DropTables, threshold, progress) -> LayerRun:
        """One layer per piece after the base, until the pieces run out, a layer keeps no state,
        or `Policy.layer_stop`; then the best state's moves are traced back."""
        run = LayerRun(best_by_step=np.zeros(self.pieces, np.int64), nodes=base.pieces)
        states = States(np.array([profile_of(base.heights())], np.int64), np.zeros(1, np.int64))
        buf = layer_buffers(self.config.profile_dp.states, int(tables.count.max()))
        links = Links(self.links_on_disk(base.pieces))
        try:
            for t in range(base.pieces, self.pieces):
                states = self.layer(t, states, base, tables, buf, links, run)
                if states is None:
                    break
                halt = self.layer_stop(t, run.best_by_step[t], run.best_score, threshold, progress)
                if halt:
                    run.stop, run.abort_piece, run.abort_threshold = halt
                    break
            run.codes = links.trace_back(run.best_layer, run.best_state)
        finally:
            links.close()
        run.layers, run.on_disk = links.count, links.on_disk
        return run

    def layer(self, t: int, states: States, base: Base, tables: DropTables, buf: LayerBuffers, links: Links,
              run: LayerRun) -> States | None:
        """Layer ``t`` (0-based piece): expand ``states``, merge and keep the best; returns the kept
        states, or None when there are none (``run.stop`` is then stuck)."""
        shape = int(self.sequence[t])
        n, nm = len(states.profiles), int(tables.count[shape])
        expand_layer(states, shape, t + 1, tables, base.window, self.rules.kernel, buf.children)
        k, u, top = merge_and_select(buf, n * nm, nm, self.config.profile_dp.states, base.window.width, self.key(),
                                     t)
        run.nodes += n
        run.children += n * nm
        run.distinct += u
        if k == 0:
            run.stop = STOP_NAMES[STUCK]
            return None
        kept = States(buf.kept.profiles[:k].copy(), buf.kept.scores[:k].copy())
        links.append(buf.links[:k])
        run.best_by_step[t] = top
        run.keep_best(kept, t - base.pieces)
        return kept

    # ---- the result
    def result(self, base: Base, tables: DropTables, run: LayerRun) -> SolveResult:
        """The traced-back path after the base, replayed by the engine, which must give the DP's
        best score."""
        first, placed = base.pieces, base.pieces + len(run.codes)
        placements = base.path.placements[:placed].copy()
        if not replay_moves(base.heights(), run.codes, self.sequence[first:placed], tables, base.window,
                            placements[first:]):
            raise RuntimeError("profile_dp: a traced-back move is not a transition")
        path, kinds = path_scores(placements, self.sequence, self.rules)
        if len(run.codes) and int(path[-1]) != run.best_score:
            raise RuntimeError(f"profile_dp: the traced-back path scores {int(path[-1]):,}, the DP "
                               f"{run.best_score:,}")
        report = replace(base.report(), states=self.config.profile_dp.states,
                         links="disk" if run.on_disk else "memory", children=int(run.children),
                         distinct_children=int(run.distinct), peak_rss_mb=round(peak_rss_mb(), 1))
        return SolveResult(
            score=int(path[-1]) if placed else 0, pieces=placed, score_by_step=path,
            best_by_step=run.best_by_step[:first + run.layers], clear_kinds=kinds, placements=placements,
            stop=run.stop, abort_piece=run.abort_piece, abort_threshold=run.abort_threshold, nodes=run.nodes,
            report=report)
