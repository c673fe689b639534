"""Expanding a layer: the tie orders (`TIE_ORDERS`), each node's placements, its children locked and
valued (in parallel over numba's threads where there are several), and equal boards merged."""

from __future__ import annotations

import numpy as np
from numba import prange

from engine._jit.decorators import inlined, inner
from engine._jit.dispatch import FunctionTable
from engine.board import copy_rows, place, popcount
from engine.lock import lock_counted, lost
from engine.movegen import capacity
from engine.movegen.generators import lowest_placements_into, placements_into
from engine.movegen.tables import new_scratch, rows_for
from evaluators import Placement, board_values, evaluate

from ..layered import pack, same_board, table_hash, tie_hash, unpack
from .bundles import Children, GROWTH_DIVISOR, board_words, occupied_height



# ------------------------------------------------------------------------------------------------
# Tie orders: how nodes tied on a ranking key are ordered (smaller key rows first)

TIE_ORDERS = FunctionTable("beam.tie_break")
tie_keys = TIE_ORDERS.call


@TIE_ORDERS.register("hash")
@inner
def hash_tie_keys(boards, idx, hashes):
    """One key row: the board's hash (`tie_hash`, the tie seed's), smaller first."""
    return hashes.reshape((1, hashes.shape[0]))


@TIE_ORDERS.register("board")
@inner
def board_tie_keys(boards, idx, hashes):
    """One key row per word of four rows (`board_words`), the top word first, larger first."""
    return -board_words(boards, idx)


# ------------------------------------------------------------------------------------------------
# Expansion: placements and children


#: the placements a node expands (`BeamConfig.placements`), chosen when the kernel is compiled: a
#: beam of one kind compiles one generator
NODE_PLACEMENTS = FunctionTable("beam.placements")
NODE_PLACEMENTS.register("all")(placements_into)
NODE_PLACEMENTS.register("lowest")(lowest_placements_into)
placements_by = NODE_PLACEMENTS.call

#: the layer's stages in this thread ("serial") or over numba's threads ("threads"), one token
#: (`BeamSettings.threads`) choosing in the three tables when the kernel is compiled: a one-thread
#: search (every tuning worker's) compiles no threaded code, a threaded one no serial driver
THREADS = "beam.threads"
PLACE_NODES = FunctionTable("beam.place_nodes", chosen_by=THREADS)
LOCK_NODES = FunctionTable("beam.lock_nodes", chosen_by=THREADS)
VALUE_KEPT = FunctionTable("beam.value_kept", chosen_by=THREADS)
place_nodes_by, lock_nodes_by, value_kept_by = PLACE_NODES.call, LOCK_NODES.call, VALUE_KEPT.call


@inlined
def node_placements(board, rules, shape, ss, placer, sc, found, codes):
    """The packed placements of the piece on ``board`` into ``codes`` (all of them, or the lowest
    of each state and column: the `NODE_PLACEMENTS` token ``placer``); returns how many."""
    m = placements_by(placer, board, rules, shape, ss, sc, found)
    for k in range(m):
        codes[k] = pack(found[k, 0], found[k, 1], found[k, 2])
    return m


@inner
def place_nodes(lo, hi, boards, rules, shape, ss, placer, codes, counts):
    """`node_placements` of nodes lo .. hi-1 (one scratch for the run)."""
    sc = new_scratch(rows_for(rules.height), 1)
    found = np.empty((capacity(rules.height, rules.width), 3), np.int64)
    for i in range(lo, hi):
        counts[i] = node_placements(boards[i], rules, shape, ss, placer, sc, found, codes[i])


@PLACE_NODES.register("serial")
@inner
def place_all_nodes(n, chunks, boards, rules, shape, ss, placer, codes, counts):
    """`place_nodes` of the ``n`` parents in this thread."""
    place_nodes(0, n, boards, rules, shape, ss, placer, codes, counts)


@PLACE_NODES.register("threads")
@inner(parallel=True)
def place_nodes_parallel(n, chunks, boards, rules, shape, ss, placer, codes, counts):
    """`place_nodes` over numba's threads, the parents cut into ``chunks`` runs."""
    chunks = min(n, chunks)
    for c in prange(chunks):
        place_nodes(c * n // chunks, (c + 1) * n // chunks, boards, rules, shape, ss, placer, codes, counts)


@inlined
def reaches_top_row(cells, y):
    """Whether a piece with offsets ``cells`` centred in row ``y`` has a cell in row 0."""
    for k in range(4):
        if y + cells[k, 1] == 0:
            return True
    return False


@inner
def sky_thin(board, h, sky_rows, sky_max):
    """Whether the top ``sky_rows`` occupied rows of ``board`` (occupied height ``h``) each hold
    at most ``sky_max`` cells."""
    height = board.shape[0]
    if sky_rows <= 0 or h < sky_rows:
        return False
    for r in range(height - h, height - h + sky_rows):
        if popcount(np.int64(board[r])) > sky_max:
            return False
    return True


@inner(_nrt=False)
def lock_nodes(lo, hi, st, kids, shape, number, rules, cfg, ruled):
    """Lock every placement of nodes lo .. hi-1 on a copy of its parent (``st``: the `Parents`)
    and apply the hard rules (`Children` at ``kids.starts[i] + k``; the quality comes later, for the
    children kept after the merge: `value_kept`)."""
    width = rules.width
    for i in range(lo, hi):
        parent = st.boards[i]
        occupied = 0  # the parent's counts, for every child's lock
        for r in range(parent.shape[0]):
            occupied += parent[r] != 0
        for k in range(kids.counts[i]):
            j = kids.starts[i] + k
            code = kids.codes[i, k]
            x, y, s = unpack(code)
            child = kids.boards[j]
            copy_rows(child, parent)
            lock = lock_counted(child, rules, shape, s, x, y, number, st.cells[i], occupied)
            f = lock.lines
            kids.parent[j] = i
            kids.code[j] = code
            kids.lines[j] = f
            alive = not lost(lock.end)
            if alive and cfg.top_row_free and (parent[0] != 0 or reaches_top_row(rules.cells[shape, s], y)):
                alive = False
            if alive and f > 0 and ruled and (st.heights[i] < cfg.min_height[f] or st.cells[i] < cfg.min_cells[f]):
                alive = False
            h = occupied_height(child)
            if alive and sky_thin(child, h, cfg.sky_rows, cfg.sky_max_cells):
                alive = False
            kids.alive[j] = alive
            if not alive:
                continue
            kids.score[j] = st.scores[i] + lock.points
            kids.clears[j] = st.clears[i] + (1 if f > 0 else 0)
            kids.height[j] = h
            kids.cells[j] = lock.cells - f * width


@LOCK_NODES.register("serial")
@inner
def lock_all_nodes(n, st, kids, shape, number, rules, cfg, ruled):
    """`lock_nodes` of the ``n`` parents in this thread."""
    lock_nodes(0, n, st, kids, shape, number, rules, cfg, ruled)


@LOCK_NODES.register("threads")
@inner(parallel=True)
def lock_nodes_parallel(n, st, kids, shape, number, rules, cfg, ruled):
    """`lock_nodes` over numba's threads (``st``: the `Parents`), in ``cfg.chunks`` runs."""
    chunks = min(n, cfg.chunks)
    for c in prange(chunks):
        lock_nodes(c * n // chunks, (c + 1) * n // chunks, st, kids, shape, number, rules, cfg, ruled)


@inner
def value_kept(lo, hi, kept, boards, scores, kids, shape, rules, spec):
    """The evaluator's value of the kept children ``kept[lo:hi]`` (into ``kids.quality``): each is
    locked again on its parent (``boards``, ``scores``: the parents') for the board before the clear,
    which placement features read. Kept children of one parent are consecutive: its values (for
    delta features) are computed once."""
    width = rules.width
    pvals = np.zeros(spec.terms.shape[1])  # zeros when no delta feature reads the parent
    locked = np.empty(rules.height, np.uint16)
    last = -1
    for m in range(lo, hi):
        j = kept[m]
        i = kids.parent[j]
        parent = boards[i]
        if spec.reads_parent and i != last:
            board_values(parent, width, spec, pvals)
            last = i
        x, y, s = unpack(kids.code[j])
        cells = rules.cells[shape, s]
        child = kids.boards[j]
        copy_rows(locked, parent)
        place(locked, cells, x, y)
        p = Placement(parent, locked, child, cells, x, y, kids.lines[j], kids.score[j] - scores[i], width)
        kids.quality[j] = evaluate(p, pvals, spec)


@VALUE_KEPT.register("serial")
@inner
def value_all_kept(kept, boards, scores, kids, shape, rules, spec, chunks):
    """`value_kept` of every kept child in this thread."""
    value_kept(0, kept.shape[0], kept, boards, scores, kids, shape, rules, spec)


@VALUE_KEPT.register("threads")
@inner(parallel=True)
def value_kept_parallel(kept, boards, scores, kids, shape, rules, spec, chunks):
    """`value_kept` over numba's threads, in ``chunks`` runs."""
    n = kept.shape[0]
    chunks = min(n, chunks)
    for c in prange(chunks):
        value_kept(c * n // chunks, (c + 1) * n // chunks, kept, boards, scores, kids, shape, rules, spec)


@inner
def grow_children(kids, nodes, per_node, total, height):
    """``kids`` with room for ``nodes`` parents of ``per_node`` placements and ``total`` children
    (the same arrays when they are big enough)."""
    codes, counts, starts = kids.codes, kids.counts, kids.starts
    if codes.shape[0] < nodes:
        rows = nodes + nodes // GROWTH_DIVISOR
        codes = np.zeros((rows, per_node), np.int16)
        counts = np.zeros(rows, np.int64)
        starts = np.zeros(rows, np.int64)
    if kids.boards.shape[0] >= total:
        return Children(codes, counts, starts, kids.boards, kids.score, kids.clears, kids.quality, kids.height,
                        kids.cells, kids.parent, kids.code, kids.lines, kids.alive)
    m = max(total, 2 * kids.boards.shape[0])
    return Children(codes, counts, starts, np.zeros((m, height), np.uint16), np.zeros(m, np.int64),
                    np.zeros(m, np.int64), np.zeros(m, np.float64), np.zeros(m, np.int64), np.zeros(m, np.int64),
                    np.zeros(m, np.int64), np.zeros(m, np.int16), np.zeros(m, np.int64), np.zeros(m, np.bool_))


# ------------------------------------------------------------------------------------------------
# Merging equal boards


@inner(_nrt=False)
def equal_board_winners(kids, total, slot, stamp, layer, winner, keys):
    """`merge_equal_boards`' probe: for each group of surviving children with equal boards, its
    winner into ``winner`` (its table hash into ``keys``); returns the groups' count. Without
    numba's reference counting: each board it reads is a view."""
    size = slot.shape[0]
    mask = np.uint64(size - 1)
    n = 0
    for j in range(total):
        if not kids.alive[j]:
            continue
        h = table_hash(kids.boards[j])
        pos = np.int64(h & mask)
        while True:
            if stamp[pos] != layer:
                stamp[pos] = layer
                slot[pos] = n
                winner[n] = j
                keys[n] = h
                n += 1
                break
            g = slot[pos]
            w = winner[g]
            if keys[g] == h and same_board(kids.boards[w], kids.boards[j]):
                sw, sj = kids.score[w], kids.score[j]
                if sj > sw or (sj == sw and kids.clears[j] < kids.clears[w]):
                    winner[g] = j
                break
            pos = (pos + 1) & (size - 1)
    return n


@inner(_nrt=False)
def kept_in_order(boards, kept, out, hashes, tie_seed):
    """The indices j with ``kept[j]`` in increasing order into ``out``, with their boards'
    `tie_hash` under ``tie_seed`` into ``hashes``: the indices first, then the hashes in a loop of
    their own, whose iterations share no branch, so that the processor overlaps the hashes' chains
    of multiplications."""
    m = 0
    for j in range(kept.shape[0]):
        if kept[j]:
            out[m] = j
            m += 1
    for m in range(out.shape[0]):
        hashes[m] = tie_hash(boards[out[m]], tie_seed)


@inner
def merge_equal_boards(kids, total, slot, stamp, layer, tie_seed):
    """Of the surviving children with equal boards keep one: the higher score, then fewer clears,
    then the first generated. Returns the kept children's indices in generation order and their
    board hashes (`tie_hash` under ``tie_seed``). ``slot``/``stamp`` are an open-addressing table
    reused across layers (an entry is live when its stamp is ``layer``); its size is a power of
    two above twice the children."""
    winner = np.empty(total, np.int64)
    keys = np.empty(total, np.uint64)
    n = equal_board_winners(kids, total, slot, stamp, layer, winner, keys)
    kept = np.zeros(total, np.bool_)
    for g in range(n):
        kept[winner[g]] = True
    out = np.empty(n, np.int64)
    hashes = np.empty(n, np.int64)
    kept_in_order(kids.boards, kept, out, hashes, tie_seed)  # the kept children in generation order
    return out, hashes
