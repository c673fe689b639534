"""The mean length of games too long to play, estimated by multilevel splitting.

A game is a sequence of *cycles*: from a stack at most ``low`` rows high, the stack may climb
through ``levels[0] < levels[1] < ...`` (heights in rows, after the lock and its clears) before it
falls back to ``low`` or the game ends. Stage 0 (one game of ``pieces`` pieces) gives the rate
``r`` per piece at which the stack climbs to ``levels[0]``; stage i + 1 (``trials`` continuations
from boards kept at ``levels[i]``, on fresh pieces) gives the chance ``p_i`` that it climbs on to
``levels[i + 1]`` (at the last level: the game ends) before it falls back. A game then lasts
``1 / (r × Π p_i)`` pieces on average, its rows that times stage 0's rows per piece: fixed-effort
multilevel splitting, seconds where the games it stands for would take hours.

``online.estimate: splitting`` makes a policy's score this estimate (`estimate`; ``online.games``
of them pooled by `combine`), its settings the ``splitting`` section (`SplittingConfig`). In full,
and how close it comes to played games: docs/benchmark-standard.md, "Estimating a game too long to
play: multilevel splitting"."""

from __future__ import annotations

import math
from typing import Literal
import time
from dataclasses import dataclass

import numpy as np
from numba import njit
from pydantic import Field, field_validator

from engine._jit.decorators import inlined
from engine._jit.stamps import KERNEL_PACKAGES
from engine.board import popcount
from engine._jit.decorators import inlined
from engine.lock import GOING_ON
from engine.outcome import Stop

from .. import registry
from ..config import Strict
from ..result import Outcome
from ._base import play_step
from .intervals import mean_ci95

#: how `play_until` stopped: the stack reached ``high``, fell to ``low``, the game ended, or the
#: pieces given ran out
UP, DOWN, DEAD, MORE = range(4)
#: what a level is a height of: the highest column (`stack_height`) or the mean column height
#: (`surface_sum` / width)
MEASURES = ("max", "mean")
MAX, MEAN = range(len(MEASURES))
#: pieces drawn from the source at a time
DRAW = 4096


class SplittingConfig(Strict):
    """``splitting``: how ``online.estimate: splitting`` estimates the mean game length (see
    `solver.online.splitting`): heights are rows of the stack after a lock and its clears."""

    measure: Literal[MEASURES] = Field("mean", description="what a level is a height of: the highest column (max) or the mean column height (mean)")
    low: int = Field(2, ge=0, description="a cycle starts when the stack is at most this many rows high")
    levels: list[int] = Field(
        list(range(5, 20)), min_length=1,
        description="stack heights the stack climbs through, increasing, above low and below the board's height; "
                    "the last stage runs from the last level to the end of the game")
    trials: int = Field(1000, ge=1, description="continuations per level")
    pieces: int = Field(200_000, ge=1, description="pieces of the game that counts cycles and keeps the boards at the first level")

    @field_validator("levels")
    @classmethod
    def _increasing(cls, levels):
        if any(b <= a for a, b in zip(levels, levels[1:])):
            raise ValueError(f"must increase strictly, got {levels}")
        return levels

    def check(self, height: int) -> None:
        """ValueError naming the key when the levels do not fit a board of ``height`` rows."""
        if self.levels[0] <= self.low:
            raise ValueError(f"splitting.levels: the first level ({self.levels[0]}) must be above splitting.low ({self.low})")
        if self.levels[-1] >= height:
            raise ValueError(f"splitting.levels: the last level ({self.levels[-1]}) must be below the board's height ({height})")

    def memory(self, config) -> list:
        """What an estimate keeps (`engine.memory`): a board (a small array: 112 bytes and 2 a row) for
        each climb to the first level in ``pieces`` pieces (at most one a piece), then for each of
        the ``trials`` continuations that climb on. Nothing unless the policy's games are estimated."""
        from engine.memory import Need

        online = getattr(config, "online", None)
        if online is None or online.estimate != "splitting" or registry.get(config.policy).known_pieces:
            return []
        board = 112 + 2 * config.game_rules().height
        return [Need("splitting.pieces", f"{self.pieces:,} pieces and {self.trials:,} trials",
                     (self.pieces + self.trials) * board)]


registry.register_section("splitting", SplittingConfig, known_pieces=False, module=__name__)


@inlined
def stack_height(board, rules):
    """Rows from the floor up to the highest occupied cell (0 for an empty board)."""
    for y in range(rules.height):
        if board[y]:
            return rules.height - y
    return 0


@inlined
def surface_sum(board, rules):
    """The sum of the column heights (each column's rows from the floor up to its highest occupied
    cell): the board's mean height times its width."""
    seen = 0
    total = 0
    for y in range(rules.height):
        new = board[y] & ~seen
        if new:
            seen |= new
            total += popcount(new) * (rules.height - y)
    return total


@inlined
def level_of(board, rules, measure):
    """The quantity the levels are heights of, times the width for the mean (`MEASURES`)."""
    if measure == MEAN:
        return surface_sum(board, rules)
    return stack_height(board, rules)


def _play_until(bundle, pieces, start, t0, board, rules, spec, ws, low, high, measure):
    """Play ``pieces[start], pieces[start + 1], ...`` (piece numbers t0, t0 + 1, ...) on ``board``
    in place until the stack is at least ``high`` rows (`UP`) or at most ``low`` (`DOWN`) after a
    lock, the game ends (`DEAD`), or the pieces run out (`MORE`; the last one is kept as the
    preview); returns (pieces placed, rows cleared, how it stopped)."""
    rows = 0
    for i in range(start, pieces.shape[0] - 1):
        step = play_step(bundle, board, pieces[i], pieces[i + 1] if rules.preview else -1, t0 + i - start, rules,
                         spec, ws)
        if step.end != GOING_ON:
            return i + step.placed - start, rows, DEAD
        rows += step.lines
        h = level_of(board, rules, measure)
        if h >= high:
            return i + 1 - start, rows, UP
        if h <= low:
            return i + 1 - start, rows, DOWN
    return pieces.shape[0] - 1 - start, rows, MORE


#: `_play_until` compiled and cached on disk (policies of the kernel packages), or compiled in each
#: process (a policy defined elsewhere), as `solver.online.games.play_chunk`
play_until = njit(cache=True)(_play_until)
play_until_fresh = njit(_play_until)


class Pieces:
    """One seeded stream of the rules' pieces, read in order by every excursion of an estimate
    (`PieceSource.stream`): the estimate depends on its seed only."""

    def __init__(self, rules, seed: int):
        self.stream = rules.pieces.stream(seed)
        self.buffer = self.stream.take(DRAW)
        self.at = 0

    def ahead(self) -> tuple[np.ndarray, int]:
        """(the buffer, where the next piece is in it), at least two pieces ahead."""
        if self.buffer.shape[0] - self.at < 2:
            self.buffer = np.concatenate((self.buffer[self.at:], self.stream.take(DRAW)))
            self.at = 0
        return self.buffer, self.at

    def used(self, n: int) -> None:
        self.at += n


@dataclass
class Estimate:
    """One splitting estimate: ``pieces0`` pieces and ``rows0`` rows of stage 0 (``ends0`` game
    ends in it), ``arrivals`` climbs to the first level there, ``successes[i]`` of ``trials``
    continuations from level i that went on (`SplittingConfig`), ``pieces_played`` over every
    stage, ``seconds`` of wall time."""

    seed: int
    low: int
    levels: list
    pieces0: int
    rows0: int
    ends0: int
    arrivals: int
    trials: int
    successes: list
    pieces_played: int
    seconds: float

    @property
    def probabilities(self) -> list[float]:
        """p_i: the fraction of continuations from level i that went on; a stage with none that
        did counts half a success (the estimate is then an upper bound on the game's length, in
        effect)."""
        return [max(s, 0.5) / self.trials for s in self.successes]

    @property
    def pieces_per_game(self) -> float:
        """1 / (r × Π p_i): the estimated mean number of pieces a game lasts."""
        rate = max(self.arrivals, 0.5) / self.pieces0 * math.prod(self.probabilities)
        return 1.0 / rate

    @property
    def rows_per_game(self) -> float:
        return self.pieces_per_game * self.rows0 / self.pieces0

    @property
    def log_se(self) -> float:
        """The standard error of log(rows per game) if every excursion were independent: the sum of
        each factor's binomial (or Poisson, for the arrivals) relative variance. Continuations from
        one kept board are not independent, so the true error is larger."""
        var = 1.0 / max(self.arrivals, 0.5)
        for p in self.probabilities:
            var += (1.0 - p) / (self.trials * p)
        return math.sqrt(var)

    @property
    def bounded(self) -> bool:
        """Whether a stage (or stage 0's arrivals) saw no success, so that the estimate is a bound."""
        return self.arrivals == 0 or min(self.successes) == 0

    def summary(self) -> dict:
        return {"seed": self.seed, "rows_per_game": round(self.rows_per_game, 1),
                "pieces_per_game": round(self.pieces_per_game, 1), "log_se": round(self.log_se, 4),
                "bounded": self.bounded, "pieces0": self.pieces0, "rows0": self.rows0, "ends0": self.ends0,
                "arrivals": self.arrivals, "trials": self.trials, "successes": list(self.successes),
                "pieces_played": self.pieces_played, "seconds": round(self.seconds, 3)}


def combine(found) -> tuple[float, tuple[float, float] | None]:
    """Several estimates' mean rows per game and its 95% interval (None for one estimate), pooled
    as a ratio: the mean rows per piece over the mean rate of game ends per piece (1 /
    ``pieces_per_game``). Each estimate of that rate is unbiased in the limit of its stages (a
    product of fractions), but its inverse, the game length, is not: a single 10 x 20 estimate
    varies by ±25-40%, and the mean of the inverses overrates the length by about the square of
    that (Jensen's inequality); the ratio's bias falls as 1 / the number of estimates. The interval
    is Student's t on the rates (`mean_ci95`), inverted, so it is not symmetric; its upper end is
    infinite when the rates' interval reaches 0."""
    rates = [1.0 / e.pieces_per_game for e in found]
    per_piece = float(np.mean([e.rows0 / e.pieces0 for e in found]))
    rate = float(np.mean(rates))
    ci = mean_ci95(rates)
    if ci is None:
        return per_piece / rate, None
    return per_piece / rate, (per_piece / ci[1], per_piece / ci[0] if ci[0] > 0 else math.inf)


def _loop(policy):
    package = type(policy.bundle).__module__.split(".")[0]
    return play_until if package in KERNEL_PACKAGES else play_until_fresh


def excursion(policy, loop, board: np.ndarray, pieces: Pieces, low: int, high: int, measure: int) -> tuple[int, int, int]:
    """Play on ``board`` (in place) until the stack reaches ``high``, falls to ``low`` (in the
    units of `level_of`) or the game ends: (how, pieces placed, rows cleared)."""
    placed = rows = 0
    while True:
        buf, at = pieces.ahead()
        n, r, how = loop(policy.bundle, buf, at, placed, board, policy.rules.kernel, policy.spec, policy.ws, low, high,
                         measure)
        pieces.used(n)
        placed += n
        rows += r
        if how != MORE:
            return how, placed, rows


def estimate(policy, settings: SplittingConfig, seed: int) -> Estimate:
    """The splitting estimate of ``policy``'s mean game length (the module's docstring; in full
    docs/benchmark-standard.md) from ``seed``: the pieces of every stage come from the rules' source
    seeded with ``seed``, and the kept boards each continuation starts from are drawn by a generator
    seeded with (``seed``, 1)."""
    rules = policy.rules
    settings.check(rules.height)
    loop = _loop(policy)
    policy.seed(seed)
    pieces = Pieces(rules, seed)
    pick = np.random.Generator(np.random.PCG64([seed, 1]))
    start = time.perf_counter()
    measure = MEASURES.index(settings.measure)
    unit = rules.width if measure == MEAN else 1  # `level_of` counts the mean height times the width
    low, levels = settings.low * unit, [level * unit for level in settings.levels]
    never = (rules.height + 1) * unit  # a level the stack cannot reach: the excursion ends by falling or dying
    # stage 0: one game, restarted when it ends; a climb to levels[0] counts once per cycle
    board = np.zeros(rules.height, np.uint16)
    kept: list = []
    placed = rows0 = ends0 = arrivals = 0
    cycle_open = True  # the stack has been at most `low` since the last arrival
    while placed < settings.pieces:
        buf, at = pieces.ahead()
        stop = min(buf.shape[0], at + settings.pieces - placed + 1)
        high, fall = (levels[0], -1) if cycle_open else (never, low)
        n, r, how = loop(policy.bundle, buf[:stop], at, placed, board, rules.kernel, policy.spec, policy.ws, fall, high,
                       measure)
        pieces.used(n)
        placed += n
        rows0 += r
        if how == UP:
            arrivals += 1
            kept.append(board.copy())
            cycle_open = False
        elif how == DOWN:
            cycle_open = True
        elif how == DEAD:
            ends0 += 1
            arrivals += 1 if cycle_open else 0  # a game that ends at once still climbed
            board[:] = 0
            cycle_open = True
    played = placed
    successes = []
    for i in range(len(levels)):
        high = levels[i + 1] if i + 1 < len(levels) else never
        arrived: list = []
        if kept:
            for _ in range(settings.trials):
                origin = kept[int(pick.integers(len(kept)))]
                if origin is None:  # a continuation that ended the game: past every level
                    arrived.append(None)
                    continue
                board = origin.copy()
                how, n, _ = excursion(policy, loop, board, pieces, low, high, measure)
                played += n
                if how == UP:
                    arrived.append(board)
                elif how == DEAD:
                    arrived.append(None)
        successes.append(len(arrived))
        kept = arrived
    return Estimate(seed, settings.low, list(settings.levels), placed, rows0, ends0, arrivals, settings.trials, successes, played,
                    time.perf_counter() - start)


@dataclass(kw_only=True)
class SplittingSeries(Outcome):
    """A series of splitting estimates, as `solve` returns it under ``online.estimate: splitting``
    (every field of `solver.Outcome`, and): the ``settings`` (the splitting section), the
    ``estimates`` (one `Estimate` per seed), their pooled mean rows (points) per game (``mean``,
    `combine`) and its 95% interval (``ci95``, None for fewer than 2 estimates). ``score`` is that
    mean rounded to an integer, ``pieces`` every piece played, ``best_by_step[i]`` the pooled mean
    of the first i + 1 estimates (early abort's curve); no record."""

    settings: SplittingConfig
    estimates: list[Estimate]
    mean: float
    ci95: tuple[float, float] | None

    def summary(self) -> dict:
        ci = self.ci95
        return {**super().summary(), "best_by_step": [int(v) for v in self.best_by_step],
                "splitting": {"settings": self.settings.model_dump(), "mean_rows_per_game": round(self.mean, 1),
                              "ci95": None if ci is None else [round(ci[0], 1), round(ci[1], 1)],
                              "estimates": [e.summary() for e in self.estimates]}}


def solve_splitting(policy, config, seeds, stop, stopped, pruner, progress=None) -> SplittingSeries:
    """The series of ``online.estimate: splitting`` (`solver.online.games.solve_games`): one estimate
    per seed, until ``stop(i, the pooled mean of the first i + 1)`` says to stop (early abort), as a
    `SplittingSeries` (``stopped["at"]``: the estimate after which it stopped, whose threshold
    ``pruner`` holds). ``progress(pieces played, None, score so far)``."""
    settings = config.splitting
    settings.check(policy.rules.height)
    seeds = list(seeds)
    estimate(policy, SplittingConfig(levels=[settings.levels[0]], low=settings.low, measure=settings.measure,
                                     trials=1, pieces=2), seeds[0])  # load or compile the kernel
    start = time.perf_counter()
    found = []
    running = []
    for i, seed in enumerate(seeds):
        found.append(estimate(policy, settings, seed))
        running.append(combine(found)[0])
        if progress:
            progress(sum(e.pieces_played for e in found), None, int(round(running[-1])))
        if stop(i, running[-1]):
            break
    mean, ci = combine(found)
    running = np.array(running).round().astype(np.int64)
    result = SplittingSeries(
        score=int(round(mean)), pieces=int(sum(e.pieces_played for e in found)), best_by_step=running,
        clear_kinds=(0, 0, 0, 0, 0), stop=(Stop.ABORTED if stopped["at"] is not None else Stop.DONE).label,
        seconds=time.perf_counter() - start, settings=settings, estimates=found, mean=mean, ci95=ci)
    if stopped["at"] is not None:
        result.abort_piece = stopped["at"] + 1
        result.abort_threshold = float(pruner.curve[stopped["at"]])
    return result
