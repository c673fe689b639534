"""Profile dynamic programming: a layered DP over hole-free surfaces above a fixed base (the design
of the ≈1.2 M GPU solution, on the CPU).

Terms:
- the *window* is the top ``window`` rows of the board; the *base* is the rows below it. The base is
  built first by the survival evaluator: a depth-first search over placements in the evaluator's
  order (the greedy path unless it gets stuck) under hard rules (no row filled; the window part of
  every column stays a stack standing on the base, at most ``base_cap`` rows high), until every column
  reaches the window and the next `START_LOOKAHEAD` pieces have a chain of transitions. From then
  on the base never changes: its rows are never full and each of its empty cells is covered.
- a *profile* is a hole-free surface of the window: column i is filled from the window's bottom row
  up to height ``h[i]`` (0 .. window). It is packed into one int64, ``sum h[i] << (5 * i)``
  (`pack_profile`). A column whose top base cell is empty must keep ``h[i] >= 1`` (its *floor*),
  or the piece above could fall into the base.
- a *transition* is a resting placement that keeps the surface hole-free: every column of the piece
  lands with its lowest cell on the surface (a straight drop), so the new profile adds the piece's
  column heights. Full window rows (``min h`` of them) are then cleared. Placements are (state,
  leftmost column) pairs of the piece's distinct states: at most 34 per piece (`DropTables`).
- *reachability*: a transition is kept only when the board afterwards leaves the top ``free_rows``
  rows empty (3 here: every state of every piece fits at the spawn row at any column). Then the next
  piece can turn at the spawn, shift, and drop straight to any hole-free placement, so every
  transition has a route; the record's routes are found afterwards by the engine's own search.
- *layers*: one per piece. Every state of the layer is expanded (numba ``prange`` over states);
  children with equal profiles keep the higher score (equal scores: the first generated); the best
  ``states`` (K) children by the *key* are kept: the score, or the score plus a surface heuristic
  (``cells_weight`` per window cell + ``bumpiness_weight`` per unit of sum |h[i] - h[i+1]|). Ties go
  to the smaller packed profile, so results do not depend on the number of threads.
- *links*: each kept state stores ``parent << 6 | move`` (uint32) per layer, in memory or in a
  temporary file (``links``), so memory stays bounded; the best state is traced back to placements,
  which are replayed by the engine and must give the DP's score.

Scoring is the game's, by the engine's own rule (`engine.lock.lock_points`): a lock that fills f
rows scores (base cells + window cells, counted after the lock) x table[f], and the piece at the
rules' limit scores nothing. A lock that occupies every row would end the game: the base occupies
all its rows, so a transition never fills the window's top row.

The kernels read bundles: the rules (`KernelRules`), the drop tables (`DropTables`), the window's
geometry (`Window`), a layer's states (`States`), the selection key (`SurfaceKey`), a layer's
buffers (`LayerBuffers`), and for the base `BaseLimits` and `BaseScratch`.

The package's rooms: `surfaces` (profiles, the bundles, the drops), `layer` (one layer's
expansion and selection), `base` (the base under the window), `links` (the links store and the
trace back), `driver` (the policy and its report).
"""

from .base import base_ready, build_base, floor_of, window_heights
from .driver import ProfileDP, ProfileDPReport
from .layer import expand_layer, merge_and_select
from .links import Links
from .surfaces import (
    BITS, MOVE_LEFT, MOVE_STATE, MOVE_X, DropTables, LayerBuffers, States, SurfaceKey, Window, drop, drop_tables,
    free_rows, heights_of, pack_profile, profile_board, profile_of, unpack_profile,
)

__all__ = ["BITS", "MOVE_LEFT", "MOVE_STATE", "MOVE_X", "DropTables", "LayerBuffers", "Links", "ProfileDP",
           "ProfileDPReport", "States", "SurfaceKey", "Window", "base_ready", "build_base", "drop", "drop_tables",
           "expand_layer", "floor_of", "free_rows", "heights_of", "merge_and_select", "pack_profile", "profile_board",
           "profile_of", "unpack_profile", "window_heights"]
