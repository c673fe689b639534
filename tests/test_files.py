"""engine.files: atomic writes (complete or absent, fsynced, the umask's mode) and the YAML reader."""

import os
import stat
from pathlib import Path

import pytest

from engine.files import YamlError, load_yaml, parse_yaml, write_bytes, write_json, write_text, write_yaml, writing


def listing(folder):
    return sorted(p.name for p in folder.iterdir())


def test_a_write_replaces_the_file_whole(tmp_path):
    path = tmp_path / "a" / "b" / "out.txt"  # missing folders are made
    write_text(path, "old\n")
    with open(path, encoding="utf-8") as reader:  # a reader of the old file keeps reading the old file
        write_text(path, "new, longer\n")
        assert reader.read() == "old\n"
    assert path.read_text(encoding="utf-8") == "new, longer\n"
    assert listing(path.parent) == ["out.txt"]  # no temporary file left beside it


@pytest.fixture
def durable(monkeypatch):
    """Writes fsynced, as in every command (tests/conftest.py turns it off for the suite)."""
    monkeypatch.setattr(writing, "DURABLE", True)


def test_writes_are_durable_unless_the_test_suite_says():
    import ast

    tree = ast.parse(Path(writing.__file__).read_text(encoding="utf-8"))
    assigned = [node.value for node in tree.body if isinstance(node, ast.Assign)
                and [getattr(t, "id", None) for t in node.targets] == ["DURABLE"]]
    assert [ast.literal_eval(v) for v in assigned] == [True]  # as every command imports it
    assert writing.DURABLE is False  # tests/conftest.py


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch, durable, failing):
    path = tmp_path / "out.bin"
    write_bytes(path, b"old")

    def fail(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, fail)
    with pytest.raises(OSError, match="No space left"):
        write_bytes(path, b"new")
    assert path.read_bytes() == b"old"
    assert listing(tmp_path) == ["out.bin"]


def test_an_interrupted_write_leaves_no_temporary(tmp_path, monkeypatch, durable):
    def interrupt(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_text(tmp_path / "new.txt", "x")
    assert listing(tmp_path) == []


@pytest.mark.parametrize("durable_, expected", [(True, ["fsync", "replace"]), (False, ["replace"])])
def test_the_data_are_fsynced_before_the_rename(tmp_path, monkeypatch, durable_, expected):
    monkeypatch.setattr(writing, "DURABLE", durable_)
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: events.append("fsync") or real_fsync(fd))
    monkeypatch.setattr(os, "replace", lambda a, b: events.append("replace") or real_replace(a, b))
    write_text(tmp_path / "x.txt", "data")
    assert events == expected and (tmp_path / "x.txt").read_text() == "data"


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_the_file_mode_follows_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        write_text(tmp_path / "x.txt", "data")
        write_text(tmp_path / "x.txt", "again")  # a replacement too
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "x.txt").stat().st_mode) == mode


def test_json_and_yaml_writers(tmp_path):
    write_json(tmp_path / "a.json", {"b": [1, 2]})
    assert (tmp_path / "a.json").read_text() == '{\n "b": [\n  1,\n  2\n ]\n}\n'
    data = {"z": 1, "a": "1e9", "f": 1e9, "big": 1e20, "name": "text"}
    write_yaml(tmp_path / "a.yaml", data, header="# a header")
    text = (tmp_path / "a.yaml").read_text()
    assert text.startswith("# a header\nz: 1\na: '1e9'\n")  # its own order; a string that reads as a number is quoted
    assert load_yaml(tmp_path / "a.yaml") == data


def test_yaml_12_floats_are_numbers(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("a: 1e9\nb: -1e-3\nc: 1.0e+9\nd: 2.5E3\ne: '1e9'\nf: 1e\ng: 12\n")
    data = load_yaml(path)
    assert data == {"a": 1e9, "b": -0.001, "c": 1e9, "d": 2500.0, "e": "1e9", "f": "1e", "g": 12}
    assert all(type(data[k]) is float for k in "abcd") and type(data["g"]) is int
    path.write_text("")
    assert load_yaml(path) is None  # the caller says what an empty file means
    assert parse_yaml("[1e3, x]") == [1000.0, "x"]


def test_yaml_errors_name_the_file_the_line_and_the_problem(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("features:\n  holes: [1,\n")
    with pytest.raises(YamlError) as info:
        load_yaml(path)
    message = str(info.value)
    assert message.startswith(f"{path}: invalid YAML: line 3, column 1: ") and "\n" not in message
    assert info.value.path == str(path) and message == f"{path}: {info.value.problem}"
    path.write_text("a: 1\n  b: 2\n")
    with pytest.raises(YamlError, match=r"bad\.yaml: invalid YAML: line 2, column 4: mapping values are not allowed"):
        load_yaml(path)
    with pytest.raises(YamlError) as info:
        load_yaml(tmp_path / "none.yaml")
    assert str(info.value) == f"{tmp_path / 'none.yaml'}: file not found"
    with pytest.raises(YamlError) as info:
        load_yaml(tmp_path)
    assert str(info.value) == f"{tmp_path}: cannot read: Is a directory"
    (tmp_path / "latin1.yaml").write_bytes(b"a: \xe9\n")
    with pytest.raises(YamlError, match=r"latin1\.yaml: not UTF-8 text \(byte 0xe9 at offset 3\)"):
        load_yaml(tmp_path / "latin1.yaml")
