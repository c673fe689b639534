"""The tuning run's configuration: one schema for keys, types, defaults and the configuration
reference. Files are read by `optimizers.run`; this module only validates data.

`RunConfig` holds the keys every run has (`RunKeys`) and, assembled from the registry of tuners
(`optimizers.tuners`), the ``algorithm`` key (one of the registered names) and one section per
tuner, named after it: its ``Settings``.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, create_model, field_validator, model_validator

from engine.parallel import ParallelConfig
from engine.validation import INT_LIMIT, out_of_range
from solver import SolverConfig

from ._settings import Strict, TunerSettings, flat_settings
from .noise import NoiseConfig, RestartConfig
from .racing import RaceConfig
from .tuners import TUNERS
from .validation import ValidationConfig


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
            if self.type == "int" and not -INT_LIMIT <= v < INT_LIMIT:
                raise ValueError(f"{key}: {out_of_range(f'{v:g}')}")
        if self.low > self.high:
            raise ValueError(f"low: low ({self.low:g}) > high ({self.high:g})")
        if not math.isfinite(self.high - self.low):  # (the tuners scale genes by the range)
            raise ValueError(f"high: the range from {self.low:g} to {self.high:g} is wider than a float holds")
        return self


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
    lag: int = Field(
        0, ge=0, description="pieces of slack in the K-th best curve's timing: its floor at piece t is its value at piece "
                             "t - lag, so a candidate that stores cells for a later, bigger clear (a high cell floor) is "
                             "not stopped before its first clear")
    reference_lag: int = Field(
        0, ge=0, description="pieces of slack in the reference's timing: the floor at piece t is its score at piece "
                             "t - reference_lag (a clear made a few pieces after the record's is not a deficit)")
    aborted_fitness: Literal["score_at_abort", "zero"] = Field(
        "score_at_abort", description="fitness of an aborted candidate: its running best at the abort piece, or 0")


class GamesConfig(Strict):
    """``games``: how candidates of a policy for unknown pieces (scored on the solver's
    ``online.games`` seeded games, capped at ``pieces``) are compared. Every candidate of a
    generation plays the same seeds (common random numbers), so their differences are the
    policies', not the pieces'."""

    seeds: Literal["fixed", "per_generation"] = Field(
        "fixed", description="`fixed`: every generation plays the solver's seeds (seed, seed + 1, ...); `per_generation`: "
                             "generation g plays seeds seed + g x games, ...: new games each generation, so a lucky "
                             "candidate carried over (an elite) is scored again on them")
    topout_penalty: float = Field(
        0.0, ge=0, description="points taken from the fitness times the share of games lost before the cap: a fitness "
                               "that sees survival, which a short cap rewards too little")


class RescoreConfig(Strict):
    """``rescore``: re-run the top candidates with final solver overrides (a wider beam, the whole
    sequence); best.yaml is then the best re-scored one."""

    top: int = Field(5, ge=1, description="distinct best candidates re-run")
    recommendation: bool = Field(
        True, description="re-run the tuner's recommendation too, the mean of its search distribution at the end "
                          "(`cmaes`, `cem`; other tuners have none), beside the top candidates: on a noisy fitness "
                          "the best draws are partly lucky ones")
    overrides: dict[str, Any] = Field(
        default_factory=dict,
        description="dotted solver settings, e.g. `{beam.width: 9041, pieces: null}`; each sets one setting "
                    "(a nested mapping, as `rescore.overrides.online.games=4` on the command line makes, "
                    "means `online.games: 4`, not a new `online` section)")

    @field_validator("overrides")
    @classmethod
    def _one_setting_each(cls, value: dict[str, Any]) -> dict[str, Any]:
        return flat_settings(value)


class RunKeys(Strict):
    """A tuning run (`python -m experiments.run CONFIG`)."""

    name: str = Field(description="run name: the run directory is `<runs_dir>/<name>-<YYYYmmdd-HHMMSS>`")
    seed: int = Field(0, ge=0, description="seed of the run's random generator (everything random derives from it)")
    solver_config: str | None = Field(None, description="the base solver YAML (relative to this file), or give `solver`")
    solver: SolverConfig | None = Field(None, description="the base solver config as a mapping (default: the solver defaults)")
    pieces: int | None = Field(None, ge=1, description="pieces each candidate plays (overrides the solver's `pieces`)")
    space: list[ParamSpec] = Field(min_length=1, description="the tuned parameters")
    normalize: list[str] = Field(
        default_factory=list, description="space paths (float parameters, two or more) scaled together to the initial "
                                          "point's norm in every candidate: for a policy that ranks placements by a "
                                          "linear evaluator, whose argmax ignores the weights' scale; "
                                          "evaluations.csv and best.yaml record the scaled values")
    init: Literal["point", "random"] = Field(
        "point", description="`point`: the initial point and perturbations of it; `random`: uniform samples")
    init_from: str | None = Field(None, description="a solver YAML (e.g. a run's best.yaml) giving the initial point")
    init_sigma: float = Field(0.1, ge=0, description="perturbation of the initial point, as a share of each range")
    early_abort: EarlyAbortConfig = Field(default_factory=EarlyAbortConfig)
    games: GamesConfig = Field(default_factory=GamesConfig)
    noise: NoiseConfig = Field(default_factory=NoiseConfig)
    restart: RestartConfig = Field(default_factory=RestartConfig)
    parallel: ParallelConfig = Field(default_factory=ParallelConfig)
    rescore: RescoreConfig | None = Field(None, description="final re-scoring of the top candidates (null: none)")
    race: RaceConfig | None = Field(
        None, description="race each generation's candidates and the elites on shared training instances, dropping "
                          "the losers by a paired test (null: each candidate plays once)")
    validation: ValidationConfig | None = Field(
        None, description="at the end, play the pick and the start on held-out instances and state their paired "
                          "difference (null: none)")
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

    @model_validator(mode="after")
    def _instances(self):
        """A race needs seeded games and a loop that tells candidates apart by the race alone; held-out
        instances must be ones no candidate is chosen on (`optimizers.instances.check_held_out`)."""
        if getattr(self, "algorithm", None) is None:
            return self
        if getattr(self.settings, "pruner", "none") != "none" and self.race is None:
            raise ValueError(f"{self.algorithm}.pruner: needs a race section (its instances are the pruner's steps)")
        if self.race is None and self.validation is None:
            return self
        from solver import registry

        from .instances import instance_setting

        solver = base_solver(self)
        try:
            registry.get(solver.get("policy", "beam"))
        except registry.PolicyError:
            return self  # (the solver config's own check names it)
        section = "race" if self.race is not None else "validation"
        if any(p.path == "policy" for p in self.space):
            raise ValueError(f"{section}: the policy is tuned (space: policy): its instances would differ from "
                             "candidate to candidate")
        try:
            seeded = instance_setting(solver)[0] == "seed"
        except ValueError as e:
            raise ValueError(f"{section}: {e}") from None
        if self.race is not None:
            from ._base import is_multi_fidelity

            clashes = [("noise", self.noise.enabled), ("restart", bool(self.restart.stall)),
                       ("early_abort.enabled", self.early_abort.enabled and seeded),
                       ("early_abort.reference", self.early_abort.enabled and self.early_abort.reference is not None),
                       ("rescore", self.rescore is not None),
                       ("games.seeds", self.games.seeds == "per_generation"),
                       ("algorithm", is_multi_fidelity(TUNERS[self.algorithm]))]
            for key, on in clashes:
                if on:
                    raise ValueError(f"race: does not go with {key} ({RACE_CLASHES[key]})")
        if self.validation is not None:
            from .instances import check_held_out

            check_held_out(self, solver)
        return self

    @model_validator(mode="after")
    def _fits_memory(self):
        """Refuse a population whose run would need more memory than there is (`engine.memory`;
        measured: 6.5 KB a candidate of a generation under way, its solver config and task, and
        1 KB an evaluation for the rest of the run, with its curve of 8 bytes a piece in the memo)."""
        from engine.memory import Need, check

        if getattr(self, "algorithm", None) is None:
            return self
        generations, population = self.generations, self.population
        from solver import registry

        solver = base_solver(self)
        try:  # a candidate's curve: a value per piece, or per game for a policy of unknown pieces
            online = not registry.get(solver.get("policy", "beam")).known_pieces
        except registry.PolicyError:
            online = False
        pieces = ((solver.get("online") or {}).get("games") or 1) if online else \
            (self.pieces or solver.get("pieces") or 10_000)
        settings = self.settings
        field = getattr(settings, "population_key", None) or next(
            (k for k in ("population", "particles", "samples", "candidates") if k in type(settings).model_fields), None)
        now = population * (6656 + 64 * len(self.space))
        kept = generations * population * (1024 + 8 * int(pieces))
        if kept > now and generations > population:  # the run's length is what costs
            field = next((k for k in ("generations", "iterations") if k in type(settings).model_fields), field)
        key = f"{self.algorithm}.{field}" if field else self.algorithm
        check([Need(key, f"{population:,} candidates a generation over {generations:,} generations", now + kept)])
        return self

    @property
    def settings(self) -> TunerSettings:
        """The chosen tuner's section."""
        return getattr(self, self.algorithm)

    @property
    def generations(self) -> int:
        return self.settings.budget(len(self.space))[0]

    @property
    def population(self) -> int:
        """Candidates per generation."""
        return self.settings.budget(len(self.space))[1]


#: why a race refuses each of these keys
RACE_CLASHES = {
    "noise": "a race compares candidates on shared instances instead of pooling re-evaluations",
    "restart": "a restart's population is not raced",
    "early_abort.enabled": "on seeded games a candidate's curve has a value per game, no piece to stop at; set "
                           "early_abort.enabled: false (on the known sequence a race holds a candidate to the "
                           "incumbent's curve on the same tie seed)",
    "early_abort.reference": "a race holds a candidate to the incumbent's curve on the same tie seed, not to a record",
    "rescore": "the race's survivors are its re-scoring; validate the pick with a validation section",
    "games.seeds": "a race plays its own training instances; set games.seeds: fixed",
    "algorithm": "a multi-fidelity tuner changes the fidelity between generations",
}

#: the default tuner
DEFAULT_ALGORITHM = "ga"

RunConfig = create_model(
    "RunConfig", __base__=RunKeys, __module__=__name__, __doc__=RunKeys.__doc__,
    algorithm=(Literal[tuple(TUNERS)], Field(DEFAULT_ALGORITHM, description="the tuner: " + ", ".join(TUNERS))),
    **{name: (cls.Settings, Field(default_factory=cls.Settings, description=(cls.Settings.__doc__ or "").split("\n")[0]))
       for name, cls in TUNERS.items()},
)


def base_solver(config: RunConfig) -> dict:
    """The resolved config's base solver mapping, with the run's ``pieces`` applied."""
    base = config.solver.model_dump(mode="json") if config.solver is not None else {}
    if config.pieces is not None:
        base["pieces"] = config.pieces
    return base
