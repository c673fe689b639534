"""The commands under faults (issue 61): a tuning run killed in its first seconds leaves no process
behind; Ctrl-C to a run's whole process group ends it quietly with its documented status; a dask
scheduler that takes the connection and never answers is given up in one line (exit 2), and a
SIGTERM meanwhile stops the command; a signal near the end of a solve's search still gives exit
status 130, the record written whole; two solves into one folder never race; and a signal during
a slow parse stops a command at once. The processes a command starts are found by the mark each
one inherits in its environment (`MARK`)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

import engine.files as files
from engine.files import yaml_files
from engine import replay
from experiments import run as run_cli
from experiments import solve as cli

ROOT = Path(__file__).resolve().parents[1]
#: the environment variable a test's command (and every process it starts) carries
MARK = "WORKBENCH_TEST_FAULTS"
#: a beam small enough to be quick, in many kernel chunks
BEAM = "policy: beam\nevaluator: chys_quality\nbeam: {width: 10}\npieces: 40\nthreads: 1\n"
GREEDY = "policy: greedy\nevaluator: pierre_dellacherie\npieces: 6\n"
#: the workers and resource trackers of a loky pool, by their command lines
LOKY_WORKER = "loky.backend.popen_loky_posix"


def marked(mark: str) -> dict[int, str]:
    """The live processes (not zombies) whose environment carries ``MARK=mark``: pid -> command line."""
    needle = f"{MARK}={mark}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat") as f:
                if f.read().rsplit(") ", 1)[-1].startswith("Z"):
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                found[int(entry)] = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def command(args: list[str], mark: str, **env) -> subprocess.Popen:
    """``python -m <args>`` in its own session (as a terminal's job: its own process group), marked."""
    return subprocess.Popen([sys.executable, "-m", *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, env={**os.environ, MARK: mark, **env})


def wait_for(condition, seconds: float, what: str):
    """Poll ``condition()`` until it is true (returned) or ``seconds`` pass (a failure naming ``what``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"{what}: not within {seconds} s")


def workers(mark: str, n: int = 2):
    """The pids of the run's loky workers once ``n`` of them are there (else a falsy value)."""
    pids = [pid for pid, line in marked(mark).items() if LOKY_WORKER in line]
    return pids if len(pids) >= n else None


def none_left(mark: str, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = marked(mark)
    assert not left, f"processes of the run outlived it by {seconds} s: {left}"


def finish(p: subprocess.Popen, seconds: float = 120) -> tuple[str, str]:
    try:
        return p.communicate(timeout=seconds)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()


# ------------------------------------------------------------------------------------------------
# Workers end with their run, and ignore Ctrl-C


@pytest.mark.slow
@pytest.mark.parametrize("config", ["configs/ga.yaml", "configs/optuna.yaml"])
def test_a_run_killed_as_its_workers_start_leaves_no_process(tmp_path, config):
    """kill -9 of a 2-worker run as soon as its workers exist (the warm-up: at most one of them has
    a task): the workers and the resource trackers are gone within 20 s, not loky's 5 minutes."""
    mark = uuid.uuid4().hex
    p = command(["experiments.run", config, "parallel.n_jobs=2", f"runs_dir={tmp_path / 'runs'}", "--quiet"], mark)
    try:
        wait_for(lambda: workers(mark), 120, "the run's two workers")
        assert any("resource_tracker" in line for line in marked(mark).values())
    finally:
        p.kill()
        p.wait(timeout=30)
        p.stdout.close()  # (not read to its end: a process left behind would hold it open)
        p.stderr.close()
    none_left(mark)


@pytest.mark.slow
def test_ctrl_c_to_a_runs_process_group_ends_it_quietly(tmp_path):
    """A Ctrl-C reaching the workers alone changes nothing (they ignore it: the run's process
    decides); Ctrl-C pressed three times to the whole group ends the run with exit status 130 and
    its one line, no worker's dump ('Fatal Python error') nor traceback; nothing is left running."""
    mark = uuid.uuid4().hex
    runs = tmp_path / "runs"
    p = command(["experiments.run", "configs/ga.yaml", "parallel.n_jobs=2", f"runs_dir={runs}", "--quiet"], mark)
    try:
        pids = wait_for(lambda: workers(mark), 120, "the run's two workers")
        for pid in pids:
            os.kill(pid, signal.SIGINT)
        run_dir = wait_for(lambda: next(runs.glob("ga-*/evaluations.csv"), None), 180, "a first evaluation").parent
        assert all(pid in marked(mark) for pid in pids) and p.poll() is None
        for _ in range(3):
            os.killpg(p.pid, signal.SIGINT)
            time.sleep(0.3)
    finally:
        out, err = finish(p)
    assert p.returncode == 130, err
    assert "Fatal Python error" not in err and "Traceback" not in err and "Exception ignored" not in err, err
    assert err.strip().splitlines() == [f"interrupted: continue with  python -m experiments.run --resume {run_dir}"]
    none_left(mark)


@pytest.mark.slow
def test_a_pool_worker_ignores_sigint_and_dies_with_its_parent_from_its_start():
    """What a worker is set up with before its first task (`engine.parallel._worker_start`): SIGINT
    ignored, the kernel's parent-death signal (SIGKILL) on Linux, the parent watch running."""
    from engine.parallel import ParallelConfig, Pool

    with Pool(ParallelConfig(backend="loky", n_jobs=2)) as pool:
        states = pool.map(_worker_state, [{}, {}])
    for state in states:
        assert state["sigint"] == int(signal.SIG_IGN) and "parent-watch" in state["threads"]
        assert state["parent"] == os.getpid() and signal.SIGINT not in state["blocked"]
        if sys.platform.startswith("linux"):
            assert state["deathsig"] == signal.SIGKILL


def _worker_state(task: dict) -> dict:
    import ctypes

    deathsig = ctypes.c_int(0)
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(2, ctypes.byref(deathsig), 0, 0, 0)  # PR_GET_PDEATHSIG
    return {"sigint": int(signal.getsignal(signal.SIGINT)), "threads": [t.name for t in threading.enumerate()],
            "parent": os.getppid(), "blocked": sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])),
            "deathsig": deathsig.value}


# ------------------------------------------------------------------------------------------------
# A dask scheduler that takes the connection and never answers


@pytest.fixture
def silent_scheduler():
    """A TCP server on this machine that accepts every connection and never sends a byte: its
    address and the list of connections it took."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.1)
    taken, done = [], threading.Event()

    def serve():
        while not done.is_set():
            try:
                taken.append(server.accept()[0])
            except socket.timeout:
                continue
            except OSError:
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}", taken
    done.set()
    thread.join()
    for c in taken:
        c.close()
    server.close()


def bounded(fn, *args, seconds: float = 90):
    """``fn(*args)`` in a thread, its value; a failure if it has not returned within ``seconds``."""
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("value", fn(*args)), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting after {seconds} s"
    return box["value"]


@pytest.mark.slow
def test_an_unanswering_scheduler_fails_in_one_line_for_each_command(tmp_path, capsys, monkeypatch, silent_scheduler):
    pytest.importorskip("dask.distributed")
    from engine import parallel

    address, taken = silent_scheduler
    monkeypatch.setattr(parallel, "CONNECT_SECONDS", 2)  # the wait is the same at any length
    run_args = ["configs/ga.yaml", "parallel.backend=dask", f"parallel.scheduler={address}",
                f"runs_dir={tmp_path / 'runs'}", "--quiet"]
    solve_args = ["configs/solve/segment.yaml", "pieces=5", "segment.parallel.backend=dask",
                  f"segment.parallel.scheduler={address}", "--out", str(tmp_path / "out"), "--quiet"]
    for main, args, key in ((run_cli.main, run_args, "parallel"), (cli.main, solve_args, "segment.parallel")):
        assert bounded(main, args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"error: {key}.scheduler: cannot reach {address} in 2 s (no answer)"]
    assert len(taken) >= 2  # both did reach it
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no run directory, no output, no lock


@pytest.mark.slow
@pytest.mark.parametrize("which", ["run", "solve"])
def test_sigterm_stops_a_command_waiting_for_an_unanswering_scheduler(tmp_path, silent_scheduler, which):
    pytest.importorskip("dask.distributed")
    address, taken = silent_scheduler
    mark = uuid.uuid4().hex
    if which == "run":
        args = ["experiments.run", "configs/ga.yaml", "parallel.backend=dask", f"parallel.scheduler={address}",
                f"runs_dir={tmp_path / 'runs'}", "--quiet"]
        line = "interrupted: nothing made"
    else:
        args = ["experiments.solve", "configs/solve/segment.yaml", "pieces=5", "segment.parallel.backend=dask",
                f"segment.parallel.scheduler={address}", "--out", str(tmp_path / "out"), "--quiet"]
        line = "interrupted: nothing written"
    p = command(args, mark)
    try:
        wait_for(lambda: taken, 120, "the command's connection")
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=5)  # (it waits up to 10 s for the scheduler)
    finally:
        finish(p)
    assert p.returncode == 130 and err.strip().splitlines() == [line], err
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------------------
# A signal near the end of a solve's search


@pytest.fixture
def beam_config(tmp_path):
    path = tmp_path / "beam.yaml"
    path.write_text(BEAM)
    return path


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("where", ["last chunk", "tracing back"])
def test_a_signal_as_the_beam_search_ends_gives_130_and_the_whole_record(tmp_path, beam_config, monkeypatch, capsys,
                                                                        sig, where):
    """The signal lands while the beam's last chunk of layers runs (no piece left to stop after), or
    as the search traces its path back: the search is done, its record verified and written whole,
    and the command exits with 130 saying so, as for a signal after the search."""
    from solver.beam import driver as beam  # (where the policy calls them)

    pieces, sent = 40, []
    if where == "last chunk":
        real = beam.run_layers

        def run_layers(sequence, t, stop, *rest):
            if stop == pieces and not sent:  # (the warm-up's search plays 2)
                sent.append(sig)
                os.kill(os.getpid(), sig)
            return real(sequence, t, stop, *rest)

        monkeypatch.setattr(beam, "run_layers", run_layers)
    else:
        real = beam.trace_back

        def trace_back(st):
            placements = real(st)
            if len(placements) == pieces and not sent:
                sent.append(sig)
                os.kill(os.getpid(), sig)
            return placements

        monkeypatch.setattr(beam, "trace_back", trace_back)
    out = tmp_path / "out"
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert cli.main([str(beam_config), "--out", str(out), "--quiet"]) == 130
    assert sent and (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [
        f"interrupted ({signal.Signals(sig).name}) after the search: the record was written"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stop"] == "done" and summary["pieces"] == pieces
    assert sorted(p.name for p in out.iterdir()) == sorted(cli.OUTPUT_FILES)
    replayed = replay((out / "record.txt").read_text())  # the whole path's record
    assert replayed.valid and replayed.score == summary["score"] and replayed.bricks >= pieces


# ------------------------------------------------------------------------------------------------
# Two solves into one folder


def test_a_solve_into_a_folder_another_process_solves_into_is_refused(tmp_path, capsys):
    """Any policy's solve holds ``DIR.lock`` beside its folder from before its search until its
    files are in place: a second one meanwhile is refused in one line naming the folder and the
    pid (exit status 2), and writes nothing."""
    config = tmp_path / "g.yaml"
    config.write_text(GREEDY)
    out = tmp_path / "out"
    with files.FolderLock(tmp_path, "out.lock"):  # as the first solve holds it
        assert cli.main([str(config), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {out}: another process (pid {os.getpid()}) is working in it; wait for it to end or "
                   "stop it first"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml", "out.lock"]  # (the holder's lock)


@pytest.mark.slow
def test_two_solves_started_at_once_into_one_folder(tmp_path):
    """The first holds its commit open (its test hook); the second, started meanwhile, is refused in
    one line (exit 2); the first ends with its set whole and no lock left."""
    config = tmp_path / "g.yaml"
    config.write_text(GREEDY)
    out = tmp_path / "out"
    args = ["experiments.solve", str(config), "--out", str(out), "--quiet"]
    first = command(args, uuid.uuid4().hex, **{files.COMMIT_PAUSE_ENV: "20"})  # (the second is refused in a few)
    try:
        wait_for(lambda: list(tmp_path.glob(".out.*.partial/summary.json")), 120, "the first solve's commit")
        second = command(args, uuid.uuid4().hex)
        _, err = finish(second)
        assert second.returncode == 2 and err.strip().splitlines() == [
            f"error: {out}: another process (pid {first.pid}) is working in it; wait for it to end or stop it first"]
    finally:
        finish(first)
    assert first.returncode == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(cli.OUTPUT_FILES)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml", "out"]


# ------------------------------------------------------------------------------------------------
# A signal during a slow parse


def big_config(path: Path, base: str) -> Path:
    """``base`` (a shipped configuration) with an unknown key holding about 1 MiB of YAML, just
    under the size limit: some seconds of parsing, then a one-line error."""
    text = (ROOT / base).read_text() + "notes:\n"
    row = "  - {a: 1, b: [1, 2, 3]}\n"
    room = files.MAX_CONFIG_BYTES - len(text.encode())
    text += row * (room // len(row))
    path.write_text(text)
    return path


@pytest.mark.parametrize("which", ["run", "solve"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_config_is_parsed_stops_the_command(tmp_path, monkeypatch, capsys, which, sig):
    """In process: the signal comes as the parse begins; the command stops there (exit 130, one
    line) instead of parsing on to the configuration's error, and puts its handlers back."""
    path = big_config(tmp_path / "big.yaml", "configs/ga.yaml" if which == "run" else "configs/solve/beam.yaml")
    real = yaml_files.parse_yaml
    sent = []

    def parse_yaml(text, *a, **k):
        if len(text) > 2**19 and not sent:
            sent.append(sig)
            os.kill(os.getpid(), sig)
        return real(text, *a, **k)

    monkeypatch.setattr(yaml_files, "parse_yaml", parse_yaml)
    noted = []
    previous = signal.signal(signal.SIGTERM, lambda *a: noted.append(a))  # (the command's own handler is not there: noted)
    try:
        handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
        try:
            if which == "run":
                status = run_cli.main([str(path), f"runs_dir={tmp_path / 'runs'}", "--quiet"])
                line = "interrupted: nothing made"
            else:
                status = cli.main([str(path), "--out", str(tmp_path / "out"), "--quiet"])
                line = "interrupted: nothing written"
        except KeyboardInterrupt:
            pytest.fail("the interrupt escaped the command (a traceback, not its line)")
        assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers  # put back
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert sent and not noted
    assert status == 130 and capsys.readouterr().err.strip().splitlines() == [line]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.yaml"]


@pytest.mark.slow
@pytest.mark.parametrize("which", ["run", "solve"])
def test_sigterm_during_a_slow_parse_ends_the_process_at_once(tmp_path, which):
    """A command given a 1 MiB configuration: SIGTERM once it has read the file (its access time
    moves) ends the process within 5 s, with its one line and exit status 130, nothing made."""
    if which == "run":
        path = big_config(tmp_path / "big.yaml", "configs/ga.yaml")
        args, line = ["experiments.run", str(path), f"runs_dir={tmp_path / 'runs'}", "--quiet"], "interrupted: nothing made"
    else:
        path = big_config(tmp_path / "big.yaml", "configs/solve/beam.yaml")
        args, line = ["experiments.solve", str(path), "--out", str(tmp_path / "out"), "--quiet"], "interrupted: nothing written"
    os.utime(path, (time.time() - 3600, time.time()))  # (read, its access time is brought up to date)
    before = os.stat(path).st_atime
    p = command(args, uuid.uuid4().hex)
    try:
        deadline = time.monotonic() + 120
        while os.stat(path).st_atime == before and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if os.stat(path).st_atime == before:
            pytest.skip("this file system does not note reads (noatime): the parse cannot be caught")
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=5)
    finally:
        finish(p)
    assert p.returncode == 130 and err.strip().splitlines() == [line], err
    assert sorted(q.name for q in tmp_path.iterdir()) == ["big.yaml"]
