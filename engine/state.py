"""The game state: what a solver or a tool holds between two pieces.

`GameState` is a small immutable value (the board array is never changed in place): `apply`
returns a new state, so keeping a state for later is a plain reference and copies are cheap.
Searches that move whole layers at once keep their boards in arrays of their own (the beam's
layer loop, `solver.beam`), locking each child with `engine.lock`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .board import BOARD_DTYPE, popcount
from .lock import GOING_ON, lock_piece, spawn_blocked
from .movegen import MoveScratch, placements, route
from .outcome import GameEnd
from .rules import GEEK, Rules


@dataclass(frozen=True)
class Transition:
    """The outcome of placing one piece: the new state, rows cleared by this piece (0..4), points
    gained, and whether the game is now over."""

    state: "GameState"
    lines: int
    points: int
    over: bool


@dataclass(frozen=True)
class GameState:
    """A game between two pieces.

    - ``board``: the board (uint16 rows, bit x of row y set when occupied; y = 0 is the top);
    - ``piece``: 0-based index of the piece to place next (= pieces placed so far);
    - ``score``: points so far;
    - ``clears``: clear events so far (locks that filled at least one row);
    - ``lines``: rows cleared so far (a 4-row clear adds 1 to ``clears`` and 4 to ``lines``);
    - ``clear_kinds``: clear events by rows cleared, index 1..4 (index 0 unused);
    - ``end``: None while the game goes on, else why it ended: ``top_touched``, ``piece_limit``,
      ``spawn_blocked`` or ``sequence_end`` (the given piece sequence ran out).
    """

    rules: Rules
    sequence: np.ndarray = field(repr=False)
    board: np.ndarray = field(repr=False)
    piece: int = 0
    score: int = 0
    clears: int = 0
    lines: int = 0
    clear_kinds: tuple = (0, 0, 0, 0, 0)
    end: str | None = None

    @classmethod
    def new(cls, rules: Rules = GEEK, pieces: int | None = None, seed: int | None = None,
            sequence: np.ndarray | None = None) -> "GameState":
        """A fresh game: empty board, the rules' piece sequence (``pieces`` long, default the piece
        limit; ``seed`` overrides the source's seed) or an explicit ``sequence`` of shapes."""
        if sequence is None:
            sequence = rules.sequence(pieces, seed)
        state = cls(rules, np.asarray(sequence, dtype=np.int8),
                    np.zeros(rules.height, dtype=BOARD_DTYPE))
        return replace(state, end=state._spawn_end())

    @property
    def over(self) -> bool:
        return self.end is not None

    @property
    def shape(self) -> int:
        """Shape of the piece to place next."""
        return int(self.sequence[self.piece])

    @property
    def spawn_state(self) -> int:
        return self.rules.spawn_state_of(self.piece)

    @property
    def cells(self) -> int:
        """Occupied cells on the board."""
        return int(sum(popcount(np.int64(r)) for r in self.board))

    def placements(self, scratch: MoveScratch | None = None) -> np.ndarray:
        """The current piece's placements as an (n, 3) array of (x, y, state)."""
        if self.over:
            return np.zeros((0, 3), np.int64)
        return placements(self.board, self.rules, self.shape, self.spawn_state, scratch)

    def route(self, placement, scratch: MoveScratch | None = None) -> list[int]:
        """A shortest step list (0..3 = L, R, D, C) taking the current piece to ``placement``."""
        return route(self.board, self.rules, self.shape, self.spawn_state, placement, scratch)

    def apply(self, placement, check: bool = True) -> Transition:
        """Lock the current piece at ``placement`` (x, y, state) and score it.

        With ``check``, the placement must be one of `placements` (ValueError otherwise). Game
        over, in the rules' order: every row occupied after the lock (``top_touched``, no points),
        the rules' last piece (``piece_limit``, no points), the next piece's spawn blocked
        (``spawn_blocked``), no next piece in the sequence (``sequence_end``).
        """
        if self.over:
            raise ValueError(f"the game is over ({self.end})")
        x, y, s = (int(v) for v in placement)
        if check and not any((p == (x, y, s)).all() for p in self.placements()):
            raise ValueError(f"({x}, {y}, {s}) is not a placement of piece {self.piece}")
        board = self.board.copy()
        lock = lock_piece(board, self.rules.kernel, self.shape, s, x, y, self.piece + 1)
        end = None if lock.end == GOING_ON else GameEnd(lock.end).label
        points, full_rows = int(lock.points), int(lock.lines)
        kinds = list(self.clear_kinds)
        if full_rows and end is None:
            kinds[full_rows] += 1
        new = replace(
            self, board=board, piece=self.piece + 1, score=self.score + points,
            clears=self.clears + (1 if full_rows and end is None else 0),
            lines=self.lines + (full_rows if end is None else 0), clear_kinds=tuple(kinds), end=end,
        )
        if end is None:
            new = replace(new, end=new._spawn_end())
        return Transition(new, full_rows if end is None else 0, points, new.over)

    def _spawn_end(self) -> str | None:
        """Why the next piece cannot appear, or None."""
        if self.piece >= len(self.sequence):
            return GameEnd.SEQUENCE_END.label
        if spawn_blocked(self.board, self.rules.kernel, self.shape, self.spawn_state):
            return GameEnd.SPAWN_BLOCKED.label
        return None
