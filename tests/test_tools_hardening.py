"""The tools outside the core hold the core's promise (issue 34, group 4 and its smaller findings):
bounded reads of every input, one-line errors with exit status 2, atomic writes, no silent
overwrite, stale temporary files removed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks.standard import players, series
from engine.files import (MAX_CONFIG_BYTES, ReadError, TooLarge, YamlError, load_yaml, read_bytes, read_json,
                          read_text, remove_stale_temporaries)

ROOT = Path(__file__).resolve().parents[1]


def one_line_error(done: subprocess.CompletedProcess, *parts: str) -> str:
    """The stderr of a command that failed as a user error: exit status 2, one line, no traceback,
    holding every one of ``parts``."""
    err = done.stderr.strip()
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for part in parts:
        assert part in err, (part, err)
    return err


def command(*args: str, cwd: Path = ROOT, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=120, **kw)


# ------------------------------------------------------------------------------------------------
# engine.files: bounded reads, duplicate keys, stale temporaries


def test_reads_stop_at_the_limit_of_their_kind(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: 1\n" + b"#" * MAX_CONFIG_BYTES)
    with pytest.raises(YamlError) as info:
        load_yaml(big)
    assert str(info.value) == f"{big}: more than 1 MiB: too large for a configuration file"
    # an endless device is not read at all (only a regular file is); a stream is read no further than the limit
    with pytest.raises(ReadError, match=r"^/dev/zero: not a regular file \(a character device\)$"):
        read_bytes("/dev/zero", 1000, "a record")
    with pytest.raises(YamlError, match=r"^/dev/zero: not a regular file \(a character device\)$"):
        load_yaml("/dev/zero")
    with open("/dev/zero", "rb") as endless, pytest.raises(TooLarge, match="^-: more than 1,000 bytes: too large"):
        read_bytes("-", 1000, "a record", stream=endless)
    # at the limit is fine; missing, a folder
    exact = tmp_path / "exact.txt"
    exact.write_bytes(b"x" * 10)
    assert read_bytes(exact, 10, "a record") == b"x" * 10
    with pytest.raises(TooLarge):
        read_bytes(exact, 9, "a record")
    with pytest.raises(ReadError, match="file not found$"):
        read_bytes(tmp_path / "none", 10, "a record")
    with pytest.raises(ReadError, match="cannot read: Is a directory$"):
        read_bytes(tmp_path, 10, "a record")


def test_text_and_json_reads_say_what_is_wrong_in_one_line(tmp_path):
    path = tmp_path / "s.json"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    with pytest.raises(ReadError) as info:
        read_json(path)
    assert str(info.value) == f"{path}: not UTF-8 text (byte 0x89 at offset 0)"
    path.write_text('{"score": 12, "pieces": ')
    with pytest.raises(ReadError) as info:
        read_json(path)
    assert str(info.value) == f"{path}: not JSON: line 1, column 25: Expecting value"
    path.write_text("[" * 100_000)
    with pytest.raises(ReadError, match="not JSON"):
        read_json(path)
    path.write_bytes(b"a\r\nb\rc\n")
    assert read_text(path, 100, "a record") == "a\nb\nc\n"  # as open() reads line ends


def test_a_yaml_key_given_twice_is_refused_naming_the_file_and_the_key(tmp_path):
    path = tmp_path / "twice.yaml"
    path.write_text("policy: beam\nbeam:\n  width: 10\n  depth: 2\n  width: 20\n")
    with pytest.raises(YamlError) as info:
        load_yaml(path)
    assert str(info.value) == f"{path}: invalid YAML: line 5, column 3: key 'width' given twice (first on line 3)"
    path.write_text("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\n")  # a merge may be overridden
    assert load_yaml(path)["d"] == {"x": 3, "y": 2}
    from engine.config import ConfigError
    from solver.files import load_solver_config

    path.write_text("policy: greedy\nseed: 1\npieces: 10\nseed: 2\n")
    with pytest.raises(ConfigError, match=r"twice\.yaml: invalid YAML: line 4, column 1: key 'seed' given twice"):
        load_solver_config(path)


def test_the_shipped_yaml_files_have_no_key_twice():
    files = [*ROOT.glob("configs/**/*.yaml"), *ROOT.glob("evaluators/presets/*.yaml"), *ROOT.glob("results/**/*.yaml")]
    assert len(files) > 20
    for path in files:
        load_yaml(path)


def test_stale_temporary_files_of_dead_writers_are_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)  # a process that has ended
    stale = tmp_path / f".checkpoint.npz.{pid}.0123456789ab.tmp"
    other = tmp_path / f".best.yaml.{pid}.abcdefabcdef.tmp"
    live = tmp_path / f".checkpoint.npz.{os.getpid()}.0123456789ab.tmp"  # a writer still at work
    keep = tmp_path / "checkpoint.npz"
    for p in (stale, other, live, keep):
        p.write_text("x")
    assert remove_stale_temporaries(tmp_path, "checkpoint.npz") == [stale]
    assert remove_stale_temporaries(tmp_path) == [other]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, keep.name])
    # the writers name their temporary files so
    from engine.files.writing import TEMPORARY_NAME, _new_temporary

    fd, tmp = _new_temporary(tmp_path / "x.txt")
    os.close(fd)
    m = TEMPORARY_NAME.match(tmp.name)
    assert (m["name"], m["pid"]) == ("x.txt", str(os.getpid()))
    assert remove_stale_temporaries(tmp_path / "missing") == []


# ------------------------------------------------------------------------------------------------
# benchmarks/bench_standard.py


def _series(**changes) -> dict:
    games = [{"seed": 1000 + i, "rows": 10 * i, "pieces": 30 * i + 5, "end": "stuck", "cpu_seconds": 0.01}
             for i in range(3)]
    data = {"command": "python benchmarks/bench_standard.py games", "evaluator": "dellacherie",
            "rules": "standard_10x10", "width": 10, "height": 10, "cap": 1_000_000_000, "commit": "abc",
            "date": "2026-11-25 10:00", "machine": "m", "ci95_method": "t", "games": games, "ahead": []}
    data.update(changes)
    return data


def run_bench(bench, capsys, *args: str) -> tuple[int, str]:
    status = bench.main(["games", "--rules", "standard_10x10", "--games", "3", *args])
    return status, capsys.readouterr().err.strip()


GAME = {"seed": 1000, "rows": 1, "pieces": 4, "end": "stuck", "cpu_seconds": 0}


@pytest.mark.parametrize("content, problem", [
    (b"", "not JSON: line 1, column 1: Expecting value"),
    (b'{"games": [', "not JSON: line 1, column 12: Expecting value"),
    (b"{}", "command: missing (not a series of bench_standard.py games)"),
    (b"[1, 2]", "not a series of bench_standard.py games (a JSON object), got [1, 2]"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not UTF-8 text (byte 0x89 at offset 0)"),
    (json.dumps(_series(height="10")).encode(), "height: should be a whole number >= 0, got '10'"),
    (json.dumps(_series(games={"seed": 1})).encode(), "games: should be a list, got"),
    (json.dumps(_series(games=[{**GAME, "rows": "many"}])).encode(),
     "games[0]: rows: should be a whole number >= 0, got 'many'"),
    (json.dumps(_series(games=[{**GAME, "cpu_seconds": -1}])).encode(), "games[0]: cpu_seconds: should be a number >= 0"),
    (json.dumps(_series(games=[GAME, {**GAME, "seed": 1002}])).encode(),
     "games: seed 1000 is followed by 1002 (a series' games have consecutive seeds)"),
    (json.dumps(_series(games=[5])).encode(), "games[0]: not a game"),
], ids=["empty", "truncated", "{}", "list", "binary", "height-text", "games-object", "rows-text", "cpu-negative",
        "seed-gap", "game-number"])
def test_bench_resume_of_a_damaged_series_is_one_line(bench, capsys, tmp_path, content, problem):
    path = tmp_path / "s.json"
    path.write_bytes(content)
    status, err = run_bench(bench, capsys, "--json", str(path), "--resume")
    assert status == 2 and err.startswith(f"error: {path}: {problem}"), err
    assert "\n" not in err and path.read_bytes() == content  # refused, and left as it was


@pytest.mark.parametrize("args, message", [
    (["--height", "0"], "error: --height 0: height must be 4..60"),
    (["--height", "-3"], "error: --height -3: height must be 4..60"),
    (["--height", "100"], "error: --height 100: height must be 4..60"),
    (["--jobs", "0"], "error: --jobs 0: must be at least 1"),
    (["--games", "0"], "error: --games 0: must be at least 1"),
    (["--seed", "-1"], "error: --seed -1: must be at least 0"),
    (["--cap", "0"], "error: --cap 0: must be at least 1"),
    (["--evaluator", "nope"], "error: --evaluator: nope: no such file or preset (presets: "),
    (["--evaluator", "/nope.yaml"], "error: --evaluator: /nope.yaml: file not found"),
    (["--resume"], "error: --resume: give the --json file of the series to continue"),
    (["--json", "/dev/full"], "error: --json /dev/full: not a regular file"),
    (["--json", "/etc/hostname/s.json"], "error: --json /etc/hostname/s.json: cannot write there: /etc/hostname is "
                                         "not a folder"),
])
def test_bench_user_errors_are_one_line(bench, capsys, args, message):
    status, err = run_bench(bench, capsys, *args)
    assert status == 2 and err.startswith(message) and "\n" not in err, err


def test_bench_user_error_from_the_command_line_has_no_traceback(tmp_path):
    done = command("benchmarks/bench_standard.py", "games", "--height", "0", "--json", str(tmp_path / "s.json"))
    assert one_line_error(done, "--height 0") == "error: --height 0: height must be 4..60"
    assert not (tmp_path / "s.json").exists()


def test_bench_refuses_a_folder_an_existing_series_and_a_foreign_one(bench, capsys, tmp_path):
    status, err = run_bench(bench, capsys, "--json", str(tmp_path))
    assert (status, err) == (2, f"error: --json {tmp_path}: is a folder; name the series' file")
    with pytest.raises(SystemExit) as info:
        bench.main(["games", "--json", ""])
    assert info.value.code == 2 and "argument --json: empty" in capsys.readouterr().err
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_series()))
    before = path.read_bytes()
    status, err = run_bench(bench, capsys, "--json", str(path))
    assert (status, err) == (2, f"error: --json {path}: holds a series already; continue it with --resume, or replace "
                                "it with --force")
    status, err = run_bench(bench, capsys, "--json", str(path), "--resume", "--force")
    assert status == 2 and "give one" in err
    status, err = run_bench(bench, capsys, "--json", str(path), "--resume", "--cap", "5")
    assert (status, err) == (2, f"error: --resume: {path} is a series of cap 1000000000, not 5: give the same "
                                "--evaluator, --rules, --height and --cap")
    status, err = run_bench(bench, capsys, "--json", str(path), "--resume", "--seed", "7")
    assert (status, err) == (2, f"error: --seed 7: the series in {path} starts at seed 1000; resume it with --seed 1000")
    # a journal left without its series file is a series too
    path.unlink()
    series.journal_path(path).write_text(json.dumps(GAME) + "\n")
    status, err = run_bench(bench, capsys, "--json", str(path))
    assert status == 2 and "holds a series already" in err
    path.write_bytes(before)
    assert path.read_bytes() == before


def test_bench_cannot_write_a_read_only_series_file(bench, capsys, tmp_path):
    if os.access("/sys", os.W_OK) and os.geteuid() != 0 or not os.path.isdir("/sys"):
        pytest.skip("no read-only folder to try")
    probe = Path("/sys/bench-probe.json")
    try:
        probe.write_text("x")
        probe.unlink()
        pytest.skip("/sys can be written here")
    except OSError:
        pass
    status, err = run_bench(bench, capsys, "--json", str(probe))
    assert status == 2 and err.startswith(f"error: --json {probe}: cannot write there: ") and "\n" not in err, err


def test_bench_resume_reads_the_journal_and_settles_its_games(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_series()))
    journal = series.journal_path(path)
    extra = [{"seed": s, "rows": s - 1000, "pieces": 9, "end": "stuck", "cpu_seconds": 0.1} for s in (1004, 1003, 1002)]
    # seed 1002 is in the file already (a kill between a rewrite and the journal's reset); the last
    # line was cut short by a kill
    journal.write_text("".join(json.dumps(g) + "\n" for g in extra) + '{"seed": 1005, "ro')
    data = series.load_series(path)
    assert [g["seed"] for g in data["games"]] == [1000, 1001, 1002, 1003, 1004] and data["ahead"] == []
    assert data["games"][2] == _series()["games"][2]  # the file's copy is kept
    journal.write_text(json.dumps(extra[0]) + "\n")  # 1004 waits for 1003
    data = series.load_series(path)
    assert [g["seed"] for g in data["ahead"]] == [1004] and len(data["games"]) == 3
    journal.write_text(json.dumps(extra[0]) + "\nnot json\n")
    with pytest.raises(players.UserError, match=r"s\.json\.journal: line 2: not JSON"):
        series.load_series(path)
    journal.write_text(json.dumps({**extra[0], "end": 3}) + "\n")
    with pytest.raises(players.UserError, match=r"s\.json\.journal: line 1: end: should be text, got 3"):
        series.load_series(path)


def test_bench_series_file_is_rewritten_at_bounded_cost(tmp_path, monkeypatch):
    """On a clock of the test's (no wall time read): 2,000 games added at one instant are each in the
    journal at once, and the series file is rewritten (atomically) at the start and the end only, not
    per game; it reads back the same. A rewrite is due REWRITE_SECONDS after the last one, or
    1 / REWRITE_SHARE times its cost when that is longer."""
    clock, cost = [0.0], [0.0]  # the time now; what a rewrite takes
    monkeypatch.setattr(series, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    path = tmp_path / "s.json"
    out = _series(games=[])
    written = series.SeriesFile(path, out)
    rewrites = []
    real = series.write_json

    def write_json(p, d):
        rewrites.append(len(d["games"]))
        clock[0] += cost[0]
        real(p, d)

    monkeypatch.setattr(series, "write_json", write_json)
    written.open()
    for i in range(2000):
        g = {"seed": 1000 + i, "rows": i, "pieces": 3 * i, "end": "stuck", "cpu_seconds": 0.0}
        out["games"].append(g)
        written.add(g)
        if i == 999:
            lines = written.journal_path.read_text().splitlines()
            assert len(lines) == 1000 and json.loads(lines[-1]) == g
            assert json.loads(path.read_text())["games"] == []  # the file: its last rewrite, whole
    assert rewrites == [0]
    handlers = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]
    written.close()
    assert rewrites == [0, 2000] and not written.journal_path.exists()
    assert [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)] == handlers  # left as they were
    data = json.loads(path.read_text())
    assert data["n"] == 2000 and data["games"] == out["games"] and series.load_series(path)["games"] == out["games"]
    assert (series.REWRITE_SECONDS, series.REWRITE_SHARE) == (10.0, 0.02)  # the instants below
    clock[0], cost[0] = 100.0, 0.125  # a cheap rewrite (0.125 s: 6.25 s / REWRITE_SHARE): due REWRITE_SECONDS on
    written = series.SeriesFile(path, out)
    written.open()
    game = lambda seed: {"seed": seed, "rows": 1, "pieces": 3, "end": "stuck", "cpu_seconds": 0.0}  # noqa: E731
    clock[0] = 100.125 + 9.5
    written.add(game(3000))
    assert len(rewrites) == 3 and written.journal_path.read_text().count("\n") == 1  # not yet
    clock[0], cost[0] = 100.125 + 10.0, 1.0  # due; this rewrite takes 1 s: the next one 50 s after it
    written.add(game(3001))
    assert len(rewrites) == 4 and written.journal_path.read_text() == ""
    clock[0] = 111.125 + 10.0
    written.add(game(3002))
    assert len(rewrites) == 4 and written.journal_path.read_text().count("\n") == 1  # past 10 s, not yet 50 s
    clock[0] = 111.125 + 50.0
    written.add(game(3003))
    assert len(rewrites) == 5 and written.journal_path.read_text() == ""
    written.close()


def test_the_committed_series_files_read_back():
    files = sorted((ROOT / "results" / "standard").glob("*.json"))
    kept = [p for p in files if not p.name.startswith("splitting-")]
    assert len(kept) >= 15
    for path in kept:
        data = series.load_series(path)
        original = json.loads(path.read_text())
        assert data["games"] == original["games"] and data["ahead"] == original.get("ahead", [])


@pytest.mark.slow
def test_bench_killed_with_kill_9_resumes_from_its_journal(tmp_path):
    """A series killed by ``kill -9`` leaves its file whole (the last rewrite) and its games in the
    journal; --resume continues it, and the series equals one played without a stop."""
    import time

    bench = [sys.executable, str(ROOT / "benchmarks" / "bench_standard.py"), "games", "--rules", "standard_10x10",
             "--seed", "20"]
    path = tmp_path / "s.json"
    journal = path.with_name("s.json.journal")
    proc = subprocess.Popen(bench + ["--games", "400", "--json", str(path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if journal.exists() and journal.read_text().count("\n") >= 4:
                break
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
        proc.stderr.close()
    kept = json.loads(path.read_text())  # whole, although killed
    played = journal.read_text().count("\n")
    assert played >= 4 and len(kept["games"]) < 400
    n = len(kept["games"]) + played + 2
    done = subprocess.run(bench + ["--games", str(n), "--json", str(path), "--resume"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    one = tmp_path / "one.json"
    subprocess.run(bench + ["--games", str(n), "--json", str(one)], check=True, capture_output=True)
    a, b = json.loads(one.read_text()), json.loads(path.read_text())
    assert [g["seed"] for g in b["games"]] == list(range(20, 20 + n)) and not journal.exists()
    assert [(g["rows"], g["pieces"]) for g in a["games"]] == [(g["rows"], g["pieces"]) for g in b["games"]]
    assert (a["n"], a["mean"], a["ci95"]) == (b["n"], b["mean"], b["ci95"]) and len(b["resumed"]) == 1
    # no temporary file is left beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.json", "s.json"]


# ------------------------------------------------------------------------------------------------
# experiments.results --table, experiments.report


@pytest.mark.parametrize("content, problem", [
    (b'{"score": 1168108, "pieces": ', "not JSON: line 1, column 30: Expecting value"),
    (b'{"score": "\xe9"}', "not UTF-8 text (byte 0xe9 at offset 11)"),
    (b"{}", "score: missing key"),  # (read by the schema that wrote it: test_hardening_numbers)
    (b"[]", "not a solve's summary: a list, not a JSON object"),
])
def test_results_table_on_a_damaged_summary_is_one_line(tmp_path, monkeypatch, capsys, content, problem):
    from experiments import results

    path = tmp_path / "results" / "beam-w100" / "summary.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    monkeypatch.setattr(results, "ROOT", tmp_path)
    assert results.main(["--table"]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"error: {path}: {problem}\n" and captured.out == ""


def test_results_table_reads_the_committed_summaries(capsys):
    from experiments import results

    assert results.main(["--table"]) == 0
    assert "| [beam-w100](results/beam-w100/) |" in capsys.readouterr().out


@pytest.fixture
def fake_run(tmp_path):
    """A run directory as a run writes it, with no generation yet (its files to be damaged)."""
    from engine.files import write_yaml
    from optimizers.run import as_run_config
    from optimizers.records import GENERATION_COLUMNS
    from optimizers.store import RunStore
    from optimizers.run_loop import make_space
    from test_tuning import TINY

    run = tmp_path / "run"
    run.mkdir()
    config = as_run_config(TINY)
    write_yaml(run / "config.yaml", config.model_dump(mode="json"))
    store = RunStore(run, make_space(config).params)
    (run / "evaluations.csv").write_text(",".join(store.eval_columns) + "\n")
    (run / "generations.csv").write_text(",".join(GENERATION_COLUMNS) + "\n")
    return run


@pytest.mark.parametrize("name, content, problem", [
    ("generations.csv", bytes(range(256)) * 4, "not UTF-8 text (byte 0x80 at offset 128)"),
    ("generations.csv", b"generation,best\n0,1\n", "not a generations.csv (no column mean, median, worst, ...)"),
    ("generations.csv", b"", "not a generations.csv (No columns to parse from file)"),
    ("evaluations.csv", b"\xc4\x00\xff" * 10, "not UTF-8 text (byte 0xc4 at offset 0)"),
], ids=["binary", "columns", "empty", "binary-evaluations"])
def test_report_on_a_damaged_run_file_is_one_line(fake_run, capsys, name, content, problem):
    from experiments import report

    (fake_run / name).write_bytes(content)
    assert report.main([str(fake_run)]) == 2
    assert capsys.readouterr().err == f"error: {fake_run / name}: {problem}\n"
    assert not (fake_run / "figures").exists()


@pytest.mark.slow
def test_report_on_binary_generations_from_the_command_line(fake_run):
    (fake_run / "generations.csv").write_bytes(bytes(range(256)) * 4)
    done = command("-m", "experiments.report", str(fake_run))
    one_line_error(done, f"{fake_run / 'generations.csv'}: not UTF-8 text")


# ------------------------------------------------------------------------------------------------
# experiments.view

RECORD = ROOT / "results" / "greedy-lecture_v1" / "record.txt"  # 33 pieces: replayed at once


@pytest.mark.parametrize("out, problem", [
    ("", "--out: empty; name the file to write"),
    ("{tmp}", "{tmp}: is a folder; name the file to write (e.g. {tmp}/replay.html)"),
    ("/dev/full", "/dev/full: not a plain file"),
    ("{tmp}/plain.txt/a/b.html", "{tmp}/plain.txt/a/b.html: cannot write there: {tmp}/plain.txt is not a folder"),
])
def test_view_refuses_an_output_it_cannot_write(tmp_path, capsys, out, problem):
    from experiments import view

    (tmp_path / "plain.txt").write_text("x")
    before = sorted(tmp_path.rglob("*"))
    assert view.main([str(RECORD), "--out", out.format(tmp=tmp_path)]) == 2
    assert capsys.readouterr().err == f"error: {problem.format(tmp=tmp_path)}\n"
    assert sorted(tmp_path.rglob("*")) == before


def test_view_on_a_read_only_place_leaves_no_folder_behind(tmp_path, capsys, monkeypatch):
    from experiments import view

    def refuse(path, data):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(view, "write_bytes", refuse)
    monkeypatch.setattr(view, "write_text", lambda path, text: refuse(path, text))
    for extra in ([], ["--png", "3"]):
        assert view.main([str(RECORD), "--out", str(tmp_path / "a" / "b" / "c" / "r.out"), *extra]) == 2
        assert capsys.readouterr().err == f"error: {tmp_path}/a/b/c/r.out: cannot write there: Permission denied\n"
        assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_view_html_mode_follows_the_umask(tmp_path, capsys, umask, mode):
    from experiments import view

    old = os.umask(umask)
    try:
        assert view.main([str(RECORD), "--out", str(tmp_path / "r.html")]) == 0
    finally:
        os.umask(old)
    assert (tmp_path / "r.html").stat().st_mode & 0o777 == mode


def test_view_removes_the_temporary_files_of_a_killed_view(tmp_path, capsys):
    from experiments import view

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".r.html.{int(dead.stdout)}.0123456789ab.tmp"
    stale.write_text("half a page")
    assert view.main([str(RECORD), "--out", str(tmp_path / "r.html")]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]


def _limited(**limits):
    import resource

    def apply():
        for name, value in limits.items():
            resource.setrlimit(getattr(resource, name), (value, value))
    return apply


def test_view_of_dev_zero_is_refused_within_bounded_memory():
    """Under a 1 GiB address-space limit (it grew to 24 GB before)."""
    done = command("-m", "experiments.view", "/dev/zero", preexec_fn=_limited(RLIMIT_AS=2**30))
    assert one_line_error(done) == "error: /dev/zero: not a regular file (a character device)"
    summary = ROOT / "results" / "beam-w100" / "summary.json"
    assert summary.stat().st_size < 32 * 2**20


def test_view_on_a_full_disk_is_one_line_and_leaves_no_folder(tmp_path):
    """A file-size limit stands for a full disk: the write fails, the folders made for it go."""
    out = tmp_path / "FULL" / "a" / "b" / "c" / "r.html"
    done = command("-m", "experiments.view", str(ROOT / "results" / "beam-w100" / "summary.json"), "--out", str(out),
                   preexec_fn=_limited(RLIMIT_FSIZE=50_000))
    assert one_line_error(done) == f"error: {out}: cannot write there: File too large"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("cli", [["-m", "experiments.solve", "/dev/zero"],  # (the everyday loop runs one command)
                                 pytest.param(["-m", "experiments.bot", "/dev/zero"], marks=pytest.mark.slow),
                                 pytest.param(["-m", "experiments.run", "/dev/zero"], marks=pytest.mark.slow)],
                         ids=["solve", "bot", "run"])
def test_a_config_given_as_dev_zero_is_refused(cli):
    done = command(*cli, preexec_fn=_limited(RLIMIT_AS=2**30), stdin=subprocess.DEVNULL)
    assert one_line_error(done) == "error: /dev/zero: not a regular file (a character device)"


def test_a_segment_search_removes_its_checkpoints_stale_temporary_files(tmp_path):
    from solver import solve
    from test_segment import small_config

    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)
    path = tmp_path / "out.checkpoint.npz"
    stale = tmp_path / f".out.checkpoint.npz.{dead}.0123456789ab.tmp"
    other = tmp_path / f".other.checkpoint.npz.{dead}.0123456789ab.tmp"  # another search's: not this one's to remove
    stale.write_bytes(b"half a checkpoint")
    other.write_bytes(b"half a checkpoint")
    result = solve(small_config(), checkpoint=path, record=False)
    assert result.stop == "done" and path.exists() and not stale.exists() and other.exists()


# ------------------------------------------------------------------------------------------------
# smaller findings: seeds, splitting levels, the bot's evaluator


@pytest.mark.parametrize("module, argv, message", [
    ("run", ["configs/ga.yaml", "seed=-3"], "error: configs/ga.yaml: seed: Input should be greater than or equal to 0"),
    ("solve", ["configs/solve/standard_dellacherie.yaml", "seed=-1"],
     "error: configs/solve/standard_dellacherie.yaml: seed: Input should be greater than or equal to 0"),
    ("solve", ["configs/solve/standard_dellacherie.yaml", "online.estimate=splitting", "splitting.low=30"],
     "error: configs/solve/standard_dellacherie.yaml: splitting.levels: the first level (5) must be above splitting.low (30)"),
    ("solve", ["configs/solve/standard_dellacherie.yaml", "online.estimate=splitting", "rules=standard_10x10"],
     "error: configs/solve/standard_dellacherie.yaml: splitting.levels: the last level (19) must be below the board's "
     "height (10)"),
    ("bot", ["configs/solve/play.yaml", "evaluator=/nope.yaml"], "error: configs/solve/play.yaml: evaluator: /nope.yaml: file not found"),
], ids=["run-seed", "solve-seed", "splitting-low", "splitting-levels", "bot-evaluator"])
def test_a_config_error_is_one_line_naming_the_file_and_the_key(monkeypatch, capsys, tmp_path, module, argv, message):
    import importlib

    monkeypatch.chdir(ROOT)
    cli = importlib.import_module(f"experiments.{module}")
    extra = ["--out", str(tmp_path / "out")] if module == "solve" else []
    assert cli.main([*argv, *extra]) == 2
    assert capsys.readouterr().err == message + "\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_negative_seed_from_the_command_line_has_no_traceback(tmp_path):
    done = command("-m", "experiments.solve", "configs/solve/standard_dellacherie.yaml", "seed=-1", "--out",
                   str(tmp_path / "out"))
    one_line_error(done, "configs/solve/standard_dellacherie.yaml: seed:")


def test_a_solver_config_with_splitting_levels_that_fit_is_accepted():
    from solver.files import load_solver_config

    config = load_solver_config("configs/solve/standard_dellacherie.yaml", [
        "online.estimate=splitting", "rules=standard_10x10", "splitting.levels=[3, 4, 5, 6, 7, 8, 9]", "splitting.low=1"])
    assert config.splitting.levels[-1] == 9


def test_a_run_store_reads_its_files_bounded(tmp_path, monkeypatch):
    from optimizers import store as store_module
    from optimizers.store import RunDamaged, RunStore

    store = RunStore(tmp_path, [])
    store.curves.write_bytes(b'{"tag": 1, "key": "k", "curve": "eJwDAAAAAAE="}\n\xff\xfe not utf-8\n')
    assert list(store.read_curves()) == [(1, "k")]  # the damaged line is skipped, as any damaged line
    monkeypatch.setattr(store_module, "MAX_CURVES_BYTES", 10)
    with pytest.raises(RunDamaged, match=r"curves\.jsonl: more than 10 bytes: too large for a run's curves"):
        store.read_curves()
    monkeypatch.setattr(store_module, "MAX_TABLE_BYTES", 10)
    (tmp_path / "evaluations.csv").write_text("generation,index\n" * 3)
    with pytest.raises(RunDamaged, match=r"evaluations\.csv: more than 10 bytes"):
        store.read_evaluations()


def test_an_output_refused_for_want_of_room_leaves_no_folder_behind(tmp_path):
    """``--out FULL/a/b/c`` on a disk short of room: refused in one line, and the folders made to
    check it are gone again (a solve's output set, a run's runs_dir)."""
    from engine.files import OutputError, OutputSet, make_room

    with pytest.raises(OutputError, match=r"c: only .* MB free on its disk, \d+ MB needed$"):
        make_room(tmp_path / "FULL" / "a" / "b" / "c", str(tmp_path / "FULL/a/b/c"), min_free=2**62)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(OutputError, match="MB needed"):
        OutputSet(tmp_path / "FULL" / "a" / "b" / "c", frozenset({"record.txt"}), min_free=2**62)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "FULL").mkdir()  # a folder that was there stays
    with pytest.raises(OutputError):
        make_room(tmp_path / "FULL" / "a", "x", min_free=2**62)
    assert [p.name for p in tmp_path.rglob("*")] == ["FULL"]


@pytest.mark.slow
def test_a_segment_checkpoint_on_a_full_disk_is_one_line_and_keeps_the_previous_one(tmp_path, monkeypatch, capsys):
    import errno

    import solver.segment.driver as segment
    from engine.files import write_yaml
    from experiments.solve import main as solve_main
    from test_segment import small_config, stopped_at_first_report

    config = tmp_path / "segment.yaml"
    write_yaml(config, small_config().model_dump(mode="json", include={"policy", "evaluator", "pieces", "threads",
                                                                       "segment"}))
    out = tmp_path / "out"
    saved = tmp_path / "out.checkpoint.npz"
    assert stopped_at_first_report(saved, record=False).stop == "interrupted"
    before = saved.read_bytes()

    def full(path, tree, kind, compress=False):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(segment, "write_state", full)
    assert solve_main([str(config), "--resume", str(out), "--quiet"]) == 2
    assert capsys.readouterr().err == (f"error: {saved}: cannot save the search: No space left on device; the "
                                       "previous checkpoint is kept (once there is room, continue with --resume)\n")
    assert saved.read_bytes() == before and not out.exists()
    monkeypatch.undo()
    assert solve_main([str(config), "--resume", str(out), "--quiet"]) == 0  # room again: it goes on
    assert (out / "record.txt").exists()


@pytest.mark.parametrize("out", ["", ".", "..", "/"])
def test_a_solve_out_naming_no_folder_of_its_own_is_one_line(capsys, out):
    from experiments.solve import main as solve_main

    shown = "." if out == "" else out
    assert solve_main(["configs/solve/beam.yaml", "--pieces", "5", "--out", out]) == 2
    assert capsys.readouterr().err == (f"error: --out {shown!r}: name a folder of its own for the solve's files "
                                       "(e.g. solves/mine)\n")
