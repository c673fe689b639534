"""CMA-ES on DEAP's `deap.cma.Strategy` (`CMAES`, settings `CMAESConfig`), stepped by the run loop.

The strategy lives in the unit cube (each gene's range scaled to [0, 1], as the swarm does), so
``sigma`` is a share of every parameter's range. Bounds (``bounds``): ``clip`` evaluates each draw
clipped to the box and tells the strategy the clipped point; ``penalty`` evaluates the clipped
point but tells the strategy the draw itself with its fitness lowered by ``penalty`` times its
squared distance to the box (in range shares), which keeps the strategy's own statistics unbiased
near a bound; ``resample`` draws again, up to `RESAMPLE_ROUNDS` times, each candidate that falls
outside the box (the draws kept follow the distribution cut to the box, as Optuna's CMA-ES
samples; one still outside after that is clipped).

DEAP draws from numpy's global random state: every call runs under `library_random`, the tuner's
own state, saved with it. The checkpoint keeps the strategy's moving parts (`STRATEGY_STATE`); the
rest follows from the settings it is made with again. In full: docs/tuning.md, 'Tuning runs'.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from deap import cma
from pydantic import Field, model_validator

from .._base import Tuner
from .._settings import TunerSettings
from ..space import SpaceError
from . import register
from .ga import Individual, individuals_from_state, individuals_state

#: ``bounds: resample``: rounds of lambda draws taken to fill a generation with draws inside the box
RESAMPLE_ROUNDS = 100
#: the attributes of DEAP's `cma.Strategy` that move as it runs (the others are made from the
#: settings), with their shape: ``vector`` (dim,), ``matrix`` (dim, dim), ``number`` or ``count``
STRATEGY_STATE = {"centroid": "vector", "sigma": "number", "pc": "vector", "ps": "vector", "C": "matrix",
                  "diagD": "vector", "B": "matrix", "BD": "matrix", "cond": "number", "update_count": "count"}


class CMAESConfig(TunerSettings):
    """``cmaes``: the covariance matrix adaptation evolution strategy (DEAP's `cma.Strategy`) in the
    unit cube of the space: ``sigma`` is a share of each parameter's range."""

    population_key: ClassVar[str | None] = "population"
    step_key: ClassVar[str | None] = "sigma"
    generations: int = Field(10, ge=1, description="generations, the first included")
    population: int | None = Field(None, ge=2, description="lambda, candidates per generation (null: 4 + 3 ln(dimensions))")
    parents: int | None = Field(None, ge=1, description="mu, the best candidates that move the mean (null: half the population)")
    sigma: float = Field(0.2, gt=0, description="initial step size, as a share of each parameter's range")
    weights: Literal["superlinear", "linear", "equal"] = Field("superlinear", description="the parents' recombination weights")
    bounds: Literal["clip", "penalty", "resample"] = Field(
        "resample", description="`clip`: the strategy is told the clipped point; `penalty`: the draw itself, its fitness "
                               "lowered by `penalty` x its squared distance to the box; `resample`: a draw outside the "
                               "box drawn again (the module docstring)")
    penalty: float = Field(1e6, ge=0, description="penalty: fitness lost per squared range share outside the box")

    @model_validator(mode="after")
    def _sizes(self):
        if self.population is not None and self.parents is not None and self.parents > self.population:
            raise ValueError(f"parents: at most the population ({self.population})")
        return self

    def lam(self, dim: int) -> int:
        """lambda for ``dim`` parameters: the setting, or DEAP's default 4 + 3 ln(dim)."""
        return self.population if self.population is not None else int(4 + 3 * np.log(max(dim, 1)))

    def budget(self, dim: int) -> tuple[int, int]:
        return self.generations, self.lam(dim)


@register
class CMAES(Tuner):
    """CMA-ES in the unit cube, one generation per `ask` and `tell`:

        candidates <- strategy.generate()      (lambda draws from N(centroid, sigma^2 C))
        fitness    <- the run loop's evaluation of the candidates, held to the bounds (``bounds``)
        strategy.update(candidates by fitness) (the mu best move the centroid; C and sigma adapt)

    ``penalty`` is in fitness units: where a fitness runs to millions (rows per game) the default
    penalty is too weak to pull the strategy back, and the candidates pile up on a bound
    (docs/tuning.md, 'The optuna tuner', measures it). With ``init: point`` the centroid starts at
    the initial point and the first candidate of the first generation is that point itself; with
    ``init: random`` the centroid is a uniform draw."""

    name = "cmaes"
    Settings = CMAESConfig

    def __init__(self, space, settings, rng, **kw):
        super().__init__(space, settings, rng, **kw)
        self.lam = settings.lam(space.dim)
        start = self.unit_start()
        options = {"lambda_": self.lam, "weights": settings.weights}
        if settings.parents is not None:
            if settings.parents > self.lam:
                raise SpaceError(f"cmaes.parents: at most the population ({self.lam} for {space.dim} parameters)")
            options["mu"] = settings.parents
        self.strategy = cma.Strategy(centroid=list(start), sigma=settings.sigma, **options)
        self.draws: list[Individual] = []

    def state_dict(self) -> dict:
        return {**super().state_dict(), "strategy": {k: getattr(self.strategy, k) for k in STRATEGY_STATE},
                "draws": individuals_state(self.draws, self.space.dim)}

    def load_state(self, f) -> None:
        super().load_state(f)
        s, d = f.sub("strategy"), self.space.dim
        for key, kind in STRATEGY_STATE.items():
            if kind == "count":
                value = s.int(key, 0)
            elif kind == "number":
                value = s.raw(key)
                s.float(key)  # (checked: finite; kept as saved, a numpy float once the strategy has moved)
            else:
                value = s.array(key, np.float64, shape=(d,) if kind == "vector" else (d, d), finite=True)
            setattr(self.strategy, key, value)
        self.draws = individuals_from_state(f, "draws", self.space)

    def ask(self) -> np.ndarray:
        with self.library_random():
            self.draws = self.strategy.generate(Individual)
            if self.settings.bounds == "resample":
                self.draws = self._inside(self.draws)
        if self.generation == 0 and self.init != "random":
            self.draws[0][:] = [float(v) for v in self.strategy.centroid]  # the initial point itself
        return np.array([self.space.from_unit(np.asarray(d)) for d in self.draws])

    def _inside(self, draws: list) -> list:
        """``draws`` with each one outside the unit box replaced by the next draw inside it (in the
        order drawn), over at most `RESAMPLE_ROUNDS` more rounds of lambda draws; those still outside
        stay (the run loop clips them)."""
        def inside(d) -> bool:
            u = np.asarray(d)
            return bool(((u >= 0.0) & (u <= 1.0)).all())

        out = [k for k, d in enumerate(draws) if not inside(d)]
        for _ in range(RESAMPLE_ROUNDS):
            if not out:
                break
            fresh = [d for d in self.strategy.generate(Individual) if inside(d)]
            for k, d in zip(out, fresh):
                draws[k] = d
            out = out[len(fresh):]
        return draws

    def recommendation(self) -> np.ndarray:
        """The strategy's centroid (held to the box): the mean the next generation is drawn about."""
        return self.space.from_unit(np.clip(np.asarray(self.strategy.centroid, dtype=np.float64), 0.0, 1.0))

    def tell(self, fitness: np.ndarray) -> None:
        s = self.settings
        for d, f in zip(self.draws, np.asarray(fitness, dtype=np.float64)):
            u = np.asarray(d)
            inside = np.clip(u, 0.0, 1.0)
            if s.bounds == "clip":
                d[:] = [float(v) for v in inside]
            else:
                f -= s.penalty * float(((u - inside) ** 2).sum())
            d.fitness.values = (float(f),)
        with self.library_random():
            self.strategy.update(self.draws)
        self.draws = []
        self.generation += 1
