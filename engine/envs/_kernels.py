"""The environments' kernels: one call per step locks the piece, offers the next piece's placements
as actions and writes the board's cells.

An *action* is ``state x width + column``: the piece turned to ``state`` (0..3) with its leftmost
cell in ``column``. Each legal action stands for the lowest resting placement of the piece in that
state and column (`engine.movegen.generators.lowest_placements_into`: under drop-only rules the one placement
there is; under the contest's rules the lowest position a route of single steps reaches, tucks
included), and only a state that is the lowest of its cells counts (I, S and Z have two distinct
states, O one: `engine.rules.Rules.alias`). ``table[a]`` is action a's placement (x, y, state),
``mask[a]`` 1 when a is legal.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..lock import GOING_ON, STUCK, lock_step, no_placement, spawn_blocked, spawn_state
from ..movegen.generators import lowest_placements_into
from ..outcome import GameEnd


def leftmost(cells: np.ndarray) -> np.ndarray:
    """``out[shape, state]``: the least dx of the state's cells (`engine.rules.Rules.cells`): a
    placement centred in column x has its leftmost cell in column ``x + out[shape, state]``."""
    return np.ascontiguousarray(cells[:, :, :, 0].min(axis=2), np.int64)


@njit(cache=True, _nrt=False)
def offer(board, rules, shape, state, sc, found, table, mask, left):
    """Fill ``mask`` and ``table`` with the actions of ``shape`` appearing in ``state`` on
    ``board`` (module docstring); return how many are legal (0 when its spawn is blocked or it has
    no placement). ``found`` is the move generator's output (capacity, 3), ``sc`` its scratch."""
    for a in range(mask.shape[0]):
        mask[a] = 0
    if spawn_blocked(board, rules, shape, state):
        return 0
    n = lowest_placements_into(board, rules, shape, state, sc, found)
    width = rules.width
    for k in range(n):
        x = found[k, 0]
        s = found[k, 2]
        a = s * width + x + left[shape, s]
        table[a, 0] = x
        table[a, 1] = found[k, 1]
        table[a, 2] = s
        mask[a] = 1
    return n


@njit(cache=True, _nrt=False)
def cells_of(board, width, out):
    """``out[y, x]`` = 1 when cell (x, y) of ``board`` is occupied, else 0 (``out``: (height, width) int8)."""
    for y in range(board.shape[0]):
        row = np.int64(board[y])
        for x in range(width):
            out[y, x] = (row >> x) & 1


@njit(cache=True, _nrt=False)
def lock_and_offer(board, rules, shape, t, a, next_shape, next_state, sc, found, table, mask, left, cells):
    """The step of piece ``t`` (0-based) of ``shape`` at action ``a`` (its placement ``table[a]``)
    on ``board`` in place (`engine.lock.lock_step`: the one lock rule), then, when the game goes
    on, `offer` the next piece (``next_shape`` appearing in ``next_state``); ``cells`` receives the
    board's cells (`cells_of`). Returns (the lock's `engine.lock.Step`, legal actions of the next
    piece: 0 after a lock that ends the game)."""
    step = lock_step(board, rules, shape, t, table, a)
    n = 0
    if step.end == GOING_ON:
        n = offer(board, rules, next_shape, next_state, sc, found, table, mask, left)
    else:
        for j in range(mask.shape[0]):
            mask[j] = 0
    cells_of(board, rules.width, cells)
    return step, n


#: what `batch_play` does with each game of a batch
MODE_STEP, MODE_RESTART, MODE_KEEP = 0, 1, 2
#: `batch_play`'s end codes beyond the lock's (`engine.lock.GOING_ON` while a game goes on), from `GameEnd`
CAPPED = int(GameEnd.CAPPED)


@njit(cache=True, _nrt=False)
def batch_play(modes, actions, boards, rules, window, base, t, max_pieces, rows_reward, sc, found, tables, masks, left,
               cells, score, rows, rewards, terminated, truncated, illegal, ends):
    """One step of each game ``i`` of a batch (row ``i`` of every array), by ``modes[i]``:

    - `MODE_STEP`: play ``actions[i]`` (an illegal one: the first legal action, ``illegal[i]``
      set), `lock_and_offer` of piece ``t[i]`` and the next one (their shapes in ``window[i]``,
      which holds pieces ``base[i]`` on), then ``t[i]`` + 1, the piece's points added to
      ``score[i]`` and its rows to ``rows[i]``; ``rewards[i]`` its rows (``rows_reward``) or
      points, ``ends[i]``: `engine.lock.GOING_ON`, the lock's end, `CAPPED` at ``max_pieces``
      pieces (-1: none), `engine.lock.SPAWN_BLOCKED` or `STUCK` when the next piece cannot
      appear or has no placement; ``terminated[i]`` and ``truncated[i]`` as `TetrisEnv` says;
    - `MODE_RESTART`: an empty board and the actions of its first piece (``window[i]`` holding the
      pieces from the first on), ``t``, ``score``, ``rows`` and ``rewards`` 0, ``ends[i]``
      `STUCK` when that piece has no placement;
    - `MODE_KEEP`: nothing."""
    n = boards.shape[0]
    width = rules.width
    for i in range(n):
        mode = modes[i]
        if mode == MODE_KEEP:
            continue
        terminated[i] = False
        truncated[i] = False
        illegal[i] = False
        rewards[i] = 0.0
        if mode == MODE_RESTART:
            for y in range(boards.shape[1]):
                boards[i, y] = 0
            t[i] = 0
            score[i] = 0
            rows[i] = 0
            k = offer(boards[i], rules, window[i, 0], spawn_state(0, rules), sc, found, tables[i], masks[i], left)
            cells_of(boards[i], width, cells[i])
            ends[i] = GOING_ON if k > 0 else STUCK
            continue
        a = actions[i]
        if masks[i, a] == 0:
            illegal[i] = True
            a = 0
            while masks[i, a] == 0:
                a += 1
        ti = t[i]
        next_shape = window[i, ti + 1 - base[i]]
        next_state = spawn_state(ti + 1, rules)
        step, k = lock_and_offer(boards[i], rules, window[i, ti - base[i]], ti, a, next_shape, next_state, sc, found,
                                 tables[i], masks[i], left, cells[i])
        t[i] = ti + 1
        score[i] += step.points
        end, lines = step.end, step.lines
        if end != GOING_ON:
            lines = 0
            terminated[i], truncated[i] = step.terminated, step.truncated
        elif max_pieces >= 0 and ti + 1 >= max_pieces:
            end = CAPPED
            truncated[i] = True
        elif k == 0:
            nothing = no_placement(boards[i], rules, next_shape, next_state)
            end, terminated[i] = nothing.end, nothing.terminated
        rows[i] += lines
        rewards[i] = lines if rows_reward else step.points
        ends[i] = end
