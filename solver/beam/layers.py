"""The layer loop in numba: one layer expanded, cut and carried to the next (`next_layer`), a chunk
of layers (`run_layers`), and the record traced back from the best child (`trace_back`)."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine._jit.decorators import inner
from engine.board import copy_rows
from engine.lock import spawn_state

from ..layered import descending, grown, radix_sorted, unpack
from ..threshold import below
from .bundles import (
    ABORTED, BeamState, GOING, GROWTH_DIVISOR, Parents, STUCK, S_BEST_CODE, S_BEST_PARENT, S_BEST_PIECE,
    S_BEST_SCORE, S_EXPANDED, S_LAYERS, S_NODES, S_TRACE,
)
from .expansion import grow_children, lock_nodes_by, merge_equal_boards, place_nodes_by, tie_keys, value_kept_by
from .ranking import Picks, pick, quality_order, rank_rows, ranking_order, ranks_in



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
    q_order, q_keys = radix_sorted(qkey)
    q_rank = ranks_in(q_order, q_keys)  # both rankings read the quality's order only
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
        order, head = quality_order(q_rank, sc, ties)
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
        kept, hashes = merge_equal_boards(kids, total, slot, stamp, t, cfg.tie_seed)
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
        if below(threshold, t, top):
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
