"""The solver's configuration: one schema, the single source of truth for keys, types, defaults and
the configuration reference. Files are read by `engine.config`; this module only validates data.

A solver configuration (`solver.registry.SolverConfig`) holds the keys every run has (`SolverKeys`)
and, made by `solver_model` for the registry of policies (`solver.registry`), the `policy` key (one
of the registered names) and one section per registered policy with settings, named after it, plus
the sections several policies share (`registered_fields`). The sections of the policies of the
known sequence are defined here; a policy for unknown pieces defines its own in its module
(`solver/online/`).
"""

from __future__ import annotations

import os
from typing import Literal, Mapping, Union

from pydantic import BaseModel, Field, ValidationInfo, create_model, field_validator, model_validator

from engine import PRESETS, get_rules
from engine.memory import Need, check
from engine.validation import Strict, runs_here


class GreedyConfig(Strict):
    """``greedy``: the placement with the highest evaluator value (ties: the evaluator's
    tie-break, then the first generated)."""


class LookaheadConfig(Strict):
    """``lookahead``: a depth-first search over the next ``depth`` known pieces. At each depth only
    the best ``keep_fraction`` of the children (by evaluator value, at least one) are searched
    further. A path's worth is the sum of the evaluator values along it (``objective: sum``, as the
    881,026 Go solver) or the value of its last board (``objective: last``)."""

    depth: int = Field(2, ge=1, le=8, description="pieces searched ahead, the current one included")
    keep_fraction: float = Field(0.25, gt=0, le=1, description="share of children searched further at each depth")
    objective: Literal["sum", "last"] = Field("sum", description="sum of values along a path, or the last value")


class BeamConfig(Strict):
    """``beam``: a beam over whole boards, the design of the 1,395,326 record. Every kept node is
    expanded; children with the same board are merged (higher score, then fewer clears); children
    breaking a hard rule are dropped; the rest is cut back to ``width`` nodes, a ``score_share`` by
    the score ranking and the rest by the quality ranking, under height and ancestor quotas."""

    width: int = Field(1000, ge=1, description="nodes kept per piece (W)")
    placements: Literal["all", "lowest"] = Field(
        "all", description="expand every placement, or only the lowest of each (state, column) as the 1,395,326 solver did")
    score_share: float = Field(0.163, ge=0, le=1, description="share of W picked by the score ranking")
    score_ranking: Literal["score_per_clear", "score"] = Field(
        "score_per_clear",
        description="score picks by (score x 10^4 / max(clears, 1), score, quality) or by (score, quality)")
    quality_ranking: Literal["quality", "score_then_quality"] = Field(
        "quality", description="quality picks by (quality, score) or by (score, quality)")
    height_quota_score: float = Field(0.210, gt=0, le=1, description="most score picks with one occupied height, as a share of the score picks")
    height_quota_quality: float = Field(0.355, gt=0, le=1, description="the same for the quality picks")
    ancestor_quotas_score: list[float] = Field(
        [0.3, 0.5, 0.7, 0.9], max_length=8,
        description="most score picks sharing an ancestor 1, 2, 3, ... generations up, as shares of the score picks")
    ancestor_quotas_quality: list[float] = Field([0.3, 0.5, 0.7, 0.9], max_length=8, description="the same for the quality picks")
    score_gap: int = Field(2200, ge=0, description="drop nodes more than this many points below the layer's best")
    height_gap: int = Field(6, ge=0, description="drop nodes whose stack is more than this many rows lower than the layer's tallest")
    clear_min_height: list[int] = Field(
        [16, 16, 17, 17], min_length=4, max_length=4,
        description="clearing 1, 2, 3, 4 rows needs a parent stack at least this tall (occupied height)")
    clear_min_cells: list[int] = Field(
        [126, 126, 135, 135], min_length=4, max_length=4,
        description="clearing 1, 2, 3, 4 rows needs at least this many cells on the parent board")
    endgame_pieces: int = Field(
        0, ge=0,
        description="in the last this many pieces played the clear rules (clear_min_height, clear_min_cells) are off: no later clear needs the cells")
    top_row_free: bool = Field(
        False, description="drop children whose lock occupies the top row (before clearing), as the 1,395,326 solver did")
    tie_break: Literal["hash", "board"] = Field(
        "hash",
        description="order of nodes tied on a ranking: by a hash of the board, or by the board's rows read as five "
                    "64-bit words of four rows each, top word first, larger first (as the 1,395,326 solver)")
    tie_seed: int = Field(
        0, ge=0, lt=2**63, description="the order of nodes of equal value under the `hash` tie order (0: the default "
                                       "order, which the records were made with); another seed draws another order of "
                                       "ties only: an instance of the Geek game for racing")
    keep_ties: bool = Field(
        False,
        description="once a ranking's picks are made, also keep the next nodes within the quotas whose ranking key "
                    "equals the last pick's (as the 1,395,326 solver); a layer can then exceed width")
    sky_rows: int = Field(5, ge=0, description="drop boards whose top sky_rows occupied rows ...")
    sky_max_cells: int = Field(3, ge=0, description="... each hold at most this many cells (0 rows: rule off)")

    @field_validator("ancestor_quotas_score", "ancestor_quotas_quality")
    @classmethod
    def _shares(cls, v):
        if any(not 0 < q <= 1 for q in v):
            raise ValueError("every quota must be in (0, 1]")
        return v

    @model_validator(mode="after")
    def _tie_seed_orders_hashes(self):
        if self.tie_seed and self.tie_break != "hash":
            raise ValueError("tie_seed: draws the order of the `hash` tie order; tie_break: board orders ties by the "
                             "boards' rows")
        return self

    def memory(self, config: "SolverKeys") -> list[Need]:
        """What the search allocates (`engine.memory`; measured on the Geek game, 16 KB a node and
        16 bytes a node per piece): per node kept, room for its placements' codes, about 6 children
        per column of the board with their boards, merge table and sort buffers (buffers grow by
        doubling), and the trace of every layer's nodes (parent and placement, doubling too)."""
        from engine.movegen import capacity

        rules, pieces = config.game_rules(), config.played()
        cap = self.width + self.width // 8 + 1
        per_node = 2 * capacity.py_func(rules.height, rules.width) + 6 * rules.width * (2 * rules.height + 160)
        return [Need("beam.width", f"{self.width:,} nodes over {pieces:,} pieces", cap * (per_node + 16 * pieces))]


class ProfileDPConfig(Strict):
    """``profile_dp``: dynamic programming over hole-free surfaces of the top ``window`` rows (the
    ≈1.2 M GPU design). The rows below are a base, built first by the evaluator (its greedy path,
    backtracking where that gets stuck) without clears; then one layer per piece: every state (a column-height profile) is expanded with each
    placement that keeps the surface hole-free, equal profiles keep the higher score, and the best
    ``states`` by ``key`` are kept. The top 3 rows are kept empty so every placement has a route."""

    window: int = Field(10, ge=5, le=20, description="rows of the profile window; the rows below it are the base")
    base_cap: int = Field(1, ge=0, description="most rows the base builder may stack into the window")
    states: int = Field(10000, ge=1, le=2**26, description="K: states kept per layer")
    key: Literal["score", "score_surface"] = Field(
        "score_surface", description="keep states by score, or by score + cells_weight x window cells + bumpiness_weight x bumpiness")
    cells_weight: float = Field(20.0, description="score_surface: points per cell in the window")
    bumpiness_weight: float = Field(-5.0, description="score_surface: points per unit of sum |h[i] - h[i+1]| (column heights)")
    links: Literal["auto", "memory", "disk"] = Field(
        "auto", description="where parent links are kept: memory, a temporary file, or auto (disk above links_memory_mb)")
    links_memory_mb: int = Field(1024, ge=0, description="auto: the most link memory before links go to disk")

    def memory(self, config: "SolverKeys") -> list[Need]:
        """What the layers allocate (`engine.memory`; measured: 1.9 KB a state over 120 pieces): per
        state, its children (about 4 moves per column, 16 bytes each), the merge's hash table (2 to 4
        slots of 16 bytes per child) and, when kept in memory, a 4-byte link per piece."""
        rules, pieces = config.game_rules(), config.played()
        links = 4 * pieces if self.links == "memory" or (
            self.links == "auto" and 4 * self.states * pieces <= self.links_memory_mb * 2**20) else 0
        per_state = 48 * 4 * rules.width + 32 + links
        return [Need("profile_dp.states", f"{self.states:,} states over {pieces:,} pieces", self.states * per_state)]


EvaluatorSource = Union[str, dict]


class BacksearchConfig(Strict):
    """``backsearch``: the 881,026 Go solver's approach. Optionally a base first: the bottom
    ``base_rows`` rows are stacked by the survival lookahead so that each holds exactly one empty
    cell (none of them cleared meanwhile). Then pieces are chosen by the points-first lookahead; when its
    search finds that every path dies (the point of death), the last ``backup`` pieces are undone
    and replayed by the survival-first lookahead up to the point of death, after which points-first
    play resumes. Each lookahead is the `lookahead` policy's search (depth, kept fraction,
    objective)."""

    points_evaluator: EvaluatorSource | None = Field(
        "backsearch_points",
        description="points-first evaluator: a preset name, a YAML path, or an inline mapping (null: the top-level evaluator)")
    survival_evaluator: EvaluatorSource = Field(
        "pierre_dellacherie", description="survival-first evaluator (base building and replays after a death)")
    base_rows: int = Field(6, ge=0, description="rows of the base, each left with one empty cell (0: no base)")
    base_max_pieces: int = Field(60, ge=0, description="the base is given up if not done after this many pieces")
    base_cell_value: float = Field(
        100.0, description="while building the base: added to the survival value per occupied cell in the base rows")
    depth: int = Field(6, ge=1, le=8, description="points-first lookahead: pieces searched ahead, the current one included")
    keep_fraction: float = Field(0.1, gt=0, le=1, description="points-first lookahead: share of children searched further at each depth")
    survival_depth: int = Field(3, ge=1, le=8, description="survival-first lookahead depth (base building and replays)")
    survival_keep_fraction: float = Field(0.25, gt=0, le=1, description="survival-first lookahead: share of children searched further")
    objective: Literal["sum", "last"] = Field("sum", description="a path's worth in both lookaheads: sum of values, or the last value")
    backup: int = Field(20, ge=0, description="pieces undone at a death before the survival-first replay")
    max_backups: int = Field(4, ge=0, description="back-ups after the first, each backup pieces further back, when a replay dies too (per point of death)")

    @field_validator("points_evaluator", "survival_evaluator")
    @classmethod
    def _named(cls, v):
        if isinstance(v, str) and not v.strip():
            raise ValueError("must name a preset or a file")
        return v


#: every key whose value is an evaluator source (a preset name, a YAML path or an inline mapping);
#: a key inside a policy's section is read only by that policy
EVALUATOR_KEYS = ("evaluator", "backsearch.points_evaluator", "backsearch.survival_evaluator")


#: the docstring of every model `solver_model` makes
SCHEMA_DOC = ("A solver run: which policy plays which pieces with which evaluator, and the settings of each "
              "registered policy (its section).")


class SolverKeys(Strict):
    """A solver run: which policy plays which pieces with which evaluator."""

    policy: str = Field("beam", description="the search policy (one of the registered policies)")
    rules: Literal[tuple(PRESETS)] = Field("geek", description="rules preset")
    seed: int | None = Field(None, ge=0, description="piece source seed (random-piece rules; default the preset's)")
    pieces: int | None = Field(
        None, ge=1,
        description="pieces to play (default: all that can score; the Geek game's 10,000th piece never scores)")
    evaluator: EvaluatorSource = Field(
        "chys_quality",
        description="evaluator: a preset name, a YAML path, or an inline mapping (for beam: its quality; for profile_dp: the base builder)")
    floating: bool = Field(
        False,
        description="also offer the policy mid-air locks that clear rows: positions a piece reaches without resting "
                    "where locking completes a row (the contest locks a piece where it stands when the next N "
                    "comes); rules of single steps only")
    floating_min_rows: int = Field(
        1, ge=1, le=4, description="floating: the fewest rows a mid-air lock must clear (4: only four-row clears)")
    threads: int | None = Field(None, ge=1, description="numba threads (default: all cores)")
    meta: dict | None = Field(None, description="free-form notes (e.g. where a tuned config came from); ignored by the solver")

    def evaluator_keys(self) -> tuple[str, ...]:
        """The `EVALUATOR_KEYS` this configuration's policy reads."""
        return tuple(k for k in EVALUATOR_KEYS if "." not in k or k.split(".")[0] == self.policy)

    @model_validator(mode="after")
    def _complete(self):
        if isinstance(self.evaluator, str) and not self.evaluator.strip():
            raise ValueError("evaluator: must name a preset or a file")
        if self.pieces is None and get_rules(self.rules).piece_limit is None:
            raise ValueError(f"pieces: required for rules {self.rules!r}, which have no piece limit")
        if self.floating and get_rules(self.rules).placement == "drop":
            raise ValueError(f"floating: rules {self.rules!r} place pieces by dropping them, so nothing locks in mid-air")
        online, splitting = getattr(self, "online", None), getattr(self, "splitting", None)  # (registered sections)
        if online is not None and splitting is not None and online.estimate == "splitting":
            splitting.check(get_rules(self.rules).height)  # "splitting.levels: ..." names its key
        return self

    @model_validator(mode="after")
    def _fits_memory(self, info: ValidationInfo):
        """Refuse sizes whose search would allocate more memory than there is (`engine.memory`):
        the estimate of the policy's section and of the shared sections (``online``), each a
        section's ``memory(config)``, is made before anything is allocated (not for a configuration
        read back, `engine.validation.WRITTEN_ELSEWHERE`)."""
        if not runs_here(info):
            return self
        # the sections are this model's own fields (its registry made them): a policy's is named after
        # it, the others are shared (``online``); the policy's names are its ``policy`` field's choices
        fields = type(self).model_fields
        names = set(getattr(fields["policy"].annotation, "__args__", ()))
        if self.policy not in names:
            return self
        shared = [key for key, f in fields.items()
                  if key not in names and isinstance(f.annotation, type) and issubclass(f.annotation, BaseModel)]
        needs: list[Need] = []
        for key in (self.policy, *shared):
            estimate = getattr(getattr(self, key, None), "memory", None)
            if callable(estimate):
                needs += estimate(self)
        check(needs)
        return self

    def played(self) -> int:
        """The pieces a search of the known sequence plays (`solver.solve.default_pieces` when
        ``pieces`` is not given); for unknown pieces, the cap per game."""
        limit = get_rules(self.rules).piece_limit
        pieces = self.pieces if self.pieces is not None else (limit or 1) - 1
        return max(1, min(pieces, limit) if limit is not None else pieces)

    def busy_threads(self) -> int:
        """numba threads this process runs at once (``threads``, default every CPU)."""
        return self.threads or os.cpu_count() or 1

    def game_rules(self):
        """The rules the policy plays by: the preset, with mid-air clears among the placements
        when ``floating``, clearing at least ``floating_min_rows`` rows (`engine.rules.Rules.floating`;
        the game itself is the preset's)."""
        rules = get_rules(self.rules)
        return rules.floating(self.floating_min_rows) if self.floating else rules


def registered_fields(policies: Mapping[str, bool], sections: Mapping[str, type[BaseModel]]) -> dict[str, tuple]:
    """The fields (``create_model`` definitions) the registry adds to `SolverKeys`: ``policy``, one
    of ``policies`` (name -> whether it plays the known sequence), and a section per key of
    ``sections`` (its model, defaults when absent)."""
    names = tuple(policies)
    known = ", ".join(n for n in names if policies[n])
    unknown = ", ".join(n for n in names if not policies[n])
    description = (f"the search policy; for the known sequence: {known or '(none)'}; for unknown pieces (scored on "
                   f"seeded games, see online): {unknown or '(none)'}. A policy's settings are the section named "
                   "after it")
    default = SolverKeys.model_fields["policy"].default
    fields: dict[str, tuple] = {
        "policy": (Literal[names] if names else str, Field(default, description=description))}
    for key, model in sections.items():
        fields[key] = (model, Field(default_factory=model))
    return fields


def solver_model(fields: dict[str, tuple]) -> type[SolverKeys]:
    """A new model: `SolverKeys` with ``fields`` (`registered_fields`)."""
    return create_model("SolverConfig", __base__=SolverKeys, __module__=__name__, __doc__=SCHEMA_DOC, **fields)
