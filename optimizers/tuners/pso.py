"""Particle swarm optimisation on pyswarms' backend (`PSO`, settings `PSOConfig`), stepped in the
run's own loop.

pyswarms 1.3.0 is unmaintained; only its backend is used (its ``optimize()`` has no per-iteration
hook and no resume): `create_swarm`, the `Star` (global best) and `Ring` (local best) topologies
(`TOPOLOGIES`; its Pyramid and Random topologies fail on numpy 2), and its boundary and velocity
handlers. The swarm lives in the unit cube (each gene's range scaled to [0, 1]), so ``clamp`` and
the coefficients mean the same for every parameter.

pyswarms draws from numpy's global random state; every call runs under `library_random`, the
swarm's own state (seeded from the run's generator, saved with the swarm). The checkpoint keeps
the swarm's arrays (`SWARM_STATE`) and the memory of the topology and the handlers; the operators
are made again from the settings.
"""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, ClassVar, Literal, NamedTuple

import numpy as np

from pydantic import Field, field_validator, model_validator

from .._base import Tuner
from .._settings import TunerSettings, known
from . import register

LOGGING = Path(__file__).resolve().parent / "_pyswarms_logging.yaml"


@contextlib.contextmanager
def _quiet_pyswarms():
    """pyswarms' Reporter reconfigures logging (and writes ./report.log) unless LOG_CFG names a file."""
    old = os.environ.get("LOG_CFG")
    os.environ["LOG_CFG"] = str(LOGGING)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("LOG_CFG", None)
        else:
            os.environ["LOG_CFG"] = old


@functools.cache
def _backend() -> SimpleNamespace:
    """pyswarms' backend, imported when a swarm is first made: it brings SciPy (about a quarter of a
    second), which every process that lists the tuners would otherwise pay."""
    with _quiet_pyswarms():
        from pyswarms.backend.generators import create_swarm
        from pyswarms.backend.handlers import BoundaryHandler, VelocityHandler
        from pyswarms.backend.operators import compute_pbest
        from pyswarms.backend.swarms import Swarm
        from pyswarms.backend.topology import Ring, Star
    return SimpleNamespace(create_swarm=create_swarm, BoundaryHandler=BoundaryHandler,
                           VelocityHandler=VelocityHandler, compute_pbest=compute_pbest, Ring=Ring, Star=Star,
                           Swarm=Swarm)


class Topology(NamedTuple):
    """A swarm topology: ``make()`` a new pyswarms topology; ``best_options(settings)`` the keyword
    arguments of its ``compute_gbest`` (the ``pso`` settings give them)."""

    make: Callable[[], Any]
    best_options: Callable[[Any], dict]


TOPOLOGIES: dict[str, Topology] = {
    "star": Topology(lambda: _backend().Star(), lambda s: {}),
    "ring": Topology(lambda: _backend().Ring(static=False), lambda s: {"p": s.p, "k": s.k}),
}
#: pyswarms' names of its position and velocity handlers (`BoundaryHandler`, `VelocityHandler`)
BOUNDARIES = ("reflective", "nearest", "periodic", "random", "shrink", "intermediate")
VELOCITY_HANDLERS = ("unmodified", "adjust", "invert", "zero")
#: the swarm's arrays the checkpoint keeps, each (particles, dimensions), (particles,), the
#: neighbourhood best (dimensions,) for a star or (particles, dimensions) for a ring, or empty
#: before the first evaluation; its best cost is kept beside them
SWARM_STATE = {"position": "points", "velocity": "points", "pbest_pos": "points", "pbest_cost": "costs",
               "best_pos": "best", "current_cost": "costs"}


class PSOConfig(TunerSettings):
    """``pso``: particle swarm optimisation on pyswarms' backend, stepped one iteration (generation)
    at a time: cost = -fitness, personal bests, the topology's best, new velocities and positions."""

    population_key: ClassVar[str | None] = "particles"
    particles: int = Field(16, ge=2, description="particles (candidates per iteration)")
    iterations: int = Field(10, ge=1, description="iterations (generations), the first included")
    topology: Literal[tuple(TOPOLOGIES)] = Field("star", description="`star`: global best; `ring`: best of the k nearest")
    k: int = Field(3, ge=1, description="ring: neighbours considered")
    p: Literal[1, 2] = Field(2, description="ring: Minkowski norm of the neighbourhood (1 or 2)")
    c1: float = Field(1.5, ge=0, description="cognitive weight (pull to the particle's best)")
    c2: float = Field(1.5, ge=0, description="social weight (pull to the neighbourhood's best)")
    w: float = Field(0.7, ge=0, description="inertia")
    boundary: str = Field("reflective", description=f"position bounds handling: {', '.join(BOUNDARIES)}")
    velocity: str = Field("unmodified", description=f"velocity handling: {', '.join(VELOCITY_HANDLERS)}")
    clamp: float | None = Field(0.25, gt=0, description="most velocity per iteration, as a share of each gene's range (null: none)")
    _boundary = field_validator("boundary")(known("boundary strategy", BOUNDARIES))
    _velocity = field_validator("velocity")(known("velocity strategy", VELOCITY_HANDLERS))

    @model_validator(mode="after")
    def _ring(self):
        if self.topology == "ring" and self.k >= self.particles:
            raise ValueError(f"k: a ring needs fewer neighbours than particles ({self.particles})")
        return self

    def budget(self, dim: int) -> tuple[int, int]:
        return self.iterations, self.particles


@register
class PSO(Tuner):
    """The swarm in the unit cube, one iteration per `ask` and `tell`:

        cost = -fitness of the positions (evaluated by the run loop, like any generation)
        personal bests  <- compute_pbest;  neighbourhood best <- topology.compute_gbest
        velocity <- topology.compute_velocity (c1, c2, w; clamp; velocity handler)
        position <- topology.compute_position (boundary handler)"""

    name = "pso"
    Settings = PSOConfig

    def __init__(self, space, settings, rng, **kw):
        super().__init__(space, settings, rng, **kw)
        self._make_operators()
        self.swarm = None
        d = space.dim
        self.bounds = (np.zeros(d), np.ones(d))
        self.clamp = None if settings.clamp is None else (-settings.clamp, settings.clamp)

    def _make_operators(self) -> None:
        with _quiet_pyswarms():
            self.topology = TOPOLOGIES[self.settings.topology].make()
            self.bh = _backend().BoundaryHandler(strategy=self.settings.boundary)
            self.vh = _backend().VelocityHandler(strategy=self.settings.velocity)

    def state_dict(self) -> dict:
        swarm = None
        if self.swarm is not None:
            swarm = {k: getattr(self.swarm, k) for k in SWARM_STATE}
            swarm["best_cost"] = self.swarm.best_cost
        return {**super().state_dict(), "swarm": swarm, "boundary_memory": self.bh.memory,
                "velocity_memory": self.vh.memory, "neighbors": self.topology.neighbor_idx}

    def load_state(self, f) -> None:
        super().load_state(f)
        n, d = self.settings.particles, self.space.dim
        self.swarm = None
        if f.get("swarm") is not None:
            s = f.sub("swarm")
            shapes = {"points": [(n, d)], "costs": [(n,), (0,)], "best": [(d,), (n, d), (0,)]}
            arrays = {}
            for key, kind in SWARM_STATE.items():
                a = s.array(key, np.float64)
                if a.shape not in shapes[kind]:
                    s.fail(s.name(key), f"an array of shape {' or '.join(map(str, shapes[kind]))}, not {a.shape}")
                arrays[key] = a
            s.float("best_cost", finite=False)  # (checked; kept as saved: a numpy float once evaluated)
            o = self.settings
            self.swarm = _backend().Swarm(n_particles=n, dimensions=d, options={"c1": o.c1, "c2": o.c2, "w": o.w},
                                          best_cost=s.raw("best_cost"), **arrays)
        self.bh.memory = f.optional("boundary_memory", f.array, np.float64, shape=(n, d))
        self.vh.memory = f.optional("velocity_memory", f.array, np.float64, shape=(n, d))
        neighbors = f.optional("neighbors", f.array, shape=(n, None))
        if neighbors is not None and (neighbors.dtype.kind not in "iu" or neighbors.size and (
                neighbors.min() < 0 or neighbors.max() >= n)):
            f.fail("neighbors", f"particle indices below {n}")
        self.topology.neighbor_idx = neighbors

    def ask(self) -> np.ndarray:
        s = self.settings
        if self.swarm is None:
            start = self.space.to_unit(self.initial(s.particles))
            with self.library_random():
                self.swarm = _backend().create_swarm(n_particles=s.particles, dimensions=self.space.dim,
                                          options={"c1": s.c1, "c2": s.c2, "w": s.w}, bounds=self.bounds,
                                          init_pos=start, clamp=self.clamp)
            self.swarm.pbest_cost = np.full(s.particles, np.inf)
        return self.space.from_unit(self.swarm.position)

    def tell(self, fitness: np.ndarray) -> None:
        sw = self.swarm
        sw.current_cost = -np.asarray(fitness, dtype=np.float64)
        with self.library_random():
            sw.pbest_pos, sw.pbest_cost = _backend().compute_pbest(sw)
            options = TOPOLOGIES[self.settings.topology].best_options(self.settings)
            sw.best_pos, sw.best_cost = self.topology.compute_gbest(sw, **options)
            sw.velocity = self.topology.compute_velocity(sw, self.clamp, self.vh, self.bounds)
            sw.position = self.topology.compute_position(sw, self.bounds, self.bh)
        self.generation += 1
