"""The rules of a game of the family, as data.

A `Rules` value says everything the kernels need to play one member of the family: the board size,
the shape and state tables, where and in which state a piece appears, where the pieces come from,
how a lock is scored, when the game is over and how many pieces it has at most. The kernels in
`engine/` take the arrays derived here; a new variant is a new preset, never a new kernel. Terms
used across the engine:

- *shape*: one of the seven pieces, indexed 0..6 in the order I, L, J, T, O, S, Z for every preset.
- *state*: one of a shape's four orientations, 0..3; a rotation goes from state s to (s + 1) mod 4.
- *centre*: the anchor (cx, cy) of a piece; its cells are (cx + dx, cy + dy) for the state's four
  offsets (dx, dy). x grows to the right, y downwards (y = 0 is the top row).
- *position*: (x, y, state) of the centre; *valid* when every cell has 0 <= x < width, y < height,
  and is above the board (y < 0) or on an empty cell. In full: docs/engine.md, 'Rules as data'.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from typing import Any, NamedTuple

import numpy as np

from ._jit.dispatch import Fixed, FunctionTable
from .registry import Registry

SHAPE_NAMES = ("I", "L", "J", "T", "O", "S", "Z")

#: Geek contest offsets (dx, dy) per shape and state, as in GEEK_RULES.md.
GEEK_OFFSETS = {
    "I": [[(0, 0), (0, -1), (0, -2), (0, 1)], [(0, 0), (1, 0), (2, 0), (-1, 0)]] * 2,
    "L": [
        [(0, 0), (0, -1), (0, -2), (1, 0)],
        [(0, 0), (1, 0), (2, 0), (0, 1)],
        [(0, 0), (-1, 0), (0, 1), (0, 2)],
        [(0, 0), (0, -1), (-1, 0), (-2, 0)],
    ],
    "J": [
        [(0, 0), (0, -1), (0, -2), (-1, 0)],
        [(0, 0), (0, -1), (1, 0), (2, 0)],
        [(0, 0), (1, 0), (0, 1), (0, 2)],
        [(0, 0), (-1, 0), (-2, 0), (0, 1)],
    ],
    "T": [
        [(0, 0), (1, 0), (0, 1), (-1, 0)],
        [(0, 0), (0, -1), (0, 1), (-1, 0)],
        [(0, 0), (0, -1), (1, 0), (-1, 0)],
        [(0, 0), (0, -1), (1, 0), (0, 1)],
    ],
    "O": [[(0, 0), (0, -1), (1, -1), (1, 0)]] * 4,
    "S": [[(0, 0), (0, -1), (1, -1), (-1, 0)], [(0, 0), (-1, 0), (-1, -1), (0, 1)]] * 2,
    "Z": [[(0, 0), (0, -1), (1, 0), (-1, -1)], [(0, 0), (0, -1), (-1, 1), (-1, 0)]] * 2,
}

#: Classic game matrices (CLASSIC_RULES.md): four 4x4 boxes per shape, rows top to bottom.
CLASSIC_MATRICES = {
    "I": ["..#. ..#. ..#. ..#.", ".... #### .... ....", "..#. ..#. ..#. ..#.", ".... #### .... ...."],
    "L": ["..#. ..#. ..## ....", ".... .### .#.. ....", ".##. ..#. ..#. ....", "...# .### .... ...."],
    "J": ["..#. ..#. .##. ....", ".#.. .### .... ....", "..## ..#. ..#. ....", ".... .### ...# ...."],
    "T": [".... .### ..#. ....", "..#. .##. ..#. ....", "..#. .### .... ....", "..#. ..## ..#. ...."],
    "O": [".... .##. .##. ...."] * 4,
    "S": [".... ..## .##. ....", ".#.. .##. ..#. ....", ".... ..## .##. ....", ".#.. .##. ..#. ...."],
    "Z": [".... .##. ..## ....", "..#. .##. .#.. ....", ".... .##. ..## ....", "..#. .##. .#.. ...."],
}


#: The literature's simplified game (Thiéry and Scherrer's MdpTetris, ``data/pieces4.dat``): each
#: shape's distinct orientations in that simulator's order (the first as its piece file draws it, each
#: next one turned a quarter counter-clockwise), as boxes written top row first. The anchor (dx, dy)
#: = (0, 0) is the box's top-left corner, so a drop placement's x is the box's leftmost column
#: (MdpTetris's 1-based ``column`` minus one) and its state is MdpTetris's orientation; a shape with
#: fewer than four orientations repeats them (state s has orientation s mod n).
STANDARD_MATRICES = {
    "I": ["# # # #", "####"],
    "L": ["### #..", "#. #. ##", "..# ###", "## .# .#"],
    "J": ["#.. ###", ".# .# ##", "### ..#", "## #. #."],
    "T": ["#. ## #.", ".#. ###", ".# ## .#", "### .#."],
    "O": ["## ##"],
    "S": ["#. ## .#", ".## ##."],
    "Z": [".# ## #.", "##. .##"],
}


def offsets_from_matrix(matrix: str) -> list[tuple[int, int]]:
    """Offsets (column, row) of the `#` cells of a box written as space-separated rows, top first."""
    rows = matrix.split()
    return [(x, y) for y, row in enumerate(rows) for x, ch in enumerate(row) if ch == "#"]


@dataclass(frozen=True)
class PieceSource:
    """Where the pieces come from.

    - ``kind="lcg"``: a fixed sequence. ``v`` starts at ``seed``; before each piece
      ``v = (v * multiplier + increment) mod modulus`` and ``w = v mod sum(weights)`` picks the shape
      whose cumulative weight range holds ``w`` (shapes in the order I, L, J, T, O, S, Z).
    - ``kind="uniform"``: shapes drawn uniformly from numpy's PCG64 generator seeded with ``seed``.
    """

    kind: str = "lcg"
    seed: int = 12358
    multiplier: int = 27073
    increment: int = 17713
    modulus: int = 32749
    weights: tuple[int, ...] = (2, 3, 3, 4, 5, 6, 6)

    def sequence(self, n: int, seed: int | None = None) -> np.ndarray:
        """The first ``n`` shapes (int8 array); ``seed`` overrides the source's own seed."""
        seed = self.seed if seed is None else seed
        if self.kind == "uniform":
            return np.random.Generator(np.random.PCG64(seed)).integers(0, 7, size=n).astype(np.int8)
        if self.kind != "lcg":
            raise ValueError(f"unknown piece source kind {self.kind!r} (expected 'lcg' or 'uniform')")
        return _lcg_sequence(n, seed, self.multiplier, self.increment, self.modulus, self.weights).copy()

    def stream(self, seed: int | None = None) -> "PieceStream":
        """The same sequence drawn a part at a time (`PieceStream`): a game of millions of pieces
        never holds them all."""
        return PieceStream(self, self.seed if seed is None else seed)


class PieceStream:
    """`PieceSource.sequence` a part at a time: ``take(n)`` returns the next ``n`` shapes (int64), so
    that the parts joined are exactly ``sequence(total, seed)`` (numpy's generator keeps its state
    between draws, the ``lcg`` its value)."""

    def __init__(self, source: PieceSource, seed: int):
        self.source = source
        if source.kind == "uniform":
            self._rng = np.random.Generator(np.random.PCG64(seed))
        elif source.kind == "lcg":
            self._v = seed
            self._bounds = np.cumsum(source.weights)
        else:
            raise ValueError(f"unknown piece source kind {source.kind!r} (expected 'lcg' or 'uniform')")

    def take(self, n: int) -> np.ndarray:
        if self.source.kind == "uniform":
            return self._rng.integers(0, 7, size=n).astype(np.int64)
        s = self.source
        draws = np.empty(n, np.int64)
        v = self._v
        for i in range(n):
            v = (v * s.multiplier + s.increment) % s.modulus
            draws[i] = v
        self._v = v
        return np.searchsorted(self._bounds, draws % int(self._bounds[-1]), side="right").astype(np.int64)


@lru_cache(maxsize=8)
def _lcg_sequence(n: int, seed: int, multiplier: int, increment: int, modulus: int, weights: tuple[int, ...]):
    """`PieceSource.sequence` of an ``lcg`` source (kept: a run asks for the same one several times)."""
    draws = []
    v = seed
    for _ in range(n):
        v = (v * multiplier + increment) % modulus
        draws.append(v)
    bounds = np.cumsum(weights)
    out = np.searchsorted(bounds, np.asarray(draws, np.int64) % int(bounds[-1]), side="right").astype(np.int8)
    out.setflags(write=False)
    return out


class KernelRules(NamedTuple):
    """The rules as numba kernels read them (`Rules.kernel`; numba compiles it as a tuple whose
    fields are read by name).

    ``cells[shape, state]``: the (4, 2) offsets (dx, dy); ``alias[shape, state]``: the lowest state
    with the same cells; ``periods[shape]``: `Rules.periods`; ``scores[f]``: the table for ``f`` full rows; ``cycle_states``: pieces
    spawn in state ``index mod 4`` (else 0); ``piece_limit``: -1 for none; ``step_limit``:
    ``max_steps``, or -1 for drop-only placements (the move generator's bound); ``max_steps``: the
    steps a route may take (a record's bound, drop-only rules included); ``full_row``: a full
    row's bits; ``overflow``: the index of `Rules.overflow` in `OVERFLOW_RULES` (`OVERFLOW_DISCARD`,
    `OVERFLOW_END`, `OVERFLOW_CLEAR_FIRST`) as a `engine._jit.dispatch.Fixed` (kernels read it with
    ``fixed(rules.overflow)``: a constant when they are compiled, so the contest's kernels hold no
    overflow code); ``preview``: whether a policy is shown the next piece; ``floating``: 0, or the
    fewest rows a mid-air lock must clear to be a placement (`Rules.placement` ``"floating"``,
    `Rules.floating_min_rows`);
    ``placements`` and ``lowest_placements``: the move generator's entries for `Rules.placement`
    (`PLACEMENTS`, `LOWEST_PLACEMENTS`), chosen when a kernel is compiled, so that a kernel holds only
    the placement code of its rules."""

    cells: np.ndarray
    alias: np.ndarray
    periods: np.ndarray
    scores: np.ndarray
    width: int
    height: int
    spawn_x: int
    spawn_y: int
    cycle_states: bool
    score_by_cells: bool
    top_out_all_rows: bool
    spawn_must_drop: bool
    piece_limit: int
    step_limit: int
    max_steps: int
    full_row: int
    overflow: Any
    preview: bool
    floating: int
    placements: Any
    lowest_placements: Any


#: `Rules.placement`: which positions the move generator offers (see `Rules`)
PLACEMENT_RULES = ("reachable", "floating", "drop")
#: `Rules.overflow`: what a lock does with cells of the piece above the board's top row
OVERFLOW_RULES = ("discard", "end", "clear_first")
OVERFLOW_DISCARD, OVERFLOW_END, OVERFLOW_CLEAR_FIRST = range(len(OVERFLOW_RULES))
#: how placements are generated, chosen by the rules (`Rules.generator`) when a kernel is compiled:
#: a kernel compiled for drop-only rules holds no move search, and the reverse (`KernelRules`'s
#: ``placements`` and ``lowest_placements`` tokens). The move generator (`engine.movegen`, imported
#: with the engine) registers its kernels into them and dispatches on them.
PLACEMENTS = FunctionTable("rules.placements")
LOWEST_PLACEMENTS = FunctionTable("rules.lowest_placements")


@dataclass(frozen=True)
class Rules:
    """One game of the family.

    Scoring: a lock that fills ``f`` rows scores ``score_table[f]``, multiplied by the number of
    occupied cells on the board (counted after locking, before clearing) when ``score_by_cells``.
    Game over:
    - ``top_out == "all_rows"``: after a lock, if every row holds an occupied cell ("top touched");
      the piece scores nothing;
    - ``overflow`` (cells of the locked piece above the board's top row): ``"discard"``, they are
      dropped and the game goes on (the contest engine); ``"end"``, the lock ends the game
      ("overflow"), nothing is cleared and the piece scores nothing (MdpTetris's simplified game with
      ``allow_lines_after_overflow`` 0); ``"clear_first"``, the full rows are cleared first, the
      cells above move down with the rows above the cleared ones, and only a cell still above the
      top row ends the game ("overflow", the piece scoring nothing), else they stay on the board
      (``allow_lines_after_overflow`` 1);
    - the piece numbered ``piece_limit`` (1-based) ends the game when it locks and scores nothing;
    - a new piece whose spawn position is invalid ("spawn blocked"), or, with ``spawn_must_drop``,
      that cannot move down one row from it.
    Spawn: centre (spawn_x, spawn_y), state ``piece_index mod 4`` when ``spawn_state == "cycle"``,
    else state 0.
    Placements: ``"reachable"``, every resting position reachable from the spawn by at most
    ``max_steps`` single steps (tucks and slides included); ``"floating"``, those and every reached
    position that does not rest but completes a row when locked where it stands (a lock in mid-air:
    the contest locks a piece wherever it is when the next piece comes; `Rules.floating`);
    ``"drop"``, the piece is rotated and
    shifted above the board and falls straight down until it rests (no slides under overhangs), and
    only a resting position wholly inside the board counts, except under ``overflow ==
    "clear_first"``, where every resting position does (the lock then judges it). With ``"drop"``
    the spawn is never blocked: the game ends when a piece has no placement (under ``overflow ==
    "end"`` this is the game over: every position leaves a cell above the top row).
    Preview: ``preview``, a policy is shown the next piece as well as the current one.
    """

    name: str
    width: int
    height: int
    offsets: tuple  # shape -> state -> four (dx, dy)
    spawn_x: int
    spawn_y: int
    spawn_state: str  # "cycle" or "zero"
    pieces: PieceSource
    score_table: tuple[int, int, int, int, int]
    score_by_cells: bool
    top_out: str  # "all_rows" or "none"
    spawn_must_drop: bool
    piece_limit: int | None
    max_steps: int = 100  # unit steps allowed per piece (the contest's limit)
    placement: str = "reachable"  # one of PLACEMENT_RULES (see above)
    floating_min_rows: int = 1  # "floating": the fewest rows a mid-air lock must clear
    overflow: str = "discard"  # one of OVERFLOW_RULES (see above)
    preview: bool = True  # a policy sees the next piece too

    def __post_init__(self):
        if not 4 <= self.width <= 16:
            raise ValueError(f"rules {self.name!r}: width must be 4..16 (boards are 16-bit rows)")
        if not 4 <= self.height <= 60:
            raise ValueError(f"rules {self.name!r}: height must be 4..60")
        if self.spawn_y < 0:
            raise ValueError(f"rules {self.name!r}: spawn_y must be >= 0")
        if self.spawn_state not in ("cycle", "zero"):
            raise ValueError(f"rules {self.name!r}: spawn_state must be 'cycle' or 'zero'")
        if self.placement not in PLACEMENT_RULES:
            raise ValueError(f"rules {self.name!r}: placement must be one of {', '.join(PLACEMENT_RULES)}")
        if self.top_out not in ("all_rows", "none"):
            raise ValueError(f"rules {self.name!r}: top_out must be 'all_rows' or 'none'")
        if self.overflow not in OVERFLOW_RULES:
            raise ValueError(f"rules {self.name!r}: overflow must be one of {', '.join(OVERFLOW_RULES)}")
        if self.overflow == "clear_first" and self.width < 5:
            raise ValueError(f"rules {self.name!r}: overflow 'clear_first' needs a width of at least 5 "
                             "(four cells above the board could otherwise fill a row there)")
        cells = self.cells
        if np.abs(cells).max() > 3:
            raise ValueError(f"rules {self.name!r}: offsets must lie within -3..3")
        for s in range(7):
            sets = [frozenset(map(tuple, cells[s, k])) for k in range(4)]
            for a in range(4):
                for b in range(a):
                    if sets[a] != sets[b] and _same_up_to_translation(sets[a], sets[b]):
                        raise ValueError(
                            f"rules {self.name!r}: shape {SHAPE_NAMES[s]} states {b} and {a} have the "
                            "same cells up to a shift; give them identical offsets"
                        )

    @cached_property
    def cells(self) -> np.ndarray:
        """Offsets as an int64 array of shape (7, 4, 4, 2): shape, state, cell, (dx, dy)."""
        return np.array(self.offsets, dtype=np.int64).reshape(7, 4, 4, 2)

    @cached_property
    def alias(self) -> np.ndarray:
        """``alias[shape, state]``: the lowest state with exactly the same offsets (same cells)."""
        out = np.zeros((7, 4), dtype=np.int64)
        c = self.cells
        for s in range(7):
            for k in range(4):
                out[s, k] = next(j for j in range(4) if set(map(tuple, c[s, j])) == set(map(tuple, c[s, k])))
        return out

    @cached_property
    def periods(self) -> np.ndarray:
        """``periods[shape]``: 1, 2 or 4, the least p such that state s has the cells of state
        s mod p and states 0 .. p-1 differ (O: 1; I, S, Z: 2; L, J, T: 4). A rotation then takes the
        class s mod p to (s + 1) mod p, so the move generator may search the p classes instead of
        the four states; an irregular pattern gets 4 (no reduction)."""
        out = np.full(7, 4, np.int64)
        a = self.alias
        for s in range(7):
            for p in (1, 2):
                if all(a[s, k] == a[s, k % p] for k in range(4)) and len({int(a[s, k]) for k in range(p)}) == p \
                        and all(a[s, k] == k for k in range(p)):
                    out[s] = p
                    break
        return out

    @cached_property
    def scores(self) -> np.ndarray:
        return np.array(self.score_table, dtype=np.int64)

    def spawn_state_of(self, index: int) -> int:
        """State in which the piece of 0-based ``index`` appears."""
        return index % 4 if self.spawn_state == "cycle" else 0

    def sequence(self, n: int | None = None, seed: int | None = None) -> np.ndarray:
        """The first ``n`` shapes (default: ``piece_limit``)."""
        if n is None:
            if self.piece_limit is None:
                raise ValueError(f"rules {self.name!r} have no piece limit: give the number of pieces")
            n = self.piece_limit
        return self.pieces.sequence(n, seed)

    @cached_property
    def kernel(self) -> KernelRules:
        """The rules as the kernels read them (`KernelRules`)."""
        return KernelRules(
            cells=self.cells, alias=self.alias, periods=self.periods, scores=self.scores, width=self.width, height=self.height,
            spawn_x=self.spawn_x, spawn_y=self.spawn_y, cycle_states=self.spawn_state == "cycle",
            score_by_cells=self.score_by_cells, top_out_all_rows=self.top_out == "all_rows",
            spawn_must_drop=self.spawn_must_drop, piece_limit=-1 if self.piece_limit is None else self.piece_limit,
            step_limit=self.step_limit, max_steps=self.max_steps, full_row=self.full_row,
            overflow=Fixed(OVERFLOW_RULES.index(self.overflow)), preview=self.preview,
            floating=self.floating_min_rows if self.placement == "floating" else 0, placements=PLACEMENTS.token(self.generator),
            lowest_placements=LOWEST_PLACEMENTS.token(self.generator))

    @property
    def generator(self) -> str:
        """The move generator's entry for `placement` (`PLACEMENTS`): ``"floating"``
        is the ``"reachable"`` search with a run-time flag (`KernelRules.floating`), so that one
        compiled kernel serves both."""
        return "reachable" if self.placement == "floating" else self.placement

    def floating(self, min_rows: int = 1) -> "Rules":
        """These rules with mid-air locks that complete at least ``min_rows`` rows among the
        placements (``placement="floating"``, named ``<name>+floating``); the game is the same."""
        if self.placement == "drop":
            raise ValueError(f"rules {self.name!r} place pieces by dropping them: no piece stops in mid-air")
        if not 1 <= min_rows <= 4:
            raise ValueError(f"floating: min_rows must be 1..4, not {min_rows}")
        base = self.name.removesuffix("+floating")
        return replace(self, name=f"{base}+floating", placement="floating", floating_min_rows=min_rows)

    @property
    def step_limit(self) -> int:
        """The kernels' step limit argument: ``max_steps``, or -1 for drop-only placements."""
        return -1 if self.placement == "drop" else self.max_steps

    @property
    def full_row(self) -> int:
        return (1 << self.width) - 1


def _same_up_to_translation(a: frozenset, b: frozenset) -> bool:
    ax, ay = min(x for x, _ in a), min(y for _, y in a)
    bx, by = min(x for x, _ in b), min(y for _, y in b)
    return {(x - ax, y - ay) for x, y in a} == {(x - bx, y - by) for x, y in b}


#: the rules presets by name (`get_rules`; a preset registers itself: ``PRESETS.register(Rules(...))``)
PRESETS: Registry[Rules] = Registry("rules preset")

GEEK = PRESETS.register(Rules(
    name="geek",
    width=10,
    height=20,
    offsets=tuple(tuple(tuple(GEEK_OFFSETS[n][k]) for k in range(4)) for n in SHAPE_NAMES),
    spawn_x=4,
    spawn_y=0,
    spawn_state="cycle",
    pieces=PieceSource(),
    score_table=(0, 1, 3, 6, 10),
    score_by_cells=True,
    top_out="all_rows",
    spawn_must_drop=False,
    piece_limit=10_000,
))

CLASSIC = PRESETS.register(Rules(
    name="classic",
    width=12,
    height=26,
    offsets=tuple(tuple(tuple(offsets_from_matrix(m)) for m in CLASSIC_MATRICES[n]) for n in SHAPE_NAMES),
    spawn_x=4,
    spawn_y=0,
    spawn_state="zero",
    pieces=PieceSource(kind="uniform", seed=0),
    score_table=(0, 10, 25, 40, 55),
    score_by_cells=False,
    top_out="none",
    spawn_must_drop=True,
    piece_limit=None,
))

#: The course's bot protocol (PROTOCOL.md): the classic pieces on a 10 x 20 board, dropped straight
#: down (no slides), spawning at column 3 of the 4x4 box.
COURSE = PRESETS.register(replace(CLASSIC, name="course", width=10, height=20, spawn_x=3, spawn_must_drop=False,
                                  placement="drop"))

#: The literature's benchmark (Thiéry and Scherrer's "simplified" game, MdpTetris's standard game:
#: ``new_game(0, 10, 20, 0, ...)``): 10 x 20, the seven pieces i.i.d. uniform, each placed by choosing
#: one of its distinct orientations and a column and dropping it from the top (`STANDARD_MATRICES`),
#: no preview, one point per row cleared, and the game over when the dropped piece does not fit inside
#: the 20 rows (nothing cleared first: ``allow_lines_after_overflow`` 0, the rule of MdpTetris's
#: ``mdptetris_play_games``, which the published scores of fixed weights come from).
STANDARD = PRESETS.register(Rules(
    name="standard",
    width=10,
    height=20,
    offsets=tuple(tuple(tuple(offsets_from_matrix(m[k % len(m)])) for k in range(4))
                  for m in (STANDARD_MATRICES[n] for n in SHAPE_NAMES)),
    spawn_x=4,  # unused by drop placements (a tie-break may read it)
    spawn_y=0,
    spawn_state="zero",
    pieces=PieceSource(kind="uniform", seed=0),
    score_table=(0, 1, 2, 3, 4),
    score_by_cells=False,
    top_out="none",
    spawn_must_drop=False,
    piece_limit=None,
    placement="drop",
    overflow="end",
    preview=False,
))

#: `STANDARD` with MdpTetris's other overflow rule (``allow_lines_after_overflow`` 1, the default of
#: its learning programs): a piece resting partly above the 20 rows first clears the rows it
#: completes, and the game ends only if one of its cells is still above them.
STANDARD_CLEAR_FIRST = PRESETS.register(replace(STANDARD, name="standard_clear_first", overflow="clear_first"))

#: `STANDARD` on the literature's small board, 10 x 10 (Scherrer et al. 2015 report it beside
#: 10 x 20): games of thousands of rows, which end in seconds, so that a series is played to the
#: end instead of to a cap.
STANDARD_10X10 = PRESETS.register(replace(STANDARD, name="standard_10x10", height=10))
#: `STANDARD` on 10 x 12: games some six times longer than on 10 x 10 (a step towards 10 x 20 for
#: tuning whose result should carry over to it)
STANDARD_10X12 = PRESETS.register(replace(STANDARD, name="standard_10x12", height=12))


def get_rules(name: str) -> Rules:
    """The preset called ``name`` (one of `PRESETS`: ``geek``, ``classic``, ``course``,
    ``standard``, ``standard_clear_first``, ``standard_10x10``, ``standard_10x12``)."""
    return PRESETS.get(name)
