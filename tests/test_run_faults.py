"""A tuning run's faults end in one line and exit status 2, with nothing half-made: a runs_dir that
cannot be used, a run directory another process works in, a damaged checkpoint or evaluations.csv."""

import shutil

import pytest
import yaml

import engine.files as files
from engine.files import FolderLock, output
from experiments import run as run_cli
from optimizers import run as tuning
from test_tuning import TINY, write_config

SMALL = {**TINY, "ga": {**TINY["ga"], "generations": 2}, "pieces": 60}


def run_main(*args):
    return run_cli.main([*map(str, args), "--quiet"])


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished small run, copied afresh by `run_copy` for each test that damages it."""
    tmp = tmp_path_factory.mktemp("finished")
    config = tuning.load_run_config(write_config(tmp, SMALL), [])
    run_dir = tuning.tune(config).dir
    return run_dir


@pytest.fixture
def run_copy(finished, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(finished, copy)
    return copy


def test_a_finished_run_resumes_to_its_end(run_copy, capsys):
    assert run_main("--resume", run_copy) == 0
    assert "best fitness" in capsys.readouterr().out


@pytest.mark.parametrize("make, problem", [
    (lambda t: (t / "runs").write_text("x"), "runs_dir {t}/runs: {t}/runs is not a folder"),
    (lambda t: (t / "f").write_text("x"), "runs_dir {t}/f/runs: {t}/f is not a folder"),
])
def test_a_runs_dir_that_cannot_be_used_is_one_line_and_makes_nothing(tmp_path, capsys, make, problem):
    make(tmp_path)
    root = tmp_path / ("f/runs" if problem.startswith("runs_dir {t}/f") else "runs")
    data = {**SMALL, "runs_dir": str(root)}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    before = sorted(p.name for p in tmp_path.iterdir())
    assert run_main(path) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"error: {problem.format(t=tmp_path)}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_full_disk_is_found_before_the_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(output.shutil, "disk_usage", lambda p: output.shutil._ntuple_diskusage(10**9, 10**9, 5 * 2**20))
    path = write_config(tmp_path, SMALL)
    assert run_main(path) == 2
    assert capsys.readouterr().err.strip() == f"error: runs_dir {tmp_path}/runs: only 5.0 MB free on its disk, 32 MB needed"
    assert not (tmp_path / "runs").exists()  # nothing made: not even the folder made to measure the room


def test_two_runs_in_the_same_second_get_two_directories(tmp_path, monkeypatch):
    monkeypatch.setattr(tuning.time, "strftime", lambda fmt: "20261124-120000")
    config = tuning.load_run_config(write_config(tmp_path, SMALL), [])
    a, b = tuning.make_run_dir(config), tuning.make_run_dir(config)
    assert (a.name, b.name) == ("tiny-20261124-120000", "tiny-20261124-120000-2")


def test_a_config_yaml_that_cannot_be_written_leaves_no_run_directory(tmp_path, monkeypatch):
    def full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tuning, "write_yaml", full)
    config = tuning.load_run_config(write_config(tmp_path, SMALL), [])
    with pytest.raises(files.OutputError, match="cannot write there: No space left on device"):
        tuning.tune(config)
    assert list((tmp_path / "runs").iterdir()) == []


def test_a_run_another_process_works_in_is_not_resumed(run_copy, capsys):
    with FolderLock(run_copy, "run.lock"):  # as the process still running it holds it
        assert run_main("--resume", run_copy) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {run_copy}: another process (pid ")
    assert err[0].endswith("is working in it; wait for it to end or stop it first")
    assert run_main("--resume", run_copy) == 0  # released: the lock goes with its holder


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_checkpoint_says_how_to_go_on(run_copy, capsys, damage):
    path = run_copy / "checkpoint.npz"
    data = path.read_bytes()
    path.write_bytes(b"this is not a state file" if damage == "garbage" else data[: len(data) // 2])
    assert run_main("--resume", run_copy) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {path}: not a state file (not a zip archive)")
    assert "move it aside (mv checkpoint.npz checkpoint.npz.bad) and resume again" in err[0]
    path.rename(run_copy / "checkpoint.npz.bad")  # as the message says
    assert run_main("--resume", run_copy) == 0


@pytest.mark.parametrize("damage, where", [
    ("row", "unreadable line 4"),
    ("header", "its header is not the one this run writes"),
    ("deleted", "the file is missing"),
    ("removed", "rows deleted"),
])
def test_missing_evaluations_are_refused_not_simulated_again(run_copy, capsys, damage, where):
    path = run_copy / "evaluations.csv"
    lines = path.read_text().splitlines(keepends=True)
    if damage == "row":
        lines[3] = "1,2,garbage\n"
    elif damage == "header":
        lines[0] = lines[0].replace("generation", "gen", 1)
    elif damage == "removed":
        del lines[5]
    path.write_text("".join(lines))
    if damage == "deleted":
        path.unlink()
    assert run_main("--resume", run_copy) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {path}: ")
    assert f"are not there ({where}); restore the file, or move checkpoint.npz aside" in err[0]


def test_files_follow_the_users_umask(finished):
    """Every file of a run is created as open() creates files (0o666 less the umask), not 0o600."""
    import os
    import stat

    umask = os.umask(0)
    os.umask(umask)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in finished.iterdir()}
    assert {"checkpoint.npz", "evaluations.csv", "best.yaml", "run.lock"} <= set(modes)
    assert all(m == 0o666 & ~umask for m in modes.values()), modes


@pytest.mark.slow
def test_a_scheduler_that_does_not_answer_is_one_line_and_makes_nothing(tmp_path, capsys, monkeypatch):
    pytest.importorskip("dask.distributed")
    import time

    from engine import parallel

    assert parallel.CONNECT_SECONDS == 10
    monkeypatch.setattr(parallel, "CONNECT_SECONDS", 2)  # the wait is the same at any length: spare the suite 8 s
    path = write_config(tmp_path, SMALL, parallel={"backend": "dask", "scheduler": "tcp://127.0.0.1:9"})
    t = time.monotonic()
    assert run_main(path) == 2
    assert time.monotonic() - t < 20
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: parallel.scheduler: cannot reach tcp://127.0.0.1:9 in 2 s")
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_a_worker_that_cannot_import_the_project_is_named(tmp_path, capsys):
    """A worker whose Python finds another 'engine' first (as one without the project would fail
    to import it): the run names it and stops before making anything, rather than hang at 0/4."""
    pytest.importorskip("dask.distributed")
    import subprocess
    import sys

    from dask.distributed import Client, LocalCluster

    shadow = tmp_path / "shadow" / "engine"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('not the workbench')\n")
    with LocalCluster(n_workers=0, dashboard_address=None, processes=True, host="127.0.0.1") as cluster:
        env = {**__import__("os").environ, "PYTHONPATH": str(shadow.parent)}
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", cluster.scheduler_address,
                                   "--nthreads", "1", "--no-dashboard"], env=env, cwd=tmp_path,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with Client(cluster) as client:
                client.wait_for_workers(1, timeout=60)
            path = write_config(tmp_path, SMALL, parallel={"backend": "dask", "scheduler": cluster.scheduler_address})
            assert run_main(path) == 2
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: parallel.scheduler: worker tcp://")
    assert err[0].endswith("cannot import the project (ImportError: not the workbench)")
    assert not (tmp_path / "runs").exists()


def test_each_session_of_a_run_records_its_provenance(run_copy):
    import json

    sessions = json.loads((run_copy / "provenance.json").read_text())
    assert len(sessions) == 1 and sessions[0]["resumed_at"] is None
    assert sessions[0]["libraries"]["deap"] and sessions[0]["cpus"] >= 1
    assert run_main("--resume", run_copy) == 0
    sessions = json.loads((run_copy / "provenance.json").read_text())
    assert [s["resumed_at"] for s in sessions] == [None, 2]  # the finished run resumed after its 2 generations


def test_the_last_line_numbers_generations_and_candidates_as_the_run_does(run_copy, capsys):
    """From 0, as the per-generation lines ("generation 1 (2 of 2)") and the CSV files do."""
    import csv

    from engine.statefile import read_state
    from optimizers.store import CHECKPOINT_KIND

    best = read_state(run_copy / "checkpoint.npz", CHECKPOINT_KIND, 2**20)["best"]
    assert run_main("--resume", run_copy) == 0
    last = capsys.readouterr().out.splitlines()[0]
    assert f"(generation {best['generation']}, candidate {best['index']});" in last
    with open(run_copy / "evaluations.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f)
                if (int(r["generation"]), int(r["index"])) == (best["generation"], best["index"])]
    assert len(rows) == 1 and float(rows[0]["fitness"]) == best["fitness"]


def test_a_resume_removes_the_temporary_files_of_a_killed_process(run_copy, capsys):
    import subprocess
    import sys

    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)
    stale = [run_copy / f".checkpoint.npz.{dead}.0123456789ab.tmp", run_copy / f".generations.csv.{dead}.abcdef012345.tmp"]
    for path in stale:
        path.write_bytes(b"half")
    assert run_main("--resume", run_copy) == 0
    assert not any(path.exists() for path in stale)
    assert not [p.name for p in run_copy.iterdir() if p.name.endswith(".tmp")]
