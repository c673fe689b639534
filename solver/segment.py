"""Segment search: a dynamic programme over (piece index, cells on the board) whose edges are the
segments between two clears (the design of the 1,413,876 solution, rebuilt on our engine).

Terms:
- a *state* is a board right after a clear (or the empty board at piece 0, or a board after the
  last piece), with its score and its path. States live in a *table* keyed by (piece index, cells
  on the board // ``key_cells``), at most ``states`` per key: the higher score, then the higher
  ranking value (the configuration's ``evaluator``, by default `transitions`: smoothness), then
  the smaller board hash. Equal boards at one piece index are merged (the higher score stays).
  Keeping states by cell count keeps heavy boards, about to clear at a high multiplier, beside the
  best-scoring ones.
- a *segment* from a state is a layered search over its next pieces (at most ``depth``; the first
  segment, from the empty board, ``first_depth``). Layer d holds boards after d pieces that have
  cleared nothing; each is expanded with every placement of the next piece (resting ones, and with
  ``floating`` the mid-air locks that clear rows: `engine.movegen.floating_mask`). A placement that
  clears rows ends the segment: it is a *leaf*, a new state, kept if at least ``min_cells[f - 1]``
  cells remain on the board after its clear of f rows (a clear with few cells wastes its
  multiplier; in the last ``endgame_pieces`` pieces there is no floor). Any placement of the last
  piece is a leaf too. The others are *children*: equal boards merged, the best ``nodes`` by the
  ranking value (ties: the smaller board hash) form layer d + 1. Nothing is scored inside a
  segment, so the ranking is smoothness alone. A placement may not occupy the top ``top_free_rows``
  rows (before its clear).
- the *driver* takes piece indices in increasing order; every state stored at index i is expanded
  (a segment's leaves land at later indices), in chunks of `CHUNK` states over numba's threads
  (``prange``), and with ``parallel.n_jobs`` > 1 (or a dask cluster) the chunks shared among worker
  processes (`engine.parallel.Pool`), each sending back its leaves as a list (`Found`). Each
  state's segment is independent and the leaves are merged into the table chunk by chunk in the
  states' order, so the result does not depend on the number of threads or processes.

Paths: a state's segment is stored as its placements (int16, `solver.layered.pack`) with the id
of the state it grew from; states that are expanded (and the final ones) enter an append-only
*history*, from which the best state's placements are read back and replayed by the engine.

Long runs: the table, the history and the curves are saved as data (`engine.statefile`, atomic,
compressed; every value checked when read back, `checkpoint_state`) every ``checkpoint_seconds``
and when the search stops; a solve given the checkpoint
with ``resume`` continues from the first piece index it had not expanded and ends exactly as an
uninterrupted run would (what is saved is everything the search can still use: the history is
cut to the states that paths from the table and from the best go back to, `History.compacted`,
so a record-size search saves about 100 KB, not tens of MB). The checkpoint also
keeps one entry per *sitting* (each process that worked on the search: its first and next piece
index, search seconds, CPU seconds of the process's threads (not its worker processes'), peak
memory), reported in the result with their totals, so a run spread over sittings states what it
cost. The checkpoint does not depend on ``parallel``: a run may be resumed with more workers.

The kernels read bundles: the rules (`KernelRules`), the settings (`SegmentSettings`), a chunk's
roots (`Roots`), its leaves (`Leaves`) and the table (`Table`).
"""

from __future__ import annotations

import bisect
import hashlib
import json
import resource
import signal
import threading
import time
from dataclasses import asdict, dataclass
from typing import Literal, NamedTuple

import numba
import numpy as np
from numba import njit, prange
from pydantic import Field, field_validator

from engine.board import popcount
from engine.files import remove_stale_temporaries
from engine.statefile import MAX_SEARCH_STATE_BYTES, Fields, StateError, legacy_problem, read_state, write_state
from engine.jit import inlined, inner
from engine.memory import Need
from engine.parallel import ParallelConfig, Pool
from engine.board import copy_rows
from engine.lock import lock_copy, lock_counted, lost, spawn_blocked, spawn_state
from engine.movegen import MoveScratch, capacity, lowest_placements_into, new_scratch, placements_into, rows_for
from evaluators import Placement, board_values, evaluate

from ._base import CheckpointError, Policy, ValueScratch, path_scores, value_scratch
from .config import Strict
from .layered import board_hash, descending, grown, pack, radix_argsort, same_board, table_hash, unpack
from .registry import register
from .result import Report, SolveResult

#: states expanded per kernel call (their leaves are merged in their order between calls)
CHUNK = 16
#: children reserved per node of a layer before the buffers grow
CHILDREN_PER_NODE = 48
#: the checkpoint's format (a checkpoint of another format is refused) and what its file says it holds
CHECKPOINT_VERSION, CHECKPOINT_KIND = 3, "a segment search's checkpoint"


class SegmentConfig(Strict):
    """``segment``: a dynamic programme over (piece index, cells) whose edges are segments between
    two clears, each found by a layered search ranked by the configuration's evaluator (smoothness:
    the `transitions` preset), keeping ``states`` states per key (the 1,413,876 solution's design)."""

    nodes: int = Field(200, ge=1, description="boards kept per layer of a segment")
    placements: Literal["all", "lowest"] = Field(
        "all", description="expand every placement, or only the lowest of each (state, column) (and the mid-air clears)")
    depth: int = Field(24, ge=1, le=64, description="pieces a segment may place at most")
    first_depth: int = Field(40, ge=1, le=64, description="the same for the first segment, from the empty board")
    states: int = Field(2, ge=1, le=64, description="states kept per (piece index, cells // key_cells) key")
    key_cells: int = Field(2, ge=1, le=200, description="cells per key of the table")
    min_cells: list[int] = Field(
        [100, 100, 100, 100], min_length=4, max_length=4,
        description="a clear of 1, 2, 3, 4 rows must leave at least this many cells on the board (one number: all four)")
    endgame_pieces: int = Field(
        0, ge=0, description="no cell floor for clears in the last this many pieces (no later clear needs the cells)")
    top_free_rows: int = Field(1, ge=0, le=4, description="rows at the top no placement may occupy (before its clear)")
    checkpoint_seconds: float = Field(60.0, gt=0, description="seconds between checkpoints (when the solve is given a checkpoint file)")
    parallel: ParallelConfig = Field(
        default_factory=ParallelConfig,
        description="where a piece index's states are expanded: this process (n_jobs 1, numba's threads), joblib's loky "
                    "processes or a dask cluster; the result is the same for any of them")


    @field_validator("min_cells", mode="before")
    @classmethod
    def _one_for_all(cls, v):
        return [v] * 4 if isinstance(v, int) else v

    def memory(self, config) -> list[Need]:
        """What the search allocates (`engine.memory`; measured on the Geek game: 6.9 KB a node for
        each segment expanded at once, and the record's settings' states within this bound): each
        segment under way holds its children (`CHILDREN_PER_NODE` a node, buffers doubling, with
        their boards and the merge's buffers); the table (``states`` per key for the next
        ``depth`` + 1 piece indices), each process's leaves buffer (`CHUNK` segments x ``depth`` x
        keys x ``states``), and the history of the states expanded: at a piece index the cells
        on a board all differ by multiples of the width (4 cells a piece, a width per row cleared),
        so at most ``states`` x (rows above the cell floor + 1) states a piece index, each kept with
        its placements and copied once more when the checkpoint is saved."""
        rules, pieces = config.game_rules(), config.played()
        height, width = rules.height, rules.width
        kcfg = settings(self, rules, pieces)
        par = self.parallel
        if par.n_jobs > 1 or par.backend == "dask":
            processes = 0 if par.scheduler else par.n_jobs  # a named cluster's workers are not here
            at_once = processes * (par.threads or 1)
        else:
            processes, at_once = 1, config.busy_threads()
        per_node = 2 * CHILDREN_PER_NODE * (2 * height + 32) + 6 * (kcfg.max_depth + 1)
        per_slot = 2 * height + 40 + 2 * kcfg.max_depth
        table = kcfg.slots * kcfg.keys * self.states * per_slot
        leaves = max(processes, 1) * CHUNK * kcfg.max_depth * kcfg.keys * self.states * per_slot
        per_index = self.states * min(kcfg.keys, height - min(self.min_cells) // width + 1)
        history = pieces * per_index * (64 + 2 * self.depth)
        return [Need("segment.nodes", f"{self.nodes:,} nodes in {at_once:,} segments at once",
                     at_once * self.nodes * per_node),
                Need("segment.states", f"{self.states:,} states per key over {pieces:,} pieces", table + leaves + history)]


class SegmentSettings(NamedTuple):
    """The settings as the kernels read them; ``keys``: keys per piece index of the table,
    ``slots``: piece indices the table holds at once (the longest segment + 1), ``pieces``: the
    pieces played (a placement of piece ``pieces - 1`` is always a leaf)."""

    nodes: int
    lowest: bool
    states: int
    key_cells: int
    keys: int
    min_cells: np.ndarray
    endgame: int
    top_free: int
    slots: int
    max_depth: int
    pieces: int


class Roots(NamedTuple):
    """A chunk's states to expand: boards (R, height), ``index`` (the next piece), ``score``,
    ``depth`` (pieces their segment may place)."""

    boards: np.ndarray
    index: np.ndarray
    score: np.ndarray
    depth: np.ndarray


class Leaves(NamedTuple):
    """Each root's kept leaves, by bucket (root r, pieces placed d + 1, key k, slot m): ``count[r, d,
    k]`` filled slots; ``boards``, ``score``, ``value`` (ranking), ``hash`` (`board_hash`) and
    ``codes`` (the segment's d + 1 packed placements)."""

    count: np.ndarray
    boards: np.ndarray
    score: np.ndarray
    value: np.ndarray
    hash: np.ndarray
    codes: np.ndarray


class Found(NamedTuple):
    """A chunk's kept leaves as a list, in the order they are merged into the table (root, pieces
    placed, key, slot): the ``root`` (its row in the chunk), ``placed`` (pieces its segment placed),
    ``key``, ``boards``, ``score``, ``value``, ``hash`` and ``codes``. What a worker process sends
    back: the `Leaves` buffer it is read from is mostly empty."""

    root: np.ndarray
    placed: np.ndarray
    key: np.ndarray
    boards: np.ndarray
    score: np.ndarray
    value: np.ndarray
    hash: np.ndarray
    codes: np.ndarray


class Table(NamedTuple):
    """The states of the next ``slots`` piece indices (index i in slot i % slots), ``states`` per key:
    ``count[s, k]``, ``boards``, ``score``, ``value``, ``hash``, ``parent`` (the history id of the
    state whose segment made it), ``length`` and ``codes`` (that segment's placements)."""

    count: np.ndarray
    boards: np.ndarray
    score: np.ndarray
    value: np.ndarray
    hash: np.ndarray
    parent: np.ndarray
    length: np.ndarray
    codes: np.ndarray


def new_leaves(cfg: SegmentSettings, height: int) -> Leaves:
    shape = (CHUNK, cfg.max_depth, cfg.keys, cfg.states)
    return Leaves(np.zeros(shape[:3], np.int64), np.zeros(shape + (height,), np.uint16), np.zeros(shape, np.int64),
                  np.zeros(shape), np.zeros(shape, np.int64), np.zeros(shape + (cfg.max_depth,), np.int16))


def new_table(cfg: SegmentSettings, height: int) -> Table:
    shape = (cfg.slots, cfg.keys, cfg.states)
    return Table(np.zeros(shape[:2], np.int64), np.zeros(shape + (height,), np.uint16), np.zeros(shape, np.int64),
                 np.zeros(shape), np.zeros(shape, np.int64), np.zeros(shape, np.int64), np.zeros(shape, np.int64),
                 np.zeros(shape + (cfg.max_depth,), np.int16))


# ------------------------------------------------------------------------------------------------
# Ranking: which of two states (or leaves) is better


@inlined
def better(score_a, value_a, hash_a, score_b, value_b, hash_b):
    """Whether a ranks before b: the higher score, then the higher ranking value, then the smaller
    board hash."""
    if score_a != score_b:
        return score_a > score_b
    if value_a != value_b:
        return value_a > value_b
    return hash_a < hash_b


@inlined
def bucket_slot(count, boards, score, value, hashes, n_max, board, s, v, h):
    """Where a candidate (``board``, score ``s``, value ``v``, hash ``h``) goes in a bucket of
    ``count`` entries (arrays indexed by slot) holding at most ``n_max``: a free slot, the slot of
    the worst entry it beats, the slot of an equal board it beats, or -1 (kept out)."""
    worst = -1
    for m in range(count):
        if hashes[m] == h and same_board(boards[m], board):
            return m if better(s, v, h, score[m], value[m], hashes[m]) else -1
        if worst < 0 or better(score[worst], value[worst], hashes[worst], score[m], value[m], hashes[m]):
            worst = m
    if count < n_max:
        return count
    return worst if better(s, v, h, score[worst], value[worst], hashes[worst]) else -1


# ------------------------------------------------------------------------------------------------
# One segment


@inner(_nrt=False)
def first_of_each(boards, n, table, unique):
    """Writes into ``unique`` the indices of children 0..n-1 whose board no earlier child holds (the
    first generated of equal boards) and returns their count; ``table``: an open-addressing scratch
    of a power-of-two size above 2n. Without numba's reference counting: each board it reads is a
    view."""
    size = table.shape[0]
    table[:] = -1
    u = 0
    for j in range(n):
        pos = np.int64(table_hash(boards[j]) & np.uint64(size - 1))
        while True:
            g = table[pos]
            if g < 0:
                table[pos] = j
                unique[u] = j
                u += 1
                break
            if same_board(boards[g], boards[j]):
                break
            pos = (pos + 1) & (size - 1)
    return u


@inner(_nrt=False)
def hashes_of(boards, which, out):
    """``out[m]`` = `board_hash` of ``boards[which[m]]``, for every m."""
    for m in range(which.shape[0]):
        out[m] = board_hash(boards[which[m]])


@inner
def keep_best(values, boards, n, nodes, slot):
    """Indices (best first) of the best ``nodes`` of children 0..n-1 after merging equal boards (the
    first generated stays): the higher value, then the smaller hash, then the first generated.
    ``slot``: a scratch table. Only the children whose value reaches the ``nodes``-th best value
    are hashed and sorted: every one of the best ``nodes`` is among them."""
    size = 1
    while size < 2 * n + 2:
        size *= 2
    if slot.shape[0] < size:
        slot = np.empty(size, np.int64)
    unique = np.empty(n, np.int64)
    unique = unique[:first_of_each(boards, n, slot[:size], unique)]
    keys = descending(values[unique])  # ascending: best first
    if unique.shape[0] > nodes:
        cut = np.partition(keys, nodes - 1)[nodes - 1]
        m = 0
        for i in range(unique.shape[0]):  # in generation order
            if keys[i] <= cut:
                unique[m] = unique[i]
                keys[m] = keys[i]
                m += 1
        unique, keys = unique[:m], keys[:m]
    h = np.empty(unique.shape[0], np.int64)
    hashes_of(boards, unique, h)
    by_hash = radix_argsort(h)
    order = by_hash[radix_argsort(keys[by_hash])]
    return unique[order[:min(nodes, unique.shape[0])]], slot


class Kids(NamedTuple):
    """A layer's children that cleared no row, in the order generated, before the cut to the best
    ``nodes``: their ``boards`` (capacity, height), ranking ``value``, ``parent`` (the node's index in
    the layer) and packed placement ``code``."""

    boards: np.ndarray
    value: np.ndarray
    parent: np.ndarray
    code: np.ndarray


class SegmentScratch(NamedTuple):
    """What one segment's expansion writes besides its children and leaves: the move generator's
    scratch ``moves``, the valuing scratch ``values`` (`solver._base.ValueScratch`), a node's
    placements ``found``, and ``leaf_layer[d, key, m]``: the node of layer d that the kept leaf in
    bucket (d, key), slot m grew from."""

    moves: MoveScratch
    values: ValueScratch
    found: np.ndarray
    leaf_layer: np.ndarray


@inner
def grown_kids(kids, n):
    """``kids`` with room for at least ``n`` children (`layered.grown`, every array)."""
    return Kids(grown(kids.boards, n), grown(kids.value, n), grown(kids.parent, n), grown(kids.code, n))


@inner(_nrt=False)
def grow_layer(r, d, start, skip, cur, n_cur, n_kids, root_cells, roots, sequence, rules, spec, cfg, leaves, kids,
               ws):
    """Layer d of root r's segment: the children of nodes ``start`` .. ``n_cur`` - 1 of ``cur`` (the
    first ``skip`` children of node ``start`` done already), appended to ``kids`` from ``n_kids`` on,
    or kept as leaves in ``leaves``. Returns (-1, 0, children, boards valued), or, when ``kids`` is
    full, the node and child to continue from once it has grown. Compiled without numba's
    reference counting (it allocates nothing): counting every view of a board it takes, an atomic
    add and subtract each, was a fifth of the search's time."""
    height, width = rules.height, rules.width
    t = roots.index[r] + d
    shape = sequence[t]
    ss = spawn_state(t, rules)
    final = t + 1 == cfg.pieces
    cells_before = root_cells + 4 * (d + 1)
    vs = ws.values
    found = ws.found
    valued = 0
    for n in range(start, n_cur):
        board = cur[n]
        if spawn_blocked(board, rules, shape, ss):
            continue
        if cfg.lowest:
            n_found = lowest_placements_into(board, rules, shape, ss, ws.moves, found)
        else:
            n_found = placements_into(board, rules, shape, ss, ws.moves, found)
        board_values(board, width, spec, vs.pvals)
        occupied = 0
        for row in range(height):
            if board[row] != 0:
                occupied += 1
        for k in range(skip if n == start else 0, n_found):
            x, y, s = found[k, 0], found[k, 1], found[k, 2]
            piece = rules.cells[shape, s]
            top = y + piece[0, 1]
            for c in range(1, 4):
                top = min(top, y + piece[c, 1])
            if top < cfg.top_free:
                continue
            copy_rows(vs.cleared, board)  # the parent's counts are known: only the piece's rows are counted
            lock = lock_counted(vs.cleared, rules, shape, s, x, y, t + 1, cells_before - 4, occupied)
            if lost(lock.end):
                continue
            if lock.lines == 0 and not final:
                if n_kids == kids.boards.shape[0]:
                    return n, k, n_kids, valued
                p = Placement(board, vs.cleared, vs.cleared, piece, x, y, 0, lock.points, width)
                kids.value[n_kids] = evaluate(p, vs.pvals, spec)
                copy_rows(kids.boards[n_kids], vs.cleared)
                kids.parent[n_kids] = n
                kids.code[n_kids] = pack(x, y, s)
                n_kids += 1
                valued += 1
                continue
            lock = lock_copy(board, rules, shape, s, x, y, t + 1, vs.locked, vs.cleared)  # a leaf: both boards
            cells_after = cells_before - width * lock.lines
            if not final and t + 1 <= cfg.pieces - cfg.endgame and cells_after < cfg.min_cells[lock.lines - 1]:
                continue
            p = Placement(board, vs.locked, vs.cleared, piece, x, y, lock.lines, lock.points, width)
            v = evaluate(p, vs.pvals, spec)
            valued += 1
            score = roots.score[r] + lock.points
            h = board_hash(vs.cleared)
            key = cells_after // cfg.key_cells
            c = leaves.count[r, d, key]
            m = bucket_slot(c, leaves.boards[r, d, key], leaves.score[r, d, key], leaves.value[r, d, key],
                            leaves.hash[r, d, key], cfg.states, vs.cleared, score, v, h)
            if m < 0:
                continue
            if m == c:
                leaves.count[r, d, key] = c + 1
            copy_rows(leaves.boards[r, d, key, m], vs.cleared)
            leaves.score[r, d, key, m] = score
            leaves.value[r, d, key, m] = v
            leaves.hash[r, d, key, m] = h
            leaves.codes[r, d, key, m, d] = pack(x, y, s)
            ws.leaf_layer[d, key, m] = n
    return -1, 0, n_kids, valued


@inner
def expand(r, roots, sequence, rules, spec, cfg, leaves):
    """The segment from root ``r``: its kept leaves into ``leaves`` (row r, emptied first), layer by
    layer (`grow_layer`, then the cut to the best ``nodes``, `keep_best`). Returns the boards valued
    (children and leaves)."""
    height, width = rules.height, rules.width
    depth = roots.depth[r]
    i0 = roots.index[r]
    leaves.count[r] = 0
    ws = SegmentScratch(new_scratch(rows_for(height), 1), value_scratch(spec.terms.shape[1], height),
                        np.zeros((capacity(height, width), 3), np.int64),
                        np.empty((depth, cfg.keys, cfg.states), np.int32))
    slot = np.empty(1024, np.int64)
    cur = np.zeros((1, height), np.uint16)
    cur[0] = roots.boards[r]
    n_cur = 1
    root_cells = 0
    for y in range(height):
        root_cells += popcount(np.int64(roots.boards[r, y]))
    # the kept nodes of every layer: the parent's index in the layer above and the placement
    parent = np.zeros((depth + 1, cfg.nodes), np.int32)
    code = np.zeros((depth + 1, cfg.nodes), np.int16)
    room = cfg.nodes * CHILDREN_PER_NODE
    kids = Kids(np.empty((room, height), np.uint16), np.empty(room), np.empty(room, np.int32), np.empty(room, np.int16))
    valued = 0
    for d in range(depth):
        if i0 + d >= cfg.pieces or n_cur == 0:
            break
        n_kids = 0
        start, skip = 0, 0
        while start >= 0:
            start, skip, n_kids, more = grow_layer(r, d, start, skip, cur, n_cur, n_kids, root_cells, roots, sequence,
                                                   rules, spec, cfg, leaves, kids, ws)
            valued += more
            if start >= 0:
                kids = grown_kids(kids, n_kids + 1)
        if n_kids == 0 or d + 1 == depth:
            n_cur = 0
            continue
        best, slot = keep_best(kids.value, kids.boards, n_kids, cfg.nodes, slot)
        n_cur = best.shape[0]
        if cur.shape[0] < n_cur:
            cur = np.empty((cfg.nodes, height), np.uint16)
        for m in range(n_cur):
            j = best[m]
            copy_rows(cur[m], kids.boards[j])
            parent[d + 1, m] = kids.parent[j]
            code[d + 1, m] = kids.code[j]
    # each kept leaf's placements, read back through the layers
    for d in range(depth):
        for key in range(cfg.keys):
            for m in range(leaves.count[r, d, key]):
                n = ws.leaf_layer[d, key, m]
                for e in range(d, 0, -1):
                    leaves.codes[r, d, key, m, e - 1] = code[e, n]
                    n = parent[e, n]
    return valued


@inner(parallel=True)
def _expand_chunk(n_roots, roots, sequence, rules, spec, cfg, leaves):
    """`expand` for roots 0..n_roots-1, in parallel; returns the boards valued."""
    valued = np.zeros(n_roots, np.int64)
    for r in prange(n_roots):
        # r is unsigned in the parallel loop's body and signed where numba types the loop before
        # making it parallel: one signature, not two compiles of `expand`
        valued[r] = expand(np.int64(r), roots, sequence, rules, spec, cfg, leaves)
    return valued.sum()


def expand_chunk(n_roots, roots, sequence, rules, spec, cfg, leaves) -> int:
    """`expand` for roots 0..n_roots-1, in parallel (numba's threads); returns the boards valued."""
    return int(_expand_chunk(n_roots, roots, sequence, rules, spec, cfg, leaves))


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


def expand_task(task: dict) -> dict:
    """A worker's share of a piece index: ``task`` holds the ``chunks`` (`Roots`), the ``sequence``,
    ``rules`` (`KernelRules`), ``spec``, ``settings`` (`SegmentSettings`), ``height`` and ``threads``
    (numba threads, or None); returns ``found`` (one `Found` per chunk) and ``valued``.

    A loky worker ignores SIGINT from then on: a Ctrl-C in a terminal reaches every process of the
    group, and the search's first one must let the piece index finish (the solve then stops with
    its best path). A worker still ends with the solve's process (`engine.parallel`)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if task["threads"]:
        numba.set_num_threads(min(task["threads"], numba.config.NUMBA_NUM_THREADS))
    cfg = task["settings"]
    key = (repr(cfg), task["height"])
    if key not in _worker_leaves:
        _worker_leaves.clear()
        _worker_leaves[key] = new_leaves(cfg, task["height"])
    found, valued = expand_chunks(task["chunks"], task["sequence"], task["rules"], task["spec"], cfg,
                                  _worker_leaves[key])
    return {"found": found, "valued": valued}


def shares(n: int, parts: int) -> list[range]:
    """``range(n)`` cut into at most ``parts`` contiguous, nearly equal pieces."""
    parts = max(1, min(parts, n))
    cuts = [n * p // parts for p in range(parts + 1)]
    return [range(cuts[p], cuts[p + 1]) for p in range(parts)]


#: tasks per worker and piece index (a worker that finishes early takes another)
TASKS_PER_WORKER = 2


# ------------------------------------------------------------------------------------------------
# The table


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def found_leaves(n_roots, depth, leaves):
    """The kept leaves of roots 0..n_roots-1 (segments of at most ``depth[r]`` pieces) as a `Found`
    list, root by root, in bucket order."""
    n = 0
    for r in range(n_roots):
        for d in range(depth[r]):
            n += leaves.count[r, d].sum()
    shape = leaves.boards.shape
    out = Found(np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64), np.empty((n, shape[4]), np.uint16),
                np.empty(n, np.int64), np.empty(n), np.empty(n, np.int64), np.empty((n, leaves.codes.shape[4]), np.int16))
    j = 0
    for r in range(n_roots):
        for d in range(depth[r]):
            for key in range(shape[2]):
                for m in range(leaves.count[r, d, key]):
                    out.root[j], out.placed[j], out.key[j] = r, d + 1, key
                    out.boards[j] = leaves.boards[r, d, key, m]
                    out.score[j] = leaves.score[r, d, key, m]
                    out.value[j] = leaves.value[r, d, key, m]
                    out.hash[j] = leaves.hash[r, d, key, m]
                    out.codes[j] = leaves.codes[r, d, key, m]
                    j += 1
    return out


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def insert_found(found, index, ids, cfg, table):
    """Merge a chunk's leaves (its roots at piece indices ``index``, history ids ``ids``) into
    ``table`` in their list order: the result does not depend on which thread or process found
    them."""
    for j in range(found.score.shape[0]):
        r, placed, key = found.root[j], found.placed[j], found.key[j]
        s = (index[r] + placed) % cfg.slots
        c = table.count[s, key]
        at = bucket_slot(c, table.boards[s, key], table.score[s, key], table.value[s, key], table.hash[s, key],
                         cfg.states, found.boards[j], found.score[j], found.value[j], found.hash[j])
        if at < 0:
            continue
        if at == c:
            table.count[s, key] = c + 1
        table.boards[s, key, at] = found.boards[j]
        table.score[s, key, at] = found.score[j]
        table.value[s, key, at] = found.value[j]
        table.hash[s, key, at] = found.hash[j]
        table.parent[s, key, at] = ids[r]
        table.length[s, key, at] = placed
        table.codes[s, key, at, :placed] = found.codes[j, :placed]


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def take(table, i, cfg):
    """The states stored for piece index ``i``, in key then slot order, removed from the table:
    (boards, score, parent, length, codes)."""
    s = i % cfg.slots
    n = table.count[s].sum()
    height = table.boards.shape[3]
    boards = np.empty((n, height), np.uint16)
    score = np.empty(n, np.int64)
    parent = np.empty(n, np.int64)
    length = np.empty(n, np.int64)
    codes = np.empty((n, cfg.max_depth), np.int16)
    j = 0
    for key in range(cfg.keys):
        for m in range(table.count[s, key]):
            boards[j] = table.boards[s, key, m]
            score[j] = table.score[s, key, m]
            parent[j] = table.parent[s, key, m]
            length[j] = table.length[s, key, m]
            codes[j] = table.codes[s, key, m]
            j += 1
        table.count[s, key] = 0
    return boards, score, parent, length, codes


# ------------------------------------------------------------------------------------------------
# The history: every expanded (or final) state, append-only


class History:
    """Every state taken from the table: its piece index, score, the id of the state it grew from
    and its segment's placements. Id 0 is the empty board at piece 0. Kept as one block per piece
    index (ids consecutive), so that adding costs the block alone however long the run."""

    def __init__(self):
        self.first = [0]  # the first id of each block
        self.blocks = [self._block(0, np.zeros(1, np.int64), np.full(1, -1, np.int64), np.zeros(1, np.int64),
                                   np.zeros((1, 1), np.int16))]
        self.dropped = 0  # states left out by `compacted` (a history read back from a checkpoint)

    @staticmethod
    def _block(i, score, parent, length, codes) -> dict:
        n = len(score)
        flat = np.concatenate([codes[j, :length[j]] for j in range(n)]) if n else np.zeros(0, np.int16)
        start = np.concatenate([[0], np.cumsum(length)[:-1]]).astype(np.int64) if n else np.zeros(0, np.int64)
        return {"index": i, "score": np.asarray(score, np.int64), "parent": np.asarray(parent, np.int64),
                "start": start, "length": np.asarray(length, np.int64), "codes": flat.astype(np.int16)}

    def __len__(self):
        return self.first[-1] + len(self.blocks[-1]["score"])

    @property
    def taken(self) -> int:
        """How many states were ever taken, the empty board included, kept or compacted away."""
        return len(self) + self.dropped

    def add(self, i, score, parent, length, codes) -> np.ndarray:
        """Append the states at piece index ``i``; returns their ids."""
        first = len(self)
        self.first.append(first)
        self.blocks.append(self._block(i, score, parent, length, codes))
        return np.arange(first, first + len(score), dtype=np.int64)

    def _at(self, state: int) -> tuple[dict, int]:
        k = bisect.bisect_right(self.first, state) - 1
        return self.blocks[k], state - self.first[k]

    def score(self, state: int) -> int:
        block, j = self._at(state)
        return int(block["score"][j])

    def reached(self, i: int) -> bool:
        """Whether a state at piece index ``i`` was taken."""
        return any(b["index"] == i and len(b["score"]) for b in self.blocks[::-1])

    def best(self) -> int:
        """The id of the best state: the highest score, then the later piece index, then the first."""
        best, key = 0, None
        for first, block in zip(self.first, self.blocks):
            if not len(block["score"]):
                continue
            j = int(np.argmax(block["score"]))  # the first of the block's best
            k = (int(block["score"][j]), block["index"])
            if key is None or k > key:
                best, key = first + j, k
        return best

    def placements(self, state: int) -> np.ndarray:
        """The (pieces, 3) placements (x, y, state) from the empty board to ``state``."""
        parts = []
        while state > 0:
            block, j = self._at(state)
            a = block["start"][j]
            parts.append(block["codes"][a:a + block["length"][j]])
            state = int(block["parent"][j])
        codes = np.concatenate(parts[::-1]) if parts else np.zeros(0, np.int16)
        out = np.zeros((len(codes), 3), np.int64)
        for t, c in enumerate(codes):
            out[t] = unpack(int(c))
        return out

    def compacted(self, live: np.ndarray) -> tuple["History", np.ndarray]:
        """A copy holding only what can still matter, and the ids' map (old id -> new id, -1 for a
        state left out). Kept: the states ``live`` (ids), the states taken last, the best state,
        and all their ancestors, in their order. The search goes on from the copy as from this
        history: a path is followed back only from a state in the table or from the best, and a
        state left out never becomes the best (no better than the best, and after it when equal).
        Most states lead nowhere: at record size under 1% are kept, and a saved search shrinks
        accordingly."""
        parent = np.concatenate([b["parent"] for b in self.blocks])
        keep = np.zeros(len(parent), bool)
        last = np.arange(self.first[-1], len(self), dtype=np.int64)
        for state in [*np.unique(np.concatenate([np.asarray(live, np.int64), last])).tolist(), self.best()]:
            while state >= 0 and not keep[state]:
                keep[state] = True
                state = int(parent[state])
        new_id = np.cumsum(keep, dtype=np.int64) - 1
        new_id[~keep] = -1
        out = History()
        out.first, out.blocks, out.dropped = [], [], self.dropped + int(len(keep) - keep.sum())
        for first, block in zip(self.first, self.blocks):
            j = np.flatnonzero(keep[first:first + len(block["score"])])
            if not len(j):
                continue
            length = block["length"][j]
            codes = [block["codes"][a:a + m] for a, m in zip(block["start"][j], length)]
            out.first.append(int(new_id[first + j[0]]))
            out.blocks.append({
                "index": block["index"], "score": block["score"][j].copy(),
                "parent": np.where(block["parent"][j] >= 0, new_id[block["parent"][j]], -1),
                "start": np.concatenate([[0], np.cumsum(length)[:-1]]).astype(np.int64), "length": length.copy(),
                "codes": np.concatenate(codes).astype(np.int16) if codes else np.zeros(0, np.int16)})
        return out, new_id

    def to_dict(self) -> dict:
        return {"first": self.first, "blocks": self.blocks, "dropped": self.dropped}

    @classmethod
    def from_dict(cls, data: dict) -> "History":
        h = cls()
        h.first, h.blocks = list(data["first"]), list(data["blocks"])
        h.dropped = int(data.get("dropped", 0))  # a checkpoint saved before compaction: every state
        return h


def checkpoint_state(f: Fields, kcfg: SegmentSettings, height: int, n: int):
    """(table, history, best_by_step, next_index, valued, best, sittings) of a checkpoint's tree,
    every array of the dtype and shape this search makes and every index within its range (a value
    out of range would be read out of bounds by the kernels); `StateError` naming the key otherwise."""
    blank = new_table(kcfg, height)
    t = f.sub("table")
    table = Table(**{k: t.array(k, a.dtype, shape=a.shape) for k, a in blank._asdict().items()})
    if table.count.min(initial=0) < 0 or table.count.max(initial=0) > kcfg.states:
        t.fail("table.count", f"bucket counts outside [0, {kcfg.states}]")
    h = f.sub("history")
    first = [h.int("first", 0, value=v) for v in h.list("first")]
    blocks, total = [], 0
    for k, b in enumerate(h.subs("blocks")):
        score = b.array("score", np.int64, ndim=1)
        m = len(score)
        block = {"index": b.int("index", 0, n), "score": score, "parent": b.array("parent", np.int64, shape=(m,)),
                 "start": b.array("start", np.int64, shape=(m,)), "length": b.array("length", np.int64, shape=(m,)),
                 "codes": b.array("codes", np.int16, ndim=1)}
        ends = block["start"] + block["length"]
        if m and (block["length"].min() < 0 or block["start"].min() < 0 or ends.max() > len(block["codes"])):
            b.fail(b.where, "a segment's placements lie outside its codes")
        if k >= len(first) or first[k] != total:
            h.fail("history.first", "not the first id of each block")
        if m and (block["parent"].min() < -1 or (block["parent"] >= total + np.arange(m)).any()):
            b.fail(b.name("parent"), "a state's parent is not a state taken before it")
        blocks.append(block)
        total += m
    if len(first) != len(blocks) or not blocks:
        h.fail("history", "blocks and their first ids do not match")
    history = History()
    history.first, history.blocks, history.dropped = first, blocks, h.int("dropped", 0)
    used = used_slots(table)
    if (table.parent[used] < 0).any() or (table.parent[used] >= total).any():
        t.fail("table.parent", f"a state's parent is not in the history ({total} states)")
    if (table.length[used] < 0).any() or (table.length[used] > kcfg.max_depth).any():
        t.fail("table.length", f"segments longer than {kcfg.max_depth} placements")
    sittings = []
    for s in f.subs("sittings"):
        sittings.append({"started": s.str("started"), "first_index": s.int("first_index", 0),
                         "next_index": s.int("next_index", 0), "seconds": s.float("seconds"),
                         "cpu_seconds": s.float("cpu_seconds"), "peak_mib": s.float("peak_mib")})
    return (table, history, f.array("best_by_step", np.int64, shape=(n,)), f.int("next_index", 0, n + 1),
            f.int("valued", 0), f.int("best", 0), sittings)


def saved_table(table: Table, new_id: np.ndarray) -> dict:
    """The table as a checkpoint keeps it: its entries' parents mapped to a compacted history's ids
    (`History.compacted`), and the slots past each bucket's count, which are never read, zeroed
    (so that the saved file compresses)."""
    used = used_slots(table)
    out = {"count": table.count.copy()}
    for name, a in table._asdict().items():
        if name != "count":
            out[name] = np.where(used.reshape(used.shape + (1,) * (a.ndim - 3)), a, 0).astype(a.dtype)
    out["parent"] = np.where(used, new_id[out["parent"]], 0)
    return out


def used_slots(table: Table) -> np.ndarray:
    """Which slots of each bucket hold an entry: (slots, keys, states) booleans."""
    return np.arange(table.parent.shape[2]) < table.count[..., None]


def live_states(table: Table) -> np.ndarray:
    """The history ids the table's entries grew from."""
    return table.parent[used_slots(table)]


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


def settings(cfg: SegmentConfig, rules, pieces: int) -> SegmentSettings:
    max_depth = max(cfg.depth, cfg.first_depth)
    keys = rules.width * rules.height // cfg.key_cells + 1
    return SegmentSettings(cfg.nodes, cfg.placements == "lowest", cfg.states, cfg.key_cells, keys,
                           np.array(cfg.min_cells, np.int64), cfg.endgame_pieces, cfg.top_free_rows,
                           max_depth + 1, max_depth, pieces)


@register
class Segment(Policy):
    name = "segment"
    Settings = SegmentConfig
    resumable = True

    def fingerprint(self) -> str:
        """What a checkpoint must have been made by: the settings, rules, evaluator, pieces and sequence."""
        what = {"segment": self.config.segment.model_dump(exclude={"checkpoint_seconds", "parallel"}), "rules": repr(self.rules),
                "evaluator": self.evaluator.spec.terms.tolist(), "pieces": self.pieces,
                "sequence": hashlib.sha256(self.sequence.tobytes()).hexdigest()}
        return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def search(self, threshold, progress):
        cfg, rules, n = self.config.segment, self.rules, self.pieces
        kcfg = settings(cfg, rules, n)
        spec = self.evaluator.spec
        saving = self.checkpoint is not None and not self.warming
        if saving:  # the temporary files of a checkpoint whose writer was killed (kill -9)
            remove_stale_temporaries(self.checkpoint.parent, self.checkpoint.name)
        if saving and self.resume and not self.checkpoint.exists() and self.checkpoint.with_suffix(".pkl").exists():
            raise CheckpointError(f"{self.checkpoint.with_suffix('.pkl')}: {legacy_problem(self.checkpoint.with_suffix('.pkl'))}")
        state = self._load(kcfg) if saving and self.resume and self.checkpoint.exists() else None
        if state is None:
            table, history = new_table(kcfg, rules.height), History()
            best_by_step = np.zeros(n, np.int64)
            i, valued, best, sittings = 0, 0, 0, []
        else:
            table, history, best_by_step, i, valued, best, sittings = state
            if progress:  # where the saved search stands, at once
                progress(min(i, n + 1) - 1, n, best)
        sitting = Sitting(min(i, n))
        sittings = [*sittings, sitting.record(min(i, n))]
        pool = self._pool()
        leaves = new_leaves(kcfg, rules.height) if pool is None else None
        stop, abort_piece, abort_threshold = "done", None, None
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
                    tasks = [{"chunks": chunks[part.start:part.stop], "sequence": self.sequence, "rules": rules.kernel,
                              "spec": spec, "settings": kcfg, "height": rules.height, "threads": pool.threads}
                             for part in shares(len(chunks), TASKS_PER_WORKER * pool.n_jobs)]
                    answers = pool.map(expand_task, tasks)
                    found = [f for answer in answers for f in answer["found"]]
                    count = sum(answer["valued"] for answer in answers)
                valued += count
                for c, (chunk, chunk_found) in enumerate(zip(chunks, found)):  # in the states' order, whoever expanded them
                    insert_found(chunk_found, chunk.index, ids[c * CHUNK:(c + 1) * CHUNK], kcfg, table)
                i += 1
                if saving and time.monotonic() - saved_at >= cfg.checkpoint_seconds:
                    sittings[-1] = sitting.record(i)
                    self._save(table, history, best_by_step, i, valued, best, sittings)
                    saved_at = time.monotonic()
                if i >= 2:  # piece index i - 1 expanded: the best after piece i - 1 is known
                    why = self.layer_stop(i - 2, best, best, threshold, progress)
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
            self._save(table, history, best_by_step, i, valued, best, sittings)
        if i > n and not history.reached(n):
            stop = "stuck"  # no path reached the last piece
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

    def _save(self, table, history, best_by_step, i, valued, best, sittings) -> None:
        """Write the checkpoint (atomically: the previous one stays whole until the new one is);
        `CheckpointError` in one line when it cannot be written (a full or read-only disk)."""
        compact, new_id = history.compacted(live_states(table))
        try:
            write_state(self.checkpoint, {
                "version": CHECKPOINT_VERSION, "fingerprint": self.fingerprint(), "next_index": i, "valued": valued,
                "best": best, "best_by_step": best_by_step, "table": saved_table(table, new_id),
                "history": compact.to_dict(), "sittings": sittings, "saved": time.strftime("%Y-%m-%d %H:%M:%S")},
                CHECKPOINT_KIND, compress=True)
        except OSError as e:
            kept = "the previous checkpoint is kept" if self.checkpoint.exists() else "no checkpoint was saved"
            raise CheckpointError(f"{self.checkpoint}: cannot save the search: {e.strerror or e}; {kept} "
                                  "(once there is room, continue with --resume)") from None

    def _load(self, kcfg: SegmentSettings):
        """The saved search (`checkpoint_state`); `CheckpointError` in one line when the file cannot be
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
            return checkpoint_state(f, kcfg, self.rules.height, self.pieces)
        except StateError as e:
            raise CheckpointError(str(e)) from None

