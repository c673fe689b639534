"""Segment search: a dynamic programme over (piece index, cells on the board) whose edges are the
segments between two clears (the design of the 1,413,876 solution, rebuilt on our engine).

Terms:
- a *state* is a board right after a clear (or the empty board at piece 0, or a board after the
  last piece), with its score and its path. States live in a *table* keyed by (piece index, cells
  on the board // ``key_cells``), at most ``states`` per key: the higher score, then the higher
  ranking value (the configuration's ``evaluator``, by default `transitions`: smoothness), then
  the smaller board hash. Equal boards at one piece index are merged (the higher score stays).
  Keeping states by cell count keeps heavy boards, about to clear at a high multiplier, beside the
  best-scoring ones.
- a *segment* from a state is a layered search over its next pieces (at most ``depth``; the first
  segment, from the empty board, ``first_depth``). Layer d holds boards after d pieces that have
  cleared nothing; each is expanded with every placement of the next piece (resting ones, and with
  ``floating`` the mid-air locks that clear rows: `engine.movegen.generators.floating_mask`). A placement that
  clears rows ends the segment: it is a *leaf*, a new state, kept if at least ``min_cells[f - 1]``
  cells remain on the board after its clear of f rows (a clear with few cells wastes its
  multiplier; in the last ``endgame_pieces`` pieces there is no floor). Any placement of the last
  piece is a leaf too. The others are *children*: equal boards merged, the best ``nodes`` by the
  ranking value (ties: the smaller board hash) form layer d + 1. Nothing is scored inside a
  segment, so the ranking is smoothness alone. A placement may not occupy the top ``top_free_rows``
  rows (before its clear).
- the *driver* takes piece indices in increasing order; every state stored at index i is expanded
  (a segment's leaves land at later indices), in chunks of `CHUNK` states over numba's threads
  (``prange``), and with ``parallel.n_jobs`` > 1 (or a dask cluster) the chunks shared among worker
  processes (`engine.parallel.Pool`), each sending back its leaves as a list (`Found`). Each
  state's segment is independent and the leaves are merged into the table chunk by chunk in the
  states' order, so the result does not depend on the number of threads or processes.

Paths: a state's segment is stored as its placements (int16, `solver.layered.pack`) with the id
of the state it grew from; states that are expanded (and the final ones) enter an append-only
*history*, from which the best state's placements are read back and replayed by the engine.

Long runs: the table, the history and the curves are saved as data (`engine.statefile`, atomic,
compressed; every value checked when read back, `SearchState.from_state`) every ``checkpoint_seconds``
and when the search stops; a solve given the checkpoint
with ``resume`` continues from the first piece index it had not expanded and ends exactly as an
uninterrupted run would (what is saved is everything the search can still use: the history is
cut to the states that paths from the table and from the best go back to, `History.compacted`,
so a record-size search saves about 100 KB, not tens of MB). The checkpoint also
keeps one entry per *sitting* (each process that worked on the search: its first and next piece
index, search seconds, CPU seconds of the process's threads (not its worker processes'), peak
memory), reported in the result with their totals, so a run spread over sittings states what it
cost. The checkpoint does not depend on ``parallel``: a run may be resumed with more workers.

The kernels read bundles: the rules (`KernelRules`), the settings (`SegmentSettings`), a chunk's
roots (`Roots`), its leaves (`Leaves`) and the table (`Table`).

The package's rooms: `settings` (the configuration section, the kernels' bundles), `kernels` (a
segment's search, the table's merge), `history` (the history and the checkpoint's form of the
search), `driver` (the policy, its workers, checkpoints and sittings).
"""

from .driver import Segment, SegmentReport, SittingCost, expand_task
from .history import CHECKPOINT_KIND, CHECKPOINT_VERSION, History, SearchState, live_states, saved_table, used_slots
from .kernels import expand_chunk, found_leaves, insert_found, take
from .settings import CHUNK, Found, Leaves, Roots, SegmentConfig, SegmentSettings, Table, new_leaves, new_table, settings

__all__ = ["CHECKPOINT_KIND", "CHECKPOINT_VERSION", "CHUNK", "Found", "History", "Leaves", "Roots", "Segment",
           "SegmentConfig", "SegmentReport", "SegmentSettings", "SittingCost", "Table", "SearchState",
           "expand_chunk", "expand_task", "found_leaves", "insert_found", "live_states", "new_leaves", "new_table",
           "saved_table", "settings", "take", "used_slots"]
