"""Move generation: every resting position a piece can reach from its spawn, and a route to each.

Terms:
- a *step* is one single L, R, D or C move (codes 0..3 below); a step whose result is invalid is
  not an edge of the search (the replay consumes it without moving);
- a position is *resting* when one more D step would be invalid;
- a *placement* is a distinct set of cells of a resting position reachable from the spawn in at
  most ``max_steps`` steps (the contest allows 100 per piece). States with identical offsets (I, S
  and Z states 0/2 and 1/3, O's four) give the same cells and count once, under the lowest state.
- under ``Rules.placement == "floating"``, the placements also include every reached position
  that does not rest but completes at least one row if locked where it stands (the contest locks
  a piece where it is when the next ``N`` comes): a clear in mid-air (`floating_mask`);
- under drop-only rules (``max_steps < 0`` in the kernels, ``Rules.placement == "drop"``), a
  placement is instead where a piece falling straight down from above the board, in any state and
  column, comes to rest, provided all its cells are inside the board (`drop_placements_into`; under
  the ``clear_first`` overflow rule, wherever it rests).

The search is bit-parallel: ``fit[s, y]`` holds, at bit ``x + XOFF``, whether the piece in state
``s`` with its centre at (x, y) is valid; a breadth-first search then advances whole rows of
positions per step with shifts and masks (L: ``>> 1``, R: ``<< 1``, D: row y-1 -> y, C: state
s-1 -> s), one layer per step count, so the first layer holding a position is its distance.
The placements' search runs on a piece's distinct states when they repeat with a period
(`Rules.periods`: O one class, I, S, Z two, whose rotation toggles them), which is exact: moves
depend on the cells only, so a placement's least distance over its states is the distance of its
class. Routes search the four states (a record names every rotation). Kernels take their scratch
arrays as one `MoveScratch` so the hot loop allocates nothing, and the rules as the `KernelRules`
bundle (`Rules.kernel`).

The placements' kernels are compiled without numba's reference counting (``_nrt=False``; they
allocate nothing and return numbers), whoever calls them. numba keeps one compile of a kernel per
argument types, whatever the caller's options: a kernel a caller compiled without reference
counting first is linked as such into every later caller, and one compiled with it first (called
from Python, say) is linked with it into callers that run without, where counting each view of a
row or a scratch array (an atomic add and subtract) took a seventh of the segment search's time.
Declared here, the choice no longer depends on which kernel the cache met first.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .board import popcount, run_fill
from .dispatch import fixed
from .jit import inlined, inner
from .rules import LOWEST_PLACEMENTS, OVERFLOW_CLEAR_FIRST, PLACEMENTS

STEP_L, STEP_R, STEP_D, STEP_C = 0, 1, 2, 3
STEP_LETTERS = "LRDC"
XOFF = 8  # bit x + XOFF of a mask stands for centre column x (room for centres left of the wall)
EXTRA_ROWS = 4  # centre rows 0 .. height + EXTRA_ROWS - 1 are searched
PAD = 4  # `fit_masks`' row words reach this many rows above and below the searched centre rows
#: the four rotation states, as an argument of the kernels (a numpy integer: numba compiles a
#: callee once per literal value, so a literal 4 beside a variable count would compile it twice)
ALL_STATES = np.int64(4)
#: columns a board may have at most (16-bit rows)
MAX_COLUMNS = 16


@njit(cache=True)
def rows_for(height):
    """Number of centre rows in the search masks of a board of ``height`` rows."""
    return height + EXTRA_ROWS


class MoveScratch(NamedTuple):
    """The move generator's scratch arrays (int64 masks, bit ``x + XOFF`` for centre column x):
    ``fit[s, cy]`` / ``free[s]`` (`fit_masks`), ``visited``, ``front`` and ``nxt`` (the search's
    sets and frontiers, (4, rows) each), and ``layers`` (the frontier of each step count, kept for
    routes: (max_steps + 1, 4, rows); one layer is enough for placements), `fit_masks`' own
    scratch (``ext``, ``lowest``, ``shift``), and ``tops`` (`column_tops`, for drop-only rules)."""

    fit: np.ndarray
    free: np.ndarray
    visited: np.ndarray
    front: np.ndarray
    nxt: np.ndarray
    layers: np.ndarray
    ext: np.ndarray
    lowest: np.ndarray
    shift: np.ndarray
    tops: np.ndarray


@njit(cache=True)
def new_scratch(rows, layers):
    """A `MoveScratch` for boards searched over ``rows`` centre rows, with ``layers`` stored layers
    (1 for placements, ``max_steps + 1`` for routes)."""
    return MoveScratch(np.zeros((4, rows), np.int64), np.zeros(4, np.int64), np.zeros((4, rows), np.int64),
                       np.zeros((4, rows), np.int64), np.zeros((4, rows), np.int64),
                       np.zeros((layers, 4, rows), np.int64), np.zeros(rows + 2 * PAD, np.int64),
                       np.zeros(4, np.int64), np.zeros((4, 4, 3), np.int64), np.zeros(MAX_COLUMNS, np.int64))


@njit(cache=True)
def capacity(height, width):
    """An upper bound on the placements of one piece on a board of ``height`` x ``width``: one per
    (state, centre row, centre column)."""
    return 4 * (height + EXTRA_ROWS) * (width + 8)


@inner(_nrt=False)
def fit_masks(board, cells, width, fit, free, states, ext, lowest_dy, cell_shift):
    """Fill ``fit[s, cy]`` (s in 0..states-1, cy in 0..rows-1): bit ``cx + XOFF`` set when the piece
    with offsets ``cells[s]`` centred at (cx, cy) is valid on ``board``; and ``free[s]``, the same
    mask for a row where every cell the piece covers is empty (only the walls limit it). ``ext``
    (rows + 2 x `PAD` words) receives each row's blocked columns, walls included (rows above the
    board: the walls only; below it: everything), so a cell's test is a shift; ``lowest_dy`` (4) and
    ``cell_shift`` (4, 4, 3) are scratch. Rows are computed from the top down to the first where no
    state fits: no piece gets below it (it moves down one row at a time), so the rows below are 0."""
    height = board.shape[0]
    rows = fit.shape[1]
    wall = ~(((1 << width) - 1) << XOFF)
    span = ((1 << (width + 8)) - 1) << (XOFF - 4)
    top = 0  # the first occupied row: centres with every cell above it fit as on an empty board
    while top < height and board[top] == 0:
        top += 1
    for y in range(PAD):
        ext[y] = wall
    for y in range(height):
        ext[y + PAD] = wall | (np.int64(board[y]) << XOFF)
    for y in range(height + PAD, rows + 2 * PAD):
        ext[y] = -1
    lowest, shift = lowest_dy, cell_shift  # per state: its lowest cell's dy; per cell: shifts, row
    for s in range(states):
        bad_free = 0
        lowest[s] = -4
        for k in range(4):
            dx = cells[s, k, 0]
            bad_free |= (wall >> dx) if dx >= 0 else (wall << (-dx))
            lowest[s] = max(lowest[s], cells[s, k, 1])
            shift[s, k, 0] = max(dx, 0)
            shift[s, k, 1] = max(-dx, 0)
            shift[s, k, 2] = cells[s, k, 1] + PAD
        free[s] = ~bad_free & span
    cy = 0
    while cy < rows:
        blocked = True
        for s in range(states):
            if cy + lowest[s] < top:
                m = free[s]
            else:
                bad = 0
                for k in range(4):
                    bad |= (ext[cy + shift[s, k, 2]] >> shift[s, k, 0]) << shift[s, k, 1]
                m = ~bad & span
            fit[s, cy] = m
            if m != 0:
                blocked = False
        cy += 1
        if blocked:  # no state fits this row: no piece gets below it (it moves down one row at a time)
            break
    for s in range(states):
        for y in range(cy, rows):
            fit[s, y] = 0


@inlined
def _within(sx, reach):
    """Mask of the centre columns x with |x - sx| <= reach (empty when reach < 0)."""
    if reach < 0:
        return np.int64(0)
    lo = max(sx + XOFF - reach, 0)
    hi = min(sx + XOFF + reach, 62)
    return ((np.int64(1) << (hi - lo + 1)) - 1) << lo


@inner(_nrt=False)
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


@inner(_nrt=False)
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
def column_tops(board, width, tops):
    """``tops[x]``: the row of the highest occupied cell of column x (``height`` for an empty
    column), for x in 0..width-1, by one pass over the rows from the first occupied one down to
    the row where every column has started."""
    height = board.shape[0]
    for x in range(width):
        tops[x] = height
    full = (np.int64(1) << width) - 1
    cover = np.int64(0)
    y = 0
    while y < height and cover != full:
        new = np.int64(board[y]) & ~cover
        cover |= new
        while new:
            low = new & -new
            tops[popcount(low - 1)] = y
            new ^= low
        y += 1


def generator_of(rules) -> str:
    """The placement generator (`Rules.generator`: ``"reachable"`` or ``"drop"``) that the numba type
    of a `KernelRules` names: for an overload that chooses its kernel by it when a kernel calling it
    is compiled."""
    return dict(zip(rules.fields, rules.types))["placements"].value.name


@inlined
def drop_offsets(cells_c):
    """A state's cell offsets as a tuple (dx0, dy0, ..., dx3, dy3), held in registers while a kernel
    drops the piece in column after column."""
    return (cells_c[0, 0], cells_c[0, 1], cells_c[1, 0], cells_c[1, 1], cells_c[2, 0], cells_c[2, 1], cells_c[3, 0],
            cells_c[3, 1])


@inlined
def drop_columns(offsets, width):
    """The centre columns ``x0 .. x1 - 1`` where the piece of `drop_offsets` ``offsets`` lies within
    the walls, and its top cell's dy (rows grow downwards): (x0, x1, lo)."""
    left = min(min(offsets[0], offsets[2]), min(offsets[4], offsets[6]))
    right = max(max(offsets[0], offsets[2]), max(offsets[4], offsets[6]))
    lo = min(min(offsets[1], offsets[3]), min(offsets[5], offsets[7]))
    return -left, width - right, lo


@inlined
def drop_row(tops, offsets, x):
    """The centre row where the piece of `drop_offsets` ``offsets``, falling from above in centre
    column ``x``, comes to rest: it meets, in each column it covers, that column's highest occupied
    cell first (`column_tops`; nothing above it is occupied), so ``min over its cells (tops[x + dx]
    - 1 - dy)``."""
    return min(min(tops[x + offsets[0]] - offsets[1], tops[x + offsets[2]] - offsets[3]),
               min(tops[x + offsets[4]] - offsets[5], tops[x + offsets[6]] - offsets[7])) - 1


@inlined
def drop_kept(rules, y, lo):
    """Whether a piece resting at centre row ``y``, its top cell's dy ``lo``, is a placement: every
    cell inside the board, or anywhere under the ``clear_first`` overflow rule (a piece resting
    partly above the top row may survive its lock; `engine.lock` judges it)."""
    return fixed(rules.overflow) == OVERFLOW_CLEAR_FIRST or y + lo >= 0


@inner(_nrt=False)
def drop_placements_into(board, rules, shape, sc, out):
    """Drop-only placements: for each distinct state, every column where the piece fits above the
    board, dropped straight down to the first row it cannot enter (`drop_row`), kept by `drop_kept`.
    Rows (x, y, state) of ``out``, ordered by state, then y, then x; returns how many. No search:
    the columns' highest cells (`column_tops`) say where a piece rests."""
    cells, alias, width = rules.cells[shape], rules.alias[shape], rules.width
    tops = sc.tops
    column_tops(board, width, tops)
    n = 0
    for c in range(4):
        if alias[c] != c:
            continue
        offsets = drop_offsets(cells[c])
        x0, x1, lo = drop_columns(offsets, width)
        first = n
        for x in range(x0, x1):
            y = drop_row(tops, offsets, x)
            if not drop_kept(rules, y, lo):
                continue
            j = n  # insertion by y: x ascending within a row, as the placements are ordered
            while j > first and out[j - 1, 1] > y:
                out[j, 0] = out[j - 1, 0]
                out[j, 1] = out[j - 1, 1]
                out[j, 2] = c
                j -= 1
            out[j, 0] = x
            out[j, 1] = y
            out[j, 2] = c
            n += 1
    return n


@inner(_nrt=False)
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


@inner(_nrt=False)
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
@inner(_nrt=False)
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
@inner(_nrt=False)
def dropped_placements_into(board, rules, shape, spawn_state, sc, out):
    """`placements_into` under drop-only rules (`drop_placements_into`; the spawn state plays no part)."""
    return drop_placements_into(board, rules, shape, sc, out)


@njit(cache=True, _nrt=False)
def lowest_placements_into(board, rules, shape, spawn_state, sc, out):
    """`placements_into` keeping only the lowest placement of each (state, centre column), in the
    same order (state, then y, then x)."""
    return lowest_placements_by_rule(rules.lowest_placements, board, rules, shape, spawn_state, sc, out)


@LOWEST_PLACEMENTS.register("reachable")
@inner(_nrt=False)
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


def scratch(rules, routes: bool = False) -> MoveScratch:
    """A `MoveScratch` for ``rules``' boards; ``routes`` keeps every layer (for `route_into`)."""
    return new_scratch(rows_for(rules.height), rules.max_steps + 1 if routes else 1)


def placements(board, rules, shape: int, state: int, sc: MoveScratch | None = None) -> np.ndarray:
    """All placements of ``shape`` spawning in ``state`` on ``board``: an (n, 3) array (x, y, state)."""
    out = np.zeros((capacity(rules.height, rules.width), 3), np.int64)
    n = placements_into(np.ascontiguousarray(board, np.uint16), rules.kernel, shape, state,
                        sc or scratch(rules), out)
    return out[:n]


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
