"""Move generation against the plain-Python reference (tests/reference.py).

The engine searches a piece's distinct state classes (`Rules.periods`: O one, I, S, Z two); the
reference searches the four states, one single step at a time. They must agree exactly:

(a) ``placements`` is the reference's set of resting positions reachable within the step limit,
    each listed once under the lowest state with its cells, ordered by state, then y, then x;
(b) ``lowest_placements_into`` is the lowest placement of each (state, column) of that list, in the
    same order;
(c) every route, replayed step by step by the reference rules, ends on the placement's cells, and
    its length is the reference's shortest distance.
"""

import contextlib
import dataclasses
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import reference as ref
from engine import final_board
from engine.board import from_strings
from engine.movegen import capacity, placements, route, scratch
from engine.movegen.generators import lowest_placements_into
from engine.record import piece_operations
from engine.rules import GEEK

SCRATCH = scratch(GEEK)
ROUTES = scratch(GEEK, routes=True)
RECORDS = ("geek-1395326.txt", "geek-881026.txt")


def ref_board(board):
    return [[bool((int(r) >> x) & 1) for x in range(ref.WIDTH)] for r in board]


def cells_of(shape, x, y, s):
    """Cells of an engine placement, by the reference's own offset table."""
    return frozenset(ref.cells_of(shape, int(s), int(x), int(y)))


def as_row(shape, cells):
    """The engine's row (x, y, state) for a set of cells: the lowest state having those cells, and
    its centre."""
    for s in range(4):
        offsets = ref.SHAPE_CELLS[shape][s]
        x = min(c[0] for c in cells) - min(d[0] for d in offsets)
        y = min(c[1] for c in cells) - min(d[1] for d in offsets)
        if frozenset(ref.cells_of(shape, s, x, y)) == cells:
            return (x, y, s)
    raise AssertionError(f"no state of shape {shape} has the cells {sorted(cells)}")


def reference_rows(board, shape, spawn_state, max_steps=ref.MAX_STEPS_PER_PIECE):
    """The reference's placements as the engine lists them (ordered by state, y, x), and the
    distance of each."""
    found = ref.resting_placements(ref_board(board), shape, spawn_state, max_steps=max_steps)
    rows = {as_row(shape, cells): d for cells, d in found.items()}
    return sorted(rows, key=lambda r: (r[2], r[1], r[0])), rows


@contextlib.contextmanager
def reference_height(height):
    """The reference reads its board height from a module constant: change it for a while."""
    old = ref.HEIGHT
    ref.HEIGHT = height
    try:
        yield
    finally:
        ref.HEIGHT = old


def lowest_of(rows):
    """The rows that are the lowest (largest y) of their (state, column), in their order."""
    lowest = {}
    for x, y, s in rows:
        lowest[(s, x)] = max(lowest.get((s, x), y), y)
    return [(x, y, s) for x, y, s in rows if y == lowest[(s, x)]]


def engine_lowest(board, rules, shape, spawn_state, sc):
    out = np.zeros((capacity(rules.height, rules.width), 3), np.int64)
    n = lowest_placements_into(np.ascontiguousarray(board, np.uint16), rules.kernel, shape, spawn_state, sc, out)
    return [tuple(r) for r in out[:n].tolist()]


def check_board(board, shape, spawn_state, rules=GEEK, routes=True):
    """(a), (b), and with ``routes`` (c), for one board, shape and spawn state."""
    sc = SCRATCH if rules is GEEK else scratch(rules)
    got = [tuple(p) for p in placements(board, rules, shape, spawn_state, sc).tolist()]
    expected, distance = reference_rows(board, shape, spawn_state, rules.max_steps)
    assert got == expected
    assert engine_lowest(board, rules, shape, spawn_state, sc) == lowest_of(expected)
    if not routes:
        return
    rb = ref_board(board)
    for p in got:
        steps = route(board, rules, shape, spawn_state, p, ROUTES if rules is GEEK else scratch(rules, routes=True))
        assert len(steps) == distance[p]
        ops = piece_operations(steps)
        assert frozenset(ref.apply_ops(rb, shape, spawn_state, ops)) == cells_of(shape, *p)


@st.composite
def random_boards(draw):
    """Boards with a random surface, holes, overhangs and caves: rows above ``top`` empty, the rest
    random at a random density (never a full row)."""
    top = draw(st.integers(0, 20))
    density = draw(st.one_of(st.sampled_from([0.3, 0.6, 0.85]), st.floats(0.05, 0.95)))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    board = np.zeros(20, np.uint16)
    for y in range(top, 20):
        bits = rng.random(10) < density
        if bits.all():
            bits[rng.integers(10)] = False
        board[y] = sum(1 << x for x in range(10) if bits[x])
    return board


@lru_cache(maxsize=None)
def record_text(path):
    return path.read_text()


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(board=random_boards())
def test_placements_match_reference_on_random_boards(board):
    for shape in range(7):
        for spawn_state in range(4):
            check_board(board, shape, spawn_state, routes=spawn_state == 0)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(record=st.sampled_from(RECORDS), pieces=st.integers(1, 9999))
def test_placements_match_reference_on_real_boards(replays_dir, record, pieces):
    board = final_board(record_text(replays_dir / record), GEEK, pieces=pieces)
    for shape in range(7):
        for spawn_state in range(4):
            check_board(board, shape, spawn_state, routes=spawn_state == pieces % 4)


@pytest.mark.parametrize("shape", range(7))
def test_empty_board_counts(shape):
    board = np.zeros(20, np.uint16)
    counts = {0: 17, 1: 34, 2: 34, 3: 34, 4: 9, 5: 17, 6: 17}
    for state in range(4):
        assert len(placements(board, GEEK, shape, state, SCRATCH)) == counts[shape]
        check_board(board, shape, state)


def test_states_are_listed_under_their_class():
    # I, S, Z list states 0 and 1 only, O state 0 only, whatever the spawn state; L, J, T all four.
    board = np.zeros(20, np.uint16)
    assert list(GEEK.periods) == [2, 4, 4, 4, 1, 2, 2]
    for shape in range(7):
        for state in range(4):
            listed = set(placements(board, GEEK, shape, state, SCRATCH)[:, 2].tolist())
            assert listed == set(range(GEEK.periods[shape]))


def test_tuck_under_overhang_is_found():
    # A ledge at columns 0-4 of row 17 covers the empty cells below it; an O can slide under it.
    board = from_strings(
        """
        #####.....
        ..........
        ##......##
        """
    )
    got = {tuple(p) for p in placements(board, GEEK, 4, 0, SCRATCH).tolist()}
    # O centre (x, y) covers (x, y-1), (x+1, y-1), (x, y), (x+1, y): it drops at x = 5, then slides
    # left under the ledge along rows 18-19 to x = 2.
    assert (2, 19, 0) in got
    steps = route(board, GEEK, 4, 0, (2, 19, 0), ROUTES)
    assert piece_operations(steps) == ["R1", "D19", "L3"]
    check_board(board, 4, 0)
    # the tuck is below the ledge's resting O at x = 2 (y = 16): the lowest of column 2 is the tuck
    assert (2, 16, 0) in got
    lowest = engine_lowest(board, GEEK, 4, 0, SCRATCH)
    assert (2, 19, 0) in lowest and (2, 16, 0) not in lowest


def test_blocked_spawn_has_no_placements():
    board = from_strings("\n".join(["#########."] * 20))
    assert len(placements(board, GEEK, 3, 0, SCRATCH)) == 0
    assert engine_lowest(board, GEEK, 3, 0, SCRATCH) == []
    assert ref.resting_placements(ref_board(board), 3, 0) == {}


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(board=random_boards(), shape=st.integers(0, 6), spawn_state=st.integers(0, 3),
       max_steps=st.sampled_from([3, 12, 21, 26]))
def test_step_limit(board, shape, spawn_state, max_steps):
    """Positions farther than the step limit are not placements (the contest allows 100 steps;
    smaller limits make the cut visible on a 20-row board)."""
    rules = dataclasses.replace(GEEK, max_steps=max_steps)
    check_board(board, shape, spawn_state, rules)


def maze(height):
    """A serpentine for a vertical I on a 10-column board of ``height`` rows: four open rows, then
    a wall row with a one-cell gap, alternately at column 0 and column 9 (the rows below the last
    wall open too). Each level costs the I five steps down and nine across."""
    board = np.zeros(height, np.uint16)
    gap = 0
    for y in range(4, height - 1, 5):
        board[y] = 0b1111111111 & ~(1 << gap)
        gap = 9 - gap
    return board


def test_the_hundred_step_limit_cuts_on_a_tall_maze():
    # On a 60-row board the vertical I's resting positions deep in the maze lie more than 100
    # steps from the spawn: the default limit (100) cuts them, exactly as the reference does.
    rules = dataclasses.replace(GEEK, height=60)
    board = maze(60)
    with reference_height(60):
        cut, distance = reference_rows(board, 0, 0, max_steps=100)
        uncut, far = reference_rows(board, 0, 0, max_steps=400)
        assert max(distance.values()) <= 100 < max(far.values())
        assert set(cut) < set(uncut)                     # the limit binds here
        assert rules.max_steps == 100
        for state in range(4):
            check_board(board, 0, state, rules)
            check_board(board, 0, state, dataclasses.replace(rules, max_steps=400), routes=False)
