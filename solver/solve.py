"""Solve a configuration: rules, pieces, evaluator, threads, the registered policy, verified record."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Callable

import numba

from engine import Rules, get_rules
from engine.outcome import Stop
from evaluators import Evaluator, load_evaluator

from . import registry
from ._base import Policy, Progress
from .registry import SolverConfig
from .online.games import solve_games
from .record import attach_record
from .result import Outcome
from .threshold import Pruner, Threshold


def default_pieces(rules: Rules) -> int:
    """Pieces worth playing: the Geek game's last piece (the limit) never scores, so one fewer."""
    if rules.piece_limit is None:
        raise ValueError(f"rules {rules.name!r} have no piece limit: set 'pieces'")
    return rules.piece_limit - 1


def solve(config: SolverConfig, threshold: Threshold | None = None, progress: Progress | None = None,
          evaluator: Evaluator | None = None, record: bool = True, interruptible: bool = False,
          checkpoint: str | Path | None = None, resume: bool = False,
          searched: Callable[[], None] | None = None) -> Outcome:
    """Play ``config`` and return its result; with ``record`` the record is built, replayed by the
    project's replayer and checked against the result (`RecordMismatch` on any difference). With
    ``interruptible``, a first Ctrl-C or SIGTERM ends the search with its best path so far
    (``stop = "interrupted"``; `Policy.run`); one that comes when the search has no step left to
    stop at is raised again once it is over (`signal.raise_signal`), so it acts as a signal after
    the search does. A resumable policy (`Policy.resumable`: ``segment``) saves its search to
    ``checkpoint`` as it goes, and with ``resume`` continues from it (a checkpoint file that does
    not exist yet starts a new search); a policy that cannot is refused a checkpoint (ValueError).
    ``searched()`` is called once the search (or the series of games) is over, before the record is
    built and verified (`Policy.run`).
    A policy for unknown pieces (`registry.Entry.known_pieces` False) plays seeded games instead
    (`solver.online.games.solve_games`; no record): a known-sequence policy's result is a
    `SolveResult`, a series' a `solver.online.GamesSeries` or `solver.online.SplittingSeries`."""
    _use_threads(config)
    if not registry.get(config.policy).known_pieces:
        result = solve_games(config, threshold, progress, evaluator)
        if searched is not None:
            searched()
        return result
    policy = make_policy(config, evaluator)
    pruner = threshold.pruner(policy.pieces) if threshold else Pruner.unchecked(policy.pieces)
    if checkpoint is not None:
        if not policy.resumable:
            raise ValueError(f"policy {config.policy!r} cannot save or resume its search (a checkpoint was given)")
        policy.checkpoint, policy.resume = Path(checkpoint), resume
    result = policy.run(pruner, progress, interruptible, searched)
    if policy.signalled is not None and result.stop != Stop.INTERRUPTED.label:
        # the first signal came when the search had no step left to stop it at (its last piece, or
        # as it ended): it acts now, as one after the search does (a command holds it: exit 130)
        signal.raise_signal(policy.signalled)
    if record and result.pieces:
        attach_record(result, get_rules(config.rules), policy.sequence, config.seed)
    return result


def _use_threads(config: SolverConfig) -> None:
    if config.threads:
        numba.set_num_threads(min(config.threads, numba.config.NUMBA_NUM_THREADS))


def make_policy(config: SolverConfig, evaluator: Evaluator | None = None) -> Policy:
    """The known-sequence policy ``config`` names, on its rules, pieces and evaluator."""
    entry = registry.get(config.policy)
    if not entry.known_pieces:
        raise ValueError(f"policy {config.policy!r} plays unknown pieces: it has no known sequence to search")
    rules = config.game_rules()  # the game's, with the placements the config offers the policy
    pieces = config.pieces or default_pieces(rules)
    if rules.piece_limit is not None:
        pieces = min(pieces, rules.piece_limit)
    sequence = rules.sequence(pieces, config.seed)
    return entry.policy(config, rules, evaluator or load_evaluator(config.evaluator), sequence, pieces)


def compile_parts(config: dict) -> dict:
    """Compile the kernel parts of the policy a solver config mapping names (`Policy.kernel_parts`),
    with its threads, in this process, those that numba's cache does not hold yet; returns the
    seconds of each one compiled. Run on a worker while the run's process warms the same policy up
    (`optimizers.run_loop.RunLoop.warm_up`), the two compile a cold cache's kernels between them; on a
    warm cache nothing is loaded (the worker will load what its games call)."""
    config = SolverConfig.model_validate(config)
    entry = registry.get(config.policy)
    if not entry.known_pieces or entry.policy.kernel_parts is Policy.kernel_parts:
        return {}  # no parts: nothing to build
    _use_threads(config)
    seconds = {}
    for name, part in make_policy(config).kernel_parts().items():
        if part.cached():
            continue
        started = time.perf_counter()
        part.compile()
        seconds[name] = round(time.perf_counter() - started, 3)
    return seconds
