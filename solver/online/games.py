"""Seeded games for the policies of unknown pieces: N games with a piece cap, played inside numba,
and the series as a solver result (what `solve` returns for such a policy, what tuning scores).

Game ``i`` draws its pieces from the rules' source with seed ``seed + i`` (`PieceSource.stream`, so a
game's pieces are exactly the rules' sequence for that seed, drawn a chunk at a time: a game of
millions of pieces never holds them all); the policy sees the current piece and, when the rules show
it, the next one (the preview) only. A game ends when a piece's spawn is blocked, when no placement
survives (``stuck``: under drop-only rules, no placement fits), when a lock ends it under the rules,
or at the cap (``capped``). The configuration's ``online`` section says how many games a series
plays. A series' summary gives the mean score with a 95% confidence interval (`mean_ci95`), and
when some game reached the cap, the mean of uncapped games estimated by a survival model
(`GamesResult.survival`).
"""

from __future__ import annotations

import functools
import hashlib
import sys
import time
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from numba import njit
from pydantic import Field, model_validator

from engine import Rules
from engine._jit import cache
from engine._jit.stamps import KERNEL_PACKAGES
from engine.lock import GOING_ON
from engine.outcome import GameEnd, Stop
from evaluators import Evaluator, load_evaluator

from .. import registry
from ..config import Strict
from ..registry import SolverConfig
from ..result import Outcome
from ..threshold import Pruner, Threshold
from ._base import OnlinePolicy, play_step
from .intervals import CI_METHOD, mean_ci95, survival_mean, survival_summary
from .splitting import SplittingSeries, solve_splitting

#: `play_chunk`'s end codes (int constants, from `engine.outcome.GameEnd`), `PLAYING` while the game goes on
CAPPED, STUCK, SPAWN_BLOCKED, RULES_END = (int(end) for end in (
    GameEnd.CAPPED, GameEnd.STUCK, GameEnd.SPAWN_BLOCKED, GameEnd.RULES_END))
PLAYING = int(GameEnd.GOING_ON)
#: how a game can end (`GamesResult.ends`), as labels
GAME_ENDS = GameEnd.labels((GameEnd.CAPPED, GameEnd.STUCK, GameEnd.SPAWN_BLOCKED, GameEnd.RULES_END))
CHUNK = 20_000  # pieces per kernel call (progress and Ctrl-C between calls)
#: pieces drawn at once when a game resumed from a checkpoint draws again those it placed
SKIP_BLOCK = 1 << 22
#: a series' progress total (games x cap) above which none is given
PROGRESS_TOTAL_MAX = 100_000_000
#: keys the ``online`` section held before each policy had its own section -> where they are now
MOVED_KEYS = {"objective": "preview.objective and expect.objective", "keep": "preview.keep and expect.keep",
              "reduce": "expect.reduce"}


class OnlineConfig(Strict):
    """``online``: how a policy for unknown pieces, which sees the current piece and the preview
    only, is scored: it plays ``games`` seeded games (seeds ``seed``, ``seed`` + 1, ...;
    ``pieces`` is the cap per game) and scores their mean. Each such policy's own settings are in
    its section."""

    games: int = Field(1, ge=1, description="seeded games played (estimates made, under estimate: splitting); the score is their mean")
    estimate: Literal["games", "splitting"] = Field(
        "games", description="games: play the games, each to its end or the cap (pieces); splitting: estimate the mean "
                             "game length by multilevel splitting (the splitting section; no cap), for games too long to play")

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data):
        moved = [k for k in MOVED_KEYS if isinstance(data, dict) and k in data]
        if moved:
            raise ValueError("; ".join(f"{k}: moved to {MOVED_KEYS[k]}" for k in moved))
        return data

    def memory(self, config) -> list:
        """What a series keeps per game (`engine.memory`): its seed, score, pieces, end and time, as
        Python objects and arrays, and its line of summary.json (about 256 bytes); an estimate
        (``estimate: splitting``) about 2 KB. Nothing for a policy of the known sequence."""
        from engine.memory import Need

        if registry.get(config.policy).known_pieces:
            return []
        each = 2048 if self.estimate == "splitting" else 256
        return [Need("online.games", f"{self.games:,} {'estimates' if self.estimate == 'splitting' else 'games'}",
                     self.games * each)]


registry.register_section("online", OnlineConfig, known_pieces=False, module=__name__)


def _play_chunk(bundle, pieces, t0, board, rules, spec, ws, score, kinds):
    """Play pieces t0 .. t0 + n - 1, whose shapes are ``pieces[0 .. n - 1]`` (``pieces`` holds one
    more, the last one's next piece), on ``board`` in place with the policy whose bundle is
    ``bundle`` (`play_step`; shown the next piece when the rules show it); returns (pieces placed,
    score, end code: `PLAYING`, `SPAWN_BLOCKED`, `STUCK` or `RULES_END`: any end of a lock);
    ``kinds[f]`` counts the clears of f rows."""
    for i in range(pieces.shape[0] - 1):
        t = t0 + i
        step = play_step(bundle, board, pieces[i], pieces[i + 1] if rules.preview else -1, t, rules, spec, ws)
        if step.end != GOING_ON:
            return t + step.placed, score, RULES_END if step.placed else step.end
        score += step.points
        if step.lines:
            kinds[step.lines] += 1
    return t0 + pieces.shape[0] - 1, score, PLAYING


#: the game loop, compiled once per policy and cached on disk: for the policies of the kernel
#: packages, which count among this module's dependencies (`engine._jit.stamps.REGISTRANTS`)
play_chunk = njit(cache=True)(_play_chunk)
#: the same loop compiled in each process: for a policy defined where the cache cannot stamp it
#: (a notebook's cell, a file outside the project)
play_chunk_fresh = njit(_play_chunk)
_play_loop = njit(inline="always")(_play_chunk)


def _play_chunk_bare(bundle, pieces, t0, board, rules, spec, ws, score, kinds):
    """`_play_chunk`, compiled without numba's reference counting (`game_loop`); a function of its
    own, as numba's cache tells kernels apart by their function, not by their options."""
    return _play_loop(bundle, pieces, t0, board, rules, spec, ws, score, kinds)


#: the game loop without numba's reference counting, for a policy whose kernel allocates nothing
#: (`OnlinePolicy.allocates`): it passes the workspace's arrays to the policy at every piece, and
#: counting their references (an atomic add and subtract each) cost a tenth of a standard game
play_chunk_bare = njit(cache=True, _nrt=False)(_play_chunk_bare)
play_chunk_bare_fresh = njit(_nrt=False)(_play_chunk_bare)


def outside_stamp(policy: OnlinePolicy) -> str | None:
    """For a policy defined in the project's sources outside the kernel packages (a test, a
    script): a digest of the cache's stamps (`engine._jit.stamps`: each file and what it imports)
    of the files defining its class, its bundle and its kernel; None when one of them is not a
    project source, or when there is no cache folder."""
    if cache.CACHE_DIR is None:
        return None
    kernel = type(policy).choose_kernel
    files = {getattr(sys.modules.get(c.__module__), "__file__", None) for c in (type(policy), type(policy.bundle))}
    files.add(getattr(getattr(getattr(kernel, "py_func", kernel), "__code__", None), "co_filename", None))
    if None in files:  # a class without a module file, a kernel without code (not a numba kernel)
        return None
    stamps = []
    for f in sorted(str(f) for f in files):
        try:
            path = Path(f).resolve()
            stamps.append(f"{path.relative_to(cache.ROOT).as_posix()} {cache.SOURCES.stamp(path)}")
        except (ValueError, OSError, SyntaxError):  # not a project source, or not one that parses
            return None
    return hashlib.sha1("\n".join(stamps).encode()).hexdigest()


@functools.lru_cache(maxsize=None)
def stamped_loop(stamp: str, bare: bool):
    """The game loop (``bare``: without reference counting) as a function of its own, named by
    ``stamp`` (`outside_stamp`), cached on disk: numba keys its cache by a function's name and
    its file's stamp, so an edit to the policy's files names another function, never a stale one."""
    fn = _play_chunk_bare if bare else _play_chunk
    name = f"{fn.__name__}_{stamp[:24]}"
    twin = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    twin.__qualname__, twin.__module__, twin.__doc__ = name, fn.__module__, fn.__doc__
    return njit(cache=True, _nrt=False)(twin) if bare else njit(cache=True)(twin)


def game_loop(policy: OnlinePolicy):
    """The compiled game loop for ``policy``: `play_chunk` (`play_chunk_bare` for a policy whose
    kernel allocates nothing); for a policy defined in the project outside the kernel packages,
    the same loop under a name of its files' stamp (`stamped_loop`); for one defined where the
    cache cannot stamp it, the loop compiled in each process (`play_chunk_fresh`,
    `play_chunk_bare_fresh`)."""
    bare = not policy.allocates
    if type(policy.bundle).__module__.split(".")[0] in KERNEL_PACKAGES:
        return play_chunk_bare if bare else play_chunk
    stamp = outside_stamp(policy)
    if stamp is not None:
        return stamped_loop(stamp, bare)
    return play_chunk_bare_fresh if bare else play_chunk_fresh


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
        return sum(e == GameEnd.CAPPED.label for e in self.ends)

    @property
    def ci95(self) -> tuple[float, float] | None:
        """The mean score's 95% confidence interval (`mean_ci95`); None for fewer than 2 games."""
        return mean_ci95(self.scores)

    @property
    def survival(self) -> tuple[float, tuple[float, float]] | None:
        """The mean score a game uncapped and its 95% interval, estimated with the capped games
        censored (`survival_mean`): the plain mean understates a series where some games reached
        the cap. None when no game was capped."""
        if not self.capped:
            return None
        return survival_mean(self.scores, self.pieces, self._ended)

    @property
    def _ended(self) -> list[bool]:
        return [e != GameEnd.CAPPED.label for e in self.ends]

    def summary(self) -> dict:
        ci = self.ci95
        return {
            "seeds": [int(s) for s in self.seeds], "cap": int(self.cap),
            "scores": [int(v) for v in self.scores], "pieces": [int(v) for v in self.pieces],
            "ends": list(self.ends), "mean": round(self.mean, 1), "std": round(self.std, 1),
            "ci95": None if ci is None else [round(ci[0], 1), round(ci[1], 1)], "ci95_method": CI_METHOD,
            "min": int(np.min(self.scores)) if len(self.scores) else 0,
            "max": int(np.max(self.scores)) if len(self.scores) else 0,
            "capped": self.capped, "clears": {str(k): int(self.clear_kinds[k]) for k in range(1, 5)},
            "seconds": [round(float(s), 3) for s in self.seconds],
            **({"survival": survival_summary(self.scores, self.pieces, self._ended)} if self.capped else {}),
        }


@dataclass(kw_only=True)
class GamesSeries(Outcome):
    """A series of seeded games, as `solve` returns it for a policy of unknown pieces (every field of
    `solver.Outcome`, and): ``games``, the games themselves (`GamesResult`: each one's seed, score,
    pieces, end and time). ``score`` is their mean score rounded to an integer, ``pieces`` every
    piece placed, ``clear_kinds`` the clears of all games, ``best_by_step[g]`` the running mean
    after game g (early abort's curve: a threshold is checked after each game), ``abort_piece``
    the game (1-based) after which the threshold stopped the series; no record."""

    games: GamesResult

    def summary(self) -> dict:
        return {**super().summary(), "best_by_step": [int(v) for v in self.best_by_step],
                "games": self.games.summary()}


def make_policy(config: SolverConfig, evaluator: Evaluator | None = None) -> OnlinePolicy:
    """The `OnlinePolicy` of ``config`` (its rules and evaluator resolved); ValueError when its
    policy plays the known sequence."""
    entry = registry.get(config.policy)
    if entry.known_pieces:
        raise ValueError(f"policy {config.policy!r} plays the known sequence, not unknown pieces "
                         f"(those are {', '.join(registry.names(known_pieces=False))})")
    return entry.policy(config, config.game_rules(), evaluator or load_evaluator(config.evaluator))


@dataclass
class GameCheckpoint:
    """A game stopped between two kernel calls (`play_game`'s ``keep``): its seed, the pieces placed,
    the score, the board's rows (uint16), its clears by rows (``kinds[f]``, int64) and the wall
    seconds played. `play_game` from it plays on to the game never stopped: the pieces it has not
    placed are drawn again from the seed, and the policy has no state of its own between pieces
    (`game_can_resume`). ``pieces`` may be any number below the game's cap."""

    seed: int
    pieces: int
    score: int
    board: np.ndarray
    kinds: np.ndarray
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {"seed": int(self.seed), "pieces": int(self.pieces), "score": int(self.score),
                "board": [int(v) for v in self.board], "kinds": [int(v) for v in self.kinds],
                "seconds": round(float(self.seconds), 3)}

    @classmethod
    def from_json(cls, data: dict) -> "GameCheckpoint":
        """The state `to_json` wrote; ValueError (naming the key) for anything else."""
        if not isinstance(data, dict):
            raise ValueError(f"a checkpoint is a JSON object, got {type(data).__name__}")
        for key in ("seed", "pieces", "score"):
            if type(data.get(key)) is not int or data[key] < 0:
                raise ValueError(f"{key}: should be a whole number >= 0, got {data.get(key)!r}")
        for key in ("board", "kinds"):
            if not isinstance(data.get(key), list) or not all(type(v) is int and v >= 0 for v in data[key]):
                raise ValueError(f"{key}: should be a list of whole numbers >= 0")
        if len(data["kinds"]) != 5:
            raise ValueError(f"kinds: should hold 5 counts (clears of 0-4 rows), got {len(data['kinds'])}")
        if max(data["board"], default=0) >= 1 << 16:
            raise ValueError("board: a row is a 16-bit mask")
        seconds = data.get("seconds", 0.0)
        if type(seconds) not in (int, float) or seconds < 0:
            raise ValueError(f"seconds: should be a number >= 0, got {seconds!r}")
        return cls(data["seed"], data["pieces"], data["score"], np.array(data["board"], np.uint16),
                   np.array(data["kinds"], np.int64), float(seconds))


def game_can_resume(policy: OnlinePolicy) -> bool:
    """Whether a game of ``policy`` can be stopped and played on (`GameCheckpoint`): a policy with
    draws of its own (one that overrides `OnlinePolicy.seed`) carries their state from piece to
    piece."""
    return type(policy).seed is OnlinePolicy.seed


def play_game(policy: OnlinePolicy, seed: int, cap: int, progress=None, start: GameCheckpoint | None = None,
              keep=None, keep_seconds: float = 60.0) -> tuple[int, int, str, np.ndarray, float]:
    """One game: (score, pieces, end, clear kinds, seconds). ``progress(pieces, score)`` after each
    chunk. ``start``: the game as a ``keep`` left it, played on from there (the same game as one
    never stopped; its seconds count). ``keep(checkpoint)``: given the game's `GameCheckpoint`
    after a chunk, at most every ``keep_seconds`` of wall time, while it goes on."""
    rules: Rules = policy.rules
    stream = rules.pieces.stream(seed)
    pieces = stream.take(1)
    board = np.zeros(rules.height, np.uint16)
    kinds = np.zeros(5, np.int64)
    loop = game_loop(policy)
    policy.seed(seed)
    t, score, end, before = 0, 0, PLAYING, 0.0
    if start is not None:
        _check_start(policy, start, seed, cap, board.shape, rules.kernel.full_row)
        drawn = 1
        while drawn <= start.pieces:  # pieces 1 .. t drawn again (the parts of a stream join to its sequence)
            pieces = stream.take(min(start.pieces + 1 - drawn, SKIP_BLOCK))
            drawn += len(pieces)
        t, board[:], kinds[:], score, before = start.pieces, start.board, start.kinds, start.score, start.seconds
    begin = time.perf_counter()
    kept = begin
    while t < cap and end == PLAYING:
        pieces = np.concatenate((pieces[-1:], stream.take(min(cap - t, CHUNK))))  # pieces t .. t + n
        t, score, end = loop(policy.bundle, pieces, t, board, rules.kernel, policy.spec, policy.ws, score, kinds)
        if progress:
            progress(int(t), int(score))
        if keep is not None and end == PLAYING and t < cap and time.perf_counter() - kept >= keep_seconds:
            kept = time.perf_counter()
            keep(GameCheckpoint(seed, int(t), int(score), board.copy(), kinds.copy(), before + kept - begin))
    return (int(score), int(t), GameEnd(CAPPED if end == PLAYING else end).label, kinds,
            before + time.perf_counter() - begin)


def _check_start(policy: OnlinePolicy, start: GameCheckpoint, seed: int, cap: int, shape: tuple,
                 full_row: int) -> None:
    """ValueError when ``start`` cannot be played on by ``policy`` as game ``seed`` capped at ``cap``."""
    if not game_can_resume(policy):
        raise ValueError(f"policy {policy.name!r} has draws of its own: its games cannot be played on from a state")
    if start.seed != seed:
        raise ValueError(f"a checkpoint of seed {start.seed} given for the game of seed {seed}")
    if start.pieces >= cap:
        raise ValueError(f"a checkpoint after {start.pieces:,} pieces, at or past the cap {cap:,}")
    if start.board.shape != shape or start.kinds.shape != (5,):
        raise ValueError(f"a checkpoint of {start.board.shape[0]} rows given for a board of {shape[0]}")
    if (start.board.astype(np.int64) & ~int(full_row)).any():
        raise ValueError("a checkpoint whose board has cells beyond the rules' width")


def play_games(policy: OnlinePolicy, seeds, cap: int, progress=None, stop=None) -> GamesResult:
    """Play one game per seed with ``policy`` up to ``cap`` pieces each. ``progress(game index,
    pieces, score)`` after each chunk; ``stop(game index, mean score so far)`` returning True ends the
    series after that game (early abort)."""
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
        if stop is not None and stop(i, float(np.mean(scores))):
            break
    return GamesResult(seeds[:len(scores)], cap, np.array(scores, np.int64), np.array(pieces, np.int64), ends,
                       tuple(int(v) for v in kinds), np.array(secs))


def solve_games(config: SolverConfig, threshold: Threshold | None = None, progress=None,
                evaluator: Evaluator | None = None) -> GamesSeries | SplittingSeries:
    """The series of a configuration: ``config.online.games`` games (seeds ``config.seed`` (default
    0), + 1, ...) with a cap of ``config.pieces`` pieces, as a `GamesSeries` (with ``online.estimate:
    splitting``, that many estimates instead: a `SplittingSeries`, `solve_splitting`).
    ``progress(pieces, total, score)`` counts the pieces placed over all games, of games x cap
    (None when that exceeds `PROGRESS_TOTAL_MAX`: the cap is then a bound games seldom reach)."""
    policy = make_policy(config, evaluator)
    cap = int(config.pieces)
    n = config.online.games
    first = 0 if config.seed is None else int(config.seed)
    pruner = threshold.pruner(n) if threshold else Pruner.unchecked(n)
    stopped = {"at": None}

    def stop(i, mean):  # after game (or estimate) i, with the series' mean so far
        if pruner.should_stop(i, mean):
            stopped["at"] = i
            return True
        return False

    if config.online.estimate == "splitting":
        return solve_splitting(policy, config, range(first, first + n), stop, stopped, pruner, progress)

    # pieces placed over the series; a total only where it means something (games that end long
    # before a cap of a billion pieces would otherwise show an ETA of years)
    total = n * cap if n * cap <= PROGRESS_TOTAL_MAX else None
    placed = {"game": 0, "before": 0, "last": 0}

    def report(i, t, s):
        if progress:
            if i != placed["game"]:
                placed["game"], placed["before"] = i, placed["before"] + placed["last"]
            placed["last"] = t
            progress(placed["before"] + t, total, s)

    play_game(policy, first, 1)  # load or compile the kernels
    start = time.perf_counter()
    games = play_games(policy, range(first, first + n), cap, report, stop)
    seconds = time.perf_counter() - start
    scores = games.scores
    running = (np.cumsum(scores) / np.arange(1, len(scores) + 1)).round().astype(np.int64)
    result = GamesSeries(
        score=int(round(games.mean)), pieces=int(games.pieces.sum()), best_by_step=running,
        clear_kinds=games.clear_kinds, stop=(Stop.ABORTED if stopped["at"] is not None else Stop.DONE).label, seconds=seconds,
        games=games)
    if stopped["at"] is not None:
        result.abort_piece = stopped["at"] + 1
        result.abort_threshold = float(pruner.curve[stopped["at"]])
    return result
