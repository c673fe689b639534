"""Evaluation as a dot product, callable from inside other numba kernels.

An evaluator's *spec* is a plain tuple of arrays, one slot per name of `features.FEATURES`
(n slots), so that it passes into numba:

    (weights float64[n], active bool[n], delta bool[n],
     table_x float64[n, K], table_y float64[n, K], table_len int64[n])

The value of a placement is the sum over the active features i of ``weights[i] * v_i``, where v_i is
feature i (board features measured on the board after the lock and the clear), minus the parent
board's value of the feature when ``delta[i]``, then passed through feature i's step table when
``table_len[i] > 0``: ``table_y[i, j]`` for the largest ``j < table_len[i]`` with
``table_x[i, j] <= v``, or 0.0 when ``v < table_x[i, 0]``.

A search computes the parent's values once (`parent_values`) and evaluates every child with
`evaluate`, passing the spec tuple through unchanged. Within a call, shared intermediates are
computed at most once and only when an active feature needs them: the top row (every board
feature starts there), the hole count (``holes``, ``rows_with_holes``, and ``open_holes`` /
``covered_holes``, whose flood fill runs only when there are holes), the step counters (one pass
for ``platforms`` and the six ``steps_*``). `evaluate` allocates nothing and is compiled without
numba's reference counting (see the comment above it).

Note on numba's cache: it is invalidated only when this file changes, not when `features.py` does;
after editing a feature kernel, touch this file (or clear ``evaluators/__pycache__``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import features as F

# Slots, fixed literals so the compiled (and cached) code does not depend on another module's
# globals; checked against FEATURES at import.
LANDING_HEIGHT = 0
ERODED_CELLS = 1
LINES_CLEARED = 2
POINTS_GAINED = 3
ROW_TRANSITIONS = 4
INTERIOR_ROW_TRANSITIONS = 5
COLUMN_TRANSITIONS = 6
HOLES = 7
OPEN_HOLES = 8
COVERED_HOLES = 9
ROWS_WITH_HOLES = 10
BURIED_CELLS = 11
WELLS = 12
OCCUPIED_CELLS = 13
OCCUPIED_ROWS = 14
AGGREGATE_HEIGHT = 15
MAX_HEIGHT = 16
BUMPINESS = 17
PLATFORMS = 18
STEPS_UP_1 = 19
STEPS_UP_2 = 20
STEPS_UP_3PLUS = 21
STEPS_DOWN_1 = 22
STEPS_DOWN_2 = 23
STEPS_DOWN_3PLUS = 24
N_FEATURES = 25

for _name in F.FEATURES:
    if globals()[_name.upper()] != F.FEATURES.index(_name):
        raise ImportError(f"evaluators.kernel: slot of {_name} disagrees with features.FEATURES")
if len(F.FEATURES) != N_FEATURES:
    raise ImportError("evaluators.kernel: N_FEATURES disagrees with features.FEATURES")


@njit(cache=True)
def board_feature(i, board, width):
    """Board feature number ``i`` of `FEATURES` on ``board`` (0 for a placement feature)."""
    top = F.top_row(board)
    if i == ROW_TRANSITIONS:
        return F.row_transitions_from(board, width, top)
    if i == INTERIOR_ROW_TRANSITIONS:
        return F.interior_row_transitions_from(board, width, top)
    if i == COLUMN_TRANSITIONS:
        return F.column_transitions_from(board, width, top)
    if i == HOLES:
        return F.holes_from(board, width, top)
    if i == OPEN_HOLES:
        return F.open_holes_from(board, width, top)
    if i == COVERED_HOLES:
        n = F.holes_from(board, width, top)
        return n - F.open_holes_from(board, width, top) if n > 0 else 0
    if i == ROWS_WITH_HOLES:
        return F.holes_and_rows_from(board, width, top)[1]
    if i == BURIED_CELLS:
        return F.buried_cells_from(board, width, top)
    if i == WELLS:
        return F.wells_from(board, width, top)
    if i == OCCUPIED_CELLS:
        return F.occupied_cells_from(board, width, top)
    if i == OCCUPIED_ROWS:
        return F.occupied_rows_from(board, width, top)
    if i == AGGREGATE_HEIGHT:
        return F.aggregate_height_from(board, width, top)
    if i == MAX_HEIGHT:
        return board.shape[0] - top
    if i == BUMPINESS:
        return F.bumpiness_from(board, width, top)
    if PLATFORMS <= i <= STEPS_DOWN_3PLUS:
        return F.step_counts_from(board, width, top)[i - PLATFORMS]
    return 0


@njit(cache=True)
def parent_values(board, width, spec, out):
    """``out[i]`` = board feature i of ``board`` for every active delta feature i, 0 elsewhere
    (placement features have no parent value)."""
    active = spec[1]
    delta = spec[2]
    for i in range(out.shape[0]):
        out[i] = 0.0
        if active[i] and delta[i]:
            out[i] = board_feature(i, board, width)


@njit(cache=True, inline="always")
def _term(i, value, parent_vals, spec):
    """Feature ``i``'s term: weight × table(value - parent value if delta, else value)."""
    v = np.float64(value)
    if spec[2][i]:
        v -= parent_vals[i]
    n = spec[5][i]
    if n > 0:
        stepped = 0.0
        j = 0
        while j < n and spec[3][i, j] <= v:
            stepped = spec[4][i, j]
            j += 1
        v = stepped
    return spec[0][i] * v


# ``_nrt=False``: compiled without numba's reference counting. Every array argument would
# otherwise be counted in and out at each call (an atomic operation each, ~2 x 11 per call, more
# than the features cost), numba's pruning of those counts being defeated by the error checks of
# the calls to the feature kernels. Nothing here allocates, which is what the runtime is for; a
# change that needs it fails to compile rather than slowing down. (`_term` is inlined by numba so
# that it is compiled the same way.)
@njit(cache=True, _nrt=False)
def evaluate(parent, parent_vals, locked, cleared, cells, x, y, lines, points, width, spec):
    """Value of one placement under ``spec``.

    ``parent``: the board before the piece; ``parent_vals``: `parent_values` of it for this spec;
    ``locked``: the board with the piece placed, before clearing; ``cleared``: after clearing;
    ``cells``: the piece state's (4, 2) offsets (dx, dy) and (x, y) its centre; ``lines``: rows
    cleared; ``points``: points gained. Board features are measured on ``cleared``."""
    active = spec[1]
    height = cleared.shape[0]
    total = 0.0

    # Placement features.
    if active[LANDING_HEIGHT]:
        total += _term(LANDING_HEIGHT, F.landing_height(cells, y, height), parent_vals, spec)
    if active[ERODED_CELLS]:
        total += _term(ERODED_CELLS, F.eroded_cells(locked, cells, y, lines, width), parent_vals, spec)
    if active[LINES_CLEARED]:
        total += _term(LINES_CLEARED, lines, parent_vals, spec)
    if active[POINTS_GAINED]:
        total += _term(POINTS_GAINED, points, parent_vals, spec)

    top = F.top_row(cleared)
    # Row scans.
    if active[ROW_TRANSITIONS]:
        total += _term(ROW_TRANSITIONS, F.row_transitions_from(cleared, width, top), parent_vals, spec)
    if active[INTERIOR_ROW_TRANSITIONS]:
        total += _term(INTERIOR_ROW_TRANSITIONS, F.interior_row_transitions_from(cleared, width, top),
                       parent_vals, spec)
    if active[COLUMN_TRANSITIONS]:
        total += _term(COLUMN_TRANSITIONS, F.column_transitions_from(cleared, width, top), parent_vals, spec)
    if active[OCCUPIED_CELLS]:
        total += _term(OCCUPIED_CELLS, F.occupied_cells_from(cleared, width, top), parent_vals, spec)
    if active[OCCUPIED_ROWS]:
        total += _term(OCCUPIED_ROWS, F.occupied_rows_from(cleared, width, top), parent_vals, spec)
    if active[BURIED_CELLS]:
        total += _term(BURIED_CELLS, F.buried_cells_from(cleared, width, top), parent_vals, spec)
    if active[WELLS]:
        total += _term(WELLS, F.wells_from(cleared, width, top), parent_vals, spec)

    # Holes: one pass for holes (and rows with holes), the flood fill only for open / covered.
    if active[HOLES] or active[ROWS_WITH_HOLES] or active[OPEN_HOLES] or active[COVERED_HOLES]:
        if active[ROWS_WITH_HOLES]:
            n_holes, n_rows = F.holes_and_rows_from(cleared, width, top)
            total += _term(ROWS_WITH_HOLES, n_rows, parent_vals, spec)
        else:
            n_holes = F.holes_from(cleared, width, top)
        if active[HOLES]:
            total += _term(HOLES, n_holes, parent_vals, spec)
        if active[OPEN_HOLES] or active[COVERED_HOLES]:
            n_open = F.open_holes_from(cleared, width, top) if n_holes > 0 else 0
            if active[OPEN_HOLES]:
                total += _term(OPEN_HOLES, n_open, parent_vals, spec)
            if active[COVERED_HOLES]:
                total += _term(COVERED_HOLES, n_holes - n_open, parent_vals, spec)

    # Heights.
    if active[AGGREGATE_HEIGHT]:
        total += _term(AGGREGATE_HEIGHT, F.aggregate_height_from(cleared, width, top), parent_vals, spec)
    if active[MAX_HEIGHT]:
        total += _term(MAX_HEIGHT, height - top, parent_vals, spec)
    if active[BUMPINESS]:
        total += _term(BUMPINESS, F.bumpiness_from(cleared, width, top), parent_vals, spec)
    if (active[PLATFORMS] or active[STEPS_UP_1] or active[STEPS_UP_2] or active[STEPS_UP_3PLUS]
            or active[STEPS_DOWN_1] or active[STEPS_DOWN_2] or active[STEPS_DOWN_3PLUS]):
        c0, c1, c2, c3, c4, c5, c6 = F.step_counts_from(cleared, width, top)
        if active[PLATFORMS]:
            total += _term(PLATFORMS, c0, parent_vals, spec)
        if active[STEPS_UP_1]:
            total += _term(STEPS_UP_1, c1, parent_vals, spec)
        if active[STEPS_UP_2]:
            total += _term(STEPS_UP_2, c2, parent_vals, spec)
        if active[STEPS_UP_3PLUS]:
            total += _term(STEPS_UP_3PLUS, c3, parent_vals, spec)
        if active[STEPS_DOWN_1]:
            total += _term(STEPS_DOWN_1, c4, parent_vals, spec)
        if active[STEPS_DOWN_2]:
            total += _term(STEPS_DOWN_2, c5, parent_vals, spec)
        if active[STEPS_DOWN_3PLUS]:
            total += _term(STEPS_DOWN_3PLUS, c6, parent_vals, spec)
    return total


@njit(cache=True)
def feature_vector(parent, locked, cleared, cells, x, y, lines, points, width, out):
    """Every feature of one placement into ``out`` (float64[n], `FEATURES` order): the placement
    features of the lock and the board features of ``cleared``. ``parent`` is unused (kept so the
    arguments match `evaluate`)."""
    height = cleared.shape[0]
    out[LANDING_HEIGHT] = F.landing_height(cells, y, height)
    out[ERODED_CELLS] = F.eroded_cells(locked, cells, y, lines, width)
    out[LINES_CLEARED] = lines
    out[POINTS_GAINED] = points
    for i in range(ROW_TRANSITIONS, N_FEATURES):
        out[i] = board_feature(i, cleared, width)
