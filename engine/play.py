"""Playing one piece under the rules: lock it, score it, and say whether the game ends.

These are the rules' semantics in kernel form (numba), shared by the replay, the game state, the
batch forms and every solver kernel, so each game-over rule is written once. ``R`` is
`Rules.kernel`, the rules as a tuple of arrays and scalars.
"""

from __future__ import annotations

from numba import njit

from .board import is_valid, lock

END_NAMES = ("record_end", "top_touched", "spawn_blocked", "piece_limit", "sequence_end")
GOING_ON = -1
RECORD_END, TOP_TOUCHED, SPAWN_BLOCKED, PIECE_LIMIT, SEQUENCE_END = range(5)


@njit(cache=True)
def lock_and_score(board, cells, x, y, number, R):
    """Lock the piece numbered ``number`` (1-based) with offsets ``cells`` at (x, y) on ``board``
    (in place: placed, then full rows cleared) and return ``(end, full_rows, points)``.

    Counted after the lock, before the clear: if ``top_out`` is ``all_rows`` and every row holds an
    occupied cell, ``end`` is TOP_TOUCHED and the piece scores nothing; else if ``number`` is the
    piece limit, PIECE_LIMIT and nothing; else GOING_ON and ``table[f]`` points, times the occupied
    cells when the rules score by cells. ``full_rows`` is reported in every case."""
    scores = R[2]
    height = R[4]
    c, f, occupied = lock(board, cells, x, y, (1 << R[3]) - 1)
    if R[9] and occupied == height:
        return TOP_TOUCHED, f, 0
    if number == R[11]:
        return PIECE_LIMIT, f, 0
    return GOING_ON, f, scores[f] * (c if R[8] else 1)


@njit(cache=True)
def spawn_state(index, R):
    """State in which the piece of 0-based ``index`` appears."""
    return index % 4 if R[7] else 0


@njit(cache=True)
def spawn_blocked(board, cells, R):
    """Whether a piece with offsets ``cells`` (its spawn state) cannot appear: its spawn position is
    invalid, or (``spawn_must_drop``) it cannot move one row down from there. Never under drop-only
    placements (``R[12] < 0``): there a piece appears above the board, and the game ends when it has
    no placement."""
    if R[12] < 0:
        return False
    if not is_valid(board, cells, R[5], R[6], R[3]):
        return True
    return R[10] and not is_valid(board, cells, R[5], R[6] + 1, R[3])
