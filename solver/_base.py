"""What every policy shares: its inputs, and the run loop around the search."""

from __future__ import annotations

import contextlib
import copy
import signal
import threading
import time
from abc import ABC, abstractmethod
from typing import Callable, NamedTuple

import numpy as np
from numba import njit

from engine import Rules
from engine._jit.decorators import KernelCall, inner
from engine.lock import GOING_ON, lock_copy, lock_piece_call, lost
from engine.outcome import Stop
from evaluators import Evaluator, Placement, evaluate
from evaluators.incremental import ColumnView, column_scratch

from .registry import SolverConfig
from .result import SolveResult
from .threshold import Pruner

#: progress(pieces_done, pieces_total, best_score) is called as the search advances
Progress = Callable[[int, int, int], None]


class ValueScratch(NamedTuple):
    """What valuing children of one parent needs: ``pvals`` (the parent's feature values,
    `evaluators.board_values`), ``locked`` and ``cleared`` (a child before and after its clear),
    and ``columns`` (the parent's columns, `evaluators.incremental.ColumnView`)."""

    pvals: np.ndarray
    locked: np.ndarray
    cleared: np.ndarray
    columns: ColumnView


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def value_scratch(n_features, height):
    return ValueScratch(np.zeros(n_features), np.zeros(height, np.uint16), np.zeros(height, np.uint16),
                        column_scratch(n_features))


@inner
def best_first(values, ranks, n):
    """The indices 0..n-1 best first: ``values`` descending, then tie-break ``ranks`` ascending
    (`evaluators.priority`), then index (generation order). An insertion sort: n is one piece's
    placements (tens), and it compiles in a fraction of the time numba's stable argsort takes."""
    out = np.empty(n, np.int64)
    for i in range(n):
        j = i
        while j > 0 and (values[i] > values[out[j - 1]] or (
                values[i] == values[out[j - 1]] and ranks[i] < ranks[out[j - 1]])):
            out[j] = out[j - 1]
            j -= 1
        out[j] = i
    return out


@inner
def value_child(board, rules, shape, s, x, y, number, spec, vs):
    """Lock piece ``number`` (1-based) of ``shape`` at (x, y, s) on a copy of ``board`` (`lock_copy`:
    ``vs.locked`` and ``vs.cleared`` receive the board before and after the clear) and value it with
    the evaluator ``spec`` (``vs.pvals``: the parent's values, filled by the caller with
    `evaluators.board_values`). Returns (alive, value): ``alive`` is False when the lock loses the
    game (`engine.lock.lost`: it touches the top, or overflows under rules that end the game so)."""
    lock = lock_copy(board, rules, shape, s, x, y, number, vs.locked, vs.cleared)
    if lost(lock.end):
        return False, 0.0
    p = Placement(board, vs.locked, vs.cleared, rules.cells[shape, s], x, y, lock.lines, lock.points, rules.width)
    return True, evaluate(p, vs.pvals, spec)


class Path(NamedTuple):
    """A single path's record as kernels fill it: ``placements[t]`` (x, y, state) of piece t,
    ``score_by_step[t]`` the score after it, ``kinds[f]`` its clears of f rows (index 1..4)."""

    placements: np.ndarray
    score_by_step: np.ndarray
    kinds: np.ndarray


def new_path(pieces: int) -> Path:
    return Path(np.zeros((pieces, 3), np.int64), np.zeros(pieces, np.int64), np.zeros(5, np.int64))


@inner
def commit(board, rules, shape, x, y, s, t, score, path):
    """Lock piece ``t`` (0-based) at (x, y, s) on ``board`` for good: record the placement, the
    score after it and its clear kind in ``path``; returns the new score."""
    lock = lock_piece_call(board, rules, shape, s, x, y, t + 1)
    if lock.lines and lock.end == GOING_ON:
        path.kinds[lock.lines] += 1
    path.placements[t, 0] = x
    path.placements[t, 1] = y
    path.placements[t, 2] = s
    path.score_by_step[t] = score + lock.points
    return score + lock.points


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def _path_scores(placements, sequence, rules, path):
    board = np.zeros(rules.height, np.uint16)
    score = 0
    for t in range(placements.shape[0]):
        score = commit(board, rules, sequence[t], placements[t, 0], placements[t, 1], placements[t, 2], t, score, path)
    return score


def path_scores_call(placements: np.ndarray, sequence: np.ndarray, rules: Rules) -> KernelCall:
    """`path_scores`'s kernel with the arguments it passes: ``placements`` as int64 rows and a
    `Path` as long, which the kernel fills in."""
    placements = np.ascontiguousarray(placements, np.int64)
    return KernelCall(_path_scores, (placements, sequence, rules.kernel, new_path(len(placements))))


def path_scores(placements: np.ndarray, sequence: np.ndarray, rules: Rules) -> tuple[np.ndarray, tuple]:
    """The score after each placement of a path from the empty board, and its clears by kind."""
    kernel, args = path_scores_call(placements, sequence, rules)
    kernel(*args)
    path = args[-1]
    return path.score_by_step, tuple(int(v) for v in path.kinds)


#: the kernels' stop codes (int constants, from `engine.outcome.Stop`; `GOING` while pieces are left to play)
GOING, DONE, STUCK, BLOCKED, ABORTED, INTERRUPTED = (int(stop) for stop in (
    Stop.GOING, Stop.DONE, Stop.STUCK, Stop.SPAWN_BLOCKED, Stop.ABORTED, Stop.INTERRUPTED))


def path_result(score, done, stop, path: Path, pruner: Pruner, nodes) -> SolveResult:
    """The result of a single-path policy whose kernel placed ``done`` pieces (its best is its path)
    under ``pruner``."""
    by_step = path.score_by_step
    result = SolveResult(
        score=int(score), pieces=done, score_by_step=by_step[:done], best_by_step=by_step[:done].copy(),
        clear_kinds=tuple(int(v) for v in path.kinds), placements=path.placements[:done],
        stop=Stop(stop).written.label, nodes=nodes)
    if result.aborted:
        result.abort_piece = done
        result.abort_threshold = float(pruner.curve[done - 1])
    return result


class CheckpointError(ValueError):
    """A saved search that cannot be resumed: another search's, another format, or unreadable; or
    one that cannot be saved (a full disk)."""


class CheckpointUnreadable(CheckpointError):
    """A saved search whose file cannot be read as one (truncated, garbled, a value out of its
    range): a cache of progress that may be discarded, the search played again from its start."""


class Policy(ABC):
    """A search policy over the known piece sequence. Subclasses implement `search` and register
    themselves by name (``@register``, `solver.registry`), declaring their ``name`` and ``Settings``."""

    name: str = ""
    #: its settings: a pydantic model, the configuration section named after it (None: it has none)
    Settings = None
    #: it plays the known sequence (`solver.registry`; a policy for unknown pieces: False)
    known_pieces: bool = True
    #: it can save its search to a file and continue from it (`checkpoint`, `resume`)
    resumable: bool = False
    #: the dotted setting whose values draw another order of equal-valued boards (``beam.tie_seed``),
    #: an instance of the known sequence for racing (`optimizers.instances`); None: the policy has none
    tie_seed: str | None = None
    #: a resumable policy's checkpoint file (None: none is kept), and whether to start from it
    checkpoint = None
    resume: bool = False
    #: True on the copy `warm_up` runs (which must not touch a checkpoint)
    warming: bool = False

    def __init__(self, config: SolverConfig, rules: Rules, evaluator: Evaluator, sequence: np.ndarray, pieces: int):
        self.config = config
        self.rules = rules
        self.evaluator = evaluator
        self.sequence = np.ascontiguousarray(sequence, dtype=np.int64)
        self.pieces = pieces
        #: set by the first Ctrl-C of an interruptible run; a search loop checks it between steps
        #: and stops with its best path so far (``stop = "interrupted"``)
        self.interrupted = False
        #: that signal (SIGINT or SIGTERM), None before it
        self.signalled: signal.Signals | None = None

    @abstractmethod
    def search(self, pruner: Pruner, progress: Progress | None) -> SolveResult:
        """Play up to ``self.pieces`` pieces, stopping where ``pruner`` says (early abort: its
        `Pruner.should_stop`, or in a kernel `solver.threshold.below` on its ``curve``)."""

    def run(self, pruner: Pruner, progress: Progress | None = None,
            interruptible: bool = False, searched: Callable[[], None] | None = None) -> SolveResult:
        """`search`, timed; a two-piece warm-up first loads (or compiles) the kernels, so that
        ``seconds`` is the search alone. With ``interruptible`` (main thread only), a first Ctrl-C
        or kill (SIGTERM) during the search sets `interrupted` instead of raising or ending the
        process, so the search ends with its best path so far; a second one acts as usual.
        ``searched()`` is called once the search is over (before the signal handlers the search
        replaced are put back), so a caller's handlers can tell a signal after it from one during it."""
        self.warm_up()
        start = time.perf_counter()
        with self._first_signal_stops(searched) if interruptible else contextlib.nullcontext():
            result = self.search(pruner, progress)
        if not interruptible and searched is not None:
            searched()
        result.seconds = time.perf_counter() - start
        return result

    def kernel_parts(self) -> dict[str, KernelCall]:
        """Kernels of the search that another process can compile (or load) on its own while this
        one runs `warm_up`, which then loads them from the cache (`solver.solve.compile_parts`):
        each at the argument types the search calls it with, named, in the order the search's
        compile meets them (depth first, in the order of its code), which another process follows.
        Leave out what the search meets at once, before another process could have it ready.
        None by default."""
        return {}

    def path_scores_call(self) -> KernelCall:
        """`path_scores`'s kernel at this policy's types (a part for a policy that ends with it)."""
        return path_scores_call(np.zeros((0, 3), np.int64), self.sequence, self.rules)

    def warm_up(self) -> None:
        """Load (or compile) the kernels the search uses: a two-piece search on a copy."""
        warm = copy.copy(self)
        warm.pieces = min(2, self.pieces)
        warm.warming = True
        warm.search(Pruner.unchecked(warm.pieces), None)

    def chunk_stop(self, stop: int, done: int) -> int:
        """The stop code of a single-path search after a kernel chunk that left it at ``done``
        pieces: `INTERRUPTED` when it was still going (`GOING`, pieces left) and a first Ctrl-C
        came, else ``stop``."""
        return INTERRUPTED if self.interrupted and stop == GOING and done < self.pieces else stop

    def layer_stop(self, t: int, top: int, best: int, pruner: Pruner,
                   progress: Progress | None) -> tuple | None:
        """After layer ``t`` (0-based piece) of a layered search (beam, profile DP), whose best
        score is ``top`` and best score so far ``best``: report progress every 50 pieces and at
        the last one, then say why to stop here as (stop, abort_piece, abort_threshold), or None:
        ``aborted`` when ``pruner`` stops a search whose best is ``top`` there, ``interrupted``
        after a first Ctrl-C with pieces left."""
        n = self.pieces
        if progress and (t % 50 == 49 or t == n - 1):
            progress(t + 1, n, best)
        if pruner.should_stop(t, top):
            return Stop.ABORTED.label, t + 1, float(pruner.curve[t])
        if self.interrupted and t + 1 < n:
            return Stop.INTERRUPTED.label, None, None
        return None

    @contextlib.contextmanager
    def _first_signal_stops(self, searched: Callable[[], None] | None = None):
        """While inside: the first SIGINT (Ctrl-C) or SIGTERM (kill) sets `interrupted`, and puts
        that signal's previous handler back for the next one. A signal the process ignores (as a
        job started in the background ignores SIGINT) stays ignored. On leaving, ``searched()``
        is called, then the previous handlers are put back."""
        if threading.current_thread() is not threading.main_thread():
            try:
                yield
            finally:
                if searched is not None:
                    searched()
            return
        previous = {}

        def first(signum, frame):
            self.interrupted = True
            self.signalled = signal.Signals(signum)
            signal.signal(signum, previous[signum])

        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) is not signal.SIG_IGN:
                previous[sig] = signal.signal(sig, first)
        try:
            yield
        finally:
            if searched is not None:
                searched()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
