"""Segment search: a dynamic programme over (piece index, cells on the board) whose edges are the
segments between two clears (the design of the 1,413,876 solution, rebuilt on our engine).

A *state* is a board right after a clear, kept in a *table* keyed by (piece index, cells //
``key_cells``); a *segment* from a state is a layered search over its next pieces, ranked by
smoothness alone, whose placements that clear rows are its *leaves* (new states); the *driver*
expands the states in piece order over numba's threads or worker processes (`engine.parallel.Pool`),
merging leaves in the states' order, so the result does not depend on either count. Paths are
read back from an append-only history; the search is saved as a checkpoint (`engine.statefile`)
that ``resume`` continues exactly, with one entry per sitting. In full: docs/policies.md, "The
segment search (`segment`)".

The package's rooms: `settings` (the configuration section, the kernels' bundles), `kernels` (a
segment's search, the table's merge), `history` (the history and the checkpoint's form of the
search), `driver` (the policy, its workers, checkpoints and sittings)."""

from .driver import Segment, SegmentReport, SittingCost, expand_task
from .history import CHECKPOINT_KIND, CHECKPOINT_VERSION, History, SearchState, live_states, saved_table, used_slots
from .kernels import expand_chunk, found_leaves, insert_found, take
from .settings import CHUNK, Found, Leaves, Roots, SegmentConfig, SegmentSettings, Table, new_leaves, new_table, settings

__all__ = ["CHECKPOINT_KIND", "CHECKPOINT_VERSION", "CHUNK", "Found", "History", "Leaves", "Roots", "Segment",
           "SegmentConfig", "SegmentReport", "SegmentSettings", "SittingCost", "Table", "SearchState",
           "expand_chunk", "expand_task", "found_leaves", "insert_found", "live_states", "new_leaves", "new_table",
           "saved_table", "settings", "take", "used_slots"]
