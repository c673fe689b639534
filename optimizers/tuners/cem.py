"""The noisy cross-entropy method (Szita & Lőrincz 2006, "Learning Tetris using the noisy
cross-entropy method"), stepped one generation at a time by the run loop.

A Gaussian per parameter, in the unit cube of the space (each range scaled to [0, 1], so ``sigma``
and the noise are shares of every parameter's range). One generation t:

    candidates <- N samples of N(mean, std^2), clipped to the box
    elite      <- the best ceil(elite x N) of them by fitness (ties: the earlier candidate)
    mean       <- the elite's mean;  std^2 <- the elite's variance + Z_t

Z_t, the noise that keeps the distribution from collapsing on a lucky elite: ``none`` (0, the plain
method), ``constant`` (``noise``), or ``decreasing`` (max(``noise`` - t x ``noise_decrement``, 0):
the paper's best, max(5 - t/10, 0) on its unscaled weights). With ``init: point`` the mean starts
at the initial point and the first candidate of the first generation is that point itself.
"""

from __future__ import annotations

import math
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from .._base import Tuner
from .._settings import TunerSettings
from . import register


class CEMConfig(TunerSettings):
    """``cem``: the noisy cross-entropy method: a Gaussian per parameter (in range shares), moved to
    the mean and variance of the best ``elite`` share of each generation, plus noise."""

    population_key: ClassVar[str | None] = "samples"
    step_key: ClassVar[str | None] = "sigma"
    samples: int = Field(20, ge=2, description="N, candidates per generation")
    generations: int = Field(10, ge=1, description="generations, the first included")
    elite: float = Field(0.1, gt=0, le=1, description="rho, the share of the samples that makes the elite (at least one)")
    sigma: float = Field(0.3, gt=0, description="initial standard deviation, as a share of each parameter's range")
    noise: float = Field(0.01, ge=0, description="Z_0: variance added after each update, in squared range shares")
    schedule: Literal["none", "constant", "decreasing"] = Field(
        "decreasing", description="`none`: no noise; `constant`: `noise` every generation; `decreasing`: "
                                  "max(noise - t x noise_decrement, 0) after generation t")
    noise_decrement: float = Field(0.001, ge=0, description="decreasing: noise taken off per generation")

    def budget(self, dim: int) -> tuple[int, int]:
        return self.generations, self.samples

    def elite_count(self) -> int:
        return max(1, math.ceil(self.elite * self.samples - 1e-9))

    def noise_at(self, t: int) -> float:
        """Z_t, the variance added after the update of generation ``t`` (0-based)."""
        if self.schedule == "none":
            return 0.0
        if self.schedule == "constant":
            return self.noise
        return max(self.noise - t * self.noise_decrement, 0.0)


@register
class CEM(Tuner):
    name = "cem"
    Settings = CEMConfig

    def __init__(self, space, settings, rng, **kw):
        super().__init__(space, settings, rng, **kw)
        self.mean = self.unit_start()
        self.std = np.full(space.dim, float(settings.sigma))
        self.drawn: np.ndarray | None = None

    def state_dict(self) -> dict:
        return {**super().state_dict(), "mean": self.mean, "std": self.std, "drawn": self.drawn}

    def load_state(self, f) -> None:
        super().load_state(f)
        d = self.space.dim
        self.mean = f.array("mean", np.float64, shape=(d,), finite=True)
        self.std = f.array("std", np.float64, shape=(d,), finite=True)
        self.drawn = f.optional("drawn", f.array, np.float64, shape=(self.settings.samples, d), finite=True)

    def ask(self) -> np.ndarray:
        n = self.settings.samples
        u = np.clip(self.mean + self.std * self.rng.standard_normal((n, self.space.dim)), 0.0, 1.0)
        if self.generation == 0 and self.init != "random":
            u[0] = np.clip(self.mean, 0.0, 1.0)  # the initial point itself
        self.drawn = u
        return self.space.from_unit(u)

    def recommendation(self) -> np.ndarray:
        """The distribution's mean (held to the box), as the noisy cross-entropy method answers."""
        return self.space.from_unit(np.clip(self.mean, 0.0, 1.0))

    def tell(self, fitness: np.ndarray) -> None:
        s = self.settings
        order = np.argsort(-np.asarray(fitness, dtype=np.float64), kind="stable")
        elite = self.drawn[order[: s.elite_count()]]
        self.mean = elite.mean(axis=0)
        self.std = np.sqrt(elite.var(axis=0) + s.noise_at(self.generation))
        self.drawn = None
        self.generation += 1
