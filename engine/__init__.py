"""The exact, fast simulator of the Geek contest game and its family.

Layers, lowest first: `rules` (a game as data, and `KernelRules`, the bundle kernels read),
`board` (bitboard place, count and clear), `lock` (the one lock rule and the spawn), `movegen`
(placements and routes), `record` (the contest's record format), `replay` (the contest engine's
replay), `state` (one game between pieces), and over them `envs` (Gymnasium environments, imported
on their own: the engine loads without gymnasium). Beside them, what every layer shares: `outcome`
(how a game ended and why a search stopped), `files` (files written whole or not at all, reads
bounded by kind), `statefile` (saved state as data, never read by running code), `validation`
(the base of every configuration section, `validation.Strict`, and the one-line error), `config`
(configuration files and ``key=value`` overrides), `paths` (dotted paths into configuration data),
`registry` (whatever is found by name), `_jit` (the numba plumbing and its on-disk cache),
`parallel` (the worker pool: in process, loky or dask), `memory` (what a size will allocate,
checked against the memory there is) and `provenance` (where a result came from): docs/engine.md.
"""

from . import _jit  # noqa: F401  (first: numba's cache is set, and bundles typed by structure, before any kernel)
from .board import BOARD_DTYPE, from_strings, to_strings
from .lock import GOING_ON, LockResult, lock_copy, lock_piece, spawn_blocked, spawn_state
from .movegen import MoveScratch, capacity, placements, route, scratch
from .outcome import GameEnd, Stop
from .record import Record, RecordError, encode, extract, parse, rejection, replay_line, upload_line
from .replay import ReplayResult, final_board, replay, replay_record
from .rules import (CLASSIC, COURSE, GEEK, PRESETS, STANDARD, STANDARD_10X10, STANDARD_10X12, STANDARD_CLEAR_FIRST,
                    KernelRules, PieceSource, Rules, get_rules)
from .state import GameState, Transition

__all__ = [
    "BOARD_DTYPE", "CLASSIC", "COURSE", "GEEK", "GOING_ON", "GameEnd", "GameState", "KernelRules", "LockResult",
    "MoveScratch", "PRESETS", "PieceSource", "Record", "RecordError", "ReplayResult", "Rules", "STANDARD",
    "STANDARD_10X10", "STANDARD_10X12", "STANDARD_CLEAR_FIRST", "Stop", "Transition", "capacity", "encode", "extract", "final_board",
    "from_strings", "get_rules", "lock_copy", "lock_piece", "parse", "placements", "replay", "replay_line",
    "rejection", "replay_record", "route", "scratch", "spawn_blocked", "spawn_state", "to_strings", "upload_line",
]
