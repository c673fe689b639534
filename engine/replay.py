"""Replay a record exactly as the contest engine does, and report score, pieces and why it ended.

The rules of a replay (GEEK_RULES.md, "Replay"):
- ``N``: the piece counter goes up and the next piece appears at the spawn, in its spawn state; if
  that position is invalid the game ends (``spawn_blocked``), the counter already counted.
- every single step of L/R/D/C is tried on its own and does nothing when its result is invalid;
- the current piece locks where it stands after the last operation before the next ``N`` or the
  end of the record; a piece followed directly by ``N`` never locks (it vanishes), and a record
  ending with ``N`` locks that piece at its spawn;
- after a lock, counted before clearing: every row occupied -> ``top_touched`` (no score); the
  piece numbered ``piece_limit`` -> ``piece_limit`` (no score); otherwise it scores;
- ``record_end`` when the operations run out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from .board import BOARD_DTYPE, is_valid
from .lock import GOING_ON, PIECE_LIMIT, RECORD_END, SPAWN_BLOCKED, lock_piece_call, spawn_blocked, spawn_state
from .outcome import GameEnd
from .record import OP_N, Record, RecordError, extract, parse
from .rules import GEEK, Rules

STEP_DX = np.array([-1, 1, 0, 0], dtype=np.int64)
STEP_DY = np.array([0, 0, 1, 0], dtype=np.int64)


@njit(cache=True)
def _trace(boards, locked, n, board, shape, state, x, y, full_rows):
    """Record piece n in a trace (`replay_kernel`); nothing without one (``boards`` None: numba then
    compiles the replay without this code)."""
    if boards is not None:
        boards[n, :] = board
        locked[n, 0] = shape
        locked[n, 1] = state
        locked[n, 2] = x
        locked[n, 3] = y
        locked[n, 4] = full_rows


@njit(cache=True)
def replay_kernel(kinds, counts, sequence, rules, score_by_piece, board, boards, locked):
    """Replay operations under ``rules`` (`Rules.kernel`) on ``board`` (empty at the start,
    the final board at the end); return (score, counter, end code). ``score_by_piece[n]`` receives
    the score after piece n locked (n = 1..counter; left at 0 for a vanished piece).

    A trace, when ``boards`` (counter + 1 rows, height) and ``locked`` (counter + 1 rows, 5) are
    given (None for none): ``boards[n]`` is the board once piece n has locked and full rows were
    cleared (the board as it was when piece n never locked), ``locked[n]`` is (shape, state, x, y,
    full rows) of the lock, shape -1 when piece n never locked (it vanished, or its spawn was
    blocked). A lock that ends the game is traced too."""
    cells = rules.cells
    width = rules.width
    limit = rules.piece_limit
    score = 0
    counter = 0
    shape = 0
    state = 0
    x = 0
    y = 0
    has_piece = False
    moved = False
    for i in range(kinds.shape[0]):
        k = kinds[i]
        if k == OP_N:
            if has_piece and moved:
                lock = lock_piece_call(board, rules, shape, state, x, y, counter)
                _trace(boards, locked, counter, board, shape, state, x, y, lock.lines)
                if lock.end != GOING_ON:
                    return score, counter, lock.end
                score += lock.points
            elif has_piece:
                _trace(boards, locked, counter, board, -1, state, x, y, 0)
            score_by_piece[counter] = score
            if counter == limit:
                return score, counter, PIECE_LIMIT
            counter += 1
            shape = sequence[counter - 1]
            state = spawn_state(counter - 1, rules)
            x = rules.spawn_x
            y = rules.spawn_y
            has_piece = True
            moved = False
            if spawn_blocked(board, rules, shape, state):
                _trace(boards, locked, counter, board, -1, state, x, y, 0)
                return score, counter, SPAWN_BLOCKED
        else:
            moved = True
            for _ in range(counts[i]):
                if k == 3:
                    nstate = (state + 1) % 4
                    if is_valid(board, cells[shape, nstate], x, y, width):
                        state = nstate
                elif is_valid(board, cells[shape, state], x + STEP_DX[k], y + STEP_DY[k], width):
                    x += STEP_DX[k]
                    y += STEP_DY[k]
    if has_piece:
        lock = lock_piece_call(board, rules, shape, state, x, y, counter)
        _trace(boards, locked, counter, board, shape, state, x, y, lock.lines)
        if lock.end != GOING_ON:
            return score, counter, lock.end
        score += lock.points
        score_by_piece[counter] = score
    return score, counter, RECORD_END


@dataclass(frozen=True)
class ReplayResult:
    """What a replay reports. ``bricks`` is the piece counter (pieces that appeared, a
    spawn-blocked one included); ``end`` is a `GameEnd`'s label (`engine.outcome.LOCK_ENDS`), None when the record is invalid.
    ``score_by_piece[n]`` is the score once piece n (1-based) has locked. With a trace
    (``replay(..., trace=True)``): ``boards[n]`` is the board once piece n has locked and full rows
    were cleared (``boards[0]`` is empty), ``locked[n]`` is (shape, state, x, y, full rows) of that
    lock, shape -1 when piece n never locked (``locked[0]`` too); both have ``bricks + 1`` rows."""

    valid: bool
    score: int = 0
    bricks: int = 0
    end: str | None = None
    error: str | None = None
    score_by_piece: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64), repr=False)
    boards: np.ndarray | None = field(default=None, repr=False)
    locked: np.ndarray | None = field(default=None, repr=False)

    def as_dict(self) -> dict:
        return {"valid": self.valid, "score": self.score, "bricks": self.bricks, "end": self.end,
                "error": self.error}


def replay_record(record: Record, rules: Rules = GEEK, seed: int | None = None,
                  board: np.ndarray | None = None, trace: bool = False) -> ReplayResult:
    """Replay a parsed record under ``rules`` (``seed`` overrides the piece source's seed).
    ``board``, when given, must be empty and receives the final board; ``trace`` records every
    piece's board and lock (`ReplayResult.boards`, ``.locked``)."""
    n = record.pieces
    if rules.piece_limit is not None:
        n = min(n, rules.piece_limit)
    sequence = rules.sequence(max(n, 1), seed)
    by_piece = np.zeros(n + 1, dtype=np.int64)
    boards = locked = None
    if trace:
        boards = np.zeros((n + 1, rules.height), dtype=BOARD_DTYPE)
        locked = np.zeros((n + 1, 5), dtype=np.int64)
        locked[:, 0] = -1
    score, counter, end = replay_kernel(
        record.kinds, record.counts, sequence, rules.kernel, by_piece,
        np.zeros(rules.height, dtype=BOARD_DTYPE) if board is None else board, boards, locked,
    )
    by_piece = np.maximum.accumulate(by_piece[: counter + 1])
    if not trace:
        return ReplayResult(True, int(score), int(counter), GameEnd(end).label, None, by_piece)
    return ReplayResult(True, int(score), int(counter), GameEnd(end).label, None, by_piece,
                        boards[: counter + 1], locked[: counter + 1])


def replay(text: str, rules: Rules = GEEK, seed: int | None = None, trace: bool = False) -> ReplayResult:
    """Validate and replay a record given as text (plain or either console line); ``trace`` as in
    `replay_record`."""
    try:
        record = parse(extract(text))
    except RecordError as e:
        return ReplayResult(False, error=str(e))
    return replay_record(record, rules, seed, trace=trace)


def final_board(record_text: str, rules: Rules = GEEK, pieces: int | None = None) -> np.ndarray:
    """The board after replaying the first ``pieces`` pieces of a record (all by default), or the
    board at which the game ended if it ended before."""
    record = parse(extract(record_text))
    kinds, counts = record.kinds, record.counts
    if pieces is not None:
        starts = np.flatnonzero(kinds == OP_N)
        if pieces < len(starts):
            kinds, counts = kinds[: starts[pieces]], counts[: starts[pieces]]
    board = np.zeros(rules.height, dtype=BOARD_DTYPE)
    replay_record(Record(kinds, counts), rules, board=board)
    return board
