"""Tests of the plain-Python reference rules (tests/reference.py)."""

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import reference as ref  # noqa: E402

REPLAYS = Path(__file__).resolve().parents[2] / "shared" / "replays"


def test_sequence_shape_counts():
    counts = Counter(ref.geek_sequence(10_000))
    assert [counts[s] for s in range(7)] == [722, 957, 1053, 1325, 1649, 2094, 2200]
    # First pieces: Z, I, O, S, L, Z, S, I
    assert ref.geek_sequence(8) == [6, 0, 4, 5, 1, 6, 5, 0]


def test_shared_replays():
    winner = ref.replay((REPLAYS / "geek-1395326.txt").read_text())
    assert winner == {"valid": True, "error": None, "score": 1_395_326,
                      "pieces": 9_999, "end": "record_end"}
    go_solver = ref.replay((REPLAYS / "geek-881026.txt").read_text())
    assert go_solver == {"valid": True, "error": None, "score": 881_026,
                         "pieces": 10_000, "end": "piece_limit"}


def test_resting_placements_empty_board():
    board = ref.empty_board()
    # O: columns cx = 0..8, all at the bottom.
    o = ref.resting_placements(board, 4, 0)
    assert len(o) == 9
    assert o[frozenset({(0, 19), (0, 18), (1, 18), (1, 19)})] == 4 + 19
    # I: 10 vertical (cy = 18) + 7 horizontal (cx = 1..7, cy = 19).
    i = ref.resting_placements(board, 0, 0)
    assert len(i) == 17
    assert i[frozenset((4, y) for y in range(16, 20))] == 18
    assert i[frozenset((x, 19) for x in range(0, 4))] == 1 + 3 + 19
    assert len(ref.resting_placements(board, 0, 0, max_steps=18)) == 1
    assert len(ref.resting_placements(board, 0, 0, max_steps=19)) == 3
    # T: 8 + 9 + 8 + 9 distinct orientations/columns; S: 8 + 9.
    assert len(ref.resting_placements(board, 3, 0)) == 34
    assert len(ref.resting_placements(board, 5, 1)) == 17


def test_resting_placements_with_obstacles():
    board = ref.empty_board()
    board[19][0] = True
    o = ref.resting_placements(board, 4, 2)
    assert len(o) == 9
    assert o[frozenset({(0, 18), (0, 17), (1, 17), (1, 18)})] == 4 + 18
    board[0][4] = True
    assert ref.resting_placements(board, 4, 0) == {}


def test_lock_counts_before_clearing():
    board = ref.empty_board()
    for x in range(6):
        board[19][x] = True
    board[18][0] = True
    cells = [(6, 19), (7, 19), (8, 19), (9, 19)]
    new_board, c, f, all_rows = ref.lock(board, cells)
    assert (c, f, all_rows) == (11, 1, False)
    assert new_board[19] == [True] + [False] * 9
    assert not any(any(row) for row in new_board[:19])
    assert board[19][6] is False  # input untouched


def test_rejection():
    assert ref.rejection(ref.parse_record("N, D019 ,N,C1,L99")) is None
    for bad in ["D1,N", "N3", "N,D0", "N,L", "N,d19", "N,X3", "N,L-1",
                "N,D1.5", "N,D50,R51", ""]:
        assert ref.rejection(ref.parse_record(bad)) is not None, bad
    assert ref.replay("N,D0")["valid"] is False


def test_replay_quirks():
    # A record ending in N locks at spawn; mid-air locks keep the game going.
    assert ref.replay("N") == {"valid": True, "error": None, "score": 0,
                               "pieces": 1, "end": "record_end"}
    # Z locked in mid-air on rows 0-1 (x = 0..2): top row occupied, no end.
    mid_air = ref.replay("N,L3,D1,N,L3,D19")
    assert (mid_air["pieces"], mid_air["end"]) == (2, "record_end")
    # Z locked at rows 0-1 blocks the I spawn; the counter already went up.
    blocked = ref.replay("N,D1,N")
    assert (blocked["pieces"], blocked["end"]) == (2, "spawn_blocked")
    # Vanishing pieces 1, 4..7; I + O + I fill row 19: 12 cells x 1.
    line = ref.replay("N,N,L3,D19,N,D19,N,N,N,N,N,R3,D19")
    assert (line["score"], line["pieces"], line["end"]) == (12, 8, "record_end")
    # Piece limit: the 10,000th piece scores nothing, locked or vanished.
    assert ref.replay(",".join(["N"] * 10_000))["end"] == "piece_limit"
    extra = ref.replay(",".join(["N"] * 10_001))
    assert (extra["pieces"], extra["end"]) == (10_000, "piece_limit")


def test_top_touched():
    """Five vertical I pieces stacked in column 4 cover rows 0..19."""
    sequence = ref.geek_sequence(52)
    assert [n for n, s in enumerate(sequence) if s == 0] == [1, 7, 14, 31, 51]

    def record(pieces):
        """Non-I pieces vanish; I pieces turn vertical and drop."""
        ops = []
        for n, shape in enumerate(sequence[:pieces]):
            ops.append("N")
            if shape == 0:
                ops += (["C1"] if n % 2 else []) + ["D19"]
        return ",".join(ops)

    result = ref.replay(record(52))
    assert (result["score"], result["pieces"], result["end"]) == (0, 52, "top_touched")
    four = ref.replay(record(32))  # rows 4..19 only
    assert (four["score"], four["pieces"], four["end"]) == (0, 32, "record_end")
