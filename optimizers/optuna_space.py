"""The search space as Optuna sees it, shared by the `optuna` tuner and Optuna's own loop
(`optimizers.objective`): each parameter a distribution under its dotted path, and a trial's
parameters back as a vector of the space."""

from __future__ import annotations

import numpy as np


def distributions(space) -> dict:
    """The space as Optuna's distributions, each parameter under its path: a float in [low, high],
    an int, a choice among its values (`choices_of`)."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    out = {}
    for p in space.params:
        if p.type == "float":
            out[p.path] = FloatDistribution(p.lower, p.upper)
        elif p.type == "int":
            out[p.path] = IntDistribution(int(p.low), int(p.high))
        else:
            out[p.path] = CategoricalDistribution(choices_of(p))
    return out


def genes(space, params: dict) -> np.ndarray:
    """A trial's parameters as a vector of the space (a choice as its index)."""
    out = []
    for p in space.params:
        v = params[p.path]
        out.append(float(choices_of(p).index(v)) if p.type == "choice" else float(v))
    return np.array(out, dtype=np.float64)


def choices_of(p) -> tuple:
    """A choice parameter's values as Optuna's categorical choices: the values themselves when they
    are plain and distinct (None, bool, int, float, str), else their indices."""
    plain = all(c is None or isinstance(c, (bool, int, float, str)) for c in p.choices)
    if plain and len({(type(c), c) for c in p.choices}) == len(p.choices):
        return tuple(p.choices)
    return tuple(range(len(p.choices)))

