"""Reading state never runs code: runs, candidates in play and solves keep their state as data
(`engine.statefile`); a crafted pickle or npz in any place a command reads state leaves a marker
unwritten and ends in one line with exit status 2; the pickles of older versions are refused with
the command that converts them (`experiments.convert`), and a converted run ends as one never
stopped.

The fixtures in ``tests/data/legacy/`` were written by the version before state files (toy runs
stopped at the first evaluation of their generation 2, and a segment search stopped at piece 50)."""

from __future__ import annotations

import csv
import io
import json
import os
import pickle
import shutil
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
import yaml

from engine.statefile import StateError, read_state, state_bytes, write_state
from experiments import convert
from experiments.run import main as run_main

import toy_fitness

LEGACY = Path(__file__).resolve().parent / "data" / "legacy"
RUNS = sorted(p.name for p in LEGACY.iterdir() if (p / "checkpoint.pkl").exists())
#: the fixtures converted and resumed in the everyday loop (`-m "not slow"`); the others in the suite
EVERYDAY = {"ga", "cmaes_noise"}


class Marker:
    """A pickle that, loaded by `pickle.loads`, writes ``path`` (what a crafted file would do)."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def crafted(marker: Path, compress: bool = False) -> bytes:
    data = pickle.dumps({"generation": 0, "version": 2, "optimizer": Marker(marker)})
    return zlib.compress(data) if compress else data


def crafted_npz(marker: Path) -> bytes:
    """A state file whose array member is numpy's pickled object array of `Marker`."""
    good = state_bytes({"generation": 0, "a": np.zeros(2)}, "a run's checkpoint")
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(good)) as zin, zipfile.ZipFile(buffer, "w") as zout:
        zout.writestr("state.json", zin.read("state.json"))
        member = io.BytesIO()
        np.save(member, np.array([Marker(marker)], dtype=object), allow_pickle=True)
        zout.writestr("arrays/0.npy", member.getvalue())
    return buffer.getvalue()


def rows(path: Path, drop=("seconds", "eval_seconds", "wall_seconds")):
    with open(path, newline="") as f:
        return [{k: v for k, v in r.items() if k not in drop} for r in csv.DictReader(f)]


def fixture_run(tmp_path, name) -> Path:
    run = tmp_path / name
    shutil.copytree(LEGACY / name, run)
    return run


# ------------------------------------------------------------------------------------------------
# the format


def test_a_state_file_holds_plain_values_and_arrays_and_numpy_reads_it(tmp_path):
    tree = {"n": 3, "x": [1.5, float("nan"), None, True], "t": (1, (2, "a")), "a": np.arange(6, dtype=np.int16).reshape(2, 3),
            "s": np.float64(0.25), "keys": {1: "one", (2, 3): "pair"}, "$odd": 1, "big": 2**100}
    path = tmp_path / "s.npz"
    write_state(path, tree, "a test", compress=True)
    back = read_state(path, "a test", 2**20)
    assert back["a"].dtype == np.int16 and np.array_equal(back["a"], tree["a"]) and back["a"].flags.writeable
    assert type(back["s"]) is np.float64 and back["t"] == (1, (2, "a")) and back["keys"] == tree["keys"]
    assert back["x"][0] == 1.5 and np.isnan(back["x"][1]) and back["x"][2:] == [None, True]
    assert back["$odd"] == 1 and back["big"] == 2**100
    with np.load(path) as npz:  # numpy opens it, no pickle allowed
        assert np.array_equal(npz["arrays/0"], tree["a"]) and json.loads(npz["state.json"])["kind"] == "a test"
    with pytest.raises(TypeError, match="a Marker cannot be saved as state"):
        write_state(path, {"x": Marker("x")}, "a test")
    with pytest.raises(StateError, match=r"s.npz: holds 'a test', not a run's checkpoint$"):
        read_state(path, "a run's checkpoint", 2**20)


def test_an_array_is_read_back_in_the_memory_order_it_was_saved_in(tmp_path):
    # numpy's products can differ in the last bit between the two orders of the same values: a
    # CMA-ES whose eigenvectors (Fortran-ordered, from LAPACK) came back C-ordered drew otherwise
    m = np.asfortranarray(np.linalg.eigh(np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 3.0]]))[1])
    write_state(tmp_path / "s.npz", {"f": m, "c": np.ascontiguousarray(m), "v": np.arange(3.0)}, "a test")
    back = read_state(tmp_path / "s.npz", "a test", 2**20)
    assert back["f"].flags.f_contiguous and not back["f"].flags.c_contiguous and np.array_equal(back["f"], m)
    assert back["c"].flags.c_contiguous and np.array_equal(back["c"], m)
    assert back["v"].flags.c_contiguous and back["v"].flags.writeable


def test_a_state_file_is_read_within_its_bounds(tmp_path):
    path = tmp_path / "s.npz"
    write_state(path, {"zeros": np.zeros(10**6)}, "a test", compress=True)  # 8 MB inflated, a few KB on disk
    assert path.stat().st_size < 100_000
    with pytest.raises(StateError, match=r"would inflate to 8,000,\d+ bytes, more than 1 MiB: refused before inflating$"):
        read_state(path, "a test", 2**20)
    with pytest.raises(StateError, match=r"more than 1,000 bytes: too large for a state file$"):
        read_state(path, "a test", 1000)
    # a member that inflates past the size it declares is cut there (memory stays within the bound),
    # and its checksum then fails
    data = bytearray(path.read_bytes())
    info = zipfile.ZipFile(path).getinfo("arrays/0.npy")
    lie = info.file_size // 100
    at = data.rfind(b"arrays/0.npy") - 46 + 24  # the central directory's uncompressed size of the member
    data[at:at + 4] = lie.to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(StateError, match=r"s.npz: damaged: Bad CRC-32 for file 'arrays/0.npy'$"):
        read_state(path, "a test", 2**30)


@pytest.mark.parametrize("kind", ["fifo", "device", "folder", "missing", "garbage", "truncated"])
def test_what_is_not_a_state_file_is_one_line(tmp_path, kind):
    path = tmp_path / "s.npz"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path = Path("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    elif kind == "garbage":
        path.write_bytes(b"\x80\x04not a zip")
    elif kind == "truncated":
        write_state(path, {"a": np.arange(1000)}, "a test")
        path.write_bytes(path.read_bytes()[:600])
    problem = {"fifo": "not a regular file (a FIFO)", "device": "not a regular file (a character device)",
               "folder": "cannot read: Is a directory", "missing": "file not found",
               "garbage": "not a state file (not a zip archive)", "truncated": "not a state file (not a zip archive)"}
    with pytest.raises(StateError) as e:
        read_state(path, "a test", 2**20)
    assert str(e.value).startswith(f"{path}: {problem[kind]}") and "\n" not in str(e.value)


def test_a_state_file_with_a_pickled_array_is_refused_unread(tmp_path):
    marker = tmp_path / "marker"
    path = tmp_path / "s.npz"
    path.write_bytes(crafted_npz(marker))
    with pytest.raises(StateError, match=r"arrays/0.npy: dtype object is not a plain number type$"):
        read_state(path, "a run's checkpoint", 2**20)
    assert not marker.exists()


# ------------------------------------------------------------------------------------------------
# every place a command reads state


@pytest.mark.parametrize("compress", [False, True])
def test_a_crafted_pickle_as_a_runs_checkpoint_runs_nothing(tmp_path, capsys, compress):
    run = fixture_run(tmp_path, "ga")
    marker = tmp_path / "marker"
    (run / "checkpoint.pkl").write_bytes(crafted(marker, compress))
    assert run_main(["--resume", str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {run / 'checkpoint.pkl'}: a state file pickled by an older version, which this version "
                   "does not read (unpickling can run code named in the file); convert it once with: "
                   f"python -m experiments.convert {run}"]
    assert not marker.exists()
    # the converter's restricted loader refuses it too, before it builds anything
    assert convert.main([str(run)]) == 2
    assert "it names posix.system, which no state of this program holds; not loaded" in capsys.readouterr().err
    assert not marker.exists() and (run / "checkpoint.pkl").exists()


def test_a_crafted_npz_as_a_runs_checkpoint_runs_nothing(tmp_path, capsys, monkeypatch):
    toy_fitness.install(monkeypatch)
    run = fixture_run(tmp_path, "ga")
    marker = tmp_path / "marker"
    (run / "checkpoint.pkl").unlink()
    (run / "checkpoint.npz").write_bytes(crafted_npz(marker))
    assert run_main(["--resume", str(run)]) == 2
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert err.startswith(f"error: {run / 'checkpoint.npz'}: not a readable state file: arrays/0.npy: dtype object")
    assert err.endswith("move it aside (mv checkpoint.npz checkpoint.npz.bad) and resume again: the run then starts "
                        "over from evaluations.csv, simulating none of the evaluations it holds")
    assert not marker.exists()


def test_a_crafted_pickle_in_play_runs_nothing(tmp_path, capsys):
    run = fixture_run(tmp_path, "ga")
    assert convert.main([str(run)]) == 0
    marker = tmp_path / "marker"
    (run / "in-play").mkdir()
    (run / "in-play" / "g2-0123456789abcdef.pkl").write_bytes(crafted(marker, compress=True))
    assert run_main(["--resume", str(run)]) == 2
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert err.startswith(f"error: {run / 'in-play' / 'g2-0123456789abcdef.pkl'}: a state file pickled by an older "
                          "version") and err.endswith(f"python -m experiments.convert {run}")
    assert not marker.exists()


def test_a_crafted_pickle_beside_a_solve_runs_nothing(tmp_path, capsys):
    from experiments.solve import main as solve_main

    shutil.copy(LEGACY / "segment" / "segment.yaml", tmp_path)
    marker = tmp_path / "marker"
    (tmp_path / "run.checkpoint.pkl").write_bytes(crafted(marker, compress=True))
    for extra in (["--resume", str(tmp_path / "run")], ["--out", str(tmp_path / "run")]):
        assert solve_main([str(tmp_path / "segment.yaml"), *extra, "--quiet"]) == 2
        (err,) = capsys.readouterr().err.strip().splitlines()
        assert err == (f"error: {tmp_path / 'run.checkpoint.pkl'}: a state file pickled by an older version, which this "
                       "version does not read (unpickling can run code named in the file); convert it once with: "
                       f"python -m experiments.convert {tmp_path / 'run.checkpoint.pkl'}")
    assert not marker.exists()


def test_the_python_api_refuses_a_pickled_checkpoint_too(tmp_path):
    from optimizers import resume
    from optimizers.store import RunDamaged

    run = fixture_run(tmp_path, "cem")
    marker = tmp_path / "marker"
    (run / "checkpoint.pkl").write_bytes(crafted(marker))
    with pytest.raises(RunDamaged, match="convert it once with: python -m experiments.convert"):
        resume(run)
    assert not marker.exists()


# ------------------------------------------------------------------------------------------------
# converting the state files of older versions


def test_every_tuner_has_a_legacy_fixture():
    from optimizers.tuners import TUNERS

    names = {yaml.safe_load((LEGACY / r / "run.yaml").read_text())["algorithm"] for r in RUNS}
    assert names == set(TUNERS)


@pytest.mark.parametrize("name", [n if n in EVERYDAY else pytest.param(n, marks=pytest.mark.slow) for n in RUNS])
def test_a_converted_run_ends_as_one_never_stopped(tmp_path, monkeypatch, capsys, name):
    from optimizers import run as tuning

    toy_fitness.install(monkeypatch, noise=300.0)  # as the fixtures were made
    run = fixture_run(tmp_path, name)
    assert convert.main([str(run)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"{run / 'checkpoint.pkl'} -> {run / 'checkpoint.npz'}"]
    assert not (run / "checkpoint.pkl").exists()
    resumed = tuning.resume(run)
    data = yaml.safe_load((LEGACY / name / "run.yaml").read_text())
    data["runs_dir"] = str(tmp_path / "whole")
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    whole = tuning.tune(tuning.load_run_config(tmp_path / "run.yaml"))
    assert rows(run / "evaluations.csv") == rows(whole.dir / "evaluations.csv")
    assert rows(run / "generations.csv") == rows(whole.dir / "generations.csv")
    assert resumed.state.best == whole.state.best


@pytest.mark.slow
def test_a_converted_segment_search_ends_as_one_never_stopped(tmp_path, capsys):
    from solver import solve
    from test_segment import small_config

    shutil.copy(LEGACY / "segment" / "run.checkpoint.pkl", tmp_path)
    assert convert.main([str(tmp_path / "run.checkpoint.pkl"), "--keep"]) == 0
    assert (tmp_path / "run.checkpoint.pkl").exists() and (tmp_path / "run.checkpoint.npz").exists()
    resumed = solve(small_config(), checkpoint=tmp_path / "run.checkpoint.npz", resume=True, record=False)
    whole = solve(small_config(), record=False)
    assert resumed.stop == "done" and resumed.score == whole.score
    assert np.array_equal(resumed.placements, whole.placements)
    assert resumed.report.sittings[0].next_index == 51  # the older version's sitting, carried over


def test_convert_says_what_it_cannot_convert(tmp_path, capsys):
    assert convert.main([str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"{tmp_path}: nothing to convert (no pickled state there)\n"
    (tmp_path / "x.txt").write_text("")
    assert convert.main([str(tmp_path / "x.txt")]) == 2
    assert capsys.readouterr().err == (f"error: {tmp_path / 'x.txt'}: not a run directory, a solve's folder or a "
                                       "pickled state file\n")
    (tmp_path / "checkpoint.pkl").write_bytes(pickle.dumps([1, 2]))
    assert convert.main([str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'checkpoint.pkl'}: not convertible: not a run's checkpoint\n"
