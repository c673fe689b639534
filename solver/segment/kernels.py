"""The segment search's kernels: the ranking of states, a segment's layered search from one state
(`expand`, over numba's threads in `expand_chunk`), and the table's merge of the leaves found
(`found_leaves`, `insert_found`, `take`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from engine._jit.decorators import inlined, inner
from engine.board import copy_rows, popcount
from engine.lock import lock_copy, lock_counted, lost, spawn_blocked, spawn_state
from engine.movegen import MoveScratch, capacity
from engine.movegen.generators import lowest_placements_into, placements_into
from engine.movegen.tables import new_scratch, rows_for
from evaluators import Placement, board_values, evaluate
from evaluators.incremental import column_view, evaluate_child

from .._base import ValueScratch, value_scratch
from ..layered import descending, tie_hash, grown, pack, radix_argsort, same_board, table_hash
from .settings import CHILDREN_PER_NODE, Found


# ------------------------------------------------------------------------------------------------
# Ranking: which of two states (or leaves) is better


@inlined
def better(score_a, value_a, hash_a, score_b, value_b, hash_b):
    """Whether a ranks before b: the higher score, then the higher ranking value, then the smaller
    board hash."""
    if score_a != score_b:
        return score_a > score_b
    if value_a != value_b:
        return value_a > value_b
    return hash_a < hash_b


@inlined
def bucket_slot(count, boards, score, value, hashes, n_max, board, s, v, h):
    """Where a candidate (``board``, score ``s``, value ``v``, hash ``h``) goes in a bucket of
    ``count`` entries (arrays indexed by slot) holding at most ``n_max``: a free slot, the slot of
    the worst entry it beats, the slot of an equal board it beats, or -1 (kept out)."""
    worst = -1
    for m in range(count):
        if hashes[m] == h and same_board(boards[m], board):
            return m if better(s, v, h, score[m], value[m], hashes[m]) else -1
        if worst < 0 or better(score[worst], value[worst], hashes[worst], score[m], value[m], hashes[m]):
            worst = m
    if count < n_max:
        return count
    return worst if better(s, v, h, score[worst], value[worst], hashes[worst]) else -1


# ------------------------------------------------------------------------------------------------
# One segment


@inner(_nrt=False)
def first_of_each(boards, which, table, unique):
    """Writes into ``unique`` the children of ``which`` (indices, in generation order) whose board
    no earlier one of them holds (the first generated of equal boards) and returns their count;
    ``table``: an open-addressing scratch of a power-of-two size above twice their number. Without
    numba's reference counting: each board it reads is a view."""
    size = table.shape[0]
    table[:] = -1
    u = 0
    for i in range(which.shape[0]):
        j = which[i]
        pos = np.int64(table_hash(boards[j]) & np.uint64(size - 1))
        while True:
            g = table[pos]
            if g < 0:
                table[pos] = j
                unique[u] = j
                u += 1
                break
            if same_board(boards[g], boards[j]):
                break
            pos = (pos + 1) & (size - 1)
    return u


@inner(_nrt=False)
def hashes_of(boards, which, out, tie_seed):
    """``out[m]`` = `tie_hash` of ``boards[which[m]]`` under ``tie_seed``, for every m."""
    for m in range(which.shape[0]):
        out[m] = tie_hash(boards[which[m]], tie_seed)


@inner
def distinct(boards, which, slot):
    """The children of ``which`` whose board no earlier one of them holds (`first_of_each`), and
    the scratch table ``slot``, grown when it was too small."""
    size = 1
    while size < 2 * which.shape[0] + 2:
        size *= 2
    if slot.shape[0] < size:
        slot = np.empty(size, np.int64)
    unique = np.empty(which.shape[0], np.int64)
    return unique[:first_of_each(boards, which, slot[:size], unique)], slot


@inner
def keep_best(values, boards, n, nodes, slot, tie_seed, by_board):
    """Indices (best first) of the best ``nodes`` of children 0..n-1 after merging equal boards (the
    first generated stays): the higher value, then the smaller hash (`tie_hash` under
    ``tie_seed``), then the first generated.
    ``slot``: a scratch table. Only the children whose value reaches the ``nodes``-th best value
    are hashed and sorted: every one of the best ``nodes`` is among them. With ``by_board`` (equal
    boards have equal values) only the children whose value reaches the 2 ``nodes``-th best of all
    are merged, the copies of a board being all in or all out; should they hold fewer than
    ``nodes`` boards, all the children are."""
    keys = descending(values[:n])  # ascending: best first
    unique = np.empty(0, np.int64)
    if by_board and n > 4 * nodes:
        bound = np.partition(keys, 2 * nodes - 1)[2 * nodes - 1]
        unique, slot = distinct(boards, np.flatnonzero(keys <= bound), slot)  # in generation order
    if unique.shape[0] < nodes:  # every child merged
        unique, slot = distinct(boards, np.arange(n), slot)
    keys = keys[unique]
    if unique.shape[0] > nodes:
        cut = np.partition(keys, nodes - 1)[nodes - 1]
        m = 0
        for i in range(unique.shape[0]):  # in generation order
            if keys[i] <= cut:
                unique[m] = unique[i]
                keys[m] = keys[i]
                m += 1
        unique, keys = unique[:m], keys[:m]
    h = np.empty(unique.shape[0], np.int64)
    hashes_of(boards, unique, h, tie_seed)
    by_hash = radix_argsort(h)
    order = by_hash[radix_argsort(keys[by_hash])]
    return unique[order[:min(nodes, unique.shape[0])]], slot


class Kids(NamedTuple):
    """A layer's children that cleared no row, in the order generated, before the cut to the best
    ``nodes``: their ``boards`` (capacity, height), ranking ``value``, ``parent`` (the node's index in
    the layer) and packed placement ``code``."""

    boards: np.ndarray
    value: np.ndarray
    parent: np.ndarray
    code: np.ndarray


class SegmentScratch(NamedTuple):
    """What one segment's expansion writes besides its children and leaves: the move generator's
    scratch ``moves``, the valuing scratch ``values`` (`solver._base.ValueScratch`), a node's
    placements ``found``, and ``leaf_layer[d, key, m]``: the node of layer d that the kept leaf in
    bucket (d, key), slot m grew from."""

    moves: MoveScratch
    values: ValueScratch
    found: np.ndarray
    leaf_layer: np.ndarray


@inner
def grown_kids(kids, n):
    """``kids`` with room for at least ``n`` children (`layered.grown`, every array)."""
    return Kids(grown(kids.boards, n), grown(kids.value, n), grown(kids.parent, n), grown(kids.code, n))


@inner(_nrt=False)
def grow_layer(r, d, start, skip, cur, n_cur, n_kids, root_cells, roots, sequence, rules, spec, cfg, leaves, kids,
               ws):
    """Layer d of root r's segment: the children of nodes ``start`` .. ``n_cur`` - 1 of ``cur`` (the
    first ``skip`` children of node ``start`` done already), appended to ``kids`` from ``n_kids`` on,
    or kept as leaves in ``leaves``. Returns (-1, 0, children, boards valued), or, when ``kids`` is
    full, the node and child to continue from once it has grown. Compiled without numba's
    reference counting (it allocates nothing): counting every view of a board it takes, an atomic
    add and subtract each, was a fifth of the search's time."""
    height, width = rules.height, rules.width
    t = roots.index[r] + d
    shape = sequence[t]
    ss = spawn_state(t, rules)
    final = t + 1 == cfg.pieces
    cells_before = root_cells + 4 * (d + 1)
    vs = ws.values
    found = ws.found
    valued = 0
    for n in range(start, n_cur):
        board = cur[n]
        if spawn_blocked(board, rules, shape, ss):
            continue
        if cfg.lowest:
            n_found = lowest_placements_into(board, rules, shape, ss, ws.moves, found)
        else:
            n_found = placements_into(board, rules, shape, ss, ws.moves, found)
        board_values(board, width, spec, vs.pvals)
        column_view(board, width, spec, vs.columns)  # its children that clear nothing are valued from it
        occupied = 0
        for row in range(height):
            if board[row] != 0:
                occupied += 1
        for k in range(skip if n == start else 0, n_found):
            x, y, s = found[k, 0], found[k, 1], found[k, 2]
            piece = rules.cells[shape, s]
            top = y + piece[0, 1]
            for c in range(1, 4):
                top = min(top, y + piece[c, 1])
            if top < cfg.top_free:
                continue
            copy_rows(vs.cleared, board)  # the parent's counts are known: only the piece's rows are counted
            lock = lock_counted(vs.cleared, rules, shape, s, x, y, t + 1, cells_before - 4, occupied)
            if lost(lock.end):
                continue
            if lock.lines == 0 and not final:
                if n_kids == kids.boards.shape[0]:
                    return n, k, n_kids, valued
                p = Placement(board, vs.cleared, vs.cleared, piece, x, y, 0, lock.points, width)
                kids.value[n_kids] = evaluate_child(p, vs.columns, vs.pvals, spec, -np.inf)  # `evaluate`'s, bit for bit
                copy_rows(kids.boards[n_kids], vs.cleared)
                kids.parent[n_kids] = n
                kids.code[n_kids] = pack(x, y, s)
                n_kids += 1
                valued += 1
                continue
            cells_after = cells_before - width * lock.lines  # a leaf: below its floor, it is not locked again
            if not final and t + 1 <= cfg.pieces - cfg.endgame and cells_after < cfg.min_cells[lock.lines - 1]:
                continue
            lock = lock_copy(board, rules, shape, s, x, y, t + 1, vs.locked, vs.cleared)  # both boards
            p = Placement(board, vs.locked, vs.cleared, piece, x, y, lock.lines, lock.points, width)
            v = evaluate(p, vs.pvals, spec)
            valued += 1
            score = roots.score[r] + lock.points
            h = tie_hash(vs.cleared, cfg.tie_seed)
            key = cells_after // cfg.key_cells
            c = leaves.count[r, d, key]
            m = bucket_slot(c, leaves.boards[r, d, key], leaves.score[r, d, key], leaves.value[r, d, key],
                            leaves.hash[r, d, key], cfg.states, vs.cleared, score, v, h)
            if m < 0:
                continue
            if m == c:
                leaves.count[r, d, key] = c + 1
            copy_rows(leaves.boards[r, d, key, m], vs.cleared)
            leaves.score[r, d, key, m] = score
            leaves.value[r, d, key, m] = v
            leaves.hash[r, d, key, m] = h
            leaves.codes[r, d, key, m, d] = pack(x, y, s)
            ws.leaf_layer[d, key, m] = n
    return -1, 0, n_kids, valued


@inner
def expand(r, roots, sequence, rules, spec, cfg, leaves):
    """The segment from root ``r``: its kept leaves into ``leaves`` (row r, emptied first), layer by
    layer (`grow_layer`, then the cut to the best ``nodes``, `keep_best`). Returns the boards valued
    (children and leaves)."""
    height, width = rules.height, rules.width
    depth = roots.depth[r]
    i0 = roots.index[r]
    leaves.count[r] = 0
    ws = SegmentScratch(new_scratch(rows_for(height), 1), value_scratch(spec.terms.shape[1], height),
                        np.zeros((capacity(height, width), 3), np.int64),
                        np.empty((depth, cfg.keys, cfg.states), np.int32))
    slot = np.empty(1024, np.int64)
    cur = np.zeros((1, height), np.uint16)
    cur[0] = roots.boards[r]
    n_cur = 1
    root_cells = 0
    for y in range(height):
        root_cells += popcount(np.int64(roots.boards[r, y]))
    # the kept nodes of every layer: the parent's index in the layer above and the placement
    parent = np.zeros((depth + 1, cfg.nodes), np.int32)
    code = np.zeros((depth + 1, cfg.nodes), np.int16)
    room = cfg.nodes * CHILDREN_PER_NODE
    kids = Kids(np.empty((room, height), np.uint16), np.empty(room), np.empty(room, np.int32), np.empty(room, np.int16))
    valued = 0
    for d in range(depth):
        if i0 + d >= cfg.pieces or n_cur == 0:
            break
        n_kids = 0
        start, skip = 0, 0
        while start >= 0:
            start, skip, n_kids, more = grow_layer(r, d, start, skip, cur, n_cur, n_kids, root_cells, roots, sequence,
                                                   rules, spec, cfg, leaves, kids, ws)
            valued += more
            if start >= 0:
                kids = grown_kids(kids, n_kids + 1)
        if n_kids == 0 or d + 1 == depth:
            n_cur = 0
            continue
        best, slot = keep_best(kids.value, kids.boards, n_kids, cfg.nodes, slot, cfg.tie_seed, cfg.by_board)
        n_cur = best.shape[0]
        if cur.shape[0] < n_cur:
            cur = np.empty((cfg.nodes, height), np.uint16)
        for m in range(n_cur):
            j = best[m]
            copy_rows(cur[m], kids.boards[j])
            parent[d + 1, m] = kids.parent[j]
            code[d + 1, m] = kids.code[j]
    # each kept leaf's placements, read back through the layers
    for d in range(depth):
        for key in range(cfg.keys):
            for m in range(leaves.count[r, d, key]):
                n = ws.leaf_layer[d, key, m]
                for e in range(d, 0, -1):
                    leaves.codes[r, d, key, m, e - 1] = code[e, n]
                    n = parent[e, n]
    return valued


@inner(parallel=True)
def _expand_chunk(n_roots, roots, sequence, rules, spec, cfg, leaves):
    """`expand` for roots 0..n_roots-1, in parallel; returns the boards valued."""
    valued = np.zeros(n_roots, np.int64)
    for r in prange(n_roots):
        # r is unsigned in the parallel loop's body and signed where numba types the loop before
        # making it parallel: one signature, not two compiles of `expand`
        valued[r] = expand(np.int64(r), roots, sequence, rules, spec, cfg, leaves)
    return valued.sum()


def expand_chunk(n_roots, roots, sequence, rules, spec, cfg, leaves) -> int:
    """`expand` for roots 0..n_roots-1, in parallel (numba's threads); returns the boards valued."""
    return int(_expand_chunk(n_roots, roots, sequence, rules, spec, cfg, leaves))


# ------------------------------------------------------------------------------------------------
# The table


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def found_leaves(n_roots, depth, leaves):
    """The kept leaves of roots 0..n_roots-1 (segments of at most ``depth[r]`` pieces) as a `Found`
    list, root by root, in bucket order."""
    n = 0
    for r in range(n_roots):
        for d in range(depth[r]):
            n += leaves.count[r, d].sum()
    shape = leaves.boards.shape
    out = Found(np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64), np.empty((n, shape[4]), np.uint16),
                np.empty(n, np.int64), np.empty(n), np.empty(n, np.int64), np.empty((n, leaves.codes.shape[4]), np.int16))
    j = 0
    for r in range(n_roots):
        for d in range(depth[r]):
            for key in range(shape[2]):
                for m in range(leaves.count[r, d, key]):
                    out.root[j], out.placed[j], out.key[j] = r, d + 1, key
                    out.boards[j] = leaves.boards[r, d, key, m]
                    out.score[j] = leaves.score[r, d, key, m]
                    out.value[j] = leaves.value[r, d, key, m]
                    out.hash[j] = leaves.hash[r, d, key, m]
                    out.codes[j] = leaves.codes[r, d, key, m]
                    j += 1
    return out


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def insert_found(found, index, ids, cfg, table):
    """Merge a chunk's leaves (its roots at piece indices ``index``, history ids ``ids``) into
    ``table`` in their list order: the result does not depend on which thread or process found
    them."""
    for j in range(found.score.shape[0]):
        r, placed, key = found.root[j], found.placed[j], found.key[j]
        s = (index[r] + placed) % cfg.slots
        c = table.count[s, key]
        at = bucket_slot(c, table.boards[s, key], table.score[s, key], table.value[s, key], table.hash[s, key],
                         cfg.states, found.boards[j], found.score[j], found.value[j], found.hash[j])
        if at < 0:
            continue
        if at == c:
            table.count[s, key] = c + 1
        table.boards[s, key, at] = found.boards[j]
        table.score[s, key, at] = found.score[j]
        table.value[s, key, at] = found.value[j]
        table.hash[s, key, at] = found.hash[j]
        table.parent[s, key, at] = ids[r]
        table.length[s, key, at] = placed
        table.codes[s, key, at, :placed] = found.codes[j, :placed]


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def take(table, i, cfg):
    """The states stored for piece index ``i``, in key then slot order, removed from the table:
    (boards, score, parent, length, codes)."""
    s = i % cfg.slots
    n = table.count[s].sum()
    height = table.boards.shape[3]
    boards = np.empty((n, height), np.uint16)
    score = np.empty(n, np.int64)
    parent = np.empty(n, np.int64)
    length = np.empty(n, np.int64)
    codes = np.empty((n, cfg.max_depth), np.int16)
    j = 0
    for key in range(cfg.keys):
        for m in range(table.count[s, key]):
            boards[j] = table.boards[s, key, m]
            score[j] = table.score[s, key, m]
            parent[j] = table.parent[s, key, m]
            length[j] = table.length[s, key, m]
            codes[j] = table.codes[s, key, m]
            j += 1
        table.count[s, key] = 0
    return boards, score, parent, length, codes
