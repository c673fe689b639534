"""Instances: what a candidate's fitness depends on besides its setting (issue 58).

A policy for unknown pieces is scored on seeded games; an *instance* is a block of them, the
solver's ``online.games`` games from one seed (`InstanceSet`). On the known sequence an instance is
a tie seed (``beam.tie_seed``, ``segment.tie_seed``): the order of the boards of equal value, the
noise a setting's score has there. Candidates that play the same instances are compared on the
same draws (common random numbers), so their differences are paired. A run names two sets: the
race's training instances (`optimizers.racing`) and the held-out ones its pick is validated on
(`optimizers.validation`), which no candidate may have played (`seen_seeds`, checked when the
config is read).
"""

from __future__ import annotations

from dataclasses import dataclass


def first_seed(solver: dict) -> int:
    """The first seed of a solver config's games: its seed, else its rules' own."""
    from engine import get_rules

    base = solver.get("seed")
    if base is None:
        base = get_rules(solver.get("rules", "geek")).pieces.seed
    return int(base)


def games_of(solver: dict) -> int:
    """Games a solver config plays from its seed (``online.games``; 1 when it names none)."""
    return int((solver.get("online") or {}).get("games") or 1)


def generation_seed(solver: dict, g: int) -> int:
    """The first seed generation ``g`` plays under ``games.seeds: per_generation``: the solver's
    seed (else its rules' own) plus ``g`` times its games, so no two generations share a game."""
    return first_seed(solver) + g * games_of(solver)


def instance_setting(solver: dict) -> tuple[str, int]:
    """(the dotted setting an instance sets, its step between two instances) for a solver config:
    the games' seed, a block of ``online.games`` seeds apart, for a policy of seeded games; the
    policy's tie seed (`solver.Policy.tie_seed`), one apart, for one of the known sequence.
    ValueError for a policy of the known sequence without one."""
    from solver import registry

    name = solver.get("policy", "beam")
    entry = registry.get(name)
    if not entry.known_pieces:
        return "seed", games_of(solver)
    if entry.policy.tie_seed is None:
        raise ValueError(f"policy {name!r} plays the known sequence and has no tie seed to draw instances with")
    return entry.policy.tie_seed, 1


def own_instance(solver: dict) -> int:
    """The value of the instance setting a solver config plays by itself (its first seed, or its
    tie seed)."""
    from engine.paths import get_dotted

    setting, _ = instance_setting(solver)
    if setting == "seed":
        return first_seed(solver)
    try:
        return int(get_dotted(solver, setting))
    except (KeyError, TypeError):
        return 0


@dataclass(frozen=True)
class InstanceSet:
    """``count`` instances, instance i the solver config with ``setting`` = ``first + i * step``:
    the ``step`` games from seed ``first + i * step`` (``setting`` "seed"), or tie seed ``first +
    i`` of the known sequence (``beam.tie_seed``, ``segment.tie_seed``)."""

    name: str
    setting: str
    first: int
    step: int
    count: int

    def settings(self, i: int) -> dict:
        """The dotted solver settings that make a config play instance ``i`` (for seeded games, its
        ``step`` games from its seed, whatever the config played before)."""
        if not 0 <= i < self.count:
            raise IndexError(f"{self.name} instance {i}: the set has instances 0 to {self.count - 1}")
        if self.setting == "seed":
            return {"seed": self.first + i * self.step, "online.games": self.step}
        return {self.setting: self.first + i * self.step}

    @property
    def seeds(self) -> range:
        """The values of the setting the set's instances play (every game's seed)."""
        return range(self.first, self.first + self.count * self.step)

    def describe(self) -> str:
        many = "s" if self.count != 1 else ""
        if self.setting != "seed":
            return f"{self.count} {self.name} tie seed{many} ({self.first} to {self.first + self.count - 1})"
        return (f"{self.count} {self.name} instance{many} of {self.step} game{'s' if self.step != 1 else ''} "
                f"(seeds {self.seeds.start} to {self.seeds.stop - 1})")


def seen_seeds(config, solver: dict) -> list[tuple[str, range]]:
    """The values of the instance setting (`instance_setting`) a run's candidates are chosen on,
    by what plays them: the race's training instances (else the solver's own, each generation's
    games under ``games.seeds: per_generation``) and the re-scoring's. ``config`` is the run
    config, ``solver`` its base solver mapping."""
    from .space import with_settings

    setting, step = instance_setting(solver)
    own = own_instance(solver)
    out = []
    if config.race is not None:
        out.append(("race", training(config, solver).seeds))
    elif config.games.seeds == "per_generation" and setting == "seed":
        out.append(("the generations' games", range(own, own + config.generations * step)))
    else:
        out.append(("the solver's games" if setting == "seed" else "the solver's tie seed", range(own, own + step)))
    if config.rescore is not None:
        rescored = with_settings(solver, config.rescore.overrides)
        start = own_instance(rescored)
        out.append(("rescore", range(start, start + instance_setting(rescored)[1])))
    return out


def training(config, solver: dict) -> InstanceSet:
    """The race's training instances: from ``race.seed`` on, else from the solver's own (its first
    seed, or its tie seed)."""
    setting, step = instance_setting(solver)
    first = own_instance(solver) if config.race.seed is None else config.race.seed
    return InstanceSet("training", setting, first, step, training_count(config))


def training_count(config) -> int:
    """The most training instances a racing run's races can open: the first race's, then
    ``new_instances`` a generation (`optimizers.racing.race_order`); 0 without a race."""
    race = config.race
    return 0 if race is None else race.max_instances + config.generations * race.new_instances


def held_out(config, solver: dict) -> InstanceSet:
    """The held-out instances a run's pick and start are validated on (``validation``)."""
    from .space import with_settings

    v = config.validation
    setting, step = instance_setting(with_settings(solver, v.overrides))
    return InstanceSet("held-out", setting, v.seed, step, v.instances)


def check_held_out(config, solver: dict) -> None:
    """ValueError ``validation.seed: ...`` when a held-out seed is one the run's candidates are
    chosen on (`seen_seeds`): a pick validated on its own training games proves nothing."""
    held = held_out(config, solver).seeds
    seen = seen_seeds(config, solver)
    for what, seeds in seen:
        low, high = max(held.start, seeds.start), min(held.stop, seeds.stop)
        if low < high:
            raise ValueError(f"validation.seed: the held-out seeds {held.start} to {held.stop - 1} include seeds "
                             f"{low} to {high - 1}, which {what} plays: choose seeds no candidate is chosen on "
                             f"(from {max(s.stop for _, s in seen)} on, say)")
