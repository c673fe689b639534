"""The links of each layer's kept states (``parent << 6 | move``), in memory or in a temporary
file, traced back to the best state's placements; and the layer kernels' warm-up."""

from __future__ import annotations

import os
import resource
import tempfile

import numpy as np
from numba import njit

from engine.board import copy_rows

from .layer import expand_layer, merge_and_select
from .surfaces import (
    LINK, LINK_BYTES, MOVE_BITS, MOVE_MASK, MOVE_STATE, MOVE_X, States, SurfaceKey, Window, drop, drop_tables,
    layer_buffers,
)



# --------------------------------------------------------------------------- links
class Links:
    """Per layer, the kept states' links (`LINK`: ``parent << MOVE_BITS | move``): in memory, or
    appended to an unnamed temporary file (deleted when closed) so that memory stays bounded."""

    def __init__(self, on_disk: bool):
        self.layers: list[np.ndarray] = []
        self.offsets: list[int] = []
        self.file = tempfile.TemporaryFile(prefix="profile_dp-links-") if on_disk else None
        self.size = 0
        self.count = 0

    @property
    def on_disk(self) -> bool:
        return self.file is not None

    def append(self, links: np.ndarray) -> None:
        if self.file is None:
            self.layers.append(links.copy())
        else:
            self.offsets.append(self.size)
            self.file.write(links.tobytes())
            self.size += links.nbytes
        self.count += 1

    def get(self, layer: int, i: int) -> int:
        if self.file is None:
            return int(self.layers[layer][i])
        self.file.flush()
        raw = os.pread(self.file.fileno(), LINK_BYTES, self.offsets[layer] + LINK_BYTES * i)
        return int(np.frombuffer(raw, LINK)[0])

    def trace_back(self, layer: int, i: int) -> np.ndarray:
        """The moves of layers 0 .. ``layer`` leading to state ``i`` of ``layer`` (none for -1)."""
        codes = np.zeros(layer + 1, np.int64)
        for back in range(layer, -1, -1):
            link = self.get(back, i)
            codes[back] = link & MOVE_MASK
            i = link >> MOVE_BITS
        return codes

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def replay_moves(h, codes, shapes, tables, win, out_place):
    """Placements (x, y, state) on the whole board of the DP moves ``codes`` from heights ``h``
    (updated); returns False when a move is not a transition (a bug)."""
    nh = np.empty(win.width, np.int64)
    for t in range(codes.shape[0]):
        shape, m = shapes[t], codes[t]
        cy, cells, f = drop(h, nh, tables, win, shape, m)
        if cy < 0:
            return False
        out_place[t, 0] = tables.moves[shape, m, MOVE_X]
        out_place[t, 1] = cy
        out_place[t, 2] = tables.moves[shape, m, MOVE_STATE]
        copy_rows(h, nh)
    return True


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def best_index(profiles, scores):
    """The index of the highest score (ties: the smaller profile)."""
    b = 0
    for i in range(1, profiles.shape[0]):
        if scores[i] > scores[b] or (scores[i] == scores[b] and profiles[i] < profiles[b]):
            b = i
    return b


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MiB (``getrusage``)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def warm_layer_kernels(rules, win: Window, key: SurfaceKey) -> None:
    """Run each layer kernel once on a tiny layer (one state, the empty window ``win``)."""
    tables = drop_tables(rules)
    buf = layer_buffers(1, int(tables.count.max()))
    states = States(np.zeros(1, np.int64), np.zeros(1, np.int64))
    expand_layer(states, 0, 1, tables, win, rules.kernel, buf.children)
    nm = int(tables.count[0])
    merge_and_select(buf, nm, nm, 1, win.width, key, 0)
    best_index(states.profiles, states.scores)
    replay_moves(np.zeros(win.width, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), tables, win,
                 np.zeros((0, 3), np.int64))
