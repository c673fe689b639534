"""The profile DP: profile packing, transitions and their scores against the engine, base
readiness, traced-back records, the threshold stop, thread independence, links on disk, config
errors."""

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import GEEK, from_strings, lock_piece, placements, replay
from engine.board import count_and_clear, place
from solver import SolverConfig, Threshold, solve
from solver.profile_dp import (
    BITS, MOVE_LEFT, MOVE_STATE, MOVE_X, States, Window, base_ready, drop, drop_tables, expand_layer, free_rows,
    heights_of, pack_profile, profile_board, profile_of, unpack_profile, window_heights,
)

MOVES = drop_tables(GEEK)
WINDOW = 10
CAP = WINDOW - free_rows(GEEK)


def window(floor=0, base_cells=0):
    return Window(WINDOW, 10, CAP, floor, base_cells)


@settings(deadline=None)
@given(st.lists(st.integers(0, 31), min_size=10, max_size=10))
def test_profile_packing_round_trips(heights):
    h = np.array(heights, np.int64)
    p = pack_profile(h, 10)
    assert p == profile_of(heights) and 0 <= p < 1 << (BITS * 10)
    out = np.zeros(10, np.int64)
    unpack_profile(p, 10, out)
    assert list(out) == heights == heights_of(p, 10)


def test_drop_tables_count_distinct_drops():
    # I: 7 flat + 10 upright; O: 9; S, Z: 8 + 9; L, J, T: 8 + 9 + 8 + 9
    assert list(MOVES.count) == [17, 34, 34, 34, 9, 17, 17]
    assert free_rows(GEEK) == 3


def _hole_free(board, window):
    h = np.zeros(10, np.int64)
    return window_heights(board, window, 10, h), h


def _floor(base):
    return sum(1 << i for i in range(10) if not (int(base[0]) >> i) & 1)


def _check_drop(heights, shape, m, base):
    """Drop move m on the profile's board with the engine: returns None when the DP refuses it,
    else asserts the DP's child equals the engine's board and returns the placement."""
    moves = MOVES.moves
    h = np.array(heights, np.int64)
    nh = np.zeros(10, np.int64)
    floor = _floor(base)
    cy, cells, f = drop(h, nh, MOVES, window(floor), shape, m)
    if cy < 0:
        return None
    s, cx = int(moves[shape, m, MOVE_STATE]), int(moves[shape, m, MOVE_X])
    board = profile_board(profile_of(heights), base, WINDOW, 10)
    locked = board.copy()
    place(locked, GEEK.cells[shape, s], cx, cy)
    assert int(np.unpackbits(locked.view(np.uint8)).sum()) == int(np.unpackbits(board.view(np.uint8)).sum()) + 4
    c, full, _ = count_and_clear(locked, 1023)
    assert (full, c) == (f, cells + sum(bin(int(r)).count("1") for r in base))
    ok, child = _hole_free(locked, WINDOW)
    assert ok and list(child) == list(nh)  # no hole, and the DP's profile
    assert (locked[WINDOW:] == base).all()  # the base is untouched
    assert child.max() <= CAP and all(child[i] >= 1 for i in range(10) if (floor >> i) & 1)
    return cx, cy, s


BASE = from_strings("""
####.#####
#.########
""", height=2)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, CAP), min_size=10, max_size=10), st.integers(0, 6), st.integers(0, 33),
       st.integers(0, 3))
def test_transitions_keep_the_surface_hole_free_and_match_the_engine(heights, shape, m, spawn):
    heights[4] = max(heights[4], 1)  # the base's top gap (column 4) stays covered
    m %= int(MOVES.count[shape])
    got = _check_drop(heights, shape, m, BASE)
    board = profile_board(profile_of(heights), BASE, WINDOW, 10)
    found = {tuple(p) for p in placements(board, GEEK, shape, spawn)}
    if got is not None:
        assert got in found  # reachable and resting on the real board


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, CAP), min_size=10, max_size=10), st.integers(0, 6), st.integers(0, 3))
def test_every_hole_free_placement_is_a_transition(heights, shape, spawn):
    """Every engine placement whose lock leaves the window hole-free (before clearing), below the
    top row, and whose cleared board stays under the cap and covers the base is a DP move."""
    heights[4] = max(heights[4], 1)
    dp = {_check_drop(heights, shape, m, BASE) for m in range(int(MOVES.count[shape]))} - {None}
    board = profile_board(profile_of(heights), BASE, WINDOW, 10)
    for x, y, s in placements(board, GEEK, shape, spawn):
        locked = board.copy()
        place(locked, GEEK.cells[shape, s], int(x), int(y))
        ok, _ = _hole_free(locked, WINDOW)
        cleared = locked.copy()
        count_and_clear(cleared, 1023)
        _, h = _hole_free(cleared, WINDOW)
        if ok and locked[0] == 0 and h.max() <= CAP and h[4] >= 1:
            assert (int(x), int(y), int(s)) in dp


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, CAP), min_size=10, max_size=10), st.integers(0, 6),
       st.sampled_from([1, 2, GEEK.piece_limit - 1, GEEK.piece_limit]))
def test_layer_scores_are_the_engines(heights, shape, number):
    """A layer's child scores its parent's score plus what the engine's lock of that piece scores
    on the whole board (base cells counted; the piece at the rules' limit scores nothing)."""
    heights[4] = max(heights[4], 1)
    nm = int(MOVES.count[shape])
    parent = States(np.array([profile_of(heights)], np.int64), np.array([1000], np.int64))
    children = States(np.empty(nm, np.int64), np.empty(nm, np.int64))
    base_cells = sum(bin(int(r)).count("1") for r in BASE)
    expand_layer(parent, shape, number, MOVES, window(_floor(BASE), base_cells), GEEK.kernel, children)
    board = profile_board(profile_of(heights), BASE, WINDOW, 10)
    for m in range(nm):
        got = _check_drop(heights, shape, m, BASE)
        if got is None:
            assert children.profiles[m] == -1
            continue
        cx, cy, s = got
        after = board.copy()
        lock = lock_piece(after, GEEK.kernel, shape, s, cx, cy, number)
        assert children.scores[m] == 1000 + lock.points
        assert children.profiles[m] == profile_of(_hole_free(after, WINDOW)[1])
        if number == GEEK.piece_limit:
            assert children.scores[m] == 1000


def test_drop_by_hand():
    moves, count = MOVES.moves, MOVES.count
    h = np.array([2, 2, 3, 0, 1, 1, 1, 1, 1, 1], np.int64)
    nh = np.zeros(10, np.int64)
    # S flat (state 0) with its left column on column 0: heights 2, 2, 3 fit exactly
    m = [k for k in range(count[5]) if moves[5, k, MOVE_STATE] == 0 and moves[5, k, MOVE_LEFT] == 0][0]
    cy, cells, f = drop(h, nh, MOVES, window(), 5, m)
    assert cy == WINDOW - 3 and list(nh[:3]) == [3, 4, 4] and (cells, f) == (17, 0)
    # the same piece one column right (heights 2, 3, 0) would leave holes
    cy, _, _ = drop(h, nh, MOVES, window(), 5, m + 1)
    assert cy == -1
    # an upright I in the empty column 3 fills rows: heights 2,2,3,4,1,... -> one full row, cleared
    m = [k for k in range(count[0]) if moves[0, k, MOVE_STATE] == 0 and moves[0, k, MOVE_LEFT] == 3][0]
    cy, cells, f = drop(h, nh, MOVES, window(), 0, m)
    assert f == 1 and list(nh) == [1, 1, 2, 3, 0, 0, 0, 0, 0, 0] and cells == 17
    # a column whose top base cell is empty may not be uncovered by the clear
    cy, _, _ = drop(h, nh, MOVES, window(1 << 4), 0, m)
    assert cy == -1


def test_base_ready_by_hand():
    h = np.zeros(10, np.int64)
    board = from_strings("""
.#.......#
##...#####
#####.####
####.#####
##.#######
""", height=20)
    # window 17 (base: rows 17-19): every column stands on row 16, and column 5, whose top base
    # cell is empty, is covered
    assert base_ready(board, 17, 7, 10, h) and list(h) == [1, 2, 0, 0, 0, 1, 1, 1, 1, 2]
    assert not base_ready(board, 17, 1, 10, h)  # higher than the cap
    assert not base_ready(board, 16, 7, 10, h)  # row 16's gaps (columns 2-4) are uncovered
    assert not base_ready(board, 18, 7, 10, h)  # column 5 of the window overhangs an empty cell


def small(**kw):
    dp = {"states": 300, "window": 10}  # smaller layers die out early on this sequence
    dp.update(kw.pop("profile_dp", {}))
    return SolverConfig(policy="profile_dp", evaluator="pierre_dellacherie", pieces=kw.pop("pieces", 160),
                        profile_dp=dp, **kw)


@pytest.mark.slow
def test_traced_back_record_replays_to_the_dp_score():
    r = solve(small())
    info = r.report
    # the path ends at the best-scoring state kept in any layer (here two layers before the end:
    # ranked by score + surface, the last layers dropped their top scorer)
    assert r.stop == "done" and 150 <= r.pieces <= 160 and info.base_rows == 10
    verdict = replay(r.record)
    assert (verdict.score, verdict.bricks, verdict.end) == (r.score, r.pieces, "record_end")
    assert list(r.score_by_step) == list(verdict.score_by_piece[1:])
    assert len(r.best_by_step) == 160 and r.best_by_step.max() >= r.score > 0
    assert (r.best_by_step[:r.pieces] >= r.score_by_step).all()
    assert info.base_pieces == 23 and info.base_cells == 86 and sum(r.clear_kinds[2:]) > 0
    # during the base nothing clears, afterwards the window keeps a hole-free surface
    assert r.score_by_step[info.base_pieces - 1] == 0


@pytest.mark.slow
def test_key_score_keeps_the_best_scores():
    r = solve(small(profile_dp={"key": "score", "states": 100}))
    assert r.score == r.best_by_step[-1] > 0  # ranked by score, the best child is always kept


def test_threshold_inside_the_base_stops_the_base():
    # (the stop after the base is tested with every policy in test_solver.py)
    curve = np.full(160, np.nan)
    curve[4] = 1
    r = solve(small(), threshold=Threshold(curve))
    assert (r.stop, r.abort_piece, r.score) == ("aborted", 5, 0)


def test_same_record_whatever_the_threads_and_link_store():
    cfg = small(pieces=200)
    numba.set_num_threads(1)
    one = solve(cfg)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    many = solve(cfg)
    disk = solve(small(pieces=200, profile_dp={"links": "disk"}))
    assert one.record == many.record == disk.record
    assert list(one.best_by_step) == list(many.best_by_step)
    assert disk.report.links == "disk" and one.report.links == "memory"


def test_pieces_within_the_base():
    r = solve(small(pieces=8))
    assert (r.pieces, r.score, r.stop) == (8, 0, "done") and replay(r.record).bricks == 8


@pytest.mark.parametrize("override, message", [
    ({"window": 4}, "profile_dp.window: Input should be greater than or equal to 5"),
    ({"key": "height"}, "profile_dp.key: Input should be 'score' or 'score_surface'"),
    ({"states": 0}, "profile_dp.states: Input should be greater than or equal to 1"),
    ({"windw": 9}, "profile_dp.windw: unknown key (did you mean 'window'?) (known: window, base_cap, states, key, "
                     "cells_weight, bumpiness_weight, links, links_memory_mb)"),
])
def test_config_errors(override, message):
    from engine.config import ConfigError, validate

    with pytest.raises(ConfigError) as e:
        validate(SolverConfig, {"policy": "profile_dp", "profile_dp": override}, "x.yaml")
    assert str(e.value) == f"x.yaml: {message}"


def test_tuning_runs_over_profile_dp_settings(tmp_path):
    """experiments.run tunes the DP's settings like any other policy's (configs/dp_random.yaml's
    space, shrunk), and its best.yaml replays to the tuned score in the solver."""
    from pathlib import Path

    from optimizers import run as tuning
    from solver import load_solver_config

    shipped = Path(__file__).resolve().parents[1] / "configs" / "dp_random.yaml"
    overrides = ["random.samples=3", "random.generations=2", "pieces=160", "solver.profile_dp.states=300",
                 f"runs_dir={tmp_path}", "parallel.n_jobs=1"]
    config = tuning.load_run_config(shipped, overrides)
    assert [p.path for p in config.space] == ["profile_dp.cells_weight", "profile_dp.bumpiness_weight",
                                              "profile_dp.window"]
    run = tuning.tune(config)
    run_dir, state = run.dir, run.state
    best = load_solver_config(run_dir / "best.yaml")
    assert best.policy == "profile_dp" and best.profile_dp.states == 300
    assert solve(best, record=False).score == best.meta["score"] > 0
