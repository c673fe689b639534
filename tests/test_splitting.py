"""Multilevel splitting (`solver.online.splitting`): the level measures on hand-drawn boards, the
excursion kernel against a plain-Python loop of the same policy, the settings' checks, that an
estimate depends on its seed only, and that it agrees with played games where those are short."""

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from engine import GOING_ON, from_strings, get_rules, lock_piece
from evaluators import load_evaluator
from solver import SolverConfig, solve
from solver.files import load_solver_config
from solver.online import make_policy
from solver.online.splitting import (DEAD, DOWN, MAX, MEAN, MORE, UP, Pieces, SplittingConfig, estimate,
                                     level_of, play_until, stack_height, surface_sum)

ROOT = Path(__file__).resolve().parents[1]
STANDARD = get_rules("standard")

BOARD = """
..........
....#.....
#...##....
##.####..#
###########"""[1:].replace("###########", "##########")


def test_stack_height_and_surface_sum_on_a_hand_drawn_board():
    board = from_strings(BOARD)
    # columns 0..9 reach 3, 2, 1, 2, 4, 3, 2, 1, 1, 2 rows
    assert stack_height(board, STANDARD.kernel) == 4
    assert surface_sum(board, STANDARD.kernel) == 3 + 2 + 1 + 2 + 4 + 3 + 2 + 1 + 1 + 2
    assert level_of(board, STANDARD.kernel, MAX) == 4
    assert level_of(board, STANDARD.kernel, MEAN) == 21
    empty = np.zeros(20, np.uint16)
    assert stack_height(empty, STANDARD.kernel) == 0 and surface_sum(empty, STANDARD.kernel) == 0


def test_a_hole_counts_in_the_columns_height():
    board = from_strings("#.........\n..........\n#.........")  # column 0 reaches row 3 over a gap
    assert surface_sum(board, STANDARD.kernel) == 3 and stack_height(board, STANDARD.kernel) == 3


def one_ply(rules="standard", evaluator="dellacherie"):
    return make_policy(SolverConfig(policy="one_ply", rules=rules, evaluator=evaluator, pieces=1, threads=1))


def python_measure(board, rules, measure):
    heights = [0] * rules.width
    for y in range(rules.height):
        for x in range(rules.width):
            if (int(board[y]) >> x) & 1 and heights[x] == 0:
                heights[x] = rules.height - y
    return sum(heights) if measure == MEAN else max(heights)


def python_play_until(policy, pieces, start, board, low, high, measure):
    """The excursion in plain Python: the policy's own choice, the engine's lock, the measure
    counted cell by cell."""
    rules = policy.rules
    rows = 0
    for i in range(start, len(pieces) - 1):
        t = i - start
        p = policy.choose(board, t, int(pieces[i]))
        if p is None:
            return i - start, rows, DEAD
        lock = lock_piece(board, rules.kernel, int(pieces[i]), int(p[2]), int(p[0]), int(p[1]), t + 1)
        if lock.end != GOING_ON:
            return i + 1 - start, rows, DEAD
        rows += lock.lines
        h = python_measure(board, rules, measure)
        if h >= high:
            return i + 1 - start, rows, UP
        if h <= low:
            return i + 1 - start, rows, DOWN
    return len(pieces) - 1 - start, rows, MORE


POLICY = {}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), start=st.integers(0, 3), measure=st.sampled_from([MAX, MEAN]),
       low=st.integers(-1, 3), span=st.integers(1, 12), n=st.integers(2, 400))
def test_play_until_matches_a_plain_python_loop(seed, start, measure, low, span, n):
    policy = POLICY.setdefault("p", one_ply("standard_10x10"))
    rules = policy.rules
    pieces = np.random.Generator(np.random.PCG64(seed)).integers(0, 7, size=n + start).astype(np.int64)
    unit = rules.width if measure == MEAN else 1
    lo, hi = low * unit, (max(low, 0) + span) * unit
    a, b = np.zeros(rules.height, np.uint16), np.zeros(rules.height, np.uint16)
    got = play_until(policy.bundle, pieces, start, 0, a, rules.kernel, policy.spec, policy.ws, lo, hi, measure)
    want = python_play_until(policy, pieces, start, b, lo, hi, measure)
    assert tuple(int(v) for v in got) == want
    assert np.array_equal(a, b)


def test_play_until_stops_where_each_bound_says():
    policy = one_ply()
    rules = policy.rules
    pieces = np.random.Generator(np.random.PCG64(5)).integers(0, 7, size=2001).astype(np.int64)
    board = np.zeros(20, np.uint16)
    n, _, how = play_until(policy.bundle, pieces, 0, 0, board, rules.kernel, policy.spec, policy.ws, -1, 3, MAX)
    assert how == UP and stack_height(board, rules.kernel) >= 3 and n >= 1
    n2, _, how = play_until(policy.bundle, pieces, n, n, board, rules.kernel, policy.spec, policy.ws, 1, 99, MAX)
    assert how == DOWN and stack_height(board, rules.kernel) <= 1
    # a board one piece from its end: an O piece has nowhere to go on a full-height stack
    tall = from_strings("\n".join(["#########."] * 20))
    o = np.array([4, 4], np.int64)
    assert play_until(policy.bundle, o, 0, 0, tall, rules.kernel, policy.spec, policy.ws, -1, 99, MAX)[2] == DEAD


def test_settings_are_checked_with_the_key_named():
    with pytest.raises(ValueError, match="levels"):
        SplittingConfig(levels=[5, 5, 6])
    with pytest.raises(ValueError, match="splitting.levels: the last level \\(20\\) must be below"):
        SplittingConfig(levels=[5, 20]).check(20)
    with pytest.raises(ValueError, match="above splitting.low"):
        SplittingConfig(low=5, levels=[5, 8]).check(20)
    with pytest.raises(ValueError, match="splitting"):
        SolverConfig(policy="one_ply", rules="standard", evaluator="dellacherie", pieces=1,
                     online={"estimate": "splitting"}, splitting={"trials": 0})


def test_the_piece_stream_is_the_rules_sequence():
    pieces = Pieces(STANDARD, 7)
    got = []
    while len(got) < 10_000:
        buf, at = pieces.ahead()
        take = min(1000, buf.shape[0] - at - 1)
        got.extend(buf[at:at + take].tolist())
        pieces.used(take)
    assert got[:10_000] == STANDARD.sequence(10_000, 7).tolist()


SMALL = SplittingConfig(low=1, levels=[3, 4, 5, 6, 7, 8, 9], trials=300, pieces=20_000)


def test_an_estimate_depends_on_its_seed_only():
    policy = one_ply("standard_10x10")
    a, b, c = (estimate(policy, SMALL, s).summary() for s in (3, 3, 4))
    for e in (a, b, c):
        e.pop("seconds")
    assert a == b and a != c
    assert a["trials"] == 300 and len(a["successes"]) == 7 and a["arrivals"] > 100 and not a["bounded"]
    assert a["pieces_played"] > a["pieces0"] == 20_000


def test_estimates_pool_as_a_ratio_of_means_not_a_mean_of_ratios():
    """Two estimates with 0.4 rows a piece whose games end at 1 in 1,000 and 1 in 3,000 pieces:
    pooled, a game ends at 1 in 1,500 pieces, 600 rows (the plain mean of 400 and 1,200 would be
    800); the interval is Student's t on the two rates, inverted."""
    from solver.online.intervals import mean_ci95
    from solver.online.splitting import Estimate, combine

    def made(arrivals):  # 100,000 pieces, `arrivals` climbs, every stage half its trials: rate arrivals / 4e5
        return Estimate(0, 1, [2, 3], 100_000, 40_000, 0, arrivals, 10, [5, 5], 0, 0.0)

    a, b = made(400), made(400 / 3)
    assert a.pieces_per_game == pytest.approx(1000) and b.pieces_per_game == pytest.approx(3000)
    mean, (lo, hi) = combine([a, b])
    assert mean == pytest.approx(600)
    r_lo, r_hi = mean_ci95([1 / 1000, 1 / 3000])
    assert r_lo < 0 and (lo, hi) == (pytest.approx(0.4 / r_hi), np.inf)  # two estimates: the rate may be 0
    assert combine([a]) == (pytest.approx(400), None)
    assert combine([a, a, made(360)])[1][1] < np.inf


@pytest.mark.slow
def test_splitting_agrees_with_played_games_on_the_small_board():
    """Dellacherie's player on 10 x 10: 2,220 rows a game over 1,000 played games
    (results/standard/dellacherie-10x10.json); eight estimates of a few thousand short excursions
    each agree within 15%, and so does BCTS's (3,883 played)."""
    for name, evaluator in (("dellacherie-10x10", "dellacherie"), ("bcts-10x10", "bcts")):
        played = json.loads((ROOT / "results" / "standard" / f"{name}.json").read_text())["mean"]
        config = SolverConfig(policy="one_ply", rules="standard_10x10", evaluator=evaluator, pieces=1, seed=0,
                              online={"games": 8, "estimate": "splitting"}, splitting=SMALL.model_dump())
        result = solve(config)
        estimates = result.estimates
        # pooled: mean rows per piece over the mean rate of game ends
        pooled = (np.mean([e.rows0 / e.pieces0 for e in estimates])
                  / np.mean([1 / e.pieces_per_game for e in estimates]))
        assert abs(result.score - pooled) <= 0.6 and result.best_by_step[-1] == result.score
        assert result.score <= np.mean([e.rows_per_game for e in estimates]) + 0.6
        lo, hi = result.ci95
        assert lo < result.score < hi
        assert 0.85 * played < result.score < 1.15 * played, (name, result.score, played)
        assert [e.seed for e in estimates] == list(range(8))
        assert result.pieces == sum(e.pieces_played for e in estimates)


def test_dellacherie_beats_a_player_that_ignores_holes_by_the_estimate():
    """The estimate ranks players: Dellacherie's weights against the same weights with holes
    rewarded instead of punished (a player that loses within a few dozen rows)."""
    good = one_ply("standard_10x10")
    bad_eval = load_evaluator("dellacherie").with_weights({"holes": 4.0})
    bad = make_policy(SolverConfig(policy="one_ply", rules="standard_10x10", evaluator="dellacherie", pieces=1),
                      bad_eval)
    assert estimate(bad, SMALL, 1).rows_per_game * 20 < estimate(good, SMALL, 1).rows_per_game


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cmaes_standard_split.yaml", "cmaes_standard_dt.yaml"])
def test_the_splitting_tuning_config_runs_with_common_seeds(tmp_path, name):
    """configs/cmaes_standard_split.yaml (the eight features) and cmaes_standard_dt.yaml (the nine
    D-T features), shrunk to the 10 x 10 board: every candidate of a generation is scored by an
    estimate from the same seed, a new one each generation, and its fitness is that estimate; the
    best is re-scored on estimates of unplayed seeds."""
    import csv

    from optimizers import load_run_config, tune

    config = load_run_config(ROOT / "configs" / name, [
        "cmaes.population=4", "cmaes.generations=2", "solver.rules=standard_10x10", "solver.splitting.low=1",
        "solver.splitting.levels=[3,5,7,9]", "solver.splitting.trials=40", "solver.splitting.pieces=3000",
        "parallel.n_jobs=1", "rescore.top=1", "rescore.overrides={online.games: 2, seed: 100000}", f"runs_dir={tmp_path}"])
    assert config.solver.online.model_dump() == {"games": 1, "estimate": "splitting"} and config.solver.rules == "standard_10x10"
    run = tune(config)
    with open(run.dir / "evaluations.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 8 and {r["generation"] for r in rows} == {"0", "1"}
    best = load_solver_config(run.dir / "best.yaml")
    assert best.online.estimate == "splitting" and best.online.games == 2 and best.seed == 100000
    # a candidate's fitness is the estimate of its generation's seed (1 + generation), played again
    row = rows[5]
    weights = {p.path.split(".")[-1]: float(row[p.path]) for p in config.space}
    policy = make_policy(best.model_copy(update={"seed": 1}), load_evaluator("dellacherie").with_weights(weights))
    again = estimate(policy, best.splitting, 1 + int(row["generation"])).rows_per_game
    assert float(row["score"]) == pytest.approx(round(again), abs=1)
