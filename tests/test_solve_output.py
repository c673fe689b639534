"""The solve command's output folder: checked before the search, written as one set, never another
solve's; bad configurations name the file and the key (in process: these run in milliseconds once
the greedy kernel is cached)."""

import json
import os

import pytest

import engine.files as files
from engine.files import output, writing
from engine import replay
from experiments import solve as cli

GREEDY = "policy: greedy\nevaluator: pierre_dellacherie\npieces: 6\n"


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text(GREEDY)
    return path


def solve_main(*args):
    return cli.main([*map(str, args), "--quiet"])


def test_default_folders_never_collide(tmp_path, config, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli.time, "strftime", lambda fmt: "20261124-120000")  # the same second
    monkeypatch.setattr(cli.os, "getpid", lambda: 4242)
    assert solve_main(config) == 0
    monkeypatch.setattr(cli.os, "getpid", lambda: 4243)  # another process, the same second
    assert solve_main(config) == 0
    made = sorted(p.name for p in (tmp_path / "solves").iterdir())
    assert made == ["g-20261124-120000-4242", "g-20261124-120000-4243"]
    for name in made:
        assert sorted(p.name for p in (tmp_path / "solves" / name).iterdir()) == sorted(cli.OUTPUT_FILES)


def test_a_default_folder_that_exists_is_never_reused(tmp_path, config, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli.time, "strftime", lambda fmt: "20261124-120000")
    (tmp_path / "solves" / f"g-20261124-120000-{os.getpid()}").mkdir(parents=True)
    assert solve_main(config) == 2
    assert capsys.readouterr().err.strip().endswith("exists already")


def set_of(folder):
    return {p.name: p.read_text() for p in folder.iterdir()}


def test_a_write_that_fails_leaves_the_previous_set_whole(tmp_path, config, monkeypatch, capsys):
    out = tmp_path / "out"
    assert solve_main(config, "--out", out) == 0
    before = set_of(out)
    assert json.loads(before["summary.json"])["pieces"] == 6
    real = writing.write_bytes
    calls = []

    def dies_on_the_third(path, data):  # as a kill or a full disk in the middle of the set
        calls.append(path)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        real(path, data)

    monkeypatch.setattr(writing, "write_bytes", dies_on_the_third)
    assert solve_main(config, "--out", out, "pieces=9") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {out}: cannot write there: No space left on device; nothing written"]
    assert set_of(out) == before                        # the previous set, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml", "out"]  # no staging left
    monkeypatch.setattr(writing, "write_bytes", real)
    assert solve_main(config, "--out", out, "pieces=9") == 0
    after = set_of(out)
    assert json.loads(after["summary.json"])["pieces"] == 9 and replay(after["record.txt"]).bricks == 9
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml", "out"]


def test_what_a_killed_commit_left_is_put_right(tmp_path, config):
    """A solve killed between a commit's two renames leaves the previous set in its .old folder (and
    a killed one its staging folder): the next solve of that folder puts the set back and tidies."""
    out = tmp_path / "out"
    assert solve_main(config, "--out", out) == 0
    before = set_of(out)
    dead = 2**22 + 12345  # above Linux's default pid_max: no such process
    out.rename(tmp_path / f".out.{dead}.old")
    (tmp_path / f".out.{dead + 1}.partial").mkdir()
    (tmp_path / f".out.{dead + 1}.partial" / "record.txt").write_text("N")
    files.OutputSet(out, cli.OUTPUT_FILES).discard()
    assert set_of(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml", "out"]


@pytest.mark.parametrize("make, problem", [
    (lambda t: (t / "f").write_text("x") and t / "f", "not a folder"),
    (lambda t: (t / "f").write_text("x") and t / "f" / "sub" / "out", "cannot write there: {t}/f is not a folder"),
    (lambda t: (t / "d").mkdir() or (t / "d" / "notes.md").write_text("mine") and t / "d",
     "holds files that are not this program's output (notes.md); choose another folder"),
])
def test_an_output_folder_that_cannot_be_used_is_found_before_the_search(tmp_path, config, monkeypatch, capsys,
                                                                          make, problem):
    out = make(tmp_path)
    searched = []
    monkeypatch.setattr(cli, "solve", lambda *a, **k: searched.append(1))
    assert solve_main(config, "--out", out) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"error: {out}: {problem.format(t=tmp_path)}"]
    assert not searched


def test_a_full_disk_is_found_before_the_search(tmp_path, config, monkeypatch, capsys):
    monkeypatch.setattr(output.shutil, "disk_usage", lambda p: output.shutil._ntuple_diskusage(10**9, 10**9, 2**20))
    monkeypatch.setattr(cli, "solve", lambda *a, **k: pytest.fail("the search began"))
    assert solve_main(config, "--out", tmp_path / "o") == 2
    assert capsys.readouterr().err.strip() == f"error: {tmp_path / 'o'}: only 1.0 MB free on its disk, 32 MB needed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml"]


def test_an_empty_config_and_an_unknown_evaluator_name_the_file_and_key(tmp_path, capsys):
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert solve_main(empty, "--out", tmp_path / "o") == 2
    assert capsys.readouterr().err.strip() == (f"error: {empty}: the file is empty (no keys); write {{}} to mean "
                                               "every default")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("policy: greedy\n")
    assert solve_main(cfg, "evaluator=nosuch", "--out", tmp_path / "o") == 2
    assert capsys.readouterr().err.strip().startswith(f"error: {cfg}: evaluator: nosuch: no such file or preset (presets: ")
    assert not (tmp_path / "o").exists()


def test_the_summary_says_where_it_came_from(tmp_path, config):
    import numba

    assert solve_main(config, "--out", tmp_path / "o") == 0
    p = json.loads((tmp_path / "o" / "summary.json").read_text())["provenance"]
    assert p["commit"] is None or (len(p["commit"]) == 40 and isinstance(p["dirty"], bool))
    assert p["libraries"]["numba"] == numba.__version__ and p["cpus"] == os.cpu_count()
    assert {"python", "workbench", "machine", "system", "time"} <= set(p)


def test_a_tuned_config_played_on_other_rules_is_warned_of(tmp_path, capsys):
    """A run's best.yaml names the rules its weights were tuned on; played on others (a
    ``rules=`` override) the command says so, and plays it as asked."""
    best = tmp_path / "best.yaml"
    best.write_text("policy: one_ply\nrules: course\npieces: 20\nevaluator: el_tetris\n"
                    "meta: {source: tuning run, run: toy-1}\n")
    assert cli.main([str(best), "--out", str(tmp_path / "a"), "rules=classic"]) == 0
    err = capsys.readouterr().err
    assert f"warning: {best} was tuned on rules 'course'; its weights were not chosen for 'classic'" in err
    assert cli.main([str(best), "--out", str(tmp_path / "b")]) == 0
    assert "warning" not in capsys.readouterr().err


class Terminal:
    """A stderr that says it is a terminal and renders what is written to it: ``\\r`` back to the
    line's start, ``\\n`` a new line, later characters over earlier ones (what a user is left
    looking at)."""

    def __init__(self):
        self.lines, self.column, self.written = [""], 0, ""

    def isatty(self):
        return True

    def write(self, text):
        self.written += text
        for ch in text:
            if ch == "\r":
                self.column = 0
            elif ch == "\n":
                self.lines.append("")
                self.column = 0
            else:
                line = self.lines[-1].ljust(self.column)
                self.lines[-1] = line[:self.column] + ch + line[self.column + 1:]
                self.column += 1
        return len(text)

    def flush(self):
        pass


def test_a_solve_on_a_terminal_leaves_its_report_and_no_finished_bar(config, tmp_path, monkeypatch, capsys):
    terminal = Terminal()
    monkeypatch.setattr(cli.sys, "stderr", terminal)
    assert cli.main([str(config), "--out", str(tmp_path / "out")]) == 0
    assert "piece/s" in terminal.written  # the bar was drawn while the search went on
    assert [line for line in terminal.lines if line.strip()] == []  # and erased at its end: no "100%" left
    assert " 6 pieces (record_end; done) in " in capsys.readouterr().out  # the report says how it ended


def test_a_solve_into_a_log_prints_plain_progress_lines(config, tmp_path, monkeypatch, capsys):
    assert cli.main([str(config), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "%|" not in err and "\r" not in err
    assert err.splitlines()[-1] == "greedy: piece 6 of 6, score 0"  # the last one at the end
