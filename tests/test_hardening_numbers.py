"""Every number is checked before use (issue 61): an infinity, NaN, a float beyond the largest
(``1e400``, read as an infinity), an integer beyond 64 bits or of more digits than Python reads from
text (5,001), given as an override or in a YAML file of a tuning run, a solve or an evaluator, is
one line naming the file and the key, exit status 2, nothing made; a summary.json of the wrong
shape is one line naming the file and the field, for every command that reads one. And the memory
estimate compares with the least of the machine's available memory, a cgroup's room and what
``RLIMIT_AS`` leaves, saying which."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import engine.memory as memory
from engine.files import LongInteger, ReadError, parse_yaml, read_json

from test_tools_hardening import fake_run  # noqa: F401  (the fixture of a run with no generation yet)

ROOT = Path(__file__).resolve().parents[1]
GIB = 2**30
LONG = "1" * 5001  # more digits than int() reads from text (sys.get_int_max_str_digits: 4,300)
TOO_LONG = "an integer of 5,001 digits is outside the 64-bit integer range (-2**63 to 2**63 - 1)"
NOT_FINITE = "Input should be a finite number"

#: (value as YAML spells it, the problem a float or int key gets)
NUMBERS = [(".inf", NOT_FINITE), ("-.inf", NOT_FINITE), (".nan", NOT_FINITE), ("1e400", NOT_FINITE),
           (LONG, TOO_LONG)]
NUMBER_IDS = ["inf", "-inf", "nan", "1e400", "5001-digits"]


def one_line(capsys, status: int) -> str:
    """The one line a command that refused its input wrote (exit status 2, nothing else, no
    traceback)."""
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert status == 2, captured.err
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    assert lines[0].startswith("error: "), lines
    return lines[0]


def yaml_with(data: dict, key: str, text: str) -> str:
    """``data`` as YAML with the dotted ``key`` (made if missing; list entries by index) spelt
    ``text`` as it stands."""
    data = json.loads(json.dumps(data))
    node, parts = data, key.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    node[int(parts[-1]) if isinstance(node, list) else parts[-1]] = "@@VALUE@@"
    return yaml.safe_dump(data, sort_keys=False).replace("'@@VALUE@@'", text)


# ------------------------------------------------------------------------------------------------
# The loaders: a number of too many digits is refused naming its key, not kept as text


def test_yaml_and_json_refuse_an_integer_of_too_many_digits_naming_its_key(tmp_path):
    with pytest.raises(LongInteger) as e:
        parse_yaml(f"a:\n  - 1\n  - {{b: -{LONG}}}\n", "x.yaml")
    assert str(e.value) == f"x.yaml: a.1.b: {TOO_LONG}" and e.value.key == "a.1.b"
    with pytest.raises(LongInteger) as e:  # an alias names the key it is first given under
        parse_yaml(f"a: &x {{b: {LONG}}}\nc: *x\n", "x.yaml")
    assert e.value.key == "a.b"
    with pytest.raises(LongInteger) as e:
        parse_yaml(LONG, "x.yaml")
    assert str(e.value) == f"x.yaml: {TOO_LONG}" and e.value.key == ""
    assert parse_yaml("a: 0x" + "f" * 5000)["a"].bit_length() == 20_000  # (hexadecimal: read at once)
    path = tmp_path / "s.json"
    path.write_text(f'{{"score": {LONG}}}')
    with pytest.raises(ReadError) as e:
        read_json(path)
    assert str(e.value) == f"{path}: {TOO_LONG}"


def test_an_integer_is_shown_by_its_digits_when_too_long_to_quote():
    from engine.validation import digits, first_number_problem, show

    assert show(10**5000) == "an integer of 5,001 digits" and show(-(10**40)) == "an integer of 41 digits"
    assert [digits(n) for n in (0, 9, 10, 10**18 - 1, 10**18, 10**300 - 1, 10**300, 10**4400 - 1)] == \
        [1, 1, 2, 18, 19, 300, 301, 4400]
    assert first_number_problem({"a": [1, {"b": 2**63 - 1}], "c": -(2**63)}) is None
    assert first_number_problem({"a": [1, {"b": 2**63}]}) == (
        "a.1.b", "9223372036854775808 is outside the 64-bit integer range (-2**63 to 2**63 - 1)")
    assert first_number_problem({"n": True, "x": float("inf"), "s": "1" * 50}) is None  # (floats: by their fields)


# ------------------------------------------------------------------------------------------------
# A tuning run's configuration: overrides and YAML values


RUN_KEYS = ["space.0.high", "space.3.low", "seed", "ga.cxpb", "ga.population", "early_abort.margin",
            "init_sigma", "solver.beam.width"]


@pytest.mark.parametrize("text, problem", NUMBERS, ids=NUMBER_IDS)
@pytest.mark.parametrize("key", RUN_KEYS)
def test_a_run_override_of_a_number_no_setting_takes_is_one_line(tmp_path, capsys, key, text, problem):
    from experiments.run import main

    status = main(["configs/ga.yaml", f"{key}={text}", f"runs_dir={tmp_path / 'runs'}", "--quiet"])
    err = one_line(capsys, status)
    origin = "command line" if problem == TOO_LONG else "configs/ga.yaml"
    assert err.startswith(f"error: {origin}: {key}: {problem}"), err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("text, problem", NUMBERS, ids=NUMBER_IDS)
@pytest.mark.parametrize("key", RUN_KEYS)
def test_a_run_yaml_value_no_setting_takes_is_one_line(tmp_path, capsys, key, text, problem):
    from experiments.run import main

    data = {**yaml.safe_load((ROOT / "configs" / "ga.yaml").read_text()), "runs_dir": str(tmp_path / "runs")}
    path = tmp_path / "run.yaml"
    path.write_text(yaml_with(data, key, text))
    err = one_line(capsys, main([str(path), "--quiet"]))
    assert err.startswith(f"error: {path}: {key}: {problem}"), err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("override, message", [
    ("seed=9223372036854775808", "seed: 9223372036854775808 is outside the 64-bit integer range"),
    ("ga.population=-9223372036854775809", "ga.population: -9223372036854775809 is outside the 64-bit"),
    ("meta={note: [1, 100000000000000000000]}", "meta.note.1: 100000000000000000000 is outside the 64-bit"),
    ("space.0.high=1e30", "space.0.high: 1e+30 is outside the 64-bit integer range"),  # an int parameter's bound
    ("space.3={path: beam.score_share, low: -1e308, high: 1e308}",
     "space.3.high: the range from -1e+308 to 1e+308 is wider than a float holds"),
])
def test_a_run_number_beyond_what_the_tuners_compute_with_is_one_line(tmp_path, capsys, override, message):
    from experiments.run import main

    status = main(["configs/ga.yaml", override, f"runs_dir={tmp_path / 'runs'}", "--quiet"])
    assert one_line(capsys, status).startswith(f"error: configs/ga.yaml: {message}")
    assert not (tmp_path / "runs").exists()


# ------------------------------------------------------------------------------------------------
# A solve's configuration and an evaluator's weights


SOLVE_KEYS = ["beam.width", "beam.score_share", "beam.ancestor_quotas_score.1", "seed", "pieces",
              "profile_dp.cells_weight", "segment.nodes", "online.games"]


@pytest.mark.parametrize("text, problem", NUMBERS, ids=NUMBER_IDS)
@pytest.mark.parametrize("key", SOLVE_KEYS)
def test_a_solve_override_of_a_number_no_setting_takes_is_one_line(tmp_path, capsys, key, text, problem):
    from experiments.solve import main

    err = one_line(capsys, main(["configs/solve/beam.yaml", f"{key}={text}", "--out", str(tmp_path / "out"), "--quiet"]))
    origin = "command line" if problem == TOO_LONG else "configs/solve/beam.yaml"
    assert err.startswith(f"error: {origin}: {key}: {problem}"), err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("text, problem", NUMBERS, ids=NUMBER_IDS)
@pytest.mark.parametrize("key", SOLVE_KEYS)
def test_a_solve_yaml_value_no_setting_takes_is_one_line(tmp_path, capsys, key, text, problem):
    from experiments.solve import main

    path = tmp_path / "solver.yaml"
    path.write_text(yaml_with(yaml.safe_load((ROOT / "configs" / "solve" / "beam.yaml").read_text()), key, text))
    err = one_line(capsys, main([str(path), "--out", str(tmp_path / "out"), "--quiet"]))
    assert err.startswith(f"error: {path}: {key}: {problem}"), err
    assert not (tmp_path / "out").exists()


#: what is said of each number as an evaluator's weight: by the evaluator's check (a weight is a
#: float: an integer past 1.8e308 is no more finite than .inf), and inline in a solver configuration,
#: where an integer beyond 64 bits is refused before the evaluator is read (an integer too long to
#: read is refused by the loader, in a file or an override)
WEIGHTS = [(".inf", "weight must be a finite number, got inf", None),
           ("-.inf", "weight must be a finite number, got -inf", None),
           (".nan", "weight must be a finite number, got nan", None),
           ("1e400", "weight must be a finite number, got inf", None),
           ("1" * 400, "weight must be a finite number, got an integer of 400 digits",
            "an integer of 400 digits is outside the 64-bit integer range"),
           (LONG, TOO_LONG, None)]
WEIGHT_IDS = ["inf", "-inf", "nan", "1e400", "400-digits", "5001-digits"]


@pytest.mark.parametrize("text, problem, inline", WEIGHTS, ids=WEIGHT_IDS)
def test_an_evaluator_weight_no_kernel_takes_is_one_line(tmp_path, capsys, text, problem, inline):
    """In an evaluator's YAML file, inline in a solve's override, and in a tuning run's override."""
    from experiments import run, solve

    evaluator = tmp_path / "ev.yaml"
    evaluator.write_text(f"features:\n  holes: {text}\n  landing_height: -1\n")
    err = one_line(capsys, solve.main(["configs/solve/beam.yaml", f"evaluator={evaluator}", "--out",
                                       str(tmp_path / "out"), "--quiet"]))
    assert err.startswith("error: ") and f"{evaluator}: features.holes: {problem}" in err, err
    err = one_line(capsys, solve.main(["configs/solve/beam.yaml", f"evaluator={{features: {{holes: {text}}}}}",
                                       "--out", str(tmp_path / "out"), "--quiet"]))
    assert f"features.holes: {inline or problem}" in err, err
    status = run.main(["configs/ga.yaml", f"solver.evaluator={evaluator}", f"runs_dir={tmp_path / 'runs'}", "--quiet"])
    assert f"features.holes: {problem}" in one_line(capsys, status)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ev.yaml"]


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (["experiments.run", "configs/ga.yaml", "space.0.high=.inf"], f"configs/ga.yaml: space.0.high: {NOT_FINITE}"),
    (["experiments.run", "configs/ga.yaml", f"seed={LONG}"], f"command line: seed: {TOO_LONG}"),
    (["experiments.solve", "configs/solve/beam.yaml", "beam.width=1e400"], f"configs/solve/beam.yaml: beam.width: {NOT_FINITE}"),
], ids=["run-inf", "run-5001-digits", "solve-1e400"])
def test_the_commands_of_the_finding_are_one_line(tmp_path, args, message):
    """The finding's own command lines, as typed (in a folder of their own: nothing is made)."""
    extra = ["runs_dir=OUT"] if args[0] == "experiments.run" else ["--out", "OUT"]
    done = subprocess.run([sys.executable, "-m", *args, *extra, "--quiet"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2 and done.stderr == f"error: {message}\n", done.stderr
    assert not (ROOT / "OUT").exists()


# ------------------------------------------------------------------------------------------------
# summary.json, read by the schema that wrote it


SOLVED = ROOT / "results" / "greedy-lecture_v1"  # 33 pieces: replayed at once


def _without(data: dict, key: str) -> dict:
    data = json.loads(json.dumps(data))
    *parents, last = key.split(".")
    node = data
    for part in parents:
        node = node[part]
    del node[last]
    return data


def _with(data: dict, key: str, value) -> dict:
    data = json.loads(json.dumps(data))
    *parents, last = key.split(".")
    node = data
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    node[int(last) if isinstance(node, list) else last] = value
    return data


NAN = float("nan")
#: (change, the field named, the problem)
DAMAGE = [
    (("score", "1000"), "score", "Input should be a valid integer"),  # a string for a number
    (("score", NAN), "score", "Input should be a valid integer"),
    (("score", 12.0), "score", "Input should be a valid integer"),
    (("score", True), "score", "Input should be a valid integer"),
    (("pieces", [33]), "pieces", "Input should be a valid integer"),
    (("seconds", NAN), "seconds", NOT_FINITE),
    (("seconds", "0.1"), "seconds", "Input should be a valid number"),
    (("abort_threshold", float("inf")), "abort_threshold", NOT_FINITE),
    (("stop", ["done"]), "stop", "Input should be a valid string"),  # a list for a string
    (("end", 3), "end", "Input should be a valid string"),
    (("clears", {"1": 1}), "clears", "expected the keys 1, 2, 3, 4"),
    (("clears.2", "1"), "clears.2", "Input should be a valid integer"),
    (("best_by_step.3", "x"), "best_by_step.3", "Input should be a valid integer"),
    (("config", [1]), "config", "expected a mapping (the solver configuration), got a list"),
    (("config.rules", ["geek"]), "config.rules", "Input should be 'geek'"),
    (("config.seed", "7"), "config.seed", "Input should be a valid integer"),
    (("config.seed", 2**64), "config.seed", "18446744073709551616 is outside the 64-bit integer range"),
    (("config.pieces", NAN), "config.pieces", "Input should be a valid integer"),
    (("config.greedy", []), "config.greedy", "Input should be an object"),
    (("provenance", "x"), "provenance", "Input should be a valid dictionary"),
    (("nodes", -1), "nodes", "Input should be greater than or equal to 0"),
    ((None, "score"), "score", "missing key"),
    ((None, "config"), "config", "missing key"),
    ((None, "config.greedy"), "config.greedy", "missing key (the played policy's section)"),
    ((None, "clears"), "clears", "missing key"),
]
DAMAGE_IDS = [f"{key}={value!r}"[:40] if key else f"no-{value}" for (key, value), _, _ in DAMAGE]


def damaged(change) -> dict:
    data = json.loads((SOLVED / "summary.json").read_text())
    key, value = change
    return _without(data, value) if key is None else _with(data, key, value)


@pytest.mark.parametrize("change, field, problem", DAMAGE, ids=DAMAGE_IDS)
def test_view_on_a_summary_of_the_wrong_shape_is_one_line_naming_the_field(tmp_path, capsys, change, field, problem):
    from experiments import view

    (tmp_path / "record.txt").write_bytes((SOLVED / "record.txt").read_bytes())
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(damaged(change)))
    err = one_line(capsys, view.main([str(path), "--out", str(tmp_path / "r.html")]))
    assert err.startswith(f"error: {path}: {field}: {problem}"), err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("change, field, problem", DAMAGE, ids=DAMAGE_IDS)
def test_the_results_table_on_a_summary_of_the_wrong_shape_is_one_line(tmp_path, monkeypatch, capsys, change, field,
                                                                       problem):
    from experiments import results

    path = tmp_path / "results" / "beam-w100" / "summary.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(damaged(change)))
    monkeypatch.setattr(results, "ROOT", tmp_path)
    err = one_line(capsys, results.main(["--table"]))
    assert err.startswith(f"error: {path}: {field}: {problem}"), err


@pytest.mark.parametrize("key, value, field", [
    ("beam.width", "100", "config.beam.width"),
    ("beam.score_share", NAN, "config.beam.score_share"),
    ("beam.ancestor_quotas_score", "0.3", "config.beam.ancestor_quotas_score"),
    ("beam.placements", 1, "config.beam.placements"),
])
def test_the_played_policy_section_is_read_by_its_schema(tmp_path, monkeypatch, capsys, key, value, field):
    """The beam's table row reads its section: a wrong type there is named too (not a ValueError of
    a format string)."""
    from experiments import results

    data = json.loads((ROOT / "results" / "beam-w100" / "summary.json").read_text())
    path = tmp_path / "results" / "beam-w100" / "summary.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(_with(data, f"config.{key}", value)))
    monkeypatch.setattr(results, "ROOT", tmp_path)
    assert one_line(capsys, results.main(["--table"])).startswith(f"error: {path}: {field}: ")


def test_every_committed_summary_reads_back(tmp_path, monkeypatch):
    """results/ (written over many versions, by machines of other sizes) reads back; a summary from a
    machine with more CPUs or memory than this one too (its checks of the machine are left out)."""
    from engine import parallel
    from solver.result import SolveSummary, read_summary

    paths = [p for p in sorted((ROOT / "results").glob("*/summary.json")) if "config" in json.loads(p.read_text())]
    assert len(paths) >= 30
    for path in paths:
        assert isinstance(read_summary(path), SolveSummary)
    monkeypatch.setattr(parallel, "cpu_count", lambda: 1)
    monkeypatch.setattr(memory, "available", lambda: (2**20, "this machine has 1.0 MiB available"))
    data = json.loads((ROOT / "results" / "segment-full" / "summary.json").read_text())
    (tmp_path / "summary.json").write_text(json.dumps(_with(data, "config.segment.parallel.n_jobs", 64)))
    summary = read_summary(tmp_path / "summary.json")
    assert summary.config.section("segment").parallel.n_jobs == 64 and summary.search_seconds == 4725.121
    assert read_summary(ROOT / "results" / "beam-full" / "summary.json").config.section("beam").width == 9041


@pytest.mark.slow
def test_a_solve_writes_the_summary_it_reads(tmp_path, capsys):
    """A solve's summary.json is validated by the schema it is read by before it is written."""
    from experiments import solve
    from solver.result import read_summary

    config = tmp_path / "g.yaml"
    config.write_text("policy: greedy\nevaluator: pierre_dellacherie\npieces: 6\n")
    assert solve.main([str(config), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    summary = read_summary(tmp_path / "out" / "summary.json")
    assert summary.pieces == 6 and summary.config.pieces == 6 and len(summary.score_by_step) == 6


@pytest.mark.parametrize("name, text, message", [
    ("seed", LONG, f"seed: {TOO_LONG}"),
    ("init_sigma", ".nan", f"init_sigma: {NOT_FINITE}"),
    ("early_abort", "{margin: -.inf}", f"early_abort.margin: {NOT_FINITE}"),
], ids=["seed-5001-digits", "init_sigma-nan", "margin-inf"])
def test_report_on_a_run_whose_config_holds_a_number_no_setting_takes_is_one_line(fake_run, capsys, name, text,
                                                                                  message):
    """experiments.report reads a run's config.yaml (no summary.json) by the run's schema."""
    from experiments import report

    run = fake_run
    data = yaml.safe_load((run / "config.yaml").read_text())
    (run / "config.yaml").write_text(yaml_with(data, name, text))
    err = one_line(capsys, report.main([str(run)]))
    assert f"{run / 'config.yaml'}: {message}" in err, err
    assert not (run / "figures").exists()


# ------------------------------------------------------------------------------------------------
# Memory: the least of the machine's, the cgroup's and the address space's room


def test_the_room_is_the_least_of_the_figures_and_names_its_limit():
    room = memory.room
    assert room(8 * GIB, None, None, 0) == (8 * GIB, "this machine has 8.0 GiB available")
    assert room(8 * GIB, (4 * GIB, 3 * GIB), None, 0) == (
        GIB, "this process's cgroup may use 1.0 GiB more (its limit 4.0 GiB, 3.0 GiB in use)")
    assert room(8 * GIB, (4 * GIB, 3 * GIB), 3 * GIB, int(2.5 * GIB)) == (
        GIB // 2, "this process may map 512.0 MiB more (RLIMIT_AS 3.0 GiB)")
    assert room(GIB // 4, (4 * GIB, 3 * GIB), 3 * GIB, 2 * GIB) == (GIB // 4, "this machine has 256.0 MiB available")
    assert room(8 * GIB, (4 * GIB, 5 * GIB), 3 * GIB, 4 * GIB)[0] == 0  # (over its limits: no room, not less)
    assert room(None, None, None, 0) == (memory.UNLIMITED, "no limit is known")


def _cgroup(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_the_cgroup_room_is_the_limit_less_what_is_in_use_without_inactive_file_cache(tmp_path, monkeypatch):
    """v2 (memory.max, memory.current), v1 (memory.limit_in_bytes, memory.usage_in_bytes), each less
    the inactive file cache of memory.stat; the tightest of the cgroup and its ancestors."""
    outer = _cgroup(tmp_path / "v2", {"memory.max": f"{6 * GIB}\n", "memory.current": f"{5 * GIB}\n",
                                      "memory.stat": f"anon 1\ninactive_file {GIB}\n"})
    inner = _cgroup(outer / "job", {"memory.max": "max\n", "memory.current": "100\n"})
    v1 = _cgroup(tmp_path / "v1", {"memory.limit_in_bytes": f"{3 * GIB}\n", "memory.usage_in_bytes": f"{2 * GIB}\n",
                                   "memory.stat": f"inactive_file 7\ntotal_inactive_file {GIB // 2}\n"})
    unlimited = _cgroup(tmp_path / "none", {"memory.limit_in_bytes": "9223372036854771712\n",
                                            "memory.usage_in_bytes": "5\n"})
    monkeypatch.setattr(memory, "_cgroup_dirs", lambda: [("v2", inner), ("v2", outer), ("v1", unlimited)])
    assert memory.cgroup_room() == (6 * GIB, 4 * GIB)  # 2 GiB left
    monkeypatch.setattr(memory, "_cgroup_dirs", lambda: [("v2", inner), ("v2", outer), ("v1", v1)])
    assert memory.cgroup_room() == (3 * GIB, int(1.5 * GIB))  # 1.5 GiB left: v1's is the tighter
    monkeypatch.setattr(memory, "_cgroup_dirs", lambda: [("v2", inner), ("v1", unlimited), ("v2", tmp_path / "gone")])
    assert memory.cgroup_room() is None
    monkeypatch.setattr(memory, "machine_available", lambda: 8 * GIB)
    monkeypatch.setattr(memory, "address_space_limit", lambda: None)
    monkeypatch.setattr(memory, "_cgroup_dirs", lambda: [("v2", outer)])
    assert memory.available() == (2 * GIB, "this process's cgroup may use 2.0 GiB more (its limit 6.0 GiB, "
                                           "4.0 GiB in use)")


def test_the_figures_of_this_machine_are_read():
    """MemAvailable, VmSize: numbers a live process has (their values depend on the machine)."""
    assert 0 < memory.machine_available() <= (memory.physical() or memory.UNLIMITED)
    assert memory.mapped() > 2**20
    assert all(v in ("v1", "v2") for v, _ in memory._cgroup_dirs())


@pytest.mark.slow
def test_a_wide_beam_under_rlimit_as_is_refused_by_the_estimate_before_any_kernel_is_compiled(tmp_path):
    """Under a 3 GiB address space, ``beam.width=100000`` (about 18 GiB) is refused in one line
    naming RLIMIT_AS, exit status 2, before any kernel is compiled: the numba cache given to the
    command (empty) holds no kernel afterwards, and the command does not wait for a compile."""
    cache = tmp_path / "numba"
    cache.mkdir()

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (3 * GIB, 3 * GIB))

    done = subprocess.run([sys.executable, "-m", "experiments.solve", str(ROOT / "configs" / "solve" / "beam.yaml"),
                           "beam.width=100000", "--out", str(tmp_path / "out")], cwd=tmp_path, capture_output=True,
                          text=True, preexec_fn=limited, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(cache)})
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(err) == 1 and "Traceback" not in done.stderr, done.stderr
    assert err[0].startswith(f"error: {ROOT / 'configs' / 'solve' / 'beam.yaml'}: beam.width: 100,000 nodes over 9,999 "
                             "pieces need about 18.4 GiB of memory; this process may map ")
    assert err[0].endswith(" more (RLIMIT_AS 3.0 GiB)")
    assert not (tmp_path / "out").exists()
    assert [p for p in cache.rglob("*") if p.suffix in (".nbi", ".nbc")] == []
