"""Classic-game tuning end to end: the shipped PSO, GA and CEM configs, shrunk to a few candidates on
short capped games and a short rescore, run through experiments.run; best.yaml re-played gives
its recorded (re-scored) fitness."""

import csv
import math
from pathlib import Path

import pytest

from optimizers import run as tuning
from optimizers.fitness import games_fitness
from optimizers.run import saved_state
from optimizers.records import RECOMMENDATION
from solver import load_solver_config, solve

ROOT = Path(__file__).resolve().parents[1]
SHRINK = {
    "pso": ["pso.particles=4", "pso.iterations=2"],
    "ga": ["ga.population=4", "ga.generations=2", "ga.elitism=1", "ga.hall_of_fame=2"],
    "cem": ["cem.samples=4", "cem.generations=2"],
}
#: the seeds best.yaml plays: the solver's (1, 2), or cem_classic's rescore seeds, which no candidate played
BEST_SEEDS = {"pso": [1, 2], "ga": [1, 2], "cem": [500, 501]}


@pytest.mark.parametrize("algorithm", list(SHRINK))
def test_classic_tuning_run(tmp_path, algorithm):
    overrides = [*SHRINK[algorithm], "solver.pieces=250", "solver.online.games=2", "parallel.n_jobs=1",
                 "rescore.top=2", "rescore.overrides.pieces=400", f"runs_dir={tmp_path}"]
    config = tuning.load_run_config(ROOT / "configs" / f"{algorithm}_classic.yaml", overrides)
    run_dir = tuning.tune(config).dir
    with open(run_dir / "evaluations.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 8
    best = load_solver_config(run_dir / "best.yaml")
    # best.yaml carries the rescore's overrides: 2 games of 400 pieces
    assert best.policy == "one_ply" and best.rules == "classic" and best.online.games == 2 and best.pieces == 400
    tuned = {(r["generation"], r["index"]): float(r["fitness"]) for r in rows}
    with open(run_dir / "rescore.csv", newline="") as f:
        rescored = list(csv.DictReader(f))
    # CEM's mean is re-scored beside the 2 best (here it re-scores best); GA and PSO have no mean
    assert [r["index"] == str(RECOMMENDATION) for r in rescored] == [False, False] + [True] * (algorithm == "cem")
    meta = best.meta
    if algorithm == "cem":
        optimizer = saved_state(run_dir).optimizer
        mean = optimizer.space.scaled(optimizer.space.decode(optimizer.recommendation()))
        assert meta["index"] == RECOMMENDATION and meta["generation"] == 2 and "recommendation" in meta
        assert list(meta["parameters"].values()) == mean and math.isnan(meta["tuned_fitness"])
    else:
        assert meta["tuned_fitness"] == tuned[(str(meta["generation"]), str(meta["index"]))]
    assert (run_dir / "recommendation.yaml").exists() == (algorithm == "cem")
    result = solve(best)
    assert games_fitness(result.score, result.games.ends, config.games.topout_penalty) == pytest.approx(meta["fitness"])
    assert result.games.seeds == BEST_SEEDS[algorithm] and result.games.cap == 400
    assert len({r["fitness"] for r in rows}) > 1  # the weights matter


@pytest.mark.slow
def test_the_recorded_classic_check_replays():
    """results/classic/cem_classic-best-check-1M.json: its first game, played again, gives its score."""
    import json

    check = json.loads((ROOT / "results" / "classic" / "cem_classic-best-check-1M.json").read_text())["games"]
    best = load_solver_config(ROOT / "results" / "classic" / "cem_classic-best.yaml", [
        f"seed={check['seeds'][0]}", "online.games=1", f"pieces={check['cap']}"])
    result = solve(best)
    assert (result.score, result.pieces) == (check["scores"][0], check["pieces"][0])
    assert check["mean"] > 3_575_307 and check["capped"] == 10  # El-Tetris's weights, untuned: 3,575,307
