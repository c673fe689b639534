"""Lookahead: a depth-first search over the next ``depth`` known pieces with a kept fraction.

For the current piece, every child (placement) is valued by the evaluator; the best
``keep_fraction`` of them (at least one) are expanded with the next piece, and so on to ``depth``
pieces. A path's worth is the sum of the values along it (``sum``) or its last value (``last``);
a path that cannot go on (every placement tops out) is worth its value so far minus 10^12, so any
surviving path is preferred. The current piece goes to the first placement of the best path.

Kernels take the search's knobs as one `LookaheadSettings` and its arrays as one `LookaheadWork`
(`lookahead_work`), so the per-piece search (`lookahead_choice`) allocates nothing. The game's known
pieces are the ``sequence`` a kernel is given: the search never looks past its end.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from engine._jit.decorators import inner
from engine.board import copy_rows, popcount
from engine.lock import lock_piece, spawn_blocked, spawn_state
from engine.movegen import MoveScratch, capacity
from engine.movegen.generators import placements_into
from engine.movegen.tables import new_scratch, rows_for
from evaluators import board_values, priority

from ._base import (ABORTED, BLOCKED, GOING, STUCK, Policy, ValueScratch, best_first, commit, new_path, path_result,
                    value_child, value_scratch)
from .config import LookaheadConfig
from .registry import register
from .threshold import below

#: what a path that dies within the depth loses: any surviving path is worth more
DEAD = 1e12
#: pieces per kernel call at depth 1 (progress and Ctrl-C between calls); divided by depth squared
CHUNK_PIECES = 2000
MIN_CHUNK = 10


class LookaheadSettings(NamedTuple):
    """The search's knobs: ``depth`` (pieces searched, the current one included), ``keep_fraction``
    (share of a node's children searched further, at least one), ``last_only`` (a path is worth
    its last value, else the sum of its values), and base building (the back-search's base mode):
    with ``base_rows`` > 0 only children that `base_allowed` lets through count, each worth
    ``base_cell_value`` more per occupied cell in the bottom ``base_rows`` rows."""

    depth: int
    keep_fraction: float
    last_only: bool
    base_rows: int
    base_cell_value: float


def lookahead_settings(depth: int, keep_fraction: float, last_only: bool, base_rows: int = 0,
                       base_cell_value: float = 0.0) -> LookaheadSettings:
    """A `LookaheadSettings` with its fields' types fixed (so a kernel compiles once for all)."""
    return LookaheadSettings(int(depth), float(keep_fraction), bool(last_only), int(base_rows), float(base_cell_value))


class LookaheadWork(NamedTuple):
    """The arrays `lookahead_choice` works in, one row per depth level: ``boards[level]`` (the board
    the level's piece falls on), ``found[level]`` (its placements), ``values``/``ranks``/``order``
    (per child: value, tie-break rank and index into ``found``; after `_keep_best` the kept ones,
    best first), ``nkept`` (children kept), ``pos`` (the next kept child to search) and ``acc``
    (the worth of the path down to the level); ``sc`` the move generator's scratch and ``vs`` the
    valuing scratch."""

    boards: np.ndarray
    found: np.ndarray
    values: np.ndarray
    ranks: np.ndarray
    order: np.ndarray
    nkept: np.ndarray
    pos: np.ndarray
    acc: np.ndarray
    sc: MoveScratch
    vs: ValueScratch


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def lookahead_work(depth, rules, n_features):
    """A `LookaheadWork` for searches of up to ``depth`` pieces under ``rules``, for evaluators of
    ``n_features`` features."""
    height = rules.height
    cap = capacity(height, rules.width)
    return LookaheadWork(np.zeros((depth, height), np.uint16), np.zeros((depth, cap, 3), np.int64),
                         np.zeros((depth, cap)), np.zeros((depth, cap), np.int64), np.zeros((depth, cap), np.int64),
                         np.zeros(depth, np.int64), np.zeros(depth, np.int64), np.zeros(depth),
                         new_scratch(rows_for(height), 1), value_scratch(n_features, height))


class Choice(NamedTuple):
    """What `lookahead_choice` found: whether a placement survives (``found``), the first placement
    (``x``, ``y``, ``s``) of the best path, the ``nodes`` searched, and the best path's ``worth``
    (below -`DEAD` / 2 when every searched path dies within the depth). (A flag, not a sentinel x:
    a centre may lie left of the board, x = -1, under the classic matrices.)"""

    found: bool
    x: int
    y: int
    s: int
    nodes: int
    worth: float


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def base_allowed(locked, base_rows, width):
    """Whether a lock (``locked``: the board with the piece placed, before any clear) may be part of
    a base of the bottom ``base_rows`` rows, built from the floor up so that each of those rows can
    still end with exactly one empty cell: none of them is full, none holds more than one hole (an
    empty cell with an occupied cell above it), and a row holds ``width - 1`` cells only if every
    base row below it does. Rows above the base may be filled (and cleared)."""
    height = locked.shape[0]
    full = (1 << width) - 1
    above = 0
    for y in range(height - base_rows):
        above |= np.int64(locked[y])
    covered = np.zeros(base_rows, np.int64)  # the occupied columns above each base row
    for i in range(base_rows):
        covered[i] = above
        above |= np.int64(locked[height - base_rows + i])
    below_done = True
    for i in range(base_rows - 1, -1, -1):
        r = np.int64(locked[height - base_rows + i])
        n = popcount(r)
        if r == full or popcount(full & ~r & covered[i]) > 1 or (n == width - 1 and not below_done):
            return False
        below_done = below_done and n == width - 1
    return True


@inner
def with_base_cells(value, locked, base_rows, base_cell_value):
    """``value`` plus ``base_cell_value`` per occupied cell of ``locked`` in its bottom
    ``base_rows`` rows (added row by row, top row first)."""
    height = locked.shape[0]
    for y in range(height - base_rows, height):
        value += base_cell_value * popcount(np.int64(locked[y]))
    return value


@inner
def _value_children(level, t, sequence, rules, spec, settings, work):
    """The children of ``boards[level]`` for piece ``t``: its placements into ``found[level]``, and
    for each child that survives (and, building a base, that `base_allowed` lets through) its value,
    tie-break rank and index into ``found`` at ``values``/``ranks``/``order[level, :alive]``, in
    generation order. Returns ``alive``."""
    board = work.boards[level]
    found = work.found[level]
    shape = sequence[t]
    ss = spawn_state(t, rules)
    vs = work.vs
    n = placements_into(board, rules, shape, ss, work.sc, found)
    board_values(board, rules.width, spec, vs.pvals)
    alive = 0
    for k in range(n):
        x, y, s = found[k, 0], found[k, 1], found[k, 2]
        ok, v = value_child(board, rules, shape, s, x, y, t + 1, spec, vs)
        if not ok:
            continue
        if settings.base_rows > 0:
            if not base_allowed(vs.locked, settings.base_rows, rules.width):
                continue
            v = with_base_cells(v, vs.locked, settings.base_rows, settings.base_cell_value)
        work.values[level, alive] = v
        work.ranks[level, alive] = priority(spec, x, s, rules.spawn_x, ss)
        work.order[level, alive] = k
        alive += 1
    return alive


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def _keep_best(level, alive, keep_fraction, work):
    """Sort the ``alive`` children of ``level`` best first (value descending, then tie-break rank,
    then generation order: `best_first`) and keep the best ``keep_fraction`` of them (at least one)
    at the front of ``order``/``values[level]``; returns how many are kept."""
    idx = best_first(work.values[level], work.ranks[level], alive)
    keep = max(1, int(math.ceil(keep_fraction * alive)))
    ks = work.order[level, :alive].copy()
    vs = work.values[level, :alive].copy()
    for i in range(keep):
        work.order[level, i] = ks[idx[i]]
        work.values[level, i] = vs[idx[i]]
    return keep


@inner
def _expand(level, t, sequence, rules, spec, settings, work):
    """Expand ``boards[level]`` with piece ``t``: ``nkept[level]`` children kept, best first, in
    ``order[level]`` (indices into ``found[level]``) and ``values[level]``; none when the piece
    cannot appear or every child dies."""
    work.nkept[level] = 0
    if spawn_blocked(work.boards[level], rules, sequence[t], spawn_state(t, rules)):
        return
    alive = _value_children(level, t, sequence, rules, spec, settings, work)
    if alive > 0:
        work.nkept[level] = _keep_best(level, alive, settings.keep_fraction, work)


@inner
def _descend(level, i, t, sequence, rules, spec, settings, work):
    """Lock the kept child ``i`` of ``level`` (piece ``t + level``) onto ``boards[level + 1]`` and
    expand that board with the next piece; returns the children kept there."""
    k = work.order[level, i]
    found = work.found[level]
    work.boards[level + 1] = work.boards[level]
    lock_piece(work.boards[level + 1], rules, sequence[t + level], found[k, 2], found[k, 0], found[k, 1],
               t + level + 1)
    _expand(level + 1, t + level + 1, sequence, rules, spec, settings, work)
    return work.nkept[level + 1]


@inner
def _best_path(depth, t, sequence, rules, spec, settings, work):
    """Depth-first over the kept children below level 0 (expanded for piece ``t``), ``depth``
    levels deep: (the kept index at level 0 of the best path's first placement, the nodes searched,
    the best path's worth). A path that dies before the depth is worth its worth so far - `DEAD`."""
    nodes = work.nkept[0]
    best_worth = -np.inf
    best = 0
    first = 0
    level = 0
    work.pos[0] = 0
    work.acc[0] = 0.0
    while level >= 0:
        if work.pos[level] >= work.nkept[level]:
            level -= 1
            continue
        i = work.pos[level]
        work.pos[level] += 1
        if level == 0:
            first = i
        v = work.values[level, i]
        worth = v if settings.last_only else work.acc[level] + v
        if level == depth - 1:
            if worth > best_worth:
                best_worth, best = worth, first
            continue
        kept = _descend(level, i, t, sequence, rules, spec, settings, work)
        nodes += kept
        if kept == 0:
            if worth - DEAD > best_worth:
                best_worth, best = worth - DEAD, first
            continue
        work.acc[level + 1] = worth
        work.pos[level + 1] = 0
        level += 1
    return best, nodes, best_worth


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def lookahead_choice(board, t, sequence, rules, spec, settings, work):
    """The `Choice` for piece ``t`` on ``board``: the search over the pieces ``t ..`` of
    ``sequence`` (at most ``settings.depth`` of them) with the evaluator ``spec``, in ``work``."""
    depth = min(settings.depth, sequence.shape[0] - t)
    copy_rows(work.boards[0], board)
    _expand(0, t, sequence, rules, spec, settings, work)
    if work.nkept[0] == 0:
        return Choice(False, 0, 0, 0, 0, -np.inf)
    best, nodes, worth = _best_path(depth, t, sequence, rules, spec, settings, work)
    k = work.order[0, best]
    found = work.found[0]
    return Choice(True, found[k, 0], found[k, 1], found[k, 2], nodes, worth)


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def lookahead_run(sequence, t0, t1, board, rules, spec, settings, threshold, score, path):
    """Play pieces t0 .. t1-1 of ``sequence`` (the game's pieces) by `lookahead_choice` from
    ``board`` (updated in place), recording into ``path``; returns (pieces done, score, stop code:
    `GOING`, `STUCK`, `BLOCKED` or `ABORTED`, nodes searched)."""
    work = lookahead_work(settings.depth, rules, spec.terms.shape[1])
    nodes = 0
    for t in range(t0, t1):
        shape = sequence[t]
        if spawn_blocked(board, rules, shape, spawn_state(t, rules)):
            return t, score, BLOCKED, nodes
        c = lookahead_choice(board, t, sequence, rules, spec, settings, work)
        nodes += c.nodes
        if not c.found:
            return t, score, STUCK, nodes
        score = commit(board, rules, shape, c.x, c.y, c.s, t, score, path)
        if below(threshold, t, score):
            return t + 1, score, ABORTED, nodes
    return t1, score, GOING, nodes


@register
class Lookahead(Policy):
    name = "lookahead"
    Settings = LookaheadConfig

    def search(self, pruner, progress):
        rules, n, cfg = self.rules, self.pieces, self.config.lookahead
        settings = lookahead_settings(cfg.depth, cfg.keep_fraction, cfg.objective == "last")
        sequence = self.sequence[:n]
        board = np.zeros(rules.height, np.uint16)
        path = new_path(n)
        done, score, stop, nodes = 0, 0, GOING, 0
        chunk = max(MIN_CHUNK, CHUNK_PIECES // (cfg.depth ** 2))
        while done < n and stop == GOING:
            done, score, stop, searched = lookahead_run(
                sequence, done, min(n, done + chunk), board, rules.kernel, self.evaluator.spec, settings,
                pruner.curve, score, path)
            nodes += searched
            if progress:
                progress(done, n, int(score))
            stop = self.chunk_stop(stop, done)
        return path_result(score, done, stop, path, pruner, nodes)
