"""A run's state between generations, as typed records.

checkpoint.pkl holds it as the plain mapping it always was (`RunState.to_checkpoint`): ``generation``
(the next one), ``optimizer`` (the tuner, its random states included), ``early_abort``, ``history``
(a mapping per finished generation, the columns of generations.csv), ``best`` and ``rescored`` (a
mapping each, or None) and ``done``, and ``noise`` (`optimizers.noise.Noise`) only in a run whose
``noise`` or ``restart`` section is on; `RunState.from_checkpoint` reads any run's checkpoint back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ._base import Optimizer
from .early_abort import EarlyAbort
from .noise import Noise
from .store import Evaluation, GenerationStats, Rescoring


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


@dataclass
class RunState:
    """What a run carries from one generation to the next (see the module docstring)."""

    generation: int
    optimizer: Optimizer
    early_abort: EarlyAbort
    history: list[GenerationStats] = field(default_factory=list)
    best: Best | None = None
    rescored: Rescored | None = None
    done: bool = False
    noise: Noise | None = None

    @classmethod
    def from_checkpoint(cls, data: dict) -> "RunState":
        best, rescored = data.get("best"), data.get("rescored")
        return cls(generation=data["generation"], optimizer=data["optimizer"], early_abort=data["early_abort"],
                   history=[GenerationStats.from_dict(h) for h in data["history"]],
                   best=None if best is None else Best(**best),
                   rescored=None if rescored is None else Rescored(**rescored), done=data.get("done", False),
                   noise=data.get("noise"))

    def to_checkpoint(self) -> dict:
        out = {"generation": self.generation, "optimizer": self.optimizer, "early_abort": self.early_abort,
               "history": [h.as_dict() for h in self.history],
               "best": None if self.best is None else asdict(self.best),
               "rescored": None if self.rescored is None else asdict(self.rescored), "done": self.done}
        if self.noise is not None:
            out["noise"] = self.noise
        return out
