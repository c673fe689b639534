"""The tuners, one module each, registered by name (Optuna's samplers, DEAP's algorithms).

A tuner is a class derived from `optimizers.Optimizer` (ask/tell: `ask` the vectors of a
generation, `tell` their fitness) that declares ``name`` (``algorithm: <name>`` in a run config)
and ``Settings`` (a `optimizers._settings.TunerSettings` model: its configuration section, named
after it, with its `budget`), decorated with `register`. The modules of this package are
discovered, not listed: a new tuner is one module (and its test); the run config's ``algorithm``
key and sections, the run loop and the configuration reference read `TUNERS`.
"""

from __future__ import annotations

import importlib
import pkgutil

TUNERS: dict = {}


class TunerError(ValueError):
    """A tuner that cannot be registered, or a name that is not registered."""


def register(cls):
    """Register the tuner class ``cls`` under ``cls.name`` (a class decorator)."""
    name = getattr(cls, "name", "")
    if not name.isidentifier():
        raise TunerError(f"{cls.__qualname__}: a tuner needs a name that is an identifier, got {name!r}")
    if name in TUNERS and TUNERS[name] is not cls:
        raise TunerError(f"{cls.__qualname__}: the tuner name {name!r} is taken by {TUNERS[name].__qualname__}")
    if not hasattr(cls, "Settings"):
        raise TunerError(f"{cls.__qualname__}: a tuner declares its Settings model")
    TUNERS[name] = cls
    return cls


def get(name: str):
    """The tuner class registered as ``name``."""
    try:
        return TUNERS[name]
    except KeyError:
        raise TunerError(f"unknown tuner {name!r} (known: {', '.join(TUNERS)})") from None


def _discover() -> None:
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    ordered = sorted(TUNERS.items())  # by name, whatever order the modules registered in
    TUNERS.clear()
    TUNERS.update(ordered)


_discover()
