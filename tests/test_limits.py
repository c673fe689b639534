"""Sizes are bounded by memory before anything is allocated (`engine.memory`): a beam width, a
segment's nodes or states, a profile DP's states, games, a tuner's population too large for the
memory there is are refused when the configuration is validated, in one line naming the key, the
estimate and that memory, with exit status 2 and nothing made; ``parallel.n_jobs`` is at most the
CPUs unless a dask cluster is named. The command-line tests run under an address-space limit
(``RLIMIT_AS``) in a subprocess."""

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import engine.memory as memory
from engine.config import ConfigError
from engine.parallel import ParallelConfig, cpu_count
from solver.files import load_solver_config

ROOT = Path(__file__).resolve().parents[1]
GIB = 2**30


@pytest.fixture
def eight_gib(monkeypatch):
    """A machine of 8 GiB, whatever this one has."""
    monkeypatch.setattr(memory, "available", lambda: (8 * GIB, "this machine has 8.0 GiB"))


@pytest.mark.parametrize("config, override, key, words", [
    ("solve/beam.yaml", "beam.width=1000000000", "beam.width", "1,000,000,000 nodes over 9,999 pieces"),
    ("solve/beam.yaml", "beam.width=1000000000000000000", "beam.width",  # 10**18: no OverflowError (past 2**63, the
     "1,000,000,000,000,000,000 nodes"),                              # schema refuses it: test_hardening_numbers)
    ("solve/segment.yaml", "segment.nodes=10000000000", "segment.nodes", "10,000,000,000 nodes in "),
    ("solve/segment.yaml", "segment.states=64", "segment.states", "64 states per key over 9,999 pieces"),
    ("solve/profile_dp.yaml", "profile_dp.states=67108864", "profile_dp.states", "67,108,864 states over 9,999 pieces"),
])
def test_a_size_beyond_memory_is_one_line_naming_the_key(monkeypatch, config, override, key, words):
    """On a machine of 2 GiB (64 states per key of 1 cell, segments of 64 pieces: about 4 GiB)."""
    monkeypatch.setattr(memory, "available", lambda: (2 * GIB, "this machine has 2.0 GiB"))
    extra = ["segment.key_cells=1", "segment.depth=64", "segment.first_depth=64"] if override == "segment.states=64" else []
    with pytest.raises(ConfigError) as e:
        load_solver_config(ROOT / "configs" / config, [override, *extra])
    message = str(e.value)
    assert "\n" not in message and message.startswith(f"{ROOT / 'configs' / config}: {key}: {words}")
    assert " of memory; this machine has 2.0 GiB" in message


def test_the_shipped_configurations_fit(eight_gib):
    """The everyday sizes stay well inside 8 GiB: the record's segment search (24 states) included."""
    for name in ("beam.yaml", "segment_full.yaml", "profile_dp.yaml", "beam_9041.yaml"):
        config = load_solver_config(ROOT / "configs" / "solve" / name)
        section = getattr(config, config.policy)
        assert 0 < sum(n.bytes for n in section.memory(config)) < 2 * GIB


def test_games_and_mcts_simulations_are_bounded(eight_gib):
    with pytest.raises(ConfigError, match=r": online\.games: 1,000,000,000,000 games need about .* of memory"):
        load_solver_config(ROOT / "configs" / "solve" / "play.yaml", ["online.games=1000000000000"])
    with pytest.raises(ConfigError, match=r": mcts\.simulations: 1,000,000 simulations a move need about"):
        load_solver_config(ROOT / "configs" / "solve" / "play.yaml", ["policy=mcts", "mcts.simulations=1000000"])


def test_a_population_beyond_memory_is_refused_before_the_run_directory(eight_gib, tmp_path, capsys):
    from experiments.run import main

    for override, key in (("ga.population=1000000000", "ga.population: 1,000,000,000 candidates a generation"),
                          ("ga.generations=1000000000", "ga.generations: 24 candidates a generation over "
                                                        "1,000,000,000 generations")):
        assert main(["configs/ga.yaml", override, f"runs_dir={tmp_path / 'runs'}", "--quiet"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"error: configs/ga.yaml: {key}"), err
        assert err[0].endswith("of memory; this machine has 8.0 GiB")
    assert not (tmp_path / "runs").exists()


def test_n_jobs_is_at_most_the_cpus_unless_a_cluster_is_named(tmp_path, capsys):
    from experiments.run import main

    cpus = cpu_count()
    ParallelConfig(n_jobs=cpus)
    ParallelConfig(backend="dask", scheduler="tcp://127.0.0.1:8786", n_jobs=100_000)  # a cluster's workers
    assert main(["configs/ga.yaml", "parallel.n_jobs=100000", f"runs_dir={tmp_path / 'runs'}", "--quiet"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: configs/ga.yaml: parallel.n_jobs: 100,000 workers, more than the {cpus} CPUs of this machine; "
        "name a dask cluster (backend: dask, scheduler: its address) to use more")
    with pytest.raises(ConfigError, match=rf": segment\.parallel\.n_jobs: {cpus + 1} workers, more than the"):
        load_solver_config(ROOT / "configs" / "solve" / "segment.yaml", [f"segment.parallel.n_jobs={cpus + 1}"])
    assert not (tmp_path / "runs").exists()


def test_the_estimate_follows_the_address_space_limit(monkeypatch):
    monkeypatch.setattr(memory, "address_space_limit", lambda: 3 * GIB)
    monkeypatch.setattr(memory, "mapped", lambda: GIB)
    have, where = memory.available()
    assert have == 2 * GIB and where == "this process may map 2.0 GiB more (RLIMIT_AS 3.0 GiB)"


# ------------------------------------------------------------------------------------------------
# The command lines, under an address-space limit


def run_limited(args, limit, cwd):
    """``python -m args`` with ``RLIMIT_AS`` set to ``limit`` bytes."""
    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run([sys.executable, "-m", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          preexec_fn=limited, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)


@pytest.mark.parametrize("args, key", [  # (the everyday loop runs one case of each command)
    pytest.param(["experiments.solve", ROOT / "configs/solve/beam.yaml", "beam.width=1000000000", "--out", "OUT"],
                 "beam.width", marks=pytest.mark.slow),
    (["experiments.solve", ROOT / "configs/solve/beam.yaml", "beam.width=20000", "--out", "OUT"], "beam.width"),
    pytest.param(["experiments.solve", ROOT / "configs/solve/segment.yaml", "segment.nodes=10000000000", "--out", "OUT"],
                 "segment.nodes", marks=pytest.mark.slow),
    (["experiments.run", ROOT / "configs/ga.yaml", "ga.population=1000000000", "runs_dir=OUT"], "ga.population"),
])
def test_under_rlimit_as_a_size_is_refused_in_one_line_and_nothing_is_made(tmp_path, args, key):
    """Under a 3 GiB address space: a billion nodes (3.5 TiB in one array, a traceback before), and
    a width of 20,000 over the whole sequence (about 3.6 GiB: it fits this machine, not the limit)."""
    args = [str(tmp_path / "OUT") if a == "OUT" else f"runs_dir={tmp_path / 'OUT'}" if a == "runs_dir=OUT" else a
            for a in args]
    done = run_limited(args, 3 * GIB, tmp_path)
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(err) == 1, done.stderr
    assert f": {key}: " in err[0] and " of memory; this process may map " in err[0] and "(RLIMIT_AS 3.0 GiB)" in err[0]
    assert "Traceback" not in done.stderr and not (tmp_path / "OUT").exists()
    assert [p.name for p in tmp_path.iterdir()] == []


def test_the_docs_quote_the_messages_as_given(monkeypatch):
    """docs/policies.md and docs/tuning.md quote a refusal each, on a machine of 23.5 GiB."""
    from optimizers.run import load_run_config

    monkeypatch.setattr(memory, "available", lambda: (int(23.5 * GIB), memory.room(int(23.5 * GIB), None, None, 0)[1]))
    monkeypatch.chdir(ROOT)  # (the messages name the files as given)
    docs = {name: " ".join((ROOT / "docs" / name).read_text().split()) for name in ("policies.md", "tuning.md")}
    for name, load, config, override in (
            ("policies.md", load_solver_config, "configs/solve/beam.yaml", "beam.width=1000000000"),
            ("tuning.md", load_run_config, "configs/ga.yaml", "ga.population=1000000000")):
        with pytest.raises(ConfigError) as e:
            load(config, [override])
        assert f"`{e.value}`" in docs[name]


def test_memory_that_runs_out_all_the_same_is_one_line(tmp_path, monkeypatch, capsys):
    """An estimate is made for the memory there is when the command starts: a MemoryError later (other
    processes took it) is one line too, and a tuning run stays resumable."""
    from experiments import run as run_cli
    from experiments import solve as solve_cli

    def short(*a, **k):
        raise MemoryError

    config = tmp_path / "g.yaml"
    config.write_text("policy: greedy\nevaluator: pierre_dellacherie\npieces: 6\n")
    monkeypatch.setattr(solve_cli, "solve", short)
    assert solve_cli.main([str(config), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    assert capsys.readouterr().err.strip() == (f"error: {config}: the search ran out of memory (its sizes passed the "
                                               "estimate, but the memory was not there); nothing written")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml"]
    monkeypatch.setattr(run_cli, "tune", short)
    assert run_cli.main(["configs/ga.yaml", f"runs_dir={tmp_path / 'runs'}", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {tmp_path / 'runs'}/ga-") and "out of memory" in err[0]
    assert "continue with  python -m experiments.run --resume " in err[0]
