"""Random search: uniform samples of the space, the honest baseline every tuner must beat at the
same budget. The first candidate is the initial point (as for the other tuners) unless
``init: random``."""

from __future__ import annotations

import numpy as np

from ._base import Optimizer


class RandomSearch(Optimizer):
    name = "random"

    @property
    def generations(self) -> int:
        return self.settings.generations

    def ask(self) -> np.ndarray:
        x = self.space.sample(self.rng, self.settings.samples)
        if self.generation == 0 and self.init != "random":
            x[0] = self.init_point
        return x

    def tell(self, fitness: np.ndarray) -> None:
        self.generation += 1
