"""Tuning: search spaces over solver settings, fitness with memo and early abort, parallel
evaluation, and the tuners behind one ask/tell base (`optimizers.tuners`, ``algorithm: <name>``):
`ga`, `cmaes`, `pso`, `cem`, `random`, `sha` and `optuna`. The public API (`tune`, `resume`, `Run`,
`saved_state`; for a loop of one's own `load_run_config`, `make_space`, `make_tuner`) is what
`experiments.run` uses; its example: docs/tuning.md, 'From Python'. The modules: `run` (a run from a
configuration), `space` (vector <-> solver config by dotted path), `fitness` (one evaluation, the
memo), `early_abort` (the threshold curve), `tuners` (one module per tuner, `_base.Tuner`,
`_settings.TunerSettings`), `noise` (re-evaluation, growing games, restarts), `instances` (seeded
game blocks, training and held-out sets), `racing` (candidates raced instance by instance),
`validation` (the pick against the start on held-out instances), `heartbeat` (a line while the
kernels compile), `optuna_space` (the space as Optuna's distributions), `objective` (Optuna's own
loop), `config` (the run configuration schema), `store` (the run directory's files, rows typed in
`records`), `state` (the checkpoint), `run_loop` (the run loop, with `generation`, `restore`,
`rescore` and `artifacts`: best.yaml, recommendation.yaml, generations.csv, fitness.png).
"""

__all__ = ["Tuner", "Param", "Run", "RunConfig", "Space", "load_run_config", "make_tuner", "make_space",
           "resolve", "resume", "saved_state", "tune"]

#: where each public name lives, imported on first use: `import optimizers` alone loads neither
#: DEAP nor pyswarms
_LAZY = {"RunConfig": ".config", "Param": ".space", "Space": ".space", "Tuner": "._base",
         "make_tuner": ".run_loop", "make_space": ".run_loop",
         **{name: ".run" for name in ("Run", "load_run_config", "resolve", "resume", "saved_state", "tune")}}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
