"""The exact, fast simulator of the Geek contest game and its family.

Layers, lowest first: `rules` (a game as data), `board` (bitboard lock and clear), `movegen`
(placements and routes), `record` (the contest's record format), `replay` (the contest engine's
replay), `state` (one game between pieces), `batch` (one piece on many boards).
"""

from . import _numba_cache  # noqa: F401  (first: numba's cache directory is set before any kernel)
from .batch import Children, expand
from .board import BOARD_DTYPE, from_strings, to_strings
from .movegen import Scratch, placements, route
from .record import Record, RecordError, encode, extract, parse, replay_line, upload_line, validate
from .play import END_NAMES
from .replay import ReplayResult, final_board, replay, replay_record
from .rules import CLASSIC, COURSE, GEEK, PRESETS, PieceSource, Rules, get_rules
from .state import GameState, Transition

__all__ = [
    "BOARD_DTYPE", "CLASSIC", "COURSE", "Children", "END_NAMES", "GEEK", "GameState", "PRESETS", "PieceSource",
    "Record", "RecordError", "ReplayResult", "Rules", "Scratch", "Transition", "encode", "expand",
    "extract", "final_board", "from_strings", "get_rules", "parse", "placements", "replay",
    "replay_line", "replay_record", "route", "to_strings", "upload_line", "validate",
]
