"""Run a tuning: a GA, a particle swarm or random search over solver settings.

    python -m experiments.run CONFIG [key=value ...]
    python -m experiments.run --resume RUN_DIR [parallel.n_jobs=N ...]

CONFIG is a run YAML (see configs/ga.yaml); ``key=value`` overrides any dotted key
(``ga.generations=3``). A run writes ``<runs_dir>/<name>-<YYYYmmdd-HHMMSS>/``: config.yaml (the
resolved config), evaluations.csv, generations.csv, best.yaml (run it with python -m
experiments.solve RUN/best.yaml), fitness.png, run.log and checkpoint.pkl. An interrupted run
(Ctrl-C, kill) continues with ``--resume RUN_DIR`` from its last finished generation, reading the
evaluations already written back; only ``parallel.*`` may be overridden on resume.

Every configuration problem is found before the run directory is created and reported as one line
``error: <file>: <key>: <problem>`` (exit status 2); so is a ``runs_dir`` that is not a folder,
cannot be written or has under 32 MB free, and a dask scheduler that does not answer in 10 s or
has a worker that cannot import this project (or runs other sources of it): nothing is made then. Two runs started in the same
second get two directories. A process holds ``run.lock`` in its run directory while it works there:
a ``--resume`` of a run that is still running is refused (exit status 2), and the lock goes with
the process, however it ends. A resume refuses a run whose files disagree: a checkpoint.pkl that
cannot be read, or an evaluations.csv lacking rows the checkpoint counts (a damaged, edited or
deleted file); the message says which and how to go on.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engine.files import Locked, OutputError, cannot_write, make_room, not_a_folder, write_yaml
from engine.validation import problem
from evaluators import EvaluatorError, load_evaluator
from optimizers.config import RunConfig
from optimizers.parallel import ParallelError
from optimizers.store import RunDamaged
from solver import SolverConfig

from .config import ConfigError, apply_overrides, holder, load_mapping, locate, resolve_relative, validate
from .solve import load_solver_config


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


def _reference(value: str, solver: dict, origin: str, base_dir: Path) -> Path:
    """``early_abort.reference`` as an absolute path, once the engine has accepted the record."""
    from optimizers.early_abort import reference_curve

    path = _path(value, base_dir)
    if not path.is_file():
        raise ConfigError(f"{origin}: early_abort.reference: no such file: {value}")
    try:
        reference_curve(path, solver["rules"])
    except ValueError as e:
        raise ConfigError(f"{origin}: early_abort.reference: {e}") from None
    return path.resolve()


def resolve(data: dict, origin: str, base_dir: Path) -> RunConfig:
    """The validated, self-contained run config: the solver as an inline mapping (its evaluator
    too), the initial point folded into ``space[].init``; every problem is a one-line ConfigError."""
    from optimizers.fitness import canonical
    from optimizers.paths import PathError
    from optimizers.space import SpaceError, get_path, with_settings
    from optimizers.tuner import make_optimizer, make_space

    config = validate(RunConfig, data, origin)
    sources: dict[str, Any] = {}
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
        solver = validate(SolverConfig, config.solver or {}, origin, "solver")
        base = _solver_dict(solver, origin, "solver", base_dir)
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
        resolved["early_abort"]["reference"] = str(_reference(config.early_abort.reference, base, origin, base_dir))
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
        make_optimizer(config, space)
    except SpaceError as e:
        raise ConfigError(f"{origin}: {e}") from None
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
    data = apply_overrides(load_mapping(path), list(overrides))
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
    same sources (`ParallelError` otherwise, one line naming the scheduler or the worker)."""
    if config.parallel.backend != "dask" or not config.parallel.scheduler:
        return
    from optimizers.parallel import check_workers, connect

    client = connect(config.parallel.scheduler)
    try:
        check_workers(client)
    finally:
        client.close()


def start(config: RunConfig, quiet: bool = False, on_evaluation=None, run_dir: Path | None = None):
    """Make the run directory (unless given, made by `make_run_dir`), write config.yaml and run;
    returns (run_dir, final state). A config.yaml that cannot be written is an `OutputError`, and
    the new directory is removed."""
    from optimizers.tuner import Tuner

    run_dir = run_dir or make_run_dir(config)
    try:
        write_yaml(run_dir / "config.yaml", config.model_dump(mode="json"),
                   header=f"# the resolved configuration of run {run_dir.name}; resume with:\n"
                          f"#   python -m experiments.run --resume {run_dir}")
    except OSError as e:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise cannot_write(str(run_dir), e) from None
    tuner = Tuner(config, run_dir, quiet=quiet, on_evaluation=on_evaluation)
    return run_dir, tuner.run()


def load_resume(run_dir: str | Path, overrides: list[str] = ()) -> RunConfig:
    run_dir = Path(run_dir)
    path = run_dir / "config.yaml"
    if not run_dir.is_dir():
        raise ConfigError(f"{run_dir}: no such run directory")
    for item in overrides:
        key = item.partition("=")[0].strip()
        if not key.startswith("parallel."):
            raise ConfigError(f"command line: {key}: only parallel.* may change when resuming (the run must "
                              "end as it would have)")
    data = apply_overrides(load_mapping(path), list(overrides))
    return validate(RunConfig, data, str(path))


def resume(run_dir: str | Path, config: RunConfig | None = None, quiet: bool = False, on_evaluation=None):
    from optimizers.tuner import Tuner

    config = config or load_resume(run_dir)
    return Tuner(config, Path(run_dir), quiet=quiet, on_evaluation=on_evaluation).run(resume=True)


def _report(run_dir: Path, state: dict) -> None:
    best, rescored = state.get("best"), state.get("rescored")
    if best is None:
        print(f"no evaluation finished; run directory {run_dir}/")
        return
    b = rescored or best
    what = "re-scored best" if rescored else "best"
    print(f"{what} fitness {b['fitness']:,.0f} (generation {b['generation'] + 1}, candidate {b['index']}); "
          f"written to {run_dir}/\n  run it: python -m experiments.solve {run_dir / 'best.yaml'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.run", description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", help="run YAML (e.g. configs/ga.yaml)")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="dotted overrides, e.g. ga.generations=3")
    parser.add_argument("--resume", metavar="RUN_DIR", type=Path, help="continue an interrupted run")
    parser.add_argument("--quiet", action="store_true", help="no progress bar or per-generation lines")
    args = parser.parse_intermixed_args(argv)
    overrides = list(args.overrides)
    if args.config and "=" in args.config and args.resume is not None:
        overrides.insert(0, args.config)
        args.config = None
    try:
        if args.resume is not None:
            if args.config:
                raise ConfigError(f"command line: {args.config}: give either CONFIG or --resume RUN_DIR, not both")
            config = load_resume(args.resume, overrides)
        else:
            if not args.config:
                parser.error("CONFIG or --resume RUN_DIR is required")
            config = load_run_config(args.config, overrides)
    except (ConfigError, EvaluatorError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    run_dir = args.resume

    def stop(signum, frame):  # a plain kill stops like Ctrl-C: workers shut down, the run resumable
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        check_cluster(config)  # before anything is made
        if args.resume is not None:
            state = resume(args.resume, config, quiet=args.quiet)
        else:
            run_dir = make_run_dir(config)
            if not args.quiet:
                print(f"run directory: {run_dir}/", flush=True)
            run_dir, state = start(config, quiet=args.quiet, run_dir=run_dir)
    except KeyboardInterrupt:
        print(f"\ninterrupted: continue with  python -m experiments.run --resume {run_dir}", file=sys.stderr)
        return 130
    except (OutputError, Locked, RunDamaged, ParallelError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a file of the run that cannot be written (a full disk): the run is resumable
        print(f"error: {run_dir}: {e.strerror or e}; once fixed, continue with  python -m experiments.run "
              f"--resume {run_dir}", file=sys.stderr)
        return 2
    _report(run_dir, state)
    return 0


if __name__ == "__main__":
    sys.exit(main())
