"""Records: the contest's comma-separated key operations.

A record is ``N`` (a new piece) and ``L<k>``, ``R<k>``, ``D<k>``, ``C<k>`` (k single steps left,
right, down, or rotations). This module reads a record (plain, or inside either console line the
contest accepted), validates it exactly as the contest does (`parse`; `rejection` gives the reason
the contest would reject it), encodes routes into a record and writes the console lines. Replaying
is `engine.replay`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .movegen.tables import STEP_LETTERS

OP_N = 4  # operation codes: 0..3 are the steps L, R, D, C (engine.movegen), 4 is N
MAX_STEPS_PER_PIECE = 100
#: the longest record read (a guard of the replayer, not a contest rule): written without leading
#: zeros or white space, 10,000 pieces of 100 single steps take 3,020,000 characters
MAX_RECORD_CHARS = 4_000_000
#: an operation shown in an error message is cut to this many characters
SHOWN_CHARS = 24

# JavaScript's String.prototype.trim() removes exactly these (WhiteSpace and LineTerminator).
JS_WHITESPACE = "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
OPERATION = re.compile(r"([LRDCN])([0-9]*)")
PLAY_LINE = re.compile(r"playRecord\(\s*(['\"`])(.*?)\1", re.S)
UPLOAD_LINE = re.compile(r"record\s*:\s*(['\"`])(.*?)\1", re.S)
#: a record written the plain way (no white space; numbers of 1 to 999, leading zeros allowed): read
#: at C speed by `parse`, which checks it by the rules below in a slower loop only when it fails
PLAIN_RECORD = re.compile(r"N(?:,(?:N|[LRDC]0*[1-9][0-9]{0,2}))*")
#: operation letter -> code
OPERATION_CODES = {**{letter: code for code, letter in enumerate(STEP_LETTERS)}, "N": OP_N}


class RecordError(ValueError):
    """A record the contest would reject; the message is the reason."""


@dataclass(frozen=True)
class Record:
    """A validated record as two arrays: ``kinds`` (0..3 = L, R, D, C; 4 = N) and ``counts``
    (the number k of an L/R/D/C operation; 0 for N)."""

    kinds: np.ndarray
    counts: np.ndarray

    @property
    def pieces(self) -> int:
        """Number of N operations."""
        return int(np.count_nonzero(self.kinds == OP_N))


def extract(text: str) -> str:
    """The record inside ``text``: a plain record, a ``game.playRecord('...')`` replay line or an
    ``axios.post(..., {record: '...', ...})`` upload line."""
    for pattern in (PLAY_LINE, UPLOAD_LINE):
        m = pattern.search(text)
        if m:
            return m.group(2)
    return text.strip(JS_WHITESPACE)


def parse(record: str) -> Record:
    """Validate a record with the contest's rules and return it as arrays.

    Raises `RecordError` naming the first operation (1-based) that breaks a rule:
    1. the first operation must be N; 2. N takes no number; 3. L, R, D and C take a number of at
    least 1 (leading zeros allowed); 4. a piece's numbers (between two N, or after the last) add up
    to at most 100. Each operation is trimmed of white space first, as the contest does.
    """
    if len(record) > MAX_RECORD_CHARS:
        raise RecordError(f"the record is {len(record):,} characters long, more than the {MAX_RECORD_CHARS:,} any "
                          "record of 10,000 pieces needs")
    plain = _parse_plain(record)
    return plain if plain is not None else _parse_checked(record)


def _parse_checked(record: str) -> Record:
    """`parse`, one operation at a time by the rules (the reader of any record, and of every error)."""
    ops = record.split(",")
    kinds = np.empty(len(ops), dtype=np.int64)
    counts = np.zeros(len(ops), dtype=np.int64)
    piece_total = 0
    piece_start = 0
    for i, raw in enumerate(ops):
        op = raw.strip(JS_WHITESPACE)
        m = OPERATION.fullmatch(op)
        where = f"operation {i + 1} ({op if len(op) <= SHOWN_CHARS else op[:SHOWN_CHARS] + '...'!r})"
        if m is None:
            raise RecordError(f"{where} is not N, L<k>, R<k>, D<k> or C<k>")
        letter, digits = m.groups()
        if i == 0 and letter != "N":
            raise RecordError(f"{where}: a record must start with N")
        if letter == "N":
            if digits:
                raise RecordError(f"{where}: N takes no number")
            kinds[i] = OP_N
            piece_total = 0
            piece_start = i + 1
            continue
        significant = digits.lstrip("0")  # leading zeros are allowed, however many
        if not significant:
            raise RecordError(f"{where}: {letter} needs a number of at least 1")
        if len(significant) > len(str(MAX_STEPS_PER_PIECE)):  # too big for a piece (and for int())
            raise RecordError(f"{where}: the numbers of the piece begun at operation {piece_start} add up to "
                              f"more than {MAX_STEPS_PER_PIECE}")
        kinds[i] = OPERATION_CODES[letter]
        counts[i] = int(significant)
        piece_total += counts[i]
        if piece_total > MAX_STEPS_PER_PIECE:
            raise RecordError(
                f"{where}: the numbers of the piece begun at operation {piece_start} add up to "
                f"{piece_total}, more than {MAX_STEPS_PER_PIECE}"
            )
    return Record(kinds, counts)


#: byte -> operation code, for `_parse_plain` (only the five letters occur in a plain record)
_CODE_OF_BYTE = np.zeros(256, np.int64)
for _letter, _code in OPERATION_CODES.items():
    _CODE_OF_BYTE[ord(_letter)] = _code


def _parse_plain(record: str) -> Record | None:
    """`parse` of a record matching `PLAIN_RECORD` whose pieces' numbers add up to at most 100 (the
    records the solvers write), read by array operations over its bytes; None for any other, which
    `parse`'s loop reads and explains."""
    if PLAIN_RECORD.fullmatch(record) is None:
        return None
    b = np.frombuffer(record.encode("ascii"), np.uint8)
    commas = np.flatnonzero(b == ord(","))
    starts = np.concatenate(([0], commas + 1))
    ends = np.concatenate((commas, [b.size]))
    kinds = _CODE_OF_BYTE[b[starts]]
    # a number's digits, each times 10 ** (its place from the number's end); the pattern allows at
    # most three significant digits after the leading zeros, so places above 2 hold zeros only
    digit = np.where((b >= ord("0")) & (b <= ord("9")), b.astype(np.int64) - ord("0"), 0)
    place = np.clip(np.repeat(ends, ends - starts + 1)[: b.size] - 1 - np.arange(b.size), 0, 3)  # commas: 0
    counts = np.add.reduceat(digit * (10 ** place), starts)
    piece = np.cumsum(kinds == OP_N) - 1
    if np.bincount(piece, weights=counts).max(initial=0) > MAX_STEPS_PER_PIECE:
        return None
    return Record(kinds, counts)


def rejection(record: str) -> str | None:
    """The reason the contest would reject ``record``, or None when it is valid."""
    try:
        parse(record)
    except RecordError as e:
        return str(e)
    return None


def piece_operations(steps) -> list[str]:
    """The operations of one piece from its single steps (codes 0..3), runs merged: [3, 0, 0, 2] ->
    ['C1', 'L2', 'D1']. An empty route becomes ['D1']: a step down that cannot happen (the piece
    rests at its spawn) but makes the piece lock instead of vanishing at the next N."""
    ops: list[str] = []
    run_letter, run = "", 0
    for code in steps:
        letter = STEP_LETTERS[code]
        if letter == run_letter:
            run += 1
        else:
            if run:
                ops.append(f"{run_letter}{run}")
            run_letter, run = letter, 1
    if run:
        ops.append(f"{run_letter}{run}")
    return ops or ["D1"]


def encode(routes) -> str:
    """A record placing one piece per route (each a list of step codes)."""
    parts: list[str] = []
    for steps in routes:
        parts.append("N")
        parts.extend(piece_operations(steps))
    return ",".join(parts)


def replay_line(record: str) -> str:
    """The browser-console line that replays ``record`` in the contest page."""
    return f"game.pause();game.playRecord('{record}'.split(','));"


def upload_line(record: str, score: int) -> str:
    """The browser-console line that uploads ``record`` with its ``score``."""
    return f"axios.post(`api/upload`, {{record: '{record}', score: {score}}})"
