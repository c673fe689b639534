"""The segment search's settings (`SegmentConfig`, the configuration section; `SegmentSettings`,
the kernels' bundle) and the bundles its kernels read and write (`Roots`, `Leaves`, `Found`,
`Table`)."""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np
from pydantic import Field, field_validator

from engine.memory import Need
from engine.parallel import ParallelConfig

from ..config import Strict

#: states expanded per kernel call (their leaves are merged in their order between calls)
CHUNK = 16
#: children reserved per node of a layer before the buffers grow
CHILDREN_PER_NODE = 48


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
    tie_seed: int = Field(
        0, ge=0, lt=2**63, description="the order of boards of equal value (0: the default order, which the records "
                                       "were made with); another seed draws another order of ties only: an instance "
                                       "of the Geek game for racing")
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
        kcfg = settings(self, rules, pieces, by_board=False)  # the sizes alone: the same either way
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
    tie_seed: int  # the order of boards of equal value (`layered.tie_hash`; 0: the default)
    by_board: bool  # the evaluator values a board alone (`EvaluatorSpec.by_board`): equal boards, equal values


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


def settings(cfg: SegmentConfig, rules, pieces: int, by_board: bool) -> SegmentSettings:
    """The kernels' bundle of ``cfg`` for ``rules`` over ``pieces`` pieces, its evaluator valuing a
    board alone or not (``by_board``)."""
    max_depth = max(cfg.depth, cfg.first_depth)
    keys = rules.width * rules.height // cfg.key_cells + 1
    return SegmentSettings(cfg.nodes, cfg.placements == "lowest", cfg.states, cfg.key_cells, keys,
                           np.array(cfg.min_cells, np.int64), cfg.endgame_pieces, cfg.top_free_rows,
                           max_depth + 1, max_depth, pieces, cfg.tie_seed, by_board)
