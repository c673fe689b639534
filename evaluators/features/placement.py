"""The built-in placement features: values of the placement itself (where the piece landed,
what it cleared and scored), each ``f(p)`` of an `evaluators.registry.Placement`.
"""

from __future__ import annotations

import numpy as np

from ..registry import placement_feature


@placement_feature
def landing_height(p):
    """((height - y_top) + (height - y_bottom)) / 2 for the top and bottom rows of the piece's four
    cells where it locked (a flat I on the floor: 1.0, a vertical one: 2.5)."""
    height = p.board.shape[0]
    lo = p.y + p.cells[0, 1]
    hi = lo
    for k in range(1, 4):
        r = p.y + p.cells[k, 1]
        if r < lo:
            lo = r
        if r > hi:
            hi = r
    return ((height - lo) + (height - hi)) / 2.0


@placement_feature
def eroded_cells(p):
    """Rows cleared by the lock x the piece's own cells in those rows (Pierre Dellacherie)."""
    if p.lines == 0:
        return 0
    locked = p.locked
    height = locked.shape[0]
    full = (1 << p.width) - 1
    n = 0
    for k in range(4):
        r = p.y + p.cells[k, 1]
        if 0 <= r < height and np.int64(locked[r]) == full:
            n += 1
    return p.lines * n


@placement_feature
def lines_cleared(p):
    """Rows cleared by the lock, 0..4."""
    return p.lines


@placement_feature
def points_gained(p):
    """Points the lock scored."""
    return p.points
