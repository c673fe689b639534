"""Ranking and picking: a layer's candidates sorted by packed keys (`radix_argsort`) and the width's
picks taken under the height and ancestor quotas (`pick`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine._jit.decorators import inlined, inner
from engine.board import copy_rows

from ..layered import radix_sorted
from .bundles import PACK_BITS, PACK_LIMIT, PER_CLEAR_SCALE



# ------------------------------------------------------------------------------------------------
# Ranking and picking


@inner
def dense_ranks(key):
    """Each key's rank among the distinct keys (0 = the smallest; equal keys, equal ranks)."""
    order, keys = radix_sorted(key)
    return ranks_in(order, keys)


@inner
def ranks_in(order, sorted_keys):
    """The dense ranks of the keys whose ascending ``order`` and keys in that order (``sorted_keys``,
    `radix_sorted`'s) are given."""
    out = np.empty(order.shape[0], np.int64)
    rank = -1
    for k in range(order.shape[0]):
        if k == 0 or sorted_keys[k] != sorted_keys[k - 1]:
            rank += 1
        out[order[k]] = rank
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
def ties_before(ties, a, b):
    """Whether candidate ``a`` comes before ``b`` by the tie rows, then the index."""
    for r in range(ties.shape[0]):
        if ties[r, a] != ties[r, b]:
            return ties[r, a] < ties[r, b]
    return a < b


@inner
def order_runs(order, sorted_keys, ties):
    """Within each run of ``order`` whose keys are equal (``sorted_keys``: the keys in that order,
    `radix_sorted`'s), put the candidates in the order of `ties_before` (an insertion sort: runs
    are short). The runs are found from the sorted keys in sequence: gathering each candidate's key
    through ``order`` missed the cache for every candidate of a layer."""
    n = order.shape[0]
    start = 0
    for k in range(1, n + 1):
        if k < n and sorted_keys[k] == sorted_keys[start]:
            continue
        for i in range(start + 1, k):
            v = order[i]
            j = i - 1
            while j >= start and ties_before(ties, v, order[j]):
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
    order, keys = radix_sorted(head)
    order_runs(order, keys, ties)
    return order, head


@inner
def quality_order(q_rank, sc, ties):
    """The quality ranking (quality, then score, both descending, then the ties): `ranking_order`
    of the rows (quality's dense rank ``q_rank``, 0 the best; -score). Returns (order, head)."""
    rows = np.empty((2, sc.shape[0]), np.int64)
    for m in range(sc.shape[0]):
        rows[0, m] = q_rank[m]
        rows[1, m] = -sc[m]
    return ranking_order(rows, ties)


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
