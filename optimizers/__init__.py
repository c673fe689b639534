"""Tuning: search spaces over solver settings, fitness with memo and early abort, parallel
evaluation, and the tuners (DEAP's GA, pyswarms' PSO, random search) behind one ask/tell base.

- `space`: parameters by dotted path into the solver config, vector <-> config (`paths`: the one
  dotted-path walker, shared with the command line's overrides);
- `fitness`: one evaluation (a plain dict in, a plain dict out) and the memo;
- `early_abort`: the threshold curve from earlier generations' best finished candidates;
- `parallel`: the map over candidates (in process, joblib loky, dask.distributed);
- `ga`, `pso`, `random_search`: the tuners (`_base.Optimizer`);
- `config`: the run configuration schema; `store`: the run directory's files; `state`: the run's
  state between generations (the checkpoint); `tuner`: the run loop.

`experiments.run` is the command line.
"""

__all__ = ["Param", "RunConfig", "Space"]

#: where each public name lives, imported on first use: the solve and replay commands use
#: `optimizers.paths` alone and need not load DEAP and pyswarms through `config`
_LAZY = {"RunConfig": ".config", "Param": ".space", "Space": ".space"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
