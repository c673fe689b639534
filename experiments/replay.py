"""Replay contest records and report what the contest engine would: score, pieces, why it ended.

    python -m experiments.replay [--json] [--rules geek] FILE...

A FILE holds a plain record or either console line (``game.playRecord('...')`` or
``axios.post(..., {record: '...'})``); ``-`` reads standard input. A file is read no further than
`MAX_FILE_CHARS` characters: a longer one is an invalid record (no record of 10,000 pieces needs
more). Every file is reported, whatever came before it. Exit status: 0 when every record is valid,
1 when any is invalid, 2 when a file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys

from engine import PRESETS, ReplayResult, get_rules, replay
from engine.record import MAX_RECORD_CHARS


#: the most characters read from a file: the longest record (`MAX_RECORD_CHARS`) and room for the
#: console line around it; an endless or huge input is read no further
MAX_FILE_CHARS = MAX_RECORD_CHARS + 1_000


class TooLong(ValueError):
    """A file holding more than `MAX_FILE_CHARS` characters."""


def read_text(name: str) -> str:
    """The text of file ``name`` (``-`` for standard input), read no further than `MAX_FILE_CHARS`
    (`TooLong` beyond); OSError/UnicodeDecodeError propagate."""
    if name == "-":
        text = sys.stdin.read(MAX_FILE_CHARS + 1)
    else:
        with open(name, encoding="utf-8") as f:
            text = f.read(MAX_FILE_CHARS + 1)
    if len(text) > MAX_FILE_CHARS:
        raise TooLong(f"the file holds more than {MAX_FILE_CHARS:,} characters, more than the "
                      f"{MAX_RECORD_CHARS:,} any record of 10,000 pieces needs")
    return text


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
        except (OSError, UnicodeDecodeError) as e:
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            print(f"error: cannot read {name}: {reason}", file=sys.stderr)
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
