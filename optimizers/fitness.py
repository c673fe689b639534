"""Fitness: play one resolved solver configuration and reduce the result to a tuning record.

`evaluate` runs in the workers: it takes a `Task` (the solver config mapping, the threshold array,
numba threads) and returns an `Evaluated`: the `TuningRecord` (fitness, score, pieces, the stop,
the abort and its threshold, seconds) and the ``best_by_step`` curve. `Memo` remembers records by
the resolved config's key (`canonical`), so a duplicate candidate is never simulated twice, and
reuses one only where a new simulation under the current threshold would give the same record.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np

from engine.outcome import GameEnd, Stop

SIMULATIONS = 0  # solver runs in this process (tests count them)
#: hex digits of a config's SHA-1 kept as its key (64 bits: no clash among a run's candidates)
KEY_HEX_DIGITS = 16


@dataclass(frozen=True)
class TuningRecord:
    """An evaluation's result:

    - ``fitness``: the score of the prefix played for a finished candidate; for an aborted one, per
      ``aborted_fitness``, its running best at the abort piece (``score_at_abort``) or 0 (``zero``);
    - ``score``: the path's score (finished), or the running best at the abort piece (aborted: the
      value compared with the threshold); ``pieces``: pieces simulated (the abort piece when aborted);
    - ``stop`` (the policy's), ``aborted``, ``abort_piece``, ``threshold`` (the value it fell below);
    - ``seconds``: wall time of the evaluation in the worker.

    As plain data (a run's ``on_evaluation``, the figures' tables) it is the dict `as_dict`, which
    `from_dict` reads back."""

    fitness: float
    score: int
    pieces: int
    stop: str
    aborted: bool
    abort_piece: int | None
    threshold: float | None
    seconds: float

    @classmethod
    def from_dict(cls, data: dict) -> "TuningRecord":
        return cls(**{name: data[name] for name in RECORD_FIELDS})

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in RECORD_FIELDS}

    def repeated(self) -> "TuningRecord":
        """The record of a candidate that repeats this one: the same result, no time spent."""
        return replace(self, seconds=0.0)


RECORD_FIELDS = tuple(f.name for f in fields(TuningRecord))


@dataclass(frozen=True)
class Evaluated:
    """What `evaluate` returns: the candidate's ``record`` and its ``curve`` (the result's
    ``best_by_step``, one value per piece simulated, or per game of a series); ``discarded``: the
    line saying that its saved search could not be read and was discarded (None: none was)."""

    record: TuningRecord
    curve: list[int]
    discarded: str | None = None


#: settings added after runs were first keyed, left out of a config's key (and its normalised form)
#: at the value that plays as the versions before them did: a run resumed across the version that
#: added one still finds its evaluations, none simulated again
NEUTRAL_SINCE_KEYED = {("beam", "tie_seed"): 0, ("segment", "tie_seed"): 0}


def canonical(config: dict) -> tuple[str, dict]:
    """(key, normalised config): the config validated by `SolverConfig`, dumped as JSON-ready data
    with ``threads`` and ``meta`` cleared and the `NEUTRAL_SINCE_KEYED` settings at their neutral
    value left out; the key is a digest of its sorted JSON."""
    from solver import SolverConfig

    data = SolverConfig.model_validate(config).model_dump(mode="json")
    data["threads"] = None
    data["meta"] = None
    for (section, key), neutral in NEUTRAL_SINCE_KEYED.items():
        if isinstance(data.get(section), dict) and data[section].get(key) == neutral:
            del data[section][key]
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(text.encode()).hexdigest()[:KEY_HEX_DIGITS], data


def first_abort(curve, threshold) -> int | None:
    """The piece (1-based) at which ``curve`` first fails its check against ``threshold`` (both
    per piece; -inf or NaN thresholds are not checked: `solver.threshold.first_below`), or None."""
    from solver.threshold import first_below

    if threshold is None:
        return None
    n = min(len(curve), len(threshold))
    u = first_below(np.asarray(curve[:n], dtype=np.float64), np.asarray(threshold[:n], dtype=np.float64), 0, n)
    return int(u) + 1 if u >= 0 else None


def aborted_record(curve, piece: int, threshold: float, aborted_fitness: str) -> TuningRecord:
    """The record of a candidate stopped at ``piece`` (1-based) whose running best is ``curve``."""
    best = int(curve[piece - 1])
    return TuningRecord(fitness=float(best) if aborted_fitness == "score_at_abort" else 0.0, score=best,
                        pieces=int(piece), stop=Stop.ABORTED.label, aborted=True, abort_piece=int(piece),
                        threshold=float(threshold), seconds=0.0)


def games_fitness(score: float, ends: Sequence[str] | None, topout_penalty: float) -> float:
    """The fitness of a finished candidate: its score, less ``topout_penalty`` times the share of its
    seeded games that ended before the cap (``ends``: how each game ended, `GamesResult.ends`;
    None for the known sequence, or a series of estimates)."""
    if not topout_penalty or not ends:
        return float(score)
    lost = sum(end != GameEnd.CAPPED.label for end in ends)
    return float(score) - topout_penalty * lost / len(ends)


@dataclass(frozen=True)
class Task:
    """One evaluation for a worker: the solver ``config`` mapping to play, the early abort's
    ``threshold`` (a per-piece array, or None), numba ``threads`` (None: every one), what an aborted
    candidate's fitness is (``aborted_fitness``), the ``topout_penalty`` of `games_fitness`, and the
    file a policy that can save its search keeps it in (``checkpoint``, None: none)."""

    config: dict
    threshold: object = None
    threads: int | None = None
    aborted_fitness: str = "score_at_abort"
    topout_penalty: float = 0.0
    checkpoint: str | None = None


def evaluate(task: Task) -> Evaluated:
    """Play ``task.config`` (a solver config mapping) under ``task.threshold`` (a per-piece array
    or None) with ``task.threads`` numba threads; returns its `Evaluated` record and curve. A
    finished candidate's fitness is `games_fitness` (``task.topout_penalty``). With
    ``task.checkpoint`` (a file; for a policy that can save its search) the search is saved
    there as it goes and continues from it when it exists (`solver.solve`'s ``checkpoint`` and
    ``resume``); its seconds then count the earlier sittings' too. The saved search is only a cache
    of progress: one that cannot be read (truncated, garbled, another search's) is discarded and the
    candidate played from its first piece, to the same result (``discarded`` says so)."""
    global SIMULATIONS
    start = time.perf_counter()
    import numba

    from solver import SolverConfig, SolveResult, Threshold, solve
    from solver._base import CheckpointUnreadable
    from solver.online import GamesSeries

    threads = task.threads
    numba.set_num_threads(min(threads or numba.config.NUMBA_NUM_THREADS, numba.config.NUMBA_NUM_THREADS))
    config = SolverConfig.model_validate({**task.config, "threads": None})
    thr = task.threshold
    threshold = Threshold(np.asarray(thr, dtype=np.float64), 1) if thr is not None else None
    checkpoint = task.checkpoint
    discarded = None
    try:
        result = solve(config, threshold=threshold, record=False, checkpoint=checkpoint, resume=checkpoint is not None)
    except CheckpointUnreadable as e:
        if checkpoint is None:
            raise
        discarded = _unreadable_search(e, checkpoint)
        Path(checkpoint).unlink(missing_ok=True)
        result = solve(config, threshold=threshold, record=False, checkpoint=checkpoint, resume=False)
    report = result.report if isinstance(result, SolveResult) else None  # a series of games has none
    earlier = sum(s.seconds for s in report.sittings[:-1]) if checkpoint and report is not None else 0.0
    SIMULATIONS += 1
    curve = [int(v) for v in result.best_by_step]
    if result.aborted:
        record = aborted_record(curve, int(result.abort_piece), float(result.abort_threshold), task.aborted_fitness)
    else:
        ends = result.games.ends if isinstance(result, GamesSeries) else None
        record = TuningRecord(fitness=games_fitness(result.score, ends, task.topout_penalty),
                              score=int(result.score), pieces=int(result.pieces), stop=result.stop, aborted=False,
                              abort_piece=None, threshold=None, seconds=0.0)
    return Evaluated(replace(record, seconds=earlier + time.perf_counter() - start), curve, discarded)


def _unreadable_search(e, checkpoint) -> str:
    """The line saying a candidate's saved search (``checkpoint``) is discarded, the
    `solver.CheckpointUnreadable` ``e`` saying why (a full disk, a failed save, is not cured by
    discarding and is not one)."""
    message, prefix = str(e), f"{checkpoint}: "
    message = message[len(prefix):] if message.startswith(prefix) else message
    return (f"{checkpoint}: the saved search cannot be read ({message}); discarded: the candidate is "
            "played again from its first piece, to the result it would have had")


# ------------------------------------------------------------------------------------------------


def decode_curve(text: str) -> np.ndarray:
    """An integer curve from the text form older versions wrote in curves.jsonl (base64 of the zlib
    of its int64 differences)."""
    d = np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype=np.int64)
    return np.cumsum(d)


class Memo:
    """Records by config key (`canonical`: a digest of the resolved solver config's canonical JSON,
    ``threads`` and ``meta`` left out, as they do not change a result), each with its curve, so a
    duplicate candidate is never simulated twice. A remembered record is reused when it is what a
    new simulation under the current threshold would give: a finished one the threshold lets
    through unchanged; one the threshold stops at piece p as aborted at p (its curve up to p is
    known); an aborted one when the threshold stops it no later than before. Otherwise (an aborted
    candidate that a laxer threshold would let run further) it is run again (`lookup`: None)."""

    def __init__(self, aborted_fitness: str = "score_at_abort"):
        self.aborted_fitness = aborted_fitness
        self.entries: dict[str, tuple[TuningRecord, np.ndarray]] = {}

    def __contains__(self, key: str) -> bool:
        return key in self.entries

    def __len__(self) -> int:
        return len(self.entries)

    def store(self, key: str, record: TuningRecord, curve) -> None:
        self.entries[key] = (record, np.asarray(curve, dtype=np.int64))

    def curve(self, key: str) -> np.ndarray:
        return self.entries[key][1]

    def lookup(self, key: str, threshold) -> TuningRecord | None:
        """The record a new simulation under ``threshold`` would give, if it is known; else None."""
        entry = self.entries.get(key)
        if entry is None:
            return None
        record, curve = entry
        p = first_abort(curve, threshold)
        if not record.aborted:
            if p is None:
                return record.repeated()
            return aborted_record(curve, p, threshold[p - 1], self.aborted_fitness)
        if p is None:
            return None  # a laxer threshold: it would run further
        return aborted_record(curve, p, threshold[p - 1], self.aborted_fitness)
