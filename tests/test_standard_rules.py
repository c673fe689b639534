"""The ``standard`` and ``standard_clear_first`` presets (the literature's simplified game) on
hand-made boards and against the plain-Python reading of MdpTetris (standard_reference.py): the
pieces and their (orientation, column) actions, where a dropped piece rests, rows cleared and
their score, each game-over rule, no preview, the features of an afterstate, whole 1-ply games."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import standard_reference as ref
from engine import (GEEK, GOING_ON, STANDARD, STANDARD_CLEAR_FIRST, GameState, from_strings, lock_copy,
                    lock_piece, placements)
from engine.lock import OVERFLOW, lost
from engine.rules import COURSE, SHAPE_NAMES, get_rules
from evaluators import Placement, load_evaluator, registry
from evaluators.features.literature import landing_height_zero_based
from evaluators.features.placement import eroded_cells
from solver import SolverConfig
from solver.online import play_games
from solver.registry import get as get_policy

LETTER = {name: s for s, name in enumerate(SHAPE_NAMES)}
I, L, J, T, O, S, Z = (LETTER[c] for c in "ILJTOSZ")
#: the features standard_reference.py computes on an afterstate
REF_FEATURES = ("row_transitions", "column_transitions", "holes", "wells_empty_below", "hole_depth",
                "rows_with_holes", "max_height", "constant", "pattern_diversity") \
    + tuple(f"column_height_{x}" for x in range(10)) \
    + tuple(f"column_height_diff_{x}" for x in range(9))


def box_cells(rules, shape, state):
    """The engine's cells of a state in MdpTetris's terms: (dx, dy), dy = 0 the box's bottom row."""
    cells = rules.cells[shape, state].tolist()
    h = max(dy for _, dy in cells) + 1
    return frozenset((dx, h - 1 - dy) for dx, dy in cells)


def to_ref(board, height):
    """An engine board (row 0 at the top) as the reference's rows (row 0 on the floor), trimmed."""
    rows = [[bool((int(board[height - 1 - j]) >> x) & 1) for x in range(10)] for j in range(height)]
    while rows and not any(rows[-1]):
        rows.pop()
    return rows


def ref_cells(cells, height):
    """The reference's cells (column, row from the floor) as engine cells (x, y from the top)."""
    return frozenset((x, height - 1 - y) for x, y in cells)


def engine_cells(rules, shape, p):
    x, y, s = (int(v) for v in p)
    return frozenset((x + dx, y + dy) for dx, dy in rules.cells[shape, s].tolist())


def lock_copy_of(board, rules, shape, p, number=1):
    board = np.array(board, np.uint16)
    x, y, s = (int(v) for v in p)
    return board, lock_piece(board, rules.kernel, shape, s, x, y, number)


# ------------------------------------------------------------------------------------------------
# The game as data


def test_presets():
    for rules in (STANDARD, STANDARD_CLEAR_FIRST):
        assert get_rules(rules.name) is rules
        assert (rules.width, rules.height, rules.placement, rules.preview) == (10, 20, "drop", False)
        assert rules.score_table == (0, 1, 2, 3, 4) and not rules.score_by_cells
        assert rules.pieces.kind == "uniform" and rules.piece_limit is None and rules.top_out == "none"
        assert not rules.kernel.preview
    assert (STANDARD.overflow, STANDARD_CLEAR_FIRST.overflow) == ("end", "clear_first")
    small = get_rules("standard_10x10")
    assert small == replace(STANDARD, name="standard_10x10", height=10)
    assert (GEEK.overflow, COURSE.overflow, GEEK.preview, COURSE.preview) == ("discard", "discard", True, True)
    with pytest.raises(ValueError, match="overflow must be one of"):
        replace(STANDARD, overflow="keep")
    with pytest.raises(ValueError, match="width of at least 5"):
        replace(STANDARD_CLEAR_FIRST, width=4)


def test_uniform_pieces_from_a_seed():
    seq = STANDARD.sequence(70_000, seed=3)
    assert (seq == STANDARD.sequence(70_000, seed=3)).all() and not (seq == STANDARD.sequence(70_000, seed=4)).all()
    counts = np.bincount(seq, minlength=7)
    assert abs(counts - 10_000).max() < 400      # 7 x 10,000 draws: a std of about 93 each
    # a game draws them a chunk at a time: the parts joined are the sequence
    stream = STANDARD.pieces.stream(3)
    assert (np.concatenate([stream.take(n) for n in (1, 20_000, 7, 49_992)]) == seq).all()
    geek = GEEK.pieces.stream()
    assert (np.concatenate([geek.take(n) for n in (3, 5_000, 1_997)]) == GEEK.sequence(7_000)).all()


def test_orientations_and_actions_match_mdptetris():
    for letter in "IOTZSJL":
        shape = LETTER[letter]
        mdp = ref.orientations(letter)
        n = len(mdp)
        for k in range(4):  # state k is orientation k mod n
            assert box_cells(STANDARD, shape, k) == mdp[k % n][2], (letter, k)
        assert STANDARD.periods[shape] == n
    # the notes' table: I 17, O 9, T 34, Z 17, S 17, J 34, L 34 actions on the empty board, and the
    # engine's placements are exactly the actions: (state, x) = (orientation, column - 1)
    empty = np.zeros(20, np.uint16)
    for letter, count in zip("IOTZSJL", (17, 9, 34, 17, 17, 34, 34)):
        got = sorted((int(s), int(x) + 1) for x, _, s in placements(empty, STANDARD, LETTER[letter], 0))
        assert got == sorted(ref.actions(letter)) and len(got) == count


# ------------------------------------------------------------------------------------------------
# Hand-made boards: where a piece rests, what it clears and scores, when the game is over

#   x    0123456789        column tops (row from the top): 17 18 17 14 16 18 17 17 17 16
BOARD = """
y14:     ...#......
y15:     ...#......
y16:     ...##....#
y17:     #.###.####
y18:     #########.
y19:     #########.
"""


def board_of(text):
    return from_strings([line.split(":")[-1].strip() for line in text.strip().splitlines()])


def rest(board, rules, shape, state, x):
    """The cells where the piece in ``state`` dropped with its box's left column at ``x`` rests, or
    None when that is no placement."""
    for p in placements(board, rules, shape, 0):
        if (int(p[2]), int(p[0])) == (state, x):
            return engine_cells(rules, shape, p)
    return None


def test_drop_rests_on_the_highest_column_under_the_piece():
    board = board_of(BOARD)
    # T orientation 1 (.X. / XXX) over columns 2..4: its flat row must stay above column 3's top
    # (row 14): row 13, the nose at row 12
    assert rest(board, STANDARD, T, 1, 2) == {(3, 12), (2, 13), (3, 13), (4, 13)}
    # T orientation 3 (XXX / .X.) over columns 0..2: the flat row on columns 0 and 2 (tops at 17)
    # rests at row 16, the nose goes into the notch at (1, 17)
    assert rest(board, STANDARD, T, 3, 0) == {(0, 16), (1, 16), (2, 16), (1, 17)}
    # an O over columns 1..2 rests on column 2 (top 17): rows 15..16; it does not slide into the
    # empty (1, 17) under the overhang
    assert rest(board, STANDARD, O, 0, 1) == {(1, 15), (2, 15), (1, 16), (2, 16)}
    # a vertical I in column 9 stops on (9, 16): the covered cells (9, 18) and (9, 19) stay empty
    assert rest(board, STANDARD, I, 0, 9) == {(9, 12), (9, 13), (9, 14), (9, 15)}
    # every placement of every piece is the reference's drop of the same action
    for letter in "IOTZSJL":
        for x, y, s in placements(board, STANDARD, LETTER[letter], 0):
            move = ref.drop(to_ref(board, 20), letter, int(s), int(x) + 1, 20, False)
            assert engine_cells(STANDARD, LETTER[letter], (x, y, s)) == ref_cells(move["cells"], 20)


def test_rows_cleared_score_one_point_each():
    for lines in (1, 2, 3, 4):
        board = from_strings("\n".join(["#########."] * lines))
        for rules in (STANDARD, STANDARD_CLEAR_FIRST):
            after, lock = lock_copy_of(board, rules, I, (9, 16, 0))   # a vertical I in column 9: rows 16..19
            assert (lock.end, lock.lines, lock.points) == (GOING_ON, lines, lines)   # 0, 1, 2, 3, 4: no multiplier
            # what is left: the I's cells above the cleared rows, moved down to the floor
            assert after.tolist() == [0] * (16 + lines) + [1 << 9] * (4 - lines)
    g = GameState(STANDARD, np.array([I, O], np.int8), from_strings("\n".join(["#########."] * 4)))
    t = g.apply((9, 16, 0))
    assert (t.lines, t.points, t.state.score, t.state.lines, t.over) == (4, 4, 4, 4, False)


def test_a_game_ends_when_no_placement_fits():
    # Every column full to the top but column 4. An O fits nowhere: under the standard rule it has
    # no placement (the game is over, nothing cleared); under clear_first its 9 drops all rest
    # above the board, clear nothing and lose. A vertical I still fits, in column 4, clearing 4.
    board = from_strings("\n".join(["####.#####"] * 20))
    assert len(placements(board, STANDARD, O, 0)) == 0
    cf = placements(board, STANDARD_CLEAR_FIRST, O, 0)
    assert sorted(int(x) for x in cf[:, 0]) == list(range(9)) and set(cf[:, 1].tolist()) == {-2}
    for p in cf:
        _, lock = lock_copy_of(board, STANDARD_CLEAR_FIRST, O, p)
        assert (lock.end, lock.lines, lock.points) == (OVERFLOW, 0, 0)
    assert rest(board, STANDARD, I, 0, 4) == {(4, 16), (4, 17), (4, 18), (4, 19)}
    g = GameState(STANDARD, np.array([O, O], np.int8), board)
    assert g.end is None and len(g.placements()) == 0                   # the spawn is never blocked


def test_overflow_cleared_first_only_under_clear_first():
    # Row 0 misses columns 8 and 9, rows 1..19 only column 4. An O over columns 8..9 rests on row 1:
    # rows -1 and 0. Its lower half completes row 0: under clear_first the row goes first and the
    # upper half moves down into row 0, the game goes on (1 point); the standard game is over.
    board = from_strings("\n".join(["########.."] + ["####.#####"] * 19))
    assert rest(board, STANDARD, O, 0, 8) is None
    assert rest(board, STANDARD_CLEAR_FIRST, O, 0, 8) == {(8, -1), (9, -1), (8, 0), (9, 0)}
    after, lock = lock_copy_of(board, STANDARD_CLEAR_FIRST, O, (8, -1, 0))
    assert (lock.end, lock.lines, lock.points) == (GOING_ON, 1, 1)
    assert after[0] == (1 << 8) | (1 << 9) and (after[1:] == board[1:]).all()
    assert lock.cells == 8 + 19 * 9 + 4                         # counted before the clear, above the top too
    _, lock = lock_copy_of(board, STANDARD, O, (8, -1, 0))      # locked anyway: over, nothing cleared
    assert (lock.end, lock.lines, lock.points) == (OVERFLOW, 0, 0)
    for clear_first, over, lines in ((True, False, 1), (False, True, 0)):
        move = ref.drop(to_ref(board, 20), "O", 0, 9, 20, clear_first)
        assert (move["over"], move["lines"]) == (over, lines)
    assert to_ref(after, 20) == ref.drop(to_ref(board, 20), "O", 0, 9, 20, True)["board"]


def test_overflow_by_more_rows_than_it_clears():
    # Rows 0..2 miss column 9, rows 3..19 column 4. A vertical I in column 9 rests on (9, 3): rows
    # -1..2. It completes rows 0..2: under clear_first three rows go and its top cell lands in row 2
    # (3 points, the game goes on).
    board = from_strings("\n".join(["#########."] * 3 + ["####.#####"] * 17))
    after, lock = lock_copy_of(board, STANDARD_CLEAR_FIRST, I, (9, -1, 0))
    assert (lock.end, lock.lines, lock.points) == (GOING_ON, 3, 3)
    assert after[:3].tolist() == [0, 0, 1 << 9] and (after[3:] == board[3:]).all()
    # Row 0 alone misses column 9: the I rests on (9, 1), rows -3..0, completes one row and still
    # sticks out two: over under both rules (clear_first cleared the row, scoring nothing)
    board = from_strings("\n".join(["#########."] + ["####.#####"] * 19))
    assert rest(board, STANDARD, I, 0, 9) is None
    assert rest(board, STANDARD_CLEAR_FIRST, I, 0, 9) == {(9, -3), (9, -2), (9, -1), (9, 0)}
    _, lock = lock_copy_of(board, STANDARD_CLEAR_FIRST, I, (9, -3, 0))
    assert (lock.end, lock.lines, lock.points) == (OVERFLOW, 1, 0) and lost(lock.end)
    _, lock = lock_copy_of(board, STANDARD, I, (9, -3, 0))
    assert (lock.end, lock.lines, lock.points) == (OVERFLOW, 0, 0) and lost(lock.end)
    move = ref.drop(to_ref(board, 20), "I", 0, 10, 20, True)
    assert (move["over"], move["lines"]) == (True, 1)


def test_the_contest_rule_is_unchanged():
    # Under the Geek rules a piece's cells above the top are dropped and the lock goes on
    # (GEEK_RULES.md; pieces may lock mid-air): a vertical I centred at (9, 1) covers rows -1..2
    board = from_strings("#########.")
    after, lock = lock_copy_of(board, GEEK, I, (9, 1, 0))
    assert (lock.end, lock.lines, lock.cells) == (GOING_ON, 0, 9 + 3)
    assert after[:3].tolist() == [1 << 9] * 3 and (after[3:] == board[3:]).all()


# ------------------------------------------------------------------------------------------------
# No preview


def one_ply(rules, evaluator="dellacherie", policy="one_ply"):
    config = SolverConfig(policy=policy, rules="standard", evaluator=evaluator, pieces=1, threads=1)
    return get_policy(policy).policy(config, rules, load_evaluator(evaluator))


def test_no_preview_reaches_the_policy():
    small = replace(STANDARD, height=8)
    shown = replace(small, preview=True)
    plain = play_games(one_ply(small), range(5), 400)
    blind = play_games(one_ply(small, policy="preview"), range(5), 400)
    seeing = play_games(one_ply(shown, policy="preview"), range(5), 400)
    # without a preview, 1-ply + preview is 1-ply: the same games; shown one, it plays otherwise
    assert (blind.scores == plain.scores).all() and (blind.pieces == plain.pieces).all()
    assert (seeing.scores != plain.scores).any() or (seeing.pieces != plain.pieces).any()


# ------------------------------------------------------------------------------------------------
# Against the reference: random boards and actions, whole games


@st.composite
def stacks(draw):
    """A 10 x 20 board as games leave them: every row below the top holds a cell, none is full."""
    height = 20
    top = draw(st.integers(0, 20))
    rows = [0] * top
    for _ in range(top, height):
        r = draw(st.integers(1, 1022))
        dense = draw(st.booleans())
        if dense:
            r |= draw(st.integers(0, 1023))
            if r == 1023:
                r &= ~(1 << draw(st.integers(0, 9)))
        rows.append(r)
    return np.array(rows, np.uint16)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(stacks(), st.sampled_from("IOTZSJL"), st.integers(0, 3), st.integers(1, 10), st.booleans())
def test_every_action_against_the_reference(board, letter, orientation, column, clear_first):
    rules = STANDARD_CLEAR_FIRST if clear_first else STANDARD
    shape = LETTER[letter]
    n = len(ref.orientations(letter))
    orientation %= n
    w = ref.orientations(letter)[orientation][0]
    column = min(column, 11 - w)
    move = ref.drop(to_ref(board, 20), letter, orientation, column, 20, clear_first)
    offered = {(int(s), int(x)): int(y) for x, y, s in placements(board, rules, shape, 0)}
    x = column - 1
    y = min(yy for _, yy in ref_cells(move["cells"], 20))  # the box's top row (every state's anchor)
    inside = y >= 0
    # offered when it rests inside the board, or anywhere under clear_first (the lock decides)
    assert offered.get((orientation, x)) == (y if inside or clear_first else None)
    assert engine_cells(rules, shape, (x, y, orientation)) == ref_cells(move["cells"], 20)
    locked = np.zeros(20, np.uint16)
    cleared = np.zeros(20, np.uint16)
    lock = lock_copy(np.array(board, np.uint16), rules.kernel, shape, orientation, x, y, 1, locked, cleared)
    assert lost(lock.end) == move["over"]
    assert (lock.end == GOING_ON) == (not move["over"])
    if move["over"]:
        return
    assert (lock.lines, lock.points) == (move["lines"], move["lines"])
    assert to_ref(cleared, 20) == move["board"]
    # the afterstate's features, and the two placement features
    expected = ref.features(move["board"], 20)
    got = {name: registry.measure(name, cleared, 10) for name in REF_FEATURES}
    assert got == expected
    p = Placement(np.array(board, np.uint16), locked, cleared, rules.cells[shape, orientation], x, y, lock.lines,
                  lock.points, 10)
    assert landing_height_zero_based(p) == move["landing"]
    assert eroded_cells(p) == move["eroded"]


WEIGHTS = {"landing_height_zero_based": -1, "eroded_cells": 1, "row_transitions": -1, "column_transitions": -1,
           "holes": -4, "wells_empty_below": -1}


@pytest.mark.parametrize("clear_first", [False, True])
@pytest.mark.parametrize("height", [5, 6])
def test_whole_dellacherie_games_against_the_reference(height, clear_first):
    # Dellacherie's 1-ply player on small boards, where games end quickly: the same decisions (ties
    # to the first (orientation, column)), the same rows, the same game over. When every action
    # ends the game, MdpTetris still plays its first one and counts what it clears; our games end
    # before it: the reference reports those rows apart (0 under the standard rule).
    ev = load_evaluator("dellacherie")
    assert {n: t.weight for n, t in ev.weights.items()} == WEIGHTS and ev.tie_break == "state_then_column"
    rules = replace(STANDARD_CLEAR_FIRST if clear_first else STANDARD, height=height)
    policy = one_ply(rules)
    for seed in range(4):
        letters = [SHAPE_NAMES[s] for s in rules.sequence(400, seed)]
        rows, moves, ended, forced = ref.play(letters, WEIGHTS, height, clear_first)
        assert ended, "the game should end on so small a board"
        g = play_games(policy, [seed], 400)
        assert (int(g.scores[0]), int(g.pieces[0]), g.ends[0]) == (rows, moves, "stuck")
        if not clear_first:
            assert forced == 0


@pytest.mark.parametrize("clear_first", [False, True])
def test_whole_bcts_games_against_the_reference(clear_first):
    # BCTS's weights are not integers: the engine sums the terms in its own order, MdpTetris in its
    # file's, and a tie within rounding could go another way; none does in these games
    weights = {n: t.weight for n, t in load_evaluator("bcts").weights.items()}
    rules = replace(STANDARD_CLEAR_FIRST if clear_first else STANDARD, height=6)
    policy = one_ply(rules, "bcts")
    for seed in range(3):
        letters = [SHAPE_NAMES[s] for s in rules.sequence(400, seed)]
        rows, moves, ended, _ = ref.play(letters, weights, 6, clear_first)
        g = play_games(policy, [seed], 400)
        assert (int(g.scores[0]), int(g.pieces[0]), g.ends[0]) == (rows, moves, "stuck" if ended else "capped")
