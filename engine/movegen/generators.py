"""The placements of a piece: the resting positions reachable from its spawn, one per distinct
set of cells (under the lowest state), chosen by the rules' generator (`engine.rules.PLACEMENTS`).

Under ``Rules.placement == "floating"`` they also include every reached position that does not
rest but completes at least one row if locked where it stands (the contest locks a piece where it
is when the next ``N`` comes): a clear in mid-air (`floating_mask`).

These kernels are compiled without numba's reference counting (``_nrt=False``; they allocate
nothing and return numbers), whoever calls them. numba keeps one compile of a kernel per argument
types, whatever the caller's options: a kernel compiled with it first (called from Python, say)
would be linked with it into callers that run without, where counting each view of a row or a
scratch array took a seventh of the segment search's time. Declared here, the choice no longer
depends on which kernel the cache met first.
"""

from __future__ import annotations

import numpy as np

from .._jit.decorators import inlined, inner
from ..board import popcount
from ..rules import LOWEST_PLACEMENTS, PLACEMENTS
from .drop import drop_placements_into
from .tables import XOFF, MoveScratch, capacity, scratch
from .search import emit_row, reach, resting_mask

#: the placement generators chosen by the rules (`engine.rules.PLACEMENTS`), as kernels call them
placements_by_rule = PLACEMENTS.call
lowest_placements_by_rule = LOWEST_PLACEMENTS.call


@inner(_nrt=False)  # called from kernels; a call from Python (`placements`) goes to its twin
def placements_into(board, rules, shape, spawn_state, sc, out):
    """Write every placement of ``shape`` spawning in ``spawn_state`` on ``board`` as a row
    (x, y, state) of ``out``; return how many (0 when the spawn is blocked). Rows are ordered by
    state, then y, then x. Under drop-only rules: `drop_placements_into`."""
    return placements_by_rule(rules.placements, board, rules, shape, spawn_state, sc, out)


@PLACEMENTS.register("reachable")
@inlined
def reachable_placements_into(board, rules, shape, spawn_state, sc, out):
    """`placements_into` under rules of single steps from the spawn: the resting positions `reach`
    finds, and with ``rules.floating`` the mid-air clears (`floating_mask`)."""
    fit, visited = sc.fit, sc.visited
    cells = rules.cells[shape]
    n = 0
    states = reach(board, rules, shape, spawn_state, sc)
    for c in range(states):
        for y in range(fit.shape[1]):
            m = resting_mask(visited, fit, c, y)
            if rules.floating:
                m |= floating_mask(board, cells[c], visited, fit, c, y, rules, spawn_state % states)
            n = emit_row(out, n, m, y, c)
    return n


@inlined
def floating_mask(board, cells_c, visited, fit, c, y, rules, spawn_class):
    """Positions of class ``c`` in centre row ``y`` that were reached, do not rest (one more D step
    is valid) and complete at least ``rules.floating`` board rows if locked where they stand: the
    contest locks a piece where it is when the next ``N`` comes (GEEK_RULES.md), so such a lock
    clears in mid-air. A row is completed at exactly one centre column, if any: the one where the
    piece's cells in that row are the row's empty cells, so each piece row names at most one
    position, and a position completes as many rows as name it. The spawn position itself is left
    out: a piece given no operation before the next ``N`` vanishes, and every step from it moves it
    (it does not rest), so no record locks it there."""
    height = board.shape[0]
    below = fit[c, y + 1] if y + 1 < fit.shape[1] else np.int64(0)
    cand = visited[c, y] & below
    if y == rules.spawn_y and c == spawn_class:
        cand &= ~(np.int64(1) << (rules.spawn_x + XOFF))
    if cand == 0:
        return np.int64(0)
    # positions named by at least 1, 2, 3, 4 piece rows (a count per position, kept as bit masks)
    once = twice = thrice = four = np.int64(0)
    for k in range(4):
        r = y + cells_c[k, 1]
        if r < 0 or r >= height:
            continue
        first = True  # each piece row once: from its first cell
        for k2 in range(k):
            if cells_c[k2, 1] == cells_c[k, 1]:
                first = False
        if not first:
            continue
        empty = np.int64(rules.full_row) & ~np.int64(board[r])
        if empty == 0:
            continue
        lo = cells_c[k, 0]  # the row's cells as bits from its leftmost one
        for k2 in range(4):
            if cells_c[k2, 1] == cells_c[k, 1]:
                lo = min(lo, cells_c[k2, 0])
        bits = np.int64(0)
        for k2 in range(4):
            if cells_c[k2, 1] == cells_c[k, 1]:
                bits |= np.int64(1) << (cells_c[k2, 0] - lo)
        x = popcount((empty & -empty) - 1) - lo  # the centre column putting its leftmost cell there
        if x + lo >= 0 and (bits << (x + lo)) == empty:
            named = (np.int64(1) << (x + XOFF)) & cand
            four |= thrice & named
            thrice |= twice & named
            twice |= once & named
            once |= named
    least = rules.floating
    return once if least <= 1 else twice if least == 2 else thrice if least == 3 else four


@PLACEMENTS.register("drop")
@LOWEST_PLACEMENTS.register("drop")  # one per (state, column) already
@inlined
def dropped_placements_into(board, rules, shape, spawn_state, sc, out):
    """`placements_into` under drop-only rules (`drop_placements_into`; the spawn state plays no part)."""
    return drop_placements_into(board, rules, shape, sc, out)


@inlined
def lowest_placements_into(board, rules, shape, spawn_state, sc, out):
    """`placements_into` keeping only the lowest placement of each (state, centre column), in the
    same order (state, then y, then x)."""
    return lowest_placements_by_rule(rules.lowest_placements, board, rules, shape, spawn_state, sc, out)


@LOWEST_PLACEMENTS.register("reachable")
@inlined
def lowest_reachable_placements_into(board, rules, shape, spawn_state, sc, out):
    """`lowest_placements_into` under rules of single steps from the spawn; with ``rules.floating``
    the mid-air clears too (`floating_mask`), in the same order."""
    fit, visited, found = sc.fit, sc.visited, sc.nxt  # found[0, k], found[1, k]: a row, its lowest
    cells = rules.cells[shape]
    rows = fit.shape[1]
    n = 0
    states = reach(board, rules, shape, spawn_state, sc)
    for c in range(states):
        taken = np.int64(0)
        below = np.int64(0)  # the floor: a position in the last row rests
        k = 0
        for y in range(rows - 1, -1, -1):  # bottom up: a column's first resting position is its lowest
            m = visited[c, y] & ~below & ~taken
            below = fit[c, y]
            if m:
                taken |= m
                found[0, k] = y
                found[1, k] = m
                k += 1
        if rules.floating:  # every row, top down: its lowest positions and its mid-air clears
            i = k - 1
            for y in range(rows):
                m = floating_mask(board, cells[c], visited, fit, c, y, rules, spawn_state % states)
                if i >= 0 and found[0, i] == y:
                    m |= found[1, i]
                    i -= 1
                n = emit_row(out, n, m, y, c)
            continue
        for i in range(k - 1, -1, -1):  # emitted top down, as placements_into orders them
            y = found[0, i]
            m = found[1, i]
            n = emit_row(out, n, m, y, c)
    return n


def placements(board, rules, shape: int, state: int, sc: MoveScratch | None = None) -> np.ndarray:
    """All placements of ``shape`` spawning in ``state`` on ``board``: an (n, 3) array (x, y, state)."""
    out = np.zeros((capacity(rules.height, rules.width), 3), np.int64)
    n = placements_into(np.ascontiguousarray(board, np.uint16), rules.kernel, shape, state,
                        sc or scratch(rules), out)
    return out[:n]
