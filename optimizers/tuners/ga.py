"""A generational genetic algorithm on DEAP's operators, in a short explicit loop (`GA`).

Generation 0 is the initial population (`Tuner.initial`). Each later generation is the
``elitism`` best distinct individuals ever (the hall of fame) followed by ``population - elitism``
children: parents picked by the selection operator, then DEAP's ``varAnd``, genes clipped to their
bounds; an individual that comes through unchanged is known to the run's memo.

The operators are chosen by name from three tables, one signature per kind, so adding an operator
is one entry: `SELECTIONS` ``select(individuals, k, settings) -> list`` (``ga.selection``),
`CROSSOVERS` ``mate(a, b, settings, bounds) -> (a, b)`` in place (``ga.crossover``; `min_genes`:
the fewest genes one works on) and `MUTATIONS` ``mutate(individual, settings, bounds) ->
(individual,)`` in place (``ga.mutation``). DEAP's operators draw from Python's `random`: every
call runs under `library_random`, the GA's own state. Individuals are plain lists with a fitness,
kept in the checkpoint as arrays of genes and fitness (`individuals_state`). Keys: `GAConfig`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np
from deap import algorithms, base, tools
from pydantic import Field, field_validator, model_validator

from .._base import Tuner
from .._settings import Strict, TunerSettings, known
from ..space import SpaceError
from . import register

#: the least width a gene's range is given for DEAP's bounded operators, which divide by it
MIN_SPAN = 1e-9


class FitnessMax(base.Fitness):
    weights = (1.0,)


class Individual(list):
    def __init__(self, genes=()):
        super().__init__(float(g) for g in genes)
        self.fitness = FitnessMax()
        self.decoded: tuple | None = None


def individuals_state(individuals: list[Individual], dim: int) -> dict:
    """Individuals as data: their genes (n, dim), their fitness (NaN where not evaluated) and
    whether each was evaluated."""
    valid = np.array([ind.fitness.valid for ind in individuals], dtype=bool)
    return {"genes": np.array([list(ind) for ind in individuals], dtype=np.float64).reshape(len(individuals), dim),
            "fitness": np.array([ind.fitness.values[0] if ind.fitness.valid else np.nan for ind in individuals],
                                dtype=np.float64),
            "evaluated": valid}


def individuals_from_state(f, key: str, space) -> list[Individual]:
    """The individuals `individuals_state` saved under ``key`` of ``f`` (`engine.statefile.Fields`),
    each evaluated one's decoded parameters made again (`same_setting` compares them)."""
    g = f.sub(key)
    genes = g.array("genes", np.float64, shape=(None, space.dim), finite=True)
    fitness = g.array("fitness", np.float64, shape=(len(genes),))
    evaluated = g.array("evaluated", np.bool_, shape=(len(genes),))
    if not np.isfinite(fitness[evaluated]).all():
        g.fail(g.name("fitness"), "an evaluated individual's fitness is not a finite number")
    out = []
    for x, fit, valid in zip(genes, fitness, evaluated):
        ind = Individual(x)
        if valid:
            ind.fitness.values = (float(fit),)
            ind.decoded = tuple(space.decode(ind))
        out.append(ind)
    return out


def same_setting(a: Individual, b: Individual) -> bool:
    """Hall-of-fame similarity: the same decoded parameters (so int and choice genes that round to
    the same values count once)."""
    return a.decoded == b.decoded


@dataclass(frozen=True)
class Bounds:
    """Each gene's lower and upper bound as DEAP's bounded operators take them (``up`` at least
    `MIN_SPAN` above ``low``)."""

    low: list[float]
    up: list[float]

    @classmethod
    def of(cls, lower, upper) -> "Bounds":
        return cls([float(v) for v in lower], [float(max(u, lo + MIN_SPAN)) for lo, u in zip(lower, upper)])

    @property
    def span(self) -> list[float]:
        return [u - lo for lo, u in zip(self.low, self.up)]

    @property
    def int_low(self) -> list[int]:
        return [math.ceil(v) for v in self.low]

    @property
    def int_up(self) -> list[int]:
        return [max(math.ceil(lo), math.floor(u)) for lo, u in zip(self.low, self.up)]


# ------------------------------------------------------------------------------------------------
# selection: select(individuals, k, settings)


def _tournament(individuals, k, s):
    return tools.selTournament(individuals, k, tournsize=s.tournsize)


def _best(individuals, k, s):
    return tools.selBest(individuals, k)


def _roulette(individuals, k, s):
    return tools.selRoulette(individuals, k)


def _random(individuals, k, s):
    return tools.selRandom(individuals, k)


def _stochastic_universal(individuals, k, s):
    return tools.selStochasticUniversalSampling(individuals, k)


SELECTIONS: dict[str, Callable] = {
    "tournament": _tournament,
    "best": _best,
    "roulette": _roulette,
    "random": _random,
    "stochastic_universal": _stochastic_universal,
}


# ------------------------------------------------------------------------------------------------
# crossover: mate(a, b, settings, bounds)


def _blend(a, b, alpha):
    """DEAP's blend crossover, except that a gene equal in both parents stays exactly what it was:
    ``(1 - g) x + g x`` is often x plus or minus an ulp, and such a child is a new setting to the
    memo, simulated again for the parents' result. The random draws are DEAP's, unchanged."""
    same = [x == y for x, y in zip(a, b)]
    before = list(a)
    tools.cxBlend(a, b, alpha)
    for i, equal in enumerate(same):
        if equal:
            a[i] = b[i] = before[i]
    return a, b


def _blend_crossover(a, b, s, bounds):
    return _blend(a, b, s.alpha)


def _uniform(a, b, s, bounds):
    return tools.cxUniform(a, b, indpb=s.indpb)


def _one_point(a, b, s, bounds):
    return tools.cxOnePoint(a, b)


def _two_point(a, b, s, bounds):
    return tools.cxTwoPoint(a, b)


def _sbx(a, b, s, bounds):
    return tools.cxSimulatedBinaryBounded(a, b, eta=s.eta, low=bounds.low, up=bounds.up)


def _no_crossover(a, b, s, bounds):
    return a, b


_one_point.min_genes = _two_point.min_genes = 2  # the cut falls strictly inside the genes

CROSSOVERS: dict[str, Callable] = {
    "blend": _blend_crossover,
    "uniform": _uniform,
    "one_point": _one_point,
    "two_point": _two_point,
    "sbx": _sbx,
    "none": _no_crossover,
}


def min_genes(mate: Callable) -> int:
    """The fewest genes a crossover works on."""
    return getattr(mate, "min_genes", 1)


# ------------------------------------------------------------------------------------------------
# mutation: mutate(individual, settings, bounds)


def _gaussian(ind, s, bounds):
    return tools.mutGaussian(ind, mu=0.0, sigma=[s.sigma * w for w in bounds.span], indpb=s.indpb)


def _polynomial_bounded(ind, s, bounds):
    return tools.mutPolynomialBounded(ind, eta=s.eta, low=bounds.low, up=bounds.up, indpb=s.indpb)


def _uniform_int(ind, s, bounds):
    return tools.mutUniformInt(ind, low=bounds.int_low, up=bounds.int_up, indpb=s.indpb)


def _no_mutation(ind, s, bounds):
    return (ind,)


MUTATIONS: dict[str, Callable] = {
    "gaussian": _gaussian,
    "polynomial_bounded": _polynomial_bounded,
    "uniform_int": _uniform_int,
    "none": _no_mutation,
}


# ------------------------------------------------------------------------------------------------

class SelectionConfig(Strict):
    """``ga.selection``: how parents are picked (DEAP's sel* operators)."""

    name: str = Field("tournament", description=f"one of {', '.join(SELECTIONS)}")
    tournsize: int = Field(3, ge=2, description="tournament size (tournament)")
    _name = field_validator("name")(known("selection operator", SELECTIONS))


class CrossoverConfig(Strict):
    """``ga.crossover``: how two parents mix (DEAP's cx* operators)."""

    name: str = Field("blend", description=f"one of {', '.join(CROSSOVERS)}")
    alpha: float = Field(0.3, ge=0, description="blend: extent of the interval around the parents")
    indpb: float = Field(0.5, ge=0, le=1, description="uniform: probability of swapping each gene")
    eta: float = Field(15.0, gt=0, description="sbx: crowding degree (high: children near the parents)")
    _name = field_validator("name")(known("crossover operator", CROSSOVERS))


class MutationConfig(Strict):
    """``ga.mutation``: how a child is perturbed (DEAP's mut* operators)."""

    name: str = Field("gaussian", description=f"one of {', '.join(MUTATIONS)}")
    sigma: float = Field(0.15, gt=0, description="gaussian: standard deviation as a share of each gene's range")
    indpb: float = Field(0.5, ge=0, le=1, description="probability of mutating each gene")
    eta: float = Field(20.0, gt=0, description="polynomial_bounded: crowding degree")
    _name = field_validator("name")(known("mutation operator", MUTATIONS))


class GAConfig(TunerSettings):
    """``ga``: a generational genetic algorithm on DEAP's operators: elites (the best of the hall of
    fame) are kept, the rest of each generation is selected, then mated with probability ``cxpb``
    and mutated with probability ``mutpb`` (DEAP's varAnd). Genes are clipped to their bounds."""

    population_key: ClassVar[str | None] = "population"
    population: int = Field(16, ge=2, description="individuals per generation")
    generations: int = Field(10, ge=1, description="generations, the first (the initial population) included")
    cxpb: float = Field(0.7, ge=0, le=1, description="probability of mating a pair")
    mutpb: float = Field(0.8, ge=0, le=1, description="probability of mutating an individual")
    elitism: int = Field(1, ge=0, description="best individuals ever (hall of fame) copied into each new generation")
    hall_of_fame: int = Field(10, ge=1, description="distinct best individuals kept")
    selection: SelectionConfig = Field(default_factory=SelectionConfig)
    crossover: CrossoverConfig = Field(default_factory=CrossoverConfig)
    mutation: MutationConfig = Field(default_factory=MutationConfig)

    @model_validator(mode="after")
    def _sizes(self):
        if self.elitism >= self.population:
            raise ValueError(f"elitism: must be below the population ({self.population})")
        if self.elitism > self.hall_of_fame:
            raise ValueError(f"elitism: elites come from the hall of fame ({self.hall_of_fame}): at most that many")
        return self

    def budget(self, dim: int) -> tuple[int, int]:
        return self.generations, self.population


@register
class GA(Tuner):
    name = "ga"
    Settings = GAConfig

    def __init__(self, space, settings, rng, **kw):
        super().__init__(space, settings, rng, **kw)
        crossover = settings.crossover.name
        least = min_genes(CROSSOVERS[crossover])
        if space.dim < least:
            raise SpaceError(f"ga.crossover.name: {crossover} needs at least {least} parameters")
        self.population: list[Individual] = []
        self.offspring: list[Individual] = []
        self.hof = tools.HallOfFame(settings.hall_of_fame, similar=same_setting)

    def state_dict(self) -> dict:
        d = self.space.dim
        return {**super().state_dict(), "population": individuals_state(self.population, d),
                "offspring": individuals_state(self.offspring, d), "hall_of_fame": individuals_state(self.hof.items, d)}

    def load_state(self, f) -> None:
        super().load_state(f)
        self.population = individuals_from_state(f, "population", self.space)
        self.offspring = individuals_from_state(f, "offspring", self.space)
        best = individuals_from_state(f, "hall_of_fame", self.space)
        if len(best) > self.hof.maxsize or not all(ind.fitness.valid for ind in best):
            f.fail("hall_of_fame", f"at most {self.hof.maxsize} evaluated individuals")
        if any(a.fitness < b.fitness for a, b in zip(best, best[1:])):
            f.fail("hall_of_fame", "not in order of fitness, best first")
        self.hof.items = best  # best first; its keys are their fitness in rising order (DEAP's insert)
        self.hof.keys = [ind.fitness for ind in reversed(best)]

    def toolbox(self) -> base.Toolbox:
        """DEAP's toolbox of the configured operators (``select``, ``mate``, ``mutate``)."""
        s = self.settings
        bounds = Bounds.of(self.space.lower, self.space.upper)
        tb = base.Toolbox()
        tb.register("select", SELECTIONS[s.selection.name], s=s.selection)
        tb.register("mate", CROSSOVERS[s.crossover.name], s=s.crossover, bounds=bounds)
        tb.register("mutate", MUTATIONS[s.mutation.name], s=s.mutation, bounds=bounds)
        return tb

    def ask(self) -> np.ndarray:
        s = self.settings
        if self.generation == 0:
            self.offspring = [Individual(x) for x in self.initial(s.population)]
        else:
            tb = self.toolbox()
            elites = [tb.clone(h) for h in self.hof[: min(s.elitism, len(self.hof))]]
            with self.library_random():
                parents = tb.select(self.population, s.population - len(elites))
                children = algorithms.varAnd(parents, tb, s.cxpb, s.mutpb)
            for child in children:
                child[:] = [float(v) for v in self.space.clip(child)]
            self.offspring = elites + list(children)
        return np.array([list(ind) for ind in self.offspring], dtype=np.float64)

    def tell(self, fitness: np.ndarray) -> None:
        for ind, f in zip(self.offspring, fitness):
            ind.fitness.values = (float(f),)
            ind.decoded = tuple(self.space.decode(ind))
        self.population = self.offspring
        self.offspring = []
        self.hof.update(self.population)
        self.generation += 1
