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

from .board import BOARD_DTYPE, is_valid, lock
from .record import OP_N, Record, RecordError, extract, parse
from .rules import GEEK, Rules

END_NAMES = ("record_end", "top_touched", "spawn_blocked", "piece_limit")
RECORD_END, TOP_TOUCHED, SPAWN_BLOCKED, PIECE_LIMIT = range(4)
STEP_DX = np.array([-1, 1, 0, 0], dtype=np.int64)
STEP_DY = np.array([0, 0, 1, 0], dtype=np.int64)


@njit(cache=True)
def _lock_and_score(board, cells, x, y, full, counter, limit, top_out_all_rows, table, by_cells):
    """Lock the current piece; return (end code or -1, points)."""
    c, f, occupied = lock(board, cells, x, y, full)
    if top_out_all_rows and occupied == board.shape[0]:
        return TOP_TOUCHED, 0
    if counter == limit:
        return PIECE_LIMIT, 0
    return -1, table[f] * (c if by_cells else 1)


@njit(cache=True)
def replay_kernel(kinds, counts, sequence, cells, width, height, spawn_x, spawn_y, cycle_states,
                  spawn_must_drop, top_out_all_rows, limit, table, by_cells, score_by_piece, board):
    """Replay operations on ``board`` (empty at the start, the final board at the end); return
    (score, counter, end code). ``score_by_piece[n]`` receives the score after piece n locked
    (n = 1..counter; left at 0 for a vanished piece)."""
    full = (1 << width) - 1
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
                end, pts = _lock_and_score(board, cells[shape, state], x, y, full, counter, limit,
                                           top_out_all_rows, table, by_cells)
                if end >= 0:
                    return score, counter, end
                score += pts
            score_by_piece[counter] = score
            if counter == limit:
                return score, counter, PIECE_LIMIT
            counter += 1
            shape = sequence[counter - 1]
            state = (counter - 1) % 4 if cycle_states else 0
            x = spawn_x
            y = spawn_y
            has_piece = True
            moved = False
            if not is_valid(board, cells[shape, state], x, y, width):
                return score, counter, SPAWN_BLOCKED
            if spawn_must_drop and not is_valid(board, cells[shape, state], x, y + 1, width):
                return score, counter, SPAWN_BLOCKED
        else:
            moved = True
            for _ in range(counts[i]):
                if k == 3:
                    nstate = (state + 1) % 4
                    if is_valid(board, cells[shape, nstate], x, y, width):
                        state = nstate
                else:
                    nx = x + STEP_DX[k]
                    ny = y + STEP_DY[k]
                    if is_valid(board, cells[shape, state], nx, ny, width):
                        x = nx
                        y = ny
    if has_piece:
        end, pts = _lock_and_score(board, cells[shape, state], x, y, full, counter, limit,
                                   top_out_all_rows, table, by_cells)
        if end >= 0:
            return score, counter, end
        score += pts
        score_by_piece[counter] = score
    return score, counter, RECORD_END


@dataclass(frozen=True)
class ReplayResult:
    """What a replay reports. ``bricks`` is the piece counter (pieces that appeared, a
    spawn-blocked one included); ``end`` is one of `END_NAMES`, None when the record is invalid.
    ``score_by_piece[n]`` is the score once piece n (1-based) has locked."""

    valid: bool
    score: int = 0
    bricks: int = 0
    end: str | None = None
    error: str | None = None
    score_by_piece: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64), repr=False)

    def as_dict(self) -> dict:
        return {"valid": self.valid, "score": self.score, "bricks": self.bricks, "end": self.end,
                "error": self.error}


def replay_record(record: Record, rules: Rules = GEEK, seed: int | None = None,
                  board: np.ndarray | None = None) -> ReplayResult:
    """Replay a parsed record under ``rules`` (``seed`` overrides the piece source's seed).
    ``board``, when given, must be empty and receives the final board."""
    n = record.pieces
    if rules.piece_limit is not None:
        n = min(n, rules.piece_limit)
    sequence = rules.sequence(max(n, 1), seed)
    trace = np.zeros(n + 1, dtype=np.int64)
    limit = rules.piece_limit if rules.piece_limit is not None else -1
    score, counter, end = replay_kernel(
        record.kinds, record.counts, sequence, rules.cells, rules.width, rules.height,
        rules.spawn_x, rules.spawn_y, rules.spawn_state == "cycle", rules.spawn_must_drop,
        rules.top_out == "all_rows", limit, rules.scores, rules.score_by_cells, trace,
        np.zeros(rules.height, dtype=BOARD_DTYPE) if board is None else board,
    )
    trace = np.maximum.accumulate(trace[: counter + 1])
    return ReplayResult(True, int(score), int(counter), END_NAMES[end], None, trace)


def replay(text: str, rules: Rules = GEEK, seed: int | None = None) -> ReplayResult:
    """Validate and replay a record given as text (plain or either console line)."""
    try:
        record = parse(extract(text))
    except RecordError as e:
        return ReplayResult(False, error=str(e))
    return replay_record(record, rules, seed)


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
