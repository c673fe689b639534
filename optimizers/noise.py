"""Noise handling and restarts on the common run loop, for every tuner: re-evaluation of the
incumbent and the elite with pooled estimates, sample sizes that grow as the population converges
(as noisy CE and UH-CMA-ES do), and IPOP/BIPOP-style restarts of a tuner that stalls.

A candidate scored on seeded games (a policy for unknown pieces) has a noisy fitness: the mean of
its ``online.games`` games (or splitting estimates). Everything here is off by default; the
sections are ``noise`` (`NoiseConfig`, `SamplesConfig`) and ``restart`` (`RestartConfig`) of the
run config, checked against the tuner by `check`. The rules (points and pooled means,
re-evaluation, sample sizes, restarts) are in docs/tuning.md, "Noise handling and restarts".

All of it is the state of `Noise`, saved in the checkpoint beside the tuner, so a resumed run
re-evaluates, grows and restarts as an uninterrupted one. ``noise.csv`` in the run directory has
a row per generation (`NOISE_COLUMNS`).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
from pydantic import Field

from ._base import fidelity
from ._settings import Strict

#: noise.csv's columns: the generation, its tuner's candidates, its games per candidate, the
#: points re-evaluated (added rows) and re-sampled (R), the growth rule's measure (rank: the share
#: of discordant pairs; spread: the generation's spread over one evaluation's noise), whether the
#: size grows, the incumbent's pooled mean and games, and the restart made after it (its number)
NOISE_COLUMNS = ["generation", "candidates", "games", "reevaluated", "resampled", "measure", "grow", "next_games",
                 "incumbent", "incumbent_games", "stalled", "restart", "next_population"]
#: the stream of the run's seed the restarts draw from (BIPOP's U)
RESTART_STREAM = 7_515


class SamplesConfig(Strict):
    """``noise.samples``: games (estimates, under splitting) per candidate, grown as the population
    converges."""

    grow: Literal["never", "rank", "spread"] = Field(
        "never", description="`never`: the solver's `online.games` throughout; `rank`: grow when re-evaluated points "
                             "change order (share of discordant pairs above `tolerance`); `spread`: grow when the "
                             "generation's spread falls below `ratio` x one evaluation's noise")
    factor: float = Field(1.5, gt=1, description="the next size is ceil(size x factor)")
    max: int | None = Field(None, ge=1, description="the largest size (null: none)")
    tolerance: float = Field(0.25, ge=0, lt=1, description="rank: the share of discordant pairs tolerated")
    ratio: float = Field(1.0, gt=0, description="spread: grow when spread < ratio x noise of one evaluation")


class NoiseConfig(Strict):
    """``noise``: candidates of a policy for unknown pieces have a noisy fitness: re-evaluate the
    incumbent and the elite each generation on its new games, pool the estimates (the run's best
    is chosen on the pooled mean), and grow the games per candidate as the population converges
    (off by default; needs `games.seeds: per_generation`)."""

    reevaluate: int = Field(0, ge=0, description="points of highest pooled mean re-evaluated each generation, the "
                                                 "incumbent first (0: none, no pooling)")
    confirm: int = Field(2, ge=1, description="samples a point needs to be the run's best (until one has them: any)")
    samples: SamplesConfig = Field(default_factory=SamplesConfig)

    @property
    def enabled(self) -> bool:
        return self.reevaluate > 0 or self.samples.grow != "never"


class RestartConfig(Strict):
    """``restart``: replace a tuner that stalls by a new one of its kind with a larger population
    (IPOP), or alternately a larger one and a small one with a smaller step (BIPOP); off by
    default."""

    stall: int = Field(0, ge=0, description="generations in a row without improvement that trigger a restart (0: never)")
    tolerance: float = Field(0.0, ge=0, description="an improvement beats the best since the (re)start by more than "
                                                    "tolerance x |that best|")
    strategy: Literal["ipop", "bipop"] = Field("ipop", description="`ipop`: the population x factor at each restart; "
                                                                   "`bipop`: alternately that and a small regime")
    factor: float = Field(2.0, ge=1, description="ipop: the population grows by this factor at each (large) restart")
    start: Literal["random", "point", "best"] = Field(
        "random", description="where a restarted tuner starts: a uniform draw, the run's initial point, the run's best")
    max: int | None = Field(None, ge=1, description="restarts at most (null: no limit)")


def check(config, tuner, known_pieces: bool) -> None:
    """ValueError (``<key>: <problem>``) for noise or restart settings the run cannot honour."""
    noise, restart = config.noise, config.restart
    multi = any(fidelity(tuner).settings_at(g) for g in range(tuner.generations))
    if noise.enabled:
        key = "noise.reevaluate" if noise.reevaluate else "noise.samples.grow"
        if known_pieces:
            raise ValueError(f"{key}: the policy plays the known sequence (no noise to handle); noise settings apply "
                             "to a policy for unknown pieces")
        if config.games.seeds != "per_generation":
            raise ValueError(f"{key}: needs games.seeds: per_generation (with fixed seeds a re-evaluation replays the "
                             "same games)")
        if multi:
            raise ValueError(f"{key}: not with a multi-fidelity tuner ({config.algorithm}: its generations differ in "
                             "settings)")
        least = {"never": 0, "rank": 2, "spread": 1}[noise.samples.grow]
        if noise.reevaluate < least:
            raise ValueError(f"noise.samples.grow: {noise.samples.grow} needs noise.reevaluate >= {least}")
    if restart.stall:
        if type(config.settings).population_key is None or multi:
            raise ValueError(f"restart.stall: the tuner {config.algorithm!r} cannot be restarted")


@dataclass
class Point:
    """A point's samples: its ``values``, games pooled, the games-weighted sums of fitness and
    score, its samples, where it was first evaluated and the last generation that sampled it."""

    values: list
    first: tuple[int, int]
    games: int = 0
    fitness_sum: float = 0.0
    score_sum: float = 0.0
    samples: int = 0
    last: int = -1

    @property
    def mean(self) -> float:
        return self.fitness_sum / self.games

    @property
    def score(self) -> float:
        return self.score_sum / self.games


def point_key(values) -> str:
    return json.dumps(list(values))


class Noise:
    """The state of noise handling and restarts between generations (see the module docstring)."""

    def __init__(self, noise: NoiseConfig, restart: RestartConfig, base_games: int, base_population: int,
                 seed: int):
        self.settings = noise
        self.restart_settings = restart
        self.points: dict[str, Point] = {}
        self.games = int(base_games)  # games per candidate of the next generation
        self.played: list[int] = []  # games per candidate of each finished generation
        self.rows: list[dict] = []  # noise.csv
        self.base_population = int(base_population)
        self.population = int(base_population)  # the current tuner's
        self.restarts = 0
        self.large = 0  # restarts in the large regime (BIPOP; every one under IPOP)
        self.largest = int(base_population)  # the population of the last large regime
        self.since: float | None = None  # the best told fitness since the tuner (re)started
        self.stalled = 0
        self.rng = np.random.default_rng([seed, RESTART_STREAM])

    @classmethod
    def for_run(cls, config, space) -> "Noise | None":
        """The state of a run whose ``noise`` or ``restart`` section is on; None otherwise."""
        if not config.noise.enabled and not config.restart.stall:
            return None
        online = space.base.get("online") or {}
        return cls(config.noise, config.restart, online.get("games", 1), config.population, config.seed)

    # ------------------------------------------------------------------ state (the checkpoint)
    def state_dict(self) -> dict:
        """Everything but the settings (the run's config has them), as data."""
        return {"points": [asdict(p) for p in self.points.values()], "games": self.games, "played": self.played,
                "rows": self.rows, "population": self.population, "restarts": self.restarts, "large": self.large,
                "largest": self.largest, "since": self.since, "stalled": self.stalled,
                "rng": self.rng.bit_generator.state}

    def load_state(self, f) -> None:
        """Take back what `state_dict` saved (`engine.statefile.Fields`)."""
        from ._base import generator

        points = {}
        for p in f.subs("points"):
            first = p.list("first", 2)
            point = Point(values=p.list("values"), first=(p.int("first", 0, value=first[0]),
                                                          p.int("first", 0, value=first[1])),
                          games=p.int("games", 0), fitness_sum=p.float("fitness_sum"),
                          score_sum=p.float("score_sum"), samples=p.int("samples", 0), last=p.int("last", -1))
            points[point_key(point.values)] = point
        self.points = points
        self.games = f.int("games", 1)
        self.played = [f.int("played", 1, value=v) for v in f.list("played")]
        rows = f.list("rows")
        if not all(isinstance(r, dict) and set(r) == set(NOISE_COLUMNS) for r in rows):
            f.fail("rows", f"rows of noise.csv's columns ({', '.join(NOISE_COLUMNS)})")
        self.rows = rows
        self.population = f.int("population", 1)
        self.restarts = f.int("restarts", 0)
        self.large = f.int("large", 0)
        self.largest = f.int("largest", 1)
        self.since = f.optional("since", f.float)
        self.stalled = f.int("stalled", 0)
        self.rng = generator(f, "rng")

    # ------------------------------------------------------------------ settings of a generation
    @property
    def pools(self) -> bool:
        return self.settings.enabled

    @property
    def grows(self) -> bool:
        return self.settings.samples.grow != "never"

    def first_seed(self, base: int, g: int) -> int:
        """The first seed generation ``g`` plays: ``base`` plus the games of the generations before."""
        return int(base) + int(sum(self.played[:g]))

    def next_size(self, games: int) -> int:
        """The size after ``games`` when it grows: ceil(games x factor), at least one more, at most
        ``max`` (never less than ``games``)."""
        bigger = max(games + 1, math.ceil(games * self.settings.samples.factor - 1e-9))
        cap = self.settings.samples.max
        return bigger if cap is None else max(games, min(bigger, cap))

    def elite(self, proposed: set[str]) -> list[list]:
        """The values of the points to re-evaluate: the ``reevaluate`` of highest pooled mean, less
        those the tuner proposed (``proposed``: their keys)."""
        if not self.settings.reevaluate:
            return []
        ranked = sorted((p for p in self.points.values() if p.games), key=lambda p: (-p.mean, p.first))
        return [list(p.values) for p in ranked[: self.settings.reevaluate] if point_key(p.values) not in proposed]

    def best(self) -> Point | None:
        """The run's best point: the highest pooled mean among points of at least ``confirm``
        samples (any point while none has them); ties to the point evaluated first."""
        sampled = [p for p in self.points.values() if p.games]
        if not sampled:
            return None
        confirmed = [p for p in sampled if p.samples >= self.settings.confirm] or sampled
        return min(confirmed, key=lambda p: (-p.mean, p.first))

    def ranked(self) -> list[Point]:
        """Every sampled point, best pooled mean first (ties: evaluated first)."""
        return sorted((p for p in self.points.values() if p.games), key=lambda p: (-p.mean, p.first))

    # ------------------------------------------------------------------ after a generation
    def observe(self, g: int, entries: list[tuple], told: int) -> np.ndarray:
        """Take generation ``g`` in: ``entries`` (index, values, record) of all its candidates, the
        first ``told`` the tuner's. Pools the samples, applies the growth rule and returns the
        fitness to tell the tuner (pooled means, when pooling)."""
        games = self.games
        before = {k: (p.mean, p.games) for k, p in self.points.items() if p.games}
        new: dict[str, float] = {}
        for index, values, record in entries:
            key = point_key(values)
            if record.aborted or key in new or not self.pools:
                continue
            point = self.points.setdefault(key, Point(list(values), (g, index)))
            point.games += games
            point.fitness_sum += games * float(record.fitness)
            point.score_sum += games * float(record.score)
            point.samples += 1
            point.last = g
            new[key] = float(record.fitness)
        resampled = [k for k in new if k in before]
        measure, grow = self._growth(g, entries, told, before, new, resampled, games)
        fitness = []
        for index, values, record in entries[:told]:
            key = point_key(values)
            fitness.append(self.points[key].mean if self.pools and not record.aborted else float(record.fitness))
        self.played.append(games)
        if grow:
            self.games = self.next_size(games)
        best = self.best()
        self.rows.append({"generation": g, "candidates": told, "games": games,
                          "reevaluated": len(entries) - told, "resampled": len(resampled),
                          "measure": measure, "grow": grow, "next_games": self.games,
                          "incumbent": None if best is None else best.mean,
                          "incumbent_games": None if best is None else best.games,
                          "stalled": None, "restart": None, "next_population": self.population})
        return np.asarray(fitness, dtype=np.float64)

    def _growth(self, g, entries, told, before, new, resampled, games) -> tuple[float | None, bool]:
        """(the rule's measure, whether the size grows) after generation ``g``."""
        rule = self.settings.samples.grow
        if rule == "rank":
            pairs = discordant = 0
            for i, a in enumerate(resampled):
                for b in resampled[i + 1:]:
                    dp, dn = before[a][0] - before[b][0], new[a] - new[b]
                    if dp == 0 or dn == 0:
                        continue
                    pairs += 1
                    discordant += (dp > 0) != (dn > 0)
            if not pairs:
                return None, False
            share = discordant / pairs
            return share, share > self.settings.samples.tolerance
        if rule == "spread" and resampled:
            noise_sq = np.mean([(new[k] - before[k][0]) ** 2 / (1.0 / games + 1.0 / before[k][1]) for k in resampled])
            samples = [float(r.fitness) for _, _, r in entries[:told] if not r.aborted]
            if len(samples) < 2 or noise_sq <= 0:
                return None, False
            ratio = float(np.std(samples, ddof=1)) / math.sqrt(noise_sq / games)
            return ratio, ratio < self.settings.samples.ratio
        return None, False

    # ------------------------------------------------------------------ restarts
    def stalls(self, g: int, told_best: float, generations: int) -> bool:
        """Whether the tuner is to be restarted after generation ``g`` (of ``generations``), whose
        best told fitness is ``told_best``."""
        s = self.restart_settings
        if not s.stall:
            return False
        if self.since is None or told_best > self.since + s.tolerance * abs(self.since):
            self.since, self.stalled = told_best, 0
        else:
            self.stalled += 1
        if self.rows and self.rows[-1]["generation"] == g:
            self.rows[-1]["stalled"] = self.stalled
        return (self.stalled >= s.stall and g + 1 < generations
                and (s.max is None or self.restarts < s.max))

    def restarted(self, config, space, best_values, g: int):
        """The tuner that replaces the current one after generation ``g`` (see the module
        docstring), its ``restart`` number set."""
        from .tuners import get as get_tuner

        s = self.restart_settings
        self.restarts += 1
        k = self.restarts
        step = 1.0
        if s.strategy == "ipop" or k % 2 == 1:  # BIPOP: the odd restarts are large, the even ones small
            self.large += 1
            population = math.ceil(self.base_population * s.factor ** self.large - 1e-9)
            self.largest = population
        else:
            u = float(self.rng.uniform())
            population = math.floor(self.base_population * (self.largest / (2 * self.base_population)) ** (u * u))
            step = 10.0 ** (-2 * u)
        population = max(population, self.base_population)
        settings = config.settings.with_population(population, step)
        init, point = ("random", None) if s.start == "random" else ("point", None)
        if s.start == "best" and best_values is not None:
            point = space.encode(best_values)
        tuner = get_tuner(config.algorithm)(space, settings, np.random.default_rng([config.seed, k]), init=init,
                                            init_point=point, init_sigma=config.init_sigma * step)
        tuner.restart = k
        self.population = population
        self.since, self.stalled = None, 0
        if self.rows and self.rows[-1]["generation"] == g:
            self.rows[-1].update(restart=k, next_population=population)
        return tuner
