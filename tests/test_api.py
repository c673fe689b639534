"""The public tuning API as docs/tuning.md shows it: the example block runs as written."""

import re
from pathlib import Path

import pytest

from engine.config import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def docs_example() -> str:
    text = (ROOT / "docs" / "tuning.md").read_text()
    section = text.split("## From Python", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_docs_example_runs_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the example names configs/ga.yaml as in a checkout: the shipped one
    namespace: dict = {}
    exec(compile(docs_example(), "docs/tuning.md", "exec"), namespace)
    run, tuner = namespace["run"], namespace["tuner"]
    assert run.dir.resolve().parent == tmp_path.resolve() / "runs" and (run.dir / "best.yaml").is_file()
    assert len(run.evaluations()) == 8 and list(run.generations().generation) == [0, 1]
    assert run.best.fitness == run.evaluations().fitness.max()
    printed = capsys.readouterr().out.splitlines()
    assert int(printed[-1]) == run.best.score  # best.yaml played again gives the run's best score
    assert tuner.generation == 2


def test_tune_takes_a_mapping_and_names_its_key(tmp_path):
    from optimizers import tune

    with pytest.raises(ConfigError, match=r"^config: ga.population: "):
        tune({"name": "t", "algorithm": "ga", "ga": {"population": 0}, "solver": {"policy": "greedy"}, "pieces": 10,
              "space": [{"path": "evaluator.features.holes", "low": -5, "high": 0}], "runs_dir": str(tmp_path)})
    assert list(tmp_path.iterdir()) == []
