"""The `optuna` tuner: Optuna's TPE and CMA-ES samplers through ask/tell on known functions, and in
the run loop on a synthetic fitness (tests/toy_fitness.py): the study in study.db that Optuna
loads, early-aborted candidates as pruned trials, and resume (stopped during a generation, or
between telling the study and writing the checkpoint) ending as an uninterrupted run."""

import csv

import numpy as np
import pytest
import yaml

optuna = pytest.importorskip("optuna")

from engine.statefile import Fields  # noqa: E402
from optimizers import run as tuning  # noqa: E402
from optimizers.space import Param, Space  # noqa: E402
from optimizers.store import RunDamaged, RunStore  # noqa: E402
from optimizers.tuners.optuna_samplers import STUDY_FILE, OptunaConfig, OptunaTuner  # noqa: E402

import toy_fitness  # noqa: E402


def box():
    params = [Param(f"p{i}", "float", -1.0, 1.0) for i in range(3)] + [Param("k", "int", 0, 6),
                                                                      Param("c", "choice", choices=("x", "y", "z"))]
    return Space(params, {"p0": 0.5, "p1": 0.5, "p2": 0.5, "k": 5, "c": "x"})


TARGET = np.array([0.3, -0.6, 0.8])


def bowl(v) -> float:
    return -float(((v[:3] - TARGET) ** 2).sum()) - 0.1 * abs(v[3] - 2) - (0.0 if v[4] == 1 else 0.2)


@pytest.mark.parametrize("sampler", ["tpe", "cmaes"])
def test_ask_tell_on_a_bowl_with_pruned_trials(sampler):
    space = box()
    tuner = OptunaTuner(space, OptunaConfig(sampler=sampler, population=10, generations=12, sigma=0.3),
                        np.random.default_rng(1))
    firsts = []
    for g in range(12):
        x = tuner.ask()
        assert x.shape == (10, 5) and (x >= space.lower).all() and (x <= space.upper).all()
        firsts.append(max(bowl(v) for v in x))
        if g == 0:
            assert np.allclose(x[0], space.point())  # the initial point first, as every tuner here
        fitness = np.array([bowl(v) for v in x])
        stopped = [None] * 10
        stopped[9] = 7  # the last of each generation: stopped by the early abort at piece 7
        tuner.tell_run(fitness, stopped)
    trials = tuner.study().trials
    assert len(trials) == 120 and tuner.told == 120
    pruned = [t for t in trials if t.state == optuna.trial.TrialState.PRUNED]
    assert [t.number % 10 for t in pruned] == [9] * 12 and all(t.last_step == 7 for t in pruned)
    assert all(t.value == t.intermediate_values[7] for t in pruned)  # its fitness at the abort
    best = max(firsts)
    assert best > max(firsts[:2]) and best > -0.25  # it learns: the top is 0, the first generations -0.66 and below
    with pytest.raises(ValueError, match="attach it to a run directory first"):  # its state lives beside study.db
        tuner.state_dict()


def test_a_choice_of_plain_values_is_categorical_and_a_vector_round_trips():
    space = box()
    tuner = OptunaTuner(space, OptunaConfig(), np.random.default_rng(0))
    d = tuner._distributions()
    assert d["c"].choices == ("x", "y", "z") and (d["k"].low, d["k"].high) == (0, 6) and d["p0"].high == 1.0
    genes = np.array([0.25, -0.5, 1.0, 3.0, 2.0])
    assert tuner._params(genes) == {"p0": 0.25, "p1": -0.5, "p2": 1.0, "k": 3, "c": "z"}
    assert np.array_equal(tuner._genes(tuner._params(genes)), genes)


# ------------------------------------------------------------------------------------------------
# in the run loop


def config(tmp_path, sampler="tpe", **changes):
    data = {**toy_fitness.RUN, "algorithm": "optuna",
            "optuna": {"sampler": sampler, "population": 6, "generations": 4, "sigma": 0.3}, **changes,
            "runs_dir": str(tmp_path / "runs")}
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return tuning.load_run_config(path)


def evaluations(run_dir):
    with open(run_dir / "evaluations.csv", newline="") as f:
        return [{k: v for k, v in r.items() if k != "seconds"} for r in csv.DictReader(f)]


def study_of(run_dir):
    return optuna.load_study(study_name=run_dir.name, storage=f"sqlite:///{run_dir / STUDY_FILE}")


def trials(run_dir):
    return [(t.number, t.state.name, t.params, t.value, dict(t.intermediate_values)) for t in study_of(run_dir).trials]


def test_a_run_keeps_its_study_in_sqlite_with_aborted_candidates_pruned(tmp_path, monkeypatch):
    toy_fitness.install(monkeypatch, noise=0.0)
    run = tuning.tune(config(tmp_path, "tpe", early_abort={"enabled": True, "k": 1, "margin": 0, "relative": 0.02}))
    study = study_of(run.dir)  # as optuna-dashboard opens it
    rows = evaluations(run.dir)
    assert len(study.trials) == len(rows) == 24
    assert study.direction == optuna.study.StudyDirection.MAXIMIZE
    assert study.metric_names == ["mean score per game"]  # the dashboard's name of the value
    for t, r in zip(study.trials, rows):
        played = {k: float(r[k]) for k in t.params}  # the trial's draw, to 12 significant digits
        assert t.params == pytest.approx(played, rel=1e-11) and len(played) == 2
        if r["aborted"] == "True":
            assert t.state == optuna.trial.TrialState.PRUNED and t.last_step == int(r["abort_piece"])
        else:
            assert t.state == optuna.trial.TrialState.COMPLETE
        assert t.value == float(r["fitness"])
    assert any(r["aborted"] == "True" for r in rows)
    assert study.best_value == run.best.fitness


class Stop(Exception):
    pass


@pytest.mark.parametrize("where, sampler", [("during a generation", "tpe"), ("during a generation", "cmaes"),
                                            ("after telling the study", "cmaes")])
def test_resume_asks_the_same_trials_and_ends_as_an_uninterrupted_run(tmp_path, monkeypatch, sampler, where):
    toy_fitness.install(monkeypatch, noise=0.0)
    whole = tuning.tune(config(tmp_path / "a", sampler))

    if where == "during a generation":
        seen = []

        def stop(row):  # the third evaluation of generation 2: its trials are asked, some running
            seen.append(row)
            if row["generation"] == 2 and sum(r["generation"] == 2 for r in seen) == 3:
                raise Stop()

        with pytest.raises(Stop):
            tuning.tune(config(tmp_path / "b", sampler), on_evaluation=stop)
    else:
        saved = RunStore.save_checkpoint
        calls = []

        def stop(self, checkpoint):  # the checkpoint after generation 1 is never written
            calls.append(checkpoint["generation"])
            if checkpoint["generation"] == 2:
                raise Stop()
            saved(self, checkpoint)

        monkeypatch.setattr(RunStore, "save_checkpoint", stop)
        with pytest.raises(Stop):
            tuning.tune(config(tmp_path / "b", sampler))
        monkeypatch.setattr(RunStore, "save_checkpoint", saved)
    (cut,) = list((tmp_path / "b" / "runs").iterdir())
    at = RunStore(cut, []).load_checkpoint()["generation"]
    # study.db holds the told trials only: generation 2's, asked and some played, are lost with the
    # session (the sampler asks them again from the checkpoint's state); or study.db is ahead of the
    # checkpoint: generation 1 told (12 trials) where the checkpoint counts 6, cut back on resume
    assert (at, len(study_of(cut).trials)) == ((2, 12) if where == "during a generation" else (1, 12))

    resumed = tuning.resume(cut)
    assert evaluations(cut) == evaluations(whole.dir)
    assert resumed.state.best == whole.state.best
    mine = trials(cut)
    assert [t[:4] for t in mine] == [t[:4] for t in trials(whole.dir)] and len(mine) == 24
    assert not (cut / (STUDY_FILE + ".cut")).exists()


def test_a_study_behind_the_checkpoint_is_refused(tmp_path):
    tuner = OptunaTuner(box(), OptunaConfig(population=3), np.random.default_rng(0))
    tuner.attach(tmp_path)
    tuner.tell(np.array([bowl(v) for v in tuner.ask()]))
    saved = tuner.state_dict()  # as the checkpoint holds it: 3 trials told
    (tmp_path / STUDY_FILE).unlink()
    with pytest.raises(RunDamaged, match=r"study.db: the study .* holds 0 trials where the checkpoint has told 3"):
        OptunaTuner.restore(box(), Fields(saved, tmp_path / "checkpoint.npz")).attach(tmp_path)


@pytest.mark.parametrize("ours, theirs", [("cmaes.yaml", "optuna.yaml"),
                                          ("cmaes_standard_split.yaml", "optuna_standard_split.yaml")])
def test_the_shipped_optuna_configs_mirror_ours_at_equal_budget(ours, theirs):
    from pathlib import Path

    configs = Path(__file__).resolve().parents[1] / "configs"
    a, b = (tuning.load_run_config(configs / name) for name in (ours, theirs))
    assert (b.algorithm, a.algorithm) == ("optuna", "cmaes")
    assert (a.population, a.generations) == (b.population, b.generations)
    same = ("seed", "solver", "pieces", "space", "normalize", "init", "games", "early_abort", "rescore", "parallel")
    assert {k: getattr(a, k) for k in same} == {k: getattr(b, k) for k in same}
    assert b.optuna.sigma == a.cmaes.sigma


# ------------------------------------------------------------------------------------------------
# Optuna's own loop: objective(trial) from a run config (issue 60 item 2)


def test_study_optimize_with_the_median_pruner_on_a_toy_run(tmp_path, monkeypatch):
    import optuna
    import yaml as _yaml

    import toy_fitness
    from optimizers.objective import Objective, make_study

    toy = toy_fitness.ToyFitness(noise=300.0, shared=2000.0)
    data = {**toy_fitness.RUN, "games": {"seeds": "fixed"}, "runs_dir": str(tmp_path / "runs"),
            "solver": {**toy_fitness.RUN["solver"], "online": {"games": 6}}}
    path = tmp_path / "run.yaml"
    path.write_text(_yaml.safe_dump(data, sort_keys=False))
    config = tuning.load_run_config(path)
    study = make_study(config, sampler=optuna.samplers.RandomSampler(seed=3),
                       pruner=optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=1))
    study.optimize(Objective(config, evaluate=toy), n_trials=16)
    assert study.metric_names == ["mean score per game"]
    states = [t.state.name for t in study.trials]
    assert "PRUNED" in states and states.count("COMPLETE") >= 3
    for t in study.trials:  # a step is a game: seeds 100, 101, ... one game each
        assert sorted(t.intermediate_values) == list(range(len(t.intermediate_values)))
        if t.state.name == "COMPLETE":
            assert len(t.intermediate_values) == 6
            assert t.value == pytest.approx(np.mean(list(t.intermediate_values.values())))
        else:
            assert len(t.intermediate_values) < 6
    assert {seed for _, seed, games in toy.calls} == set(range(100, 106)) and {g for *_, g in toy.calls} == {1}
    best = study.best_trial.params
    assert set(best) == set(toy_fitness.TARGET)  # by the run's paths
    # the value of a complete trial is the run's fitness of that point over the same 6 games
    (point,) = {w for w, _, _ in toy.calls if np.allclose(w, [best[p] for p in toy_fitness.TARGET], atol=1e-9)}
    mine = [round(toy_fitness.true_value(point) + toy.draw(point, 100 + i, 1)) for i in range(6)]
    assert study.best_value == pytest.approx(np.mean(mine))
