"""A generational genetic algorithm on DEAP's operators, in a short explicit loop.

Generation 0 is the initial population (`Optimizer.initial`). Each later generation is the
``elitism`` best distinct individuals ever (the hall of fame) followed by ``population - elitism``
children: parents picked by the selection operator, then DEAP's ``varAnd`` (pairs mated with
probability ``cxpb``, each child mutated with probability ``mutpb``), genes clipped to their bounds.
An individual that comes through unchanged is not simulated again: the run's memo knows it.

DEAP's operators draw from Python's `random`; every call runs under `library_random`, the GA's own
state. Individuals are plain lists with a fitness (module-level classes, so they pickle).
"""

from __future__ import annotations

import math

import numpy as np
from deap import algorithms, base, tools

from ._base import Optimizer
from .space import SpaceError


class FitnessMax(base.Fitness):
    weights = (1.0,)


class Individual(list):
    def __init__(self, genes=()):
        super().__init__(float(g) for g in genes)
        self.fitness = FitnessMax()
        self.decoded: tuple | None = None


def same_setting(a: Individual, b: Individual) -> bool:
    """Hall-of-fame similarity: the same decoded parameters (so int and choice genes that round to
    the same values count once)."""
    return a.decoded == b.decoded


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


def _no_crossover(a, b):
    return a, b


def _no_mutation(a):
    return (a,)


class GA(Optimizer):
    name = "ga"

    def __init__(self, space, settings, rng, **kw):
        super().__init__(space, settings, rng, **kw)
        if settings.crossover.name in ("one_point", "two_point") and space.dim < 2:
            raise SpaceError(f"ga.crossover.name: {settings.crossover.name} needs at least 2 parameters")
        self.population: list[Individual] = []
        self.offspring: list[Individual] = []
        self.hof = tools.HallOfFame(settings.hall_of_fame, similar=same_setting)
        self.toolbox()  # fail early on a bad operator

    @property
    def generations(self) -> int:
        return self.settings.generations

    def toolbox(self) -> base.Toolbox:
        s = self.settings
        low = [float(v) for v in self.space.lower]
        up = [float(max(u, lo + 1e-9)) for lo, u in zip(self.space.lower, self.space.upper)]
        span = [u - lo for lo, u in zip(low, up)]
        tb = base.Toolbox()
        sel = s.selection.name
        if sel == "tournament":
            tb.register("select", tools.selTournament, tournsize=s.selection.tournsize)
        elif sel == "best":
            tb.register("select", tools.selBest)
        elif sel == "roulette":
            tb.register("select", tools.selRoulette)
        elif sel == "random":
            tb.register("select", tools.selRandom)
        elif sel == "stochastic_universal":
            tb.register("select", tools.selStochasticUniversalSampling)
        else:
            raise SpaceError(f"ga.selection.name: unknown selection operator {sel!r}")
        cx = s.crossover.name
        if cx == "blend":
            tb.register("mate", _blend, alpha=s.crossover.alpha)
        elif cx == "uniform":
            tb.register("mate", tools.cxUniform, indpb=s.crossover.indpb)
        elif cx == "one_point":
            tb.register("mate", tools.cxOnePoint)
        elif cx == "two_point":
            tb.register("mate", tools.cxTwoPoint)
        elif cx == "sbx":
            tb.register("mate", tools.cxSimulatedBinaryBounded, eta=s.crossover.eta, low=low, up=up)
        elif cx == "none":
            tb.register("mate", _no_crossover)
        else:
            raise SpaceError(f"ga.crossover.name: unknown crossover operator {cx!r}")
        mut = s.mutation.name
        if mut == "gaussian":
            tb.register("mutate", tools.mutGaussian, mu=0.0, sigma=[s.mutation.sigma * w for w in span],
                        indpb=s.mutation.indpb)
        elif mut == "polynomial_bounded":
            tb.register("mutate", tools.mutPolynomialBounded, eta=s.mutation.eta, low=low, up=up,
                        indpb=s.mutation.indpb)
        elif mut == "uniform_int":
            tb.register("mutate", tools.mutUniformInt, low=[math.ceil(v) for v in low],
                        up=[max(math.ceil(lo), math.floor(u)) for lo, u in zip(low, up)], indpb=s.mutation.indpb)
        elif mut == "none":
            tb.register("mutate", _no_mutation)
        else:
            raise SpaceError(f"ga.mutation.name: unknown mutation operator {mut!r}")
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
