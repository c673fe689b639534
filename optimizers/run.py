"""A tuning run from a configuration, for a program or a notebook: the command line
(`experiments.run`) is a thin shell around these functions.

- `load_run_config` reads a run YAML (and dotted overrides), `resolve` validates a mapping: the
  solver becomes an inline mapping with its evaluators, the initial point is folded into the space,
  and every problem is one `engine.config.ConfigError` line naming the file and the key;
- `tune` makes the run directory (`make_run_dir`), writes ``config.yaml`` and runs the generations
  (`optimizers.run_loop.RunLoop`); `resume` continues an interrupted run; both return a `Run`, its
  final state typed (`optimizers.state.RunState`), which `saved_state` reads from a run directory;
- for a loop of one's own, `make_space` and `make_tuner` give the space and an ask/tell tuner
  (`optimizers.Tuner`) of a resolved config, and `optimizers.fitness.evaluate` plays one candidate.

The example: docs/tuning.md, 'From Python'.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from engine.config import ConfigError, apply_overrides, holder, load_mapping, locate, resolve_relative, validate
from engine.files import OutputError, cannot_write, make_room, not_a_folder, write_yaml
from engine.paths import PathError
from engine.provenance import project_path
from engine.validation import problem
from evaluators import EvaluatorError, load_evaluator
from solver import SolverConfig, load_solver_config

from ._base import fidelity
from .config import GamesConfig, RunConfig
from .fitness import canonical
from .noise import check as check_noise
from .space import SpaceError, get_path, with_settings
from .state import RunState
from .records import Best, Rescored
from .run_loop import RunLoop, make_tuner, make_space


def _path(value: str, base: Path) -> Path:
    p = Path(value)
    if not p.is_absolute() and (base / p).exists():
        return base / p
    return p


def _solver_dict(config: SolverConfig, origin: str, key: str, base_dir: Path) -> dict:
    """A solver config as a mapping with its evaluators inline (the tuned weights live there)."""
    data = config.model_dump(mode="json")
    for dotted in config.evaluator_keys():  # every evaluator the policy reads, so its weights can be tuned
        node, last = holder(data, dotted)
        source = node[last]
        if source is None:
            continue
        if isinstance(source, str):
            source = resolve_relative(source, base_dir)
        try:
            node[last] = load_evaluator(source).to_dict()
        except EvaluatorError as e:
            raise ConfigError(f"{origin}: {key}.{dotted}: {e}") from None
    return data


def _reference(value: str, solver: dict, origin: str, base_dir: Path) -> str:
    """``early_abort.reference`` as the resolved config records it, once the engine has accepted the
    record: by its path from the checkout for a file of the project (``results/<name>/record.txt``,
    whichever folder the run starts in, so that the run directory names no path of the machine
    and resumes in another checkout), else absolute."""
    from .early_abort import reference_curve

    path = _path(value, base_dir)
    if not path.is_file():
        raise ConfigError(f"{origin}: early_abort.reference: no such file: {value}")
    try:
        reference_curve(path.resolve(), solver["rules"])
    except ValueError as e:
        raise ConfigError(f"{origin}: early_abort.reference: {e}") from None
    return project_path(path)


def resolve(data: dict, origin: str, base_dir: Path) -> RunConfig:
    """The validated, self-contained run config: the solver as an inline mapping (its evaluator
    too), the initial point folded into ``space[].init``; every problem is a one-line ConfigError."""
    config = validate(RunConfig, data, origin)
    sources: dict[str, Any] = {"run_config": project_path(origin)}  # named by best.yaml and its solves
    def solver_file(key: str, value) -> tuple[Path, dict]:
        """The solver config file named by ``key`` as an inline mapping (errors name the key)."""
        path = _path(value, base_dir)
        try:
            loaded = load_solver_config(path)
        except ConfigError as e:
            raise ConfigError(f"{origin}: {key}: {e}") from None
        return path, _solver_dict(loaded, origin, key, path.parent)

    if config.solver_config is not None:
        path, base = solver_file("solver_config", config.solver_config)
        sources["solver_config"] = str(path)
    else:
        solver = config.solver if config.solver is not None else validate(SolverConfig, {}, origin, "solver")
        base = _solver_dict(solver, origin, "solver", base_dir)
    if config.games != GamesConfig():
        from solver import registry

        if registry.get(base["policy"]).known_pieces:
            key = "games.seeds" if config.games.seeds != "fixed" else "games.topout_penalty"
            raise ConfigError(f"{origin}: {key}: the policy {base['policy']!r} plays the known sequence, not seeded "
                              "games (games settings apply to a policy for unknown pieces)")
    space_data = [s.model_dump() for s in config.space]
    if config.init_from is not None:
        path, start_data = solver_file("init_from", config.init_from)
        for s in space_data:
            try:
                s["init"] = get_path(start_data, s["path"])
            except (KeyError, TypeError):
                pass
        sources["init_from"] = str(path)
    resolved = config.model_dump(mode="json")
    resolved.update(solver=base, solver_config=None, init_from=None, space=space_data)
    if config.early_abort.reference is not None:
        resolved["early_abort"]["reference"] = _reference(config.early_abort.reference, base, origin, base_dir)
    if sources:
        resolved["meta"] = {**(resolved.get("meta") or {}), "resolved_from": sources}
    config = validate(RunConfig, resolved, origin)
    try:
        space = make_space(config)
    except SpaceError as e:
        raise ConfigError(f"{origin}: {e}") from None
    # every corner of the space must be a valid solver config
    for i, p in enumerate(space.params):
        corners = [("low", p.decode(p.lower)), ("high", p.decode(p.upper))] if p.type != "choice" else \
            [(f"choices.{j}", c) for j, c in enumerate(p.choices)]
        for what, value in corners:
            values = list(space.init_values)
            values[i] = value
            try:
                canonical(space.config(values))
            except ValidationError as e:
                key, msg = problem(e)
                raise ConfigError(f"{origin}: space.{i}.{what}: {p.path} = {value} makes the solver config "
                                  f"invalid ({key}: {msg})") from None
            except EvaluatorError as e:
                raise ConfigError(f"{origin}: space.{i}.{what}: {e}") from None
    try:
        canonical(space.config(space.init_values))
    except ValidationError as e:
        key, msg = problem(e)
        raise ConfigError(f"{origin}: space: the initial point makes the solver config invalid ({key}: {msg})") from None
    if config.rescore is not None:
        try:
            canonical(with_settings(space.config(space.init_values), config.rescore.overrides))
        except ValidationError as e:
            key, msg = problem(e)
            raise ConfigError(f"{origin}: rescore.overrides: {key}: {msg}") from None
        except PathError as e:
            raise ConfigError(f"{origin}: rescore.overrides: {e}") from None
        except (AttributeError, TypeError, KeyError) as e:
            raise ConfigError(f"{origin}: rescore.overrides: cannot apply ({e})") from None
    try:
        tuner = make_tuner(config, space)
    except SpaceError as e:
        raise ConfigError(f"{origin}: {e}") from None
    if config.noise.enabled or config.restart.stall:
        from solver import registry

        try:
            check_noise(config, tuner, registry.get(base["policy"]).known_pieces)
        except ValueError as e:
            raise ConfigError(f"{origin}: {e}") from None
    for g in range(tuner.generations):  # a multi-fidelity tuner's settings per generation (rung)
        rung = fidelity(tuner).settings_at(g)
        if not rung:
            continue
        where = f"{origin}: {config.algorithm}: the settings of generation {g} ({rung})"
        try:
            canonical(with_settings(space.config(space.init_values), rung))
        except ValidationError as e:
            key, msg = problem(e)
            raise ConfigError(f"{where}: {key}: {msg}") from None
        except (PathError, AttributeError, TypeError, KeyError) as e:
            raise ConfigError(f"{where}: cannot apply ({e})") from None
    if config.parallel.backend == "dask":
        try:
            import dask.distributed  # noqa: F401
        except ImportError:
            raise ConfigError(f"{origin}: parallel.backend: dask is not installed (pip install -e \".[dask]\")") from None
    return config


def load_run_config(path: str | Path, overrides: list[str] = ()) -> RunConfig:
    """A resolved run config from a run YAML (`locate`: a shipped one by its name too) and dotted
    overrides."""
    path = locate(path)
    data = load_mapping(path)
    if "space" not in data and "name" not in data and ("policy" in data or "evaluator" in data):
        raise ConfigError(f"{path}: a solver config (it has {'policy' if 'policy' in data else 'evaluator'} and no "
                          f"space), not a tuning run's: play it with  python -m experiments.solve {path}")
    data = apply_overrides(data, list(overrides))
    return resolve(data, str(path), path.parent)


#: names tried for a new run directory in one second (``-2``, ``-3``, ...)
RUN_DIR_ATTEMPTS = 1000


def make_run_dir(config: RunConfig) -> Path:
    """A new run directory ``<runs_dir>/<name>-<YYYYmmdd-HHMMSS>`` (``-2``, ``-3``, ... when taken:
    each made with an exclusive mkdir, so two runs started in the same second get two). `OutputError`
    (one line) when ``runs_dir`` is not a folder, cannot be written or has under `OUTPUT_MIN_FREE`
    free; nothing is made then."""
    root = Path(config.runs_dir)
    label = f"runs_dir {root}"
    up = root if root.exists() and not root.is_dir() else not_a_folder(root)
    if up is not None:
        raise OutputError(f"{label}: {up} is not a folder")
    try:
        make_room(root, label)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for n in range(1, RUN_DIR_ATTEMPTS + 1):
            run_dir = root / (f"{config.name}-{stamp}" + (f"-{n}" if n > 1 else ""))
            try:
                run_dir.mkdir()
                return run_dir
            except FileExistsError:
                continue
        raise OutputError(f"runs_dir {root}: {RUN_DIR_ATTEMPTS} runs named {config.name}-{stamp} exist already")
    except OutputError:
        raise
    except OSError as e:
        raise cannot_write(label, e) from None


def check_cluster(config: RunConfig) -> None:
    """With a dask scheduler: that it answers, and that every worker imports this project, of the
    same sources (`engine.parallel.check_scheduler`: `ParallelError` otherwise, in one line)."""
    from engine.parallel import check_scheduler

    check_scheduler(config.parallel)


@dataclass(frozen=True)
class Run:
    """A finished (or stopped) tuning run: its directory, its resolved config and its final state."""

    dir: Path
    config: RunConfig
    state: RunState

    @property
    def best(self) -> Best | Rescored | None:
        """The best candidate (re-scored, when the run re-scores): its fitness, score, generation,
        index, key and values; None when no evaluation finished."""
        return self.state.rescored or self.state.best

    def best_config(self) -> SolverConfig | None:
        """The exported ``best.yaml`` as a solver config (play it with `solver.solve`)."""
        path = self.dir / "best.yaml"
        return load_solver_config(path) if path.is_file() else None

    def evaluations(self):
        """``evaluations.csv`` as a pandas DataFrame: one row per candidate of every generation."""
        import pandas as pd

        return pd.read_csv(self.dir / "evaluations.csv")

    def generations(self):
        """``generations.csv`` as a pandas DataFrame: one row per generation (best, mean, ...)."""
        import pandas as pd

        return pd.read_csv(self.dir / "generations.csv")


def as_run_config(config: RunConfig | dict | str | Path, overrides: list[str] = (), base_dir: Path | None = None,
                  ) -> RunConfig:
    """A resolved run config from a run YAML's path (`load_run_config`), a mapping of the same keys
    (relative file names read from ``base_dir``, by default the working directory) or an already
    resolved `RunConfig` (overrides are then not allowed)."""
    if isinstance(config, RunConfig):
        if overrides:
            raise ConfigError("overrides: give them with a file or a mapping, not a resolved RunConfig")
        return config
    if isinstance(config, dict):
        return resolve(apply_overrides(config, list(overrides), "overrides"), "config", Path(base_dir or "."))
    return load_run_config(config, overrides)


def tune(config: RunConfig | dict | str | Path, overrides: list[str] = (), *, quiet: bool = True,
         run_dir: Path | None = None, on_evaluation: Callable | None = None, base_dir: Path | None = None) -> Run:
    """Run a tuning to its end: make the run directory (unless given, made by `make_run_dir`), write
    ``config.yaml``, run the generations and write every artifact (`optimizers.run_loop.RunLoop`).
    ``config`` as `as_run_config` reads it; ``on_evaluation`` is called with each finished
    `optimizers.records.Evaluation`. Interrupted (KeyboardInterrupt), the run directory holds a
    resumable run (`resume`). A config.yaml that cannot be written is an `OutputError`, and the new
    directory is removed."""
    config = as_run_config(config, overrides, base_dir)
    run_dir = run_dir or make_run_dir(config)
    try:
        write_yaml(run_dir / "config.yaml", config.model_dump(mode="json"),
                   header=f"# the resolved configuration of run {run_dir.name}; resume with:\n"
                          f"#   python -m experiments.run --resume {run_dir}")
    except OSError as e:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise cannot_write(str(run_dir), e) from None
    state = RunLoop(config, run_dir, quiet=quiet, on_evaluation=on_evaluation).run()
    return Run(run_dir, config, state)


def load_resume(run_dir: str | Path, overrides: list[str] = ()) -> RunConfig:
    """The config of the run in ``run_dir`` (its ``config.yaml``), with ``parallel.*`` overrides only:
    the run must end as it would have."""
    run_dir = Path(run_dir)
    path = run_dir / "config.yaml"
    if not run_dir.is_dir():
        raise ConfigError(f"{run_dir}: no such run directory")
    for item in overrides:
        key = item.partition("=")[0].strip()
        if not key.startswith("parallel."):
            raise ConfigError(f"command line: {key}: only parallel.* may change when resuming (the run must "
                              "end as it would have)")
    written = load_mapping(path)
    validate(RunConfig, written, str(path))
    data = apply_overrides(written, list(overrides))
    return validate(RunConfig, data, str(path))


def saved_state(run_dir: str | Path) -> RunState:
    """The state of the run in ``run_dir`` as its checkpoint holds it (`optimizers.state.RunState`:
    the tuner, the early abort, the statistics, the best), made again from its config.yaml and
    checkpoint.npz without running anything; `RunDamaged` or `ConfigError` in one line when they
    cannot be read."""
    from .store import RunDamaged, RunStore

    run_dir = Path(run_dir)
    config = load_resume(run_dir)
    space = make_space(config)
    store = RunStore(run_dir, space.params)
    tree = store.load_checkpoint()
    if tree is None:
        raise RunDamaged(f"{store.checkpoint}: file not found (the run has no checkpoint yet)")
    return RunState.from_checkpoint(tree, store, config, space)


def resume(run_dir: str | Path, overrides: list[str] = (), *, quiet: bool = True,
           on_evaluation: Callable | None = None, config: RunConfig | None = None) -> Run:
    """Continue the interrupted run in ``run_dir`` from its last finished generation, reading the
    evaluations already written back; it ends exactly as an uninterrupted run would have.
    ``config``: the run's config already read by `load_resume` (else read here)."""
    config = config or load_resume(run_dir, overrides)
    state = RunLoop(config, Path(run_dir), quiet=quiet, on_evaluation=on_evaluation).run(resume=True)
    return Run(Path(run_dir), config, state)
