"""Beam search over whole boards: the design behind the 1,395,326 record.

One layer per piece. Every node of the layer is expanded with every placement of the piece
(``placements: all``) or the lowest of each (state, column) (``lowest``); children are dropped when
they break a hard rule:
- the lock touches the top (every row occupied: the game would end), or, with ``top_row_free``,
  occupies the top row at all (before clearing), as the 1,395,326 solver's shortcut did;
- it clears 1-4 rows while the parent stack is lower than ``clear_min_height[rows - 1]`` rows or
  holds fewer than ``clear_min_cells[rows - 1]`` cells (clearing early wastes the multiplier),
  except in the last ``endgame_pieces`` pieces played, when no later clear needs the cells;
- its top ``sky_rows`` occupied rows each hold at most ``sky_max_cells`` cells (a branch reaching
  into the sky).
Children with the same board are merged (the higher score wins, then fewer clears, then the first
generated). Nodes more than ``score_gap`` points below the layer's best, or whose stack is more
than ``height_gap`` rows lower than the tallest, are dropped. The rest is cut back to ``width``:
``score_share`` of it by the score ranking, the rest by the quality ranking (the evaluator's value
of the board), each pick subject to quotas — at most a share of the picks per occupied height and
per ancestor 1, 2, 3, 4 generations up — so the beam keeps its diversity. Nodes tied on a ranking
are ordered by a tie order (`TIE_ORDERS`: ``hash``, a hash of the board's bits; ``board``, the
board's rows themselves, the 1,395,326 solver's order: a stack reaching a higher group of four rows
comes first), then by generation order; with ``keep_ties`` the nodes tied with a ranking's last pick
are kept too, as that solver does. The record ends on the best child of any layer, kept or cut: the
higher score, then the later piece (the score ranking is by score per clear, so a layer's highest
score can be cut).

The whole layer loop runs in numba (`run_layers`): a layer is arrays (boards, scores, clears,
heights, cells, ancestors), children are generated and valued over parents (in parallel with
numba's threads when there are several, each parent's children at fixed positions, so the result
does not depend on the number of threads), equal boards are merged through a hash table, and each
ranking sorts only the prefix of the nodes its walk can reach. Python runs once per chunk of layers
(progress, Ctrl-C), never per node or per piece.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np
from numba import get_num_threads, njit, prange

from engine.board import copy_rows, place, popcount
from engine.dispatch import FunctionTable
from engine.jit import KernelCall, inlined, inner
from engine.lock import lock_counted, lost, spawn_state
from engine.movegen import capacity, lowest_placements_into, new_scratch, placements_into, rows_for
from evaluators import Placement, board_values, evaluate

from ._base import Policy, path_scores
from .config import BeamConfig
from .layered import board_hash, descending, grown, pack, radix_argsort, same_board, table_hash, unpack
from .registry import register
from .result import SolveResult

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

#: why `run_layers` returned
GOING, STUCK, ABORTED = -1, 1, 3


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


# ------------------------------------------------------------------------------------------------
# Tie orders: how nodes tied on a ranking key are ordered (smaller key rows first)

TIE_ORDERS = FunctionTable("beam.tie_break")
tie_keys = TIE_ORDERS.call


@TIE_ORDERS.register("hash")
@inner
def hash_tie_keys(boards, idx, hashes):
    """One key row: the board's hash (`board_hash`), smaller first."""
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


@inner
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
def kept_in_order(boards, kept, out, hashes):
    """The indices j with ``kept[j]`` in increasing order into ``out``, with their boards'
    `board_hash` into ``hashes``."""
    m = 0
    for j in range(kept.shape[0]):
        if kept[j]:
            out[m] = j
            hashes[m] = board_hash(boards[j])
            m += 1


@inner
def merge_equal_boards(kids, total, slot, stamp, layer):
    """Of the surviving children with equal boards keep one: the higher score, then fewer clears,
    then the first generated. Returns the kept children's indices in generation order and their
    board hashes (`board_hash`). ``slot``/``stamp`` are an open-addressing table reused across
    layers (an entry is live when its stamp is ``layer``); its size is a power of two above twice
    the children."""
    winner = np.empty(total, np.int64)
    keys = np.empty(total, np.uint64)
    n = equal_board_winners(kids, total, slot, stamp, layer, winner, keys)
    kept = np.zeros(total, np.bool_)
    for g in range(n):
        kept[winner[g]] = True
    out = np.empty(n, np.int64)
    hashes = np.empty(n, np.int64)
    kept_in_order(kids.boards, kept, out, hashes)  # the kept children in generation order
    return out, hashes


# ------------------------------------------------------------------------------------------------
# Ranking and picking


@inner
def dense_ranks(key):
    """Each key's rank among the distinct keys (0 = the smallest; equal keys, equal ranks)."""
    return ranks_in(radix_argsort(key), key)


@inner
def ranks_in(order, key):
    """The dense ranks of ``key`` given its ascending ``order``."""
    out = np.empty(key.shape[0], np.int64)
    rank = -1
    for k in range(order.shape[0]):
        m = order[k]
        if k == 0 or key[m] != key[order[k - 1]]:
            rank += 1
        out[m] = rank
    return out


@inlined
def bits_for(v):
    """Bits needed to hold the non-negative ``v``."""
    b = 0
    while v >> b:
        b += 1
    return b


@inner
def pack_rows(rows):
    """One int64 per candidate ordering the candidates as ``rows`` do (lexicographically, each row
    ascending; equal exactly when every row is equal): each row offset by its least value, the
    widest replaced by its dense ranks until all fit in 62 bits."""
    r, n = rows.shape
    parts = np.empty((r, n), np.int64)
    bits = np.empty(r, np.int64)
    for i in range(r):
        lo, hi = rows[i, 0], rows[i, 0]
        for m in range(n):
            lo = min(lo, rows[i, m])
            hi = max(hi, rows[i, m])
        if hi - lo < 0 or hi - lo >= PACK_LIMIT:  # overflowing or too wide: its dense ranks
            copy_rows(parts[i], dense_ranks(rows[i]))
            bits[i] = bits_for(n)
        else:
            for m in range(n):
                parts[i, m] = rows[i, m] - lo
            bits[i] = bits_for(hi - lo)
    while bits.sum() > PACK_BITS:
        w = np.argmax(bits)
        copy_rows(parts[w], dense_ranks(parts[w]))
        bits[w] = bits_for(n)
    head = np.zeros(n, np.int64)
    for i in range(r):
        for m in range(n):
            head[m] = (head[m] << bits[i]) | parts[i, m]
    return head


@inlined
def comes_before(key, ties, a, b):
    """Whether candidate ``a`` comes before ``b`` by ``key``, then the tie rows, then the index."""
    if key[a] != key[b]:
        return key[a] < key[b]
    for r in range(ties.shape[0]):
        if ties[r, a] != ties[r, b]:
            return ties[r, a] < ties[r, b]
    return a < b


@inner
def order_runs(order, group, key, ties):
    """Within each run of ``order`` whose candidates share ``group``, put them in the order of
    `comes_before` (an insertion sort: runs are short)."""
    n = order.shape[0]
    start = 0
    for k in range(1, n + 1):
        if k < n and group[order[k]] == group[order[start]]:
            continue
        for i in range(start + 1, k):
            v = order[i]
            j = i - 1
            while j >= start and comes_before(key, ties, v, order[j]):
                order[j + 1] = order[j]
                j -= 1
            order[j + 1] = v
        start = k


@inner
def ranking_order(rows, ties):
    """The candidates in ranking order: by the rank ``rows`` (lexicographically, ascending), then
    the tie order's ``ties`` rows, then generation order. Returns (order, head), ``head`` equal for
    two candidates exactly when their rank rows are."""
    head = pack_rows(rows)
    order = radix_argsort(head)
    order_runs(order, head, head, ties)
    return order, head


@inner
def quality_order(q_order, q_rank, sc, ties):
    """The quality ranking (quality, then score, both descending, then the ties) from the
    candidates already in order of quality (``q_order``, stable, and its dense ranks ``q_rank``):
    only runs of equal quality are reordered. Returns (order, head) as `ranking_order`."""
    rows = np.empty((2, sc.shape[0]), np.int64)
    for m in range(sc.shape[0]):
        rows[0, m] = q_rank[m]
        rows[1, m] = -sc[m]
    head = pack_rows(rows)
    order = q_order.copy()
    order_runs(order, q_rank, head, ties)
    return order, head


class Picks(NamedTuple):
    """One ranking's picking rule: ``want`` picks, at most ``quota[g]`` sharing an ancestor g + 1
    generations up and ``height_max`` per occupied height."""

    want: int
    quota: np.ndarray
    height_max: int


@inner
def pick(order, head, rule, anc, heights, taken, counters, hcount, out, keep_ties):
    """Walk ``order`` taking nodes not yet ``taken`` within the quotas into ``out`` up to
    ``rule.want`` picks; with ``keep_ties`` then go on taking the nodes within the quotas whose
    ranking key (``head``) equals the last pick's, up to the first one within the quotas that
    differs. Returns how many were taken."""
    counters[:] = 0
    hcount[:] = 0
    gens = anc.shape[1]
    n = 0
    if rule.want == 0:
        return 0
    for idx in order:
        if n >= rule.want and not keep_ties:
            break
        if taken[idx]:
            continue
        ok = True
        for g in range(gens):
            a = anc[idx, g]
            if a < 0:
                break
            if counters[g, a] >= rule.quota[g]:
                ok = False
                break
        if not ok or hcount[heights[idx]] >= rule.height_max:
            continue
        if n >= rule.want and head[idx] != head[out[n - 1]]:  # keep_ties: only a tie with the last pick
            break
        for g in range(gens):
            a = anc[idx, g]
            if a < 0:
                break
            counters[g, a] += 1
        hcount[heights[idx]] += 1
        taken[idx] = True
        out[n] = idx
        n += 1
    return n


@inner
def rank_rows(score_first, per_clear, sc, clears, qk):
    """A ranking's rows, most significant first, each ascending: score per clear (``per_clear``),
    then score and quality (``score_first``) or quality and score; descending values negated
    (``qk``: keys ordering the quality descending, its `descending` keys or their dense ranks)."""
    n = sc.shape[0]
    r = 3 if per_clear else 2
    rows = np.empty((r, n), np.int64)
    i = 0
    if per_clear:
        for m in range(n):
            rows[0, m] = -(sc[m] * PER_CLEAR_SCALE // max(clears[m], 1))
        i = 1
    first, second = (i, i + 1) if score_first else (i + 1, i)
    for m in range(n):
        rows[first, m] = -sc[m]
        rows[second, m] = qk[m]
    return rows


# ------------------------------------------------------------------------------------------------
# One layer


@inner
def expand_layer(st, shape, t, rules, cfg):
    """Children of the layer ``st`` for piece ``t``: placements, then locks and hard rules.
    Returns (children, how many)."""
    n = st.scalars[S_NODES]
    ss = spawn_state(t, rules)
    kids = st.kids
    per_node = kids.codes.shape[1]
    kids = grow_children(kids, n, per_node, 0, rules.height)
    place_nodes_by(cfg.threads, n, cfg.chunks, st.boards, rules, shape, ss, cfg.placements, kids.codes, kids.counts)
    total = 0
    for i in range(n):
        kids.starts[i] = total
        total += kids.counts[i]
    kids = grow_children(kids, n, per_node, total, rules.height)
    ruled = t < cfg.endgame_start
    parents = Parents(st.boards, st.scores, st.clears, st.heights, st.cells)
    lock_nodes_by(cfg.threads, n, parents, kids, shape, t + 1, rules, cfg, ruled)
    return kids, total


@inner
def best_child(kept, hashes, kids):
    """The best of the kept children: the highest score, then the higher quality, then the lower
    board hash. Returns its position in ``kept``."""
    b = 0
    for m in range(1, kept.shape[0]):
        j, jb = kept[m], kept[b]
        if kids.score[j] > kids.score[jb] or (kids.score[j] == kids.score[jb] and (
                kids.quality[j] > kids.quality[jb] or (kids.quality[j] == kids.quality[jb] and hashes[m] < hashes[b]))):
            b = m
    return b


@inner
def layer_best(kids, total):
    """(best score, tallest occupied height) of the surviving children; the score is -1 when none
    survives. Merging equal boards changes neither (a group's boards share their height and its
    winner has its best score)."""
    top = -1
    tallest = 0
    for j in range(total):
        if kids.alive[j]:
            top = max(top, kids.score[j])
            tallest = max(tallest, kids.height[j])
    return top, tallest


@inner
def drop_far_below(kids, total, top, cfg):
    """Mark dead the surviving children more than ``score_gap`` points below ``top`` (before the
    merge: a group of equal boards keeps its best score, so its winner is never among them)."""
    for j in range(total):
        if kids.alive[j] and kids.score[j] + cfg.score_gap < top:
            kids.alive[j] = False


@inner
def near_the_tallest(kept, hashes, kids, tallest, cfg):
    """The kept children whose stack is at most ``height_gap`` rows lower than ``tallest``."""
    near = np.empty(kept.shape[0], np.bool_)
    for m in range(kept.shape[0]):
        near[m] = kids.height[kept[m]] + cfg.height_gap >= tallest
    return kept[near], hashes[near]


@inner
def cut(cand, hashes, kids, st, cfg):
    """The picks among the candidates (children indices ``cand``), score picks first, as positions
    into ``cand``."""
    n = cand.shape[0]
    sc = kids.score[cand]
    clears = kids.clears[cand]
    qkey = descending(kids.quality[cand])
    q_order = radix_argsort(qkey)
    q_rank = ranks_in(q_order, qkey)  # both rankings read the quality's order only
    heights = kids.height[cand]
    anc = ancestors(cand, kids, st)
    ties = tie_keys(cfg.tie_order, kids.boards, cand, hashes)
    taken = np.zeros(n, np.bool_)
    hcount = np.zeros(st.boards.shape[1] + 1, np.int64)
    out = np.empty(n, np.int64)
    order, head = ranking_order(rank_rows(True, cfg.per_clear, sc, clears, q_rank), ties)
    rule = Picks(cfg.n_score, cfg.score_quota, cfg.score_height_max)
    n_score = pick(order, head, rule, anc, heights, taken, st.counters, hcount, out, cfg.keep_ties)
    if cfg.quality_first:
        order, head = quality_order(q_order, q_rank, sc, ties)
    else:
        order, head = ranking_order(rank_rows(True, False, sc, clears, q_rank), ties)
    rule = Picks(cfg.n_quality, cfg.quality_quota, cfg.quality_height_max)
    n_quality = pick(order, head, rule, anc, heights, taken, st.counters, hcount, out[n_score:], cfg.keep_ties)
    return out[:n_score + n_quality]


@inner
def ancestors(cand, kids, st):
    """The ancestors of each candidate: its parent, then the parent's ancestors (one generation
    fewer than the layer keeps)."""
    gens = st.anc.shape[1]
    out = np.empty((cand.shape[0], gens), np.int64)
    for m in range(cand.shape[0]):
        p = kids.parent[cand[m]]
        out[m, 0] = p
        for g in range(1, gens):
            out[m, g] = st.anc[p, g - 1]
    return out


@inner
def next_layer(st, kids, chosen, t, top, width):
    """The state after layer ``t``: the chosen children become the nodes, their parents and
    placements are traced."""
    n = chosen.shape[0]
    cap = n + width // GROWTH_DIVISOR if n > st.boards.shape[0] else st.boards.shape[0]
    gens = st.anc.shape[1]
    boards = st.boards if cap == st.boards.shape[0] else np.zeros((cap, st.boards.shape[1]), np.uint16)
    scores, clears = grown(st.scores, cap), grown(st.clears, cap)
    heights, cells = grown(st.heights, cap), grown(st.cells, cap)
    anc = np.empty((cap, gens), np.int64)
    counters = st.counters if st.counters.shape[1] >= cap else np.zeros((gens, cap), np.int64)
    at = st.scalars[S_TRACE]
    trace_parent, trace_code = grown(st.trace_parent, at + n), grown(st.trace_code, at + n)
    for m in range(n):
        j = chosen[m]
        p = kids.parent[j]
        anc[m, 0] = p
        for g in range(1, gens):
            anc[m, g] = st.anc[p, g - 1]
        copy_rows(boards[m], kids.boards[j])
        scores[m] = kids.score[j]
        clears[m] = kids.clears[j]
        heights[m] = kids.height[j]
        cells[m] = kids.cells[j]
        trace_parent[at + m] = p
        trace_code[at + m] = kids.code[j]
    st.trace_start[t] = at
    st.trace_start[t + 1] = at + n
    st.scalars[S_TRACE] = at + n
    st.scalars[S_NODES] = n
    st.scalars[S_LAYERS] = t + 1
    st.best_by_step[t] = top
    return BeamState(boards, scores, clears, heights, cells, anc, trace_parent, trace_code, st.trace_start,
                     st.best_by_step, st.scalars, kids, st.merge_slot, st.merge_stamp, counters)


@inner
def merge_table(st, total):
    """The merge table, grown to a power of two at least twice ``total``."""
    size = st.merge_slot.shape[0]
    if size >= 2 * total:
        return st.merge_slot, st.merge_stamp
    while size < 2 * total:
        size *= 2
    return np.zeros(size, np.int64), np.full(size, -1, np.int64)


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def run_layers(sequence, t0, t1, rules, spec, cfg, threshold, st):
    """Play layers t0 .. t1-1 from ``st``; returns (state, layers done, stop code: `GOING`,
    `STUCK` or `ABORTED`)."""
    for t in range(t0, t1):
        shape = sequence[t]
        n = st.scalars[S_NODES]
        kids, total = expand_layer(st, shape, t, rules, cfg)
        st.scalars[S_EXPANDED] += n
        top, tallest = layer_best(kids, total)
        if top < 0:
            return st, t, STUCK
        drop_far_below(kids, total, top, cfg)
        slot, stamp = merge_table(st, total)
        st = BeamState(st.boards, st.scores, st.clears, st.heights, st.cells, st.anc, st.trace_parent,
                       st.trace_code, st.trace_start, st.best_by_step, st.scalars, kids, slot, stamp, st.counters)
        kept, hashes = merge_equal_boards(kids, total, slot, stamp, t)
        value_kept_by(cfg.threads, kept, st.boards, st.scores, kids, shape, rules, spec, cfg.chunks)
        b = best_child(kept, hashes, kids)  # among every kept child, before the height filter
        if top >= st.scalars[S_BEST_SCORE]:  # a later piece wins ties on score
            jb = kept[b]
            st.scalars[S_BEST_SCORE] = top
            st.scalars[S_BEST_PIECE] = t
            st.scalars[S_BEST_PARENT] = kids.parent[jb]
            st.scalars[S_BEST_CODE] = kids.code[jb]
        cand, hashes = near_the_tallest(kept, hashes, kids, tallest, cfg)
        if cand.shape[0] > cfg.width:
            chosen = cand[cut(cand, hashes, kids, st, cfg)]
        else:
            chosen = cand
        st = next_layer(st, kids, chosen, t, top, cfg.width)
        if top < threshold[t]:
            return st, t + 1, ABORTED
    return st, t1, GOING


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def trace_back(st):
    """The placements (x, y, state) of the path to the best child, from the first piece."""
    piece = st.scalars[S_BEST_PIECE]
    out = np.zeros((piece + 1, 3), np.int64)
    if piece < 0:
        return out
    x, y, s = unpack(st.scalars[S_BEST_CODE])
    out[piece, 0], out[piece, 1], out[piece, 2] = x, y, s
    i = st.scalars[S_BEST_PARENT]
    for t in range(piece - 1, -1, -1):
        j = st.trace_start[t] + i
        x, y, s = unpack(st.trace_code[j])
        out[t, 0], out[t, 1], out[t, 2] = x, y, s
        i = st.trace_parent[j]
    return out


# ------------------------------------------------------------------------------------------------
# The policy


def settings(cfg, rules, pieces: int, threads: int) -> BeamSettings:
    """The kernels' view of a `BeamConfig` for a search of ``pieces`` pieces."""
    width = cfg.width
    gens = max(len(cfg.ancestor_quotas_score), len(cfg.ancestor_quotas_quality), 1)
    n_quality = int(width * (1.0 - cfg.score_share))
    n_score = width - n_quality
    return BeamSettings(
        width=width, placements=NODE_PLACEMENTS.token(cfg.placements), n_score=n_score, n_quality=n_quality,
        score_quota=_quota(cfg.ancestor_quotas_score, n_score, gens),
        quality_quota=_quota(cfg.ancestor_quotas_quality, n_quality, gens),
        score_height_max=max(1, int(n_score * cfg.height_quota_score)),
        quality_height_max=max(1, int(n_quality * cfg.height_quota_quality)),
        per_clear=cfg.score_ranking == "score_per_clear", quality_first=cfg.quality_ranking == "quality",
        score_gap=cfg.score_gap, height_gap=cfg.height_gap,
        min_height=np.array([0] + list(cfg.clear_min_height), np.int64),
        min_cells=np.array([0] + list(cfg.clear_min_cells), np.int64),
        endgame_start=max(pieces - cfg.endgame_pieces, 0), sky_rows=cfg.sky_rows, sky_max_cells=cfg.sky_max_cells,
        top_row_free=cfg.top_row_free, tie_order=TIE_ORDERS.token(cfg.tie_break), keep_ties=cfg.keep_ties,
        threads=PLACE_NODES.token("threads" if threads > 1 else "serial"),
        chunks=THREAD_CHUNKS * threads if threads > 1 else 1)


def _quota(shares, picks: int, gens: int) -> np.ndarray:
    out = np.full(gens, np.iinfo(np.int64).max, np.int64)
    for g, share in enumerate(shares):
        out[g] = max(1, int(picks * share))
    return out


def initial_state(rules, pieces: int, width: int, gens: int) -> BeamState:
    """The root layer (the empty board) and empty buffers sized for ``width``."""
    cap = width + width // GROWTH_DIVISOR + 1
    H = rules.height
    per_node = capacity(rules.height, rules.width)
    scalars = np.zeros(N_SCALARS, np.int64)
    scalars[S_NODES] = 1
    scalars[S_BEST_SCORE] = -1
    scalars[S_BEST_PIECE] = -1
    kids = Children(np.zeros((cap, per_node), np.int16), np.zeros(cap, np.int64), np.zeros(cap, np.int64),
                    *(np.zeros((0, H), np.uint16), np.zeros(0, np.int64), np.zeros(0, np.int64),
                      np.zeros(0, np.float64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                      np.zeros(0, np.int16), np.zeros(0, np.int64), np.zeros(0, np.bool_)))
    return BeamState(
        boards=np.zeros((cap, H), np.uint16), scores=np.zeros(cap, np.int64), clears=np.zeros(cap, np.int64),
        heights=np.zeros(cap, np.int64), cells=np.zeros(cap, np.int64), anc=np.full((cap, gens), -1, np.int64),
        trace_parent=np.zeros(cap * min(pieces, TRACE_LAYERS), np.int32),
        trace_code=np.zeros(cap * min(pieces, TRACE_LAYERS), np.int16),
        trace_start=np.zeros(pieces + 1, np.int64), best_by_step=np.zeros(pieces, np.int64), scalars=scalars,
        kids=kids, merge_slot=np.zeros(1024, np.int64), merge_stamp=np.full(1024, -1, np.int64),
        counters=np.zeros((gens, cap), np.int64))


@register
class Beam(Policy):
    name = "beam"
    Settings = BeamConfig

    def kernel_inputs(self) -> tuple[BeamSettings, BeamState]:
        """The kernels' settings (for numba's current thread count) and the root layer."""
        cfg = self.config.beam
        kernel_cfg = settings(cfg, self.rules, self.pieces, get_num_threads())
        gens = kernel_cfg.score_quota.shape[0]
        return kernel_cfg, initial_state(self.rules, self.pieces, cfg.width, gens)

    def kernel_parts(self):
        cfg, st = self.kernel_inputs()
        rules, spec = self.rules.kernel, self.evaluator.spec
        picks = np.zeros(0, np.int64)  # children indices, board hashes
        parents = Parents(st.boards, st.scores, st.clears, st.heights, st.cells)
        threads = cfg.threads.name
        return {
            "lock_nodes": KernelCall(LOCK_NODES[threads], (0, parents, st.kids, 0, 0, rules, cfg, True)),
            "merge_equal_boards": KernelCall(merge_equal_boards, (st.kids, 0, st.merge_slot, st.merge_stamp, 0)),
            "value_kept": KernelCall(VALUE_KEPT[threads], (picks, st.boards, st.scores, st.kids, 0, rules, spec, 0)),
            "cut": KernelCall(cut, (picks, picks, st.kids, st, cfg)),
            "next_layer": KernelCall(next_layer, (st, st.kids, picks, 0, 0, 0)),
            "trace_back": KernelCall(trace_back, (st,)),
            "path_scores": self.path_scores_call(),
        }

    def search(self, threshold, progress):
        rules, n_pieces = self.rules, self.pieces
        kernel_cfg, st = self.kernel_inputs()
        spec = self.evaluator.spec
        t, stop = 0, GOING
        step = 1
        abort_piece = abort_threshold = None
        stop_name = "done"
        while t < n_pieces:
            started = time.perf_counter()
            st, t_new, stop = run_layers(self.sequence, t, min(n_pieces, t + step), rules.kernel, spec, kernel_cfg,
                                         threshold, st)
            elapsed = time.perf_counter() - started
            step = max(1, min(1000, int(step * CHUNK_SECONDS / max(elapsed, 1e-3)))) if t_new > t else step
            t = t_new
            if progress:
                progress(t, n_pieces, int(st.scalars[S_BEST_SCORE]))
            if stop == STUCK:
                stop_name = "stuck"
                break
            if stop == ABORTED:
                stop_name, abort_piece, abort_threshold = "aborted", t, float(threshold[t - 1])
                break
            if self.interrupted and t < n_pieces:
                stop_name = "interrupted"
                break
        placements = trace_back(st)
        placed = len(placements)
        by_step, kinds = path_scores(placements, self.sequence, rules)
        layers = int(st.scalars[S_LAYERS])
        return SolveResult(
            score=int(by_step[-1]) if placed else 0, pieces=placed, score_by_step=by_step,
            best_by_step=st.best_by_step[:layers].copy(), clear_kinds=kinds, placements=placements, stop=stop_name,
            abort_piece=abort_piece, abort_threshold=abort_threshold, nodes=int(st.scalars[S_EXPANDED]))
