"""Files a command meets that are not what they seem (issue 61): a FIFO, a socket or a device where a
file is read; a YAML alias bomb; a record's path that holds markup, embedded in the replay page;
a link planted as a lock file; the terminal player's ``--save`` that cannot be written. Each is one
line and exit status 2, at once, and writes nothing where it should not."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

import engine.files as files
from engine.files import writing
from engine.files import FolderLock, Locked, ReadError, TooLarge, YamlError, load_yaml, parse_yaml, read_bytes

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "results" / "greedy-lecture_v1" / "record.txt"  # 33 pieces: replayed at once
SOLVE = "policy: greedy\nevaluator: pierre_dellacherie\npieces: 6\n"


def one_line_error(done: subprocess.CompletedProcess, *parts: str) -> str:
    """The stderr of a command that failed as a user error: exit status 2, one line, no traceback."""
    err = done.stderr.strip()
    assert done.returncode == 2, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for part in parts:
        assert part in err, (part, err)
    return err


def command(*args: str, cwd: Path = ROOT, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    """``python ARGS``; a command that would wait forever (the FIFO it reads) is killed at ``timeout``
    and the test fails there."""
    kw.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)


def _address_space(limit: int):
    import resource

    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


# ------------------------------------------------------------------------------------------------
# Only regular files are read


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "config.yaml"
    os.mkfifo(path)
    return path


def _promptly(fn, fifo: Path | None = None, seconds: float = 30):
    """``fn()``'s exception (or its value), failing the test when it has not returned within
    ``seconds`` (a read that waits for a FIFO's writer: the FIFO is then opened for writing, so
    that the waiting thread ends)."""
    out = {}

    def call():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 (handed to the test)
            out["error"] = e

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if fifo is not None:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the reader's open returns, then EOF
        thread.join(seconds)
        pytest.fail(f"still waiting after {seconds} s")
    return out.get("error", out.get("value"))


def test_a_fifo_a_socket_or_a_device_is_refused_at_once(fifo, tmp_path):
    e = _promptly(lambda: read_bytes(fifo, 1000, "a record"), fifo)
    assert type(e) is ReadError and str(e) == f"{fifo}: not a regular file (a FIFO)"
    e = _promptly(lambda: load_yaml(fifo), fifo)
    assert isinstance(e, YamlError) and str(e) == f"{fifo}: not a regular file (a FIFO)"
    e = _promptly(lambda: files.read_json(fifo), fifo)
    assert str(e) == f"{fifo}: not a regular file (a FIFO)"
    sock = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(sock))
        server.listen()
        e = _promptly(lambda: read_bytes(sock, 1000, "a record"))
    assert type(e) is ReadError and str(e) == f"{sock}: not a regular file (a socket)"
    for device in ("/dev/zero", "/dev/null"):
        with pytest.raises(ReadError, match=rf"^{device}: not a regular file \(a character device\)$"):
            read_bytes(device, 1000, "a record")
    # a regular file, a link to one, a folder, a missing file: as before
    plain = tmp_path / "plain.txt"
    plain.write_bytes(b"N,D")
    (tmp_path / "link.txt").symlink_to(plain)
    assert read_bytes(tmp_path / "link.txt", 10, "a record") == b"N,D"
    with pytest.raises(ReadError, match="cannot read: Is a directory$"):
        read_bytes(tmp_path, 10, "a record")
    with pytest.raises(TooLarge):
        read_bytes(plain, 2, "a record")


def test_a_stream_passed_on_purpose_is_still_read(fifo, monkeypatch, capsys):
    """A command reads a pipe only as a stream it opened itself (replay's ``-``), no further than
    the limit; a writer on the FIFO is read that way too."""
    writer = subprocess.Popen(["sh", "-c", f"printf 'N,D' > '{fifo}'"])
    try:
        with open(fifo, "rb") as stream:
            assert read_bytes(fifo, 10, "a record", stream=stream) == b"N,D"
    finally:
        writer.wait(30)
    with open("/dev/zero", "rb") as endless, pytest.raises(TooLarge, match="^-: more than 1,000 bytes"):
        read_bytes("-", 1000, "a record", stream=endless)
    from experiments import replay

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(RECORD.read_bytes())))
    assert replay.main(["-"]) == 0  # replay's "-": standard input, whatever it is
    assert capsys.readouterr().out.startswith("-: score ")


@pytest.mark.parametrize("cli", [
    ["-m", "experiments.solve", "{fifo}", "--out", "{tmp}/out"],
    pytest.param(["-m", "experiments.solve", "{config}", "evaluator={fifo}", "--out", "{tmp}/out"],
                 marks=pytest.mark.slow),
    pytest.param(["-m", "experiments.run", "{fifo}"], marks=pytest.mark.slow),
    pytest.param(["-m", "experiments.replay", "{fifo}"], marks=pytest.mark.slow),
    pytest.param(["-m", "experiments.view", "{fifo}", "--out", "{tmp}/r.html"], marks=pytest.mark.slow),
], ids=["solve", "solve-evaluator", "run", "replay", "view"])
def test_a_command_given_a_fifo_refuses_it_in_one_line(fifo, tmp_path, cli):
    """Each of these waited for a writer until the time limit killed it, printing nothing."""
    config = tmp_path / "greedy.yaml"
    config.write_text(SOLVE)
    done = command(*(a.format(fifo=fifo, tmp=tmp_path, config=config) for a in cli))
    err = one_line_error(done, f"{fifo}: not a regular file (a FIFO)")
    if "evaluator=" in " ".join(cli):
        assert err == f"error: {config}: evaluator: {fifo}: not a regular file (a FIFO)"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["config.yaml", "greedy.yaml"])


# ------------------------------------------------------------------------------------------------
# YAML aliases are bounded


def bomb(levels: int = 9, fan: int = 9, indent: str = "  ") -> str:
    """The "billion laughs": ``levels`` anchored lists of ``fan`` aliases each of the one before."""
    lines = [f"{indent}a: &a [{', '.join(['lol'] * fan)}]"]
    for prev, name in zip("abcdefghijklmnop", "bcdefghijklmnop"[:levels - 1]):
        lines.append(f"{indent}{name}: &{name} [{', '.join([f'*{prev}'] * fan)}]")
    return "\n".join(lines) + "\n"


def merge_bomb(levels: int = 9, fan: int = 9, indent: str = "  ") -> str:
    """The same through merge keys: each mapping merges the one before ``fan`` times."""
    lines = [f"{indent}a: &a {{{', '.join(f'k{i}: {i}' for i in range(fan))}}}"]
    for prev, name in zip("abcdefghijklmnop", "bcdefghijklmnop"[:levels - 1]):
        lines.append(f"{indent}{name}: &{name} {{<<: [{', '.join([f'*{prev}'] * fan)}]}}")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_in_one_line_at_once():
    text = "policy: greedy\nmeta:\n" + bomb()
    start = time.monotonic()
    with pytest.raises(YamlError) as info:
        parse_yaml(text, "bomb.yaml")
    assert time.monotonic() - start < 5  # (a few milliseconds: the check visits each node once)
    # the first value past the limit: g, 9**7 values (f holds 9**6, under 2**20)
    assert str(info.value) == ("bomb.yaml: too many aliases: line 9, column 6: the value there holds more than "
                               "1,048,576 values once its aliases are expanded")
    with pytest.raises(YamlError, match=r"^m\.yaml: too many aliases: line 7, column 14: "):  # f's merges: 9**5 * 19
        parse_yaml("meta:\n" + merge_bomb(), "m.yaml")
    with pytest.raises(YamlError, match=r"^r\.yaml: a recursive alias: line 1, column 7: the value there holds an "
                                        r"alias of itself$"):
        parse_yaml("meta: &a {x: [1, *a]}", "r.yaml")


def test_aliases_within_the_limit_read_as_before():
    text = ("base: &base {width: 10, height: 20}\n"
            "small:\n  <<: *base\n  height: 10\n"
            "both: [*base, *base]\n")
    assert parse_yaml(text) == {"base": {"width": 10, "height": 20}, "small": {"width": 10, "height": 10},
                                "both": [{"width": 10, "height": 20}] * 2}
    # the count is of the document's values with its aliases expanded: here 1 + (1 + 4) + (1 + 9)
    exact = "a: &a [x, x, x]\nb: [*a, *a]\n"
    assert parse_yaml(exact, max_nodes=16) == {"a": ["x"] * 3, "b": [["x"] * 3] * 2}
    with pytest.raises(YamlError, match="too many aliases: line 1, column 1: .* more than 15 values"):
        parse_yaml(exact, max_nodes=15)
    # without aliases a document holds fewer values than its bytes: within a limit of its read limit
    flat = "[" + "1," * 499 + "1]"
    assert len(parse_yaml(flat, max_nodes=len(flat))) == 500  # (1,001 bytes, 501 values)
    assert files.MAX_YAML_NODES == files.MAX_CONFIG_BYTES
    for path in sorted((ROOT / "configs").glob("**/*.yaml")):  # every shipped configuration still loads
        assert load_yaml(path) is not None, path


@pytest.mark.parametrize("module, body", [
    ("solve", "meta"),
    pytest.param("solve", "merge", marks=pytest.mark.slow),
    pytest.param("run", "choices", marks=pytest.mark.slow),
], ids=["solve-meta", "solve-merge", "run-choices"])
def test_an_alias_bomb_given_to_a_command_is_refused_under_a_2_gb_cap(tmp_path, module, body):
    """It grew past any memory before; under a 2 GB address-space limit it is one line, exit 2."""
    path = tmp_path / "bomb.yaml"
    if module == "solve":
        path.write_text(SOLVE + "meta:\n" + (bomb() if body == "meta" else merge_bomb()))
        extra = ["--out", str(tmp_path / "out")]
    else:
        from test_tuning import TINY

        import yaml

        data = {**{k: v for k, v in TINY.items() if k != "space"}, "runs_dir": str(tmp_path / "runs")}
        levels = bomb(indent="").splitlines()  # each "x: &x [...]" becomes a choice "- &x [...]"
        choices = "".join(f"      - {line.split(': ', 1)[1]}\n" for line in levels)
        path.write_text(yaml.safe_dump(data, sort_keys=False)
                        + "space:\n  - path: beam.width\n    type: choice\n    choices:\n" + choices)
        extra = []
    done = command("-m", f"experiments.{module}", str(path), *extra, preexec_fn=_address_space(2 * 2**30))
    one_line_error(done, f"{path}: too many aliases: line ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bomb.yaml"]


# ------------------------------------------------------------------------------------------------
# The replay page's embedded data


HOSTILE = ["<!--<script>", "</script>", "]]>", "</SCRIPT ><script>alert(1)</script>", "a & b > c",
           "\u2028\u2029", "__DATA__", "__TITLE__", "<\\/", "\\u003c"]


def test_embedded_json_has_no_markup_and_reads_back():
    from experiments.view import script_json

    data = {"name": "".join(HOSTILE), "list": HOSTILE, "n": 3}
    text = script_json(data)
    assert json.loads(text) == data
    assert not set(text) & set("<>&\u2028\u2029")


@pytest.mark.parametrize("folder", ["<!--<script>", "<!--/<script>/x", "</script><script>x=1<", "]]>", "__DATA__"])
def test_a_record_under_a_hostile_folder_name_leaves_the_page_whole(tmp_path, folder):
    """The name in the data and, HTML-escaped, in the title. (A path's separators make the rest:
    ``<`` / ``script>`` reads ``</script>``.)"""
    from experiments import view

    path = tmp_path / folder / f"{Path(folder).name}.txt"
    path.parent.mkdir(parents=True)
    shutil.copy(RECORD, path)
    page = view.html(view.load(path))
    template = view.page_template()
    head, tail = template.split("__DATA__")
    assert page.endswith(tail)  # the template's script after the data, untouched
    embedded = page.split("const D = ", 1)[1].split(";\n", 1)[0]
    assert "<" not in embedded and ">" not in embedded
    data = json.loads(embedded)
    assert data["name"] == str(path) and data["pieces"] == 33
    # the name reaches the page only there and, HTML-escaped, in its title: no more script elements
    assert page.count("<script") == template.count("<script") and page.count("</script") == template.count("</script")
    assert page.count('"boards":') == 1
    title = page.split("<title>", 1)[1].split("</title>", 1)[0]
    assert title == view._escape(f"{path.name}: {data['score']:,} points") and "<" not in title


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_embedded_data_reads_back_in_javascript(tmp_path):
    from experiments.view import script_json

    data = {"name": "".join(HOSTILE)}
    script = tmp_path / "d.js"
    script.write_text(f"const D = {script_json(data)};\nprocess.stdout.write(JSON.stringify(D));\n")
    done = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and json.loads(done.stdout) == data


# ------------------------------------------------------------------------------------------------
# Lock files are not followed


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "victim.txt"
    path.write_text("precious\n")
    return path


@pytest.mark.parametrize("plant, what", [
    (lambda lock, victim: lock.symlink_to(victim), "a symbolic link"),
    (lambda lock, victim: os.link(victim, lock), "a file of 2 names (hard links)"),
    (lambda lock, victim: os.mkfifo(lock), "a FIFO"),
    (lambda lock, victim: lock.mkdir(), "a folder"),
], ids=["symlink", "hardlink", "fifo", "folder"])
def test_a_lock_file_that_is_not_one_is_refused_and_nothing_is_written(tmp_path, victim, plant, what):
    lock = tmp_path / "out.lock"
    plant(lock, victim)
    with pytest.raises(Locked) as info:
        with FolderLock(tmp_path, "out.lock", label="out", remove=True):
            pytest.fail("the lock was taken")
    assert str(info.value) == f"out: its lock file {lock} is {what}, not a lock file; remove it"
    assert victim.read_text() == "precious\n"
    assert os.path.lexists(lock)  # left for its owner to look at
    lock.unlink() if not lock.is_dir() or lock.is_symlink() else lock.rmdir()
    with FolderLock(tmp_path, "out.lock", remove=True):  # a real one is taken
        assert lock.read_text() == f"{os.getpid()}\n" and lock.stat().st_nlink == 1
    assert not lock.exists()


def test_a_solve_with_a_planted_link_as_its_lock_leaves_the_target_unchanged(tmp_path, victim, capsys):
    """A segment solve (the one that holds DIR.lock whatever else does) is refused before it searches."""
    from experiments import solve as cli

    config = tmp_path / "g.yaml"
    config.write_text("policy: segment\nrules: geek\nevaluator: transitions\npieces: 30\n")
    out = tmp_path / "out"
    (tmp_path / "out.lock").symlink_to(victim)
    before = victim.stat()
    assert cli.main([str(config), "--out", str(out), "--quiet"]) == 2
    assert capsys.readouterr().err == f"error: {out}: its lock file {tmp_path}/out.lock is a symbolic link, not a lock file; remove it\n"
    assert victim.read_text() == "precious\n" and victim.stat().st_mtime_ns == before.st_mtime_ns
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml", "out.lock", "victim.txt"]


@pytest.mark.slow
def test_a_run_with_a_planted_link_as_its_lock_leaves_the_target_unchanged(tmp_path, victim):
    from optimizers import run as tuning
    from test_tuning import TINY, write_config

    config = tuning.load_run_config(write_config(tmp_path, {**TINY, "ga": {**TINY["ga"], "generations": 1},
                                                            "pieces": 30}), [])
    run_dir = tuning.tune(config).dir
    (run_dir / "run.lock").unlink(missing_ok=True)
    (run_dir / "run.lock").symlink_to(victim)
    files_before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file() and not p.is_symlink()}
    done = command("-m", "experiments.run", "--resume", str(run_dir), "--quiet")
    assert one_line_error(done) == (f"error: {run_dir}: its lock file {run_dir}/run.lock is a symbolic link, "
                                    "not a lock file; remove it")
    assert victim.read_text() == "precious\n"
    assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file() and not p.is_symlink()} == files_before


def test_a_temporary_is_never_a_file_or_link_already_there(tmp_path, victim, monkeypatch):
    names = iter(["000000000000", "111111111111"])
    monkeypatch.setattr(writing.secrets, "token_hex", lambda n: next(names))
    target = tmp_path / "t.txt"
    (tmp_path / f".t.txt.{os.getpid()}.000000000000.tmp").symlink_to(victim)
    files.write_text(target, "new\n")
    assert target.read_text() == "new\n" and victim.read_text() == "precious\n"


def test_a_compile_lock_planted_as_a_link_is_not_followed(tmp_path, victim):
    from engine._jit.locks import CompileLocks

    locks = CompileLocks(tmp_path / "locks")
    (tmp_path / "locks").mkdir()
    (tmp_path / "locks" / "k.lock").symlink_to(victim)
    os.utime(victim, ns=(10**18, 10**18))
    assert locks.acquire("k") is False  # the compile goes on without it
    assert victim.stat().st_mtime_ns == 10**18 and victim.read_text() == "precious\n"
    assert locks.acquire("other") is True
    locks.release("other")


# ------------------------------------------------------------------------------------------------
# The terminal player


def _played_game():
    from engine import GEEK
    from engine.movegen.tables import STEP_L, STEP_R
    from experiments.tui import Game

    g = Game(GEEK)
    for i in range(8):
        g.step(STEP_L if i % 2 else STEP_R)
        g.drop()
    return g


@pytest.mark.parametrize("save, problem", [
    ("{tmp}/plain.txt/x", "{tmp}/plain.txt/x: cannot write there: {tmp}/plain.txt is not a folder"),
    ("{tmp}", "{tmp}: is a folder; name the file to write (e.g. {tmp}/record.txt)"),
    ("", "--save: empty; name the file to write"),
    ("{tmp}/fifo", "{tmp}/fifo: not a plain file"),
], ids=["under-a-file", "a-folder", "empty", "fifo"])
def test_the_players_save_is_checked_before_the_game(tmp_path, capsys, save, problem):
    from experiments import tui

    (tmp_path / "plain.txt").write_text("x")
    os.mkfifo(tmp_path / "fifo")
    before = sorted(tmp_path.iterdir())
    assert tui.main(["--rules", "geek", "--save", save.format(tmp=tmp_path)]) == 2
    assert capsys.readouterr().err == f"error: {problem.format(tmp=tmp_path)}\n"
    assert sorted(tmp_path.iterdir()) == before


def test_the_players_save_under_a_folder_it_may_not_write_is_refused(tmp_path, capsys, monkeypatch):
    """(As root every folder can be written: the refusal stands in for a read-only one.)"""
    from experiments import tui, view

    monkeypatch.setattr(view.os, "access", lambda path, mode: Path(path) != tmp_path)
    assert tui.main(["--rules", "geek", "--save", str(tmp_path / "new" / "mine.txt")]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path}/new/mine.txt: cannot write there: {tmp_path} is not writable\n"
    assert list(tmp_path.iterdir()) == []


def test_the_player_without_a_terminal_is_one_line():
    done = command("-m", "experiments.tui")  # (standard input: /dev/null)
    assert one_line_error(done) == ("error: standard input is not a terminal; the player runs in one "
                                    "(not with < FILE, > FILE or a pipe)")


def test_a_save_that_fails_after_the_game_keeps_the_record(tmp_path, monkeypatch):
    from engine import replay
    from experiments.tui import SaveError, save

    g = _played_game()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plain.txt").write_text("x")
    with pytest.raises(SaveError) as info:
        save(g, tmp_path / "plain.txt" / "record.txt")  # (a folder replaced by a file during the game)
    kept = tmp_path / "tui-record-1.txt"
    assert str(info.value) == f"{tmp_path}/plain.txt/record.txt: cannot write there: {tmp_path}/plain.txt is not a folder; " \
                              f"the record is kept in {kept}"
    verdict = replay(kept.read_text().strip())
    assert (verdict.score, verdict.bricks) == (g.score, g.t) and g.t == 8
    # a second one does not overwrite the first
    with pytest.raises(SaveError, match="kept in .*tui-record-2.txt$"):
        save(g, tmp_path / "plain.txt" / "record.txt")


def test_the_players_save_is_atomic(tmp_path, monkeypatch):
    """A write that fails at its last step (the rename) leaves the old file whole and no temporary."""
    from experiments.tui import SaveError, save

    g = _played_game()
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "record.txt"
    target.write_text("an older record\n")

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writing.os, "replace", refuse)
    with pytest.raises(SaveError, match="cannot write there: No space left on device; the record is kept in "):
        save(g, target)
    assert target.read_text() == "an older record\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.txt", "tui-record-1.txt"]
    monkeypatch.undo()
    assert save(g, target).endswith(f"written to {target}") and target.read_text() == g.record() + "\n"


def _screen(session):
    return subprocess.run(["tmux", "capture-pane", "-p", "-J", "-t", session], capture_output=True, text=True).stdout


def _wait_for(session, predicate, timeout=120):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        text = _screen(session)
        if predicate(text):
            return text
        time.sleep(0.2)
    raise AssertionError(f"timed out; the screen shows:\n{_screen(session)}")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.parametrize("quit_key", ["q", "C-c"], ids=["q", "ctrl-c"])
def test_the_player_keeps_a_record_it_cannot_save(tmp_path, quit_key):
    """--save checked at the start, its folder replaced by a file during the game, the game quit:
    one error line saying where the record is kept, and it replays to the game's score."""
    from engine import replay

    (tmp_path / "saves").mkdir()
    session = f"tui-{uuid.uuid4().hex[:8]}"
    cmd = (f"cd {tmp_path} && env -u LINES -u COLUMNS {sys.executable} -m experiments.tui --rules geek "
           f"--save saves/mine.txt 2>err.txt; echo EXIT=$?; sleep 60")
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "100", "-y", "35", cmd], check=True)
    try:
        _wait_for(session, lambda t: "rules  geek" in t and "x=" in t)
        for _ in range(3):
            subprocess.run(["tmux", "send-keys", "-t", session, "Space"], check=True)
        text = _wait_for(session, lambda t: re.search(r"pieces 3\b", t))
        score = int(re.search(r"score\s+(\d+)", text).group(1))
        (tmp_path / "saves").rmdir()
        (tmp_path / "saves").write_text("in the way\n")
        subprocess.run(["tmux", "send-keys", "-t", session, quit_key], check=True)
        text = _wait_for(session, lambda t: "EXIT=" in t)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    kept = tmp_path / "tui-record-1.txt"
    err = (tmp_path / "err.txt").read_text().strip().splitlines()
    assert err == [f"error: saves/mine.txt: cannot write there: saves is not a folder; the record is kept in {kept}"]
    assert "EXIT=2" in text and re.search(r"\d+ points, \d+ lines, 3 pieces", text)
    verdict = replay(kept.read_text().strip())
    assert (verdict.score, verdict.bricks) == (score, 3)
