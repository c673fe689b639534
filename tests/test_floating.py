"""Floating placements (``Rules.placement == "floating"``, `Rules.floating`): the contest locks a
piece where it stands when the next ``N`` comes, so a piece can lock in mid-air where it completes
rows. The engine's list must be the reference's: every resting position reachable within the step
limit (as `tests/test_movegen.py` checks), plus every reached position that does not rest and
completes at least one row (the spawn position excepted: a piece given no operation vanishes), each
cell set once under its lowest state; the route to each replays, step by step by the reference
rules, to its cells in the reference's shortest distance, and its lock clears rows."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import reference as ref
from engine import final_board
from engine.board import from_strings
from engine.lock import lock_piece
from engine.movegen import capacity, placements, route, scratch
from engine.movegen.generators import lowest_placements_into
from engine.record import piece_operations
from engine.rules import GEEK
from test_movegen import RECORDS, as_row, cells_of, lowest_of, random_boards, record_text, ref_board

FLOATING = GEEK.floating()
SCRATCH = scratch(FLOATING)
ROUTES = scratch(FLOATING, routes=True)


def reference_floating(board, shape, spawn_state, min_rows=1):
    """The reference's floating placements (mid-air locks clearing at least ``min_rows`` rows) as
    engine rows, ordered by state, y, x; the resting ones among them; and each one's shortest
    distance."""
    rb = ref_board(board)
    reached = ref.reachable_positions(rb, shape, spawn_state)
    distance, resting = {}, set()
    for (s, x, y), d in reached.items():
        cells = frozenset(ref.cells_of(shape, s, x, y))
        rests = not ref.is_valid(rb, shape, s, x, y + 1)
        if not rests and (d == 0 or ref.lock(rb, cells)[2] < min_rows):
            continue  # neither resting nor a mid-air clear
        row = as_row(shape, cells)
        distance[row] = min(distance.get(row, d), d)
        if rests:
            resting.add(row)
    return sorted(distance, key=lambda r: (r[2], r[1], r[0])), resting, distance


def engine_lowest(board, rules, shape, spawn_state):
    out = np.zeros((capacity(20, 10), 3), np.int64)
    n = lowest_placements_into(np.ascontiguousarray(board, np.uint16), rules.kernel, shape, spawn_state, SCRATCH, out)
    return [tuple(r) for r in out[:n].tolist()]


def check_board(board, shape, spawn_state, routes=True, min_rows=1):
    rules = GEEK.floating(min_rows)
    got = [tuple(p) for p in placements(board, rules, shape, spawn_state, SCRATCH).tolist()]
    expected, resting, distance = reference_floating(board, shape, spawn_state, min_rows)
    assert got == expected
    # lowest: the lowest resting placement of each (state, column), and every mid-air clear
    lowest = set(lowest_of([r for r in expected if r in resting]))
    assert engine_lowest(board, rules, shape, spawn_state) == [r for r in expected if r in lowest or r not in resting]
    if not routes:
        return
    rb = ref_board(board)
    for p in got:
        if p in resting:
            continue
        steps = route(board, FLOATING, shape, spawn_state, p, ROUTES)
        assert len(steps) == distance[p]
        ends = frozenset(ref.apply_ops(rb, shape, spawn_state, piece_operations(steps)))
        assert ends == cells_of(shape, *p)
        locked, cells, full, _ = ref.lock(rb, ends)
        lock = lock_piece(board.copy(), FLOATING.kernel, shape, p[2], p[0], p[1], 1)
        assert full > 0 and (lock.lines, lock.cells) == (full, cells)


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(board=random_boards())
def test_floating_placements_match_reference_on_random_boards(board):
    for shape in range(7):
        for spawn_state in range(4):
            check_board(board, shape, spawn_state, routes=spawn_state == 0)


def stack_board(rng, top):
    """A stack as a beam builds them, where mid-air clears abound: rows from ``top`` down, each
    with one or two empty cells (most in one well column), a few cells on top."""
    board = np.zeros(20, np.uint16)
    well = int(rng.integers(10))
    for y in range(top, 20):
        holes = {well if rng.random() < 0.7 else int(rng.integers(10))}
        if rng.random() < 0.2:
            holes.add(int(rng.integers(10)))
        board[y] = 0b1111111111 & ~sum(1 << x for x in holes)
    for x in rng.choice(10, size=int(rng.integers(0, 4)), replace=False):
        board[top - 1] |= 1 << int(x)
    return board


@st.composite
def stacks(draw):
    return stack_board(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), draw(st.integers(2, 19)))


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(board=stacks(), min_rows=st.integers(1, 4))
def test_floating_placements_match_reference_on_stacks(board, min_rows):
    for shape in range(7):
        check_board(board, shape, int(board[19]) % 4, routes=min_rows == 1, min_rows=min_rows)


def test_stacks_offer_mid_air_clears():
    """The strategy above exercises what it is for: most of its boards offer mid-air clears."""
    offered = 0
    for seed in range(20):
        board = stack_board(np.random.default_rng(seed), 10)
        offered += any(len(placements(board, FLOATING, sh, 0)) > len(placements(board, GEEK, sh, 0))
                       for sh in range(7))
    assert offered >= 6  # 8 of these 20 boards


@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(record=st.sampled_from(RECORDS), pieces=st.integers(1, 9999))
def test_floating_placements_match_reference_on_real_boards(replays_dir, record, pieces):
    board = final_board(record_text(replays_dir / record), GEEK, pieces=pieces)
    for shape in range(7):
        check_board(board, shape, pieces % 4)


def test_an_i_clears_the_top_four_rows_of_a_six_deep_well_in_mid_air():
    board = from_strings("\n".join(["#########."] * 6))
    resting = {tuple(p) for p in placements(board, GEEK, 0, 0).tolist()}
    floating = {tuple(p) for p in placements(board, FLOATING, 0, 0).tolist()}
    # the vertical I (cells y-2 .. y+1 of column 9) rests at y = 18; above it, each of y = 13 .. 17
    # completes 1, 2, 3, 4, 4 rows of the well
    assert (9, 18, 0) in resting
    assert floating - resting == {(9, y, 0) for y in range(13, 18)}
    lines = []
    for y in range(13, 18):
        b = board.copy()
        lines.append(lock_piece(b, FLOATING.kernel, 0, 0, 9, y, 1).lines)
    assert lines == [1, 2, 3, 4, 4]
    # y = 16 clears rows 14-17 and leaves the well's bottom two cells empty under the stack's rest
    b = board.copy()
    lock = lock_piece(b, FLOATING.kernel, 0, 0, 9, 16, 1)
    assert (lock.lines, lock.points, lock.cells) == (4, 10 * 58, 58)
    assert b[:18].tolist() == [0] * 18 and b[18:].tolist() == [0b0111111111] * 2
    steps = route(board, FLOATING, 0, 0, (9, 16, 0))
    assert piece_operations(steps) == ["R5", "D16"]
    # with a floor on the rows cleared, only the locks clearing that many are offered
    for k, ys in ((2, range(14, 18)), (3, range(15, 18)), (4, range(16, 18))):
        offered = {tuple(p) for p in placements(board, GEEK.floating(k), 0, 0).tolist()}
        assert offered - resting == {(9, y, 0) for y in ys}


def test_the_rules_say_what_they_offer():
    assert FLOATING.placement == "floating" and FLOATING.name == "geek+floating"
    assert FLOATING.floating() == FLOATING and GEEK.floating(4).floating_min_rows == 4
    assert (FLOATING.kernel.floating, GEEK.floating(3).kernel.floating, GEEK.kernel.floating) == (1, 3, 0)
    with pytest.raises(ValueError, match="min_rows must be 1..4"):
        GEEK.floating(5)
    with pytest.raises(ValueError, match="dropping"):
        from engine.rules import STANDARD
        STANDARD.floating()


def mid_air_locks(record):
    """Locks of a record at positions that do not rest, by the reference rules: {piece number
    (1-based): (state, x, y)}."""
    ops = ref.parse_record(record)
    sequence = ref.geek_sequence(ref.MAX_PIECES)
    board, found = ref.empty_board(), {}
    pieces = []
    for op in ops:
        if op == "N":
            pieces.append([])
        else:
            pieces[-1].append(op)
    for t, steps in enumerate(pieces):
        shape, state, cx, cy = sequence[t], t % 4, ref.SPAWN_X, ref.SPAWN_Y
        for op in steps:
            letter, n = ref._split_op(op)
            for _ in range(n):
                state, cx, cy = ref.step(board, shape, state, cx, cy, letter)
        if ref.is_valid(board, shape, state, cx, cy + 1):
            found[t + 1] = (state, cx, cy)
        board = ref.lock(board, ref.cells_of(shape, state, cx, cy))[0]
    return found


def test_the_beam_locks_in_mid_air_and_its_record_replays(tmp_path):
    """With ``floating: true`` the beam takes mid-air clears (9 of them in 400 pieces at W = 30);
    the record it writes passed the project's replayer check (`solve` raises otherwise), the
    plain-Python reference replays it to the same score, and the viewer draws each piece where it
    locked, in mid-air."""
    from experiments.view import load
    from solver import SolverConfig, solve

    config = SolverConfig(policy="beam", evaluator="chys_quality", pieces=400, threads=1, floating=True,
                          beam={"width": 30, "placements": "lowest"})
    result = solve(config)
    verdict = ref.replay(result.record)
    assert verdict["valid"] and verdict["score"] == result.score and verdict["pieces"] == 400
    mid_air = mid_air_locks(result.record)
    assert len(mid_air) >= 5
    (tmp_path / "record.txt").write_text(result.record)
    locked = load(tmp_path / "record.txt").result.locked  # per piece: shape, state, x, y, rows
    for n, (state, x, y) in mid_air.items():
        assert (locked[n, 1], locked[n, 2], locked[n, 3]) == (state, x, y) and locked[n, 4] > 0
    assert mid_air_locks(solve(config.model_copy(update={"floating": False})).record) == {}


def test_floating_is_refused_for_drop_rules():
    from pydantic import ValidationError

    from solver import SolverConfig

    with pytest.raises(ValidationError, match="floating: rules 'standard' place pieces by dropping"):
        SolverConfig(policy="one_ply", rules="standard", evaluator="dellacherie", pieces=10, floating=True)


def test_a_placement_at_the_spawn_gets_one_d_step_so_that_it_locks():
    """A piece given no operation before the next N vanishes (GEEK_RULES.md), so a placement at
    the spawn position itself (it rests there) is written as one D step, which the replay consumes
    without moving the piece: the record then replays to the path's score. On a 4-row board with no
    top-out rule: a vertical Z at (4, 2) blocks row 1 under the horizontal I's spawn."""
    import dataclasses

    from engine import encode, replay
    from engine.movegen.tables import STEP_D
    from solver.record import routes_along

    rules = dataclasses.replace(GEEK, name="geek4", height=4, top_out="none")
    sequence = rules.sequence(2)
    assert sequence.tolist() == [6, 0]  # Z, then I (spawning in state 1, horizontal)
    path = np.array([[4, 2, 1], [4, 0, 1]])
    assert (4, 0, 1) in {tuple(p) for p in placements(np.array([0, 0b10000, 0b11000, 0b1000], np.uint16), rules, 0, 1).tolist()}
    routes = routes_along(rules, sequence, path)
    assert routes[1] == [STEP_D]
    verdict = replay(encode(routes), rules)
    assert verdict.valid and verdict.bricks == 2
    board = final_board(encode(routes), rules)
    assert board.tolist() == [0b1111000, 0b10000, 0b11000, 0b1000]  # the I locked at the spawn, row 0
