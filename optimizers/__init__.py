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

from .config import RunConfig
from .space import Param, Space

__all__ = ["Param", "RunConfig", "Space"]
