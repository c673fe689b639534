"""The course preset: drop-only placements against the plain-Python reading of the protocol."""

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import course_reference as ref
from engine import COURSE, GameState
from engine.board import from_strings
from engine.movegen import capacity, placements, scratch
from engine.movegen.generators import lowest_placements_into
from engine.rules import SHAPE_NAMES

SCRATCH = scratch(COURSE)


def ref_set(board):
    return {(x, y) for y, r in enumerate(board) for x in range(10) if (int(r) >> x) & 1}


def engine_cells(shape, p):
    x, y, s = (int(v) for v in p)
    return frozenset((x + dx, y + dy) for dx, dy in COURSE.cells[shape, s])


def reference_drops(board, letter):
    out = set()
    for r in (0, 90, 180, 270):
        for x in range(10):
            c = ref.drop(board, letter, r, x)
            if c is not None:
                out.add(frozenset(c))
    return out


def check(board, shape):
    found = placements(board, COURSE, shape, 0, SCRATCH)
    got = [engine_cells(shape, p) for p in found]
    assert len(set(got)) == len(got), "a placement is listed twice"
    assert set(got) == reference_drops(ref_set(board), SHAPE_NAMES[shape])
    # a dropped piece has one placement per (state, column): the lowest ones are all of them
    out = np.zeros((capacity(COURSE.height, COURSE.width), 3), np.int64)
    n = lowest_placements_into(np.ascontiguousarray(board, np.uint16), COURSE.kernel, shape, 0, SCRATCH, out)
    assert out[:n].tolist() == found.tolist()


def test_matrices_match_the_rules_page():
    for s, letter in enumerate(SHAPE_NAMES):
        for k in range(4):
            assert frozenset(map(tuple, COURSE.cells[s, k].tolist())) == ref.MATRICES[letter][k]


def test_empty_board_counts():
    board = np.zeros(20, np.uint16)
    # distinct shapes x columns: I 7 + 10, O 9, S/Z 8 + 9, T/L/J 4 x 8 or 9
    counts = [len(placements(board, COURSE, s, 0, SCRATCH)) for s in range(7)]
    assert counts == [17, 34, 34, 34, 9, 17, 17]
    for s in range(7):
        check(board, s)


def test_no_slide_under_an_overhang():
    board = from_strings(["#.........", "#.........", "..........", "##.#######"])
    for s in range(7):
        check(board, s)
    cells = {engine_cells(0, p) for p in placements(board, COURSE, 0, 0, SCRATCH)}
    assert frozenset({(2, 16), (2, 17), (2, 18), (2, 19)}) in cells  # the vertical I into the slot
    overhang = from_strings(["###.......", "..........", "..........", ".........."])
    ps = placements(overhang, COURSE, 4, 0, SCRATCH)  # O: nothing goes under the roof
    assert len(ps) == 9
    assert all(y < 16 for p in ps for x, y in engine_cells(4, p) if x < 3)  # nothing under the roof
    check(overhang, 4)


def test_piece_that_fits_nowhere():
    rows = ["#########."] * 19 + [".#########"]
    board = from_strings(["....#.....", *rows[:19]])
    # an O cannot enter the single-cell well in column 9 nor stay above the board
    assert len(placements(board, COURSE, 4, 0, SCRATCH)) == 0
    assert not ref.any_fit(ref_set(board), "O")
    g = GameState.new(COURSE, sequence=np.array([4, 4], np.int8))
    g = g.__class__(COURSE, g.sequence, board)
    assert g.end is None  # drop-only rules never block the spawn: the piece simply has no placement
    assert len(g.placements()) == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 1023), min_size=20, max_size=20), st.integers(0, 19), st.integers(0, 6))
def test_random_boards(rows, empty_top, shape):
    board = np.array([0] * empty_top + rows[empty_top:], np.uint16)
    check(board, shape)


def test_course_game_scores_the_classic_table():
    board = from_strings(["#########."] * 4)
    g = GameState.new(COURSE, sequence=np.array([0, 0], np.int8))
    g = g.__class__(COURSE, g.sequence, board)
    p = [p for p in g.placements() if p[2] == 0 and p[0] + COURSE.cells[0, 0, 0, 0] == 9][0]
    t = g.apply(p)
    assert (t.lines, t.points) == (4, 55)
