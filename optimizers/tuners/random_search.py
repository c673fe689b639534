"""Random search: uniform samples of the space, the honest baseline every tuner must beat at the
same budget. The first candidate is the initial point (as for the other tuners) unless
``init: random``."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from .._base import Tuner
from .._settings import TunerSettings
from . import register


class RandomConfig(TunerSettings):
    """``random``: uniform samples of the space, the baseline a tuner must beat at equal budget
    (the first candidate is the initial point unless ``init: random``)."""

    population_key: ClassVar[str | None] = "samples"
    samples: int = Field(16, ge=1, description="candidates per generation")
    generations: int = Field(10, ge=1, description="generations")

    def budget(self, dim: int) -> tuple[int, int]:
        return self.generations, self.samples


@register
class RandomSearch(Tuner):
    name = "random"
    Settings = RandomConfig

    def ask(self) -> np.ndarray:
        x = self.space.sample(self.rng, self.settings.samples)
        if self.generation == 0 and self.init != "random":
            x[0] = self.init_point
        return x

    def tell(self, fitness: np.ndarray) -> None:
        self.generation += 1
