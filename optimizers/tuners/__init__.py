"""The tuners, one module each, registered by name (Optuna's samplers, DEAP's algorithms).

A tuner is a class derived from `optimizers.Tuner` (ask/tell: `ask` the vectors of a
generation, `tell` their fitness) that declares ``name`` (``algorithm: <name>`` in a run config)
and ``Settings`` (a `optimizers._settings.TunerSettings` model: its configuration section, named
after it, with its `budget`), decorated with `register` (``TUNERS.register``: `TUNERS` is an
`engine.registry.Registry`, the idiom of everything found by name). The modules of this package are
discovered, not listed: a new tuner is one module (and its test); the run config's ``algorithm``
key and sections, the run loop and the configuration reference read `TUNERS` (by name).
"""

from __future__ import annotations

from engine.registry import Registry


class TunerError(ValueError):
    """A tuner that cannot be registered, or a name that is not registered."""


def _declared(name: str, cls) -> type:
    """A tuner class as `TUNERS` keeps it: named by its ``name``, with its ``Settings``."""
    if getattr(cls, "name", None) != name or not name.isidentifier():
        raise TunerError(f"{cls.__qualname__}: a tuner needs a name that is an identifier, its class attribute "
                         f"name, got {name!r}")
    if name in TUNERS:
        raise TunerError(f"{cls.__qualname__}: the tuner name {name!r} is taken by {TUNERS[name].__qualname__}")
    if not hasattr(cls, "Settings"):
        raise TunerError(f"{cls.__qualname__}: a tuner declares its Settings model")
    return cls


#: the tuners by name (sorted by name, whatever order their modules registered in)
TUNERS: Registry[type] = Registry("tuner", error=TunerError, entry=_declared, order=lambda name, cls: name)
#: the decorator a tuner class registers with
register = TUNERS.register
#: the tuner class registered as ``name``; `TunerError` naming the known ones otherwise
get = TUNERS.get

TUNERS.discover(__name__)
