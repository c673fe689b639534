"""The beam's constants and the bundles its kernels read and write: the settings
(`BeamSettings`), the search's state between chunks of layers (`BeamState`), a layer's children
(`Children`) and its parents (`Parents`); and two helpers on boards."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine._jit.decorators import inlined, inner
from engine.outcome import Stop




#: a ranking sorts its candidates by one packed key of at most PACK_BITS bits (`radix_argsort`); a
#: row whose range reaches PACK_LIMIT is replaced by its dense ranks
PACK_BITS = 62
PACK_LIMIT = 1 << 40
#: the score ranking ``score_per_clear`` ranks by score x PER_CLEAR_SCALE // max(clears, 1)
PER_CLEAR_SCALE = 10_000
#: layers grow past the width only by kept ties; buffers then grow by width // GROWTH_DIVISOR extra
GROWTH_DIVISOR = 8
#: with several threads, the parents of a layer are cut into this many runs per thread
THREAD_CHUNKS = 4
#: a chunk of layers between two returns to Python (progress, Ctrl-C) aims at this many seconds
CHUNK_SECONDS = 0.5
#: the trace starts with room for this many full layers and doubles when it needs more
TRACE_LAYERS = 64

#: why `run_layers` returned (int constants, from `engine.outcome.Stop`)
GOING, STUCK, ABORTED = int(Stop.GOING), int(Stop.STUCK), int(Stop.ABORTED)


# ------------------------------------------------------------------------------------------------
# Bundles


class BeamSettings(NamedTuple):
    """The `BeamConfig` as the kernels read it."""

    width: int
    placements: object           # a `NODE_PLACEMENTS` token: every placement, or the lowest of each
    n_score: int                 # picks by the score ranking
    n_quality: int               # picks by the quality ranking
    score_quota: np.ndarray      # most score picks per ancestor g + 1 generations up
    quality_quota: np.ndarray
    score_height_max: int        # most score picks per occupied height
    quality_height_max: int
    per_clear: bool              # score ranking: score per clear first (else score)
    quality_first: bool          # quality ranking: quality first (else score, then quality)
    score_gap: int
    height_gap: int
    min_height: np.ndarray       # [0] + clear_min_height
    min_cells: np.ndarray        # [0] + clear_min_cells
    endgame_start: int           # the first piece (0-based) played without the clear rules
    sky_rows: int
    sky_max_cells: int
    top_row_free: bool
    tie_order: object            # a `TIE_ORDERS` token
    tie_seed: int                # the order of boards of equal value (`layered.tie_hash`; 0: the default)
    keep_ties: bool
    threads: object              # a token of the `THREADS` tables: each stage in this thread or over numba's
    chunks: int                  # runs of parents spread over numba's threads (1: no threads)


class BeamState(NamedTuple):
    """Everything the layer loop carries from one chunk of layers to the next.

    The layer (``n`` = ``scalars[N_NODES]`` nodes): ``boards``, ``scores``, ``clears``,
    ``heights`` (occupied rows), ``cells``, ``anc`` (the node's ancestor 1, 2, ... generations up,
    as indices into those layers). The trace: for layer t, ``trace_parent`` / ``trace_code`` hold
    its nodes' parent indices and packed placements from ``trace_start[t]``. ``best_by_step[t]``:
    the best score of layer t's children. ``scalars``: see the ``S_*`` slots. The rest is scratch
    reused from layer to layer (children, merge table, picks)."""

    boards: np.ndarray
    scores: np.ndarray
    clears: np.ndarray
    heights: np.ndarray
    cells: np.ndarray
    anc: np.ndarray
    trace_parent: np.ndarray
    trace_code: np.ndarray
    trace_start: np.ndarray
    best_by_step: np.ndarray
    scalars: np.ndarray
    kids: "Children"
    merge_slot: np.ndarray
    merge_stamp: np.ndarray
    counters: np.ndarray


class Children(NamedTuple):
    """The children of one layer: per parent, its packed placements (``codes[i, :counts[i]]``) and
    the first child's index (``starts``); per child its board, score, clears, quality, occupied
    height, cells after the clear, parent, packed placement, rows cleared, and whether it survived
    the hard rules."""

    codes: np.ndarray
    counts: np.ndarray
    starts: np.ndarray
    boards: np.ndarray
    score: np.ndarray
    clears: np.ndarray
    quality: np.ndarray
    height: np.ndarray
    cells: np.ndarray
    parent: np.ndarray
    code: np.ndarray
    lines: np.ndarray
    alive: np.ndarray


class Parents(NamedTuple):
    """What valuing children reads of their parents (the layer's first ``n`` nodes)."""

    boards: np.ndarray
    scores: np.ndarray
    clears: np.ndarray
    heights: np.ndarray
    cells: np.ndarray


#: slots of `BeamState.scalars`
S_NODES, S_TRACE, S_BEST_SCORE, S_BEST_PIECE, S_BEST_PARENT, S_BEST_CODE, S_EXPANDED, S_LAYERS = range(8)
N_SCALARS = 8


# ------------------------------------------------------------------------------------------------
# Small helpers


@inlined
def occupied_height(board):
    """Rows from the top occupied row down to the floor (0 for an empty board)."""
    h = board.shape[0]
    for y in range(h):
        if board[y] != 0:
            return h - y
    return 0


@inner
def board_words(boards, idx):
    """Each board as int64 words of four rows, top word first, the word's top row in its low 16
    bits: ``out[w, m]`` for board ``idx[m]`` (the 1,395,326 solver's order of tied boards compares
    these, larger first). Boards of other heights are padded with empty rows at the bottom."""
    n_words = (boards.shape[1] + 3) // 4
    out = np.zeros((n_words, idx.shape[0]), np.int64)
    for m in range(idx.shape[0]):
        b = boards[idx[m]]
        for y in range(b.shape[0]):
            out[y // 4, m] |= np.int64(b[y]) << (16 * (y % 4))
    return out
