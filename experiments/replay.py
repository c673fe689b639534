"""Replay contest records and report what the contest engine would: score, pieces, why it ended.

    python -m experiments.replay [--json] [--rules geek] FILE...

A FILE holds a plain record or either console line (``game.playRecord('...')`` or
``axios.post(..., {record: '...'})``); ``-`` reads standard input. Exit status: 0 when every record
is valid, 1 when any is invalid, 2 when a file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys

from engine import PRESETS, get_rules, replay


def read_text(name: str) -> str:
    """The text of file ``name`` (``-`` for standard input); OSError/UnicodeDecodeError propagate."""
    if name == "-":
        return sys.stdin.read()
    with open(name, encoding="utf-8") as f:
        return f.read()


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
            text = read_text(name)
        except (OSError, UnicodeDecodeError) as e:
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            print(f"error: cannot read {name}: {reason}", file=sys.stderr)
            status = 2
            continue
        result = replay(text, rules)
        if args.json:
            print(json.dumps({"file": name, **result.as_dict()}), flush=True)
        else:
            print(describe(name, result), flush=True)
        if not result.valid and status == 0:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
