"""A resume checks everything it reads: config.yaml against the copy the checkpoint keeps (one line
naming the key), provenance.json and curves.jsonl (rebuilt from the checkpoint, or the evaluations
whose curves are lost simulated again), and without its checkpoint a run's generations.csv
comes out as the uninterrupted run's (best_so_far counts no later generation)."""

import csv
import json
import shutil

import pytest
import yaml

from experiments import run as run_cli
from optimizers import run as tuning
from test_run_faults import SMALL
from test_tuning import write_config

#: the small run of tests/test_run_faults.py, at a seed whose second generation beats the first
RUN = {**SMALL, "seed": 6}
#: the columns of generations.csv that do not depend on timing or on what the memo spared
SAME = ("generation", "best", "mean", "median", "worst", "evaluations", "aborted", "best_so_far", "kth_best")


def run_main(*args):
    return run_cli.main([*map(str, args), "--quiet"])


def generations(run_dir):
    with open(run_dir / "generations.csv", newline="") as f:
        return [{k: row[k] for k in SAME} for row in csv.DictReader(f)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The small run finished, and the same run stopped after 3 evaluations of its second generation."""
    tmp = tmp_path_factory.mktemp("runs")
    finished = tuning.tune(tuning.load_run_config(write_config(tmp / "a", RUN), [])).dir
    seen = []

    def stop(row):
        seen.append(row)
        if sum(r["generation"] == 1 for r in seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tuning.tune(tuning.load_run_config(write_config(tmp / "b", RUN), []), on_evaluation=stop)
    (stopped,) = (tmp / "b" / "runs").iterdir()
    return finished, stopped


@pytest.fixture
def stopped(runs, tmp_path):
    copy = tmp_path / "stopped"
    shutil.copytree(runs[1], copy)
    return copy


@pytest.fixture
def finished(runs, tmp_path):
    copy = tmp_path / "finished"
    shutil.copytree(runs[0], copy)
    return copy


def edit_config(run_dir, change):
    path = run_dir / "config.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.mark.parametrize("change, key, words", [
    (lambda d: d.update(pieces=30), "pieces", "30 here, 60 in the run's checkpoint"),
    (lambda d: d["ga"].update(population=8), "ga.population", "8 here, 6 in the run's checkpoint"),
    (lambda d: d["space"][0].update(high=950), "space.0.high", "950.0 here, 900.0 in the run's checkpoint"),
])
def test_a_config_yaml_edited_after_the_run_began_is_refused(stopped, capsys, change, key, words):
    edit_config(stopped, change)
    assert run_main("--resume", stopped) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {stopped / 'config.yaml'}: {key}: {words}: config.yaml was edited after the run began; "
                   "only parallel.* and runs_dir may change when resuming (the run must end as it would have), so put it back"]


def test_parallel_and_runs_dir_may_change_in_config_yaml(stopped, runs):
    edit_config(stopped, lambda d: (d["parallel"].update(threads=1), d.update(runs_dir="results/elsewhere")))
    assert run_main("--resume", stopped) == 0
    assert generations(stopped) == generations(runs[0])


def test_a_damaged_provenance_json_is_rebuilt_from_the_checkpoint(stopped):
    path = stopped / "provenance.json"
    first = json.loads(path.read_text())
    path.write_text('[{"python": "3.11", ')  # cut short
    assert run_main("--resume", stopped) == 0
    sessions = json.loads(path.read_text())
    assert sessions[0] == first[0] and len(sessions) == 2
    assert sessions[1]["rebuilt"].startswith("provenance.json could not be read (not JSON: line 1, column")
    assert sessions[1]["rebuilt"].endswith("its 1 earlier session(s) rebuilt from checkpoint.npz's copy")
    path.write_text('{"not": "a list"}')
    assert run_main("--resume", stopped) == 0
    assert json.loads(path.read_text())[:2] == sessions


def test_evaluations_whose_curves_were_lost_are_simulated_again(stopped, runs):
    """curves.jsonl cut in half: the stopped generation's evaluations without a curve are
    simulated again (a traceback before), and the run ends as the uninterrupted one."""
    path = stopped / "curves.jsonl"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    assert run_main("--resume", stopped) == 0
    assert generations(stopped) == generations(runs[0])


def test_without_its_checkpoint_a_run_ends_as_the_uninterrupted_one(finished, runs):
    """The checkpoint moved aside (as the refusal of a damaged one says to): every evaluation is
    read back from evaluations.csv, and best_so_far counts only the generations up to each."""
    (finished / "checkpoint.npz").rename(finished / "checkpoint.npz.bad")
    assert run_main("--resume", finished) == 0
    rows = generations(finished)
    assert rows == generations(runs[0])
    assert float(rows[0]["best_so_far"]) == float(rows[0]["best"]) < float(rows[1]["best"])  # not the later one's
