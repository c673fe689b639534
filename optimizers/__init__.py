"""Tuning: search spaces over solver settings, fitness with memo and early abort, parallel
evaluation, and the tuners behind one ask/tell base (`optimizers.tuners`, ``algorithm: <name>``):
`ga` and `cmaes` (DEAP's genetic algorithm and CMA-ES), `pso` (pyswarms' particle swarm), `cem`
(the noisy cross-entropy method), `random` (random search), `sha` (successive halving over
rungs of rising fidelity) and `optuna` (Optuna's TPE and CMA-ES samplers, the study in the run
directory).

The public API (what `experiments.run`, the command line, uses too):

    from optimizers import tune, resume
    run = tune("configs/ga.yaml", ["ga.generations=3"])     # or a mapping of the same keys
    run.best, run.dir, run.evaluations(), run.best_config()
    state = saved_state(run.dir)      # the checkpoint's state: state.optimizer, state.history, ...

    from optimizers import load_run_config, make_space, make_tuner   # a loop of one's own
    config = load_run_config("configs/ga.yaml")
    space = make_space(config); tuner = make_tuner(config, space)
    vectors = tuner.ask(); tuner.tell(fitness_of(vectors))               # space.config(v): a solver config

The modules:

- `run`: a run from a configuration (`tune`, `resume`, `Run`, `load_run_config`, `resolve`);
- `space`: parameters by dotted path into the solver config, vector <-> config (`engine.paths`: the
  one dotted-path walker, shared with the command line's overrides);
- `fitness`: one evaluation (a plain task in, its typed record and curve out) and the memo;
- `early_abort`: the threshold curve from earlier generations' best finished candidates (the map
  over candidates, in process, joblib loky or dask.distributed, is `engine.parallel`);
- `tuners`: the tuners, one module each, registered by name (`_base.Tuner`, their settings
  `_settings.TunerSettings`);
- `noise`: noise handling and restarts on the run loop, for every tuner (re-evaluation with pooled
  means, growing games per candidate, IPOP/BIPOP restarts);
- `instances`: what a fitness depends on besides the setting (blocks of seeded games), the
  training and held-out sets;
- `racing`: a race of candidates instance by instance, the losers dropped by a paired test at a
  stated confidence (irace's F-race, paired t, Wilcoxon), as a generation of the run loop;
- `validation`: the pick and the start played on held-out instances, their paired difference;
- `heartbeat`: a line every few seconds while the kernels compile before a run's first generation;
- `optuna_space`: the space as Optuna's distributions (the `optuna` tuner and `objective`);
- `objective`: Optuna's own loop, ``objective(trial)`` from a run config for ``study.optimize``;
- `config`: the run configuration schema; `store`: the run directory's files, their rows typed in
  `records`; `state`: the run's state between generations (the checkpoint); `run_loop`: the run loop,
  with `generation` (a generation under way), `restore` (what a resume takes back beyond the
  checkpoint), `rescore` (the best candidates played again with final overrides) and `artifacts`
  (best.yaml, recommendation.yaml, generations.csv, fitness.png).
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
