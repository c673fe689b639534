"""Monte Carlo tree search over placements, with chance nodes for the unknown pieces.

The tree alternates *decision nodes* (a board and the piece to place on it) and *after-states*
(the board after one placement, with the points that lock scored). An after-state is a chance node:
the next piece is the preview when it is known (the root's children), else a uniformly drawn shape,
and each drawn shape gets its own decision node. One *simulation*:

1. selection: from the root, at each decision node pick the after-state with the highest UCT score
   ``q + c * sqrt(ln N / n)`` (``q``: its mean reward scaled to [0, 1] by the least and greatest
   rewards seen this move; ``N``, ``n``: visits of the node and of the after-state; ``c``:
   ``exploration``); an after-state never visited is taken first, the highest-valued one first;
   then draw the next piece and descend;
2. expansion: a decision node is expanded (all its placements locked, valued) on its first visit;
3. rollout: from a newly visited after-state, ``rollout`` pieces drawn uniformly are placed by the
   1-ply evaluator;
4. back-propagation: the reward, the points scored along the tree path and the rollout plus
   ``value_weight`` times the evaluator value of the last placement (or ``-death_penalty`` when the
   game was lost on the way; a path reaching the rules' last piece, ``piece_limit``, ends there and
   is worth its points alone), is added to every after-state on the path.

The budget is ``simulations`` per move, or ``ms`` milliseconds per move when set. The move is the
root's most visited after-state (ties: the higher value). Random draws come from a splitmix64
generator (`solver._splitmix`) whose state the game loop seeds from the game's seed, so a game is
reproducible.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, objmode

from engine.movegen import placements_into
from engine.lock import GOING_ON, PIECE_LIMIT, lock_piece, spawn_blocked, spawn_state
from evaluators import board_values

from .._base import value_child
from .._splitmix import next_random
from ._base import OnlinePolicy
from ._kernels import (P_DEATH, P_EXPLORATION, P_MS, P_ROLLOUT, P_SIMULATIONS, P_USE_PREVIEW,
                       P_VALUE_WEIGHT, ply)


def tree_arrays(height: int, simulations: int, capacity: int) -> tuple:
    """The search tree's storage for ``simulations`` simulations per move (at most one new decision
    node and its children per simulation): decision nodes (board, shape, piece, first child,
    children (-1: not expanded), visits), after-states (board, points, value, visits, reward sum,
    next decision node per shape, placement index), the path, and the generator state."""
    nd = simulations + 2
    na = nd * capacity
    return (np.zeros((nd, height), np.uint16), np.zeros(nd, np.int64), np.zeros(nd, np.int64),
            np.zeros(nd, np.int64), np.zeros(nd, np.int64), np.zeros(nd, np.int64),
            np.zeros((na, height), np.uint16), np.zeros(na, np.int64), np.zeros(na), np.zeros(na, np.int64),
            np.zeros(na), np.zeros((na, 7), np.int64), np.zeros(na, np.int64),
            np.zeros(4096, np.int64), np.zeros(4096, np.int64), np.zeros(1, np.uint64))


#: ``a_next`` of an after-state whose lock ends the game (the piece limit): a leaf worth its points
ENDED = -2


@njit(cache=True)
def random_shape(rng):
    return np.int64(next_random(rng) % np.uint64(7))


@njit(cache=True)
def _expand(d, R, spec, tree, ws, na_used):
    """Create the after-states of decision node ``d``; returns the new count of after-states used
    (-1 when the storage is full)."""
    d_board, d_shape, d_t, d_first, d_n, d_visits, a_board, a_points, a_value, a_visits, a_sum, a_next, \
        a_place, path_a, path_d, rng = tree
    fit, free, visited, front, nxt, layers, found, pvals, locked, cleared, values, ranks = ws
    cells = R[0]
    board = d_board[d]
    shape = d_shape[d]
    t = d_t[d]
    ss = spawn_state(t, R)
    d_first[d] = na_used
    d_n[d] = 0
    if spawn_blocked(board, cells[shape, ss], R):
        return na_used
    n = placements_into(board, cells[shape], R[1][shape], R[3], R[5], R[6], ss, R[12], fit, free, visited,
                        front, nxt, layers, found[2])
    if na_used + n > a_board.shape[0]:
        d_n[d] = -1
        return -1
    parent_values(board, R[3], spec, pvals[2])
    for k in range(n):
        x, y, s = found[2, k, 0], found[2, k, 1], found[2, k, 2]
        alive, v = value_child(board, pvals[2], cells[shape, s], x, y, R, spec, locked[2], cleared[2])
        if not alive:
            continue
        a = na_used
        a_board[a] = board
        end, f, points = lock_and_score(a_board[a], cells[shape, s], x, y, t + 1, R)
        a_points[a] = points
        a_value[a] = v
        a_visits[a] = 0
        a_sum[a] = 0.0
        a_next[a, :] = -1 if end == GOING_ON else ENDED
        a_place[a] = k
        na_used += 1
        d_n[d] += 1
    return na_used


@njit(cache=True)
def _rollout(board, t, preview, pieces, R, spec, tie_break, ws, rng, out):
    """Play ``pieces`` drawn pieces (the first is ``preview`` when >= 0) 1-ply from ``board`` (copied
    into ``out``); returns (points, last value, dead)."""
    fit, free, visited, front, nxt, layers, found, pvals, locked, cleared, values, ranks = ws
    out[:] = board
    points = 0
    last = np.nan
    for i in range(pieces):
        shape = preview if (i == 0 and preview >= 0) else random_shape(rng)
        k, v = ply(1, out, shape, t + i, R, spec, tie_break, ws)
        if k < 0:
            return points, 0.0, True
        end, f, p = lock_and_score(out, R[0][shape, found[1, k, 2]], found[1, k, 0], found[1, k, 1],
                                   t + i + 1, R)
        points += p
        last = v
        if end == PIECE_LIMIT:  # the game is over, not lost: no future value
            return points, 0.0, False
        if end != GOING_ON:
            return points, 0.0, True
    return points, last, False


@njit(cache=True)
def _now_ms():
    with objmode(t="float64"):
        t = time_ms()
    return t


def time_ms() -> float:
    import time

    return time.perf_counter() * 1000.0


@njit(cache=True)
def choose_mcts(board, shape, preview, t, R, spec, tie_break, params, ws, tree, scratch_board):
    """Index of the chosen placement among the root's placements as `placements_into` lists them
    (-1 when every child is dead). The root's placements are left in ``ws.found[0]``."""
    d_board, d_shape, d_t, d_first, d_n, d_visits, a_board, a_points, a_value, a_visits, a_sum, a_next, \
        a_place, path_a, path_d, rng = tree
    found = ws[6]
    sims = int(params[P_SIMULATIONS])
    budget_ms = params[P_MS]
    c = params[P_EXPLORATION]
    depth_rollout = int(params[P_ROLLOUT])
    vw = params[P_VALUE_WEIGHT]
    death = params[P_DEATH]
    if params[P_USE_PREVIEW] <= 0:
        preview = -1
    d_board[0] = board
    d_shape[0] = shape
    d_t[0] = t
    d_visits[0] = 0
    na_used = _expand(0, R, spec, tree, ws, 0)
    found[0] = found[2]
    if na_used <= 0:
        return -1
    nd_used = 1
    rmin = np.inf
    rmax = -np.inf
    start = _now_ms() if budget_ms > 0 else 0.0
    done = 0
    while True:
        if budget_ms > 0:
            if done > 0 and _now_ms() - start >= budget_ms:
                break
        elif done >= sims:
            break
        if nd_used + 1 >= d_board.shape[0]:
            break
        # selection
        d = 0
        depth = 0
        npath = 0
        reward = 0.0
        dead = False
        ended = False
        leaf = -1
        while True:
            if d_n[d] < 0:
                na_used2 = _expand(d, R, spec, tree, ws, na_used)
                if na_used2 < 0:
                    dead = False
                    break
                na_used = na_used2
            if d_n[d] == 0:
                dead = True
                break
            path_d[npath] = d
            best = -1
            best_score = -np.inf
            fresh = -1  # the highest-valued after-state never visited, taken first
            lnN = math.log(max(d_visits[d], 1))
            for a in range(d_first[d], d_first[d] + d_n[d]):
                if a_visits[a] == 0:
                    if fresh < 0 or a_value[a] > a_value[fresh]:
                        fresh = a
                else:
                    q = a_sum[a] / a_visits[a]
                    q = (q - rmin) / (rmax - rmin) if rmax > rmin else 0.5
                    score = q + c * math.sqrt(lnN / a_visits[a])
                    if score > best_score:
                        best, best_score = a, score
            if fresh >= 0:
                best = fresh
            path_a[npath] = best
            npath += 1
            reward += a_points[best]
            if a_next[best, 0] == ENDED:  # the game's last piece: nothing follows
                ended = True
                break
            if a_visits[best] == 0 or npath >= path_a.shape[0]:
                leaf = best
                break
            s = preview if (depth == 0 and preview >= 0) else random_shape(rng)
            if a_next[best, s] < 0:
                nd = nd_used
                nd_used += 1
                d_board[nd] = a_board[best]
                d_shape[nd] = s
                d_t[nd] = d_t[d] + 1
                d_n[nd] = -1
                d_visits[nd] = 0
                a_next[best, s] = nd
            d = a_next[best, s]
            depth += 1
        if npath == 0:
            break  # the root itself cannot be searched further (storage full)
        if dead:
            total = -death
        elif ended:
            total = reward
        elif leaf >= 0:
            nxt_preview = preview if (depth == 0 and preview >= 0) else -1
            pts, last, died = _rollout(a_board[leaf], d_t[path_d[npath - 1]] + 1, nxt_preview, depth_rollout, R,
                                       spec, tie_break, ws, rng, scratch_board)
            if died:
                total = -death
            else:
                total = reward + pts + vw * (a_value[leaf] if np.isnan(last) else last)
        else:
            break  # storage full
        rmin = min(rmin, total)
        rmax = max(rmax, total)
        for i in range(npath):
            a_visits[path_a[i]] += 1
            a_sum[path_a[i]] += total
            d_visits[path_d[i]] += 1
        done += 1
    best = -1
    for a in range(d_first[0], d_first[0] + d_n[0]):
        if best < 0 or a_visits[a] > a_visits[best] or (a_visits[a] == a_visits[best] and a_value[a] > a_value[best]):
            best = a
    return a_place[best]


class MCTS(OnlinePolicy):
    name = "mcts"
    code = 3

    @staticmethod
    def tree_size(config, cap):
        """A simulation budget sizes the tree; a time budget gets storage for 20,000 simulations
        (the search stops early when it is full)."""
        return (20_000 if config.mcts.ms else config.mcts.simulations), cap
