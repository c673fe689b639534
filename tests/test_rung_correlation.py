"""`benchmarks/rung_correlation.py` with ``--from-run``: a tuning run's candidates as the samples
and its fitness as one more column (the stopped ones ranked last, tied, or left out), the cheap
rungs scored by a stand-in fitness (no game played)."""

import json

import pytest
import yaml

from conftest import load_benchmark
from optimizers.fitness import Evaluated, TuningRecord
from optimizers.space import Param, get_path
from optimizers.records import Evaluation
from optimizers.store import RunStore

PARAMS = ["evaluator.features.holes", "evaluator.features.landing_height"]
RUN = {
    "name": "ladder", "seed": 1, "algorithm": "sha",
    "sha": {"candidates": 4, "eta": 2, "rungs": [{"settings": {"pieces": 10}}, {"settings": {"pieces": 30}}]},
    "solver": {"policy": "one_ply", "rules": "course", "evaluator": "el_tetris", "seed": 100, "pieces": 50,
               "online": {"games": 1}},
    "space": [{"path": PARAMS[0], "low": -10, "high": 0, "init": -8},
              {"path": PARAMS[1], "type": "int", "low": -10, "high": 0, "init": -1}],
    "early_abort": {"enabled": False}, "parallel": {"n_jobs": 1, "threads": 1},
}


def stand_in(task) -> Evaluated:
    """A fitness from the settings alone: the holes weight, scaled by the pieces (the rung)."""
    config = task.config
    value = -get_path(config, PARAMS[0]) * config["pieces"]
    record = TuningRecord(fitness=value, score=int(value), pieces=config["pieces"], stop="done", aborted=False,
                          abort_piece=None, threshold=None, seconds=0.0)
    return Evaluated(record, [int(value)])


def test_a_runs_finished_candidates_are_the_samples_and_its_fitness_a_column(tmp_path, monkeypatch):
    bench = load_benchmark("rung_correlation")
    monkeypatch.setattr(bench, "evaluate", stand_in)
    config = tmp_path / "ladder.yaml"
    config.write_text(yaml.safe_dump(RUN))
    run = tmp_path / "runs" / "tune-1"
    run.mkdir(parents=True)
    store = RunStore(run, [Param(PARAMS[0]), Param(PARAMS[1], "int")])

    def row(generation, index, values, fitness, key, aborted=False):
        record = TuningRecord(fitness=fitness, score=int(fitness), pieces=12 if aborted else 99,
                              stop="aborted" if aborted else "done", aborted=aborted, abort_piece=12 if aborted else None,
                              threshold=50.0 if aborted else None, seconds=1.0)
        store.append_evaluation(Evaluation(generation, index, values, record, False, key))

    row(0, 0, [-8.0, -1], 900.0, "a")
    row(0, 1, [-2.5, -4], 100.0, "b")
    row(0, 2, [-1.0, -3], 300.0, "c", aborted=True)  # stopped late: its score at the stop beats b's final one
    row(1, 0, [-8.0, -1], 900.0, "a")  # the same setting again: once
    row(1, 1, [-5.0, -7], 500.0, "d")
    row(1, 2, [-0.5, -2], 700.0, "e", aborted=True)
    out = tmp_path / "out"
    assert bench.main([str(config), "--rungs", "0", "1", "--from-run", str(run), "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["from_run"] == "tune-1" and summary["samples"] == 5 and summary["aborted"] == "last"
    assert summary["values"] == [[-8.0, -1], [-2.5, -4], [-1.0, -3], [-5.0, -7], [-0.5, -2]]
    assert summary["stopped"] == [False, False, True, False, True]
    assert summary["fitness"] == {"rung 0": [80.0, 25.0, 10.0, 50.0, 5.0], "rung 1": [240.0, 75.0, 30.0, 150.0, 15.0],
                                  "run": [900.0, 100.0, 300.0, 500.0, 700.0]}
    # the run's order: a > d > b > c = e (the stopped ones last, tied), against rung 0's a > d > b > c > e
    assert summary["spearman"]["run"]["rung 0"] == 0.9747
    # with its 95% interval (Fisher's z, standard error sqrt(1.06 / (n - 3)))
    assert summary["spearman_95"]["run"]["rung 0"] == pytest.approx([0.6362, 0.9985], abs=2e-4)
    assert summary["spearman"]["rung 1"]["rung 0"] == 1.0
    assert len((out / "scores.jsonl").read_text().splitlines()) == 10
    # a second call reads every score back and scores nothing
    monkeypatch.setattr(bench, "evaluate", lambda task: (_ for _ in ()).throw(AssertionError("scored again")))
    assert bench.main([str(config), "--rungs", "0", "1", "--from-run", str(run), "--out", str(out)]) == 0
    # left out, the stopped ones are not samples, and the finished ones rank as rung 0 does
    assert bench.main([str(config), "--rungs", "0", "1", "--from-run", str(run), "--out", str(out),
                       "--aborted", "drop"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["samples"] == 3 and summary["stopped"] == [False, False, False]
    assert summary["fitness"]["run"] == [900.0, 100.0, 500.0] and summary["spearman"]["run"]["rung 0"] == 1.0


def test_a_spearman_interval_is_fisher_s_z_with_fieller_s_error():
    bench = load_benchmark("rung_correlation")
    assert bench.spearman_interval(0.5, 10) == pytest.approx((-0.2102, 0.8648), abs=1e-4)
    assert bench.spearman_interval(1.0, 8)[1] == pytest.approx(1.0, abs=1e-4)  # +-1 clipped, not infinite
    assert bench.spearman_interval(0.9, 4) is None  # too few pairs to say anything
