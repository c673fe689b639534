"""Profile dynamic programming: a layered DP over hole-free surfaces above a fixed base (the design
of the ≈1.2 M GPU solution, on the CPU).

The *base* (the rows below the top ``window`` rows) is built first by the survival evaluator and
never changes; then one *layer* per piece: a state is a *profile*, a hole-free surface of the window
packed in one int64 (`pack_profile`), expanded by its *transitions* (straight drops that keep the
surface hole-free and the top ``free_rows`` rows empty, so every transition has a route), equal
profiles merged and the best ``states`` kept by the key, ties to the smaller profile, so results do
not depend on the number of threads. Each kept state's link (``parent << 6 | move``) is kept in
memory or a temporary file, and the best state is traced back and replayed by the engine, which
scores it by its own rule. In full: docs/policies.md, "The profile DP (`profile_dp`)".

The package's rooms: `surfaces` (profiles, the bundles, the drops), `layer` (one layer's
expansion and selection), `base` (the base under the window), `links` (the links store and the
trace back), `driver` (the policy and its report)."""

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
