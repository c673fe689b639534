"""Whole games for policies of unknown pieces: N seeded games with a piece cap, inside numba.

Game ``i`` draws its pieces from the rules' source with seed ``seed + i`` (`PieceSource.sequence`,
so a game's pieces are exactly the rules' sequence for that seed); the policy sees the current piece
and the next one (the preview) only. A game ends when a piece's spawn is blocked, when no placement
survives (``stuck``), when a lock ends it under the rules, or at the cap (``capped``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from engine import Rules
from engine.lock import GOING_ON, lock_piece, spawn_blocked, spawn_state

from .expect import choose_expect
from .mcts import choose_mcts
from .one_ply import choose_one_ply
from .preview import choose_preview

#: why a game ended (codes of `play_chunk`)
GAME_ENDS = ("capped", "stuck", "spawn_blocked", "rules_end")
CHUNK = 20_000  # pieces per kernel call (progress and Ctrl-C between calls)


@njit(cache=True)
def choose_any(code, board, shape, preview, t, R, spec, tie_break, params, ws, tree, child, scratch_board):
    """The policy ``code``'s choice: an index into ``ws.found[0]`` or -1."""
    if code == 0:
        return choose_one_ply(board, shape, t, R, spec, tie_break, ws)
    if code == 1:
        return choose_preview(board, shape, preview, t, R, spec, tie_break, params, ws, child)
    if code == 2:
        return choose_expect(board, shape, t, R, spec, tie_break, params, ws, child)
    return choose_mcts(board, shape, preview, t, R, spec, tie_break, params, ws, tree, scratch_board)


@njit(cache=True)
def play_chunk(code, sequence, t0, t1, board, R, spec, tie_break, params, ws, tree, child, scratch_board,
               score, kinds):
    """Play pieces t0 .. t1 - 1 of ``sequence`` (which holds one more piece, the last preview) on
    ``board`` in place; returns (pieces placed, score, end code: -1 going on, else `GAME_ENDS`)."""
    found = ws[6]
    for t in range(t0, t1):
        shape = sequence[t]
        if spawn_blocked(board, R[0][shape, spawn_state(t, R)], R):
            return t, score, 2
        k = choose_any(code, board, shape, sequence[t + 1], t, R, spec, tie_break, params, ws, tree, child,
                       scratch_board)
        if k < 0:
            return t, score, 1
        end, f, points = lock_and_score(board, R[0][shape, found[0, k, 2]], found[0, k, 0], found[0, k, 1],
                                        t + 1, R)
        if end != GOING_ON:
            return t + 1, score, 3
        score += points
        if f:
            kinds[f] += 1
    return t1, score, -1


@dataclass
class GamesResult:
    """Scores of seeded games: ``seeds[i]`` gave ``scores[i]`` points in ``pieces[i]`` pieces, ending
    by ``ends[i]`` (`GAME_ENDS`); ``clear_kinds``: clear events by rows (index 1..4), all games;
    ``seconds``: wall time of each game."""

    seeds: list
    cap: int
    scores: np.ndarray
    pieces: np.ndarray
    ends: list
    clear_kinds: tuple
    seconds: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def mean(self) -> float:
        return float(np.mean(self.scores)) if len(self.scores) else 0.0

    @property
    def std(self) -> float:
        return float(np.std(self.scores)) if len(self.scores) else 0.0

    @property
    def capped(self) -> int:
        return sum(e == "capped" for e in self.ends)

    def summary(self) -> dict:
        return {
            "seeds": [int(s) for s in self.seeds], "cap": int(self.cap),
            "scores": [int(v) for v in self.scores], "pieces": [int(v) for v in self.pieces],
            "ends": list(self.ends), "mean": round(self.mean, 1), "std": round(self.std, 1),
            "min": int(np.min(self.scores)) if len(self.scores) else 0,
            "max": int(np.max(self.scores)) if len(self.scores) else 0,
            "capped": self.capped, "clears": {str(k): int(self.clear_kinds[k]) for k in range(1, 5)},
            "seconds": [round(float(s), 3) for s in self.seconds],
        }


def play_game(policy, seed: int, cap: int, progress=None) -> tuple[int, int, str, np.ndarray, float]:
    """One game: (score, pieces, end, clear kinds, seconds). ``progress(pieces, score)`` after each
    chunk."""
    rules: Rules = policy.rules
    sequence = np.ascontiguousarray(rules.sequence(cap + 1, seed), dtype=np.int64)
    board = np.zeros(rules.height, np.uint16)
    kinds = np.zeros(5, np.int64)
    policy.seed(seed)
    start = time.perf_counter()
    t, score, end = 0, 0, -1
    while t < cap and end < 0:
        t, score, end = play_chunk(policy.code, sequence, t, min(cap, t + CHUNK), board, rules.kernel, policy.spec,
                                   policy.tie_break, policy.params, policy.ws, policy.tree, policy.child,
                                   policy.scratch_board, score, kinds)
        if progress:
            progress(int(t), int(score))
    return int(score), int(t), GAME_ENDS[0] if end < 0 else GAME_ENDS[end], kinds, time.perf_counter() - start


def play_games(policy, seeds, cap: int, progress=None, stop=None) -> GamesResult:
    """Play one game per seed with ``policy`` (an `OnlinePolicy`) up to ``cap`` pieces each.
    ``progress(game index, pieces, score)`` after each chunk; ``stop(game index, scores so far)``
    returning True ends the series after that game (early abort)."""
    scores, pieces, ends, secs = [], [], [], []
    kinds = np.zeros(5, np.int64)
    seeds = [int(s) for s in seeds]
    for i, seed in enumerate(seeds):
        cb = (lambda t, s, i=i: progress(i, t, s)) if progress else None
        score, t, end, k, sec = play_game(policy, seed, cap, cb)
        scores.append(score)
        pieces.append(t)
        ends.append(end)
        secs.append(sec)
        kinds += k
        if stop is not None and stop(i, scores):
            break
    return GamesResult(seeds[:len(scores)], cap, np.array(scores, np.int64), np.array(pieces, np.int64), ends,
                       tuple(int(v) for v in kinds), np.array(secs))
