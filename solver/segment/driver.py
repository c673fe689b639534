"""The segment search's driver: the policy (`Segment`: piece indices in order, each one's states
expanded in this process or shared among worker processes, `expand_task`), its checkpoints and
the cost of each sitting (`SegmentReport`)."""

from __future__ import annotations

import hashlib
import json
import resource
import signal
import threading
import time
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numba
import numpy as np

from engine.files import remove_stale_temporaries
from engine.outcome import Stop
from engine.parallel import Pool
from engine.statefile import MAX_SEARCH_STATE_BYTES, Fields, StateError, legacy_problem, read_state, write_state

from .._base import CheckpointError, CheckpointUnreadable, Policy, path_scores
from ..registry import register
from ..result import Report, SolveResult
from .history import CHECKPOINT_KIND, CHECKPOINT_VERSION, SearchState
from .kernels import expand_chunk, found_leaves, insert_found, take
from .settings import CHUNK, Roots, SegmentConfig, SegmentSettings, new_leaves, settings


# ------------------------------------------------------------------------------------------------
# A piece index's states, in this process or in workers

#: a worker process's leaf buffer, kept between tasks (settings, height) -> Leaves: hundreds of MB
#: at 24 states per key, allocated once
_worker_leaves: dict = {}


def expand_chunks(chunks, sequence, rules, spec, cfg, leaves) -> tuple[list, int]:
    """Each chunk of roots expanded (`expand_chunk`), its leaves listed (`found_leaves`): (the
    `Found` of each chunk, boards valued)."""
    found, valued = [], 0
    for chunk in chunks:
        n = len(chunk.score)
        valued += expand_chunk(n, chunk, sequence, rules, spec, cfg, leaves)
        found.append(found_leaves(n, chunk.depth, leaves))
    return found, valued


class ExpandTask(NamedTuple):
    """A worker's share of a piece index: the ``chunks`` (`Roots`), the ``sequence``, ``rules``
    (`KernelRules`), ``spec``, ``settings`` (`SegmentSettings`), the board's ``height`` and numba
    ``threads`` (None: every one)."""

    chunks: list
    sequence: np.ndarray
    rules: object
    spec: object
    settings: object
    height: int
    threads: int | None


class Expanded(NamedTuple):
    """What `expand_task` returns: ``found`` (one `Found` per chunk) and the boards ``valued``."""

    found: list
    valued: int


def expand_task(task: ExpandTask) -> Expanded:
    """Expand a worker's share of a piece index (`ExpandTask`).

    A loky worker ignores SIGINT from then on: a Ctrl-C in a terminal reaches every process of the
    group, and the search's first one must let the piece index finish (the solve then stops with
    its best path). A worker still ends with the solve's process (`engine.parallel`)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if task.threads:
        numba.set_num_threads(min(task.threads, numba.config.NUMBA_NUM_THREADS))
    cfg = task.settings
    key = (repr(cfg), task.height)
    if key not in _worker_leaves:
        _worker_leaves.clear()
        _worker_leaves[key] = new_leaves(cfg, task.height)
    return Expanded(*expand_chunks(task.chunks, task.sequence, task.rules, task.spec, cfg, _worker_leaves[key]))


def shares(n: int, parts: int) -> list[range]:
    """``range(n)`` cut into at most ``parts`` contiguous, nearly equal pieces."""
    parts = max(1, min(parts, n))
    cuts = [n * p // parts for p in range(parts + 1)]
    return [range(cuts[p], cuts[p + 1]) for p in range(parts)]


#: tasks per worker and piece index (a worker that finishes early takes another)
TASKS_PER_WORKER = 2


# ------------------------------------------------------------------------------------------------
# What each sitting cost


class Sitting:
    """One process's share of a search: wall and CPU seconds since it started searching (the CPU of
    all its threads), and the process's peak resident memory."""

    def __init__(self, first: int):
        self.first, self.started = first, time.strftime("%Y-%m-%d %H:%M:%S")
        self.wall, self.cpu = time.monotonic(), time.process_time()

    def record(self, next_index: int) -> dict:
        peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        return {"started": self.started, "first_index": self.first, "next_index": int(next_index),
                "seconds": round(time.monotonic() - self.wall, 3), "cpu_seconds": round(time.process_time() - self.cpu, 3),
                "peak_mib": round(peak_kib / 1024, 1)}


@dataclass(frozen=True)
class SittingCost:
    """What one sitting cost (`Sitting.record`, kept in a checkpoint as this record's dict): when it
    ``started``, the piece indices it went from (``first_index``) and to (``next_index``), its wall
    and CPU ``seconds``, and the process's peak memory (``peak_mib``)."""

    started: str
    first_index: int
    next_index: int
    seconds: float
    cpu_seconds: float
    peak_mib: float


@dataclass(frozen=True)
class SegmentReport(Report):
    """The segment search's account of its run (`SolveResult.report`, summary.json's ``segment``):
    the ``states`` it expanded, the ``next_index`` it reached (the last piece index + 1 when done),
    the cost of each of its ``sittings``, and their sums (`seconds_total`, `cpu_seconds_total`) and
    highest peak memory (`peak_mib`)."""

    key = "segment"
    states: int
    next_index: int
    sittings: tuple[SittingCost, ...]

    @property
    def seconds_total(self) -> float:
        return round(sum(s.seconds for s in self.sittings), 3)

    @property
    def cpu_seconds_total(self) -> float:
        return round(sum(s.cpu_seconds for s in self.sittings), 3)

    @property
    def peak_mib(self) -> float:
        return max((s.peak_mib for s in self.sittings), default=0.0)

    def summary(self) -> dict:
        return {"states": self.states, "next_index": self.next_index, "sittings": [asdict(s) for s in self.sittings],
                "seconds_total": self.seconds_total, "cpu_seconds_total": self.cpu_seconds_total,
                "peak_mib": self.peak_mib}


# ------------------------------------------------------------------------------------------------
# The policy


@register
class Segment(Policy):
    name = "segment"
    Settings = SegmentConfig
    resumable = True
    tie_seed = "segment.tie_seed"

    def fingerprint(self) -> str:
        """What a checkpoint must have been made by: the settings, rules, evaluator, pieces and sequence."""
        # (tie seed 0, the order before tie seeds existed, left out: a search saved then still resumes)
        unkept = {"checkpoint_seconds", "parallel"} | ({"tie_seed"} if self.config.segment.tie_seed == 0 else set())
        what = {"segment": self.config.segment.model_dump(exclude=unkept), "rules": repr(self.rules),
                "evaluator": self.evaluator.spec.terms.tolist(), "pieces": self.pieces,
                "sequence": hashlib.sha256(self.sequence.tobytes()).hexdigest()}
        return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def search(self, pruner, progress):
        cfg, rules, n = self.config.segment, self.rules, self.pieces
        spec = self.evaluator.spec
        kcfg = settings(cfg, rules, n, spec.by_board)
        saving = self.checkpoint is not None and not self.warming
        if saving:  # the temporary files of a checkpoint whose writer was killed (kill -9)
            remove_stale_temporaries(self.checkpoint.parent, self.checkpoint.name)
        legacy = self.checkpoint.with_suffix(".pkl") if saving else None
        if saving and self.resume and not self.checkpoint.exists() and legacy.exists():
            raise CheckpointError(f"{legacy}: {legacy_problem(legacy)}")
        resumed = saving and self.resume and self.checkpoint.exists()
        state = self._load(kcfg) if resumed else SearchState.new(kcfg, rules.height, n)
        table, history, best_by_step = state.table, state.history, state.best_by_step
        i, valued, best, sittings = state.next_index, state.valued, state.best, state.sittings
        if resumed and progress:  # where the saved search stands, at once
            progress(min(i, n + 1) - 1, n, best)
        sitting = Sitting(min(i, n))
        sittings = [*sittings, sitting.record(min(i, n))]
        pool = self._pool()
        leaves = new_leaves(kcfg, rules.height) if pool is None else None
        stop, abort_piece, abort_threshold = Stop.DONE.label, None, None
        saved_at = time.monotonic()
        try:
            while i < n:
                if i == 0:  # the empty board: history id 0
                    boards, score = np.zeros((1, rules.height), np.uint16), np.zeros(1, np.int64)
                    ids = np.zeros(1, np.int64)
                else:
                    boards, score, parent, length, codes = take(table, i, kcfg)
                    ids = history.add(i, score, parent, length, codes)
                    best = max([best, *score.tolist()])
                    best_by_step[i - 1] = best
                depth = cfg.first_depth if i == 0 else cfg.depth
                chunks = [Roots(np.ascontiguousarray(boards[a:a + CHUNK]), np.full(len(part), i, np.int64), part.copy(),
                                np.full(len(part), depth, np.int64))
                          for a in range(0, len(score), CHUNK) for part in [score[a:a + CHUNK]]]
                if pool is None:
                    found, count = expand_chunks(chunks, self.sequence, rules.kernel, spec, kcfg, leaves)
                else:
                    tasks = [ExpandTask(chunks[part.start:part.stop], self.sequence, rules.kernel, spec, kcfg,
                                        rules.height, pool.threads)
                             for part in shares(len(chunks), TASKS_PER_WORKER * pool.n_jobs)]
                    answers = pool.map(expand_task, tasks)
                    found = [f for answer in answers for f in answer.found]
                    count = sum(answer.valued for answer in answers)
                valued += count
                for c, (chunk, chunk_found) in enumerate(zip(chunks, found)):  # in the states' order, whoever expanded them
                    insert_found(chunk_found, chunk.index, ids[c * CHUNK:(c + 1) * CHUNK], kcfg, table)
                i += 1
                if saving and time.monotonic() - saved_at >= cfg.checkpoint_seconds:
                    sittings[-1] = sitting.record(i)
                    self._save(SearchState(table, history, best_by_step, i, valued, best, sittings))
                    saved_at = time.monotonic()
                if i >= 2:  # piece index i - 1 expanded: the best after piece i - 1 is known
                    why = self.layer_stop(i - 2, best, best, pruner, progress)
                    if why is not None:
                        stop, abort_piece, abort_threshold = why
                        break
        finally:
            if pool is not None:
                pool.close()
        if i == n:  # the final states, after the last piece
            boards, score, parent, length, codes = take(table, n, kcfg)
            history.add(n, score, parent, length, codes)
            best = max([best, *score.tolist()])
            best_by_step[n - 1] = best
            i = n + 1
            if progress:
                progress(n, n, best)
        sittings[-1] = sitting.record(min(i, n))
        if saving:
            self._save(SearchState(table, history, best_by_step, i, valued, best, sittings))
        if i > n and not history.reached(n):
            stop = Stop.STUCK.label  # no path reached the last piece
        chosen = history.best()
        placements = history.placements(chosen)
        by_step, kinds = path_scores(placements, self.sequence, rules)
        placed = len(placements)
        if placed and int(by_step[-1]) != history.score(chosen):
            raise RuntimeError(f"segment: the path replays to {int(by_step[-1]):,}, the table says "
                               f"{history.score(chosen):,}")
        expanded = min(i, n)  # piece indices whose states were expanded
        return SolveResult(
            score=int(by_step[-1]) if placed else 0, pieces=placed, score_by_step=by_step,
            best_by_step=best_by_step[:max(expanded - 1, 0) + (i > n)].copy(), clear_kinds=kinds,
            placements=placements, stop=stop, abort_piece=abort_piece, abort_threshold=abort_threshold,
            nodes=valued, report=SegmentReport(states=history.taken - 1, next_index=min(i, n),
                                               sittings=tuple(SittingCost(**s) for s in sittings)))

    def _pool(self) -> Pool | None:
        """The worker processes of ``segment.parallel``, or None to expand in this process (one
        job, or the warm-up, which loads this process's kernels)."""
        par = self.config.segment.parallel
        if self.warming or (par.n_jobs == 1 and par.backend == "loky"):
            return None
        return Pool(par, key="segment.parallel")

    # --------------------------------------------------------------------------------------------
    # Checkpoints

    def _save(self, state: SearchState) -> None:
        """Write the checkpoint (atomically: the previous one stays whole until the new one is);
        `CheckpointError` in one line when it cannot be written (a full or read-only disk)."""
        try:
            write_state(self.checkpoint, state.state_dict(self.fingerprint()), CHECKPOINT_KIND, compress=True)
        except OSError as e:
            kept = "the previous checkpoint is kept" if self.checkpoint.exists() else "no checkpoint was saved"
            raise CheckpointError(f"{self.checkpoint}: cannot save the search: {e.strerror or e}; {kept} "
                                  "(once there is room, continue with --resume)") from None

    def _load(self, kcfg: SegmentSettings) -> SearchState:
        """The saved search (`SearchState.from_state`); `CheckpointError` in one line when the file cannot be
        read, was made by another search, or holds a value that is not what it should be."""
        path = self.checkpoint
        try:
            f = Fields(read_state(path, CHECKPOINT_KIND, MAX_SEARCH_STATE_BYTES), path)
            version = f.get("version")
            if version != CHECKPOINT_VERSION:
                f.fail("version", f"a checkpoint of another format ({version!r}, expected {CHECKPOINT_VERSION})")
            if f.str("fingerprint") != self.fingerprint():
                raise CheckpointError(f"{path}: made by another search (settings, rules, evaluator, pieces or sequence "
                                      "differ); resume it with the configuration that made it")
            return SearchState.from_state(f, kcfg, self.rules.height, self.pieces)
        except StateError as e:
            raise CheckpointUnreadable(str(e)) from None
