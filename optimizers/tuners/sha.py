"""Successive halving (Jamieson & Talwalkar 2016; Hyperband's inner loop): many candidates scored
cheaply, the best fraction promoted to a costlier, more faithful score, rung after rung.

Each rung is one generation of the run, with its own solver settings (``rungs[r].settings``: more
pieces, a wider beam, ...). Rung 0 scores ``candidates`` vectors (the initial point and
perturbations of it, or uniform samples); rung r scores the best floor(``candidates`` / ``eta``^r)
(at least one) of rung r - 1's, ties to the earlier candidate. Only the highest rung reached
competes for the run's best, and best.yaml carries that rung's settings.

Early abort applies at the rungs that ask for it (``early_abort: true``, e.g. the last one with a
reference record): their threshold comes from the finished candidates of the rungs before (lower
fidelity, so a looser bar) and from the reference record, if any.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from .._base import Tuner
from .._settings import Strict, TunerSettings
from ..space import SpaceError
from . import register


class RungConfig(Strict):
    """One rung of successive halving: the solver settings its candidates are scored with."""

    settings: dict[str, Any] = Field(default_factory=dict, description="dotted solver settings of this rung, e.g. `{pieces: 1000, beam.width: 30}`")
    early_abort: bool = Field(False, description="hold this rung's candidates to the early-abort threshold")


class SHAConfig(TunerSettings):
    """``sha``: successive halving over rungs of growing fidelity: ``candidates`` scored at the first
    rung, the best 1/``eta`` of each rung promoted to the next."""

    candidates: int = Field(27, ge=1, description="candidates scored at the first rung")
    eta: int = Field(3, ge=2, description="each rung keeps the best 1/eta of the one before")
    rungs: list[RungConfig] = Field(default_factory=list, description="the rungs, cheapest first (one generation each; at least one)")

    def size(self, rung: int) -> int:
        """Candidates scored at ``rung``: floor(candidates / eta^rung), at least one."""
        return max(1, self.candidates // self.eta ** rung)

    def budget(self, dim: int) -> tuple[int, int]:
        return len(self.rungs), self.candidates


@register
class SHA(Tuner):
    name = "sha"
    Settings = SHAConfig

    def __init__(self, space, settings, rng, **kw):
        if not settings.rungs:
            raise SpaceError("sha.rungs: give at least one rung (its solver settings)")
        super().__init__(space, settings, rng, **kw)
        self.current: np.ndarray | None = None  # the vectors of the rung being scored

    def settings_at(self, generation: int) -> dict:
        return dict(self.settings.rungs[generation].settings)

    def compared(self, generation: int) -> bool:
        return generation == max(self.generation - 1, 0)

    def aborts_at(self, generation: int) -> bool:
        return self.settings.rungs[generation].early_abort

    def state_dict(self) -> dict:
        return {**super().state_dict(), "current": None if self.current is None else np.asarray(self.current)}

    def load_state(self, f) -> None:
        super().load_state(f)
        self.current = f.optional("current", f.array, np.float64, shape=(None, self.space.dim), finite=True)

    def ask(self) -> np.ndarray:
        if self.generation == 0:
            self.current = self.initial(self.settings.size(0))
        return np.array(self.current)

    def tell(self, fitness: np.ndarray) -> None:
        keep = self.settings.size(self.generation + 1)
        order = np.argsort(-np.asarray(fitness, dtype=np.float64), kind="stable")
        self.current = np.array(self.current)[order[:keep]]
        self.generation += 1
