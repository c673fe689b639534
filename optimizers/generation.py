"""A generation under way in the run loop: its candidates (`Candidate`) and their records
(`Generation`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .fitness import TuningRecord


@dataclass
class Candidate:
    """One proposal of a generation: its ``index``, parameter ``values``, canonical solver ``config``
    and that config's ``key``."""

    index: int
    values: list
    key: str
    config: dict
    #: the threshold it is held to when not its generation's (a race's: the incumbent's curve on
    #: the same instance, `optimizers.racing`); None: the generation's
    threshold: object = None


@dataclass
class Generation:
    """A generation under way: its ``candidates``, the early abort's ``threshold`` (and the K-th best
    fitness it was built from) they are held to, when it ``started`` (`time.perf_counter`), and
    each candidate's record once known. The first ``told`` candidates are the tuner's (None: all);
    the others are re-evaluations (`optimizers.noise`)."""

    number: int
    candidates: list[Candidate]
    threshold: np.ndarray | None
    kth_best: float | None
    started: float
    told: int | None = None
    records: list[TuningRecord | None] = field(default_factory=list)
    #: a racing generation's race (`optimizers.racing.Race`) over its ``entrants`` (the elites, then
    #: the tuner's ``told`` candidates); its candidates are then the (entrant, instance) evaluations
    #: in the order the race asked for them
    race: object | None = None
    entrants: list = field(default_factory=list)
    #: the training instances played by this race and those before it (`racing.race_order`)
    instances_seen: int = 0

    def __post_init__(self):
        self.records = [None] * len(self.candidates)
        if self.told is None:
            self.told = len(self.candidates)

    def extend(self, candidates: list[Candidate]) -> None:
        """Candidates added to the generation under way (a race's next batch)."""
        self.candidates.extend(candidates)
        self.records.extend([None] * len(candidates))

    def threshold_of(self, c: Candidate):
        """The threshold candidate ``c`` is held to: its own, else the generation's."""
        return c.threshold if c.threshold is not None else self.threshold

    def best_fitness(self) -> float:
        return max((r.fitness for r in self.records if r is not None), default=float("nan"))
