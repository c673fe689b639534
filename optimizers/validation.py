"""Validated picks (issue 58): a run ends by playing its pick and its start on held-out instances
no candidate saw, and states the paired difference with its interval.

    held <- validation.instances instances from validation.seed on (`instances.held_out`)
    for each instance i of held: play the pick and the start on i (the pool, one batch)
    d_i <- pick_i - start_i
    report mean(d) and its Student-t interval at validation.confidence, n = |held|

Each result is written to ``validation.csv`` as it arrives and read back on resume, so a stopped
validation goes on where it was. The outcome (`Validated`) is kept in the checkpoint, in best.yaml's
``meta.validation`` and in the command's last lines (`Validated.sentence`).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field, field_validator

from engine.parallel import Pool

from ._settings import Strict, flat_settings
from .fitness import Evaluated, TuningRecord, canonical
from .instances import InstanceSet, held_out
from .space import with_settings
from .records import RECORD_COLUMNS
from .store import RunStore

log = logging.getLogger("optimizers.run")
#: the two players of a validation, in the order each instance plays them
PLAYERS = ("pick", "start")
VALIDATION_FILE = "validation.csv"


class ValidationConfig(Strict):
    """``validation``: the run's pick and its start played on held-out instances no candidate saw."""

    instances: int = Field(20, ge=2, description="held-out instances (each the solver's online.games games, or a tie seed)")
    seed: int = Field(1000, ge=0, description="the first held-out instance: instance i plays from seed + i x games (or "
                                              "tie seed seed + i on the known sequence); refused when it meets a seed "
                                              "the candidates are chosen on")
    confidence: float = Field(0.95, gt=0.5, lt=1, description="the confidence of the paired difference's interval")
    overrides: dict[str, Any] = Field(
        default_factory=dict, description="dotted solver settings the validation plays with (as rescore.overrides), "
                                          "e.g. `{online.estimate: played}` for played games instead of estimates")

    @field_validator("overrides")
    @classmethod
    def _one_setting_each(cls, value: dict[str, Any]) -> dict[str, Any]:
        return flat_settings(value)


def paired_interval(pick, start, confidence: float) -> tuple[float, float, float]:
    """(mean, low, high) of the differences ``pick - start``: the mean and its two-sided Student-t
    interval at ``confidence`` (a point when the differences do not vary)."""
    from scipy.stats import t as student

    d = np.asarray(pick, dtype=np.float64) - np.asarray(start, dtype=np.float64)
    n, mean = len(d), float(d.mean())
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    if sd == 0.0:
        return mean, mean, mean
    half = float(student.ppf(0.5 + confidence / 2.0, n - 1)) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


@dataclass
class Validated:
    """A validation's outcome: the held-out set, each instance's fitness of the pick and the start,
    their means and the paired difference with its interval."""

    instances: int
    seed: int
    games: int
    confidence: float
    pick: list
    start: list
    pick_mean: float
    start_mean: float
    difference: float
    low: float
    high: float

    @classmethod
    def of(cls, held: InstanceSet, confidence: float, pick: list, start: list) -> "Validated":
        d, low, high = paired_interval(pick, start, confidence)
        return cls(instances=held.count, seed=held.first, games=held.step, confidence=confidence,
                   pick=[float(v) for v in pick], start=[float(v) for v in start], pick_mean=float(np.mean(pick)),
                   start_mean=float(np.mean(start)), difference=d, low=low, high=high)

    @property
    def verdict(self) -> str:
        if self.low > 0:
            return "better than the start"
        if self.high < 0:
            return "worse than the start"
        return "not told apart from the start"

    def sentence(self) -> str:
        """The command's last line about it, in plain words."""
        share = f" ({self.difference / abs(self.start_mean):+.1%})" if self.start_mean else ""
        return (f"validated on {self.instances} held-out instances (seeds {self.seed} on, none seen in tuning): pick "
                f"{self.pick_mean:,.1f}, start {self.start_mean:,.1f}, difference {self.difference:+,.1f}{share}, "
                f"{self.confidence:.0%} interval {self.low:+,.1f} to {self.high:+,.1f}: {self.verdict}")

    def meta(self) -> dict:
        """best.yaml's ``meta.validation``."""
        return {"instances": self.instances, "seed": self.seed, "step": self.games, "pick": self.pick_mean,
                "start": self.start_mean, "difference": self.difference, "confidence": self.confidence,
                "interval": [self.low, self.high], "verdict": self.verdict}


@dataclass(frozen=True)
class Played:
    """A row of validation.csv: ``player`` (`PLAYERS`) on held-out ``instance``, its config's key
    and record."""

    instance: int
    player: str
    key: str
    record: TuningRecord


class Validation:
    """The run loop's validation (`optimizers.run_loop.RunLoop` is one)."""

    COLUMNS = ["instance", "player", "key", *RECORD_COLUMNS]

    def run_validation(self, pool: Pool) -> None:
        """Play the pick and the start on every held-out instance (those validation.csv holds for the
        same configs read back), then keep and say the outcome."""
        v = self.config.validation
        held = held_out(self.config, self.space.base)
        configs = {"pick": self.pick_config(), "start": self.space.config(self.space.init_values)}
        wanted = {}  # (instance, player) -> (key, config)
        for i in range(held.count):
            for player in PLAYERS:
                data = with_settings(with_settings(configs[player], v.overrides), held.settings(i))
                wanted[(i, player)] = canonical(data)
        got = {(r.instance, r.player): r for r in self._read_validation() if wanted.get((r.instance, r.player),
                                                                                      (None,))[0] == r.key}
        todo = [slot for slot in wanted if slot not in got]
        tasks = [self._task(wanted[slot][1], None, pool) for slot in todo]
        from tqdm import tqdm

        with tqdm(total=len(wanted), initial=len(wanted) - len(todo), desc="validation", unit="eval", leave=False,
                  disable=self.quiet or None) as bar:  # (None: none when not a terminal)
            def done(t: int, result: Evaluated) -> None:
                i, player = todo[t]
                row = Played(i, player, wanted[todo[t]][0], result.record)
                self.store._append(self._validation_path, self.COLUMNS, self._fields(row))
                got[todo[t]] = row
                bar.update(1)

            self.evaluate_on(pool, tasks, done)
        rows = [got[slot] for slot in wanted]
        self.store._rewrite(self._validation_path, self.COLUMNS, [self._fields(r) for r in rows])
        pick = [got[(i, "pick")].record.fitness for i in range(held.count)]
        start = [got[(i, "start")].record.fitness for i in range(held.count)]
        self.state.validated = Validated.of(held, v.confidence, pick, start)
        log.info(self.state.validated.sentence())  # (the command says it in its last lines)

    @property
    def _validation_path(self):
        return self.dir / VALIDATION_FILE

    @staticmethod
    def _fields(r: Played) -> list[str]:
        return [str(r.instance), r.player, r.key, *RunStore._record_texts(r.record)]  # (a record as evaluations.csv's)

    def _read_validation(self) -> list[Played]:
        def parse(row: dict) -> Played:
            if row["player"] not in PLAYERS:
                raise ValueError(row["player"])
            return Played(int(row["instance"]), row["player"], row["key"], RunStore._record(row))

        return self.store._read(self._validation_path, self.COLUMNS, parse)

