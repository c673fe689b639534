"""A route to a placement: a shortest list of steps (L, R, D, C) from the spawn to a position,
what a record names for each piece (`engine.record.encode`). Among shortest routes, the one found
by walking back from the target preferring D, then L, R, C.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .tables import ALL_STATES, STEP_C, STEP_D, STEP_L, STEP_R, XOFF, MoveScratch, fit_masks, scratch
from .search import search

@njit(cache=True)
def route_into(board, rules, shape, spawn_state, tx, ty, ts, sc, out):
    """A shortest list of steps from the spawn to the cells of position (tx, ty, ts), written to
    ``out`` (step codes); returns its length, or -1 when no state with those cells reaches it
    within the rules' ``max_steps``. ``sc`` needs ``max_steps + 1`` stored layers.

    Among shortest routes, the one found by walking back from the target preferring D, then L, R,
    C, so routes end with their drops and begin with rotations and shifts."""
    alias = rules.alias[shape]
    fit_masks(board, rules.cells[shape], rules.width, sc.fit, sc.free, ALL_STATES, sc.ext, sc.lowest, sc.shift)
    d_max = search(sc, rules.spawn_x, rules.spawn_y, spawn_state, rules.max_steps, True, ALL_STATES)
    if d_max < 0:
        return -1
    layers = sc.layers
    bit = np.int64(1) << (tx + XOFF)
    target = alias[ts]
    found = -1
    s = -1
    for d in range(d_max + 1):
        for k in range(4):
            if alias[k] == target and layers[d, k, ty] & bit:
                found = d
                s = k
                break
        if found >= 0:
            break
    if found < 0:
        return -1
    x = tx
    y = ty
    for d in range(found, 0, -1):
        below = layers[d - 1]
        if y > 0 and below[s, y - 1] & (np.int64(1) << (x + XOFF)):
            out[d - 1] = STEP_D
            y -= 1
        elif below[s, y] & (np.int64(1) << (x + 1 + XOFF)):
            out[d - 1] = STEP_L
            x += 1
        elif below[s, y] & (np.int64(1) << (x - 1 + XOFF)):
            out[d - 1] = STEP_R
            x -= 1
        else:
            out[d - 1] = STEP_C
            s = (s + 3) & 3
    return found


def route(board, rules, shape: int, state: int, target, sc: MoveScratch | None = None) -> list[int]:
    """A shortest step list (codes 0..3 = L, R, D, C) from the spawn to ``target`` (x, y, state)."""
    if rules.placement == "drop":
        raise ValueError(f"rules {rules.name!r} place pieces by dropping them: there are no routes")
    tx, ty, ts = (int(v) for v in target)
    steps = np.zeros(max(rules.max_steps, 1), np.int64)
    n = route_into(np.ascontiguousarray(board, np.uint16), rules.kernel, shape, state, tx, ty, ts,
                   sc or scratch(rules, routes=True), steps)
    if n < 0:
        raise ValueError(f"position {target} is not reachable within {rules.max_steps} steps")
    return steps[:n].tolist()
