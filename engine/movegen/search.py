"""The bit-parallel search of where a piece can go from its spawn.

``fit[s, y]`` (`engine.movegen.tables.fit_masks`) holds, at bit ``x + XOFF``, whether the piece
in state ``s`` centred at (x, y) is valid; a breadth-first search then advances whole rows of
positions per step with shifts and masks (L: ``>> 1``, R: ``<< 1``, D: row y-1 -> y, C: state
s-1 -> s), one layer per step count, so the first layer holding a position is its distance
(`search`). The placements' search runs on a piece's distinct states when they repeat with a period
(`Rules.periods`: O one class, I, S, Z two, whose rotation toggles them), which is exact: moves
depend on the cells only, so a placement's least distance over its states is the distance of its
class. Routes search the four states (a record names every rotation). `reach` answers with the
unlimited `sweep` when its bound proves the step limit cannot bind, else with `search`.
"""

from __future__ import annotations

import numpy as np

from .._jit.decorators import inlined
from ..board import popcount, run_fill
from .tables import XOFF, fit_masks

@inlined
def _within(sx, reach):
    """Mask of the centre columns x with |x - sx| <= reach (empty when reach < 0)."""
    if reach < 0:
        return np.int64(0)
    lo = max(sx + XOFF - reach, 0)
    hi = min(sx + XOFF + reach, 62)
    return ((np.int64(1) << (hi - lo + 1)) - 1) << lo


@inlined
def sky_row(fit, free, sx, sy, states):
    """The lowest row Y such that every centre row sy..Y is open sky: in each state the piece
    fits exactly where it fits on an empty board, and every state fits at the spawn. Returns -1
    when the spawn row is not open sky.

    In open sky the distance from the spawn (sx, sy, ss) to (x, y, s) is exactly
    ``(y - sy) + |x - sx| + (s - ss) mod states``: each step changes one coordinate by one, and the
    path that rotates at the spawn, shifts, then drops is valid."""
    bit = np.int64(1) << (sx + XOFF)
    y = sy
    while y < fit.shape[1]:
        for s in range(states):
            if fit[s, y] != free[s] or free[s] & bit == 0:
                return y - 1
        y += 1
    return y - 1


@inlined
def farthest(free, sx):
    """Columns from the spawn column ``sx`` to the farther end of the row mask ``free``:
    the most horizontal steps a position of the row is away from the spawn's column."""
    lowest = popcount((free & -free) - 1)
    highest = lowest
    while free >> (highest + 1):
        highest += 1
    return max(sx + XOFF - lowest, highest - sx - XOFF)


@inlined
def copy_layer(dst, src):
    """``dst[s, y] = src[s, y]`` for a (states, rows) frontier, by a loop: numba compiles an array
    assignment ``dst[:] = src`` with its shape-mismatch message, seconds of every cold compile."""
    for s in range(src.shape[0]):
        for y in range(src.shape[1]):
            dst[s, y] = src[s, y]


@inlined
def search(sc, sx, sy, ss, max_steps, store, states):
    """Breadth-first search from the spawn (sx, sy, ss) over at most ``max_steps`` steps, in a graph
    of ``states`` states whose rotation goes from s to (s + 1) mod ``states``: the piece's four
    states, or its distinct ones when they repeat with that period (`Rules.periods`: a placement's
    distance is then the least over the states with its cells, the search on classes being exact).

    Fills ``visited[s, y]`` with every position reachable in at most ``max_steps`` steps. With
    ``store``, ``layers[d]`` receives the positions first reached after exactly ``d`` steps and the
    search runs layer by layer from the spawn. Without it, rows of open sky (`sky_row`) are filled
    in closed form and the layered search starts at the lowest of them, whose positions join the
    frontier at their exact distances. Returns the last layer's number, or -1 when the spawn
    position is invalid. ``sc`` is the `MoveScratch`, ``fit`` and ``free`` already filled.
    """
    fit, free, visited, layers = sc.fit, sc.free, sc.visited, sc.layers
    front, nxt = sc.front, sc.nxt
    rows = fit.shape[1]
    visited[:] = 0
    front[:] = 0
    nxt[:] = 0
    if fit[ss, sy] & (np.int64(1) << (sx + XOFF)) == 0:
        return -1
    sky = -1 if store else min(sky_row(fit, free, sx, sy, states), sy + max_steps)
    if sky < 0:
        sky = sy  # the spawn alone is the seed: at distance 0 it is the only position of its row
        seed_rows_only_spawn = True
    else:
        seed_rows_only_spawn = False
        for y in range(sy, sky):
            for s in range(states):
                visited[s, y] = free[s] & _within(sx, max_steps - (y - sy) - ((s - ss) % states))
    d = sky - sy
    last_seed = d  # the distance of the farthest seed of the sky's lowest row
    if not seed_rows_only_spawn:
        for s in range(states):
            last_seed = max(last_seed, d + ((s - ss) % states) + farthest(free[s], sx))
    lo = sky
    hi = sky
    # seeds of the sky's lowest row at distance d
    for s in range(states):
        if seed_rows_only_spawn:
            m = (np.int64(1) << (sx + XOFF)) if s == ss else np.int64(0)
        else:
            j = d - (sky - sy) - ((s - ss) % states)
            m = free[s] & (_within(sx, j) ^ _within(sx, j - 1))
        front[s, sky] = m
        visited[s, sky] |= m
    if store:
        copy_layer(layers[0], front)
    while d < max_steps:
        top = min(hi + 1, rows - 1)
        new_lo = rows
        new_hi = -1
        for s in range(states):
            prev = (s + states - 1) % states
            for y in range(lo, top + 1):
                f = front[s, y]
                m = (f << 1) | (f >> 1) | front[prev, y]
                if y > lo:
                    m |= front[s, y - 1]
                m &= fit[s, y] & ~visited[s, y]
                nxt[s, y] = m
                if m:
                    visited[s, y] |= m
                    if y < new_lo:
                        new_lo = y
                    if y > new_hi:
                        new_hi = y
        for s in range(states):
            for y in range(lo, hi + 1):
                front[s, y] = 0
        front, nxt = nxt, front
        d += 1
        if d <= last_seed:
            for s in range(states):
                j = d - (sky - sy) - ((s - ss) % states)
                m = free[s] & (_within(sx, j) ^ _within(sx, j - 1)) & ~visited[s, sky]
                if m:
                    front[s, sky] |= m
                    visited[s, sky] |= m
                    new_lo = min(new_lo, sky)
                    new_hi = max(new_hi, sky)
        if new_hi < 0:
            d -= 1
            break
        if store:
            copy_layer(layers[d], front)
        lo = new_lo
        hi = new_hi
    return d


@inlined
def resting_mask(visited, fit, s, y):
    """Positions of state ``s`` in row ``y`` that were reached and cannot move one row down."""
    below = fit[s, y + 1] if y + 1 < fit.shape[1] else 0
    return visited[s, y] & ~below


@inlined
def sweep(sc, sx, sy, ss, max_steps, states):
    """Every position reachable from the spawn (sx, sy, ss) with no step limit, into ``visited``,
    row by row from the top: a piece never moves up, so a row's positions are those reached by one
    step down from the row above, closed under moves left and right (`run_fill`) and rotations.
    Returns True when every one of them is provably within ``max_steps`` steps, so that the set is
    exactly the limited one: the open-sky rows (`sky_row`) have exact distances, and below them a
    row's positions are at most its count further than the row above's farthest (a shortest path
    enters the row by one step down and then visits each of its positions at most once). False
    means the bound exceeds the limit: use the layered `search`. ``fit`` and ``free`` filled, and
    the spawn position valid (`reach` checks it first)."""
    fit, free, visited, m = sc.fit, sc.free, sc.visited, sc.front
    rows = fit.shape[1]
    for y in range(sy):  # a piece never moves up
        for c in range(states):
            visited[c, y] = 0
    sky = sky_row(fit, free, sx, sy, states)
    y = sy
    if sky >= sy:  # open sky: everything within the walls, at a known distance
        far = 0
        for c in range(states):
            far = max(far, farthest(free[c], sx))
        bound = (sky - sy) + far + states - 1
        for y in range(sy, sky + 1):
            for c in range(states):
                visited[c, y] = free[c]
        y = sky + 1
    else:
        for c in range(states):
            m[c, sy] = (np.int64(1) << (sx + XOFF)) if c == ss else np.int64(0)
        bound = -1  # the spawn row's own count is added below
    for y in range(y, rows):
        if y > sy or sky >= sy:
            for c in range(states):
                m[c, y] = visited[c, y - 1] & fit[c, y]
        count = 0
        changed = True
        while changed:
            changed = False
            for c in range(states):
                m[c, y] = run_fill(m[c, y], fit[c, y])
            for c in range(states):
                turned = m[(c + states - 1) % states, y] & fit[c, y] & ~m[c, y]
                if turned:
                    m[c, y] |= turned
                    changed = True
        for c in range(states):
            visited[c, y] = m[c, y]
            count += popcount(m[c, y])
        if count == 0:
            for yy in range(y + 1, rows):
                for c in range(states):
                    visited[c, yy] = 0
            break
        bound += count
    return bound <= max_steps


@inlined
def reach(board, rules, shape, spawn_state, sc):
    """Fill ``sc`` with where ``shape`` spawning in ``spawn_state`` can go within the step limit, on
    its distinct states (`Rules.periods`; class c's cells are state c's); returns the number of
    classes, or 0 when the spawn is blocked. The unlimited `sweep` answers when its bound proves the
    limit cannot bind (almost always); else the layered `search` does."""
    states = rules.periods[shape]
    fit_masks(board, rules.cells[shape], rules.width, sc.fit, sc.free, states, sc.ext, sc.lowest, sc.shift)
    ss = spawn_state % states
    if sc.fit[ss, rules.spawn_y] & (np.int64(1) << (rules.spawn_x + XOFF)) == 0:
        return 0
    if not sweep(sc, rules.spawn_x, rules.spawn_y, ss, rules.step_limit, states):
        search(sc, rules.spawn_x, rules.spawn_y, ss, rules.step_limit, False, states)
    return states


@inlined
def emit_row(out, n, m, y, c):
    """Write the positions of row ``y``, state ``c`` whose bits are set in ``m`` as rows (x, y, c) of
    ``out`` from row ``n``, x ascending; return the next free row."""
    while m:
        low = m & -m
        out[n, 0] = popcount(low - 1) - XOFF
        out[n, 1] = y
        out[n, 2] = c
        n += 1
        m ^= low
    return n
