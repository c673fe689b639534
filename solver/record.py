"""From a chosen path of placements to a contest record, checked by the project's replayer."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine import Rules, encode, replay
from engine.lock import GOING_ON, lock_piece_call, spawn_state
from engine.movegen import scratch
from engine.movegen.routes import route_into
from engine.movegen.tables import STEP_D

from .result import SolveResult


class RecordMismatch(RuntimeError):
    """The replayer's verdict on a written record disagrees with the solver's own result."""


#: `path_routes`' verdict on a path: every route found, or the first piece (0-based) that breaks it
ROUTES_FOUND, UNREACHABLE, ENDED_EARLY = 0, 1, 2


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def path_routes(rules, sequence, placements, sc, steps, lengths):
    """A shortest route for each placement, replaying the path from the empty board: piece t's
    steps into ``steps[t, :lengths[t]]``. Returns (`ROUTES_FOUND`, -1), or (`UNREACHABLE`, t) when
    placement t has no route, or (`ENDED_EARLY`, t) when the game ends at piece t before the path
    does."""
    board = np.zeros(rules.height, np.uint16)
    n = placements.shape[0]
    for t in range(n):
        shape = sequence[t]
        x, y, s = placements[t, 0], placements[t, 1], placements[t, 2]
        lengths[t] = route_into(board, rules, shape, spawn_state(t, rules), x, y, s, sc, steps[t])
        if lengths[t] < 0:
            return UNREACHABLE, t
        lock = lock_piece_call(board, rules, shape, s, x, y, t + 1)
        if lock.end != GOING_ON and t + 1 < n:
            return ENDED_EARLY, t
    return ROUTES_FOUND, -1


def routes_along(rules: Rules, sequence: np.ndarray, placements: np.ndarray) -> list[list[int]]:
    """A shortest route (step codes) for each placement, replaying the path from the empty board
    (a placement at the spawn position: one D step, which does not move it)."""
    placements = np.ascontiguousarray(placements, np.int64)
    n = len(placements)
    steps = np.zeros((n, max(rules.max_steps, 1)), np.int64)
    lengths = np.zeros(n, np.int64)
    verdict, t = path_routes(rules.kernel, np.ascontiguousarray(sequence, np.int64), placements,
                             scratch(rules, routes=True), steps, lengths)
    if verdict == UNREACHABLE:
        raise RecordMismatch(f"piece {t + 1}: placement {tuple(int(v) for v in placements[t])} is not reachable")
    if verdict == ENDED_EARLY:
        raise RecordMismatch(f"piece {t + 1}: the game ends there, yet the path goes on")
    # a piece given no operation before the next N vanishes instead of locking (GEEK_RULES.md): a
    # placement at the spawn itself (it rests there: floating ones never are) gets one D, which the
    # replay consumes without moving it
    return [steps[t, :lengths[t]].tolist() or [STEP_D] for t in range(n)]


def attach_record(result: SolveResult, rules: Rules, sequence: np.ndarray, seed: int | None = None) -> SolveResult:
    """Encode ``result``'s placements as a record, replay it with the project's replayer and check
    that it scores exactly ``result.score`` over ``result.pieces`` pieces. Sets ``record`` and
    ``end`` (the replayer's verdict); raises `RecordMismatch` loudly on any disagreement."""
    record = encode(routes_along(rules, sequence, result.placements))
    verdict = replay(record, rules, seed)
    if not verdict.valid:
        raise RecordMismatch(f"the solver wrote an invalid record: {verdict.error}")
    if verdict.score != result.score or verdict.bricks != result.pieces:
        raise RecordMismatch(
            f"replay gives {verdict.score:,} points over {verdict.bricks:,} pieces, the solver claims "
            f"{result.score:,} over {result.pieces:,}"
        )
    result.record = record
    result.end = verdict.end
    return result
