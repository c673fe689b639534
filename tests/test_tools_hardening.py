"""The tools outside the core hold the core's promise (issue 34, group 4 and its smaller findings):
bounded reads of every input, one-line errors with exit status 2, atomic writes, no silent
overwrite, stale temporary files removed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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
    # an endless file is read no further than the limit, in a moment
    with pytest.raises(TooLarge, match=r"^/dev/zero: more than 1,000 bytes: too large for a record$"):
        read_bytes("/dev/zero", 1000, "a record")
    with pytest.raises(YamlError, match="^/dev/zero: more than 1 MiB: too large for a configuration file$"):
        load_yaml("/dev/zero")
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
    stale = tmp_path / f".checkpoint.pkl.{pid}.0123456789ab.tmp"
    other = tmp_path / f".best.yaml.{pid}.abcdefabcdef.tmp"
    live = tmp_path / f".checkpoint.pkl.{os.getpid()}.0123456789ab.tmp"  # a writer still at work
    keep = tmp_path / "checkpoint.pkl"
    for p in (stale, other, live, keep):
        p.write_text("x")
    assert remove_stale_temporaries(tmp_path, "checkpoint.pkl") == [stale]
    assert remove_stale_temporaries(tmp_path) == [other]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, keep.name])
    # the writers name their temporary files so
    from engine.files import TEMPORARY_NAME, _new_temporary

    fd, tmp = _new_temporary(tmp_path / "x.txt")
    os.close(fd)
    m = TEMPORARY_NAME.match(tmp.name)
    assert (m["name"], m["pid"]) == ("x.txt", str(os.getpid()))
    assert remove_stale_temporaries(tmp_path / "missing") == []
