"""Run a tuning: a registered tuner (the config's ``algorithm``) over solver settings.

    python -m experiments.run CONFIG [key=value ...]
    python -m experiments.run --resume RUN_DIR [parallel.n_jobs=N ...]

CONFIG is a run YAML (see configs/ga.yaml); ``key=value`` overrides any dotted key
(``ga.generations=3``). A run writes ``<runs_dir>/<name>-<YYYYmmdd-HHMMSS>/``: config.yaml (the
resolved config), evaluations.csv, generations.csv, best.yaml (run it with python -m
experiments.solve RUN/best.yaml), fitness.png, run.log and checkpoint.npz. An interrupted run
(Ctrl-C, kill) continues with ``--resume RUN_DIR`` from its last finished generation, reading the
evaluations already written back; only ``parallel.*`` may be overridden on resume.
Every problem (a configuration, the runs folder, a dask scheduler, memory, a run's files that
disagree on resume, a run another process holds) is one line ``error: <file>: <key>: <problem>``,
exit status 2, found before anything is made: docs/tuning.md, "Tuning runs" (its guarantees)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.config import ConfigError
from engine.files import Locked, OutputError
from evaluators import EvaluatorError
from engine.parallel import ParallelError
from experiments import interrupts
from optimizers.run import Run, check_cluster, load_resume, load_run_config, make_run_dir, resume, tune
from optimizers.records import RECOMMENDATION
from optimizers.store import RunDamaged
from optimizers.tuners import TUNERS
from experiments import description


def _report(run: Run) -> None:
    b = run.best
    if b is None:
        print(f"no evaluation finished; run directory {run.dir}/")
        return
    what = "re-scored best" if run.state.rescored is not None else "best"
    # numbered from 0 like the per-generation lines ("generation 2 (3 of 5)") and the CSV files
    where = (f"the tuner's mean after generation {b.generation - 1}" if b.index == RECOMMENDATION
             else f"generation {b.generation}, candidate {b.index}")
    print(f"{what} fitness {b.fitness:,.0f} ({where}); "
          f"written to {run.dir}/\n  run it: python -m experiments.solve {run.dir / 'best.yaml'}")
    if run.state.validated is not None:
        print(run.state.validated.sentence())


def main(argv: list[str] | None = None, exiting: bool = False) -> int:
    """The command; its exit status. Ctrl-C or a kill (SIGTERM) stops it at any stage, parsing
    included (`experiments.interrupts`): the run, if one was begun, resumable. ``exiting``: this is
    the command's own process, about to exit with the status returned (a further signal then ends
    it at once with that status)."""
    with interrupts.handled(interrupts.raise_interrupt, restore=not exiting):
        status = _command(argv)
        if exiting:
            with interrupts.blocked():
                interrupts.exit_with(status)
    return status


def _command(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.run", description=description(__doc__),
        epilog="tuners (algorithm: NAME): " + ", ".join(TUNERS.names()))
    parser.add_argument("config", nargs="?", help="run YAML (e.g. configs/ga.yaml)")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="dotted overrides, e.g. ga.generations=3")
    parser.add_argument("--resume", metavar="RUN_DIR", type=Path, help="continue an interrupted run")
    parser.add_argument("--quiet", action="store_true", help="no progress bar or per-generation lines")
    run_dir = None  # the run's directory, once there is one (a resumed run's from the start)
    try:
        args = parser.parse_intermixed_args(argv)
        run_dir = args.resume
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
        check_cluster(config)  # before anything is made
        if args.resume is not None:
            run = resume(args.resume, config=config, quiet=args.quiet)
        else:
            with interrupts.blocked():  # a signal meanwhile is taken once the directory is named
                run_dir = make_run_dir(config)
            if not args.quiet:
                print(f"run directory: {run_dir}/", flush=True)
            run = tune(config, quiet=args.quiet, run_dir=run_dir)
    except KeyboardInterrupt:  # Ctrl-C, or a kill (SIGTERM): workers shut down, the run resumable
        if run_dir is None:
            print("\ninterrupted: nothing made", file=sys.stderr)
        else:
            print(f"\ninterrupted: continue with  python -m experiments.run --resume {run_dir}", file=sys.stderr)
        return 130
    except (OutputError, Locked, RunDamaged, ParallelError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a file of the run that cannot be written (a full disk): the run is resumable
        print(f"error: {run_dir}: {e.strerror or e}; once fixed, continue with  python -m experiments.run "
              f"--resume {run_dir}", file=sys.stderr)
        return 2
    except MemoryError:  # the sizes passed their estimates, but the memory was not there
        print(f"error: {run_dir}: out of memory; with more memory free (or smaller sizes), continue with  "
              f"python -m experiments.run --resume {run_dir}", file=sys.stderr)
        return 2
    _report(run)
    return 0


def command() -> int:
    """The installed command (``tetris-run``): `main` as the process's own."""
    return main(exiting=True)


if __name__ == "__main__":
    sys.exit(command())
