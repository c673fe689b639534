"""A synthetic fitness for tests of the run loop: no game is played, so no kernel is compiled.

`install(monkeypatch, ...)` puts `ToyFitness` in the place of `optimizers.fitness.evaluate` in the
run loop (parallel.n_jobs = 1 runs tasks in this process) and makes the warm-up a no-op. A
candidate's true value is a bowl over its evaluator weights, `TOP` - `CURVATURE` x the squared
distance to `TARGET`; each of its ``online.games`` games (seeds ``seed``, ``seed`` + 1, ...) adds a
Gaussian draw that depends on the seed and on the candidate (a game's length depends on the
pieces and on how the policy meets them), so the score is its true value plus noise whose
standard deviation shrinks as 1/sqrt(games). The curve climbs linearly to the score over `PIECES`
pieces and is held to the early abort's threshold as the solver would be.
"""

from __future__ import annotations

import csv
import hashlib

import numpy as np

from optimizers import run_loop
from optimizers.fitness import Evaluated, TuningRecord, aborted_record, first_abort
from optimizers.space import get_path

PIECES = 20
TOP = 10_000.0
CURVATURE = 100.0
TARGET = {"evaluator.features.holes": -3.0, "evaluator.features.landing_height": -6.0}

#: a run config of a policy for unknown pieces (seeded games) over the two weights of `TARGET`
RUN = {
    "name": "toy", "seed": 5, "algorithm": "random", "random": {"samples": 6, "generations": 4},
    "solver": {"policy": "one_ply", "rules": "course", "evaluator": "el_tetris", "seed": 100, "pieces": PIECES,
               "online": {"games": 1}},
    "space": [{"path": "evaluator.features.holes", "low": -10, "high": 0, "init": -8},
              {"path": "evaluator.features.landing_height", "low": -10, "high": 0, "init": -1}],
    "init_sigma": 0.3, "early_abort": {"enabled": False}, "games": {"seeds": "per_generation"},
    "parallel": {"n_jobs": 1, "threads": 1},
}


def true_value(weights) -> float:
    return TOP - CURVATURE * sum((w - t) ** 2 for w, t in zip(weights, TARGET.values()))


class ToyFitness:
    """`optimizers.fitness.evaluate`'s contract on the synthetic function; ``noise``: the standard
    deviation of one game's draw. ``calls`` keeps every task's (weights, seed, games)."""

    def __init__(self, noise: float = 0.0, value=true_value, shared: float = 0.0):
        self.noise = noise
        self.value = value
        self.shared = shared
        self.calls: list[tuple] = []

    def draw(self, weights, seed: int, games: int) -> float:
        """The games' noise: each game's own draw for this candidate, plus (``shared``) the game's
        draw common to every candidate (a hard game is hard for every policy)."""
        tag = int.from_bytes(hashlib.sha1(repr([float(w) for w in weights]).encode()).digest()[:8], "little")
        draws = [np.random.default_rng([seed + i, tag]).normal(0.0, self.noise) for i in range(games)]
        if self.shared:
            draws = [d + np.random.default_rng([seed + i]).normal(0.0, self.shared) for i, d in enumerate(draws)]
        return float(np.mean(draws))

    def __call__(self, task: dict) -> Evaluated:
        config = task.config
        weights = [float(get_path(config, path)) for path in TARGET]
        seed, games = int(config["seed"]), int(config["online"]["games"])
        self.calls.append((tuple(weights), seed, games))
        score = int(round(self.value(weights) + self.draw(weights, seed, games)))
        curve = [int(round(score * (t + 1) / PIECES)) for t in range(PIECES)]
        threshold = task.threshold
        piece = first_abort(curve, threshold)
        if piece is not None:
            record = aborted_record(curve, piece, float(threshold[piece - 1]), task.aborted_fitness)
        else:
            record = TuningRecord(fitness=float(score), score=score, pieces=PIECES, stop="capped", aborted=False,
                                  abort_piece=None, threshold=None, seconds=0.0)
        return Evaluated(record, curve)


def install(monkeypatch, noise: float = 0.0, value=true_value, shared: float = 0.0) -> ToyFitness:
    """Evaluate the run loop's candidates with a `ToyFitness` (returned)."""
    toy = ToyFitness(noise, value, shared)
    monkeypatch.setattr(run_loop, "evaluate", toy)
    monkeypatch.setattr(run_loop.RunLoop, "warm_up", lambda self, pool: None)
    return toy


# ------------------------------------------------------------------------------------------------
# runs of `RUN` with changes: written, stopped part way, read back


def run_config(tmp_path, **changes):
    """The run config of `RUN` with ``changes`` (its runs under ``tmp_path/runs``), as its file reads."""
    import yaml

    from optimizers import run as tuning

    data = {**RUN, **changes, "runs_dir": str(tmp_path / "runs")}
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return tuning.load_run_config(path)


def rows(run_dir, name="evaluations.csv") -> list[dict]:
    """A run's CSV file as rows of text."""
    with open(run_dir / name, newline="") as f:
        return list(csv.DictReader(f))


def without_seconds(table: list[dict]) -> list[dict]:
    """Rows without their seconds (the one field two runs of the same config differ in)."""
    return [{k: v for k, v in r.items() if k != "seconds"} for r in table]


class Stop(Exception):
    """What `stopped_run` raises to stop a run part way."""


def stopped_run(tmp_path, generation: int, after: int, **changes):
    """The run directory of `run_config` (``tmp_path``, ``changes``) stopped by an exception once
    ``after`` evaluations of ``generation`` are written down, as a kill would leave it."""
    import pytest

    from optimizers import run as tuning

    seen = []

    def stop(row):
        seen.append(row)
        if row["generation"] == generation and sum(r["generation"] == generation for r in seen) == after:
            raise Stop()

    with pytest.raises(Stop):
        tuning.tune(run_config(tmp_path, **changes), on_evaluation=stop)
    (cut,) = list((tmp_path / "runs").iterdir())
    return cut
