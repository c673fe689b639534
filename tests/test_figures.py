"""Run figures, the report and the notebooks, on two tiny runs made once for the session: a GA with
early abort and random search without. The notebooks are executed top to bottom (nbclient)."""

import csv
import os
import shutil
from pathlib import Path

import nbformat
import numpy as np
import pytest
import yaml
from nbclient import NotebookClient

from experiments import figures, report
from optimizers import run as tuning
from test_tuning import TINY
from conftest import load_benchmark

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


@pytest.fixture(scope="session")
def tiny_runs(tmp_path_factory):
    """Two finished tiny runs: (GA with early abort, random search without and with a choice parameter)."""
    root = tmp_path_factory.mktemp("tiny-runs")
    out = []
    choice = {"path": "beam.score_ranking", "type": "choice", "choices": ["score_per_clear", "score"]}
    for name, changes in (("tiny-ga", {}),
                          ("tiny-random", {"algorithm": "random", "random": {"samples": 6, "generations": 3},
                                           "early_abort": {"enabled": False}, "space": [*TINY["space"], choice]})):
        path = root / f"{name}.yaml"
        path.write_text(yaml.safe_dump({**TINY, **changes, "name": name, "runs_dir": str(root / "runs")}))
        run_dir = tuning.tune(path).dir
        out.append(run_dir)
    return out


def csv_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_fitness_figure_draws_the_generations(tiny_runs):
    run = figures.load_run(tiny_runs[0])
    fig = figures.fitness_by_generation(run)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "generation" and ax.get_ylabel() == "fitness (score over 120 pieces)"
    lines = {line.get_label(): line for line in ax.get_lines()}
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    evals = csv_rows(tiny_runs[0] / "evaluations.csv")
    start = float(evals[0]["fitness"])  # generation 0's candidate 0: the initial point (init: point)
    assert sorted(legend) == sorted(["best of generation", "mean", "median", "best so far",
                                     "all candidates (min to max)", "middle half (25-75%)", f"the start ({start:,.0f})"])
    assert list(lines[f"the start ({start:,.0f})"].get_ydata()) == [start, start]
    # the lines are the run's own numbers, read here independently of the figure code
    for g in range(3):
        fitness = [float(r["fitness"]) for r in evals if int(r["generation"]) == g]
        assert len(fitness) == 6
        assert lines["best of generation"].get_ydata()[g] == max(fitness)
        assert lines["median"].get_ydata()[g] == pytest.approx(np.median(fitness), abs=1e-3)
        so_far = max(float(r["fitness"]) for r in evals if int(r["generation"]) <= g)
        assert lines["best so far"].get_ydata()[g] == so_far


@pytest.mark.slow
def test_the_runs_fitness_png_is_the_reports_drawing(tiny_runs, monkeypatch):
    """One drawing of the fitness per generation: the run's fitness.png and the report's
    figures/fitness.png are both `optimizers.artifacts.fitness_figure`, with the bands and the
    start."""
    from optimizers import artifacts

    drawn = []
    real = artifacts.fitness_figure
    monkeypatch.setattr(artifacts, "fitness_figure", lambda *a, **k: drawn.append((a, k)) or real(*a, **k))
    figures.fitness_by_generation(figures.load_run(tiny_runs[0]))
    (args, _), = drawn
    assert args[5] is not None and args[6] is not None  # the bands and the start


def test_thresholds_are_the_ones_the_run_used(tiny_runs):
    run = figures.load_run(tiny_runs[0])
    assert run.thresholds[0] is None  # no candidate had finished before generation 0
    aborted = run.evaluations[run.evaluations["aborted"]]
    assert len(aborted) > 0
    for r in aborted.itertuples():
        t = run.thresholds[r.generation]
        # the abort happened at the first piece whose best fell below the threshold
        assert t[int(r.abort_piece) - 1] == pytest.approx(r.threshold)
        curve = run.curves[r.key]
        assert curve[int(r.abort_piece) - 1] < r.threshold
        assert np.all(curve[: int(r.abort_piece) - 1] >= np.nan_to_num(t[: int(r.abort_piece) - 1], nan=-np.inf))
    # without early abort there is never a threshold
    assert all(t is None for t in figures.load_run(tiny_runs[1]).thresholds.values())


def test_top_candidates_table(tiny_runs):
    run = figures.load_run(tiny_runs[0])
    top = figures.top_candidates(run, 10)
    assert list(top["rank"]) == list(range(1, len(top) + 1)) and len(top) <= 10
    assert list(top.columns[3:6]) == [s["path"] for s in TINY["space"]]
    finished = top[~top["aborted"]]
    assert list(finished["fitness"]) == sorted(finished["fitness"], reverse=True)
    assert top["aborted"].is_monotonic_increasing  # finished candidates first
    best = max(float(r["fitness"]) for r in csv_rows(tiny_runs[0] / "evaluations.csv") if r["aborted"] == "False")
    assert top["fitness"].iloc[0] == best
    best_yaml = yaml.safe_load((tiny_runs[0] / "best.yaml").read_text())
    assert best_yaml["evaluator"]["features"]["occupied_cells"] == top[TINY["space"][0]["path"]].iloc[0]


def test_report_writes_the_figures(tiny_runs, capsys):
    assert report.main([str(tiny_runs[0]), "--compare", str(tiny_runs[1])]) == 0
    out = tiny_runs[0] / "figures"
    for name in (*figures.RUN_FIGURES, "compare.png"):
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name
    assert len(csv_rows(out / "top10.csv")) == len(figures.top_candidates(figures.load_run(tiny_runs[0])))
    table = csv_rows(out / "compare.csv")
    assert [r["algorithm"] for r in table] == ["ga", "random"] and [r["early abort"] for r in table] == ["True", "False"]
    assert int(table[1]["aborted"]) == 0 and int(table[0]["evaluations"]) == 18
    # a choice parameter is drawn on a category axis
    files = report.write_report(tiny_runs[1])
    assert [f.name for f in files] == [*figures.RUN_FIGURES, "top10.csv"]
    fig = figures.parameter_fitness(figures.load_run(tiny_runs[1]))
    assert [t.get_text() for t in fig.axes[3].get_xticklabels()] == ["score", "score_per_clear"]
    assert report.main([str(out)]) == 2
    assert "not a run directory (no config.yaml" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("name, figures_expected", [("fitness_curves", 5), ("compare_runs", 3)])
def test_notebooks_execute(tiny_runs, monkeypatch, name, figures_expected):
    path = NOTEBOOKS / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None for c in code), f"{path} is committed with outputs"
    monkeypatch.setenv(figures.RUN_DIR_ENV, str(tiny_runs[0]))
    monkeypatch.setenv(figures.RUN_DIRS_ENV, os.pathsep.join(map(str, tiny_runs)))
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == figures_expected
    tables = [o for o in outputs if "text/html" in o.get("data", {})]
    assert tables  # the generations / top-10 / summary tables
    text = "".join(o.get("text", "") for o in outputs)
    if name == "fitness_curves":
        assert tiny_runs[0].name in text and "18 evaluations" in text


def test_default_runs_are_found_under_runs(tiny_runs, monkeypatch, tmp_path):
    root = tiny_runs[0].parents[1]
    monkeypatch.delenv(figures.RUN_DIR_ENV, raising=False)
    monkeypatch.delenv(figures.RUN_DIRS_ENV, raising=False)
    monkeypatch.chdir(root / "runs")  # as a notebook in notebooks/: runs/ is found beside it
    assert figures.runs_root() == root / "runs"
    assert sorted(figures.notebook_run_dirs()) == sorted(tiny_runs)  # the newest of each name
    assert figures.notebook_run_dir() == max(tiny_runs, key=lambda p: (p.stat().st_mtime, p.name))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(figures.RunError, match="no run directories"):
        figures.notebook_run_dir()


def test_a_line_cut_short_by_a_kill_is_dropped(tiny_runs, tmp_path):
    # a run killed while appending: the figures and the what-if benchmark read what was whole
    run_dir = tmp_path / tiny_runs[1].name
    shutil.copytree(tiny_runs[1], run_dir)
    whole = figures.load_run(run_dir)
    with open(run_dir / "evaluations.csv", "a") as f:
        f.write("3,0,412.5,-")
    with open(run_dir / "curves.jsonl", "a") as f:
        f.write('{"tag": [3, 0], "key": "ab')
    cut = figures.load_run(run_dir)
    assert cut.evaluations.equals(whole.evaluations) and cut.curves.keys() == whole.curves.keys()
    whatif = load_benchmark("abort_whatif")
    generations = whatif.load(run_dir)
    assert [g for g, _ in generations] == [0, 1, 2]
    assert sum(len(c) for _, c in generations) == len(whole.curves)
