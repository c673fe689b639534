"""The best weight set as a user means it (issue 60 item 3): best.yaml holds what the run tuned and
what replaying it needs, its evaluator named and described as tuned; evaluator.yaml and
``python -m experiments.export`` give the evaluator alone, which any solver config can name."""

import yaml

from experiments import export
from optimizers import run as tuning
from solver import SolverConfig, load_solver_config

import toy_fitness

WEIGHTS = list(toy_fitness.TARGET)


def tuned_run(tmp_path, monkeypatch):
    toy_fitness.install(monkeypatch, noise=0.0)
    data = {**toy_fitness.RUN, "runs_dir": str(tmp_path / "runs")}
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return tuning.tune(tuning.load_run_config(path))


def test_best_yaml_holds_the_tuned_settings_and_what_replays_them(tmp_path, monkeypatch):
    run = tuned_run(tmp_path, monkeypatch)
    best = yaml.safe_load((run.dir / "best.yaml").read_text())
    meta = best.pop("meta")
    assert set(best) == {"policy", "rules", "evaluator", "seed", "pieces"}  # no default, no other policy's section
    assert best["evaluator"]["name"] == "toy-tuned"
    assert best["evaluator"]["description"].startswith("el_tetris's terms with the weights tuned by toy (random, seed 5")
    for path in WEIGHTS:
        assert best["evaluator"]["features"][path.split(".")[-1]] == meta["parameters"][path]
    # played back it is the run's pick, every default filled in
    pick = SolverConfig.model_validate(best)
    assert pick.online.games == 1 and pick.seed == 100 and pick.policy == "one_ply"  # the solver's own games


def test_evaluator_yaml_and_the_export_command_give_the_evaluator_alone(tmp_path, monkeypatch, capsys):
    run = tuned_run(tmp_path, monkeypatch)
    written = yaml.safe_load((run.dir / "evaluator.yaml").read_text())
    best = yaml.safe_load((run.dir / "best.yaml").read_text())
    assert written == best["evaluator"]
    out = tmp_path / "mine.yaml"
    assert export.main([str(run.dir), "-o", str(out), "--name", "mine"]) == 0
    assert yaml.safe_load(out.read_text()) == {**written, "name": "mine"}
    assert capsys.readouterr().out == f"wrote {out}\n"
    solver = tmp_path / "solver.yaml"
    solver.write_text(f"policy: one_ply\nrules: course\npieces: 30\nevaluator: {out}\n")
    config = load_solver_config(solver)
    assert config.evaluator == str(out)
    assert export.main([str(out)]) == 0 and yaml.safe_load(capsys.readouterr().out) == {**written, "name": "mine"}


def test_export_names_a_missing_source(tmp_path, capsys):
    assert export.main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (f"error: {tmp_path / 'best.yaml'}: no such file (no evaluation of the "
                                               "run finished yet?)")
