"""Replay contest records and report what the contest engine would: score, pieces, why it ended.

    python -m experiments.replay [--json] [--rules geek] FILE...

A FILE holds a plain record or either console line (``game.playRecord('...')`` or
``axios.post(..., {record: '...'})``); ``-`` reads standard input. A file is read no further than
`MAX_FILE_CHARS` bytes (`engine.files.read_text`): a longer one is an invalid record (no record of
10,000 pieces needs more). Every file is reported, whatever came before it. Exit status: 0 when
every record is valid, 1 when any is invalid, 2 when a file cannot be read (missing, a folder, not
UTF-8 text: one line naming it).
"""

from __future__ import annotations

import argparse
import json
import sys

from engine import PRESETS, ReplayResult, get_rules, replay
from engine.files import MAX_RECORD_BYTES, ReadError, TooLarge
from engine.files import read_text as read_bounded
from engine.record import MAX_RECORD_CHARS


#: the most bytes read from a file: the longest record (`MAX_RECORD_CHARS`) and room for the
#: console line around it (`engine.files.MAX_RECORD_BYTES`); an endless or huge input is read no further
MAX_FILE_CHARS = MAX_RECORD_BYTES


class TooLong(ValueError):
    """A file holding more than `MAX_FILE_CHARS` bytes."""


def read_text(name: str) -> str:
    """The text of file ``name`` (``-`` for standard input), read no further than `MAX_FILE_CHARS`
    bytes (`TooLong` beyond); `engine.files.ReadError` when it cannot be read."""
    try:
        return read_bounded(name, MAX_FILE_CHARS, "a record", stream=sys.stdin.buffer if name == "-" else None)
    except TooLarge:
        raise TooLong(f"the file holds more than {MAX_FILE_CHARS:,} bytes, more than the {MAX_RECORD_CHARS:,} "
                      "characters any record of 10,000 pieces needs") from None


def describe(name: str, result) -> str:
    if not result.valid:
        return f"{name}: invalid record: {result.error}"
    return f"{name}: score {result.score:,}, {result.bricks:,} pieces, {result.end}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.replay",
        description="Replay contest records exactly as the contest engine does.",
        epilog="Exit status: 0 all records valid, 1 some record invalid, 2 some file unreadable.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="record file (plain or a console line); - for stdin")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object per file: file, valid, score, bricks, end, error")
    parser.add_argument("--rules", default="geek", choices=sorted(PRESETS), help="rules preset (default: geek)")
    args = parser.parse_args(argv)
    rules = get_rules(args.rules)
    status = 0
    for name in args.files:
        try:
            result = replay(read_text(name), rules)
        except TooLong as e:
            result = ReplayResult(False, error=str(e))
        except ReadError as e:
            print(f"error: {e}", file=sys.stderr)
            status = 2
            continue
        if args.json:
            print(json.dumps({"file": name, **result.as_dict()}), flush=True)
        else:
            print(describe(name, result), flush=True)
        if not result.valid and status == 0:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
