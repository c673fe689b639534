"""Batch forms: one piece on many boards at once, for searches that move whole layers.

`expand` generates every placement of the same piece on each of N boards and locks each one,
returning the children as flat arrays (no Python object per child). Parents are spread over
numba's threads (``prange``), each thread with its own scratch arrays; the output order is fixed
(by parent, then placement order), so results do not depend on the number of threads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import get_num_threads, njit, prange

from .board import count_and_clear, place
from .movegen import placements_into, rows_for, scratch_arrays
from .rules import Rules


def capacity(rules: Rules) -> int:
    """An upper bound on the placements of one piece: one per (state, centre row, column)."""
    return 4 * rows_for(rules.height) * (rules.width + 8)


@njit(cache=True, parallel=True)
def placements_batch(boards, cells, alias, width, sx, sy, ss, max_steps, out, counts, chunks):
    """``out[i, :counts[i]]`` receives the placements (x, y, state) of the piece on ``boards[i]``;
    the boards are cut into ``chunks`` runs, each searched by one thread with its own scratch."""
    n = boards.shape[0]
    rows = boards.shape[1] + 4
    chunks = min(n, chunks)
    for c in prange(chunks):
        fit, free, visited, front, nxt, layers = scratch_arrays(rows)
        for i in range(c * n // chunks, (c + 1) * n // chunks):
            counts[i] = placements_into(boards[i], cells, alias, width, sx, sy, ss, max_steps,
                                        fit, free, visited, front, nxt, layers, out[i])


@njit(cache=True, parallel=True)
def lock_batch(boards, found, counts, starts, cells, full, children, parent, placement, cells_count,
               full_rows, occupied_rows):
    """Lock every found placement on a copy of its parent board (see `expand`)."""
    for i in prange(boards.shape[0]):
        for k in range(counts[i]):
            j = starts[i] + k
            children[j] = boards[i]
            x, y, s = found[i, k, 0], found[i, k, 1], found[i, k, 2]
            place(children[j], cells[s], x, y)
            c, f, o = count_and_clear(children[j], full)
            parent[j] = i
            placement[j, 0] = x
            placement[j, 1] = y
            placement[j, 2] = s
            cells_count[j] = c
            full_rows[j] = f
            occupied_rows[j] = o


@dataclass(frozen=True)
class Children:
    """The children of a batch of boards for one piece, child j being placement ``placement[j]``
    (x, y, state) on parent board ``parent[j]``. ``boards[j]`` is the board after the lock and
    clear; ``cells``, ``full_rows`` and ``occupied_rows`` are counted after the lock, before the
    clear (the quantities the rules score and end the game by)."""

    parent: np.ndarray
    placement: np.ndarray
    boards: np.ndarray
    cells: np.ndarray
    full_rows: np.ndarray
    occupied_rows: np.ndarray

    def __len__(self) -> int:
        return len(self.parent)

    def points(self, rules: Rules) -> np.ndarray:
        """Points each child's lock scores by the rules' table (before any game-over rule)."""
        table = rules.scores[self.full_rows]
        return table * self.cells if rules.score_by_cells else table

    def top_touched(self, rules: Rules) -> np.ndarray:
        """Whether each child's lock ends the game by ``top_out`` (every row occupied)."""
        if rules.top_out != "all_rows":
            return np.zeros(len(self), bool)
        return self.occupied_rows == rules.height


def expand(boards: np.ndarray, rules: Rules, shape: int, spawn_state: int) -> Children:
    """Every placement of ``shape`` (spawning in ``spawn_state``) on each board of ``boards``
    (an (N, height) uint16 array), locked."""
    boards = np.ascontiguousarray(boards)
    n = boards.shape[0]
    found = np.empty((n, capacity(rules), 3), np.int64)
    counts = np.zeros(n, np.int64)
    placements_batch(boards, rules.cells[shape], rules.alias[shape], rules.width, rules.spawn_x,
                     rules.spawn_y, spawn_state, rules.step_limit, found, counts, 4 * get_num_threads())
    starts = np.zeros(n, np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    total = int(counts.sum())
    out = Children(
        parent=np.empty(total, np.int64),
        placement=np.empty((total, 3), np.int64),
        boards=np.empty((total, rules.height), boards.dtype),
        cells=np.empty(total, np.int64),
        full_rows=np.empty(total, np.int64),
        occupied_rows=np.empty(total, np.int64),
    )
    lock_batch(boards, found, counts, starts, rules.cells[shape], rules.full_row, out.boards, out.parent,
               out.placement, out.cells, out.full_rows, out.occupied_rows)
    return out
