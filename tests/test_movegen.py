"""Move generation against the plain-Python reference (tests/reference.py).

(a) every generated route, replayed step by step by the reference rules, ends exactly on the
    placement's cells; its length is the reference's shortest distance;
(b) the set of placements equals the reference's brute-force set of resting, reachable positions.
"""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import reference as ref
from engine.board import from_strings
from engine.movegen import Scratch, placements, route
from engine.record import piece_operations
from engine.rules import GEEK

SCRATCH = Scratch(GEEK.height)


def ref_board(board):
    return [[bool((int(r) >> x) & 1) for x in range(10)] for r in board]


def cells_of(shape, x, y, s):
    return frozenset((int(x + dx), int(y + dy)) for dx, dy in GEEK.cells[shape, s])


def check_board(board, shape, spawn_state):
    got = placements(board, GEEK, shape, spawn_state, SCRATCH)
    expected = ref.resting_placements(ref_board(board), shape, spawn_state)
    got_cells = [cells_of(shape, *p) for p in got]
    assert len(set(got_cells)) == len(got_cells), "a placement is listed twice"
    assert set(got_cells) == set(expected)
    rb = ref_board(board)
    for p, cells in zip(got, got_cells):
        steps = route(board, GEEK, shape, spawn_state, p, SCRATCH)
        assert len(steps) == expected[cells]
        ops = piece_operations(steps)
        assert frozenset(ref.apply_ops(rb, shape, spawn_state, ops)) == cells


@st.composite
def boards(draw):
    """Boards with a random surface, holes, overhangs and caves (rows above ``top`` empty)."""
    top = draw(st.integers(0, 20))
    density = draw(st.sampled_from([0.3, 0.6, 0.85]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    board = np.zeros(20, np.uint16)
    for y in range(top, 20):
        bits = rng.random(10) < density
        if bits.all():
            bits[rng.integers(10)] = False
        board[y] = sum(1 << x for x in range(10) if bits[x])
    return board


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(board=boards(), shape=st.integers(0, 6), spawn_state=st.integers(0, 3))
def test_placements_match_reference_on_random_boards(board, shape, spawn_state):
    check_board(board, shape, spawn_state)


@pytest.mark.parametrize("shape", range(7))
def test_empty_board_counts(shape):
    board = np.zeros(20, np.uint16)
    counts = {0: 17, 1: 34, 2: 34, 3: 34, 4: 9, 5: 17, 6: 17}
    for state in range(4):
        assert len(placements(board, GEEK, shape, state, SCRATCH)) == counts[shape]
        check_board(board, shape, state)


def test_tuck_under_overhang_is_found():
    # A ledge at columns 0-4 of row 17 covers the empty cells below it; an O can slide under it.
    board = from_strings(
        """
        #####.....
        ..........
        ##......##
        """
    )
    got = {tuple(p) for p in placements(board, GEEK, 4, 0, SCRATCH)}
    # O centre (x, y) covers (x, y-1), (x+1, y-1), (x, y), (x+1, y): it drops at x = 5, then slides
    # left under the ledge along rows 18-19 to x = 2.
    assert (2, 19, 0) in got
    steps = route(board, GEEK, 4, 0, (2, 19, 0), SCRATCH)
    assert piece_operations(steps) == ["R1", "D19", "L3"]
    check_board(board, 4, 0)


def test_blocked_spawn_has_no_placements():
    board = from_strings("\n".join(["#########."] * 20))
    assert len(placements(board, GEEK, 3, 0, SCRATCH)) == 0
    assert ref.resting_placements(ref_board(board), 3, 0) == {}


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(board=boards(), shape=st.integers(0, 6), spawn_state=st.integers(0, 3),
       max_steps=st.sampled_from([3, 12, 21, 26]))
def test_step_limit(board, shape, spawn_state, max_steps):
    """Positions farther than the step limit are not placements (the contest allows 100 steps;
    smaller limits make the cut visible on a 20-row board)."""
    rules = dataclasses.replace(GEEK, max_steps=max_steps)
    got = placements(board, rules, shape, spawn_state, Scratch(20, max_steps))
    expected = ref.resting_placements(ref_board(board), shape, spawn_state, max_steps=max_steps)
    assert {cells_of(shape, *p) for p in got} == set(expected)
