"""A piece's life under the rules: where it appears, and what its lock does. Written once.

`lock_piece` is the one lock rule every policy, the game state and the replayer call: place the
piece, count the board, apply the game-over rules in the contest engine's order (`judge`), score
the lock and clear the full rows. It returns a `LockResult`, the quantities counted after the piece
was placed and before any row was cleared. `lock_copy` is the same rule on a copy of a board,
keeping the board as it was just before the clear, and `lock_piece_call` the same rule called, not
inlined, for the kernels that replay a finished path. `spawn_state` and `spawn_blocked` say where
and whether the next piece appears; `lost` says whether a lock's end is a lost game.

A *step* of a game is one piece's life as a player sees it: the piece appears, a placement is
chosen, the piece is locked. `lock_step` is the step once the choice is made, and `Step` what it
tells, as Gymnasium's step does (*terminated*, *truncated*). The game loops of `solver.online`, the
protocol bot and the Gymnasium environments (`engine.envs`) all step through it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ._jit.decorators import inlined, inner
from ._jit.dispatch import fixed
from .board import clear_rows, copy_rows, count_rows, is_valid, place, popcount
from .outcome import LOCK_ENDS, GameEnd
from .rules import OVERFLOW_CLEAR_FIRST, OVERFLOW_DISCARD, OVERFLOW_END

#: `LockResult.end` of a lock after which the game goes on, and the ends (the kernels' int constants, from `GameEnd`)
GOING_ON = int(GameEnd.GOING_ON)
RECORD_END, TOP_TOUCHED, SPAWN_BLOCKED, PIECE_LIMIT, SEQUENCE_END, OVERFLOW = (int(end) for end in LOCK_ENDS)
#: `Step.end` of a piece that appeared but has no placement that survives
STUCK = int(GameEnd.STUCK)


class LockResult(NamedTuple):
    """What one lock did (numba compiles it as a tuple: free to return from a kernel).

    - ``end``: `GOING_ON`, `TOP_TOUCHED`, `OVERFLOW` or `PIECE_LIMIT`;
    - ``lines``: full rows, removed by the lock (counted whatever ``end`` is; 0 when an overflow
      under `OVERFLOW_END` cleared nothing);
    - ``points``: points scored (0 when the lock ends the game);
    - ``cells``: occupied cells on the board after the piece was placed, before the clear (the
      piece's cells above the top row included, unless the rules discard them);
    - ``occupied_rows``: rows of the board holding an occupied cell, likewise.
    """

    end: int
    lines: int
    points: int
    cells: int
    occupied_rows: int

    @property
    def over(self) -> bool:
        """Whether the lock ended the game."""
        return self.end != GOING_ON


@inlined
def lock_points(rules, lines, cells, number):
    """Points of a lock of piece ``number`` (1-based) that did not touch the top, filling ``lines``
    rows with ``cells`` occupied cells on the board (counted before the clear): ``scores[lines] x
    cells`` (``x 1`` unless ``score_by_cells``), and nothing for the piece at the rules' limit.
    `settle` scores every lock with it; a search that counts its locks without a board (the
    profile DP) calls it directly."""
    if number == rules.piece_limit:
        return 0
    return rules.scores[lines] * (cells if rules.score_by_cells else 1)


@inlined
def judge(rules, number, cells, full, occupied, above):
    """The rule of a lock of piece ``number`` (1-based) that left ``cells`` occupied cells, ``full``
    full rows and ``occupied`` rows holding a cell (counted after the piece was placed, before the
    clear) with ``above`` rows of the piece above the board's top row (`overflow_rows`): game over,
    then the score (`lock_points`). Returns the `LockResult`; the caller removes ``lines`` rows.

    Game over, in this order (GEEK_RULES.md "Replay", then the family's other rules):
    1. ``top_out_all_rows`` and every row holds an occupied cell after the lock: ``TOP_TOUCHED``,
       the piece scores nothing;
    2. the piece has cells above the board's top row (it *overflows* by ``above`` rows) and the
       rules' ``overflow`` is `OVERFLOW_END`: ``OVERFLOW``, nothing is cleared and the piece scores
       nothing; or it is `OVERFLOW_CLEAR_FIRST` and the lock fills fewer than ``above`` rows (a cell
       would stay above the top once they are cleared): ``OVERFLOW``, the piece scores nothing.
       Under `OVERFLOW_DISCARD` (the contest) such cells are dropped and the lock goes on;
    3. the piece is number ``piece_limit`` (1-based): ``PIECE_LIMIT``, it scores nothing;
    4. else the lock scores ``scores[f] x cells`` (``x 1`` unless ``score_by_cells``) for ``f``
       full rows, which are then removed; under `OVERFLOW_CLEAR_FIRST` the piece's cells above the
       top row then move down by ``f`` rows onto the board."""
    if rules.top_out_all_rows and occupied == rules.height:
        return LockResult(TOP_TOUCHED, full, 0, cells, occupied)
    if above > 0:
        if fixed(rules.overflow) == OVERFLOW_END:
            return LockResult(OVERFLOW, 0, 0, cells, occupied)
        if fixed(rules.overflow) == OVERFLOW_CLEAR_FIRST and above > full:
            return LockResult(OVERFLOW, full, 0, cells, occupied)
    end = PIECE_LIMIT if number == rules.piece_limit else GOING_ON
    return LockResult(end, full, lock_points(rules, full, cells, number), cells, occupied)


@inlined
def lost(end):
    """Whether a lock whose `LockResult.end` is ``end`` lost the game (top touched, overflow): a
    search never chooses such a lock while another one survives."""
    return end == TOP_TOUCHED or end == OVERFLOW


@inlined
def overflow_rows(rules, piece, y):
    """Rows of a piece with offsets ``piece`` at centre row ``y`` above the board's top row (0 when
    it is inside, and always 0 under `OVERFLOW_DISCARD`, whose locks drop such cells)."""
    if fixed(rules.overflow) == OVERFLOW_DISCARD:
        return 0
    top = y + piece[0, 1]
    for k in range(1, 4):
        top = min(top, y + piece[k, 1])
    return max(0, -top)


@inlined
def place_overflow(board, piece, x, y, lines):
    """The cells of the piece above the top row, moved down by the ``lines`` rows its lock cleared
    (`OVERFLOW_CLEAR_FIRST`; the lock made sure they land on the board, in the rows the clear left
    empty)."""
    for k in range(4):
        r = y + piece[k, 1]
        if r < 0:
            board[r + lines] |= np.uint16(1 << (x + piece[k, 0]))


@inlined
def settle(board, rules, number, piece, x, y):
    """The lock of piece ``number`` (1-based) with offsets ``piece`` at (x, y), just placed on
    ``board`` (the cells on the board): count the board, `judge`, then clear the full rows in place
    (and bring the cells above the top row down under `OVERFLOW_CLEAR_FIRST`). Returns the
    `LockResult`."""
    above = overflow_rows(rules, piece, y)
    cells, full, occupied = count_rows(board, rules.full_row)
    if above > 0:
        for k in range(4):
            if y + piece[k, 1] < 0:
                cells += 1
    lock = judge(rules, number, cells, full, occupied, above)
    if lock.lines:
        clear_rows(board, rules.full_row)
    if above > 0 and lock.end == GOING_ON:
        place_overflow(board, piece, x, y, lock.lines)
    return lock


@inlined
def lock_counted(board, rules, shape, state, x, y, number, cells, occupied):
    """`lock_piece` on a board whose counts are known (``cells`` occupied cells, ``occupied`` rows
    holding one): only the rows the piece touches are counted again (a search locking many
    children of one parent on copies of it counts the parent once). Same `LockResult`, same board."""
    piece = rules.cells[shape, state]
    full_row = rules.full_row
    above = overflow_rows(rules, piece, y)
    full = np.int64(0)  # bit r: row r is full (a row full after one of the piece's cells stays full)
    for k in range(4):
        r = y + piece[k, 1]
        if r < 0:
            if above > 0:
                cells += 1
            continue
        before = np.int64(board[r])
        after = before | (np.int64(1) << (x + piece[k, 0]))
        board[r] = after
        cells += 1
        occupied += before == 0
        full |= np.int64(after == full_row) << r
    lock = judge(rules, number, cells, popcount(full), occupied, above)
    if lock.lines:
        clear_rows(board, full_row)
    if above > 0 and lock.end == GOING_ON:
        place_overflow(board, piece, x, y, lock.lines)
    return lock


@inlined
def lock_piece(board, rules, shape, state, x, y, number):
    """Lock piece ``number`` (1-based) of ``shape`` in ``state`` centred at (x, y) on ``board``, in
    place (placed, then full rows cleared); returns its `LockResult`. It is `inlined`: LLVM puts its
    code into each caller, as a call per child in a search's inner loop would cost more than the
    lock."""
    piece = rules.cells[shape, state]
    place(board, piece, x, y)
    return settle(board, rules, number, piece, x, y)


@inner
def lock_piece_call(board, rules, shape, state, x, y, number):
    """`lock_piece`, called rather than inlined: same `LockResult`, same board. For the kernels that
    replay a finished path (the replayer, a path's scores and routes): there a call costs nothing
    measurable, and their code holds the lock once."""
    return lock_piece(board, rules, shape, state, x, y, number)


@inlined
def lock_copy(parent, rules, shape, state, x, y, number, locked, cleared):
    """`lock_piece` on a copy of ``parent``: ``locked`` receives the board with the piece placed,
    before the clear (without its cells above the top row: what an evaluator's placement features
    read), and ``cleared`` the board after it; ``parent`` is unchanged."""
    piece = rules.cells[shape, state]
    copy_rows(locked, parent)
    place(locked, piece, x, y)
    copy_rows(cleared, locked)
    return settle(cleared, rules, number, piece, x, y)


@njit(cache=True)
def spawn_state(index, rules):
    """State in which the piece of 0-based ``index`` appears."""
    return index % 4 if rules.cycle_states else 0


@inlined
def spawn_blocked(board, rules, shape, state):
    """Whether a piece of ``shape`` appearing in ``state`` cannot appear: its spawn position is
    invalid, or (``spawn_must_drop``) it cannot move one row down from there. Never under drop-only
    placements (``step_limit < 0``): there a piece appears above the board, and the game ends when it
    has no placement."""
    if rules.step_limit < 0:
        return False
    cells = rules.cells[shape, state]
    if not is_valid(board, cells, rules.spawn_x, rules.spawn_y, rules.width):
        return True
    return rules.spawn_must_drop and not is_valid(board, cells, rules.spawn_x, rules.spawn_y + 1, rules.width)


class Step(NamedTuple):
    """What one step of a game did (`lock_step`; numba compiles it as a tuple).

    - ``end``: `GOING_ON`; `SPAWN_BLOCKED` or `STUCK` when the piece was not placed (it could not
      appear, or no placement was chosen); else the lock's end (`TOP_TOUCHED`, `OVERFLOW`,
      `PIECE_LIMIT`);
    - ``placed``: whether the piece was locked;
    - ``lines``, ``points``: the lock's (`LockResult`; 0 when the piece was not placed);
    - ``terminated``: the game is over and lost (every end but `PIECE_LIMIT`);
    - ``truncated``: the game stopped at the rules' last piece (`PIECE_LIMIT`): over, not lost.
    """

    end: int
    placed: bool
    lines: int
    points: int
    terminated: bool
    truncated: bool


@inlined
def unplaced(end):
    """The `Step` of a piece that was not placed, ending the game by ``end`` (`SPAWN_BLOCKED`,
    `STUCK`): terminated."""
    return Step(end, False, 0, 0, True, False)


@inlined
def no_placement(board, rules, shape, state):
    """The `Step` of a piece of ``shape`` appearing in ``state`` on ``board`` that gets no
    placement: `SPAWN_BLOCKED` when it cannot appear (`spawn_blocked`), else `STUCK`."""
    return unplaced(SPAWN_BLOCKED if spawn_blocked(board, rules, shape, state) else STUCK)


@inlined
def lock_step(board, rules, shape, t, found, k):
    """The step of piece ``t`` (0-based) of ``shape`` on ``board``, in place, once its placement is
    chosen: locked at ``found[k]`` (x, y, state) by `lock_piece`, or, for ``k < 0`` (none chosen),
    `no_placement`. Returns the `Step`."""
    if k < 0:
        return no_placement(board, rules, shape, spawn_state(t, rules))
    lock = lock_piece(board, rules, shape, found[k, 2], found[k, 0], found[k, 1], t + 1)
    return Step(lock.end, True, lock.lines, lock.points, lost(lock.end), lock.end == PIECE_LIMIT)
