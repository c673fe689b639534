"""Optuna's own loop over a run config: `Objective` is the ``objective(trial)`` that
``study.optimize`` calls, so Optuna's pruners (median, Hyperband, Wilcoxon...) and its parallel
trials work on the workbench's fitness; `make_study` makes the study (maximize, the metric named).

    config = load_run_config("configs/cmaes_standard_dt_race.yaml")
    study = make_study(config, pruner=optuna.pruners.WilcoxonPruner())
    study.optimize(Objective(config), n_trials=100)   # study.best_params: by dotted path

One trial suggests each parameter of the run's space under its path, then plays instances one a
step (`steps`: the race's training instances, or the solver's own games one at a time), reports
each at its step, stops when the pruner says so, and returns the mean. The run loop
(`optimizers.run.tune`, with the ``optuna`` tuner) is the way with a run directory, checkpoints and
resumption; this objective is the ecosystem's way, the study wherever Optuna keeps it.
In full: docs/tuning.md, 'Optuna's own loop'.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .config import RunConfig, base_solver
from .fitness import Task, canonical, evaluate
from .instances import InstanceSet, first_seed, games_of, instance_setting, own_instance, training
from .space import with_settings


def metric_name(config: RunConfig) -> str:
    """What a run's fitness measures, for a study's metric name (the dashboard's axis)."""
    return metric_of(base_solver(config))


def metric_of(solver: dict) -> str:
    """`metric_name` of a base solver mapping."""
    from solver import registry

    if registry.get(solver.get("policy", "beam")).known_pieces:
        return "score of the sequence"
    return "mean score per game"


def steps(config: RunConfig) -> InstanceSet:
    """The instances a trial plays, one a step (see the module docstring)."""
    solver = base_solver(config)
    if config.race is not None:
        return training(config, solver)
    setting, step = instance_setting(solver)
    if setting == "seed":  # the solver's own games, one a step
        return InstanceSet("game", "seed", first_seed(solver), 1, games_of(solver))
    return InstanceSet("tie seed", setting, own_instance(solver), 1, 1)


def make_study(config: RunConfig, **kw):
    """``optuna.create_study`` for ``config``: maximizing, its metric named (`metric_name`);
    ``kw`` go to ``create_study`` (``storage``, ``sampler``, ``pruner``, ``study_name``...)."""
    import warnings

    import optuna

    study = optuna.create_study(direction="maximize", **kw)
    with warnings.catch_warnings():  # (experimental since Optuna 3.2)
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names([metric_name(config)])
    return study


class Objective:
    """``objective(trial)`` for ``config`` (a `RunConfig`; see the module docstring); ``evaluate``:
    how one solver config is played (`optimizers.fitness.evaluate`'s contract)."""

    def __init__(self, config: RunConfig, evaluate: Callable = evaluate):
        from .run_loop import make_space
        from .optuna_space import distributions

        self.config = config
        self.space = make_space(config)
        self.distributions = distributions(self.space)
        self.instances = steps(config)
        self.evaluate = evaluate

    def values(self, trial) -> list:
        """The trial's point: each parameter suggested under its path, as the space plays it."""
        from .optuna_space import genes

        from optuna.distributions import CategoricalDistribution, IntDistribution

        params = {}
        for path, d in self.distributions.items():
            if isinstance(d, CategoricalDistribution):
                params[path] = trial.suggest_categorical(path, d.choices)
            elif isinstance(d, IntDistribution):
                params[path] = trial.suggest_int(path, d.low, d.high)
            else:
                params[path] = trial.suggest_float(path, d.low, d.high)
        return self.space.played(genes(self.space, params))

    def __call__(self, trial) -> float:
        import optuna

        data = self.space.config(self.values(trial))
        played = []
        for i in range(self.instances.count):
            _, config = canonical(with_settings(data, self.instances.settings(i)))
            task = Task(config, None, 1, self.config.early_abort.aborted_fitness, self.config.games.topout_penalty)
            played.append(self.evaluate(task).record.fitness)
            trial.report(played[-1], i)
            if trial.should_prune():
                raise optuna.TrialPruned(f"stopped after {len(played)} of {self.instances.count} instances")
        return float(np.mean(played))
