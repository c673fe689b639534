"""The end of a solve is safe: a Ctrl-C or SIGTERM once the search is over is held until the output
set is committed (the record written, said, exit status 130); the commit leaves the folder there at
every instant, and a set a killed commit left aside (where two names cannot be swapped at once) is
found again by the next read (replay, view, results). The signal and kill tests run the command in
a subprocess, the commit held open by its test hook (`engine.files.COMMIT_PAUSE_ENV`)."""

import glob
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import engine.files as files
from engine.files import output
import importlib
from experiments import solve as cli

solving = importlib.import_module("solver.solve")  # (the package exports the function under that name)

ROOT = Path(__file__).resolve().parents[1]
GREEDY = "policy: greedy\nevaluator: pierre_dellacherie\npieces: 6\n"
#: the segment search of tests/test_segment.py's command-line test (its kernels, cached)
SEGMENT = ["configs/solve/segment.yaml", "pieces=60", "threads=1", "segment.nodes=40", "segment.states=2",
           "segment.depth=12", "segment.first_depth=34"]


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text(GREEDY)
    return path


def set_of(folder):
    return {p.name: p.read_text() for p in folder.iterdir()}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("where", ["verifying", "committing"])
def test_a_signal_after_the_search_is_held_until_the_set_is_written(tmp_path, config, monkeypatch, capsys, sig, where):
    """The signal comes while the record is verified by the replayer, or while the set is committed:
    the record is written whole all the same, the command says so and exits with 130."""
    out = tmp_path / "out"
    sent = []

    def signal_first(real):
        def wrapped(*a, **k):
            os.kill(os.getpid(), sig)  # delivered before the next line of Python
            sent.append(sig)
            return real(*a, **k)
        return wrapped

    if where == "verifying":
        monkeypatch.setattr(solving, "attach_record", signal_first(solving.attach_record))
    else:
        monkeypatch.setattr(output, "_fsync_dir", signal_first(output._fsync_dir))
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert cli.main([str(config), "--out", str(out), "--quiet"]) == 130
    assert sent and (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers  # put back
    captured = capsys.readouterr()
    line = f"interrupted ({signal.Signals(sig).name}) after the search: the record was written"
    assert captured.err.strip().splitlines() == [line]
    if sig == signal.SIGINT:  # as docs/policies.md quotes it
        assert f"`{line}`" in " ".join((ROOT / "docs" / "policies.md").read_text().split())
    assert captured.out.startswith("0 points, 6 pieces (record_end; done)")
    assert sorted(p.name for p in out.iterdir()) == sorted(cli.OUTPUT_FILES)
    assert json.loads((out / "summary.json").read_text())["pieces"] == 6


def test_a_signal_before_the_search_ends_still_stops_at_once(tmp_path, config, monkeypatch, capsys):
    """Until the search is over a signal stops the command as before: nothing written, exit 130."""
    def interrupted(*a, **k):
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("the signal did not stop the command")

    monkeypatch.setattr(cli, "solve", interrupted)
    assert cli.main([str(config), "--out", str(tmp_path / "out"), "--quiet"]) == 130
    assert capsys.readouterr().err.strip() == "interrupted: nothing written"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml"]


def test_the_commit_swaps_the_sets_in_one_step(tmp_path):
    """Where the system can (Linux), the new set and the old one swap names at once: the folder is
    never missing, and the old set goes."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "x").write_text("new")
    (b / "x").write_text("old")
    if not output._exchange(a, b):
        pytest.skip("this system or file system cannot exchange two names")
    assert (b / "x").read_text() == "new" and (a / "x").read_text() == "old"


def test_a_set_left_aside_by_a_killed_commit_is_found_by_the_next_read(tmp_path, config, monkeypatch, capsys):
    """Committed by two renames (as where names cannot be swapped), a process killed between them
    leaves no folder, the previous set aside: replay, view and the results table put it back."""
    from experiments import replay as replay_cli
    from experiments import view

    out = tmp_path / "out"
    assert cli.main([str(config), "--out", str(out), "--quiet"]) == 0
    before = set_of(out)
    monkeypatch.setenv(files.NO_EXCHANGE_ENV, "1")
    real_replace = output.os.replace

    def killed_before_the_new_set_is_in(a, b):
        if Path(a).name.endswith(".partial"):  # the commit's second rename
            raise SystemExit("killed")  # as a kill: nothing of the commit's own clean-up runs
        real_replace(a, b)

    monkeypatch.setattr(output.os, "replace", killed_before_the_new_set_is_in)
    with pytest.raises(SystemExit):
        cli.main([str(config), "--out", str(out), "--quiet", "pieces=7"])
    monkeypatch.setattr(output.os, "replace", real_replace)
    assert not out.exists() and (tmp_path / f".out.{os.getpid()}.old").is_dir()
    monkeypatch.setattr(output, "_alive", lambda pid: False)  # the process is gone
    capsys.readouterr()
    assert replay_cli.main([str(out / "record.txt")]) == 0  # replay finds the set again
    assert capsys.readouterr().out.strip() == f"{out / 'record.txt'}: score 0, 6 pieces, record_end"
    assert set_of(out) == before
    out.rename(tmp_path / f".out.{os.getpid()}.old")
    assert view.load(out / "summary.json").pieces == 6 and set_of(out) == before  # and so does view
    from experiments import results

    (tmp_path / "results").mkdir()
    kept = tmp_path / "results" / "beam-w100"
    out.rename(kept)
    real = json.loads((ROOT / "results" / "beam-w100" / "summary.json").read_text())
    (kept / "summary.json").write_text(json.dumps(real))
    kept.rename(tmp_path / "results" / f".beam-w100.{os.getpid()}.old")
    monkeypatch.setattr(results, "ROOT", tmp_path)
    assert "| [beam-w100](results/beam-w100/) |" in results.table()  # and the results table


# ------------------------------------------------------------------------------------------------
# In a subprocess: real signals and kills in a commit held open by the test hook


def start(args, cwd, **env):
    return subprocess.Popen([sys.executable, "-m", "experiments.solve", *map(str, args), "--quiet"], cwd=cwd,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for(pattern, process, seconds=300):
    """Wait until a path matching ``pattern`` exists (the process still running)."""
    end = time.monotonic() + seconds
    while not glob.glob(pattern):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < end, f"{pattern} never came"
        time.sleep(0.02)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_in_the_commit_writes_the_record_and_exits_130(tmp_path, config, sig):
    out = tmp_path / "out"
    assert cli.main([str(config), "--out", str(out), "--quiet"]) == 0
    p = start([config, "--out", out, "pieces=7"], tmp_path, **{files.COMMIT_PAUSE_ENV: "3"})
    wait_for(f"{tmp_path}/.out.{p.pid}.partial/summary.json", p)  # the set is complete: the commit begins
    time.sleep(0.5)
    assert out.is_dir()
    p.send_signal(sig)
    stdout, stderr = p.communicate(timeout=120)
    assert p.returncode == 130 and "Traceback" not in stderr
    assert stderr.strip().splitlines() == [f"interrupted ({sig.name}) after the search: the record was written"]
    assert stdout.startswith("0 points, 7 pieces")
    assert json.loads((out / "summary.json").read_text())["pieces"] == 7
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml", "out"]


@pytest.mark.slow
@pytest.mark.parametrize("exchange", [True, False])
def test_a_kill_in_the_commit_leaves_a_whole_set(tmp_path, config, exchange):
    """kill -9 in the middle of the commit: swapping in one step, the folder holds the previous set
    (it was there at every instant, checked while the commit was held open); by two renames, the
    folder is missing until replay puts the previous set back. The next solve tidies up."""
    out = tmp_path / "out"
    assert cli.main([str(config), "--out", str(out), "--quiet"]) == 0
    before = set_of(out)
    env = {files.COMMIT_PAUSE_ENV: "30", **({} if exchange else {files.NO_EXCHANGE_ENV: "1"})}
    p = start([config, "--out", out, "pieces=7"], tmp_path, **env)
    wait_for(f"{tmp_path}/.out.{p.pid}.{'partial/summary.json' if exchange else 'old'}", p)
    if exchange:
        for _ in range(20):
            assert set_of(out) == before
            time.sleep(0.01)
    p.kill()
    p.communicate(timeout=60)
    assert out.is_dir() == exchange
    done = subprocess.run([sys.executable, "-m", "experiments.replay", str(out / "record.txt")], cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0 and done.stdout.strip().endswith("score 0, 6 pieces, record_end")
    assert set_of(out) == before
    assert cli.main([str(config), "--out", str(out), "--quiet", "pieces=8"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml", "out"]


@pytest.mark.slow
def test_a_segment_search_signalled_after_it_ended_writes_its_record(tmp_path):
    """A segment search (a checkpoint beside its folder) given SIGINT in its commit: no traceback, its
    record and checkpoint written, exit 130; resumed, the finished search gives the same record."""
    out = tmp_path / "run"
    p = start([*[ROOT / SEGMENT[0]], *SEGMENT[1:], "--out", out], tmp_path, **{files.COMMIT_PAUSE_ENV: "3"})
    wait_for(f"{tmp_path}/.run.{p.pid}.partial/summary.json", p)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=300)
    assert p.returncode == 130 and "Traceback" not in stderr, stderr
    assert stderr.strip().splitlines() == ["interrupted (SIGINT) after the search: the record was written"]
    record = (out / "record.txt").read_text()
    assert (tmp_path / "run.checkpoint.npz").exists()
    assert cli.main([str(ROOT / SEGMENT[0]), *SEGMENT[1:], "--resume", str(out), "--quiet"]) == 0
    assert (out / "record.txt").read_text() == record
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "run.checkpoint.npz"]  # no lock left


# ------------------------------------------------------------------------------------------------
# Segment searches are locked, as tuning runs are


def test_a_segment_search_another_process_works_on_is_refused(tmp_path, capsys):
    """A fresh solve or a --resume into a folder whose search another process holds (``DIR.lock``):
    one line naming the folder and the pid, exit 2, no checkpoint written or read."""
    out = tmp_path / "run"
    args = [str(ROOT / SEGMENT[0]), *SEGMENT[1:], "--quiet"]
    with files.FolderLock(tmp_path, "run.lock"):  # as the process still searching holds it
        for option in ("--out", "--resume"):
            assert cli.main([*args, option, str(out)]) == 2
            err = capsys.readouterr().err.strip().splitlines()
            assert err == [f"error: {out}: another process (pid {os.getpid()}) is working in it; wait for it to "
                           "end or stop it first"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.lock"]


def test_a_lock_beside_a_folder_goes_with_its_holder(tmp_path):
    with files.FolderLock(tmp_path, "run.lock", remove=True):
        with pytest.raises(files.Locked, match=rf"^run: another process \(pid {os.getpid()}\) is working in it"):
            with files.FolderLock(tmp_path, "run.lock", label="run"):
                pass
    assert list(tmp_path.iterdir()) == []
    with files.FolderLock(tmp_path, "run.lock", remove=True):  # taken again
        pass


def test_a_solve_of_a_policy_that_saves_nothing_leaves_no_lock(tmp_path, config):
    """(It holds ``DIR.lock`` while it works, as every solve does, and removes it at its end.)"""
    assert cli.main([str(config), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml", "out"]


@pytest.mark.slow
def test_two_segment_searches_into_one_folder_never_share_a_checkpoint(tmp_path):
    """While a first search works (here held in its commit), a second one into the same --out is
    refused; once the first has ended its checkpoint is there, and a new search is refused too."""
    out = tmp_path / "run"
    args = [ROOT / SEGMENT[0], *SEGMENT[1:], "--out", out]
    first = start(args, tmp_path, **{files.COMMIT_PAUSE_ENV: "5"})
    wait_for(f"{tmp_path}/.run.{first.pid}.partial/summary.json", first)
    second = start(args, tmp_path)
    _, err = second.communicate(timeout=120)
    assert second.returncode == 2 and err.strip() == (
        f"error: {out}: another process (pid {first.pid}) is working in it; wait for it to end or stop it first")
    saved = (tmp_path / "run.checkpoint.npz").read_bytes()
    first.communicate(timeout=300)
    assert first.returncode == 0
    assert (tmp_path / "run.checkpoint.npz").read_bytes() == saved
    third = start(args, tmp_path)
    _, err = third.communicate(timeout=120)
    assert third.returncode == 2 and "run.checkpoint.npz holds a saved search: continue it with --resume" in err
