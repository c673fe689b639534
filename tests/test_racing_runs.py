"""Racing and validated picks in the run loop (issue 58), on the synthetic fitness of `toy_fitness`:
the race's batches, its elites, a stop mid-race and mid-validation, the held-out instances, the
config's refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from engine.config import ConfigError
from optimizers import run as tuning
from optimizers import run_loop
from optimizers.validation import Validated, paired_interval

import toy_fitness

RACE = {"first_test": 3, "max_instances": 10, "survivors": 2}
#: a race of 6 candidates a generation over 3 generations, validated on 6 held-out instances
RACING = {"random": {"samples": 6, "generations": 3}, "games": {"seeds": "fixed"}, "race": RACE,
          "validation": {"instances": 6, "seed": 5000}}


config, rows, drop, Stop = toy_fitness.run_config, toy_fitness.rows, toy_fitness.without_seconds, toy_fitness.Stop


def weights(row):
    return tuple(float(row[p]) for p in toy_fitness.TARGET)


def test_a_race_plays_shared_instances_and_carries_its_elites(tmp_path, monkeypatch):
    toy = toy_fitness.install(monkeypatch, noise=300.0, shared=2000.0)
    run = tuning.tune(config(tmp_path, **RACING))
    table = rows(run.dir)
    by_gen = {g: [r for r in table if int(r["generation"]) == g] for g in range(3)}
    for g, got in by_gen.items():
        entrants = len({weights(r) for r in got})
        assert entrants == (6 if g == 0 else 8)  # 6 proposals, and from generation 1 the 2 elites
        first = [weights(r) for r in got if int(r["index"]) < entrants * RACE["first_test"]]
        assert sorted(first) == sorted([*{*first}] * RACE["first_test"])  # the first batch: each entrant 3 times ...
        assert len(got) < entrants * RACE["max_instances"]  # ... and the losers stop early
    # generation 1 races the 2 elites of generation 0 beside its 6 proposals: their results are known (memo)
    elites = run.state.elites
    assert len(elites) == 2
    cached = [r for r in by_gen[1] if r["cached"] == "True"]
    assert cached and all(weights(r) in {weights(x) for x in by_gen[0]} for r in cached)
    # training games are seeds 100 on (instance i: seed 100 + i); the validation plays 5000..5005 and nothing else
    played = {seed for _, seed, _ in toy.calls}
    assert played <= set(range(100, 100 + 10 + 3)) | set(range(5000, 5006))
    assert set(range(5000, 5006)) <= played
    # each race plays first an instance no race before it played (irace's T_new = 1), then the known ones
    assert run.state.instances_seen >= RACE["first_test"] + 2
    elite_rows = [r for r in by_gen[1] if weights(r) in {weights(x) for x in by_gen[0]}]
    for point in {weights(r) for r in elite_rows}:  # an elite pays for the new instance, not for the known ones
        mine = [r["cached"] for r in elite_rows if weights(r) == point]
        assert "False" in mine and "True" in mine
    # the run's best is the last race's winner, at its mean over the instances it played
    best = run.state.best
    mine = [float(r["fitness"]) for r in by_gen[2] if weights(r) == tuple(best.values)]
    assert RACE["first_test"] <= len(mine) <= RACE["max_instances"]
    assert best.fitness == pytest.approx(np.mean(mine))

def test_the_validation_states_the_paired_difference_with_its_interval(tmp_path, monkeypatch, capsys):
    toy_fitness.install(monkeypatch, noise=300.0, shared=2000.0)
    run = tuning.tune(config(tmp_path, **RACING))
    table = rows(run.dir, "validation.csv")
    assert [(int(r["instance"]), r["player"]) for r in table] == [(i, p) for i in range(6) for p in ("pick", "start")]
    pick = [float(r["fitness"]) for r in table if r["player"] == "pick"]
    start = [float(r["fitness"]) for r in table if r["player"] == "start"]
    v = run.state.validated
    d, low, high = paired_interval(pick, start, 0.95)
    assert (v.difference, v.low, v.high) == (d, low, high)
    assert v.pick == pick and v.start == start and v.instances == 6 and v.seed == 5000
    # the true values: the start (-8, -1) is far from the target (-3, -6); the pick is better, and
    # the shared draws cancel in the differences
    assert low > 0
    meta = yaml.safe_load((run.dir / "best.yaml").read_text())["meta"]["validation"]
    assert meta["interval"] == [low, high] and meta["verdict"] == "better than the start"
    from experiments.run import _report

    _report(run)
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("validated on 6 held-out instances (seeds 5000 on, none seen in tuning)")
    assert last.endswith("better than the start")


def test_each_race_plays_new_instances_first_then_those_the_elites_know():
    from optimizers.racing import RaceConfig, race_order

    s = RaceConfig(first_test=3, max_instances=6, new_instances=1)
    assert race_order(0, s) == [0, 1, 2, 3, 4, 5]
    assert race_order(4, s) == [4, 0, 1, 2, 3, 5]
    assert race_order(9, s) == [9, 0, 1, 2, 3, 4]
    assert race_order(4, RaceConfig(first_test=3, max_instances=6, new_instances=2)) == [4, 5, 0, 1, 2, 3]
    assert race_order(7, RaceConfig(first_test=3, max_instances=6, new_instances=0)) == [0, 1, 2, 3, 4, 5]


def test_paired_interval_on_hand_made_differences():
    mean, low, high = paired_interval([3.0, 5.0, 7.0], [2.0, 3.0, 4.0], 0.95)  # differences 1, 2, 3
    half = 4.302652729911275 / math.sqrt(3)  # t(0.975, 2) x sd 1 / sqrt(3)
    assert mean == 2.0 and low == pytest.approx(2.0 - half) and high == pytest.approx(2.0 + half)
    assert paired_interval([5.0, 6.0], [4.0, 5.0], 0.95) == (1.0, 1.0, 1.0)  # no spread: a point
    v = Validated.of(tuning_held(), 0.95, [1.0, 2.0], [1.0, 2.0])
    assert v.verdict == "not told apart from the start"


def tuning_held():
    from optimizers.instances import InstanceSet

    return InstanceSet("held-out", "seed", 1000, 1, 2)


def test_a_race_stopped_midway_resumes_to_the_uninterrupted_end(tmp_path, monkeypatch):
    toy_fitness.install(monkeypatch, noise=300.0, shared=2000.0)
    whole = tuning.tune(config(tmp_path / "a", **RACING))
    cut = toy_fitness.stopped_run(tmp_path / "b", 1, 13, **RACING)  # inside the race's 2nd batch
    resumed = tuning.resume(cut)
    assert drop(rows(cut)) == drop(rows(whole.dir))
    assert resumed.state.best == whole.state.best
    assert resumed.state.elites == whole.state.elites
    assert resumed.state.validated == whole.state.validated


def test_a_validation_stopped_midway_plays_only_what_is_missing(tmp_path, monkeypatch):
    toy = toy_fitness.install(monkeypatch, noise=300.0, shared=2000.0)
    whole = tuning.tune(config(tmp_path / "a", **RACING))
    calls = len(toy.calls)
    count = {"n": 0}

    def stopping(task):
        count["n"] += 1
        if count["n"] == calls - 5:  # the 7th of the validation's 12 plays
            raise Stop()
        return toy(task)

    monkeypatch.setattr(run_loop, "evaluate", stopping)
    with pytest.raises(Stop):
        tuning.tune(config(tmp_path / "b", **RACING))
    (cut,) = list((tmp_path / "b" / "runs").iterdir())
    assert len(rows(cut, "validation.csv")) == 6
    before = len(toy.calls)
    monkeypatch.setattr(run_loop, "evaluate", toy)
    resumed = tuning.resume(cut)
    assert len(toy.calls) - before == 6  # the 6 plays not written down, nothing else
    assert resumed.state.validated == whole.state.validated


def test_a_racing_run_is_reproduced_by_its_config_and_seed(tmp_path, monkeypatch):
    toy_fitness.install(monkeypatch, noise=300.0, shared=2000.0)
    a = tuning.tune(config(tmp_path / "a", **RACING))
    b = tuning.tune(config(tmp_path / "b", **RACING))
    assert drop(rows(a.dir)) == drop(rows(b.dir)) and a.state.best == b.state.best


REFUSED = [
    ({"early_abort": {"enabled": True}}, "race: does not go with early_abort.enabled"),
    ({"games": {"seeds": "per_generation"}}, "race: does not go with games.seeds"),
    ({"noise": {"reevaluate": 2}, "games": {"seeds": "per_generation"}}, "race: does not go with noise"),
    ({"rescore": {"top": 2, "overrides": {"seed": 9000}}}, "race: does not go with rescore"),
    ({"algorithm": "sha", "sha": {"candidates": 4, "rungs": [{"settings": {"pieces": 10}}, {}]}},
     "race: does not go with algorithm"),
    ({"solver": {"policy": "greedy", "rules": "geek", "pieces": 20}},
     "race: policy 'greedy' plays the known sequence and has no tie seed"),
    ({"validation": {"instances": 4, "seed": 105}}, "validation.seed: the held-out seeds 105 to 108 include seeds 105 "
                                                    "to 108, which race plays"),
    ({"race": {"first_test": 6, "max_instances": 5}}, "first_test: at most max_instances (5)"),
]


@pytest.mark.parametrize("changes, message", REFUSED)
def test_a_race_refuses_what_it_cannot_honour(tmp_path, changes, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        config(tmp_path, **{**RACING, **changes})


def test_held_out_seeds_are_checked_without_a_race(tmp_path):
    with pytest.raises(ConfigError, match="which the generations' games plays"):
        config(tmp_path, validation={"instances": 4, "seed": 102})  # generation 2 plays seed 102
    config(tmp_path / "ok", validation={"instances": 4, "seed": 104})  # 4 generations: seeds 100..103


# ------------------------------------------------------------------------------------------------
# Optuna's WilcoxonPruner as the race's decider (the ecosystem's baseline)

OPTUNA_PRUNED = {"algorithm": "optuna", "optuna": {"population": 6, "generations": 3, "pruner": "wilcoxon",
                                                   "p_threshold": 0.1, "startup_steps": 2},
                 "games": {"seeds": "fixed"}, "race": {"first_test": 2, "max_instances": 8},
                 "validation": {"instances": 4, "seed": 5000}}


def test_optunas_wilcoxon_pruner_stops_trials_on_the_race_instances(tmp_path, monkeypatch):
    import optuna

    toy_fitness.install(monkeypatch, noise=300.0, shared=2000.0)
    run = tuning.tune(config(tmp_path, **OPTUNA_PRUNED))
    study = optuna.load_study(study_name=run.dir.name, storage=f"sqlite:///{run.dir / 'study.db'}")
    trials = study.get_trials()
    states = [t.state.name for t in trials]
    assert len(trials) == 18 and "PRUNED" in states and "COMPLETE" in states
    for t in trials:  # each trial's steps are the instances it played, 0, 1, ...; a complete one all 8
        assert sorted(t.intermediate_values) == list(range(len(t.intermediate_values)))
        if t.state.name == "COMPLETE":
            assert len(t.intermediate_values) == 8 and t.value == pytest.approx(np.mean(list(t.intermediate_values.values())))
    assert run.state.elites == []  # no elites: the pruner compares with the best trial
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    assert run.state.best.fitness == pytest.approx(max(t.value for t in complete))
    assert len(rows(run.dir)) < 18 * 8  # pruned trials stop early


def test_a_pruned_optuna_race_stopped_midway_resumes_to_the_same_study(tmp_path, monkeypatch):
    import optuna

    toy_fitness.install(monkeypatch, noise=300.0, shared=2000.0)
    whole = tuning.tune(config(tmp_path / "a", **OPTUNA_PRUNED))
    cut = toy_fitness.stopped_run(tmp_path / "b", 2, 15, **OPTUNA_PRUNED)
    resumed = tuning.resume(cut)
    assert drop(rows(cut)) == drop(rows(whole.dir))
    assert resumed.state.best.values == whole.state.best.values

    def trials(run_dir):
        study = optuna.load_study(study_name=run_dir.name, storage=f"sqlite:///{run_dir / 'study.db'}")
        return [(t.state.name, t.params, t.intermediate_values, t.value) for t in study.get_trials()]

    assert trials(cut) == trials(whole.dir)


def test_a_pruner_needs_a_race(tmp_path):
    with pytest.raises(ConfigError, match="optuna.pruner: needs a race section"):
        config(tmp_path, **{**OPTUNA_PRUNED, "race": None})


# ------------------------------------------------------------------------------------------------
# the known sequence: an instance is a tie seed

GEEK_RACE = {"name": "geek-race", "seed": 3, "algorithm": "random", "random": {"samples": 3, "generations": 2},
             "solver": {"policy": "beam", "rules": "geek", "evaluator": "chys_quality", "pieces": 40, "threads": 1,
                        "beam": {"width": 4}},
             "space": [{"path": "beam.score_share", "low": 0.0, "high": 1.0}],
             "early_abort": {"enabled": False}, "games": {"seeds": "fixed"}, "race": {"first_test": 2, "max_instances": 3},
             "validation": {"instances": 2, "seed": 1000}, "parallel": {"n_jobs": 1, "threads": 1}}


def test_on_the_known_sequence_an_instance_is_a_tie_seed(tmp_path):
    from optimizers.config import base_solver
    from optimizers.instances import held_out, training

    c = config(tmp_path, **GEEK_RACE)
    assert [training(c, base_solver(c)).settings(i) for i in range(3)] == [{"beam.tie_seed": i} for i in range(3)]
    assert held_out(c, base_solver(c)).settings(1) == {"beam.tie_seed": 1001}
    with pytest.raises(ConfigError, match="the held-out seeds 2 to 3 include seeds 2 to 3, which race plays"):
        config(tmp_path / "overlap", **{**GEEK_RACE, "validation": {"instances": 2, "seed": 2}})
    with pytest.raises(ConfigError, match="race: the policy is tuned"):
        config(tmp_path / "tuned", **{**GEEK_RACE, "space": [{"path": "policy", "type": "choice",
                                                              "choices": ["beam", "segment"]}]})


@pytest.mark.slow
def test_a_race_on_the_geek_game_plays_tie_seeds(tmp_path):
    run = tuning.tune(config(tmp_path, **GEEK_RACE))
    table = rows(run.dir)
    for g in (0, 1):
        by_entrant = {}
        for r in (r for r in table if int(r["generation"]) == g):
            by_entrant.setdefault(r["beam.score_share"], []).append(r["key"])
        # each entrant plays tie seeds 0, 1 (and 2 if it survives the test): a config each
        assert all(2 <= len(keys) <= 3 and len(set(keys)) == len(keys) for keys in by_entrant.values())
    v = run.state.validated
    played = rows(run.dir, "validation.csv")
    assert [float(r["fitness"]) for r in played if r["player"] == "pick"] == v.pick and len(v.start) == 2


def test_no_progress_bar_floods_output_that_is_not_a_terminal(tmp_path, monkeypatch, capsys):
    toy_fitness.install(monkeypatch, noise=300.0, shared=2000.0)
    tuning.tune(config(tmp_path, **RACING), quiet=False)
    out = capsys.readouterr()
    assert "eval/s" not in out.err and "eval/s" not in out.out and "%|" not in out.err  # (a bar's marks)
    assert "generation 0 (1 of 3): best" in out.out  # the generation lines stay


class TieToy:
    """A fitness of the known sequence for the run loop: a setting's value (its ``beam.score_share``
    near 0.3 best) plus its tie seed's draw, shared by every setting (a lucky order of ties is lucky
    for all) and its own; the curve climbs linearly over 20 pieces, held to the threshold as the
    solver would hold it."""

    def __init__(self):
        self.calls = []

    def __call__(self, task):
        from optimizers.fitness import Evaluated, TuningRecord, aborted_record, first_abort

        share, tie = float(task.config["beam"]["score_share"]), int(task.config["beam"].get("tie_seed", 0))
        self.calls.append((share, tie, task.threshold is not None))
        tag = int(share * 1e9)
        score = int(round(10_000 - 20_000 * (share - 0.3) ** 2 + np.random.default_rng([tie]).normal(0, 800)
                          + np.random.default_rng([tie, tag]).normal(0, 150)))
        curve = [int(round(score * (t + 1) / 20)) for t in range(20)]
        piece = first_abort(curve, task.threshold)
        if piece is not None:
            return Evaluated(aborted_record(curve, piece, float(task.threshold[piece - 1]), task.aborted_fitness), curve)
        return Evaluated(TuningRecord(fitness=float(score), score=score, pieces=20, stop="done", aborted=False,
                                      abort_piece=None, threshold=None, seconds=0.0), curve)


GEEK_ABORT = {**GEEK_RACE, "random": {"samples": 5, "generations": 3}, "race": {"first_test": 3, "max_instances": 5},
              "early_abort": {"enabled": True, "margin": 0, "relative": 0.0}, "validation": None}


def test_on_the_known_sequence_a_race_holds_a_candidate_to_the_incumbent_on_the_same_tie_seed(tmp_path, monkeypatch):
    toy = TieToy()
    monkeypatch.setattr(run_loop, "evaluate", toy)
    monkeypatch.setattr(run_loop.RunLoop, "warm_up", lambda self, pool: None)
    run = tuning.tune(config(tmp_path, **GEEK_ABORT))
    table = rows(run.dir)
    assert not any(r["aborted"] == "True" for r in table if r["generation"] == "0")  # no incumbent yet
    later = [r for r in table if r["generation"] != "0"]
    aborted = [r for r in later if r["aborted"] == "True"]
    assert aborted and all(int(r["abort_piece"]) < 20 for r in aborted)
    # the incumbent (each race's first entrant, its first row) is never held to a threshold, never aborted
    for g in ("1", "2"):
        mine = [r for r in table if r["generation"] == g]
        first = min(mine, key=lambda r: int(r["index"]))["beam.score_share"]
        assert all(r["aborted"] == "False" for r in mine if r["beam.score_share"] == first)
    # a fresh instance has no threshold in the step that opens it: the incumbent plays it beside the others
    assert any(not held for _, _, held in toy.calls[len([r for r in table if r["generation"] == "0"]):])


def test_a_race_with_the_early_abort_stopped_midway_resumes_to_the_uninterrupted_end(tmp_path, monkeypatch):
    monkeypatch.setattr(run_loop, "evaluate", TieToy())
    monkeypatch.setattr(run_loop.RunLoop, "warm_up", lambda self, pool: None)
    whole = tuning.tune(config(tmp_path / "a", **GEEK_ABORT))
    for cut_at in (3, 7):  # inside generation 1's first step, and inside its second
        cut = toy_fitness.stopped_run(tmp_path / f"b{cut_at}", 1, cut_at, **GEEK_ABORT)
        resumed = tuning.resume(cut)
        assert drop(rows(cut)) == drop(rows(whole.dir)), cut_at
        assert resumed.state.best == whole.state.best


@pytest.mark.slow
def test_a_race_is_the_same_on_one_worker_and_on_two(tmp_path):
    """Real games (the 1-ply player on 10 x 10 boards): each race step is one batch on the pool,
    and its decisions come from the results alone, so the workers change nothing."""
    run = {"name": "race-workers", "seed": 2, "algorithm": "cmaes", "cmaes": {"population": 5, "generations": 2,
                                                                              "sigma": 0.3},
           "solver": {"policy": "one_ply", "rules": "standard_10x10", "evaluator": "dellacherie", "seed": 1,
                      "pieces": 300, "online": {"games": 2}},
           "space": [{"path": "evaluator.features.holes", "low": -8, "high": 0},
                     {"path": "evaluator.features.row_transitions", "low": -5, "high": 0}],
           "early_abort": {"enabled": False}, "race": {"first_test": 3, "max_instances": 5, "survivors": 2},
           "validation": {"instances": 3, "seed": 1000}, "runs_dir": str(tmp_path / "runs")}
    out = []
    for jobs in (1, 2):
        path = tmp_path / f"run{jobs}.yaml"
        path.write_text(yaml.safe_dump({**run, "parallel": {"n_jobs": jobs, "threads": 1}}, sort_keys=False))
        out.append(tuning.tune(tuning.load_run_config(path)))
    assert drop(rows(out[0].dir)) == drop(rows(out[1].dir))
    assert out[0].state.best == out[1].state.best and out[0].state.validated == out[1].state.validated
