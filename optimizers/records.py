"""The typed rows of a run directory's tables (`optimizers.store` writes and reads them): an
evaluation (evaluations.csv), a re-scoring (rescore.csv), a finished generation's statistics
(generations.csv), and the best evaluation and re-scored candidate a run's state keeps."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields as dataclass_fields

import numpy as np

from .fitness import RECORD_FIELDS, TuningRecord


@dataclass
class Evaluation:
    """A row of evaluations.csv: candidate ``index`` of ``generation``, its parameter ``values``,
    its ``record``, whether it was ``cached`` (not simulated: a repeat, or known to the memo) and
    the ``key`` of its solver config."""

    generation: int
    index: int
    values: list
    record: TuningRecord
    cached: bool
    key: str

    @property
    def slot(self) -> tuple[int, int]:
        """(generation, index): where the candidate stands in the run."""
        return self.generation, self.index

    def as_row(self) -> dict:
        """The evaluation as plain data (the record a dict too), as a run's ``on_evaluation`` gets it."""
        return {"generation": self.generation, "index": self.index, "values": list(self.values),
                "record": self.record.as_dict(), "cached": self.cached, "key": self.key}


#: a rescore.csv row's ``index`` for the tuner's recommendation, a point no generation played
#: (its ``generation``: the generations told; no tuned fitness (NaN) or key)
RECOMMENDATION = -1


@dataclass
class Rescoring:
    """A row of rescore.csv: the candidate of tuned ``rank`` (0 the best), from ``generation`` and
    ``index``, re-run with the rescore overrides: its ``record`` and ``key`` beside the tuned
    ``tuned_fitness`` and ``tuned_key``; or, at index `RECOMMENDATION`, the tuner's recommendation."""

    rank: int
    generation: int
    index: int
    values: list
    tuned_fitness: float
    record: TuningRecord | None  # None: not played yet
    cached: bool
    key: str
    tuned_key: str


@dataclass
class Best:
    """The best evaluation so far: its fitness and score, where it stands, its config key and values."""

    fitness: float
    score: int
    generation: int
    index: int
    key: str
    values: list

    @classmethod
    def of(cls, e: Evaluation) -> "Best":
        return cls(fitness=e.record.fitness, score=e.record.score, generation=e.generation, index=e.index,
                   key=e.key, values=list(e.values))


@dataclass
class Rescored:
    """The best re-scored candidate: its re-scored fitness, score and key, where it stands, its tuned
    key and fitness, its values and its tuned rank."""

    fitness: float
    score: int
    generation: int
    index: int
    key: str
    tuned_key: str
    tuned_fitness: float
    values: list
    rank: int

    @classmethod
    def of(cls, r: Rescoring) -> "Rescored":
        return cls(fitness=r.record.fitness, score=r.record.score, generation=r.generation, index=r.index,
                   key=r.key, tuned_key=r.tuned_key, tuned_fitness=r.tuned_fitness, values=r.values, rank=r.rank)


def spread(values) -> dict:
    """best, mean, median and worst of ``values``."""
    a = np.asarray(values, dtype=np.float64)
    return {"best": float(a.max()), "mean": float(a.mean()), "median": float(np.median(a)), "worst": float(a.min())}


@dataclass
class GenerationStats:
    """A row of generations.csv: a finished generation's fitness (best, mean, median, worst), its
    evaluations (simulated, aborted), pieces and seconds of the simulations, its wall time, the
    best fitness so far and the K-th best the early abort's threshold was built from (None: none)."""

    generation: int
    best: float
    mean: float
    median: float
    worst: float
    evaluations: int
    simulated: int
    aborted: int
    pieces: int
    eval_seconds: float
    wall_seconds: float
    best_so_far: float
    kth_best: float | None

    def as_dict(self) -> dict:
        return asdict(self)


RECORD_COLUMNS = list(RECORD_FIELDS)
GENERATION_COLUMNS = [f.name for f in dataclass_fields(GenerationStats)]
