"""Provenance names the command as a user types it, and nothing committed under results/ names a
folder of the machine that made it."""

import json
import re
import sys
import types
from pathlib import Path

import pytest
import yaml

from engine.provenance import ROOT, command, provenance

RESULTS = ROOT / "results"
#: the committed result files read as data (records, replay.js and submit.js hold no paths)
DATA_FILES = sorted(p for ext in ("json", "jsonl", "yaml", "yml", "csv") for p in RESULTS.rglob(f"*.{ext}"))
#: an absolute path of a machine: a string that starts with a root folder
MACHINE_PATH = re.compile(r"^(/(work|root|home|tmp|var|usr|opt|mnt|srv|private|Users)\b|[A-Za-z]:[\\/])")
#: the same inside text (after a quote, a space, a comma or an equals sign)
MACHINE_PATH_IN_TEXT = re.compile(r"(?:^|[\s\"',=:\[])(/(?:work|root|home|tmp|var|usr|opt|mnt|srv|private|Users)/)")


def _strings(node):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(key)
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str):
        yield node


def test_python_m_is_named_by_its_module():
    argv = [str(ROOT / "experiments" / "solve.py"), "configs/solve/segment.yaml", "--out", "solves/s"]
    assert command(argv, "experiments.solve") == ["python", "-m", "experiments.solve", "configs/solve/segment.yaml",
                                                   "--out", "solves/s"]
    assert command([str(ROOT / "experiments" / "__main__.py")], "experiments.__main__") == ["python", "-m",
                                                                                          "experiments"]


def test_absolute_paths_under_the_project_become_relative(monkeypatch):
    monkeypatch.chdir(ROOT)
    argv = [str(ROOT / "experiments" / "solve.py"), str(ROOT / "configs" / "solve" / "beam.yaml"), "--out",
            str(ROOT / "solves" / "x"), f"early_abort.reference={ROOT / 'configs' / 'records' / 'a.txt'}",
            f"--out={ROOT / 'o'}", "beam.width=5", "/elsewhere/data.txt"]
    assert command(argv, "experiments.solve") == [
        "python", "-m", "experiments.solve", "configs/solve/beam.yaml", "--out", "solves/x",
        "early_abort.reference=configs/records/a.txt", "--out=o", "beam.width=5", "/elsewhere/data.txt"]
    monkeypatch.chdir(ROOT / "docs")
    assert command(["x", str(ROOT / "configs" / "ga.yaml")], "experiments.run")[3] == "../configs/ga.yaml"


def test_a_script_is_named_by_its_path(monkeypatch):
    monkeypatch.chdir(ROOT)
    script = str(ROOT / "benchmarks" / "bench_standard.py")
    assert command([script, "games"], None) == ["python", "benchmarks/bench_standard.py", "games"]
    assert command(["benchmarks/bench_standard.py"], None) == ["python", "benchmarks/bench_standard.py"]


def test_the_provenance_of_this_process(monkeypatch):
    """Without arguments, `command` reads sys.argv and the __main__ module's import name."""
    monkeypatch.chdir(ROOT)
    main = types.ModuleType("__main__")
    main.__spec__ = types.SimpleNamespace(name="experiments.solve")
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.setattr(sys, "argv", [str(ROOT / "experiments" / "solve.py"), "configs/solve/beam.yaml", "--out",
                                      str(ROOT / "solves" / "x")])
    assert provenance()["command"] == ["python", "-m", "experiments.solve", "configs/solve/beam.yaml", "--out",
                                       "solves/x"]


def test_the_patterns_catch_machine_paths():
    assert MACHINE_PATH.match("/work/main/experiments/solve.py") and MACHINE_PATH.match("/home/u/x")
    assert not MACHINE_PATH.match("configs/solve/beam.yaml") and not MACHINE_PATH.match("1/4")
    assert MACHINE_PATH_IN_TEXT.search('  reference: /root/x.txt') and not MACHINE_PATH_IN_TEXT.search("a/work/b")


def test_results_are_found():
    assert any(p.name == "summary.json" for p in DATA_FILES)


@pytest.mark.parametrize("path", DATA_FILES, ids=lambda p: p.relative_to(RESULTS).as_posix())
def test_no_committed_result_names_a_machine_path(path):
    """Every string of a committed result (summary.json, provenance.json, a run's config.yaml, ...)
    names paths relative to the project, never an absolute path of the machine that made it."""
    text = path.read_text(encoding="utf-8")
    where = path.relative_to(ROOT)
    if path.suffix == ".json":
        found = [s for s in _strings(json.loads(text)) if MACHINE_PATH.match(s)]
    elif path.suffix == ".jsonl":
        found = [s for line in text.splitlines() if line.strip() for s in _strings(json.loads(line))
                 if MACHINE_PATH.match(s)]
    elif path.suffix in (".yaml", ".yml"):
        found = [s for s in _strings(yaml.safe_load(text)) if MACHINE_PATH.match(s)]
    else:
        found = [m.group(1) for m in MACHINE_PATH_IN_TEXT.finditer(text)]
    assert not found, f"{where}: absolute paths of a machine: {found[:3]}"
