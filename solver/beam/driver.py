"""The beam policy (`Beam`): its kernel settings and initial state, and the search that runs the
layer loop a chunk at a time (progress, Ctrl-C, early abort)."""

from __future__ import annotations

import time

import numpy as np
from numba import get_num_threads

from engine._jit.decorators import KernelCall
from engine.movegen import capacity
from engine.outcome import Stop

from .._base import Policy, path_scores
from ..config import BeamConfig
from ..registry import register
from ..result import SolveResult
from .bundles import (
    ABORTED, BeamSettings, BeamState, CHUNK_SECONDS, Children, GOING, GROWTH_DIVISOR, N_SCALARS, Parents, STUCK,
    S_BEST_PIECE, S_BEST_SCORE, S_EXPANDED, S_LAYERS, S_NODES, THREAD_CHUNKS, TRACE_LAYERS,
)
from .expansion import LOCK_NODES, NODE_PLACEMENTS, PLACE_NODES, TIE_ORDERS, VALUE_KEPT, merge_equal_boards
from .layers import cut, next_layer, run_layers, trace_back



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
        top_row_free=cfg.top_row_free, tie_order=TIE_ORDERS.token(cfg.tie_break), tie_seed=cfg.tie_seed, keep_ties=cfg.keep_ties,
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
    tie_seed = "beam.tie_seed"
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
            "merge_equal_boards": KernelCall(merge_equal_boards, (st.kids, 0, st.merge_slot, st.merge_stamp, 0, 0)),
            "value_kept": KernelCall(VALUE_KEPT[threads], (picks, st.boards, st.scores, st.kids, 0, rules, spec, 0)),
            "cut": KernelCall(cut, (picks, picks, st.kids, st, cfg)),
            "next_layer": KernelCall(next_layer, (st, st.kids, picks, 0, 0, 0)),
            "trace_back": KernelCall(trace_back, (st,)),
            "path_scores": self.path_scores_call(),
        }

    def search(self, pruner, progress):
        rules, n_pieces = self.rules, self.pieces
        kernel_cfg, st = self.kernel_inputs()
        spec = self.evaluator.spec
        t, stop = 0, GOING
        step = 1
        abort_piece = abort_threshold = None
        stop_name = Stop.DONE.label
        while t < n_pieces:
            started = time.perf_counter()
            st, t_new, stop = run_layers(self.sequence, t, min(n_pieces, t + step), rules.kernel, spec, kernel_cfg,
                                         pruner.curve, st)
            elapsed = time.perf_counter() - started
            step = max(1, min(1000, int(step * CHUNK_SECONDS / max(elapsed, 1e-3)))) if t_new > t else step
            t = t_new
            if progress:
                progress(t, n_pieces, int(st.scalars[S_BEST_SCORE]))
            if stop == STUCK:
                stop_name = Stop.STUCK.label
                break
            if stop == ABORTED:
                stop_name, abort_piece, abort_threshold = Stop.ABORTED.label, t, float(pruner.curve[t - 1])
                break
            if self.interrupted and t < n_pieces:
                stop_name = Stop.INTERRUPTED.label
                break
        placements = trace_back(st)
        placed = len(placements)
        by_step, kinds = path_scores(placements, self.sequence, rules)
        layers = int(st.scalars[S_LAYERS])
        return SolveResult(
            score=int(by_step[-1]) if placed else 0, pieces=placed, score_by_step=by_step,
            best_by_step=st.best_by_step[:layers].copy(), clear_kinds=kinds, placements=placements, stop=stop_name,
            abort_piece=abort_piece, abort_threshold=abort_threshold, nodes=int(st.scalars[S_EXPANDED]))
