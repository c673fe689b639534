"""Reading a solver configuration file: YAML, dotted overrides, the evaluators it names.

Every problem is one `engine.config.ConfigError` (or `evaluators.EvaluatorError`) line naming the
file, the key and what is wrong. The command lines (`experiments.solve`, `experiments.run`, ...) and
a notebook read configurations through these functions alike.
"""

from __future__ import annotations

from functools import reduce
from pathlib import Path

from engine.config import ConfigError, apply_overrides, holder, load_mapping, locate, resolve_relative, validate
from evaluators import EvaluatorError, load_evaluator

from .config import EVALUATOR_KEYS
from .registry import SolverConfig


def load_solver_config(path: str | Path, overrides: list[str] = ()) -> SolverConfig:
    """A validated solver configuration from a YAML file (`locate`: a shipped one by its name too)
    and dotted overrides."""
    path = locate(path)
    data = load_mapping(path)
    if "space" in data or "algorithm" in data:
        raise ConfigError(f"{path}: a tuning run's config (it has {'space' if 'space' in data else 'algorithm'}), not a "
                          f"solver config: run it with  python -m experiments.run {path}")
    data = apply_overrides(data, list(overrides))
    for key in EVALUATOR_KEYS:
        node, last = holder(data, key)
        if node is not None and last in node:
            node[last] = resolve_relative(node[last], path.parent)
    return validate(SolverConfig, data, str(path))


def load_online_policy(path: str | Path, overrides: list[str] = ()):
    """(config, policy) of a solver YAML whose policy plays unknown pieces (`solver.online`), for the
    programs that see one piece ahead; `ConfigError` (or `EvaluatorError`) when it cannot."""
    from solver import registry
    from solver.online import make_policy

    config = load_solver_config(path, overrides)
    if registry.get(config.policy).known_pieces:
        raise ConfigError(f"{path}: policy: {config.policy!r} needs the whole sequence; a player that sees one "
                          f"piece ahead needs one of {', '.join(registry.names(known_pieces=False))}")
    return config, make_policy(config, load_evaluators(config, str(path)))


def load_evaluators(config: SolverConfig, origin: str):
    """The policy's top-level evaluator, loaded; every other evaluator the policy reads is loaded once
    too, so that a bad one is a one-line `ConfigError` naming ``origin`` and its key rather than an
    error in the middle of the search."""
    loaded = []
    for key in config.evaluator_keys():
        source = reduce(getattr, key.split("."), config)
        if source is None:
            continue
        try:
            loaded.append(load_evaluator(source))
        except EvaluatorError as e:
            raise ConfigError(f"{origin}: {key}: {e}") from None
    return loaded[0]
