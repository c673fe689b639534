"""Racing: candidates evaluated instance by instance on the same instances (common random numbers,
so differences are paired), the losers dropped by a paired test at a stated confidence, so that the
budget goes to the candidates still in the race (irace's F-race, Birattari et al. 2002; its
elitist form, López-Ibáñez et al. 2016).

The paired tests (`TESTS`, the ``test`` key): `friedman`, `paired_t` (``t``) and `wilcoxon`.
`survivors` decides on the table of the alive candidates' results alone and `Race.step` asks
what the next test needs, so a race resumed from its results written down makes the same decisions
as one never stopped; the best of the table is never dropped, and a candidate goes only by a test.
`race_order` gives a race's training instances, new ones first; `Racing` runs a generation of the
run loop as a race; `RaceConfig` is the ``race`` section.

The race, step by step, and the sections it refuses: docs/tuning.md, 'Racing and validated picks'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Literal, Protocol

import numpy as np
from pydantic import Field, model_validator

from engine.registry import Registry

from ._settings import Strict

#: the paired tests by name: ``test(table, confidence, holm) -> indices of the candidates kept``
TESTS: Registry[Callable] = Registry("paired test")
#: a dropped candidate is told the survivors' lowest mean less this share of it (at least of 1),
#: once more for each dropped candidate before it in the race's order (`Race.fitness`)
DROPPED_GAP = 1e-9


# ------------------------------------------------------------------------------------------------
# The paired tests: ``table`` is (candidates, instances), higher better


def _ranks(table: np.ndarray) -> np.ndarray:
    """Each instance's ranks of the candidates, 1 for the best, ties averaged."""
    from scipy.stats import rankdata

    return rankdata(-table, axis=0, method="average")


@TESTS.register("friedman")
def friedman(table: np.ndarray, confidence: float, holm: bool = True) -> np.ndarray:
    """The candidates Friedman's test and Conover's post-hoc keep, higher fitness better: ranks
    within each instance (ties averaged), Friedman's statistic over the instances in Conover's
    form; when it rejects at level 1 - ``confidence``, each candidate whose rank sum is farther from
    the best's than Conover's post-hoc bound is dropped. With two candidates, `wilcoxon`, as irace
    does."""
    from scipy.stats import chi2
    from scipy.stats import t as student

    k, n = table.shape
    if k == 2:
        return wilcoxon(table, confidence, holm)
    ranks = _ranks(table)
    sums = ranks.sum(axis=1)
    a = float((ranks ** 2).sum())
    c = n * k * (k + 1) ** 2 / 4.0
    if a - c <= 0:  # every instance ties every candidate: nothing tells them apart
        return np.arange(k)
    statistic = (k - 1) * float(((sums - n * (k + 1) / 2.0) ** 2).sum()) / (a - c)
    alpha = 1.0 - confidence
    if chi2.sf(statistic, k - 1) >= alpha:
        return np.arange(k)
    dof = (n - 1) * (k - 1)
    spread = 2.0 * (n * a - float((sums ** 2).sum())) / dof
    bound = student.ppf(1.0 - alpha / 2.0, dof) * math.sqrt(max(spread, 0.0))
    best = sums.min()
    return np.flatnonzero(sums - best <= bound)


def _against_best(table: np.ndarray, confidence: float, holm: bool, p_value: Callable) -> np.ndarray:
    """The candidates kept when each is tested against the one of best mean, ``p_value(d)`` the
    one-sided p-value that the differences ``d`` (best minus it) are above 0."""
    k = table.shape[0]
    best = int(np.argmax(table.mean(axis=1)))
    others = [j for j in range(k) if j != best]
    p = np.array([p_value(table[best] - table[j]) for j in others])
    alpha = 1.0 - confidence
    dropped = np.zeros(len(others), bool)
    if holm:  # step-down: the smallest p first, at alpha / m, alpha / (m - 1), ...
        for step, i in enumerate(np.argsort(p, kind="stable")):
            if p[i] >= alpha / (len(others) - step):
                break
            dropped[i] = True
    else:
        dropped = p < alpha
    kept = [best] + [j for j, d in zip(others, dropped) if not d]
    return np.array(sorted(kept))


def _t_p(d: np.ndarray) -> float:
    from scipy.stats import t as student

    n = len(d)
    mean, sd = float(d.mean()), float(d.std(ddof=1)) if n > 1 else 0.0
    if sd == 0.0:
        return 0.0 if mean > 0 else 1.0
    return float(student.sf(mean / (sd / math.sqrt(n)), n - 1))


def _wilcoxon_p(d: np.ndarray) -> float:
    from scipy.stats import wilcoxon as signed_rank

    if not np.any(d != 0):
        return 1.0
    return float(signed_rank(d, zero_method="zsplit", alternative="greater").pvalue)


@TESTS.register("t")
def paired_t(table: np.ndarray, confidence: float, holm: bool = True) -> np.ndarray:
    """The candidates a one-sided paired t-test against the one of best mean does not drop, at
    level 1 - ``confidence`` (``holm``: the levels corrected across the candidates)."""
    return _against_best(table, confidence, holm, _t_p)


@TESTS.register("wilcoxon")
def wilcoxon(table: np.ndarray, confidence: float, holm: bool = True) -> np.ndarray:
    """The candidates Wilcoxon's signed-rank test against the best does not drop."""
    return _against_best(table, confidence, holm, _wilcoxon_p)


class RaceConfig(Strict):
    """``race``: candidates scored instance by instance, the losers dropped by a paired test."""

    test: Literal[tuple(TESTS)] = Field(
        "friedman", description="`friedman`: Friedman's test and Conover's post-hoc (irace's F-race); `t`: paired "
                                "t-tests against the best; `wilcoxon`: signed-rank tests against the best")
    confidence: float = Field(0.95, gt=0.5, lt=1, description="the confidence at which a candidate is dropped")
    first_test: int = Field(5, ge=2, description="instances every candidate plays before the first test")
    each_test: int = Field(1, ge=1, description="instances between two tests after the first")
    max_instances: int = Field(20, ge=1, description="instances a race plays at most")
    survivors: int = Field(1, ge=1, description="the race stops once this many candidates are left; the best this "
                                                "many of those left are the next race's elites")
    holm: bool = Field(True, description="t, wilcoxon: Holm's correction of the levels across the candidates")
    new_instances: int = Field(
        1, ge=0, description="instances no earlier race played that each race plays first, before those the elites "
                             "know (irace's T_new), so the incumbent keeps meeting new draws; 0: every race plays the "
                             "training instances from the first")
    seed: int | None = Field(None, ge=0, description="the first training instance: instance i plays the solver's "
                                                      "online.games games from seed + i x games, or, on the known "
                                                      "sequence, tie seed seed + i (null: the solver's seed, or its "
                                                      "tie seed)")

    @model_validator(mode="after")
    def _sizes(self):
        if self.first_test > self.max_instances:
            raise ValueError(f"first_test: at most max_instances ({self.max_instances})")
        return self


def survivors(table: np.ndarray, settings: RaceConfig) -> np.ndarray:
    """The rows of ``table`` (alive candidates x instances played) the configured test keeps."""
    table = np.asarray(table, dtype=np.float64)
    if table.shape[0] <= 1:
        return np.arange(table.shape[0])
    return TESTS[settings.test](table, settings.confidence, settings.holm)


# ------------------------------------------------------------------------------------------------
# One race


@dataclass
class Race:
    """A race over ``candidates`` (any labels; the elites first), its ``results`` a mapping
    (candidate, instance) -> fitness filled as evaluations finish. `step` says which evaluations
    the race needs next (none: it is over); every decision is made from the results alone."""

    candidates: list
    settings: RaceConfig
    results: dict = field(default_factory=dict)
    #: the round each dropped candidate was dropped after
    dropped: dict = field(default_factory=dict)
    #: ``decide(alive, table) -> indices kept`` in place of the configured test (a tuner's own
    #: pruner, `Racing`), and ``keep_going``: the race goes on to its last instance whoever is left
    decide: Callable | None = None
    keep_going: bool = False
    #: each test's decision, by (instances played, the candidates tested): a result once known never
    #: changes, so a decision is made once however often `step` replays the race
    _decisions: dict = field(default_factory=dict, repr=False)

    def step(self) -> list[tuple]:
        """The (candidate, instance) pairs to evaluate next, every one the race needs before its next
        test (a batch for the pool); [] when the race is over. Replays the decisions from round 1,
        so it depends only on `results`."""
        s = self.settings
        alive = list(self.candidates)
        self.dropped = {}
        need = []
        least = 0 if self.keep_going else s.survivors  # the race stops once this many are left
        for r in range(s.max_instances):
            need += [(c, r) for c in alive if (c, r) not in self.results]
            played = r + 1
            if played >= s.first_test and (played - s.first_test) % s.each_test == 0 and len(alive) > least:
                if need:
                    return need
                at = (played, tuple(alive))
                if at not in self._decisions:
                    table = np.array([[self.results[(c, i)] for i in range(played)] for c in alive])
                    kept = survivors(table, s) if self.decide is None else self.decide(alive, table)
                    self._decisions[at] = frozenset(np.asarray(kept, dtype=np.int64).tolist())
                kept = self._decisions[at]
                for j, c in enumerate(alive):
                    if j not in kept:
                        self.dropped[c] = played
                alive = [c for j, c in enumerate(alive) if j in kept]
            if len(alive) <= least:
                break
        self.alive = alive
        return need

    def mean(self, candidate) -> float:
        """The candidate's mean over the instances it played."""
        values = [v for (c, _), v in self.results.items() if c == candidate]
        return float(np.mean(values))

    def fitness(self) -> dict:
        """What a tuner is told of each candidate once the race is over: a survivor its mean over
        the instances it played; a dropped one a value just below every survivor's, the later it was
        dropped (then the higher its mean) the higher, so that the order told is the race's."""
        if self.step():
            raise ValueError("the race is not over")
        out = {c: self.mean(c) for c in self.alive}
        floor = min(out.values()) if out else max(self.mean(c) for c in self.dropped)  # (a pruner may stop all)
        gap = DROPPED_GAP * max(1.0, abs(floor))
        order = sorted(self.dropped, key=lambda c: (-self.dropped[c], -self.mean(c)))
        for k, c in enumerate(order):
            out[c] = floor - gap * (k + 1)
        return {c: out[c] for c in self.candidates}

    @property
    def evaluations(self) -> int:
        return len(self.results)

    def standing(self) -> list:
        """The candidates left, best mean first (the race's order on ties)."""
        if self.step():
            raise ValueError("the race is not over")
        order = {c: j for j, c in enumerate(self.candidates)}
        return sorted(self.alive, key=lambda c: (-self.mean(c), order[c]))

    @property
    def instances(self) -> int:
        """Instances the race played (those its last candidates played)."""
        return 1 + max(i for _, i in self.results) if self.results else 0


# ------------------------------------------------------------------------------------------------
# A race as a generation of the run loop


def race_order(seen: int, settings: RaceConfig) -> list[int]:
    """The training instances a race plays, round by round, when the races before it played
    instances 0 .. ``seen`` - 1: ``new_instances`` never played, then the earlier ones in their
    order, then further new ones, ``max_instances`` in all."""
    fresh = list(range(seen, seen + settings.new_instances))
    rest = range(seen + settings.new_instances, seen + settings.new_instances + settings.max_instances)
    return (fresh + list(range(seen)) + list(rest))[: settings.max_instances]


@dataclass
class Entrant:
    """A candidate of a race: its played ``values`` and where it was proposed (``generation``,
    ``index`` among that generation's proposals)."""

    values: list
    generation: int
    index: int


class PrunesTrials(Protocol):
    """A tuner whose own pruner, not the race's test, stops its trials (``prunes``; the `optuna`
    tuner with ``pruner: wilcoxon``): it races without elites, each trial to the last instance
    unless `prune` stops it, and the run's best is the best winner of all its races."""

    prunes: bool

    def prune(self, index: int, values) -> bool:
        """Whether proposal ``index`` of the generation stops after its results ``values``."""


class Racing:
    """The run loop's racing generation (`optimizers.run_loop.RunLoop` is one): the tuner's proposals and
    the elites raced on the training instances (`optimizers.instances.training`), each race step's
    evaluations one batch on the pool through the memo; the tuner is told `Race.fitness`, the elites
    are the race's best survivors (kept in the checkpoint, `RunState.elites`)."""

    def race_generation(self, pool, g: int) -> None:
        import time

        from .fitness import canonical
        from .generation import Candidate, Generation
        from .instances import training
        from .noise import point_key
        from .space import with_settings

        started = time.perf_counter()
        tuner = self.state.optimizer
        proposals = [self.space.played(v) for v in tuner.ask()]
        mine = {point_key(v) for v in proposals}
        prunes = getattr(tuner, "prunes", False)  # the tuner's own pruner decides (`PrunesTrials`): no elites
        elites = [] if prunes else [e for e in self.state.elites if point_key(e.values) not in mine]
        entrants = elites + [Entrant(list(v), g, i) for i, v in enumerate(proposals)]

        def by_pruner(alive, table):
            return [j for j, c in enumerate(alive) if not tuner.prune(c, table[j])]

        race = Race(list(range(len(entrants))), self.config.race, decide=by_pruner if prunes else None,
                    keep_going=prunes)
        instances = training(self.config, self.space.base)
        order = race_order(self.state.instances_seen, self.config.race)  # round r plays instance order[r]
        gen = Generation(g, [], None, None, started, len(proposals), race=race, entrants=entrants)
        base = [self.candidate_config(e.values, g) for e in entrants]
        keys: dict[tuple, tuple] = {}

        def keyed(c, r):
            """(key, config) of entrant ``c`` on round ``r``'s instance, made once."""
            if (c, r) not in keys:
                keys[(c, r)] = canonical(with_settings(base[c], instances.settings(order[r])))
            return keys[(c, r)]

        # the early abort on the known sequence: each candidate held to the incumbent's curve on the same instance
        against = elites and not prunes and self.config.early_abort.enabled and instances.setting != "seed"
        # the incumbent's results a threshold may be built from: those of finished generations, and those
        # of this race's earlier steps (not what a stopped sitting added: a resumed race holds its candidates
        # to the same thresholds as one never stopped)
        earlier = {e.key for e in self.evaluations.values() if e.generation < g and not e.record.aborted}

        def threshold(c, r):
            key = keyed(0, r)[0]
            if not against or c == 0 or (key not in earlier and (0, r) not in race.results):
                return None
            return self.incumbent_threshold(key)

        with self._progress(gen) as bar:
            while need := race.step():
                if against:
                    self._recover_curves(pool, Generation(g, [Candidate(-1, [], *keyed(0, r)) for r in {r for _, r in need}],
                                                          None, None, started))
                batch = [Candidate(len(gen.candidates) + j, entrants[c].values, *keyed(c, r), threshold=threshold(c, r))
                         for j, (c, r) in enumerate(need)]
                gen.extend(batch)
                bar.total += len(batch)
                bar.refresh()
                pending = self.settle_known(gen, bar, batch)
                self.simulate(pool, gen, pending, bar)
                for (c, r), cand in zip(need, batch):
                    race.results[(c, r)] = gen.records[cand.index].fitness
        gen.instances_seen = max([self.state.instances_seen] + [order[r] + 1 for _, r in race.results])
        self.conclude(gen)

    def incumbent_threshold(self, key: str):
        """The threshold of the early abort against the incumbent's result ``key`` on an instance
        (`EarlyAbort.against`): None when that result is not known, or was itself cut short."""
        if key not in self.memo:
            return None
        record, curve = self.memo.entries[key]
        return None if record.aborted else self.state.early_abort.against(curve)

    def race_outcome(self, gen) -> tuple:
        """(fitness told to the tuner, each proposal's mean over the instances it played, where each
        trial its pruner stopped stopped (else None), the new elites, the race's winner as `Best`, a
        line for the log) of a finished racing generation."""
        from .fitness import canonical
        from .records import Best

        race, entrants = gen.race, gen.entrants
        first = len(entrants) - gen.told  # the proposals follow the elites
        told = race.fitness()
        fitness = np.array([told[c] for c in range(first, len(entrants))])
        means = np.array([race.mean(c) for c in range(first, len(entrants))])
        standing = race.standing()
        prunes = getattr(self.state.optimizer, "prunes", False)
        # a trial its pruner stopped is told so (at its last instance), the others their value
        stopped = [race.dropped[c] - 1 if prunes and c in race.dropped else None for c in range(first, len(entrants))]
        elites = [] if prunes else [entrants[c] for c in standing[: self.config.race.survivors]]
        line = (f" | race: {len(race.results)} evaluations on {race.instances} instances, {len(race.alive)} of "
                f"{len(entrants)} left")
        if not standing:  # the pruner stopped every trial: the best so far stands
            return fitness, means, stopped, elites, self.state.best, line
        w = standing[0]
        winner = entrants[w]
        scores = [gen.records[cand.index].score for cand in gen.candidates if cand.values == winner.values]
        best = Best(fitness=race.mean(w), score=int(round(float(np.mean(scores)))), generation=winner.generation,
                    index=winner.index, key=canonical(self.candidate_config(winner.values, gen.number))[0],
                    values=list(winner.values))
        before = self.state.best
        if prunes and before is not None and before.fitness >= best.fitness:
            best = before  # no elites: the run's best is the best winner of every race
        return fitness, means, stopped, elites, best, line
