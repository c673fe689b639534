"""The one outcome vocabulary: how a game ended (`GameEnd`) and why a search stopped (`Stop`).

Each is an `IntEnum` whose values are the codes the kernels return, and whose ``label`` is the
word the files write (``summary.json``, ``evaluations.csv``, a run's records, ``info["end"]``):
code and label are paired here and nowhere else. Kernels keep plain int constants taken from the
members (``GOING_ON = int(GameEnd.GOING_ON)``), so what numba compiles is unchanged;
tests/test_outcome.py fails when a label appears as a string literal elsewhere in the code.
"""

from __future__ import annotations

from enum import IntEnum


#: the code of both vocabularies for "not over yet" (`GameEnd.GOING_ON`, `Stop.GOING`)
GOING_CODE = -1


class _Labelled(IntEnum):
    """A code whose written form is its lower-case name; `GOING_CODE` means not over yet."""

    @property
    def ended(self) -> bool:
        """Whether it is over: the game ended, the search stopped (any code but `GOING_CODE`)."""
        return self.value != GOING_CODE

    @property
    def label(self) -> str:
        """The word files write for this code."""
        return self.name.lower()

    def __str__(self) -> str:
        """The label (``str``, ``%s`` and f-strings write it, not the code)."""
        return self.label

    @staticmethod
    def labels(members) -> tuple[str, ...]:
        """The labels of ``members``, in their order (a derived list of ends, never a second table)."""
        return tuple(m.label for m in members)


class GameEnd(_Labelled):
    """How a game ended: the lock rule's and the replay's codes (`engine.lock`, `engine.replay`),
    then a player's own (`engine.envs`' batch, `solver.online`'s games)."""

    #: the game goes on (`engine.lock.LockResult.end` of a lock after which it does)
    GOING_ON = GOING_CODE
    #: a record's moves ran out (the replay)
    RECORD_END = 0
    #: a lock left a cell in the top row
    TOP_TOUCHED = 1
    #: the next piece's spawn is blocked
    SPAWN_BLOCKED = 2
    #: the rules' last piece was placed
    PIECE_LIMIT = 3
    #: no next piece in the sequence
    SEQUENCE_END = 4
    #: a piece locked above the board
    OVERFLOW = 5
    #: the player's cap on pieces was reached (the game could go on)
    CAPPED = 6
    #: the next piece has no placement
    STUCK = 7
    #: a lock ended the game under the rules (`solver.online`: any of the lock's ends)
    RULES_END = 8


#: the ends a lock or a replay gives, by code (0 ..): `engine.replay.ReplayResult.end`
LOCK_ENDS = tuple(GameEnd(code) for code in range(GameEnd.OVERFLOW + 1))


class Stop(_Labelled):
    """Why a search stopped (`solver.result.SolveResult.stop`), by the codes its kernels return."""

    #: a single-path kernel's code while pieces are left to play (a search that ends so is `DONE`)
    GOING = GOING_CODE
    #: every piece placed, or the budget spent
    DONE = 0
    #: no placement (or no path) for the next piece
    STUCK = 1
    #: the next piece's spawn is blocked
    SPAWN_BLOCKED = 2
    #: a score fell below the threshold (`solver.threshold`)
    ABORTED = 3
    #: a first Ctrl-C: the best path so far
    INTERRUPTED = 4

    @property
    def written(self) -> Stop:
        """The stop a result reports for this code: `DONE` for `GOING` (the pieces or the budget
        ran out while the search went on), else itself."""
        return Stop.DONE if self is Stop.GOING else self
