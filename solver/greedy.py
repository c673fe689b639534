"""Greedy: each piece goes where the evaluator values the resulting board most."""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.extending import overload

from engine._jit.decorators import inlined
from engine.board import copy_rows, count_rows
from engine.lock import lock_counted, lost, spawn_blocked, spawn_state
from engine.movegen import capacity
from engine.movegen.drop import column_tops, drop_columns, drop_kept, drop_offsets, drop_row, generator_of
from engine.movegen.generators import placements_into
from engine.movegen.tables import new_scratch, rows_for
from evaluators import Placement, board_values, priority
from evaluators.incremental import column_view, evaluate_child

from ._base import ABORTED, BLOCKED, GOING, STUCK, Policy, commit, new_path, path_result, value_child, value_scratch
from .config import GreedyConfig
from .registry import register
from .threshold import below

#: pieces per kernel call (progress and Ctrl-C between calls)
CHUNK = 500


@inlined
def value_placement(board, child, rules, shape, s, x, y, number, spec, vs, counts, to_beat):
    """(alive, value) of piece ``number`` (1-based) of ``shape`` locked at (x, y, s) on ``board``, as
    `value_child` gives them, ``child`` a copy of ``board`` (and again after the call), ``vs.columns``
    and ``vs.pvals`` filled for ``board``, ``counts`` its (cells, full rows, occupied rows); the value
    may be -inf instead when it is certainly below ``to_beat`` (the best so far).

    No board is copied: the piece is locked on ``child`` (`engine.lock.lock_counted`, the parent's
    counts known), and when the lock clears no row the child is ``child`` as it stands, valued
    from the parent's columns (`evaluators.incremental.evaluate_child`: `evaluate`'s value, bit for
    bit); then the piece's rows are put back from ``board``. A lock that clears rows (rare) is
    valued by `value_child`, then ``child`` copied back from ``board``; so is every lock on a board
    holding a full row (never one a game reached)."""
    cells, full, occupied = counts
    if full:
        return value_child(board, rules, shape, s, x, y, number, spec, vs)
    piece = rules.cells[shape, s]
    lock = lock_counted(child, rules, shape, s, x, y, number, cells, occupied)
    if lock.lines == 0:  # the child differs from the board in the piece's rows only
        alive = not lost(lock.end)
        p = Placement(board, child, child, piece, x, y, 0, lock.points, rules.width)
        v = evaluate_child(p, vs.columns, vs.pvals, spec, to_beat) if alive else 0.0
        for c in range(4):
            r = y + piece[c, 1]
            if r >= 0:
                child[r] = board[r]
        return alive, v
    alive, v = value_child(board, rules, shape, s, x, y, number, spec, vs)  # on vs.locked and vs.cleared
    copy_rows(child, board)
    return alive, v


@inlined
def best_placement(board, shape, t, rules, spec, sc, found, vs):
    """Index into ``found`` of the best placement of piece ``t`` on ``board`` (-1 when every
    placement tops out), and its value; ties go to the lower `evaluators.priority`, then the first
    generated (`engine.movegen.generators.placements_into`'s order). ``found`` receives the placements (``sc``:
    the move generator's scratch, ``vs``: the valuing scratch; each placement valued by
    `value_placement`, on ``vs.cleared``). The kernel is `best_generated`, or `best_dropped` under
    drop-only rules (chosen when the kernel calling this one is compiled)."""
    return best_by_rule(board, shape, t, rules, spec, sc, found, vs)


def best_by_rule(board, shape, t, rules, spec, sc, found, vs):
    """`best_generated`, or `best_dropped` under drop-only rules. Numba kernels only."""
    raise TypeError("best_by_rule is a numba kernel")


@overload(best_by_rule, inline="always")
def _best_by_rule(board, shape, t, rules, spec, sc, found, vs):
    kernel = best_dropped if generator_of(rules) == "drop" else best_generated
    return lambda board, shape, t, rules, spec, sc, found, vs: kernel(board, shape, t, rules, spec, sc, found, vs)


@inlined
def prepare(board, rules, spec, vs):
    """A parent's values (`evaluators.board_values`), columns (`evaluators.incremental.column_view`)
    and counts (cells, full rows, occupied rows), and ``vs.cleared`` a copy of it."""
    board_values(board, rules.width, spec, vs.pvals)
    column_view(board, rules.width, spec, vs.columns)
    copy_rows(vs.cleared, board)
    return count_rows(board, rules.full_row)


@inlined
def best_generated(board, shape, t, rules, spec, sc, found, vs):
    """`best_placement` over the placements `engine.movegen.generators.placements_into` writes into ``found``."""
    ss = spawn_state(t, rules)
    counts = prepare(board, rules, spec, vs)
    best = -1
    best_value = -np.inf
    best_rank = 0
    n = placements_into(board, rules, shape, ss, sc, found)
    for k in range(n):
        x, y, s = found[k, 0], found[k, 1], found[k, 2]
        alive, v = value_placement(board, vs.cleared, rules, shape, s, x, y, t + 1, spec, vs, counts, best_value)
        if not alive:
            continue
        rank = priority(spec, x, s, rules.spawn_x, ss)
        if best < 0 or v > best_value or (v == best_value and rank < best_rank):
            best, best_value, best_rank = k, v, rank
    return best, best_value


@inlined
def best_dropped(board, shape, t, rules, spec, sc, found, vs):
    """`best_placement` under drop-only rules: the placements generated as they are valued, state by
    state and column by column (`engine.movegen.drop.drop_row`, the rule `placements_into` follows there),
    into ``found`` in that order; a tie then goes to the placement `placements_into` lists first
    (the lower state, then the lower y, then the lower x)."""
    ss = spawn_state(t, rules)
    counts = prepare(board, rules, spec, vs)
    best = -1
    best_value = -np.inf
    best_rank = 0
    tops = sc.tops
    column_tops(board, rules.width, tops)
    cells, alias = rules.cells[shape], rules.alias[shape]
    n = 0
    for s in range(4):
        if alias[s] != s:
            continue
        offsets = drop_offsets(cells[s])
        x0, x1, lo = drop_columns(offsets, rules.width)
        for x in range(x0, x1):
            y = drop_row(tops, offsets, x)
            if not drop_kept(rules, y, lo):
                continue
            found[n, 0] = x
            found[n, 1] = y
            found[n, 2] = s
            n += 1
            alive, v = value_placement(board, vs.cleared, rules, shape, s, x, y, t + 1, spec, vs, counts, best_value)
            if not alive:
                continue
            rank = priority(spec, x, s, rules.spawn_x, ss)
            if best < 0 or v > best_value or (v == best_value and (rank < best_rank or (
                    rank == best_rank and s == found[best, 2] and y < found[best, 1]))):
                best, best_value, best_rank = n - 1, v, rank
    return best, best_value


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def greedy_run(sequence, t0, t1, board, rules, spec, threshold, score, path):
    """Play pieces t0 .. t1-1 greedily from ``board`` (updated in place), recording into ``path``;
    returns (pieces done, score, stop code: `GOING`, `STUCK`, `BLOCKED` or `ABORTED`)."""
    sc = new_scratch(rows_for(rules.height), 1)
    vs = value_scratch(spec.terms.shape[1], rules.height)
    found = np.zeros((capacity(rules.height, rules.width), 3), np.int64)
    for t in range(t0, t1):
        shape = sequence[t]
        if spawn_blocked(board, rules, shape, spawn_state(t, rules)):
            return t, score, BLOCKED
        k, _ = best_placement(board, shape, t, rules, spec, sc, found, vs)
        if k < 0:
            return t, score, STUCK
        score = commit(board, rules, shape, found[k, 0], found[k, 1], found[k, 2], t, score, path)
        if below(threshold, t, score):
            return t + 1, score, ABORTED
    return t1, score, GOING


@register
class Greedy(Policy):
    name = "greedy"
    Settings = GreedyConfig

    def search(self, pruner, progress):
        rules, n = self.rules, self.pieces
        board = np.zeros(rules.height, np.uint16)
        path = new_path(n)
        done, score, stop = 0, 0, GOING
        while done < n and stop == GOING:
            done, score, stop = greedy_run(self.sequence, done, min(n, done + CHUNK), board, rules.kernel,
                                           self.evaluator.spec, pruner.curve, score, path)
            if progress:
                progress(done, n, int(score))
            stop = self.chunk_stop(stop, done)
        return path_result(score, done, stop, path, pruner, done)

