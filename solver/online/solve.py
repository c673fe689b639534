"""A solver configuration with a policy for unknown pieces, played as seeded games: the
`SolveResult` whose score is the games' mean (what tuning's fitness reads)."""

from __future__ import annotations

import time

import numpy as np

from engine import get_rules
from evaluators import Evaluator, load_evaluator

from ..config import SolverConfig
from ..result import SolveResult
from ..threshold import Threshold


def make_policy(config: SolverConfig, evaluator: Evaluator | None = None):
    """The `OnlinePolicy` of ``config`` (its rules and evaluator resolved)."""
    from . import ONLINE_POLICIES

    rules = get_rules(config.rules)
    evaluator = evaluator or load_evaluator(config.evaluator)
    return ONLINE_POLICIES[config.policy](config, rules, evaluator)


def solve_games(config: SolverConfig, threshold: Threshold | None = None, progress=None,
                evaluator: Evaluator | None = None) -> SolveResult:
    """Play ``config.online.games`` games (seeds ``config.seed`` (default 0), + 1, ...) with a cap
    of ``config.pieces`` pieces. The result's ``score`` is the mean score rounded to an integer;
    ``score_by_step[g]`` is game g's score and ``best_by_step[g]`` the running mean after it (the
    curve early abort compares: a threshold is checked after each game); ``pieces`` counts every
    piece placed; ``extra["games"]`` holds `GamesResult.summary`. ``progress(pieces, total, score)``
    counts pieces over all games."""
    from .games import play_game, play_games

    policy = make_policy(config, evaluator)
    cap = int(config.pieces)
    n = config.online.games
    first = 0 if config.seed is None else int(config.seed)
    curve = threshold.kernel_arrays(n) if threshold else None
    stopped = {"at": None}

    def stop(i, scores):
        if curve is not None and np.mean(scores) < curve[i]:
            stopped["at"] = i
            return True
        return False

    def report(i, t, s):
        if progress:
            progress(i * cap + t, n * cap, s)

    play_game(policy, first, 1)  # load or compile the kernels
    start = time.perf_counter()
    games = play_games(policy, range(first, first + n), cap, report, stop)
    seconds = time.perf_counter() - start
    scores = games.scores
    running = (np.cumsum(scores) / np.arange(1, len(scores) + 1)).round().astype(np.int64)
    result = SolveResult(
        score=int(round(games.mean)), pieces=int(games.pieces.sum()), score_by_step=scores.copy(),
        best_by_step=running, clear_kinds=games.clear_kinds, placements=np.zeros((0, 3), np.int64),
        stop="aborted" if stopped["at"] is not None else "done", seconds=seconds,
        extra={"games": games.summary()})
    if stopped["at"] is not None:
        result.abort_piece = stopped["at"] + 1
        result.abort_threshold = float(curve[stopped["at"]])
    return result
