"""From a chosen path of placements to a contest record, checked by the project's replayer."""

from __future__ import annotations

import numpy as np

from engine import BOARD_DTYPE, Rules, encode, replay
from engine.lock import GOING_ON, lock_piece, spawn_state
from engine.movegen import route_into, scratch

from .result import SolveResult


class RecordMismatch(RuntimeError):
    """The replayer's verdict on a written record disagrees with the solver's own result."""


def routes_along(rules: Rules, sequence: np.ndarray, placements: np.ndarray) -> list[list[int]]:
    """A shortest route (step codes) for each placement, replaying the path from the empty board."""
    sc = scratch(rules, routes=True)
    steps = np.zeros(max(rules.max_steps, 1), np.int64)
    board = np.zeros(rules.height, dtype=BOARD_DTYPE)
    kr = rules.kernel
    routes = []
    for t, (x, y, s) in enumerate(placements):
        shape = int(sequence[t])
        n = route_into(board, kr, shape, spawn_state(t, kr), int(x), int(y), int(s), sc, steps)
        if n < 0:
            raise RecordMismatch(f"piece {t + 1}: placement ({x}, {y}, {s}) is not reachable")
        routes.append(steps[:n].tolist())
        lock = lock_piece(board, kr, shape, int(s), int(x), int(y), t + 1)
        if lock.end != GOING_ON and t + 1 < len(placements):
            raise RecordMismatch(f"piece {t + 1}: the game ends there, yet the path goes on")
    return routes


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
