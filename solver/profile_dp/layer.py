"""One layer of the profile DP: every state expanded by its transitions, children with equal
profiles merged, the best ``states`` kept by the key (`merge_and_select`)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from engine._jit.decorators import inlined, inner
from engine.lock import lock_points

from .._splitmix import GOLDEN, mix64
from .surfaces import BITS, EXPAND_CHUNKS, LINK, MASK, MOVE_BITS, drop_move, pack_profile, table_size, unpack_profile



# --------------------------------------------------------------------------- a layer
@inner(parallel=True)
def expand_layer(states, shape, number, tables, win, rules, children):
    """Children of ``states`` by piece ``number`` (1-based) of ``shape``: slot ``i * count[shape] + m``
    of ``children`` holds move m of state i (profile -1 when the move is not a transition), scored by
    the rules (`lock_points`)."""
    profiles, scores = states.profiles, states.scores
    out_profile, out_score = children.profiles, children.scores
    moves, low, high = tables.moves[shape], tables.low[shape], tables.high[shape]
    n = profiles.shape[0]
    width = win.width
    nm = tables.count[shape]
    chunks = min(n, EXPAND_CHUNKS)
    for c in prange(chunks):
        h = np.empty(width, np.int64)
        nh = np.empty(width, np.int64)
        for i in range(c * n // chunks, (c + 1) * n // chunks):
            unpack_profile(profiles[i], width, h)
            for m in range(nm):
                slot = i * nm + m
                cy, cells, f = drop_move(h, nh, moves, low, high, win, m)
                if cy < 0:
                    out_profile[slot] = -1
                    continue
                out_profile[slot] = pack_profile(nh, width)
                out_score[slot] = scores[i] + lock_points(rules, f, win.base_cells + cells, number)


@inlined
def surface_key(p, score, width, key):
    """The selection key of a state: its score, plus with ``key.surface`` the surface heuristic
    ``cells_weight * cells + bumpiness_weight * bumpiness`` of its profile."""
    if not key.surface:
        return np.float64(score)
    prev = p & MASK
    cells = prev
    bump = 0
    for i in range(1, width):
        v = (p >> (BITS * i)) & MASK
        cells += v
        bump += abs(v - prev)
        prev = v
    return score + key.cells_weight * cells + key.bumpiness_weight * bump


@inner
def merge_children(children, total, slots, stamps, layer):
    """The distinct children among slots 0 .. total-1 (equal profiles: the higher score wins; equal
    scores: the first slot), as their slots in slot order. ``slots`` and ``stamps`` are the hash
    table; a slot whose stamp is not ``layer`` is free."""
    profiles, scores = children.profiles, children.scores
    valid = 0
    for slot in range(total):
        if profiles[slot] >= 0:
            valid += 1
    size = table_size(valid)
    mask = np.uint64(size - 1)
    uniq = np.empty(valid, np.int64)
    u = 0
    for slot in range(total):
        p = profiles[slot]
        if p < 0:
            continue
        pos = np.int64(mix64(np.uint64(p) + GOLDEN) & mask)
        while True:
            if stamps[pos] != layer:
                stamps[pos] = layer
                slots[pos] = u
                uniq[u] = slot
                u += 1
                break
            j = uniq[slots[pos]]
            if profiles[j] == p:
                if scores[slot] > scores[j]:
                    uniq[slots[pos]] = slot
                break
            pos = (pos + 1) & (size - 1)
    return uniq[:u]


@inner
def select_best(children, uniq, K, width, key):
    """Which of the distinct children ``uniq`` (their slots) to keep: all when at most ``K``, else
    the best ``K`` by key (ties: the smaller profile)."""
    u = uniq.shape[0]
    take = np.ones(u, np.bool_)
    if u <= K:
        return take
    profiles, scores = children.profiles, children.scores
    keys = np.empty(u, np.float64)
    for a in range(u):
        s = uniq[a]
        keys[a] = -surface_key(profiles[s], scores[s], width, key)
    bound = np.partition(keys, K - 1)[K - 1]
    # every key below the bound is taken; at the bound, the smallest profiles fill the rest
    n_below = 0
    for a in range(u):
        if keys[a] < bound:
            n_below += 1
    ties = np.empty(u - n_below, np.int64)
    nt = 0
    for a in range(u):
        if keys[a] > bound:
            take[a] = False
        elif keys[a] == bound:
            take[a] = False
            ties[nt] = profiles[uniq[a]]
            nt += 1
    room = K - n_below
    if room > 0:
        ties = np.sort(ties[:nt])
        cut = ties[room - 1]
        for a in range(u):
            if keys[a] == bound and profiles[uniq[a]] <= cut:
                take[a] = True
    return take


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def merge_and_select(buf, total, nm, K, width, key, layer):
    """Merge equal children of ``buf.children`` (`merge_children`), then keep the best ``K`` by
    ``key`` (`select_best`). Writes the kept states, in slot order, to ``buf.kept`` and their links
    (``parent << MOVE_BITS | move``; ``nm`` moves per parent) to ``buf.links``; returns (kept,
    distinct children, best score)."""
    children = buf.children
    profiles, scores = children.profiles, children.scores
    kept_profiles, kept_scores, links = buf.kept.profiles, buf.kept.scores, buf.links
    uniq = merge_children(children, total, buf.slots, buf.stamps, layer)
    best = np.int64(-1)
    for a in range(uniq.shape[0]):
        if scores[uniq[a]] > best:
            best = scores[uniq[a]]
    take = select_best(children, uniq, K, width, key)
    k = 0
    for a in range(uniq.shape[0]):
        if take[a]:
            s = uniq[a]
            kept_profiles[k] = profiles[s]
            kept_scores[k] = scores[s]
            links[k] = LINK(((s // nm) << MOVE_BITS) | (s % nm))
            k += 1
    return k, uniq.shape[0], best
