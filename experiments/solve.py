"""Play the sequence with a solver configuration and write the contest record.

    python -m experiments.solve CONFIG [--pieces N] [--out DIR] [key=value ...]

CONFIG is a solver YAML (see configs/solve/beam.yaml) or the best.yaml a tuning run exports;
``key=value`` overrides any dotted key (``beam.width=100``). Writes DIR/record.txt, DIR/replay.js,
DIR/submit.js (the contest's console lines) and DIR/summary.json, after the project's replayer has
confirmed the record's score, as one set (`engine.files.OutputSet`) under the lock ``DIR.lock``
(`engine.files.FolderLock`). A policy for unknown pieces plays ``online.games`` seeded games
instead (or splitting estimates, `solver.online.splitting`) and writes the summary. A resumable
policy (``segment``) saves its search in ``DIR.checkpoint.npz``; ``--resume DIR`` continues it.
Every problem is one line, exit status 2, before the search; Ctrl-C or SIGTERM writes the best path
so far (exit status 130). The folder, the lock, interrupts, memory checks and resuming in full:
docs/policies.md, "The command"."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from engine import Stop, replay_line, upload_line
from engine.config import ConfigError, locate
from engine.files import FolderLock, Locked, OutputError, OutputSet
from engine.parallel import ParallelConfig, ParallelError, check_scheduler
from engine.provenance import provenance
from experiments import interrupts
from solver import SolverConfig, registry, solve
from solver._base import CheckpointError
from solver.online import GamesSeries, SplittingSeries
from solver.files import load_evaluators, load_solver_config
from solver.result import solve_summary
from experiments import description


#: the files a solve writes into its folder (an ``--out`` holding others is refused)
OUTPUT_FILES = frozenset({"record.txt", "replay.js", "submit.js", "summary.json"})


def write_solution(out: OutputSet, result, config: SolverConfig) -> None:
    """The record, the two console lines and the summary (only the summary for seeded games), put in
    place as one set."""
    if result.record is not None:
        out.write_text("record.txt", result.record + "\n")
        out.write_text("replay.js", replay_line(result.record) + "\n")
        out.write_text("submit.js", upload_line(result.record, result.score) + "\n")
    out.write_json("summary.json", solve_summary(result, config, provenance()))  # (the schema it is read by)
    out.commit()


def default_out(config_path: str) -> Path:
    """``solves/<config>-<date>-<time>-<pid>``: two solves started in the same second differ."""
    return Path("solves") / f"{Path(config_path).stem}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"


#: seconds between two progress lines when the output is not a terminal (a log file)
LOG_EVERY = 30.0


@contextmanager
def progress_bar(desc: str, shown: bool):
    """A `solver.Progress` drawing a tqdm bar (pieces, best score) on a terminal, erased on
    leaving (the report's line then says how the solve ended, with no finished bar above it); on a log (stderr not a terminal) a plain line at once and then every `LOG_EVERY`
    seconds; None when not ``shown`` (tqdm is then not even imported)."""
    if not shown:
        yield None
        return
    if not sys.stderr.isatty():  # a log: a plain line now and then, not a bar redrawn in place
        last = [-LOG_EVERY]

        def line(done: int, total: int, best: int) -> None:
            now = time.monotonic()
            if now - last[0] >= LOG_EVERY or done >= total:
                last[0] = now
                print(f"{desc}: piece {done:,} of {total:,}, score {best:,}", file=sys.stderr, flush=True)

        yield line
        return
    from tqdm import tqdm

    bar = tqdm(total=None, unit="piece", desc=desc, dynamic_ncols=True, leave=False)

    def progress(done: int, total: int, best: int) -> None:
        bar.total = total
        bar.update(done - bar.n)
        bar.set_postfix_str(f"score {best:,}", refresh=False)

    try:
        yield progress
    finally:
        bar.close()


def tuned_rules(config, path) -> str | None:
    """The rules a tuning run's best.yaml or recommendation.yaml (``meta.source: tuning run``) was
    tuned on (the file's own ``rules``, before any override); None for another config."""
    from engine.config import load_mapping

    if not isinstance(config.meta, dict) or config.meta.get("source") != "tuning run":
        return None
    return load_mapping(locate(path)).get("rules", "geek")


def checkpoint_path(out: Path) -> Path:
    """Where a resumable policy's search writing to ``out`` is saved: ``<out>.checkpoint.npz``."""
    return out.with_name(out.name + ".checkpoint.npz")


def lock_name(out: Path) -> str:
    """The lock file beside ``out`` that the process solving into it holds: ``<out>.lock``."""
    return out.name + ".lock"


def checkpoint_for(config: SolverConfig, out: Path, resume: bool) -> Path | None:
    """The checkpoint file of a solve into ``out``: None for a policy that cannot resume; with
    ``resume`` it must exist, without it it must not (a new search never overwrites a saved one).
    `ConfigError` otherwise."""
    entry = registry.get(config.policy)
    path = checkpoint_path(out)
    if not getattr(entry.policy, "resumable", False):  # (online policies have no Policy base)
        if resume:
            raise ConfigError(f"--resume: policy {config.policy!r} cannot resume a search (it saves none)")
        return None
    legacy = path.with_suffix(".pkl")
    if not path.exists() and legacy.exists():
        from engine.statefile import legacy_problem

        raise ConfigError(f"{legacy}: {legacy_problem(legacy)}")
    if resume and not path.exists():
        raise ConfigError(f"--resume {out}: no saved search there ({path} does not exist)")
    if not resume and path.exists():
        raise ConfigError(f"{path} holds a saved search: continue it with --resume {out} (a finished one writes "
                          "its result again), or remove it to start over")
    return path


def main(argv: list[str] | None = None, exiting: bool = False) -> int:
    """The command; its exit status. Ctrl-C and SIGTERM stop it at any stage, parsing included
    (`AfterTheSearch`, `experiments.interrupts`). ``exiting``: this is the command's own process,
    about to exit with the status returned (a further signal then ends it at once with that
    status)."""
    end = AfterTheSearch()
    with interrupts.handled(end.handle, restore=not exiting):
        try:
            status = _command(argv, end)
        except KeyboardInterrupt:  # before the search was over, at any stage
            print("interrupted: nothing written", file=sys.stderr)
            status = 130
        with interrupts.blocked():  # a signal from here on is held for the status, or ends the process with it
            status = end.status(status)
            if exiting:
                interrupts.exit_with(status)
    return status


def _command(argv: list[str] | None, end: "AfterTheSearch") -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.solve", description=description(__doc__))
    parser.add_argument("config", help="solver YAML or a run's best.yaml")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="dotted overrides, e.g. beam.width=100")
    parser.add_argument("--pieces", type=int, help="play only the first N pieces")
    parser.add_argument("--out", type=Path, help="output folder: a new one, or one holding an earlier solve's files, "
                                                 "which are replaced as a set (default: solves/<config>-<time>-<pid>)")
    parser.add_argument("--resume", type=Path, metavar="DIR",
                        help="continue the search a resumable policy (segment) saved beside DIR (DIR.checkpoint.npz); "
                             "the output goes to DIR")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_intermixed_args(argv)
    overrides = list(args.overrides) + ([f"pieces={args.pieces}"] if args.pieces is not None else [])
    if args.resume and args.out and args.out != args.resume:
        print("error: --resume DIR writes to DIR: give no other --out", file=sys.stderr)
        return 2
    for option, folder in (("--out", args.out), ("--resume", args.resume)):
        if folder is not None and folder.name in ("", ".", ".."):  # '', '.', '..', '/': no folder of its own
            print(f"error: {option} {str(folder)!r}: name a folder of its own for the solve's files "
                  "(e.g. solves/mine)", file=sys.stderr)
            return 2
    target = args.resume or args.out or default_out(args.config)
    try:
        config = load_solver_config(args.config, overrides)
        evaluator = load_evaluators(config, args.config)
        tuned_on = tuned_rules(config, args.config)
        if tuned_on is not None and tuned_on != config.rules:
            print(f"warning: {args.config} was tuned on rules {tuned_on!r}; its weights were not chosen for "
                  f"{config.rules!r}, where they may play far worse", file=sys.stderr)
        # the output folder is checked (and its staging folder made) before the search, not after it
        out = OutputSet(target, OUTPUT_FILES, exclusive=args.out is None and args.resume is None)
    except (ConfigError, OutputError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        # one process at a time works on a folder (and on the search saved beside it): a second
        # solve into it meanwhile is refused, not raced
        with FolderLock(target.parent, lock_name(target), label=str(target), remove=True):
            checkpoint = checkpoint_for(config, target, args.resume is not None)
            check_cluster(config)  # before the search: a scheduler that does not answer is given up at once
            with progress_bar(config.policy, shown=not args.quiet) as progress:
                # a first Ctrl-C or kill ends the search with its best path so far, a second one stops at once
                result = solve(config, progress=progress, evaluator=evaluator, interruptible=True,
                               checkpoint=checkpoint, resume=args.resume is not None, searched=end.searched)
            if not result.pieces:
                print("error: the policy placed no piece; nothing written", file=sys.stderr)
                return 1
            write_solution(out, result, config)  # signals from the end of the search on are held
            end.written = "record" if getattr(result, "record", None) is not None else "summary"
            return report(result, out.target)
    except (ConfigError, Locked, CheckpointError, ParallelError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OutputError as e:
        print(f"error: {e}; nothing written", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"error: {args.config}: the search ran out of memory (its sizes passed the estimate, "
              "but the memory was not there); nothing written", file=sys.stderr)
        return 2
    finally:
        out.discard()  # whatever was not committed


def check_cluster(config: SolverConfig) -> None:
    """The dask scheduler the policy's search would use (its section's ``parallel``, such as
    ``segment.parallel``), if it names one, checked before the search: it answers within
    `engine.parallel.CONNECT_SECONDS` and its workers run this project (`ParallelError`)."""
    settings = getattr(getattr(config, config.policy, None), "parallel", None)
    if isinstance(settings, ParallelConfig):
        check_scheduler(settings, f"{config.policy}.parallel")


class AfterTheSearch:
    """Ctrl-C (SIGINT) and kill (SIGTERM) through a solve (`handle`, from the command's first line):
    until the search is over they stop the process at once (a KeyboardInterrupt; during the search
    the policy takes the first one itself, `solver.Policy.run`); once it is over (`searched`) they
    are held, not acted on, while the record is verified and the output set written and committed,
    so the finished work is written whole; ``pending`` then names the signal held, and `status`
    reports it (exit status 130)."""

    def __init__(self):
        self.over = False
        self.pending: str | None = None
        #: what was written, once committed: "record" or "summary"
        self.written: str | None = None

    def searched(self) -> None:
        self.over = True

    def handle(self, signum, frame) -> None:
        if not self.over:
            raise KeyboardInterrupt
        if self.pending is None:
            self.pending = signal.Signals(signum).name

    def status(self, status: int) -> int:
        """The command's exit status, given the one its work came to: 130 for a finished solve a
        signal came to after its search (said in one line), else ``status``. From here on a signal
        is held too (the status is decided)."""
        self.over = True
        if self.pending is not None and status == 0 and self.written is not None:
            print(f"interrupted ({self.pending}) after the search: the {self.written} was written", file=sys.stderr)
            return 130
        return status


def report(result, target: Path) -> int:
    """Print what was written to ``target``; the exit status (130 for a search a signal ended)."""
    if isinstance(result, GamesSeries):
        g = result.games
        ci = f" (95% CI {g.ci95[0]:,.0f} .. {g.ci95[1]:,.0f})" if g.ci95 else ""
        capped = f"{g.capped} capped" + (" (a capped game's score is a lower bound, and so is the mean)"
                                         if g.capped else "")
        print(f"{len(g.scores)} games (seeds {g.seeds[0]}..{g.seeds[-1]}, cap {g.cap:,}): mean "
              f"{g.mean:,.0f}{ci}, std {g.std:,.0f}, min {g.scores.min():,}, max {g.scores.max():,}, {capped}, "
              f"{result.pieces:,} pieces in {result.seconds:.1f} s; written to {target}/")
        return 0
    if isinstance(result, SplittingSeries):
        est, ci = result.estimates, result.ci95
        ci = f" (95% CI {ci[0]:,.0f} .. {ci[1]:,.0f}, pooled)" if ci else ""
        print(f"{len(est)} splitting estimate(s) (seeds {est[0].seed}..{est[-1].seed}): mean "
              f"{result.score:,} points a game{ci}; {result.pieces:,} pieces played in {result.seconds:.1f} s; "
              f"written to {target}/")
        return 0
    print(f"{result.score:,} points, {result.pieces:,} pieces ({result.end}; {result.stop}) in "
          f"{result.seconds:.1f} s; verified by the replayer; written to {target}/")
    if result.stop == Stop.INTERRUPTED.label:
        print("interrupted: the best path found so far was written", file=sys.stderr)
        return 130
    return 0


def command() -> int:
    """The installed command (``tetris-solve``): `main` as the process's own."""
    return main(exiting=True)


if __name__ == "__main__":
    sys.exit(command())
