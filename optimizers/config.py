"""The tuning run's configuration: one schema for keys, types, defaults and the README's reference.
Files are read by `experiments.run`; this module only validates data.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .ga import CROSSOVERS as _CROSSOVERS, MUTATIONS as _MUTATIONS, SELECTIONS as _SELECTIONS

# the GA's operator names are its tables' keys: an operator is added in `optimizers.ga` alone
SELECTIONS = tuple(_SELECTIONS)
CROSSOVERS = tuple(_CROSSOVERS)
MUTATIONS = tuple(_MUTATIONS)
#: pyswarms' names of its position and velocity handlers (`BoundaryHandler`, `VelocityHandler`)
BOUNDARIES = ("reflective", "nearest", "periodic", "random", "shrink", "intermediate")
VELOCITY_HANDLERS = ("unmodified", "adjust", "invert", "zero")
#: the swarm's topologies (`optimizers.pso.TOPOLOGIES` has one entry for each)
TOPOLOGIES = ("star", "ring")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def _known(kind: str, names: tuple[str, ...]):
    def check(cls, v):
        if v not in names:
            raise ValueError(f"unknown {kind} {v!r} (known: {', '.join(names)})")
        return v
    return check


class ParamSpec(Strict):
    """One tuned parameter (an entry of ``space``)."""

    path: str = Field(description="dotted path into the solver config (`beam.width`, `evaluator.features.holes`)")
    type: Literal["float", "int", "choice"] = Field("float", description="`float` and `int` need low and high, `choice` needs choices")
    low: float | None = Field(None, description="lower bound (float, int)")
    high: float | None = Field(None, description="upper bound (float, int)")
    choices: list[Any] | None = Field(None, description="the values a `choice` takes")
    init: Any = Field(None, description="the initial point's value (default: the solver config's value)")

    @model_validator(mode="after")
    def _bounds(self):
        if self.type == "choice":
            if not self.choices:
                raise ValueError("choices: a choice parameter needs a non-empty list of choices")
            if self.low is not None or self.high is not None:
                raise ValueError("low: a choice parameter has choices, not bounds")
            return self
        if self.choices is not None:
            raise ValueError(f"choices: only a choice parameter has choices (this one is {self.type})")
        for key in ("low", "high"):
            v = getattr(self, key)
            if v is None:
                raise ValueError(f"{key}: missing (a {self.type} parameter needs low and high)")
            if self.type == "int" and v != int(v):
                raise ValueError(f"{key}: an int parameter needs an integer bound, got {v}")
        if self.low > self.high:
            raise ValueError(f"low: low ({self.low:g}) > high ({self.high:g})")
        return self


class SelectionConfig(Strict):
    """``ga.selection``: how parents are picked (DEAP's sel* operators)."""

    name: str = Field("tournament", description=f"one of {', '.join(SELECTIONS)}")
    tournsize: int = Field(3, ge=2, description="tournament size (tournament)")
    _name = field_validator("name")(classmethod(_known("selection operator", SELECTIONS)))


class CrossoverConfig(Strict):
    """``ga.crossover``: how two parents mix (DEAP's cx* operators)."""

    name: str = Field("blend", description=f"one of {', '.join(CROSSOVERS)}")
    alpha: float = Field(0.3, ge=0, description="blend: extent of the interval around the parents")
    indpb: float = Field(0.5, ge=0, le=1, description="uniform: probability of swapping each gene")
    eta: float = Field(15.0, gt=0, description="sbx: crowding degree (high: children near the parents)")
    _name = field_validator("name")(classmethod(_known("crossover operator", CROSSOVERS)))


class MutationConfig(Strict):
    """``ga.mutation``: how a child is perturbed (DEAP's mut* operators)."""

    name: str = Field("gaussian", description=f"one of {', '.join(MUTATIONS)}")
    sigma: float = Field(0.15, gt=0, description="gaussian: standard deviation as a share of each gene's range")
    indpb: float = Field(0.5, ge=0, le=1, description="probability of mutating each gene")
    eta: float = Field(20.0, gt=0, description="polynomial_bounded: crowding degree")
    _name = field_validator("name")(classmethod(_known("mutation operator", MUTATIONS)))


class GAConfig(Strict):
    """``ga``: a generational genetic algorithm on DEAP's operators: elites (the best of the hall of
    fame) are kept, the rest of each generation is selected, then mated with probability ``cxpb``
    and mutated with probability ``mutpb`` (DEAP's varAnd). Genes are clipped to their bounds."""

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


class PSOConfig(Strict):
    """``pso``: particle swarm optimisation on pyswarms' backend, stepped one iteration (generation)
    at a time: cost = -fitness, personal bests, the topology's best, new velocities and positions."""

    particles: int = Field(16, ge=2, description="particles (candidates per iteration)")
    iterations: int = Field(10, ge=1, description="iterations (generations), the first included")
    topology: Literal[TOPOLOGIES] = Field("star", description="`star`: global best; `ring`: best of the k nearest")
    k: int = Field(3, ge=1, description="ring: neighbours considered")
    p: Literal[1, 2] = Field(2, description="ring: Minkowski norm of the neighbourhood (1 or 2)")
    c1: float = Field(1.5, ge=0, description="cognitive weight (pull to the particle's best)")
    c2: float = Field(1.5, ge=0, description="social weight (pull to the neighbourhood's best)")
    w: float = Field(0.7, ge=0, description="inertia")
    boundary: str = Field("reflective", description=f"position bounds handling: {', '.join(BOUNDARIES)}")
    velocity: str = Field("unmodified", description=f"velocity handling: {', '.join(VELOCITY_HANDLERS)}")
    clamp: float | None = Field(0.25, gt=0, description="most velocity per iteration, as a share of each gene's range (null: none)")
    _boundary = field_validator("boundary")(classmethod(_known("boundary strategy", BOUNDARIES)))
    _velocity = field_validator("velocity")(classmethod(_known("velocity strategy", VELOCITY_HANDLERS)))

    @model_validator(mode="after")
    def _ring(self):
        if self.topology == "ring" and self.k >= self.particles:
            raise ValueError(f"k: a ring needs fewer neighbours than particles ({self.particles})")
        return self


class RandomConfig(Strict):
    """``random``: uniform samples of the space, the baseline a tuner must beat at equal budget
    (the first candidate is the initial point unless ``init: random``)."""

    samples: int = Field(16, ge=1, description="candidates per generation")
    generations: int = Field(10, ge=1, description="generations")


class EarlyAbortConfig(Strict):
    """``early_abort``: stop losing candidates early (a pruner, in Optuna's words). Generation g's
    threshold is, at each piece, the K-th best ``best_by_step`` among the K best finished candidates
    of generations before g (or the ``reference`` record's score, if higher), times (1 - ``relative``),
    minus ``margin``; a candidate whose running best falls below it at a checkpoint stops there."""

    enabled: bool = Field(True, description="on/off")
    k: int = Field(20, ge=1, description="K: finished candidates the threshold is built from (none until K have finished)")
    margin: float = Field(1000, ge=0, description="points below the K-th best curve")
    relative: float = Field(
        0.0, ge=0, lt=1,
        description="share of the K-th best curve's value also allowed below it (early leads reverse more often)")
    every: int = Field(1, ge=1, description="checkpoint interval in pieces")
    reference: str | None = Field(
        None, description="a contest record (path relative to this file) whose score after each piece is a floor "
                          "under the K-th best curve, from the first generation on: candidates must keep pace with it "
                          "(null: none)")
    reference_lag: int = Field(
        0, ge=0, description="pieces of slack in the reference's timing: the floor at piece t is its score at piece "
                             "t - reference_lag (a clear made a few pieces after the record's is not a deficit)")
    aborted_fitness: Literal["score_at_abort", "zero"] = Field(
        "score_at_abort", description="fitness of an aborted candidate: its running best at the abort piece, or 0")


class ParallelConfig(Strict):
    """``parallel``: where the candidates of a generation are evaluated."""

    backend: Literal["loky", "dask"] = Field("loky", description="joblib's loky processes, or a dask.distributed cluster")
    n_jobs: int = Field(1, ge=1, description="evaluations at once (loky workers; dask LocalCluster workers)")
    scheduler: str | None = Field(None, description="dask: scheduler address (null: a LocalCluster of n_jobs workers)")
    threads: int | None = Field(None, ge=1, description="numba threads per evaluation (default: 1 when n_jobs > 1, else all cores)")


class RescoreConfig(Strict):
    """``rescore``: re-run the top candidates with final solver overrides (a wider beam, the whole
    sequence); best.yaml is then the best re-scored one."""

    top: int = Field(5, ge=1, description="distinct best candidates re-run")
    overrides: dict[str, Any] = Field(default_factory=dict, description="dotted solver settings, e.g. `{beam.width: 9041, pieces: null}`")


class RunConfig(Strict):
    """A tuning run (`python -m experiments.run CONFIG`)."""

    name: str = Field(description="run name: the run directory is `<runs_dir>/<name>-<YYYYmmdd-HHMMSS>`")
    seed: int = Field(0, description="seed of the run's random generator (everything random derives from it)")
    algorithm: Literal["ga", "pso", "random"] = Field("ga", description="the tuner")
    ga: GAConfig = Field(default_factory=GAConfig)
    pso: PSOConfig = Field(default_factory=PSOConfig)
    random: RandomConfig = Field(default_factory=RandomConfig)
    solver_config: str | None = Field(None, description="the base solver YAML (relative to this file), or give `solver`")
    solver: dict[str, Any] | None = Field(None, description="the base solver config as a mapping (default: the solver defaults)")
    pieces: int | None = Field(None, ge=1, description="pieces each candidate plays (overrides the solver's `pieces`)")
    space: list[ParamSpec] = Field(min_length=1, description="the tuned parameters")
    init: Literal["point", "random"] = Field(
        "point", description="`point`: the initial point and perturbations of it; `random`: uniform samples")
    init_from: str | None = Field(None, description="a solver YAML (e.g. a run's best.yaml) giving the initial point")
    init_sigma: float = Field(0.1, ge=0, description="perturbation of the initial point, as a share of each range")
    early_abort: EarlyAbortConfig = Field(default_factory=EarlyAbortConfig)
    parallel: ParallelConfig = Field(default_factory=ParallelConfig)
    rescore: RescoreConfig | None = Field(None, description="final re-scoring of the top candidates (null: none)")
    runs_dir: str = Field("runs", description="where run directories are created")
    meta: dict[str, Any] | None = Field(None, description="free-form notes; the resolved config.yaml records its sources here")

    @field_validator("name")
    @classmethod
    def _name(cls, v):
        if not v or any(c in v for c in "/\\") or v.strip() != v:
            raise ValueError("a run name is a non-empty word without slashes")
        return v

    @model_validator(mode="after")
    def _one_solver(self):
        if self.solver is not None and self.solver_config is not None:
            raise ValueError("solver: give either solver or solver_config, not both")
        return self

    @property
    def generations(self) -> int:
        return {"ga": self.ga.generations, "pso": self.pso.iterations, "random": self.random.generations}[self.algorithm]

    @property
    def population(self) -> int:
        return {"ga": self.ga.population, "pso": self.pso.particles, "random": self.random.samples}[self.algorithm]
