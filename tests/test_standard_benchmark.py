"""The literature's benchmark as a user runs it: the evaluator presets with the published weights,
the shipped configurations, and the mean rows per game with its 95% confidence interval in every
series' summary (`solver.online.intervals.mean_ci95`)."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from benchmarks.standard import players, versus
from evaluators import load_evaluator
from experiments import solve as solve_cli
from solver import solve
from solver.files import load_solver_config
from solver.online import games
from solver.online.games import GamesResult
from solver.online.intervals import CI_METHOD, SURVIVAL_METHOD, chi2_quantile, chi2_sf, mean_ci95, survival_mean, t975
from conftest import load_benchmark

#: MdpTetris's feature files (the notes, section 7), in our feature names
DELLACHERIE = {"landing_height_zero_based": -1, "eroded_cells": 1, "row_transitions": -1, "column_transitions": -1,
               "holes": -4, "wells_empty_below": -1}
BCTS = {"landing_height_zero_based": -12.62900, "eroded_cells": 6.601974, "row_transitions": -9.215815,
        "column_transitions": -19.77356, "holes": -13.08335, "wells_empty_below": -10.48747,
        "hole_depth": -1.611863, "rows_with_holes": -24.04087}


def weights(name):
    ev = load_evaluator(name)
    assert ev.tie_break == "state_then_column" and ev.description
    return {n: t.weight for n, t in ev.weights.items()}


def test_presets_hold_the_published_weights():
    assert weights("dellacherie") == DELLACHERIE
    assert weights("bcts") == BCTS
    bdu = weights("bdu")
    assert len(bdu) == 28 and bdu["column_height_0"] == -13.18725 and bdu["column_height_diff_8"] == 9.122675
    assert bdu["max_height"] == 12.36382 and bdu["holes"] == -40.64 and bdu["rows_with_holes"] == -75.47524


def test_ci_by_hand():
    # 1, 2, 3, 4: mean 2.5, sample std sqrt(5/3) = 1.29099, t(0.975, 3) = 3.182: 2.5 -+ 2.0540
    lo, hi = mean_ci95([1, 2, 3, 4])
    assert (round(lo, 3), round(hi, 3)) == (0.446, 4.554)
    assert mean_ci95([7]) is None and mean_ci95([]) is None
    assert mean_ci95([5, 5, 5]) == (5.0, 5.0)
    # 100 games: t(0.975, 99) = 1.9842
    assert t975(99) == pytest.approx(1.98422, abs=1e-4)
    with pytest.raises(ValueError):
        t975(0)


def test_t_quantiles_against_scipy():
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 5, 10, 29, 30, 31, 40, 60, 120, 1000):
        assert t975(df) == pytest.approx(stats.t.ppf(0.975, df), abs=1e-3 if df <= 30 else 1e-4)


def test_chi_square_quantiles_against_scipy():
    stats = pytest.importorskip("scipy.stats")
    for k in (1, 2, 3, 4, 7, 10, 50, 51, 199, 200, 202, 1000, 10_000):
        for p in (0.025, 0.5, 0.975):
            assert chi2_quantile(p, k) == pytest.approx(stats.chi2.ppf(p, k), rel=1e-4), (p, k)
    for bad in ((0.5, -1), (0.5, 0), (1.0, 4), (0.0, 4)):
        with pytest.raises(ValueError):
            chi2_quantile(*bad)


def test_chi_square_tail_against_scipy():
    stats = pytest.importorskip("scipy.stats")
    for k in (1, 2, 3, 5, 8, 9, 30, 101, 200):
        for x in (0.01, 0.5, 1.0, k * 0.7, float(k), k + 3.0 * k ** 0.5, 4.0 * k + 20):
            assert chi2_sf(x, k) == pytest.approx(stats.chi2.sf(x, k), rel=1e-9, abs=1e-15), (x, k)
    assert chi2_sf(0.0, 3) == 1.0
    with pytest.raises(ValueError):
        chi2_sf(1.0, 0)


def test_survival_mean_by_hand():
    # 600 pieces, 2 games ended, 0.4 rows a piece: 300 pieces a game, 120 rows
    mean, (lo, hi) = survival_mean([40, 80, 120], [100, 200, 300], [True, True, False])
    assert mean == pytest.approx(120.0)
    assert lo == pytest.approx(2 * 600 / chi2_quantile(0.975, 6) * 0.4)
    assert hi == pytest.approx(2 * 600 / chi2_quantile(0.025, 4) * 0.4)
    assert lo < mean < hi
    # nothing capped: the plain mean
    assert survival_mean([10, 30, 50], [25, 80, 120], [True] * 3)[0] == pytest.approx(30.0)
    # nothing ended: no estimate, a lower bound only
    mean, (lo, hi) = survival_mean([40, 40], [100, 100], [False, False])
    assert mean == hi == math.inf and lo == pytest.approx(2 * 200 / chi2_quantile(0.975, 2) * 0.4)
    with pytest.raises(ValueError):
        survival_mean([], [], [])


def test_survival_mean_recovers_a_censored_exponential():
    # games of 1,000 pieces on average (0.4 rows a piece: 400 rows), about half capped at 700
    rng = np.random.default_rng(5)
    means, hits = [], 0
    for trial in range(300):
        lengths = rng.exponential(1000.0, 400)
        played = np.minimum(lengths, 700.0)
        mean, (lo, hi) = survival_mean(played * 0.4, played, lengths < 700.0)
        means.append(mean)
        hits += lo <= 400.0 <= hi
    assert np.mean(means) == pytest.approx(400.0, rel=0.01)
    assert 0.92 <= hits / 300 <= 0.98  # a 95% interval (0.94 here)


def test_a_capped_series_reports_the_survival_estimate():
    def series(ends):
        n = len(ends)
        return GamesResult(list(range(n)), 1000, np.array([400] * n), np.array([1000 if e == "capped" else 500
                                                                                for e in ends]), ends, (0,) * 5)

    plain = series(["spawn_blocked"] * 3)
    assert plain.survival is None and "survival" not in plain.summary()
    mixed = series(["spawn_blocked", "capped", "capped", "spawn_blocked"])
    mean, ci = mixed.survival
    assert mean == pytest.approx(800.0)  # 3,000 pieces / 2 games ended x 1,600 / 3,000 rows a piece
    assert mixed.summary()["survival"] == {"mean": round(mean, 1), "ci95": [round(ci[0], 1), round(ci[1], 1)],
                                           "method": SURVIVAL_METHOD}
    capped = series(["capped"] * 2).summary()["survival"]
    assert capped["mean"] is None and capped["ci95"][1] is None and capped["ci95"][0] > 0
    # the benchmark's series file says the same
    out = {"games": [{"seed": i, "rows": 400, "pieces": 1000 if i else 500, "end": "capped" if i else "stuck",
                      "cpu_seconds": 0.1} for i in range(3)]}
    players.summarize(out)
    assert out["capped"] == 2 and out["survival"]["mean"] == 1200.0  # 2,500 pieces / 1 ended x 0.48 rows a piece


def test_a_short_series_of_the_shipped_config_reports_the_interval(tmp_path, capsys):
    config = load_solver_config("configs/solve/standard_dellacherie.yaml", ["pieces=3000", "online.games=4"])
    assert (config.policy, config.rules, config.evaluator, config.seed) == ("one_ply", "standard", "dellacherie", 1000)
    g = solve(config).games
    assert g.seeds == [1000, 1001, 1002, 1003] and g.cap == 3000
    lo, hi = mean_ci95(g.scores)
    assert g.ci95 == (lo, hi) and lo <= g.mean <= hi
    # every game reaches the cap; 3,000 pieces bring 12,000 cells, of which at most 200 are left on
    # the board: between 1,180 and 1,200 rows
    assert g.capped == 4 and all(1_180 <= s <= 1_200 for s in g.scores)
    # the command prints it and writes it to summary.json
    out = tmp_path / "out"
    assert solve_cli.main(["configs/solve/standard_dellacherie.yaml", "pieces=3000", "online.games=4", "--out", str(out),
                           "--quiet"]) == 0
    line = capsys.readouterr().out
    assert f"95% CI {lo:,.0f} .. {hi:,.0f}" in line
    written = json.loads((out / "summary.json").read_text())["games"]
    assert written["ci95"] == [round(lo, 1), round(hi, 1)] and written["ci95_method"] == CI_METHOD


def test_bcts_config_loads():
    config = load_solver_config("configs/solve/standard_bcts.yaml")
    assert (config.policy, config.rules, config.evaluator, config.pieces, config.online.games) == (
        "one_ply", "standard", "bcts", 1_000_000, 10)


# ------------------------------------------------------------------------------------------------
# tuned from Dellacherie's weights: the shipped configs run, and the recorded validation replays

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
STANDARD_RESULTS = ROOT / "results" / "standard"


@pytest.mark.parametrize("algorithm, shrink", [
    ("cem", ["cem.samples=4", "cem.generations=2"]),
    ("cmaes", ["cmaes.population=4", "cmaes.generations=2"]),
])
def test_standard_tuning_configs_run(tmp_path, algorithm, shrink):
    """configs/<algorithm>_standard.yaml, shrunk: common seeds per generation on 10 x 10 games to
    their end, the weights kept at Dellacherie's norm, the best re-scored on unplayed seeds."""
    import csv

    import numpy as np

    from optimizers import load_run_config, tune

    config = load_run_config(ROOT / "configs" / f"{algorithm}_standard.yaml", [
        *shrink, "solver.online.games=3", "parallel.n_jobs=1", "rescore.top=1", "rescore.overrides.online.games=4",
        f"runs_dir={tmp_path}"])
    assert config.solver.rules == "standard_10x10" and config.solver.evaluator["name"] == "dellacherie"
    run = tune(config)
    with open(run.dir / "evaluations.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 8
    best = load_solver_config(run.dir / "best.yaml")
    assert best.online.games == 4 and best.seed == 100000
    # the weights played, as every row and best.yaml record them, are scaled to the starting
    # point's norm (a 1-ply choice ignores the scale)
    norm = np.linalg.norm(list(DELLACHERIE.values()))
    for row in rows:
        assert np.linalg.norm([float(row[p.path]) for p in config.space]) == pytest.approx(norm, rel=1e-9)
    played = [best.evaluator["features"][p.path.split(".")[-1]] for p in config.space]
    assert played == list(best.meta["parameters"].values())
    assert np.linalg.norm(played) == pytest.approx(norm, rel=1e-9)


@pytest.mark.parametrize("name", ["cem_standard", "cmaes_standard"])
def test_the_recorded_tuned_players_replay_and_beat_dellacherie(name):
    """results/standard/<name>-10x10.json: its first 50 games, played again, give its rows; its
    interval lies above Dellacherie's (results/standard/dellacherie-10x10.json)."""
    series = json.loads((STANDARD_RESULTS / f"{name}-10x10.json").read_text())
    dellacherie = json.loads((STANDARD_RESULTS / "dellacherie-10x10.json").read_text())
    assert series["n"] == dellacherie["n"] == 1000 and series["ci95"][0] > dellacherie["ci95"][1]
    config = load_solver_config(ROOT / "configs" / "solve" / "standard_dellacherie.yaml", [
        "rules=standard_10x10", f"evaluator={STANDARD_RESULTS / f'{name}.yaml'}", "pieces=1000000000",
        "online.games=50", f"seed={series['games'][0]['seed']}"])
    result = solve(config)
    assert list(result.games.scores) == [g["rows"] for g in series["games"][:50]]


def test_a_series_reports_the_pieces_placed_and_a_total_only_where_it_means_something():
    from solver.online.games import solve_games

    def record(config):
        calls = []
        result = solve_games(config, progress=lambda done, total, score: calls.append((done, total)))
        return result, calls

    base = load_solver_config(ROOT / "configs" / "solve" / "standard_dellacherie.yaml", ["rules=standard_10x10", "online.games=3"])
    long, calls = record(base.model_copy(update={"pieces": 1_000_000_000}))
    assert calls[-1] == (long.pieces, None)  # games to their end: no total (3 billion would be years)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    short, calls = record(base.model_copy(update={"pieces": 50}))
    assert calls[-1] == (short.pieces, 150) and short.pieces == 150


def test_a_game_finished_past_an_unfinished_seed_waits_out_of_the_figures():
    settle = players.settle
    out = {"games": [{"seed": 1000}], "ahead": [{"seed": 1003}, {"seed": 1002}]}
    settle(out, 1000)
    assert [g["seed"] for g in out["games"]] == [1000] and [g["seed"] for g in out["ahead"]] == [1002, 1003]
    out["ahead"].append({"seed": 1001})
    settle(out, 1000)
    assert [g["seed"] for g in out["games"]] == [1000, 1001, 1002, 1003] and out["ahead"] == []
    out = {"games": [], "ahead": [{"seed": 1001}]}  # the first seed not yet finished
    settle(out, 1000)
    assert out["games"] == [] and [g["seed"] for g in out["ahead"]] == [1001]


@pytest.mark.slow
def test_a_series_on_two_processes_resumed_equals_one_played_in_turn(tmp_path):
    """bench_standard.py games --jobs 2, stopped after 5 games and resumed to 9, writes the games
    and figures of the same 9 games played one after another in one process."""
    bench = [sys.executable, str(ROOT / "benchmarks" / "bench_standard.py"), "games", "--rules", "standard_10x10",
             "--seed", "7"]
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    subprocess.run(bench + ["--games", "9", "--json", str(one)], check=True, capture_output=True)
    subprocess.run(bench + ["--games", "5", "--json", str(two), "--jobs", "2"], check=True, capture_output=True)
    subprocess.run(bench + ["--games", "9", "--json", str(two), "--jobs", "2", "--resume"], check=True,
                   capture_output=True)
    a, b = json.loads(one.read_text()), json.loads(two.read_text())
    assert [g["seed"] for g in b["games"]] == list(range(7, 16)) and b["ahead"] == []
    assert [(g["rows"], g["pieces"]) for g in a["games"]] == [(g["rows"], g["pieces"]) for g in b["games"]]
    assert (a["n"], a["mean"], a["ci95"]) == (b["n"], b["mean"], b["ci95"]) and a["mean"] > 1000
    assert len(b["resumed"]) == 1


def test_a_series_stopped_mid_game_goes_on_from_the_kept_state(tmp_path, monkeypatch, capsys):
    """A series stopped in its first game keeps that game's state in FILE.inplay/; --resume plays it
    on from there, to the games and figures of a series never stopped. A state that is not this
    series' is refused, naming the file; --force removes the states."""
    bench = load_benchmark("bench_standard")
    args = ["games", "--rules", "standard_10x10", "--games", "2", "--seed", "7"]
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    assert bench.main(args + ["--json", str(one)]) == 0
    monkeypatch.setattr(games, "CHUNK", 300)
    monkeypatch.setattr(bench, "KEEP_SECONDS", 0)
    play_game = bench.play_game

    def stopped(*a, keep, **kw):  # Ctrl-C after the third state kept
        kept = []

        def keep_and_stop(c):
            keep(c)
            kept.append(c)
            if len(kept) == 3:
                raise KeyboardInterrupt

        return play_game(*a, keep=keep_and_stop, **kw)

    monkeypatch.setattr(bench, "play_game", stopped)
    assert bench.main(args + ["--json", str(two)]) == 130
    assert f"0 games kept in {two}, 1 in play in {two}.inplay, continue with --resume" in capsys.readouterr().err
    state = tmp_path / "two.json.inplay" / "seed-7.json"
    kept = json.loads(state.read_text())
    assert kept["game"]["pieces"] == 900 and kept["cap"] == 10 ** 9 and kept["cpu_seconds"] >= 0
    monkeypatch.setattr(bench, "play_game", play_game)
    capsys.readouterr()
    state.write_text(json.dumps({**kept, "cap": 5}))
    assert bench.main(args + ["--json", str(two), "--resume"]) == 2
    err = capsys.readouterr().err
    assert str(state) in err and "cap: 5, but the series' is 1000000000" in err
    state.write_text(json.dumps(kept))
    assert bench.main(args + ["--json", str(two)]) == 2  # a series in play is not replaced silently
    # the same series, its state given 1,000 more rows: the game goes on from the state, not from its start
    three = tmp_path / "three.json"
    three.write_bytes(two.read_bytes())
    (tmp_path / "three.json.inplay").mkdir()
    (tmp_path / "three.json.inplay" / "seed-7.json").write_text(
        json.dumps({**kept, "game": {**kept["game"], "score": kept["game"]["score"] + 1000}}))
    assert bench.main(args + ["--json", str(three), "--resume"]) == 0
    assert bench.main(args + ["--json", str(two), "--resume"]) == 0
    assert "going on from their kept states: seed 7 at piece 900" in capsys.readouterr().out
    a, b = json.loads(one.read_text()), json.loads(two.read_text())
    assert [(g["seed"], g["rows"], g["pieces"]) for g in a["games"]] == [(g["seed"], g["rows"], g["pieces"])
                                                                         for g in b["games"]]
    assert (a["mean"], a["ci95"]) == (b["mean"], b["ci95"]) and not state.parent.exists()
    c = json.loads(three.read_text())["games"]
    assert [g["rows"] for g in c] == [a["games"][0]["rows"] + 1000, a["games"][1]["rows"]]
    # --force starts again: the kept state is not played on
    monkeypatch.setattr(bench, "play_game", stopped)
    assert bench.main(args + ["--json", str(two), "--force"]) == 130 and state.exists()
    monkeypatch.setattr(bench, "play_game", play_game)
    assert bench.main(args + ["--json", str(two), "--force"]) == 0
    assert "kept states" not in capsys.readouterr().out and not state.parent.exists()
    b = json.loads(two.read_text())
    assert [(g["rows"], g["pieces"]) for g in a["games"]] == [(g["rows"], g["pieces"]) for g in b["games"]]


@pytest.mark.slow
@pytest.mark.parametrize("player", ["cmaes_standard_split", "cmaes_standard_split-seed2-recommendation",
                                    "cmaes_standard_dt"])
def test_the_players_tuned_on_10x20_beat_dellacherie_there_and_their_games_replay(player):
    """results/standard/<player>-10x20.json (a player of configs/cmaes_standard_split.yaml or, with
    the nine D-T features, configs/cmaes_standard_dt.yaml, played on unseen seeds) has its 95%
    interval above Dellacherie's 10 x 20 series, 80 games of each played to their end on contiguous
    seeds; the shortest game of each, played again, gives its rows and pieces."""
    from solver.online import play_games

    tuned = json.loads((STANDARD_RESULTS / f"{player}-10x20.json").read_text())
    dellacherie = json.loads((STANDARD_RESULTS / "dellacherie-10x20.json").read_text())
    for series in (tuned, dellacherie):
        assert (series["width"], series["height"], series["rules"], series["capped"]) == (10, 20, "standard", 0)
        assert [g["seed"] for g in series["games"]] == list(range(1000, 1080))
        assert not series.get("ahead")
    assert tuned["ci95"][0] > dellacherie["ci95"][1]
    for name, series in ((STANDARD_RESULTS / f"{player}.yaml", tuned), ("dellacherie", dellacherie)):
        policy, _ = players.make(str(name), "standard", None)
        short = min(series["games"], key=lambda g: g["pieces"])
        g = play_games(policy, [short["seed"]], series["cap"])
        assert (int(g.scores[0]), int(g.pieces[0]), g.ends[0]) == (short["rows"], short["pieces"], short["end"])


def test_the_nine_feature_player_shows_the_literature_s_35_million_rows():
    """The claim of the README and docs/benchmark-standard.md: the D-T player's 80 unseen games
    (seeds 1000-1079, none capped, none waiting) average 48.0 M rows, their interval 38.2-57.8 M
    above BCTS's published 35 M and holding CBMPI's 51 M."""
    series = json.loads((STANDARD_RESULTS / "cmaes_standard_dt-10x20.json").read_text())
    assert [g["seed"] for g in series["games"]] == list(range(1000, 1080)) and not series.get("ahead")
    assert series["capped"] == 0 and all(g["end"] == "stuck" for g in series["games"])
    rows = [g["rows"] for g in series["games"]]
    assert series["mean"] == pytest.approx(np.mean(rows)) and list(series["ci95"]) == pytest.approx(mean_ci95(rows))
    low, high = series["ci95"]
    assert round(series["mean"] / 1e5) == 480 and (round(low / 1e5), round(high / 1e5)) == (382, 578)
    assert low > 35_000_000 and low < 51_000_000 < high


def test_splitting_rank_pairs_estimates_with_played_series_board_by_board(tmp_path, capsys):
    rank = load_benchmark("splitting_rank")

    def series(name, evaluator, rows, height=20, rules="standard"):
        games = [{"seed": 1000 + i, "rows": r, "pieces": 3 * r + 1, "end": "stuck", "cpu_seconds": 0.1}
                 for i, r in enumerate(rows)]
        (tmp_path / f"{name}.json").write_text(json.dumps({
            "command": "x", "evaluator": evaluator, "rules": rules, "width": 10, "height": height, "cap": 10 ** 9,
            "date": "2026-11-26", "games": games}))

    def estimate(name, evaluator, mean, height=20, rules="standard", settings=None, folder=tmp_path):
        # one estimate of `mean` rows a game (one row per piece); `combine` pools them
        folder.mkdir(exist_ok=True)
        (folder / f"splitting-{name}.json").write_text(json.dumps({
            "evaluator": evaluator, "rules": rules, "height": height, "settings": settings or {"low": 2},
            "mean": mean, "ci95": [mean / 2, mean * 2],
            "estimates": [{"pieces_per_game": mean, "rows0": 7, "pieces0": 7}]}))

    # played order a > b > c; the estimates swap b and c
    series("a", "a.yaml", [300, 500])
    series("b", "b", [200, 200])
    series("c", "c", [100, 140])
    series("short", "d", [900])
    for name, mean in (("a", 450.0), ("b", 100.0), ("c", 130.0), ("short", 800.0)):
        estimate(name, "a.yaml" if name == "a" else name if name != "short" else "d", mean)
    series("small", "a.yaml", [30, 50], height=10)  # another board: another group
    estimate("small", "a.yaml", 35.0, height=10, rules="standard_10x10")
    estimate("lonely", "e", 5.0)

    df, left_out = rank.table(tmp_path, 20, 2)
    assert sorted(df["player"]) == ["a", "b", "c"]
    assert df.set_index("player").loc["a", "played"] == 400 and df.set_index("player").loc["a", "ratio"] == 450 / 400
    assert sorted(left_out) == ["d on 10 x 20: 1 played games (fewer than 2)", "e on 10 x 20: no played series"]
    assert rank.main(["--dir", str(tmp_path), "--height", "0", "--min-games", "2",
                      "--json", str(tmp_path / "rank.out")]) == 0
    out = capsys.readouterr().out
    # ranks (1, 2, 3) against (1, 3, 2): Spearman 1 - 6 * 2 / (3 * 8) = 0.5, Kendall (2 - 1) / 3
    assert "10 x 20, 3 players: Spearman 0.500, Kendall 0.333" in out
    assert "10 x 10" not in out.split("10 x 20, 3")[1]  # one player on 10 x 10: no correlation printed
    written = json.loads((tmp_path / "rank.out").read_text())
    assert set(written["correlations"]) == {"10x20"} and written["correlations"]["10x20"]["spearman"] == 0.5
    assert "chi2" not in written["correlations"]["10x20"]  # one estimate each: no error, no agreement test

    # more estimates of b with the same settings are pooled (rates 1/100 and 1/300: 150 rows a game),
    # which puts b above c; one made with other settings is not
    variants = tmp_path / "splitting-variants"
    estimate("b-more", "b", 300.0, folder=variants)
    estimate("b-other", "b", 10 ** 6, settings={"low": 3}, folder=variants)
    df, _ = rank.table(tmp_path, 20, 2)
    b = df.set_index("player").loc["b"]
    assert b["estimate"] == 150.0 and b["estimate_file"] == "splitting-b.json (2 estimates)"
    assert df["estimate"].corr(df["played"], method="spearman") == 1.0

    # the proxy: played means on another board instead of the estimates
    series("a14", "a.yaml", [30, 34], height=14)
    series("b14", "b", [40, 44], height=14)
    series("c14", "c", [10, 12], height=14)
    df, left_out = rank.table(tmp_path, 20, 2, proxy_height=14, min_proxy_games=2)
    assert df.set_index("player")["estimate"].to_dict() == {"a": 32.0, "b": 42.0, "c": 11.0}
    assert left_out == ["d on 10 x 20: no played series on 10 x 14"]


def test_splitting_rank_names_a_tuning_runs_export_by_its_run():
    rank = load_benchmark("splitting_rank")
    assert rank.player_name("results/standard/cmaes_standard_dt-seed3-run/best.yaml") == "cmaes_standard_dt-seed3-run/best"
    assert rank.player_name("runs/x/recommendation.yaml") == "x/recommendation"
    assert rank.player_name("results/standard/cmaes_standard_dt.yaml") == "cmaes_standard_dt"
    assert rank.player_name("bcts") == "bcts"


def test_splitting_rank_agreement_by_hand():
    rank = load_benchmark("splitting_rank")
    pd = pytest.importorskip("pandas")
    # log ratios +0.1 and -0.1, each with a standard error of 0.1: z = +1 and -1
    board = pd.DataFrame({"ratio": [math.exp(0.1), math.exp(-0.1), 2.0], "log_ratio_se": [0.1, 0.1, math.nan],
                          "z": [1.0, -1.0, math.nan]})
    a = rank.agreement(board)
    assert a["players_with_errors"] == 2
    assert a["chi2"] == pytest.approx(2.0) and a["chi2_p"] == pytest.approx(math.exp(-1.0))  # chi-square 2 df
    assert a["common_ratio"] == pytest.approx(1.0)
    assert a["common_ratio_ci95"] == pytest.approx([math.exp(-1.959964 * 0.1 / math.sqrt(2)),
                                                    math.exp(1.959964 * 0.1 / math.sqrt(2))])
    assert a["q"] == pytest.approx(2.0) and a["q_p"] == pytest.approx(math.erfc(1.0))  # chi-square 1 df at 2
    assert rank.agreement(board.iloc[:1]) is None
    assert rank.log_se([1.0, 3.0]) == pytest.approx(math.sqrt(2.0) / 2.0 / math.sqrt(2.0))


def test_the_benchmarks_play_the_evaluator_of_a_solver_configuration(tmp_path):
    """``--evaluator`` may name a tuning run's best.yaml or recommendation.yaml: its evaluator is
    played, as if given in a file of its own; an unreadable file, or a configuration the solver
    would refuse, is one line naming the option."""
    import yaml

    from solver.online import play_games

    features = {"landing_height_zero_based": -1.5, "eroded_cells": 0.5, "row_transitions": -1, "column_transitions": -3,
                "holes": -2, "wells_empty_below": -1}
    evaluator = {"name": "mine", "features": features, "tie_break": "state_then_column"}
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(evaluator))
    (tmp_path / "best.yaml").write_text(yaml.safe_dump({"policy": "one_ply", "rules": "standard", "pieces": 1000,
                                                        "evaluator": evaluator, "meta": {"source": "tuning run"}}))
    (tmp_path / "sub").mkdir()  # a solver configuration's evaluator path is its folder's, as the solver reads it
    (tmp_path / "sub" / "named.yaml").write_text(yaml.safe_dump({"policy": "one_ply", "rules": "standard", "pieces": 1000,
                                                                 "evaluator": "../mine.yaml"}))
    games = []
    for source in ("mine.yaml", "best.yaml", "sub/named.yaml"):
        policy, rules = players.make(str(tmp_path / source), "standard_10x10", None)
        assert rules.height == 10
        g = play_games(policy, [1000, 1001], 10 ** 6)
        games.append((list(g.scores), list(g.pieces)))
    assert games[0] == games[1] == games[2] and min(games[0][0]) > 0
    (tmp_path / "bad.yaml").write_text("policy: [one_ply\n")
    with pytest.raises(players.UserError, match=r"^--evaluator: .*bad\.yaml: "):
        players.make(str(tmp_path / "bad.yaml"), "standard", None)
    (tmp_path / "wrong.yaml").write_text("policy: one_ply\nrules: standard\nevaluator: ../mine.yaml\n")  # no pieces
    with pytest.raises(players.UserError, match=r"^--evaluator: .*wrong\.yaml: pieces: required"):
        players.make(str(tmp_path / "wrong.yaml"), "standard", None)


def test_a_perturbed_player_keeps_the_signs_and_is_made_again_from_its_seed(tmp_path):
    pp = load_benchmark("perturbed_player")
    out = tmp_path / "p.yaml"
    assert pp.main(["--evaluator", "bcts", "--sigma", "0.5", "--seed", "7", "--out", str(out)]) == 0
    player = load_evaluator(out)
    z = np.random.default_rng(7).standard_normal(len(BCTS))
    for (name, w), dz in zip(BCTS.items(), z):
        assert player.weights[name].weight == pytest.approx(w * np.exp(0.5 * dz), rel=1e-6)
    assert player.name == "p" and player.tie_break == "state_then_column"
    assert f"--seed 7 --out {out.as_posix()}" in player.description  # the command that makes it again
    again = tmp_path / "q.yaml"
    pp.main(["--evaluator", "bcts", "--sigma", "0.5", "--seed", "7", "--out", str(again)])
    assert {n: t.weight for n, t in load_evaluator(again).weights.items()} == {
        n: t.weight for n, t in player.weights.items()}
    with pytest.raises(SystemExit):
        pp.main(["--evaluator", "bcts", "--sigma", "0", "--seed", "7", "--out", str(out)])


def test_a_timed_process_runs_pinned_and_a_failure_names_it():
    """`run_timed` (the side-by-side benchmarks' clock): the child runs on the core it is given, its
    output comes back when asked for, and a failure raises the caller's name with its last error line."""
    out, cpu = versus.run_timed([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                               "probe", keep_output=True, core=0)
    assert out.strip() == "[0]" and cpu > 0
    with pytest.raises(players.UserError, match=r"^probe: exit status 3: bad input$"):
        versus.run_timed([sys.executable, "-c", "import sys; print('x', file=sys.stderr); "
                         "print('bad input', file=sys.stderr); sys.exit(3)"], "probe")
