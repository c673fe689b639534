"""Beam search over whole boards: the design behind the 1,395,326 record.

One layer per piece. Every node of the layer is expanded with every placement of the piece;
children are dropped when they break a hard rule:
- the lock touches the top (every row occupied: the game would end), or, with ``top_row_free``,
  occupies the top row at all (before clearing), as the 1,395,326 solver's shortcut did;
- it clears 1-4 rows while the parent stack is lower than ``clear_min_height[rows - 1]`` rows or
  holds fewer than ``clear_min_cells[rows - 1]`` cells (clearing early wastes the multiplier),
  except in the last ``endgame_pieces`` pieces played, when no later clear needs the cells;
- its top ``sky_rows`` occupied rows each hold at most ``sky_max_cells`` cells (a branch reaching
  into the sky).
Children with the same board are merged (the higher score wins, then fewer clears). Nodes more than
``score_gap`` points below the layer's best, or whose stack is more than ``height_gap`` rows lower
than the tallest, are dropped. The rest is cut back to ``width``: ``score_share`` of it by the score
ranking, the rest by the quality ranking (the evaluator's value of the board), each pick subject to
quotas — at most a share of the picks per occupied height and per ancestor 1, 2, 3, 4 generations
up — so the beam keeps its diversity. Nodes tied on a ranking are ordered by a hash of the board's
bits (``tie_break: hash``) or by the board's rows themselves (``board``, the 1,395,326 solver's
order: a stack reaching a higher group of four rows comes first); with ``keep_ties`` the nodes tied
with a ranking's last pick are kept too, as that solver does. Either way the result does not depend
on the number of threads. The record ends on the best child of any layer, kept or cut: the higher
score, then the later piece (the score ranking is by score per clear, so a layer's highest score
can be cut).

Data are arrays: a layer is boards (N, height), scores, clear counts, qualities, heights, cells and
ancestor indices; children are generated and valued by numba kernels over parents in parallel.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from engine.board import popcount
from engine.lock import TOP_TOUCHED, lock_copy, spawn_state
from engine.movegen import capacity, new_scratch, placements_into
from evaluators import Placement, board_values, evaluate

from ._base import Policy, path_scores
from .config import BeamConfig
from .registry import register
from .result import SolveResult


@njit(cache=True, inline="always")
def pack(x, y, s):
    """A placement as one int16: (x + 4) << 7 | y << 2 | s."""
    return ((x + 4) << 7) | (y << 2) | s


@njit(cache=True, inline="always")
def unpack(code):
    return (code >> 7) - 4, (code >> 2) & 31, code & 3


@njit(cache=True, inline="always")
def occupied_height(board):
    """Rows from the top occupied row down to the floor (0 for an empty board)."""
    h = board.shape[0]
    for y in range(h):
        if board[y] != 0:
            return h - y
    return 0


@njit(cache=True, parallel=True)
def expand_placements(boards, n, shape, ss, R, codes, counts, chunks, lowest_only):
    """``codes[i, :counts[i]]``: the packed placements of the piece on ``boards[i]``, i < n; with
    ``lowest_only``, only the lowest placement of each (state, centre column)."""
    rows = boards.shape[1] + 4
    chunks = min(n, chunks)
    for c in prange(chunks):
        sc = new_scratch(rows, 1)
        out = np.zeros((codes.shape[1], 3), np.int64)
        for i in range(c * n // chunks, (c + 1) * n // chunks):
            m = placements_into(boards[i], R, shape, ss, sc, out)
            kept = 0
            for k in range(m):
                # placements come ordered by state, then y, then x: a later one of the same state
                # and column is lower
                if lowest_only:
                    lower = False
                    for k2 in range(k + 1, m):
                        if out[k2, 2] != out[k, 2]:
                            break
                        if out[k2, 0] == out[k, 0]:
                            lower = True
                            break
                    if lower:
                        continue
                codes[i, kept] = pack(out[k, 0], out[k, 1], out[k, 2])
                kept += 1
            counts[i] = kept


@njit(cache=True, parallel=True)
def make_children(boards, n, scores, clears, heights, cells_count, codes, counts, starts, shape, number, R, spec,
                  min_height, min_cells, sky_rows, sky_max, top_row_free, out_boards, out_score, out_clears, out_quality,
                  out_height, out_cells, out_parent, out_code, out_alive, out_full):
    """Lock every placement on a copy of its parent, apply the hard rules, value the survivors."""
    height = boards.shape[1]
    width = R.width
    for i in prange(n):
        pvals = np.zeros(spec.weights.shape[0])
        board_values(boards[i], width, spec, pvals)
        locked = np.empty(height, np.uint16)
        for k in range(counts[i]):
            j = starts[i] + k
            x, y, s = unpack(codes[i, k])
            child = out_boards[j]
            lock = lock_copy(boards[i], R, shape, s, x, y, number, locked, child)
            f = lock.lines
            out_parent[j] = i
            out_code[j] = codes[i, k]
            out_full[j] = f
            alive = True
            if lock.end == TOP_TOUCHED:
                alive = False
            elif top_row_free and locked[0] != 0:
                alive = False
            elif f > 0 and (heights[i] < min_height[f] or cells_count[i] < min_cells[f]):
                alive = False
            h = occupied_height(child)
            if alive and sky_rows > 0 and h >= sky_rows:
                thin = True
                for r in range(height - h, height - h + sky_rows):
                    if popcount(np.int64(child[r])) > sky_max:
                        thin = False
                        break
                if thin:
                    alive = False
            out_alive[j] = alive
            if not alive:
                continue
            points = lock.points
            out_score[j] = scores[i] + points
            out_clears[j] = clears[i] + (1 if f > 0 else 0)
            out_height[j] = h
            out_cells[j] = lock.cells - f * width
            p = Placement(boards[i], locked, child, R.cells[shape, s], x, y, f, points, width)
            out_quality[j] = evaluate(p, pvals, spec)


@njit(cache=True)
def board_hashes(boards, idx):
    """A 64-bit mix of each board's rows (FNV-style), for merging equal boards and breaking ties."""
    out = np.empty(idx.shape[0], np.int64)
    for m in range(idx.shape[0]):
        h = np.uint64(14695981039346656037)
        for r in boards[idx[m]]:
            h = (h ^ np.uint64(r)) * np.uint64(1099511628211)
        out[m] = np.int64(h >> np.uint64(1))
    return out


@njit(cache=True)
def merge_equal_boards(boards, idx, hashes, scores, clears):
    """Of children with equal boards keep one: the higher score, then fewer clears, then the first.
    Returns positions into ``idx`` of the kept children, in generation order."""
    order = np.argsort(hashes, kind="mergesort")
    keep = np.ones(idx.shape[0], np.bool_)
    i = 0
    m = order.shape[0]
    while i < m:
        j = i
        while j + 1 < m and hashes[order[j + 1]] == hashes[order[i]]:
            j += 1
        if j > i:  # a group with equal hashes: compare boards exactly
            for a in range(i, j + 1):
                pa = order[a]
                if not keep[pa]:
                    continue
                for b in range(a + 1, j + 1):
                    pb = order[b]
                    if not keep[pb]:
                        continue
                    if (boards[idx[pa]] == boards[idx[pb]]).all():
                        sa, sb = scores[idx[pa]], scores[idx[pb]]
                        ca, cb = clears[idx[pa]], clears[idx[pb]]
                        if sb > sa or (sb == sa and (cb < ca or (cb == ca and pb < pa))):
                            keep[pa] = False
                            break
                        keep[pb] = False
        i = j + 1
    return np.flatnonzero(keep)


@njit(cache=True)
def board_words(boards, idx):
    """Each board as five int64 words of four rows, top word first, the word's top row in its low
    16 bits: ``out[w, m]`` for board ``idx[m]`` (the 1,395,326 solver's order of tied boards compares
    these, larger first). Boards of other heights are padded with empty rows at the bottom."""
    n_words = (boards.shape[1] + 3) // 4
    out = np.zeros((n_words, idx.shape[0]), np.int64)
    for m in range(idx.shape[0]):
        b = boards[idx[m]]
        for y in range(b.shape[0]):
            out[y // 4, m] |= np.int64(b[y]) << (16 * (y % 4))
    return out


@njit(cache=True)
def pick(order, want, anc, quota, heights, height_max, taken, counters, hcount, rank, keep_ties):
    """Walk ``order`` (best first) and take up to ``want`` nodes not yet ``taken``, at most
    ``quota[g]`` sharing an ancestor g + 1 generations up and ``height_max`` per occupied height.
    With ``keep_ties``, the walk then goes on, taking the nodes within the quotas whose row of
    ``rank`` (the ranking key) equals the last pick's, up to the first one within the quotas that
    differs."""
    out = np.empty(order.shape[0] if keep_ties else min(want, order.shape[0]), np.int64)
    counters[:] = 0
    hcount[:] = 0
    gens = quota.shape[0]
    n = 0
    if want == 0:
        return out[:0]
    for idx in order:
        if n >= want and not keep_ties:
            break
        if taken[idx]:
            continue
        ok = True
        for g in range(gens):
            a = anc[idx, g]
            if a < 0:
                break
            if counters[g, a] >= quota[g]:
                ok = False
                break
        if not ok or hcount[heights[idx]] >= height_max:
            continue
        if n >= want:  # keep_ties: only a tie with the last pick
            last = out[n - 1]
            tied = True
            for k in range(rank.shape[1]):
                if rank[idx, k] != rank[last, k]:
                    tied = False
                    break
            if not tied:
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
    return out[:n]


def pick_in_order(keys, want, depth, anc, quota, heights, height_max, taken, counters, hcount, rank, keep_ties):
    """`pick` over the order ``np.lexsort(keys)`` (last key most significant, smallest first).

    Only a prefix of that order is usually walked, so it is sorted alone: the nodes whose most
    significant key is within the ``depth`` x ``want`` smallest (whole tie groups included) come
    first in the full order too. If the quotas leave picks unmade within the prefix, the full order
    is used. The result is the same as walking the full order (ties kept beyond ``want`` share the
    last pick's most significant key, so they lie within the prefix)."""
    primary = keys[-1]
    n = len(primary)
    k = depth * want + 64
    if n > k:
        bound = np.partition(primary, k)[k]
        prefix = np.flatnonzero(primary <= bound)
        if len(prefix) < n:
            saved = taken.copy()
            order = prefix[np.lexsort(tuple(key[prefix] for key in keys))]
            got = pick(order, want, anc, quota, heights, height_max, taken, counters, hcount, rank, keep_ties)
            if len(got) >= want:
                return got
            taken[:] = saved
    return pick(np.lexsort(keys), want, anc, quota, heights, height_max, taken, counters, hcount, rank, keep_ties)


_NO_RANK = np.zeros((0, 0), np.float64)  # `pick`'s ranking keys when ties are not kept (never read)


@register(BeamConfig)
class Beam(Policy):
    name = "beam"

    def search(self, threshold, progress):
        cfg = self.config.beam
        rules, R, n_pieces = self.rules, self.rules.kernel, self.pieces
        spec = self.evaluator.spec
        H, W = rules.height, cfg.width
        cap = capacity(rules.height, rules.width)
        gens = max(len(cfg.ancestor_quotas_score), len(cfg.ancestor_quotas_quality), 1)
        n_quality = int(W * (1.0 - cfg.score_share))
        n_score = W - n_quality
        quotas = {
            "score": (n_score, self._quota(cfg.ancestor_quotas_score, n_score, gens),
                      max(1, int(n_score * cfg.height_quota_score))),
            "quality": (n_quality, self._quota(cfg.ancestor_quotas_quality, n_quality, gens),
                        max(1, int(n_quality * cfg.height_quota_quality))),
        }
        min_height = np.array([0] + list(cfg.clear_min_height), np.int64)
        min_cells = np.array([0] + list(cfg.clear_min_cells), np.int64)
        endgame = max(n_pieces - cfg.endgame_pieces, 0)  # the first piece played with the clear rules off
        no_rule = np.zeros_like(min_height)
        chunks = 4 * _threads()

        # the layer: root = the empty board
        boards = np.zeros((1, H), np.uint16)
        scores = np.zeros(1, np.int64)
        clears = np.zeros(1, np.int64)
        heights = np.zeros(1, np.int64)
        cells = np.zeros(1, np.int64)
        anc = np.full((1, gens), -1, np.int64)
        codes_buf = np.zeros((W, cap), np.int16)
        counts = np.zeros(W, np.int64)
        counters = np.zeros((gens, W), np.int64)
        hcount = np.zeros(H + 1, np.int64)
        trace_parent: list[np.ndarray] = []
        trace_code: list[np.ndarray] = []
        best_by_step = np.zeros(n_pieces, np.int64)
        best = (-1, -1, -1, 0)  # (score, piece, parent index, placement code) of the best child so far
        nodes = 0
        stop = "done"
        abort_piece = abort_threshold = None
        for t in range(n_pieces):
            shape = int(self.sequence[t])
            n = boards.shape[0]
            expand_placements(boards, n, shape, spawn_state(t, R), R, codes_buf, counts, chunks,
                              cfg.placements == "lowest")
            starts = np.zeros(n, np.int64)
            np.cumsum(counts[: n - 1], out=starts[1:])
            total = int(counts[:n].sum())
            nodes += n
            ch_boards = np.empty((total, H), np.uint16)
            ch_score, ch_clears = np.empty(total, np.int64), np.empty(total, np.int64)
            ch_quality = np.empty(total, np.float64)
            ch_height, ch_cells = np.empty(total, np.int64), np.empty(total, np.int64)
            ch_parent, ch_code = np.empty(total, np.int64), np.empty(total, np.int16)
            ch_alive, ch_full = np.empty(total, np.bool_), np.empty(total, np.int64)
            ruled = t < endgame
            make_children(boards, n, scores, clears, heights, cells, codes_buf, counts, starts, shape, t + 1, R,
                          spec, min_height if ruled else no_rule, min_cells if ruled else no_rule,
                          cfg.sky_rows, cfg.sky_max_cells, cfg.top_row_free,
                          ch_boards, ch_score,
                          ch_clears, ch_quality, ch_height, ch_cells, ch_parent, ch_code, ch_alive, ch_full)
            idx = np.flatnonzero(ch_alive)
            if len(idx) == 0:
                stop = "stuck"
                break
            hashes = board_hashes(ch_boards, idx)
            kept = merge_equal_boards(ch_boards, idx, hashes, ch_score, ch_clears)
            idx, hashes = idx[kept], hashes[kept]
            sc = ch_score[idx]
            top = int(sc.max())
            best_by_step[t] = top
            if top >= best[0]:  # a later piece wins ties on score: the layer's best child is the best so far
                best = self._best_child(t, top, idx, hashes, ch_score, ch_quality, ch_parent, ch_code)
            hs = ch_height[idx]
            near = (sc + cfg.score_gap >= top) & (hs + cfg.height_gap >= hs.max())
            idx, hashes, sc, hs = idx[near], hashes[near], sc[near], hs[near]
            par = ch_parent[idx]
            child_anc = np.empty((len(idx), gens), np.int64)
            child_anc[:, 0] = par
            child_anc[:, 1:] = anc[par, :-1]
            if len(idx) > W:
                q = ch_quality[idx]
                taken = np.zeros(len(idx), np.bool_)
                if cfg.tie_break == "hash":
                    tie = (hashes,)
                else:  # larger words first, the top word most significant
                    tie = tuple(-board_words(ch_boards, idx)[::-1])
                if cfg.score_ranking == "score_per_clear":
                    rank = (sc * 10_000 // np.maximum(ch_clears[idx], 1), sc, q)
                else:
                    rank = (sc, q)
                first = self._pick(rank, tie, quotas["score"], 32, child_anc, hs, taken, counters, hcount, cfg)
                rank = (q, sc) if cfg.quality_ranking == "quality" else (sc, q)
                second = self._pick(rank, tie, quotas["quality"], 10, child_anc, hs, taken, counters, hcount, cfg)
                sel = np.concatenate((first, second))
                child_anc = child_anc[sel]
                idx, sc, hs = idx[sel], sc[sel], hs[sel]
            anc = child_anc
            boards = ch_boards[idx]
            if len(idx) > len(counts):  # ties kept beyond the width (keep_ties)
                grown = len(idx) + W // 8
                codes_buf = np.zeros((grown, cap), np.int16)
                counts = np.zeros(grown, np.int64)
                counters = np.zeros((gens, grown), np.int64)
            scores, clears, heights, cells = sc, ch_clears[idx], hs, ch_cells[idx]
            trace_parent.append(ch_parent[idx].astype(np.int32))
            trace_code.append(ch_code[idx])
            halt = self.layer_stop(t, top, best[0], threshold, progress)
            if halt:
                stop, abort_piece, abort_threshold = halt
                break
        placed = best[1] + 1
        placements = np.zeros((placed, 3), np.int64)
        if placed:
            placements[best[1]] = unpack(best[3])
        i = best[2]
        for t in range(best[1] - 1, -1, -1):
            placements[t] = unpack(int(trace_code[t][i]))
            i = int(trace_parent[t][i])
        by_step, kinds = path_scores(placements, self.sequence, rules)
        last = len(trace_parent)
        return SolveResult(
            score=int(by_step[-1]) if placed else 0, pieces=placed, score_by_step=by_step,
            best_by_step=best_by_step[:last], clear_kinds=kinds, placements=placements, stop=stop,
            abort_piece=abort_piece, abort_threshold=abort_threshold, nodes=nodes)

    @staticmethod
    def _best_child(t, top, idx, hashes, score, quality, parent, code):
        """The best of layer ``t``'s children ``idx`` (after merging, before the distance filters and
        the cut, so it need not be kept): the score ``top``, then the higher quality, then the lower
        board hash. Returned as (score, piece, parent index, placement code)."""
        at_top = np.flatnonzero(score[idx] == top)
        i = idx[at_top[np.lexsort((hashes[at_top], -quality[idx[at_top]]))[0]]]
        return top, t, int(parent[i]), int(code[i])

    @staticmethod
    def _pick(rank, tie, quotas, depth, anc, heights, taken, counters, hcount, cfg):
        """The picks of one ranking: ``rank`` is its key, most significant first, larger first;
        ``tie`` orders nodes tied on it (smaller first, last most significant)."""
        want, quota, hmax = quotas
        keys = tie + tuple(-key for key in reversed(rank))
        matrix = np.column_stack([key.astype(np.float64) for key in rank]) if cfg.keep_ties else _NO_RANK
        return pick_in_order(keys, want, depth, anc, quota, heights, hmax, taken, counters, hcount, matrix,
                             cfg.keep_ties)

    @staticmethod
    def _quota(shares, picks, gens):
        out = np.full(gens, np.iinfo(np.int64).max, np.int64)
        for g, share in enumerate(shares):
            out[g] = max(1, int(picks * share))
        return out


def _threads() -> int:
    import numba

    return numba.get_num_threads()
