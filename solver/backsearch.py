"""Base + back-search: the 881,026 Go solver's approach, three modes over one lookahead kernel.

A *mode* is which evaluator and lookahead choose a piece (pieces are 0-based here): **base**
(optional) builds the bottom ``base_rows`` rows, each with exactly one empty cell, by the survival
lookahead among the placements `lookahead.base_allowed` lets through, and is given up where it
stands when it cannot go on; **points** is the points-first lookahead; at a *point of death* (the
points-first lookahead finds no path that survives its depth) the path is cut back ``backup``
pieces, never into the base, and replayed by the **survival** lookahead through that piece, then
points-first play resumes; a replay that dies too restarts further back, at most ``max_backups``
times. The threshold curve is checked on the final path, once no back-up can undo a piece.

The search is `lookahead.lookahead_choice` (numba); the loop over pieces, back-ups included, is one
numba kernel too (`backsearch_run`), so no Python runs per piece; its knobs are one
`BacksearchSettings`, its state one `BacksearchState`. Deterministic: no randomness, and ties are
broken as in the lookahead policy. In full: docs/policies.md, "Base + back-search"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from engine._jit.decorators import inner
from engine.board import copy_rows, popcount
from engine.lock import spawn_blocked, spawn_state
from evaluators import load_evaluator

from ._base import (ABORTED, BLOCKED, DONE, GOING, STUCK, Path, Policy, commit, new_path, path_result,
                    path_scores)
from .config import BacksearchConfig
from .lookahead import (CHUNK_PIECES, DEAD, MIN_CHUNK, LookaheadSettings, lookahead_choice,
                        lookahead_settings, lookahead_work)
from .registry import register
from .threshold import below, first_below
from .result import Report

#: modes, as stored per piece
BASE, POINTS, SURVIVAL = 0, 1, 2
MODE_NAMES = ("base", "points", "survival")


@dataclass(frozen=True)
class BacksearchReport(Report):
    """The back-search's account of its run (`SolveResult.report`, summary.json's ``backsearch``):
    ``modes`` (pieces of the final path placed in each mode, by `MODE_NAMES`), ``placements_made``
    (every placement made in each mode, undone ones included), ``backups``, ``pieces_undone``,
    ``base_end`` (pieces before the base was done or given up; None when the run stopped first) and
    ``mode_by_step`` (one letter per piece of the path: b, p, s)."""

    key = "backsearch"
    modes: dict[str, int]
    placements_made: dict[str, int]
    backups: int
    pieces_undone: int
    base_end: int | None
    mode_by_step: str

    def summary(self) -> dict:
        return {"modes": dict(self.modes), "placements_made": dict(self.placements_made), "backups": self.backups,
                "pieces_undone": self.pieces_undone, "base_end": self.base_end, "mode_by_step": self.mode_by_step}


#: slots of `BacksearchState.slots`: ``T`` the next piece of the path, ``SCORE`` the path's score,
#: ``BASE_DONE`` (0/1) whether the base is done or given up, ``BASE_END`` the piece where it was (the
#: floor no back-up goes below), ``SURVIVAL_END`` the last point of death (pieces up to it are
#: replayed survival-first), ``SEGMENT`` where the current replay started, ``BACKUPS_HERE`` further
#: back-ups for the current point of death, ``BACKUPS`` and ``UNDONE`` back-ups and pieces undone in
#: all, ``NODES`` nodes searched
T, SCORE, BASE_DONE, BASE_END, SURVIVAL_END, SEGMENT, BACKUPS_HERE, BACKUPS, UNDONE, NODES = range(10)
N_SLOTS = 10


class BacksearchSettings(NamedTuple):
    """The back-search's knobs: the lookahead of each mode (``points``, ``survival``, and ``base``:
    the survival lookahead building the base, whose ``base_rows`` is 0 without a base),
    ``base_max`` (pieces after which an unfinished base is given up), ``backup`` (pieces undone per
    back-up), ``max_backups`` (further back-ups per point of death) and ``reach`` (how far back a
    back-up can undo: a piece's score is final, and checked, that many pieces later)."""

    points: LookaheadSettings
    survival: LookaheadSettings
    base: LookaheadSettings
    base_max: int
    backup: int
    max_backups: int
    reach: int


def backsearch_settings(cfg, height: int) -> BacksearchSettings:
    """The `BacksearchSettings` of a `BacksearchConfig` on boards of ``height`` rows (a base leaves
    the top row free)."""
    last_only = cfg.objective == "last"
    base_rows = min(cfg.base_rows, height - 1)
    return BacksearchSettings(
        points=lookahead_settings(cfg.depth, cfg.keep_fraction, last_only),
        survival=lookahead_settings(cfg.survival_depth, cfg.survival_keep_fraction, last_only),
        base=lookahead_settings(cfg.survival_depth, cfg.survival_keep_fraction, last_only, base_rows,
                                cfg.base_cell_value),
        base_max=int(cfg.base_max_pieces), backup=int(cfg.backup), max_backups=int(cfg.max_backups),
        reach=int(cfg.backup * (1 + cfg.max_backups)))


class BacksearchState(NamedTuple):
    """A back-search game between kernel calls: ``slots`` (the named slots above), ``hist[t]`` the
    board before piece t of the current path, ``path`` its placements and scores (its ``kinds``
    count undone clears too: `Backsearch.search` recounts them on the final path), ``modes[t]`` the
    mode that placed piece t, and ``made[mode]`` every placement made in each mode, undone ones
    included."""

    slots: np.ndarray
    hist: np.ndarray
    path: Path
    modes: np.ndarray
    made: np.ndarray


def new_state(pieces: int, height: int) -> BacksearchState:
    """The state of a game of ``pieces`` pieces before its first piece."""
    slots = np.zeros(N_SLOTS, np.int64)
    slots[SURVIVAL_END] = -1
    return BacksearchState(slots, np.zeros((pieces + 1, height), np.uint16), new_path(pieces),
                           np.zeros(pieces, np.int64), np.zeros(len(MODE_NAMES), np.int64))


@inner
def _base_complete(board, base_rows, width):
    """Whether each of the bottom ``base_rows`` rows holds exactly ``width - 1`` cells."""
    height = board.shape[0]
    for y in range(height - base_rows, height):
        if popcount(np.int64(board[y])) != width - 1:
            return False
    return True


@inner
def _end_base(st, t):
    """The base is done, or given up, before piece ``t``: no back-up goes below ``t`` any more."""
    st[BASE_DONE] = 1
    st[BASE_END] = t


@inner
def _cut_back(st, by_step, start, t):
    """Cut the path back from piece ``t`` to piece ``start`` (a back-up): pieces start..t-1 are undone."""
    st[UNDONE] += t - start
    st[BACKUPS] += 1
    st[T] = start
    st[SCORE] = by_step[start - 1] if start > 0 else 0


@inner
def _end_at(st, by_step, u):
    """End the path after piece ``u`` (a failed threshold check)."""
    st[T] = u + 1
    st[SCORE] = by_step[u]


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def _mode(st, t, settings):
    """The mode of piece ``t``: the base until it is done (given up here once ``base_max`` pieces
    have not done it), survival up to the last point of death, else points (a new point of death
    may then back up ``max_backups`` times again)."""
    if st[BASE_DONE] == 0 and t >= settings.base_max:
        _end_base(st, t)
    if st[BASE_DONE] == 0:
        return BASE
    if t <= st[SURVIVAL_END]:
        return SURVIVAL
    st[BACKUPS_HERE] = 0
    return POINTS


@inner
def _choose(board, t, sequence, rules, pspec, sspec, settings, mode, work):
    """The lookahead's `Choice` for piece ``t`` in ``mode`` (each evaluator is its own numba type,
    hence one call per mode)."""
    if mode == POINTS:
        return lookahead_choice(board, t, sequence, rules, pspec, settings.points, work)
    if mode == BASE:
        return lookahead_choice(board, t, sequence, rules, sspec, settings.base, work)
    return lookahead_choice(board, t, sequence, rules, sspec, settings.survival, work)


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def _after_death(st, by_step, mode, t, floor, settings):
    """Every path of piece ``t``'s lookahead in ``mode`` dies: give the base up, or (points) make
    ``t`` the point of death and back up ``backup`` pieces, not below ``floor``, to replay
    survival-first, or (survival) back up further while back-ups are left. Returns False when
    nothing is left to try (survival play then takes its best placement as it is)."""
    if mode == BASE:  # no base placement survives: give the base up
        _end_base(st, t)
        return True
    if mode == POINTS:  # the point of death: replay from back there, survival-first
        start = max(floor, t - settings.backup)
        st[SURVIVAL_END] = t
        st[SEGMENT] = start
        if start < t:
            _cut_back(st, by_step, start, t)
        return True
    if st[BACKUPS_HERE] < settings.max_backups and st[SEGMENT] > floor and settings.backup > 0:  # back up further
        start = max(floor, st[SEGMENT] - settings.backup)
        st[SEGMENT] = start
        st[BACKUPS_HERE] += 1
        _cut_back(st, by_step, start, t)
        return True
    return False


@inner
def _place(board, t, mode, choice, sequence, rules, settings, state):
    """Piece ``t`` goes to ``choice`` in ``mode``: committed to the path, the board after it kept in
    ``hist[t + 1]``, and the base done if this piece completed it."""
    st = state.slots
    state.made[mode] += 1
    state.modes[t] = mode
    st[SCORE] = commit(board, rules, sequence[t], choice.x, choice.y, choice.s, t, st[SCORE], state.path)
    state.hist[t + 1] = board
    st[T] = t + 1
    if mode == BASE and _base_complete(board, settings.base.base_rows, rules.width):
        _end_base(st, t + 1)


@inner
def _step(sequence, rules, pspec, sspec, settings, threshold, state, work, board):
    """One step of the game in ``state``: the next piece placed, or a mode change or back-up after a
    death. Returns the stop code: `GOING`, `DONE` (no piece left), `STUCK`, `BLOCKED`, or `ABORTED`
    (the piece no back-up can undo any more failed its threshold: the path now ends there)."""
    st = state.slots
    by_step = state.path.score_by_step
    t = st[T]
    if t >= sequence.shape[0]:
        return DONE
    copy_rows(board, state.hist[t])
    floor = st[BASE_END]  # read before `_mode` may give the base up at this very piece
    mode = _mode(st, t, settings)
    choice = _choose(board, t, sequence, rules, pspec, sspec, settings, mode, work)
    st[NODES] += choice.nodes
    if not choice.found or choice.worth < -DEAD / 2:  # every path dies within the lookahead
        if _after_death(st, by_step, mode, t, floor, settings):
            return GOING
    if not choice.found:
        return BLOCKED if spawn_blocked(board, rules, sequence[t], spawn_state(t, rules)) else STUCK
    _place(board, t, mode, choice, sequence, rules, settings, state)
    u = t - settings.reach  # the newest piece no back-up can undo any more
    if u >= 0 and below(threshold, u, by_step[u]):
        _end_at(st, by_step, u)
        return ABORTED
    return GOING


@inner
def _check_tail(stop, state, threshold, reach):
    """The game stopped (``stop``): the threshold check of its last ``reach`` pieces, which no
    back-up can undo now. Returns ``stop``, or `ABORTED` with the path ended at the first failure."""
    st = state.slots
    by_step = state.path.score_by_step
    u = first_below(by_step, threshold, st[T] - reach, st[T])
    if u == -1:
        return stop
    _end_at(st, by_step, u)
    return ABORTED


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def backsearch_run(sequence, budget, rules, pspec, sspec, settings, threshold, state):
    """Advance the game in ``state`` (a `BacksearchState`) by at most ``budget`` steps (placements
    and back-ups) over the game's pieces ``sequence``, with the points evaluator ``pspec`` and the
    survival one ``sspec``. Piece t's score is checked against ``threshold[t]``
    (`solver.threshold.below`) once piece t + ``settings.reach`` is placed (no back-up reaches
    further), and the last ``reach`` pieces when the game stops. Returns the stop code: `GOING`,
    `DONE`, `STUCK`, `BLOCKED` or `ABORTED` (the path then ends at the failed piece)."""
    st = state.slots
    depth = max(settings.points.depth, settings.survival.depth)
    work = lookahead_work(depth, rules, max(pspec.terms.shape[1], sspec.terms.shape[1]))
    board = np.zeros(rules.height, np.uint16)
    if settings.base.base_rows == 0 and st[BASE_DONE] == 0:
        _end_base(st, 0)
    stop = GOING
    for _ in range(budget):
        stop = _step(sequence, rules, pspec, sspec, settings, threshold, state, work, board)
        if stop != GOING:
            break
    if stop == GOING:  # the budget is spent
        if st[T] < sequence.shape[0]:
            return GOING
        stop = DONE
    if stop == ABORTED:
        return stop
    return _check_tail(stop, state, threshold, settings.reach)


@register
class Backsearch(Policy):
    name = "backsearch"
    Settings = BacksearchConfig

    def __init__(self, config, rules, evaluator, sequence, pieces):
        super().__init__(config, rules, evaluator, sequence, pieces)
        cfg = config.backsearch
        self.points = evaluator if cfg.points_evaluator is None else load_evaluator(cfg.points_evaluator)
        self.survival = load_evaluator(cfg.survival_evaluator)

    def search(self, pruner, progress):
        rules, n, cfg = self.rules, self.pieces, self.config.backsearch
        settings = backsearch_settings(cfg, rules.height)
        state = new_state(n, rules.height)
        st = state.slots
        budget = max(MIN_CHUNK, CHUNK_PIECES // max(cfg.depth, cfg.survival_depth) ** 2)
        stop = GOING
        while stop == GOING:
            stop = backsearch_run(self.sequence[:n], budget, rules.kernel, self.points.spec, self.survival.spec,
                                  settings, pruner.curve, state)
            if progress:
                progress(int(st[T]), n, int(st[SCORE]))
            stop = self.chunk_stop(stop, int(st[T]))
        return self._result(state, stop, pruner)

    def _result(self, state, stop, pruner):
        """The `SolveResult` of the final path in ``state``, its clears recounted from its placements
        (the kernel's count includes undone ones), with the mode counts in its `BacksearchReport`."""
        st, path, modes, made = state.slots, state.path, state.modes, state.made
        done = int(st[T])
        scores, kinds = path_scores(path.placements[:done], self.sequence, self.rules)
        if done and scores[-1] != st[SCORE]:
            raise RuntimeError(f"backsearch: the path scores {scores[-1]:,}, the kernel counted {st[SCORE]:,}")
        path.kinds[:] = kinds
        result = path_result(st[SCORE], done, stop, path, pruner, int(st[NODES]))
        counts = np.bincount(modes[:done], minlength=len(MODE_NAMES))
        result.report = BacksearchReport(
            modes={name: int(counts[i]) for i, name in enumerate(MODE_NAMES)},
            placements_made={name: int(made[i]) for i, name in enumerate(MODE_NAMES)},
            backups=int(st[BACKUPS]),
            pieces_undone=int(st[UNDONE]),
            base_end=int(st[BASE_END]) if st[BASE_DONE] else None,
            mode_by_step="".join("bps"[m] for m in modes[:done]),
        )
        return result
