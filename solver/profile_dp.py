"""Profile dynamic programming: a layered DP over hole-free surfaces above a fixed base (the design
of the ≈1.2 M GPU solution, on the CPU).

Terms:
- the *window* is the top ``window`` rows of the board; the *base* is the rows below it. The base is
  built first by the survival evaluator: a depth-first search over placements in the evaluator's
  order (the greedy path unless it gets stuck) under hard rules (no row filled; the window part of
  every column stays a stack standing on the base, at most ``base_cap`` rows high), until every column
  reaches the window and the next 10 pieces have a chain of transitions. From then on the base never changes: its
  rows are never full and each of its empty cells is covered.
- a *profile* is a hole-free surface of the window: column i is filled from the window's bottom row
  up to height ``h[i]`` (0 .. window). It is packed into one int64, ``sum h[i] << (5 * i)``
  (`pack_profile`). A column whose top base cell is empty must keep ``h[i] >= 1`` (its *floor*),
  or the piece above could fall into the base.
- a *transition* is a resting placement that keeps the surface hole-free: every column of the piece
  lands with its lowest cell on the surface (a straight drop), so the new profile adds the piece's
  column heights. Full window rows (``min h`` of them) are then cleared. Placements are (state,
  leftmost column) pairs of the piece's distinct states: at most 34 per piece.
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

Scoring is the game's: a lock that fills f rows scores (base cells + window cells, counted after the
lock) x table[f]; a lock that occupies every row ends the game (the base occupies all its rows, so
the window may never be full to its top row); the piece at the rules' limit scores nothing.
"""

from __future__ import annotations

import os
import resource
import tempfile

import numpy as np
from numba import njit, prange

from engine.board import place, popcount
from engine.movegen import placements_into
from engine.lock import spawn_state
from evaluators import board_values, priority

from ._base import Policy, best_first, path_result, path_scores, value_child
from ._splitmix import GOLDEN, mix64
from .config import ProfileDPConfig
from .registry import register
from .result import SolveResult

BITS = 5  #: bits per column in a packed profile
MASK = (1 << BITS) - 1
MOVE_BITS = 6  #: bits of the move index in a link (moves per piece < 64)
BASE_NODES = 200_000  #: most placements the base search tries
START_LOOKAHEAD = 10  #: the DP starts on a base from which this many pieces have a chain of transitions


# --------------------------------------------------------------------------- profiles
@njit(cache=True, inline="always")
def pack_profile(h, width):
    """The packed profile of column heights ``h[0 .. width-1]`` (each 0..31)."""
    p = np.int64(0)
    for i in range(width):
        p |= np.int64(h[i]) << (BITS * i)
    return p


@njit(cache=True, inline="always")
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


# --------------------------------------------------------------------------- moves
def move_tables(rules):
    """Per shape, every (distinct state, leftmost column) the piece can be dropped at:
    ``moves[shape, m] = (state, centre x, leftmost column, columns)``, ``low[shape, m, j]`` and
    ``high[shape, m, j]`` the largest and smallest dy of the piece's cells in its column j, and
    ``count[shape]`` the number of moves."""
    W = rules.width
    cells, alias = rules.cells, rules.alias
    entries = [[] for _ in range(7)]
    for shape in range(7):
        for s in range(4):
            if alias[shape, s] != s:
                continue
            dx, dy = cells[shape, s, :, 0], cells[shape, s, :, 1]
            lo_x = int(dx.min())
            w = int(dx.max()) - lo_x + 1
            lows = [int(dy[dx - lo_x == j].max()) for j in range(w)]
            highs = [int(dy[dx - lo_x == j].min()) for j in range(w)]
            for x0 in range(W - w + 1):
                entries[shape].append((s, x0 - lo_x, x0, w, lows, highs))
    M = max(len(e) for e in entries)
    if M >= 1 << MOVE_BITS:
        raise ValueError(f"rules {rules.name!r}: {M} moves per piece do not fit a link")
    moves = np.zeros((7, M, 4), np.int64)
    low = np.zeros((7, M, 4), np.int64)
    high = np.zeros((7, M, 4), np.int64)
    count = np.zeros(7, np.int64)
    for shape, es in enumerate(entries):
        count[shape] = len(es)
        for m, (s, cx, x0, w, lows, highs) in enumerate(es):
            moves[shape, m] = (s, cx, x0, w)
            low[shape, m, :w] = lows
            high[shape, m, :w] = highs
    return moves, low, high, count


def free_rows(rules) -> int:
    """Rows at the top that must stay empty so that every state of every piece fits at the spawn
    row in any column (the deepest cell below the spawn centre, plus one)."""
    return int(rules.spawn_y + rules.cells[:, :, :, 1].max() + 1)


@njit(cache=True, inline="always")
def drop(h, out, moves, low, high, shape, m, window, cap, floor, width):
    """Drop move ``m`` of ``shape`` on heights ``h``; ``out`` receives the heights after the lock and
    the clear of the rows it filled. Returns (centre y on the board, cells in the window after the
    lock, rows filled), or y = -1 when the drop leaves a hole, tops out, or ends with the stack
    above ``cap`` or a column below its ``floor``."""
    x0 = moves[shape, m, 2]
    w = moves[shape, m, 3]
    # resting without a hole: every column of the piece lands on the surface, at the same centre row
    cy = window - 1 - h[x0] - low[shape, m, 0]
    for j in range(1, w):
        if window - 1 - h[x0 + j] - low[shape, m, j] != cy:
            return -1, 0, 0
    for i in range(width):
        out[i] = h[i]
    for j in range(w):
        nh = window - cy - high[shape, m, j]
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
        if out[i] > cap or out[i] < ((floor >> i) & 1):
            return -1, 0, 0
    return cy, cells, f


@njit(cache=True, parallel=True)
def expand_layer(profiles, scores, n, shape, number, moves, low, high, count, window, cap, floor, base_cells,
                 R, out_profile, out_score):
    """Children of the ``n`` states: slot ``i * count[shape] + m`` holds move m of state i (profile
    -1 when the move is not a transition)."""
    width = R[3]
    nm = count[shape]
    table = R[2]
    by_cells = R[8]
    last = number == R[11]
    chunks = min(n, 256)
    for c in prange(chunks):
        h = np.empty(width, np.int64)
        nh = np.empty(width, np.int64)
        for i in range(c * n // chunks, (c + 1) * n // chunks):
            unpack_profile(profiles[i], width, h)
            for m in range(nm):
                slot = i * nm + m
                cy, cells, f = drop(h, nh, moves, low, high, shape, m, window, cap, floor, width)
                if cy < 0:
                    out_profile[slot] = -1
                    continue
                p = np.int64(0)
                for k in range(width):
                    p |= np.int64(nh[k]) << (BITS * k)
                out_profile[slot] = p
                points = 0
                if not last:
                    points = table[f] * ((base_cells + cells) if by_cells else 1)
                out_score[slot] = scores[i] + points


@njit(cache=True, inline="always")
def surface_key(p, score, width, use_surface, w_cells, w_bump):
    """The selection key of a state: its score, plus with ``use_surface`` the surface heuristic
    ``w_cells * cells + w_bump * bumpiness`` of its profile."""
    if not use_surface:
        return np.float64(score)
    prev = p & MASK
    cells = prev
    bump = 0
    for i in range(1, width):
        v = (p >> (BITS * i)) & MASK
        cells += v
        bump += abs(v - prev)
        prev = v
    return score + w_cells * cells + w_bump * bump


@njit(cache=True)
def merge_and_select(out_profile, out_score, total, nm, K, width, use_surface, w_cells, w_bump, table, stamp,
                     layer, sel_profile, sel_score, sel_link):
    """Merge equal children (the higher score wins; equal scores: the first slot), then keep the
    best ``K`` by key (ties: the smaller profile). Writes the kept states, in slot order, to
    ``sel_*`` (links: ``parent << 6 | move``); returns (kept, distinct children, best score)."""
    valid = 0
    for slot in range(total):
        if out_profile[slot] >= 0:
            valid += 1
    size = 1
    while size < 2 * valid:
        size <<= 1
    mask = np.uint64(size - 1)
    uniq = np.empty(valid, np.int64)
    u = 0
    for slot in range(total):
        p = out_profile[slot]
        if p < 0:
            continue
        pos = np.int64(mix64(np.uint64(p) + GOLDEN) & mask)
        while True:
            if stamp[pos] != layer:
                stamp[pos] = layer
                table[pos] = u
                uniq[u] = slot
                u += 1
                break
            j = uniq[table[pos]]
            if out_profile[j] == p:
                if out_score[slot] > out_score[j]:
                    uniq[table[pos]] = slot
                break
            pos = (pos + 1) & (size - 1)
    best = np.int64(-1)
    for a in range(u):
        if out_score[uniq[a]] > best:
            best = out_score[uniq[a]]
    take = np.ones(u, np.bool_)
    if u > K:
        keys = np.empty(u, np.float64)
        for a in range(u):
            s = uniq[a]
            keys[a] = -surface_key(out_profile[s], out_score[s], width, use_surface, w_cells, w_bump)
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
                ties[nt] = out_profile[uniq[a]]
                nt += 1
        room = K - n_below
        if room > 0:
            ties = np.sort(ties[:nt])
            cut = ties[room - 1]
            for a in range(u):
                if keys[a] == bound and out_profile[uniq[a]] <= cut:
                    take[a] = True
    k = 0
    for a in range(u):
        if take[a]:
            s = uniq[a]
            sel_profile[k] = out_profile[s]
            sel_score[k] = out_score[s]
            sel_link[k] = np.uint32(((s // nm) << MOVE_BITS) | (s % nm))
            k += 1
    return k, u, best


# --------------------------------------------------------------------------- the base
@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
def floor_of(board, window, width):
    """The floor mask: bit i set when column i's top base cell is empty (0 without a base)."""
    floor = 0
    if window < board.shape[0]:
        for i in range(width):
            if (np.int64(board[window]) >> i) & 1 == 0:
                floor |= 1 << i
    return floor


@njit(cache=True)
def survives(h, t, depth, sequence, moves, low, high, count, window, cap, floor, width):
    """Whether pieces t .. t + depth - 1 have a chain of transitions from heights ``h``."""
    if depth == 0:
        return True
    nh = np.empty(width, np.int64)
    shape = sequence[t]
    for m in range(count[shape]):
        cy, _, f = drop(h, nh, moves, low, high, shape, m, window, cap, floor, width)
        if cy >= 0:
            if survives(nh, t + 1, depth - 1, sequence, moves, low, high, count, window, cap, floor, width):
                return True
    return False


@njit(cache=True)
def can_start(board, t, n, sequence, moves, low, high, count, window, base_cap, cap, width, h):
    """`base_ready` (no higher than ``base_cap``), and the next pieces (up to ``START_LOOKAHEAD``)
    have a chain of transitions from the board's profile."""
    if not base_ready(board, window, base_cap, width, h):
        return False
    floor = floor_of(board, window, width)
    return survives(h, t, min(START_LOOKAHEAD, n - t), sequence, moves, low, high, count, window, cap, floor, width)


@njit(cache=True)
def base_candidates(board, shape, t, R, spec, tie_break, window, cap, sc_fit, sc_free, sc_visited, sc_front,
                    sc_nxt, sc_layers, found, pvals, locked, cleared, h, out):
    """The base placements of piece ``t`` (``shape``) on ``board``, best first by the evaluator
    (ties: its tie-break, then generation order), as rows (x, y, state) of ``out``; returns how
    many. A base placement fills no row, keeps every column's window cells a stack standing on the
    window's bottom row, and keeps those stacks no higher than ``cap``."""
    height = board.shape[0]
    width = R[3]
    full = (1 << width) - 1
    ss = spawn_state(t, R)
    m = placements_into(board, R[0][shape], R[1][shape], width, R[5], R[6], ss, R[12], sc_fit, sc_free,
                        sc_visited, sc_front, sc_nxt, sc_layers, found)
    parent_values(board, width, spec, pvals)
    values = np.empty(m, np.float64)
    ranks = np.empty(m, np.int64)
    kept = np.empty(m, np.int64)
    n = 0
    for k in range(m):
        x, y, s = found[k, 0], found[k, 1], found[k, 2]
        alive, v = value_child(board, pvals, R[0][shape, s], x, y, R, spec, locked, cleared)
        if not alive:
            continue
        ok = True
        for r in range(height):
            if np.int64(locked[r]) == full:
                ok = False
        if not ok or not window_heights(locked, window, width, h):
            continue
        for i in range(width):
            if h[i] > cap:
                ok = False
        if not ok:
            continue
        values[n] = v
        ranks[n] = priority(tie_break, x, s, R[5], ss)
        kept[n] = k
        n += 1
    idx = best_first(values, ranks, n)
    for i in range(n):
        k = kept[idx[i]]
        out[i, 0], out[i, 1], out[i, 2] = found[k, 0], found[k, 1], found[k, 2]
    return n


@njit(cache=True)
def build_base(sequence, n, R, spec, tie_break, window, base_cap, cap, moves, low, high, count, max_nodes, out_place,
               sc_fit, sc_free, sc_visited, sc_front, sc_nxt, sc_layers, found):
    """A base: pieces placed from the empty board by a depth-first search in the evaluator's order
    (so the greedy path whenever that works), each a base placement (`base_candidates`, stacks in
    the window no higher than ``base_cap``), until `can_start`. Returns (pieces placed, stop, board): stop -1 the base is ready, 0 the pieces ran
    out first, 1 no base within ``max_nodes`` placements tried. ``out_place`` receives the path."""
    height = R[4]
    width = R[3]
    depth_max = min(n, height * width // 4 + 1)
    boards = np.zeros((depth_max + 1, height), np.uint16)
    cand = np.zeros((depth_max + 1, found.shape[0], 3), np.int64)
    ncand = np.zeros(depth_max + 1, np.int64)
    pos = np.zeros(depth_max + 1, np.int64)
    h = np.zeros(width, np.int64)
    pvals = np.zeros(spec[0].shape[0])
    locked = np.zeros(height, np.uint16)
    cleared = np.zeros(height, np.uint16)
    depth = 0
    fresh = True
    nodes = 0
    while True:
        if fresh:
            if can_start(boards[depth], depth, n, sequence, moves, low, high, count, window, base_cap, cap, width, h):
                return depth, -1, boards[depth].copy()
            if depth == n:
                return n, 0, boards[depth].copy()
            ncand[depth] = 0
            if depth < depth_max:
                ncand[depth] = base_candidates(boards[depth], sequence[depth], depth, R, spec, tie_break, window,
                                               base_cap,
                                               sc_fit, sc_free, sc_visited, sc_front, sc_nxt, sc_layers, found, pvals,
                                               locked, cleared, h, cand[depth])
            pos[depth] = 0
        if pos[depth] < ncand[depth] and nodes < max_nodes:
            k = pos[depth]
            pos[depth] += 1
            nodes += 1
            x, y, s = cand[depth, k, 0], cand[depth, k, 1], cand[depth, k, 2]
            boards[depth + 1] = boards[depth]
            place(boards[depth + 1], R[0][sequence[depth], s], x, y)
            out_place[depth, 0], out_place[depth, 1], out_place[depth, 2] = x, y, s
            depth += 1
            fresh = True
        else:
            if depth == 0 or nodes >= max_nodes:
                return 0, 1, boards[0].copy()
            depth -= 1
            fresh = False




# --------------------------------------------------------------------------- links
class Links:
    """Per layer, the kept states' links (uint32 ``parent << 6 | move``): in memory, or appended to
    an unnamed temporary file (deleted when closed) so that memory stays bounded."""

    def __init__(self, on_disk: bool):
        self.layers: list[np.ndarray] = []
        self.offsets: list[int] = []
        self.file = tempfile.TemporaryFile(prefix="profile_dp-links-") if on_disk else None
        self.size = 0
        self.count = 0

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
        raw = os.pread(self.file.fileno(), 4, self.offsets[layer] + 4 * i)
        return int(np.frombuffer(raw, np.uint32)[0])

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


@njit(cache=True)
def replay_moves(h, codes, shapes, moves, low, high, window, cap, floor, width, out_place):
    """Placements (x, y, state) on the whole board of the DP moves ``codes`` from heights ``h``
    (updated); returns False when a move is not a transition (a bug)."""
    nh = np.empty(width, np.int64)
    for t in range(codes.shape[0]):
        shape, m = shapes[t], codes[t]
        cy, cells, f = drop(h, nh, moves, low, high, shape, m, window, cap, floor, width)
        if cy < 0:
            return False
        out_place[t, 0] = moves[shape, m, 1]
        out_place[t, 1] = cy
        out_place[t, 2] = moves[shape, m, 0]
        h[:] = nh
    return True


@njit(cache=True)
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


def warm_layer_kernels(rules) -> None:
    """Run each layer kernel once on a tiny layer (an empty window, one state)."""
    moves, low, high, count = move_tables(rules)
    M, W = int(count.max()), rules.width
    out_profile, out_score = np.empty(M, np.int64), np.empty(M, np.int64)
    expand_layer(np.zeros(1, np.int64), np.zeros(1, np.int64), 1, 0, 1, moves, low, high, count, 10, 7, 0, 0,
                 rules.kernel, out_profile, out_score)
    size = 4 * M
    merge_and_select(out_profile, out_score, int(count[0]), int(count[0]), 1, W, True, 1.0, -1.0,
                     np.zeros(size, np.int64), np.full(size, -1, np.int64), 0, np.empty(1, np.int64),
                     np.empty(1, np.int64), np.empty(1, np.uint32))
    best_index(np.zeros(1, np.int64), np.zeros(1, np.int64))
    replay_moves(np.zeros(W, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), moves, low, high, 10, 7, 0, W,
                 np.zeros((0, 3), np.int64))


# --------------------------------------------------------------------------- the policy
@register(ProfileDPConfig)
class ProfileDP(Policy):
    name = "profile_dp"

    def warm_up(self):
        """`Policy.warm_up`, and the layer kernels, which the two-piece warm-up never reaches (it
        ends inside the base)."""
        warm_layer_kernels(self.rules)
        super().warm_up()

    def search(self, threshold, progress):
        cfg = self.config.profile_dp
        rules, R, n_pieces = self.rules, self.rules.kernel, self.pieces
        H, W = rules.height, rules.width
        window, K = min(cfg.window, H), cfg.states
        cap = window - free_rows(rules)
        if cap < 1:
            raise ValueError(f"profile_dp.window: {window} rows leave no room under the {free_rows(rules)} "
                             "rows kept free at the top")
        if W * BITS > 63:
            raise ValueError(f"profile_dp: boards wider than {63 // BITS} columns do not fit a packed profile")

        # ---- the base, by a depth-first search in the evaluator's order
        from engine.movegen import Scratch

        sc = Scratch(H, rules.max_steps)
        places = np.zeros((n_pieces, 3), np.int64)
        moves, low, high, count = move_tables(rules)
        t0, code, board = build_base(self.sequence, n_pieces, R, self.evaluator.spec,
                                     TIE_BREAKS[self.evaluator.tie_break], window, min(cfg.base_cap, cap), cap,
                                     moves, low, high, count,
                                     BASE_NODES, places, sc.fit, sc.free, sc.visited, sc.front, sc.nxt, sc.layers,
                                     sc.out)
        base = board[window:].copy()
        base_cells = int(sum(popcount(np.int64(r)) for r in base))
        extra = {"base_pieces": int(t0), "base_rows": int(H - window), "base_cells": base_cells}
        by_step = np.zeros(n_pieces, np.int64)  # nothing clears in the base
        checked = np.flatnonzero(threshold[:t0] > 0)
        if len(checked):  # the base's score, 0, is below the threshold
            t0, code = int(checked[0]) + 1, 3
        if code >= 0:  # no DP: the pieces ran out, no base was found, or the threshold stopped it
            if code == 1:  # stuck: no base was found, so no path either
                t0 = 0
            result = path_result(0, int(t0), code, np.zeros(5, np.int64), places, by_step, threshold, int(t0))
            result.extra = {"profile_dp": extra}
            return result
        h0 = np.zeros(W, np.int64)
        window_heights(board, window, W, h0)
        floor = int(floor_of(board, window, W))

        # ---- the layers
        M = int(count.max())
        use_surface = cfg.key == "score_surface"
        profiles = np.array([profile_of(h0)], np.int64)
        scores = np.zeros(1, np.int64)
        out_profile = np.empty(K * M, np.int64)
        out_score = np.empty(K * M, np.int64)
        size = 1
        while size < 2 * K * M:
            size <<= 1
        table = np.zeros(size, np.int64)
        stamp = np.full(size, -1, np.int64)
        sel_profile = np.empty(K, np.int64)
        sel_score = np.empty(K, np.int64)
        sel_link = np.empty(K, np.uint32)
        link_bytes = 4 * K * (n_pieces - t0)
        on_disk = cfg.links == "disk" or (cfg.links == "auto" and link_bytes > cfg.links_memory_mb * 2**20)
        links = Links(on_disk)
        best_by_step = by_step.copy()
        best = (-1, -1, 0)  # (score, layer, index) of the best state so far
        nodes = int(t0)
        children = distinct = 0
        stop, abort_piece, abort_threshold = "done", None, None
        try:
            for t in range(t0, n_pieces):
                shape = int(self.sequence[t])
                n = len(profiles)
                nm = int(count[shape])
                expand_layer(profiles, scores, n, shape, t + 1, moves, low, high, count, window, cap, floor,
                             base_cells, R, out_profile, out_score)
                k, u, top = merge_and_select(out_profile, out_score, n * nm, nm, K, W, use_surface, cfg.cells_weight,
                                             cfg.bumpiness_weight, table, stamp, t, sel_profile, sel_score, sel_link)
                nodes += n
                children += n * nm
                distinct += u
                if k == 0:
                    stop = "stuck"
                    break
                profiles, scores = sel_profile[:k].copy(), sel_score[:k].copy()
                links.append(sel_link[:k])
                best_by_step[t] = top
                # the best state: the higher score, then the later layer, then the smaller profile
                i = best_index(profiles, scores)
                if scores[i] >= best[0]:
                    best = (int(scores[i]), t - t0, i)
                halt = self.layer_stop(t, top, best[0], threshold, progress)
                if halt:
                    stop, abort_piece, abort_threshold = halt
                    break
            # ---- trace back
            layers = best[1] + 1 if best[0] >= 0 else 0
            codes = np.zeros(layers, np.int64)
            i = best[2]
            for layer in range(layers - 1, -1, -1):
                link = links.get(layer, i)
                codes[layer] = link & ((1 << MOVE_BITS) - 1)
                i = link >> MOVE_BITS
        finally:
            links.close()
        placed = t0 + layers
        placements = places[:placed].copy()
        h = h0.copy()
        if not replay_moves(h, codes, self.sequence[t0:placed], moves, low, high, window, cap, floor, W,
                            placements[t0:]):
            raise RuntimeError("profile_dp: a traced-back move is not a transition")
        path, kinds = path_scores(placements, self.sequence, R)
        if layers and int(path[-1]) != best[0]:
            raise RuntimeError(f"profile_dp: the traced-back path scores {int(path[-1]):,}, the DP {best[0]:,}")
        extra.update(states=K, links="disk" if on_disk else "memory", children=int(children),
                     distinct_children=int(distinct), peak_rss_mb=round(peak_rss_mb(), 1))
        last = t0 + links.count
        return SolveResult(
            score=int(path[-1]) if placed else 0, pieces=placed, score_by_step=path,
            best_by_step=best_by_step[:last], clear_kinds=kinds, placements=placements, stop=stop,
            abort_piece=abort_piece, abort_threshold=abort_threshold, nodes=nodes, extra={"profile_dp": extra})
