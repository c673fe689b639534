"""Tuning runs: the space mapping, memo, early abort, determinism across workers, resume, bad
configs, and best.yaml as the export to the solver. Small configs: a narrow beam on a short prefix."""

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from engine.config import ConfigError
from experiments import run as run_cli
from optimizers import fitness
from optimizers import run as tuning
from optimizers import run_loop
from optimizers.config import EarlyAbortConfig
from optimizers.early_abort import EarlyAbort, reference_curve
from optimizers.fitness import TuningRecord
from optimizers.space import Param, Space
from optimizers.store import RunStore
from solver import load_solver_config, solve

TINY = {
    "name": "tiny",
    "seed": 3,
    "algorithm": "ga",
    "ga": {"population": 6, "generations": 3, "elitism": 1, "hall_of_fame": 4},
    "solver": {"policy": "beam", "evaluator": "chys_quality", "beam": {"width": 10}},
    "pieces": 120,
    "space": [
        {"path": "evaluator.features.occupied_cells", "type": "int", "low": 300, "high": 900},
        {"path": "evaluator.features.covered_empty_cells", "type": "int", "low": -1600, "high": -600},
        {"path": "beam.score_share", "low": 0.0, "high": 0.4},
    ],
    "init_sigma": 0.3,
    "early_abort": {"k": 3, "margin": 300},
    "parallel": {"threads": 1},
}


def write_config(tmp_path, data=None, name="run.yaml", **changes):
    data = {**(data or TINY), **changes, "runs_dir": str(tmp_path / "runs")}
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def start(tmp_path, overrides=(), data=None, on_evaluation=None, **changes):
    config = tuning.load_run_config(write_config(tmp_path, data, **changes), list(overrides))
    run = tuning.tune(config, on_evaluation=on_evaluation)
    return run.dir, run.state


def rows(run_dir, name="evaluations.csv"):
    with open(run_dir / name, newline="") as f:
        return list(csv.DictReader(f))


RESULT_COLUMNS = ("generation", "index", "fitness", "score", "pieces", "stop", "aborted", "abort_piece",
                  "threshold", "cached", "key")


def results(run_dir):
    return [tuple(r[c] for c in RESULT_COLUMNS) for r in rows(run_dir)]


# ------------------------------------------------------------------------------------------------
# the space


def test_space_round_trip_rounding_and_feature_terms():
    base = {"policy": "beam", "beam": {"width": 20, "score_ranking": "score", "clear_min_height": [16, 16, 17, 17]},
            "evaluator": {"name": "e", "features": {"holes": {"weight": -20.0, "delta": True}, "occupied_cells": 600.0}}}
    space = Space([
        Param("beam.width", "int", 4, 30),
        Param("beam.score_ranking", "choice", choices=("score_per_clear", "score")),
        Param("evaluator.features.covered_empty_cells", "float", -50, 0),  # an alias of holes
        Param("evaluator.features.occupied_cells", "float", 0, 1000),
        Param("evaluator.features.interior_row_transitions", "int", -2000, 0),  # not listed yet: added
        Param("beam.clear_min_height.2", "int", 10, 20),
    ], base)
    # the initial point: the base's values (the midpoint for a feature it does not list)
    assert space.init_values == [20, "score", -20.0, 600.0, -1000, 17]
    # round trip and rounding
    values = [7, "score_per_clear", -12.5, 450.0, -300, 12]
    assert space.decode(space.encode(values)) == values
    assert space.decode([6.49, 0.51, -60.0, 1200.0, 1.0, 15.5]) == [6, "score", -50.0, 1000.0, 0, 16]
    assert space.decode([6.5, 0.49, -1.0, 0.0, -2500.0, 9.0]) == [7, "score_per_clear", -1.0, 0.0, -2000, 10]
    # floats to 12 significant digits: genes an ulp apart (crossover arithmetic) are one setting
    assert space.decode([7, 0, -12.499999999999998, 450.00000000000006, -300, 12]) == values
    assert space.decode([7, 0, -12.4999, 450.0001, -300, 12])[2:4] == [-12.4999, 450.0001]
    # applying: a mapping term keeps delta, a bare number stays bare, an unlisted feature is added
    cfg = space.config(values)
    assert cfg["beam"]["width"] == 7 and cfg["beam"]["score_ranking"] == "score_per_clear"
    assert cfg["evaluator"]["features"] == {"holes": {"weight": -12.5, "delta": True}, "occupied_cells": 450.0,
                                            "interior_row_transitions": -300}
    assert cfg["beam"]["clear_min_height"] == [16, 16, 12, 17]
    assert base["beam"]["width"] == 20 and base["evaluator"]["features"]["holes"]["weight"] == -20.0  # untouched
    assert space.values_in(cfg) == values
    # uniform samples: ints and choices hit every value, floats stay in bounds
    s = space.sample(np.random.default_rng(0), 400)
    assert set(s[:, 5]) == set(range(10, 21)) and set(s[:, 1]) == {0.0, 1.0}
    assert s[:, 2].min() >= -50 and s[:, 2].max() <= 0
    # the same feature twice (by its alias) is refused
    from optimizers.space import SpaceError

    with pytest.raises(SpaceError, match="space.1.path: evaluator.features.holes is already tuned by space.0"):
        Space([Param("evaluator.features.covered_empty_cells", "float", -50, 0),
               Param("evaluator.features.holes", "float", -50, 0)], base)


def test_space_refuses_a_base_value_outside_the_bounds():
    from optimizers.space import SpaceError

    with pytest.raises(SpaceError, match=r"space.0.init: .*beam.width = 20 is outside \[4, 12\]"):
        Space([Param("beam.width", "int", 4, 12)], {"beam": {"width": 20}})
    with pytest.raises(SpaceError, match=r"space.0.path: beam.widht: no such setting"):
        Space([Param("beam.widht", "int", 4, 12)], {"beam": {"width": 20}})


# ------------------------------------------------------------------------------------------------
# memo and early abort


def test_duplicates_are_simulated_once(tmp_path):
    # one int gene with 3 values and 6 individuals per generation: duplicates are certain
    data = {**TINY, "space": [{"path": "beam.width", "type": "int", "low": 8, "high": 10}],
            "early_abort": {"enabled": False}}
    before = fitness.SIMULATIONS
    run_dir, _ = start(tmp_path, data=data)
    simulated = fitness.SIMULATIONS - before
    table = rows(run_dir)
    assert len(table) == 18
    keys = {r["key"] for r in table}
    assert simulated == len(keys) <= 3
    assert sum(r["cached"] == "False" for r in table) == simulated
    by_key = {}
    for r in table:  # every repeat has the first evaluation's result
        by_key.setdefault(r["key"], (r["beam.width"], r["fitness"], r["pieces"]))
        assert by_key[r["key"]] == (r["beam.width"], r["fitness"], r["pieces"])


def test_blend_crossover_keeps_genes_equal_in_both_parents_exactly():
    import random

    from deap import tools

    from optimizers.tuners.ga import _blend

    a0, b0 = [0.163, 0.21, 2200.0], [0.163, 0.25, 2100.0]
    random.seed(5)
    a, b = _blend(list(a0), list(b0), alpha=0.3)
    random.seed(5)
    da, db = tools.cxBlend(list(a0), list(b0), alpha=0.3)
    assert a[0] == b[0] == 0.163  # DEAP's own gives 0.163 plus or minus an ulp for some draws
    assert (a[1:], b[1:]) == (da[1:], db[1:])  # the same draws for the other genes
    random.seed(0)
    drifted = sum(tools.cxBlend([0.163], [0.163], alpha=0.3)[0][0] != 0.163 for _ in range(200))
    assert drifted > 0  # the case the wrapper exists for


def rec(fitness: float, aborted: bool = False) -> TuningRecord:
    """A record of the given fitness (what early abort reads of one)."""
    return TuningRecord(fitness=float(fitness), score=int(fitness), pieces=1, stop="aborted" if aborted else "done",
                        aborted=aborted, abort_piece=1 if aborted else None, threshold=None, seconds=0.0)


def test_early_abort_threshold_unit():
    ea = EarlyAbort(EarlyAbortConfig(k=2, margin=10, every=1))
    assert ea.threshold() is None
    ea.observe(0, [(0, "a", rec(100), [10, 50, 100]), (1, "b", rec(90), [30, 40, 90]),
                   (2, "c", rec(500, True), [1000])])  # an aborted candidate never counts
    assert list(ea.threshold()) == [0, 30, 80] and ea.kth_best() == 90
    ea.observe(1, [(0, "d", rec(95), [40, 60])])  # stuck after 2 pieces: counts with its last value
    assert [e[3] for e in ea.best] == ["a", "d"]
    assert list(ea.threshold()) == [0, 40, 50]
    ea2 = EarlyAbort(EarlyAbortConfig(k=1, margin=0, every=2))
    ea2.observe(0, [(0, "a", rec(1), [5, 6, 7, 8])])
    assert list(ea2.threshold()) == [-np.inf, 6, -np.inf, 8]
    # relative: the K-th best value times (1 - relative), then minus margin
    ea3 = EarlyAbort(EarlyAbortConfig(k=1, margin=100, relative=0.25))
    ea3.observe(0, [(0, "a", rec(4000), [400, 2000, 4000])])
    assert list(ea3.threshold()) == [200, 1400, 2900]


def test_early_abort_lag_is_slack_in_pieces_before_the_kth_best_curve():
    curves = [(0, "a", rec(90), [0, 0, 40, 60, 90]), (1, "b", rec(80), [0, 30, 50, 70, 80])]
    plain = EarlyAbort(EarlyAbortConfig(k=2, margin=5))
    plain.observe(0, curves)
    assert list(plain.threshold()) == [-5, -5, 35, 55, 75]
    # a high floor: nothing cleared until piece 4, where it clears 85 at once
    late = [0, 0, 0, 0, 85]
    assert min(np.array(late) - plain.threshold()) < 0  # stopped at piece 3 without slack
    lagged = EarlyAbort(EarlyAbortConfig(k=2, margin=5, lag=2))
    lagged.observe(0, curves)
    # the floor at piece t is the K-th best value at piece t - 2 (the first value before that)
    assert list(lagged.threshold()) == [-5, -5, -5, -5, 35]
    assert min(np.array(late) - lagged.threshold()) >= 0  # kept to its clear
    # the reference keeps its own lag; the higher floor wins at each piece
    both = EarlyAbort(EarlyAbortConfig(k=2, margin=5, lag=2, reference_lag=1), reference=np.array([10.0, 20, 30, 40, 50]))
    both.observe(0, curves)
    assert list(both.threshold()) == [5, 5, 15, 25, 35]


def test_early_abort_reference_is_a_floor_from_the_first_generation():
    ea = EarlyAbort(EarlyAbortConfig(k=2, margin=10, relative=0.5), reference=np.array([100.0, 200, 300]))
    assert list(ea.threshold()) == [40, 90, 140]  # no candidate finished: the reference alone
    ea.observe(0, [(0, "a", rec(900), [500, 600, 700, 900]), (1, "b", rec(800), [50, 700, 250, 800])])
    # the higher of the K-th best (50, 600, 250, 800) and the reference (100, 200, 300, then 300 again)
    assert list(ea.threshold()) == [40, 290, 140, 390]
    # with a lag of L pieces the floor at piece t is the reference's value at piece t - L
    lagged = EarlyAbort(EarlyAbortConfig(k=2, margin=10, relative=0.5, reference_lag=2),
                        reference=np.array([100.0, 200, 300, 400]))
    assert list(lagged.threshold()) == [40, 40, 40, 90]
    off = EarlyAbort(EarlyAbortConfig(enabled=False), reference=np.array([100.0]))
    assert off.threshold() is None


RECORD = Path(__file__).resolve().parents[1] / "configs" / "records" / "geek-1395326.txt"


def test_a_reference_record_is_replayed_once_while_its_file_is_unchanged(tmp_path, monkeypatch):
    import engine

    calls = []
    real = engine.replay
    monkeypatch.setattr(engine, "replay", lambda *a, **k: calls.append(1) or real(*a, **k))
    copy = tmp_path / "record.txt"
    copy.write_text(RECORD.read_text())
    first = reference_curve(copy, "geek")
    first[-1] = 0  # the caller's copy: the cached curve is not touched
    assert reference_curve(copy, "geek")[-1] == 1_395_326 and len(calls) == 1
    copy.write_text(",".join(RECORD.read_text().split(",")[:200]))  # the record's first 200 operations
    shorter = reference_curve(copy, "geek")
    assert len(calls) == 2 and len(shorter) < len(first)


def test_a_run_keeps_pace_with_its_reference_record(tmp_path):
    # the 1,395,326 record leads a 10-wide beam on 120 pieces: generation 0 is already pruned by it
    run_dir, state = start(tmp_path, overrides=["ga.generations=1"],
                           early_abort={"k": 3, "margin": 300, "reference": str(RECORD)})
    floor = reference_curve(RECORD, "geek")[:120] - 300
    curves = RunStore(run_dir, []).read_curves()
    table = [r for r in rows(run_dir) if r["cached"] == "False"]
    assert sum(r["aborted"] == "True" for r in table) >= 3
    for r in table:
        curve = curves[(0, r["key"])]
        below = np.flatnonzero(curve < floor[: len(curve)])
        if r["aborted"] == "True":
            p = int(r["abort_piece"])
            assert below[0] == p - 1 and float(r["threshold"]) == floor[p - 1] and len(curve) == p
        else:
            assert len(below) == 0 and len(curve) == 120
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["early_abort"]["reference"] == "configs/records/geek-1395326.txt"


def test_memo_reuses_a_record_only_as_the_current_threshold_would_give_it():
    memo = fitness.Memo("score_at_abort")
    finished = TuningRecord(fitness=90.0, score=90, pieces=4, stop="done", aborted=False, abort_piece=None,
                            threshold=None, seconds=1.5)
    memo.store("f", finished, [10, 20, 30, 90])
    assert memo.lookup("f", None) == finished.repeated() and finished.repeated().seconds == 0.0
    assert memo.lookup("f", np.array([0, 20, 30, 90.0])) == finished.repeated()
    cut = memo.lookup("f", np.array([-np.inf, 25, 0, 0]))  # this threshold stops it at piece 2
    assert (cut.aborted, cut.abort_piece, cut.threshold, cut.fitness, cut.pieces) == (True, 2, 25.0, 20.0, 2)
    memo.store("a", cut, [10, 20])
    assert memo.lookup("a", np.array([-np.inf, 15, 0, 0])) is None  # laxer: it would run further
    assert memo.lookup("a", np.array([11, 99, 0, 0])).abort_piece == 1  # stricter: stopped earlier
    assert memo.lookup("missing", None) is None
    zero = fitness.Memo("zero")
    zero.store("f", finished, [10, 20, 30, 90])
    assert zero.lookup("f", np.array([-np.inf, 25, 0, 0])).fitness == 0.0


def test_early_abort_uses_only_earlier_generations(tmp_path):
    # random search: diverse candidates, so many are aborted and the check below is not vacuous
    run_dir, state = start(tmp_path, overrides=["algorithm=random", "random.samples=6", "random.generations=4"])
    table = rows(run_dir)
    assert sum(r["aborted"] == "True" for r in table) >= 3  # the check below is not vacuous
    curves = RunStore(run_dir, []).read_curves()
    latest = {}  # key -> full curve of its last simulation
    for g in range(4):
        ea = EarlyAbort(EarlyAbortConfig(k=3, margin=300))
        for h in range(g):
            ea.observe(h, [(int(r["index"]), r["key"], rec(float(r["fitness"])),
                            latest[r["key"]]) for r in table if int(r["generation"]) == h and r["aborted"] == "False"])
        expected = ea.threshold()
        if g == 0:
            assert expected is None
        assert state.history[g].kth_best == ea.kth_best()
        for r in (r for r in table if int(r["generation"]) == g):
            if r["cached"] == "False":
                latest[r["key"]] = curves[(g, r["key"])]
            curve = latest[r["key"]]
            if r["aborted"] == "True":
                p = int(r["abort_piece"])
                assert float(r["threshold"]) == expected[p - 1]
                assert curve[p - 1] < expected[p - 1] and (curve[: p - 1] >= expected[: p - 1]).all()
                assert float(r["fitness"]) == curve[p - 1] == int(r["score"])
            elif expected is not None:
                n = min(len(curve), len(expected))
                assert (curve[:n] >= expected[:n]).all()


# ------------------------------------------------------------------------------------------------
# determinism and resume


def test_same_results_with_one_and_two_workers(tmp_path):
    one, _ = start(tmp_path / "a")
    two, _ = start(tmp_path / "b", overrides=["parallel.n_jobs=2"])
    assert results(one) == results(two)
    assert [r["fitness"] for r in rows(one)] == [r["fitness"] for r in rows(two)]
    best = [yaml.safe_load((d / "best.yaml").read_text()) for d in (one, two)]
    for b, folder in zip(best, ("a", "b")):
        del b["meta"]["run"]
        assert b["meta"].pop("config") == str(tmp_path / folder / "run.yaml")  # the run's YAML, outside the project
    assert best[0] == best[1]


@pytest.mark.slow  # a cluster of worker processes; test_same_results_with_one_and_two_workers holds the pool's
def test_dask_local_cluster_gives_the_same_results(tmp_path):
    pytest.importorskip("dask.distributed")
    one, _ = start(tmp_path / "a", overrides=["ga.generations=2"])
    two, _ = start(tmp_path / "b", overrides=["ga.generations=2", "parallel.backend=dask", "parallel.n_jobs=2"])
    assert results(one) == results(two)


class Interrupt(Exception):
    pass


#: each tuner on TINY's budget scale: a few candidates, three generations
SMALL_RUNS = {
    "ga": [],
    "pso": ["algorithm=pso", "pso.particles=6", "pso.iterations=3", "pso.boundary=shrink"],
    "random": ["algorithm=random", "random.samples=6", "random.generations=3"],
    "cmaes": ["algorithm=cmaes", "cmaes.population=6", "cmaes.generations=3", "cmaes.sigma=0.3"],
    "cem": ["algorithm=cem", "cem.samples=6", "cem.generations=3", "cem.elite=0.5"],
    "optuna": ["algorithm=optuna", "optuna.population=6", "optuna.generations=3", "optuna.sampler=cmaes"],
}


@pytest.mark.parametrize("algorithm", ["ga", "pso", "cmaes", "cem", "optuna"])
def test_resume_after_an_interruption_equals_an_uninterrupted_run(tmp_path, algorithm):
    over = SMALL_RUNS[algorithm]
    before = fitness.SIMULATIONS
    whole, whole_state = start(tmp_path / "a", overrides=over)
    whole_sims = fitness.SIMULATIONS - before

    seen = []

    def crash(row):  # dies in the second generation, after its third evaluation
        seen.append(row)
        if row["generation"] == 1 and sum(r["generation"] == 1 for r in seen) == 3:
            raise Interrupt()

    before = fitness.SIMULATIONS
    with pytest.raises(Interrupt):
        start(tmp_path / "b", overrides=over, on_evaluation=crash)
    first_sims = fitness.SIMULATIONS - before
    (cut,) = list((tmp_path / "b" / "runs").iterdir())
    assert sum(r["generation"] == "1" for r in rows(cut)) == 3
    assert RunStore(cut, []).load_checkpoint()["generation"] == 1  # the checkpoint: before generation 2

    before = fitness.SIMULATIONS
    resumed_rows = []
    state = tuning.resume(cut, on_evaluation=resumed_rows.append).state
    resumed_sims = fitness.SIMULATIONS - before
    assert all((r["generation"], r["index"]) not in {(s["generation"], s["index"]) for s in seen} for r in resumed_rows)
    assert first_sims + resumed_sims == whole_sims  # no finished evaluation simulated again
    assert results(cut) == results(whole)
    pick = lambda h: {k: v for k, v in h.as_dict().items() if "seconds" not in k}
    assert [pick(h) for h in state.history] == [pick(h) for h in whole_state.history]
    assert state.best == whole_state.best


#: a tuning run of the segment search, which saves its search as it goes (`IN_PLAY`): the small
#: search of tests/test_segment.py, saving after every piece index
SEGMENT_RUN = {**TINY, "algorithm": "cmaes", "cmaes": {"population": 2, "generations": 2, "sigma": 0.3},
               "solver": {"policy": "segment", "evaluator": "transitions",
                          "segment": {"nodes": 40, "states": 2, "depth": 12, "first_depth": 34,
                                      "checkpoint_seconds": 1e-6}},
               "pieces": 46, "early_abort": {"enabled": False},
               "space": [{"path": "evaluator.features.column_transitions", "low": -3.0, "high": -0.5}]}


def test_a_candidate_stopped_in_its_search_goes_on_from_it_when_the_run_resumes(tmp_path, monkeypatch):
    """A run stopped in a candidate's segment search (its third, the first of generation 1, at
    piece index 40) keeps that search in in-play/; resumed, the candidate goes on from there, and
    the run ends as one never stopped, with nothing left in in-play/."""
    from solver.segment import Segment

    whole, whole_state = start(tmp_path / "a", data=SEGMENT_RUN)
    assert not (whole / run_loop.IN_PLAY).exists()
    searches, loaded = [], []
    layer_stop, load = Segment.layer_stop, Segment._load

    def stop_in_the_third(self, t, *args):
        if t == 0 and self.checkpoint is not None and not self.warming:  # not a warm-up
            searches.append(self.checkpoint)
        if len(searches) == 3 and t == 40:
            raise Interrupt()
        return layer_stop(self, t, *args)

    def loading(self, kcfg):
        state = load(self, kcfg)
        loaded.append(state.next_index)  # the piece index it goes on from
        return state

    monkeypatch.setattr(Segment, "layer_stop", stop_in_the_third)
    with pytest.raises(Interrupt):
        start(tmp_path / "b", data=SEGMENT_RUN)
    (cut,) = list((tmp_path / "b" / "runs").iterdir())
    assert [p.name for p in (cut / run_loop.IN_PLAY).iterdir()] == [searches[2].name]
    assert searches[2].name.startswith("g1-") and searches[2].parent == cut / run_loop.IN_PLAY
    monkeypatch.setattr(Segment, "layer_stop", layer_stop)
    monkeypatch.setattr(Segment, "_load", loading)
    state = tuning.resume(cut).state
    assert loaded == [42]  # saved after piece index 41 was expanded, the layer stop of 40 checked after it
    assert results(cut) == results(whole) and state.best == whole_state.best
    assert not (cut / run_loop.IN_PLAY).exists()


# ------------------------------------------------------------------------------------------------
# bad configs: one line, exit 2, no run directory


BAD = [
    ({"spce": []}, "spce: unknown key"),
    ({"ga": {"population": "many"}}, "ga.population: Input should be a valid integer"),
    ({"space": [{"path": "beam.score_share", "low": 0.5, "high": 0.1}]}, "space.0.low: low (0.5) > high (0.1)"),
    ({"solver": {"evaluator": "no_such_preset"}}, "solver.evaluator: no_such_preset: no such file or preset"),
    ({"solver": None, "solver_config": "missing-solver.yaml"}, "solver_config: missing-solver.yaml: file not found"),
    ({"ga": {"selection": {"name": "tournamnt"}}}, "ga.selection.name: unknown selection operator 'tournamnt'"),
    ({"ga": {"mutation": {"name": "flip"}}}, "ga.mutation.name: unknown mutation operator 'flip'"),
    ({"space": [{"path": "beam.widht", "type": "int", "low": 1, "high": 3}]}, "space.0.path: beam.widht: no such setting"),
    ({"space": [{"path": "beam.width", "type": "int", "low": 0, "high": 3, "init": 2}]}, "space.0.low: beam.width = 0 makes the solver config invalid"),
]


def test_a_bad_reference_record_is_a_config_error(tmp_path, capsys):
    (tmp_path / "bad.txt").write_text("N,X3")
    for value, message in [("nowhere.txt", "early_abort.reference: no such file: nowhere.txt"),
                           ("bad.txt", "early_abort.reference: " + str(tmp_path / "bad.txt") + ": not a valid record")]:
        path = write_config(tmp_path, early_abort={"reference": value})
        assert run_cli.main([str(path), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {path}: ") and message in err, err
    assert not (tmp_path / "runs").exists()


def test_a_reference_in_the_project_is_recorded_from_the_checkout_and_found_from_any_folder(tmp_path, monkeypatch):
    root = Path(tuning.__file__).resolve().parents[1]
    monkeypatch.chdir(tmp_path)  # a run started, or resumed, from another folder
    config = tuning.load_run_config(root / "configs" / "ga_record.yaml")
    assert config.early_abort.reference == "configs/records/geek-1395326.txt"  # no path of the machine
    assert EarlyAbort.for_run(config).reference[-1] == 1_395_326
    outside = tmp_path / "mine.txt"  # a record outside the checkout stays where it is
    outside.write_bytes((root / "configs" / "records" / "geek-1395326.txt").read_bytes())
    config = tuning.load_run_config(root / "configs" / "ga_record.yaml", [f"early_abort.reference={outside}"])
    assert config.early_abort.reference == str(outside) and EarlyAbort.for_run(config).reference[-1] == 1_395_326


@pytest.mark.parametrize("change, message", BAD)
def test_bad_config_is_one_line_exit_2_and_no_run_dir(tmp_path, capsys, change, message):
    path = write_config(tmp_path, **change)
    code = run_cli.main([str(path), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"error: {path}: ") and message in err, err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_bad_override_from_the_real_command_line(tmp_path):
    path = write_config(tmp_path)
    p = subprocess.run([sys.executable, "-m", "experiments.run", str(path), "pso.topology=pyramid", "algorithm=pso"],
                       capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.strip() == f"error: {path}: pso.topology: Input should be 'star' or 'ring'"
    assert not (tmp_path / "runs").exists()


# ------------------------------------------------------------------------------------------------
# best.yaml is the export to the solver


@pytest.mark.parametrize("algorithm", list(SMALL_RUNS))
def test_best_yaml_runs_in_the_solver_with_the_tuned_score(tmp_path, algorithm):
    over = SMALL_RUNS[algorithm]
    run_dir, state = start(tmp_path, overrides=over)
    for name in ("config.yaml", "evaluations.csv", "generations.csv", "best.yaml", "fitness.png", "run.log",
                 "checkpoint.npz"):
        assert (run_dir / name).stat().st_size > 0, name
    assert (run_dir / "fitness.png").read_bytes()[:4] == b"\x89PNG"
    gens = rows(run_dir, "generations.csv")
    assert len(gens) == 3 and float(gens[-1]["best_so_far"]) == max(float(r["fitness"]) for r in rows(run_dir)
                                                                     if r["aborted"] == "False")
    config = load_solver_config(run_dir / "best.yaml")
    meta = config.meta
    assert meta["fitness"] == state.best.fitness and meta["algorithm"] == algorithm
    assert config.evaluator["features"]["occupied_cells"] == meta["parameters"]["evaluator.features.occupied_cells"]
    result = solve(config, record=False)
    assert result.score == meta["score"] and not result.aborted


def test_rescoring_picks_best_yaml_by_the_rescored_result(tmp_path):
    run_dir, state = start(tmp_path, overrides=["ga.generations=2"],
                           rescore={"top": 3, "overrides": {"beam.width": 16, "pieces": 150}})
    table = rows(run_dir, "rescore.csv")
    assert len(table) == 3 and len({r["tuned_key"] for r in table}) == 3
    assert [float(r["tuned_fitness"]) for r in table] == sorted((float(r["tuned_fitness"]) for r in table), reverse=True)
    config = load_solver_config(run_dir / "best.yaml")
    assert config.beam.width == 16 and config.pieces == 150
    best = max(table, key=lambda r: float(r["fitness"]))
    assert config.meta["fitness"] == float(best["fitness"]) == solve(config, record=False).score


def test_init_from_a_previous_best_yaml(tmp_path):
    first, state = start(tmp_path / "a", overrides=["ga.generations=2"])
    best = load_solver_config(first / "best.yaml")
    second, _ = start(tmp_path / "b", overrides=["ga.generations=1", f"init_from={first / 'best.yaml'}"])
    config = yaml.safe_load((second / "config.yaml").read_text())
    assert config["init_from"] is None and config["meta"]["resolved_from"]["init_from"] == str(first / "best.yaml")
    assert [s["init"] for s in config["space"]] == list(best.meta["parameters"].values())
    row = rows(second)[0]  # the first candidate is the initial point itself
    assert [row[p] for p in best.meta["parameters"]] == [str(v) for v in best.meta["parameters"].values()]
    assert float(row["fitness"]) == state.best.fitness


@pytest.mark.parametrize("name", ["ga.yaml", "pso.yaml", "random.yaml", "ga_full.yaml", "ga_record.yaml"])
def test_shipped_configs_validate(name):
    from pathlib import Path

    config = tuning.load_run_config(Path(__file__).resolve().parents[1] / "configs" / name)
    assert config.solver.evaluator["name"] == "chys_quality"
    if name == "ga_record.yaml":  # the full-width tuning: fewer, costlier candidates, pruned by the record
        assert config.solver.beam.width == 9041 and config.pieces is None and config.rescore is None
        assert (config.early_abort.relative, config.early_abort.margin, config.early_abort.reference_lag) == (0.005, 1000, 10)
        assert reference_curve(config.early_abort.reference, "geek")[-1] == 1_395_326
        return
    assert config.population * config.generations >= 288
    if name == "ga_full.yaml":
        assert config.solver.beam.width == 1000 and config.pieces is None and config.solver.pieces is None
        assert config.rescore.top == 5 and config.rescore.overrides == {"beam.width": 9041, "pieces": None}
        assert config.early_abort.enabled and (config.early_abort.k, config.early_abort.margin) == (20, 1000)


def test_a_command_line_rescore_override_sets_one_setting_not_a_section():
    """``rescore.overrides.online.games=4`` on the command line nests {online: {games: 4}}; it must
    set online.games alone and keep the rest of the online section (estimate: splitting here)."""
    from optimizers.space import with_settings

    path = Path(__file__).resolve().parents[1] / "configs" / "cmaes_standard_split.yaml"
    config = tuning.load_run_config(path, ["rescore.overrides.online.games=7", "rescore.overrides.beam.width=3"])
    assert config.rescore.overrides == {"online.games": 7, "seed": 100000, "beam.width": 3}
    solver = with_settings(config.solver.model_dump(mode="json"), config.rescore.overrides)
    assert solver["online"] == {"games": 7, "estimate": "splitting"} and solver["beam"]["width"] == 3


# ------------------------------------------------------------------------------------------------
# the GA's operator tables, the swarm's topologies, settings by dotted path, the run state


def test_every_ga_operator_is_a_table_entry_the_config_accepts():
    from optimizers.tuners import ga
    from optimizers.tuners.ga import CROSSOVERS, MUTATIONS, SELECTIONS, GAConfig

    space = Space([Param("a", "float", -1, 1), Param("b", "int", 0, 5), Param("c", "choice", choices=("x", "y"))],
                  {"a": 0.0, "b": 2, "c": "x"})
    combos = [(s, c, m) for s in SELECTIONS for c in CROSSOVERS for m in MUTATIONS]
    for s, c, m in combos[:: 7] + [("roulette", "sbx", "uniform_int"), ("best", "none", "none")]:
        settings = GAConfig(population=6, generations=3, selection={"name": s}, crossover={"name": c},
                            mutation={"name": m})
        tuner = ga.GA(space, settings, np.random.default_rng(1))
        for _ in range(3):
            x = tuner.ask()
            assert x.shape == (6, 3) and (x >= space.lower).all() and (x <= space.upper).all()
            tuner.tell(1.0 + np.abs(x).sum(axis=1))  # positive: roulette needs it
    with pytest.raises(ValueError, match="unknown crossover operator 'blnd' \\(known: blend, uniform, "):
        GAConfig(crossover={"name": "blnd"})
    one_gene = Space([Param("a", "float", -1, 1)], {"a": 0.0})
    from optimizers.space import SpaceError

    with pytest.raises(SpaceError, match="ga.crossover.name: two_point needs at least 2 parameters"):
        ga.GA(one_gene, GAConfig(crossover={"name": "two_point"}), np.random.default_rng(1))
    ga.GA(one_gene, GAConfig(crossover={"name": "sbx"}), np.random.default_rng(1))


def test_the_swarm_topologies_are_the_configs_choices():
    from typing import get_args

    from optimizers.tuners import pso
    from optimizers.tuners.pso import PSOConfig

    assert tuple(pso.TOPOLOGIES) == get_args(PSOConfig.model_fields["topology"].annotation)
    ring = PSOConfig(topology="ring", k=2, p=1)
    assert pso.TOPOLOGIES["ring"].best_options(ring) == {"p": 1, "k": 2}
    assert pso.TOPOLOGIES["star"].best_options(ring) == {}


def test_settings_by_dotted_path():
    from engine.paths import PathError
    from optimizers.space import with_settings

    base = {"beam": {"width": 20, "clear_min_height": [16, 17]}, "online": None,
            "evaluator": {"features": {"holes": {"weight": -20.0, "delta": True}}}}
    out = with_settings(base, {"beam.width": 16, "beam.clear_min_height.1": 18, "online.games": 2,
                               "lookahead.depth": 3, "evaluator.features.covered_empty_cells": -5.0})
    assert out["beam"] == {"width": 16, "clear_min_height": [16, 18]}
    assert out["online"] == {"games": 2} and out["lookahead"] == {"depth": 3}
    assert out["evaluator"]["features"] == {"holes": {"weight": -5.0, "delta": True}}  # by its alias
    assert base["beam"]["width"] == 20 and base["online"] is None  # a copy
    with pytest.raises(PathError, match=r"^beam.width: is not a mapping or list, cannot set beam.width.x$"):
        with_settings(base, {"beam.width.x": 1})
    with pytest.raises(PathError, match=r"^beam.clear_min_height.2: the list has 2 items \(0 to 1\)$"):
        with_settings(base, {"beam.clear_min_height.2": 1})


def test_the_run_state_round_trips_through_its_state_file(tmp_path):
    from engine.statefile import Fields, read_state, write_state
    from optimizers.state import RunState
    from optimizers.run_loop import RunLoop

    config = tuning.load_run_config(write_config(tmp_path), ["ga.generations=2"])
    tuner = RunLoop(config, tmp_path)
    checkpoint = tuner.fresh_state().state_dict()
    assert list(checkpoint) == ["generation", "optimizer", "early_abort", "history", "best", "rescored", "done",
                                "noise", "elites", "validated", "instances_seen"]
    history = {"generation": 0, "best": 2.0, "mean": 1.5, "median": 1.5, "worst": 1.0, "evaluations": 2,
               "simulated": 2, "aborted": 0, "pieces": 240, "eval_seconds": 0.5, "wall_seconds": 0.6,
               "best_so_far": 2.0, "kth_best": None}
    best = {"fitness": 2.0, "score": 2, "generation": 0, "index": 1, "key": "k", "values": [300, -600, 0.1]}
    rescored = {"fitness": 3.0, "score": 3, "generation": 0, "index": 1, "key": "r", "tuned_key": "k",
                "tuned_fitness": 2.0, "values": [300, -600, 0.1], "rank": 0}
    checkpoint.update(generation=1, history=[history], best=best, rescored=rescored, done=True)
    write_state(tmp_path / "state.npz", checkpoint, "a run")
    read = Fields(read_state(tmp_path / "state.npz", "a run", 2**20), tmp_path / "state.npz")
    state = RunState.from_state(read, config, tuner.space)
    assert state.history[0].pieces == 240 and state.best.index == 1 and state.rescored.tuned_key == "k"
    again = state.state_dict()
    assert {k: again[k] for k in ("generation", "history", "best", "rescored", "done")} == \
           {k: checkpoint[k] for k in ("generation", "history", "best", "rescored", "done")}
    assert [list(h) for h in again["history"]] == [list(history)]  # the columns in their order


# ------------------------------------------------------------------------------------------------
# seeded games: common random numbers, seeds per generation, a fitness that sees top-outs

GAMES_RUN = {
    "name": "games", "seed": 2, "algorithm": "random", "random": {"samples": 4, "generations": 3},
    "solver": {"policy": "one_ply", "rules": "course", "evaluator": "el_tetris", "seed": 40, "pieces": 60,
               "online": {"games": 2}},
    "space": [{"path": "evaluator.features.holes", "low": -10, "high": 0},
              {"path": "evaluator.features.landing_height", "low": -10, "high": 0}],
    "early_abort": {"enabled": False}, "parallel": {"threads": 1},
}


@pytest.mark.parametrize("seeds", ["fixed", "per_generation"])
def test_every_candidate_of_a_generation_plays_the_same_seeds(tmp_path, seeds):
    from optimizers.config import GamesConfig
    from optimizers.run_loop import RunLoop

    config = tuning.load_run_config(write_config(tmp_path, GAMES_RUN), [f"games.seeds={seeds}"])
    tuner = RunLoop(config, tmp_path / "run", quiet=True)
    tuner.state = tuner.fresh_state()
    firsts = []
    for g in range(3):
        gen = tuner.propose(g)
        tuner.state.optimizer.tell(np.zeros(len(gen.candidates)))
        played = {c.config["seed"] for c in gen.candidates}
        assert len(played) == 1  # common random numbers within the generation
        firsts.append(played.pop())
    assert firsts == ([40, 40, 40] if seeds == "fixed" else [40, 42, 44])  # 2 games a generation
    assert GamesConfig().seeds == "fixed"


def test_topout_penalty_takes_the_share_of_games_lost(tmp_path):
    from optimizers.fitness import games_fitness

    ends = ["capped", "stuck", "capped", "spawn_blocked"]
    assert games_fitness(1000, ends, 400) == 800 and games_fitness(1000, ends, 0) == 1000
    assert games_fitness(1000, None, 400) == 1000  # the known sequence has no games
    stacker = {**GAMES_RUN, "space": [  # weights that pile pieces up: some games top out before the cap
        {"path": "evaluator.features.holes", "low": -10, "high": 10, "init": 5},
        {"path": "evaluator.features.landing_height", "low": -5, "high": 10, "init": 8}]}
    run_dir, state = start(tmp_path, data=stacker, overrides=["games.topout_penalty=100000", "solver.pieces=400"])
    ev = rows(run_dir)
    lost = [r for r in ev if float(r["fitness"]) < float(r["score"])]
    assert lost and all(float(r["score"]) - float(r["fitness"]) in (50000.0, 100000.0) for r in lost)


def test_games_settings_need_a_policy_of_seeded_games(tmp_path):
    path = write_config(tmp_path, TINY)
    with pytest.raises(ConfigError, match=r"games.seeds: the policy 'beam' plays the known sequence"):
        tuning.load_run_config(path, ["games.seeds=per_generation"])


def test_normalize_scales_the_group_to_the_initial_norm(tmp_path):
    from optimizers.space import SpaceError

    space = Space([Param("evaluator.features.holes", "float", -10, 0), Param("evaluator.features.wells", "float", -10, 0),
                   Param("beam.width", "int", 1, 50)],
                  {"evaluator": {"features": {"holes": -3.0, "wells": -4.0}}, "beam": {"width": 10}},
                  normalize=["evaluator.features.holes", "evaluator.features.wells"])
    assert space.norm == 5.0
    a, b = space.config([-6.0, -8.0, 7]), space.config([-0.6, -0.8, 7])
    assert a == b and a["evaluator"]["features"] == {"holes": -3.0, "wells": -4.0} and a["beam"]["width"] == 7
    assert space.config([-1.0, 0.0, 7])["evaluator"]["features"] == {"holes": -5.0, "wells": 0.0}
    # values scaled once stay as they are (scaling them again moved a 12th digit of 93 in these 2,000)
    rng = np.random.default_rng(0)
    for _ in range(2000):
        once = space.scaled([*rng.uniform(-10, 0, 2), 7])
        assert space.scaled(once) == once
    for group, message in ((["beam.width", "evaluator.features.holes"], "normalize.0: beam.width is int"),
                           (["evaluator.features.holes"], "at least two"),
                           (["evaluator.features.nope", "evaluator.features.holes"], "not a parameter")):
        with pytest.raises(SpaceError, match=message):
            Space(space.params, space.base, normalize=group)
    config = tuning.load_run_config(write_config(tmp_path, GAMES_RUN), [
        "normalize=[evaluator.features.holes, evaluator.features.landing_height]"])
    assert config.normalize == ["evaluator.features.holes", "evaluator.features.landing_height"]
    with pytest.raises(ConfigError, match="normalize.0: evaluator.features.wells is not a parameter"):
        tuning.load_run_config(write_config(tmp_path, GAMES_RUN), ["normalize=[evaluator.features.wells, x]"])


def test_successive_halving_end_to_end(tmp_path):
    rungs = "[{settings: {pieces: 60, beam.width: 4}}, {settings: {pieces: 120, beam.width: 8}, early_abort: true}]"
    run_dir, state = start(tmp_path, overrides=["algorithm=sha", "sha.candidates=6", "sha.eta=3", f"sha.rungs={rungs}"])
    ev = rows(run_dir)
    assert [sum(r["generation"] == str(g) for r in ev) for g in (0, 1)] == [6, 2]
    first = [r for r in ev if r["generation"] == "0"]
    assert max(int(r["pieces"]) for r in first) == 60 and not any(r["aborted"] == "True" for r in first)
    best = load_solver_config(run_dir / "best.yaml")
    assert (best.pieces, best.beam.width, best.meta["generation"]) == (120, 8, 1)  # the last rung only competes
    assert best.meta["fitness"] == max(float(r["fitness"]) for r in ev if r["generation"] == "1")
    assert solve(best).score == best.meta["score"]
    with pytest.raises(ConfigError, match=r"sha: the settings of generation 1 .*beam.width"):
        tuning.load_run_config(write_config(tmp_path / "bad", TINY), [
            "algorithm=sha", "sha.rungs=[{settings: {pieces: 60}}, {settings: {beam.width: 0}}]"])
