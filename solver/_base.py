"""What every policy shares: its inputs, and the run loop around the search."""

from __future__ import annotations

import contextlib
import copy
import signal
import threading
import time
from abc import ABC, abstractmethod
from typing import Callable

import numpy as np
from numba import njit

from engine import Rules
from engine.board import count_and_clear, place
from engine.play import GOING_ON, lock_and_score
from evaluators import Evaluator
from evaluators.kernel import evaluate

from .config import SolverConfig
from .result import SolveResult

#: progress(pieces_done, pieces_total, best_score) is called as the search advances
Progress = Callable[[int, int, int], None]

#: evaluator tie-break codes for the kernels
TIE_BREAKS = {None: 0, "pd_priority": 1}


@njit(cache=True, inline="always")
def priority(tie_break, x, s, spawn_x, spawn_s):
    """The tie-break rank of a placement, lower first: for ``pd_priority`` (Pierre Dellacherie)
    100 x columns moved from the spawn + rotations from the spawn state; 0 otherwise."""
    if tie_break == 1:
        return 100 * abs(x - spawn_x) + ((s - spawn_s) & 3)
    return 0


@njit(cache=True)
def best_first(values, ranks, n):
    """The indices 0..n-1 best first: ``values`` descending, then tie-break ``ranks`` ascending
    (`priority`), then index (generation order)."""
    by_rank = np.argsort(ranks[:n], kind="mergesort")
    by_value = np.argsort(-values[:n][by_rank], kind="mergesort")
    return by_rank[by_value]


@njit(cache=True)
def value_child(board, pvals, piece_cells, x, y, R, spec, locked, cleared):
    """Lock a piece with offsets ``piece_cells`` at (x, y) on a copy of ``board`` and value the
    result with the evaluator ``spec`` (``pvals``: the parent's values, `parent_values`).
    Returns (alive, value): ``alive`` is False when the lock touches the top (the game would end).
    ``locked`` and ``cleared`` receive the board before and after the clear."""
    width = R[3]
    locked[:] = board
    place(locked, piece_cells, x, y)
    cleared[:] = locked
    c, f, occupied = count_and_clear(cleared, (1 << width) - 1)
    if R[9] and occupied == R[4]:
        return False, 0.0
    points = R[2][f] * (c if R[8] else 1)
    return True, evaluate(board, pvals, locked, cleared, piece_cells, x, y, f, points, width, spec)


@njit(cache=True)
def _path_scores(placements, sequence, R, height, out, kinds):
    board = np.zeros(height, np.uint16)
    score = 0
    for t in range(placements.shape[0]):
        x, y, s = placements[t, 0], placements[t, 1], placements[t, 2]
        end, f, points = lock_and_score(board, R[0][sequence[t], s], x, y, t + 1, R)
        score += points
        if f and end == GOING_ON:
            kinds[f] += 1
        out[t] = score
    return score


def path_scores(placements: np.ndarray, sequence: np.ndarray, R: tuple) -> tuple[np.ndarray, tuple]:
    """The score after each placement of a path from the empty board, and its clears by kind."""
    out = np.zeros(len(placements), np.int64)
    kinds = np.zeros(5, np.int64)
    _path_scores(np.ascontiguousarray(placements, np.int64), sequence, R, R[4], out, kinds)
    return out, tuple(int(v) for v in kinds)


@njit(cache=True)
def commit(board, shape, x, y, s, t, R, score, kinds, out_place, score_by_step):
    """Lock piece ``t`` (0-based) at (x, y, s) on ``board`` for good: record the placement, the
    score after it and its clear kind; returns the new score."""
    end, f, points = lock_and_score(board, R[0][shape, s], x, y, t + 1, R)
    if f and end == GOING_ON:
        kinds[f] += 1
    out_place[t, 0] = x
    out_place[t, 1] = y
    out_place[t, 2] = s
    score_by_step[t] = score + points
    return score + points


#: stop codes of the single-path kernels (greedy, lookahead); -1 = still going
STOP_NAMES = ("done", "stuck", "spawn_blocked", "aborted", "interrupted")
#: the stop code a search loop sets when `Policy.interrupted` (the kernels never return it)
INTERRUPTED = 4


def path_result(score, done, stop, kinds, places, by_step, threshold, nodes) -> SolveResult:
    """The result of a single-path policy whose kernel placed ``done`` pieces (its best is its path)."""
    result = SolveResult(
        score=int(score), pieces=done, score_by_step=by_step[:done], best_by_step=by_step[:done].copy(),
        clear_kinds=tuple(int(v) for v in kinds), placements=places[:done],
        stop=STOP_NAMES[stop] if stop >= 0 else "done", nodes=nodes)
    if result.aborted:
        result.abort_piece = done
        result.abort_threshold = float(threshold[done - 1])
    return result


class Policy(ABC):
    """A search policy over the known piece sequence. Subclasses implement `search`."""

    name: str = ""

    def __init__(self, config: SolverConfig, rules: Rules, evaluator: Evaluator, sequence: np.ndarray, pieces: int):
        self.config = config
        self.rules = rules
        self.evaluator = evaluator
        self.sequence = np.ascontiguousarray(sequence, dtype=np.int64)
        self.pieces = pieces
        #: set by the first Ctrl-C of an interruptible run; a search loop checks it between steps
        #: and stops with its best path so far (``stop = "interrupted"``)
        self.interrupted = False

    @abstractmethod
    def search(self, threshold: np.ndarray, progress: Progress | None) -> SolveResult:
        """Play up to ``self.pieces`` pieces; ``threshold[t]`` is the least best score allowed after
        piece t + 1 (-inf: unchecked)."""

    def run(self, threshold: np.ndarray, progress: Progress | None = None,
            interruptible: bool = False) -> SolveResult:
        """`search`, timed; a two-piece warm-up first loads (or compiles) the kernels, so that
        ``seconds`` is the search alone. With ``interruptible`` (main thread only), a first Ctrl-C
        or kill (SIGTERM) during the search sets `interrupted` instead of raising or ending the
        process, so the search ends with its best path so far; a second one acts as usual."""
        self.warm_up()
        start = time.perf_counter()
        with self._first_signal_stops() if interruptible else contextlib.nullcontext():
            result = self.search(threshold, progress)
        result.seconds = time.perf_counter() - start
        return result

    def warm_up(self) -> None:
        """Load (or compile) the kernels the search uses: a two-piece search on a copy."""
        warm = copy.copy(self)
        warm.pieces = min(2, self.pieces)
        warm.search(np.full(warm.pieces, -np.inf), None)

    def chunk_stop(self, stop: int, done: int) -> int:
        """The stop code of a single-path search after a kernel chunk that left it at ``done``
        pieces: `INTERRUPTED` when it was still going (``stop`` < 0, pieces left) and a first
        Ctrl-C came, else ``stop``."""
        return INTERRUPTED if self.interrupted and stop < 0 and done < self.pieces else stop

    def layer_stop(self, t: int, top: int, best: int, threshold: np.ndarray,
                   progress: Progress | None) -> tuple | None:
        """After layer ``t`` (0-based piece) of a layered search (beam, profile DP), whose best
        score is ``top`` and best score so far ``best``: report progress every 50 pieces and at
        the last one, then say why to stop here as (stop, abort_piece, abort_threshold), or None:
        ``aborted`` when ``top`` is below ``threshold[t]``, ``interrupted`` after a first Ctrl-C
        with pieces left."""
        n = self.pieces
        if progress and (t % 50 == 49 or t == n - 1):
            progress(t + 1, n, best)
        if top < threshold[t]:
            return "aborted", t + 1, float(threshold[t])
        if self.interrupted and t + 1 < n:
            return "interrupted", None, None
        return None

    @contextlib.contextmanager
    def _first_signal_stops(self):
        """While inside: the first SIGINT (Ctrl-C) or SIGTERM (kill) sets `interrupted`, and puts
        that signal's previous handler back for the next one. A signal the process ignores (as a
        job started in the background ignores SIGINT) stays ignored."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {}

        def first(signum, frame):
            self.interrupted = True
            signal.signal(signum, previous[signum])

        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) is not signal.SIG_IGN:
                previous[sig] = signal.signal(sig, first)
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
