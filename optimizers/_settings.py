"""What every configuration section of the tuning run shares: strict models
(`engine.validation.Strict`: an unknown key is an error), the check of a name against a table's
keys, and the base of a tuner's settings."""

from __future__ import annotations

from typing import Any, ClassVar

from engine.validation import Strict


def known(kind: str, names):
    """A pydantic field check: the value is one of ``names`` (a table's keys), else an error naming
    ``kind`` and the known names."""
    def check(cls, v):
        if v not in names:
            raise ValueError(f"unknown {kind} {v!r} (known: {', '.join(names)})")
        return v
    return classmethod(check)


def flat_settings(value: dict[str, Any]) -> dict[str, Any]:
    """Overrides as dotted settings, one each: a nested mapping (as ``rescore.overrides.online.games=4``
    on the command line makes) is the dotted setting ``online.games: 4``, not a new section."""
    flat: dict[str, Any] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict) and node:
            for k, v in node.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        else:
            flat[prefix] = node

    for key, v in value.items():
        walk(str(key), v)
    return flat


class TunerSettings(Strict):
    """A tuner's configuration section (``ga``, ``pso``, ...): its own fields, and `budget`.

    A restart (`optimizers.noise`, the run's ``restart`` section) makes a new tuner of the same
    kind with more candidates per generation: ``population_key`` names the field that holds them
    (None: the tuner cannot be restarted), ``step_key`` the field of its initial step size, a share
    of each range, which a BIPOP small-regime restart scales down (None: only the run's
    ``init_sigma`` is scaled)."""

    population_key: ClassVar[str | None] = None
    step_key: ClassVar[str | None] = None

    def budget(self, dim: int) -> tuple[int, int]:
        """(generations, the first included; candidates per generation) for a space of ``dim`` parameters."""
        raise NotImplementedError

    def with_population(self, n: int, step_scale: float = 1.0) -> "TunerSettings":
        """A copy with ``n`` candidates per generation (``population_key``) and the initial step
        (``step_key``, if any) times ``step_scale``."""
        if self.population_key is None:
            raise ValueError(f"{type(self).__name__}: this tuner has no population a restart could grow")
        update = {self.population_key: int(n)}
        if self.step_key is not None and step_scale != 1.0:
            update[self.step_key] = getattr(self, self.step_key) * step_scale
        return self.model_validate({**self.model_dump(), **update})
