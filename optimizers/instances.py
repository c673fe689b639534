"""Instances: what a candidate's fitness depends on besides its setting (issue 58).

A policy for unknown pieces is scored on seeded games; an *instance* is a block of them, the
solver's ``online.games`` games from one seed (`InstanceSet`). Candidates that play the same
instances are compared on the same pieces (common random numbers), so their differences are
paired. A run names two sets: the race's training instances (`optimizers.racing`) and the held-out
ones its pick is validated on (`optimizers.validation`), which no candidate may have played
(`seen_seeds`, checked when the config is read).
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


@dataclass(frozen=True)
class InstanceSet:
    """``count`` instances, instance i the ``games`` games from seed ``first + i * games``."""

    name: str
    first: int
    games: int
    count: int

    def settings(self, i: int) -> dict:
        """The dotted solver settings that make a config play instance ``i``."""
        if not 0 <= i < self.count:
            raise IndexError(f"{self.name} instance {i}: the set has instances 0 to {self.count - 1}")
        return {"seed": self.first + i * self.games}

    @property
    def seeds(self) -> range:
        return range(self.first, self.first + self.count * self.games)

    def describe(self) -> str:
        return (f"{self.count} {self.name} instance{'s' if self.count != 1 else ''} of {self.games} "
                f"game{'s' if self.games != 1 else ''} (seeds {self.seeds.start} to {self.seeds.stop - 1})")


def seen_seeds(config, solver: dict) -> list[tuple[str, range]]:
    """The game seeds a run's candidates are chosen on, by what plays them: the race's training
    instances (or the solver's seeds, each generation's under ``games.seeds: per_generation``)
    and the re-scoring's. ``config`` is the run config, ``solver`` its base solver mapping."""
    from .space import with_settings

    games, first = games_of(solver), first_seed(solver)
    out = []
    if config.race is not None:
        out.append(("race", training(config, solver).seeds))
    elif config.games.seeds == "per_generation":
        out.append(("the generations' games", range(first, first + config.generations * games)))
    else:
        out.append(("the solver's games", range(first, first + games)))
    if config.rescore is not None:
        rescored = with_settings(solver, config.rescore.overrides)
        start = first_seed(rescored)
        out.append(("rescore", range(start, start + games_of(rescored))))
    return out


def training(config, solver: dict) -> InstanceSet:
    """The race's training instances (``race.seed``, else the solver's first seed, on)."""
    race = config.race
    first = first_seed(solver) if race.seed is None else race.seed
    return InstanceSet("training", first, games_of(solver), race.max_instances)


def held_out(config, solver: dict) -> InstanceSet:
    """The held-out instances a run's pick and start are validated on (``validation``)."""
    from .space import with_settings

    v = config.validation
    played = with_settings(solver, v.overrides)
    return InstanceSet("held-out", v.seed, games_of(played), v.instances)


def check_held_out(config, solver: dict) -> None:
    """ValueError ``validation.seed: ...`` when a held-out seed is one the run's candidates are
    chosen on (`seen_seeds`): a pick validated on its own training games proves nothing."""
    held = held_out(config, solver).seeds
    for what, seeds in seen_seeds(config, solver):
        low, high = max(held.start, seeds.start), min(held.stop, seeds.stop)
        if low < high:
            raise ValueError(f"validation.seed: the held-out seeds {held.start} to {held.stop - 1} include seeds "
                             f"{low} to {high - 1}, which {what} plays: choose seeds no candidate is chosen on "
                             f"(from {max(s.stop for _, s in seen_seeds(config, solver))} on, say)")
