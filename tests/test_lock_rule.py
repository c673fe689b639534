"""The one lock rule (`engine.lock.lock_piece`): the game state, the replayer and the policies end
the game and score a lock exactly as it does, on the piece limit and on each game-over rule.

GEEK_RULES.md, "Replay": after a lock, counted before any row is cleared,
1. every row holds an occupied cell: the game ends (``top_touched``), the piece scores nothing;
2. else the piece is number 10,000: the game ends (``piece_limit``), the piece scores nothing;
3. else it scores cells x (0, 1, 3, 6, 10)[full rows].
"""

import dataclasses

import numpy as np

from engine import GEEK, GOING_ON, GameEnd, GameState, final_board, from_strings, lock_piece, replay, to_strings
from engine.lock import PIECE_LIMIT, TOP_TOUCHED
from solver import SolverConfig, solve

I, Z = 0, 6


def lock_on_copy(board, rules, shape, placement, number):
    """`lock_piece` on a copy of ``board``: (the board after it, its `LockResult`)."""
    board = np.array(board, np.uint16)
    x, y, s = (int(v) for v in placement)
    return board, lock_piece(board, rules.kernel, shape, s, x, y, number)


# ------------------------------------------------------------------------------------------------
# The piece limit


def test_the_published_record_ends_at_the_limit_and_its_last_piece_scores_nothing(replays_dir):
    r = replay((replays_dir / "geek-881026.txt").read_text(), trace=True)
    assert (r.valid, r.score, r.bricks, r.end) == (True, 881_026, 10_000, "piece_limit")
    # the 10,000th piece (a Z) locks at (8, 8) in state 0 and fills a row of a board of 110 cells
    shape, s, x, y, lines = (int(v) for v in r.locked[10_000])
    assert (shape, s, x, y, lines) == (Z, 0, 8, 8, 1) and shape == GEEK.sequence(10_000)[9_999]
    before = r.boards[9_999]
    _, last = lock_on_copy(before, GEEK, Z, (x, y, s), 10_000)
    assert last == (PIECE_LIMIT, 1, 0, 110, 14)                 # the limit: no points
    _, scored = lock_on_copy(before, GEEK, Z, (x, y, s), 9_999)
    assert scored == (GOING_ON, 1, 110, 110, 14)                 # any earlier number: 110 x 1
    assert r.score + scored.points == 881_136                    # what the Go solver's simulator printed
    assert r.score_by_piece[9_999] == r.score_by_piece[10_000] == 881_026


def test_a_game_state_reaching_the_limit_ends_there_and_scores_nothing():
    # Row 19 misses columns 3..6; a horizontal I (spawn state 3 = state 1's cells) centred at
    # (4, 19) fills them: 6 + 4 = 10 cells, one row. Piece 9,999 scores 10; piece 10,000 nothing.
    board = from_strings("###....###")
    sequence = np.zeros(10_000, np.int8)  # I pieces only
    for piece, points, end in ((9_998, 10, None), (9_999, 0, "piece_limit")):
        g = GameState(GEEK, sequence, board, piece=piece)
        assert g.spawn_state == piece % 4 and (4, 19, 1) in {tuple(p) for p in g.placements().tolist()}
        t = g.apply((4, 19, 1))
        assert (t.points, t.state.score, t.state.end, t.over) == (points, points, end, end is not None)
        assert t.state.piece == piece + 1
        _, lock = lock_on_copy(board, GEEK, I, (4, 19, 1), piece + 1)
        assert (lock.points, lock.lines, lock.cells) == (points, 1, 10)
        assert (GameEnd(lock.end).label if lock.over else None) == end
        if end is None:
            assert (t.lines, t.state.lines, t.state.clears) == (1, 1, 1)
        else:  # the game ended: the row is not counted as a clear either
            assert (t.lines, t.state.lines, t.state.clears, t.state.clear_kinds) == (0, 0, 0, (0, 0, 0, 0, 0))


def test_greedy_playing_every_piece_scores_what_its_record_replays():
    # told to play all 10,000 pieces, the greedy plays the 10,000th too; it scores nothing, in the
    # policy as in the replay of its record
    r = solve(SolverConfig(policy="greedy", pieces=10_000, evaluator="pierre_dellacherie"))
    assert (r.pieces, r.stop, r.end) == (10_000, "done", "piece_limit")
    verdict = replay(r.record)
    assert (verdict.score, verdict.bricks, verdict.end) == (r.score, 10_000, "piece_limit")
    assert list(verdict.score_by_piece[1:]) == list(r.score_by_step)
    assert r.score_by_step[-1] == r.score_by_step[-2] == r.score
    # its last lock under the lock rule: the limit, no points
    before = final_board(r.record, GEEK, pieces=9_999)
    shape = int(GEEK.sequence(10_000)[9_999])
    _, last = lock_on_copy(before, GEEK, shape, r.placements[-1], 10_000)
    assert last.end == PIECE_LIMIT and last.points == 0


# ------------------------------------------------------------------------------------------------
# A lock that fills every row


def test_a_lock_filling_every_row_ends_the_game_and_scores_nothing():
    # Rows 0..18 hold a cell in column 0; a vertical I at x = 9 fills row 19 and every row is
    # occupied: the game ends although the row is full (it would score 32 cells x 1).
    board = from_strings("\n".join(["#........."] * 19 + ["#########."]))
    for number in (1, 10_000):  # the top comes first, the piece limit second
        _, lock = lock_on_copy(board, GEEK, I, (9, 18, 0), number)
        assert lock == (TOP_TOUCHED, 1, 0, 19 + 9 + 4, 20)
        g = GameState(GEEK, np.zeros(10_000, np.int8), board, piece=number - 1)
        t = g.apply((9, 18, 0))
        assert (t.over, t.points, t.lines, t.state.end, t.state.score, t.state.clears) == \
            (True, 0, 0, "top_touched", 0, 0)


#: The Geek rules on a board of 4 columns and 5 rows, the spawn at column 1 (the sequence, the
#: offsets and the lock rule unchanged): a handful of pieces reach the top.
TINY = dataclasses.replace(GEEK, name="tiny", width=4, height=5, spawn_x=1)

#: The sequence starts Z, I, O, S (spawn states 0, 1, 2, 3):
#: 1. Z: C1 (state 1), R2, D3: cells (3,2) (3,3) (2,3) (2,4);
#: 2. I: C1 (state 2, vertical), L1, D3: column 0, rows 1..4;
#: 3. O: D2: (1,1) (2,1) (1,2) (2,2); row 2 is full: 12 cells x 1 = 12 points, then cleared;
#: 4. S: R2, D1 (state 3 = state 1's cells): (3,1) (2,1) (2,0) (3,2), filling row 2 and row 0 (the
#:    last empty one): every row occupied, the game ends; the full row scores nothing.
TINY_RECORD = "N,C1,R2,D3,N,C1,L1,D3,N,D2,N,R2,D1"
TINY_BEFORE_LAST = [
    "....",
    "....",
    "###.",
    "#.##",
    "#.#.",
]
TINY_LAST = (3, 1, 1)  # the S's placement (x, y, class)


def test_the_replayer_ends_a_lock_filling_every_row_like_the_lock_rule():
    assert list(TINY.sequence(4)) == [Z, I, 4, 5]
    board = final_board(TINY_RECORD, TINY, pieces=3)
    assert to_strings(board, 4) == TINY_BEFORE_LAST
    placed, lock = lock_on_copy(board, TINY, 5, TINY_LAST, 4)
    assert lock == (TOP_TOUCHED, 1, 0, 12, 5)                    # row 2 full, all 5 rows occupied
    r = replay(TINY_RECORD, TINY, trace=True)
    assert (r.valid, r.score, r.bricks, r.end) == (True, 12, 4, "top_touched")
    assert list(r.score_by_piece) == [0, 0, 0, 12, 12]
    assert tuple(int(v) for v in r.locked[4]) == (5, 3, 3, 1, 1)  # the S in state 3, one full row
    # the game state, placement by placement, ends the same way
    g = GameState.new(TINY, pieces=8)
    for p in [(3, 3, 1), (0, 3, 0), (1, 2, 0)]:
        g = g.apply(p).state
    assert to_strings(g.board, 4) == TINY_BEFORE_LAST and g.score == 12
    t = g.apply(TINY_LAST)
    assert (t.over, t.points, t.lines, t.state.end, t.state.score) == (True, 0, 0, "top_touched", 12)
    assert (t.state.board == placed).all()


def test_the_replayer_judges_the_top_before_the_limit_and_the_limit_before_scoring():
    # with the limit at piece 4, the S still ends the game by the top; at piece 3, the O's full
    # row scores nothing and the game ends there
    r = replay(TINY_RECORD, dataclasses.replace(TINY, piece_limit=4))
    assert (r.score, r.bricks, r.end) == (12, 4, "top_touched")
    three = dataclasses.replace(TINY, piece_limit=3)
    r = replay(TINY_RECORD, three)
    assert (r.score, r.bricks, r.end) == (0, 3, "piece_limit")
    before = final_board(TINY_RECORD, three, pieces=2)
    _, lock = lock_on_copy(before, three, 4, (1, 2, 0), 3)
    assert lock == (PIECE_LIMIT, 1, 0, 12, 4)
    g = GameState.new(three, pieces=3)
    for p in [(3, 3, 1), (0, 3, 0)]:
        g = g.apply(p).state
    t = g.apply((1, 2, 0))
    assert (t.over, t.points, t.state.end, t.state.score) == (True, 0, "piece_limit", 0)
