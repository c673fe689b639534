"""The profile DP policy (`ProfileDP`): the base, the layers run a chunk at a time, the record traced
back and replayed, and its report (`ProfileDPReport`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from engine.board import popcount
from engine.outcome import Stop

from .._base import ABORTED, GOING, STUCK, Path, Policy, new_path, path_result, path_scores
from ..config import ProfileDPConfig
from ..registry import register
from ..result import Report, SolveResult
from .base import BaseLimits, build_base, floor_of, window_heights
from .layer import expand_layer, merge_and_select
from .links import Links, best_index, peak_rss_mb, replay_moves, warm_layer_kernels
from .surfaces import (
    BASE_NODES, BITS, DropTables, LINK_BYTES, LayerBuffers, MIB, PROFILE_BITS, States, SurfaceKey, Window,
    drop_tables, free_rows, layer_buffers, profile_of,
)



# --------------------------------------------------------------------------- the policy
@dataclass(frozen=True)
class ProfileDPReport(Report):
    """The DP's account of its run (`SolveResult.report`, summary.json's ``profile_dp``): the base's
    ``base_pieces``, ``base_rows`` (rows below the window) and ``base_cells``; once layers ran, the
    ``states`` kept per layer, where the ``links`` were kept (``memory`` or ``disk``), the
    ``children`` valued and the ``distinct_children`` among them, and the process's ``peak_rss_mb``
    (None when no layer ran: the pieces ran out in the base, or the threshold stopped it)."""

    key = "profile_dp"
    base_pieces: int
    base_rows: int
    base_cells: int
    states: int | None = None
    links: str | None = None
    children: int | None = None
    distinct_children: int | None = None
    peak_rss_mb: float | None = None

    def summary(self) -> dict:
        out = {"base_pieces": self.base_pieces, "base_rows": self.base_rows, "base_cells": self.base_cells}
        if self.states is not None:
            out.update(states=self.states, links=self.links, children=self.children,
                       distinct_children=self.distinct_children, peak_rss_mb=self.peak_rss_mb)
        return out


@dataclass
class Base:
    """The base as `build_base` left it: ``pieces`` placed (their placements in ``path``), ``stop``
    (`GOING`: the DP starts on ``board``), the ``board``, and the `Window` over it (its floor and
    base cells those of the board's rows below the window)."""

    pieces: int
    stop: int
    board: np.ndarray
    path: Path
    window: Window

    def report(self) -> ProfileDPReport:
        """The base's part of the `ProfileDPReport` (no layers run)."""
        return ProfileDPReport(base_pieces=self.pieces, base_rows=len(self.board) - self.window.rows,
                               base_cells=self.window.base_cells)

    def heights(self) -> np.ndarray:
        """The window's column heights on the base's board."""
        h = np.zeros(self.window.width, np.int64)
        window_heights(self.board, self.window.rows, self.window.width, h)
        return h


@dataclass
class LayerRun:
    """What the layers found: the best state so far (``best_score``, its ``best_layer`` counted from
    the DP's first piece, and ``best_state``, its index there), the best score per piece
    (``best_by_step``), counts, why they stopped, and the traced-back moves (``codes``)."""

    best_by_step: np.ndarray
    nodes: int
    best_score: int = -1
    best_layer: int = -1
    best_state: int = 0
    children: int = 0
    distinct: int = 0
    layers: int = 0
    on_disk: bool = False
    stop: str = Stop.DONE.label
    abort_piece: int | None = None
    abort_threshold: float | None = None
    codes: np.ndarray | None = None

    def keep_best(self, states: States, layer: int) -> None:
        """The best state: the higher score, then the later layer, then the smaller profile."""
        i = best_index(states.profiles, states.scores)
        if states.scores[i] >= self.best_score:
            self.best_score, self.best_layer, self.best_state = int(states.scores[i]), layer, i


@register
class ProfileDP(Policy):
    name = "profile_dp"
    Settings = ProfileDPConfig

    def warm_up(self):
        """`Policy.warm_up`, and the layer kernels, which the two-piece warm-up never reaches (it
        ends inside the base)."""
        warm_layer_kernels(self.rules, self.window(), self.key())
        super().warm_up()

    def search(self, pruner, progress):
        tables = drop_tables(self.rules)
        base = self.base(tables)
        pieces, stop = self.base_stop(base, pruner)
        if stop != GOING:
            return self.base_result(base, pieces, stop, pruner)
        run = self.run_layers(base, tables, pruner, progress)
        return self.result(base, tables, run)

    # ---- settings
    def window(self) -> Window:
        """The `Window` of the settings on an empty base (no floor, no cells), checked."""
        window = min(self.config.profile_dp.window, self.rules.height)
        width = self.rules.width
        cap = window - free_rows(self.rules)
        if cap < 1:
            raise ValueError(f"profile_dp.window: {window} rows leave no room under the {free_rows(self.rules)} "
                             "rows kept free at the top")
        if width * BITS > PROFILE_BITS:
            raise ValueError(f"profile_dp: boards wider than {PROFILE_BITS // BITS} columns do not fit a packed "
                             "profile")
        return Window(window, width, cap, 0, 0)

    def key(self) -> SurfaceKey:
        cfg = self.config.profile_dp
        return SurfaceKey(cfg.key == "score_surface", float(cfg.cells_weight), float(cfg.bumpiness_weight))

    def links_on_disk(self, first: int) -> bool:
        """Whether the links of the layers from piece ``first`` on go to a temporary file."""
        cfg = self.config.profile_dp
        link_bytes = LINK_BYTES * cfg.states * (self.pieces - first)
        return cfg.links == "disk" or (cfg.links == "auto" and link_bytes > cfg.links_memory_mb * MIB)

    # ---- the base
    def base(self, tables: DropTables) -> Base:
        """The base, by a depth-first search in the evaluator's order; its window's floor and cells
        filled in."""
        window = self.window()
        limits = BaseLimits(window, min(self.config.profile_dp.base_cap, window.cap), BASE_NODES)
        path = new_path(self.pieces)
        pieces, stop, board = build_base(self.sequence, self.pieces, self.rules.kernel, self.evaluator.spec, tables,
                                         limits, path)
        cells = sum(popcount(np.int64(r)) for r in board[window.rows:])
        window = window._replace(floor=int(floor_of(board, window.rows, window.width)), base_cells=int(cells))
        return Base(int(pieces), int(stop), board, path, window)

    @staticmethod
    def base_stop(base: Base, pruner) -> tuple[int, int]:
        """(pieces, stop) of the base: its own, or `ABORTED` at the first piece where ``pruner``
        stops a search whose best is the base's score, 0 (nothing clears in the base)."""
        for t in range(base.pieces):
            if pruner.should_stop(t, 0):
                return t + 1, ABORTED
        return base.pieces, base.stop

    @staticmethod
    def base_result(base: Base, pieces: int, stop: int, pruner) -> SolveResult:
        """The result without a DP: the pieces ran out, no base was found (no path either), or the
        threshold stopped the base."""
        if stop == STUCK:
            pieces = 0
        result = path_result(0, pieces, stop, base.path, pruner, pieces)
        result.report = base.report()
        return result

    # ---- the layers
    def run_layers(self, base: Base, tables: DropTables, pruner, progress) -> LayerRun:
        """One layer per piece after the base, until the pieces run out, a layer keeps no state,
        or `Policy.layer_stop`; then the best state's moves are traced back."""
        run = LayerRun(best_by_step=np.zeros(self.pieces, np.int64), nodes=base.pieces)
        states = States(np.array([profile_of(base.heights())], np.int64), np.zeros(1, np.int64))
        buf = layer_buffers(self.config.profile_dp.states, int(tables.count.max()))
        links = Links(self.links_on_disk(base.pieces))
        try:
            for t in range(base.pieces, self.pieces):
                states = self.layer(t, states, base, tables, buf, links, run)
                if states is None:
                    break
                halt = self.layer_stop(t, run.best_by_step[t], run.best_score, pruner, progress)
                if halt:
                    run.stop, run.abort_piece, run.abort_threshold = halt
                    break
            run.codes = links.trace_back(run.best_layer, run.best_state)
        finally:
            links.close()
        run.layers, run.on_disk = links.count, links.on_disk
        return run

    def layer(self, t: int, states: States, base: Base, tables: DropTables, buf: LayerBuffers, links: Links,
              run: LayerRun) -> States | None:
        """Layer ``t`` (0-based piece): expand ``states``, merge and keep the best; returns the kept
        states, or None when there are none (``run.stop`` is then stuck)."""
        shape = int(self.sequence[t])
        n, nm = len(states.profiles), int(tables.count[shape])
        expand_layer(states, shape, t + 1, tables, base.window, self.rules.kernel, buf.children)
        k, u, top = merge_and_select(buf, n * nm, nm, self.config.profile_dp.states, base.window.width, self.key(),
                                     t)
        run.nodes += n
        run.children += n * nm
        run.distinct += u
        if k == 0:
            run.stop = Stop.STUCK.label
            return None
        kept = States(buf.kept.profiles[:k].copy(), buf.kept.scores[:k].copy())
        links.append(buf.links[:k])
        run.best_by_step[t] = top
        run.keep_best(kept, t - base.pieces)
        return kept

    # ---- the result
    def result(self, base: Base, tables: DropTables, run: LayerRun) -> SolveResult:
        """The traced-back path after the base, replayed by the engine, which must give the DP's
        best score."""
        first, placed = base.pieces, base.pieces + len(run.codes)
        placements = base.path.placements[:placed].copy()
        if not replay_moves(base.heights(), run.codes, self.sequence[first:placed], tables, base.window,
                            placements[first:]):
            raise RuntimeError("profile_dp: a traced-back move is not a transition")
        path, kinds = path_scores(placements, self.sequence, self.rules)
        if len(run.codes) and int(path[-1]) != run.best_score:
            raise RuntimeError(f"profile_dp: the traced-back path scores {int(path[-1]):,}, the DP "
                               f"{run.best_score:,}")
        report = replace(base.report(), states=self.config.profile_dp.states,
                         links="disk" if run.on_disk else "memory", children=int(run.children),
                         distinct_children=int(run.distinct), peak_rss_mb=round(peak_rss_mb(), 1))
        return SolveResult(
            score=int(path[-1]) if placed else 0, pieces=placed, score_by_step=path,
            best_by_step=run.best_by_step[:first + run.layers], clear_kinds=kinds, placements=placements,
            stop=run.stop, abort_piece=run.abort_piece, abort_threshold=run.abort_threshold, nodes=run.nodes,
            report=report)
