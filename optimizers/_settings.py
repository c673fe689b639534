"""What every configuration section of the tuning run shares: strict models (an unknown key is an
error), the check of a name against a table's keys, and the base of a tuner's settings."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def known(kind: str, names):
    """A pydantic field check: the value is one of ``names`` (a table's keys), else an error naming
    ``kind`` and the known names."""
    def check(cls, v):
        if v not in names:
            raise ValueError(f"unknown {kind} {v!r} (known: {', '.join(names)})")
        return v
    return classmethod(check)


class TunerSettings(Strict):
    """A tuner's configuration section (``ga``, ``pso``, ...): its own fields, and `budget`."""

    def budget(self, dim: int) -> tuple[int, int]:
        """(generations, the first included; candidates per generation) for a space of ``dim`` parameters."""
        raise NotImplementedError
