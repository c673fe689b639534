"""Watch a record: a self-contained HTML replay page, or the board at one piece as a PNG.

    python -m experiments.view FILE [--out replay.html] [--rules geek]
    python -m experiments.view FILE --png PIECE [--out board.png]

FILE is a record (plain, or either console line the contest accepted) or a solver ``summary.json``
(its ``record.txt`` beside it is replayed under the rules and seed of its ``config``). The record is
replayed by the engine (`engine.replay` with a trace) and every piece's board, lock, score and the
next piece are embedded in one HTML file made from the template
``experiments/templates/replay.html``. Without ``--out`` the file goes beside a summary.json (the
solve's folder), or to the working folder for a record; the last line says where. "Piece n" is the
game once n pieces have appeared and locked (piece 0: the empty board). Exit status: 0 written, 1
invalid record, 2 bad input (one line naming it, nothing left behind). What the page shows, its keys
and the limits on FILE and ``--out``: docs/tuning.md, "Replay viewer"."""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import re
import sys
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path

import numpy as np

from engine import PRESETS, GameEnd, ReplayResult, Rules, get_rules, replay
from engine.rules import SHAPE_NAMES

from engine.files import (MAX_JSON_BYTES, MAX_RECORD_BYTES, ReadError, not_a_folder, read_text,
                          remove_stale_temporaries, write_bytes, write_text)
from experiments import description

#: shape colours (I, L, J, T, O, S, Z), as in most Tetris games
COLOURS = ("#31c7ef", "#ef7921", "#5a65ad", "#ad4d9c", "#f7d308", "#42b642", "#ef2029")


class ViewError(Exception):
    """Bad input: the message names the file and the problem."""


class InvalidRecord(Exception):
    """A record the contest would reject: the message names the file and the reason."""


@dataclass(frozen=True)
class Game:
    """A replayed record with its trace: ``result`` (`engine.ReplayResult` with ``boards`` and
    ``locked``), the ``rules`` and ``sequence`` (shapes of pieces 1, 2, ..., one past the last
    played when the rules have one), ``name`` (what to call it) and ``claimed`` (the score a
    summary.json states, else None)."""

    name: str
    rules: Rules
    result: ReplayResult
    sequence: np.ndarray
    claimed: int | None = None

    @property
    def pieces(self) -> int:
        return self.result.bricks


def _read(path: Path, limit: int, kind: str) -> str:
    """The text of ``path``, read no further than ``limit`` bytes (`engine.files.read_text`)."""
    try:
        return read_text(path, limit, kind)
    except ReadError as e:
        raise ViewError(str(e)) from None


def load(path: str | Path, rules: str | None = None) -> Game:
    """Replay FILE (a record or a summary.json) with a trace. ``rules`` (a preset name) overrides
    the rules; a summary.json's own are used otherwise, geek for a bare record."""
    path = Path(path)
    seed, claimed, name = None, None, str(path)
    if path.suffix == ".json":  # read by the schema that wrote it: a wrong type is one line naming the field
        from solver.result import read_summary

        try:
            summary = read_summary(path, MAX_JSON_BYTES)
        except ReadError as e:
            raise ViewError(str(e)) from None
        rules = rules or summary.config.rules
        seed, claimed = summary.config.seed, summary.score
        record_path = path.parent / "record.txt"
        if not record_path.exists():
            raise ViewError(f"{path}: no record.txt beside it (a solver writes both to one directory)")
        text = _read(record_path, MAX_RECORD_BYTES, "a record")
        name = str(record_path)
    else:
        text = _read(path, MAX_RECORD_BYTES, "a record")
    rules = rules or "geek"
    if rules not in PRESETS:
        raise ViewError(f"{path}: rules: unknown preset {rules!r} (known: {', '.join(sorted(PRESETS))})")
    r = get_rules(rules)
    result = replay(text, r, seed=seed, trace=True)
    if not result.valid:
        raise InvalidRecord(f"{name}: invalid record: {result.error}")
    n = result.bricks + 1 if r.piece_limit is None else min(result.bricks + 1, r.piece_limit)
    return Game(name, r, result, r.sequence(max(n, 1), seed), claimed)


def _b64(a: np.ndarray, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype=dtype).tobytes()).decode("ascii")


def page_data(game: Game) -> dict:
    """What the page embeds: rules, shapes, and per piece board, lock, score and next shape."""
    r, res = game.rules, game.result
    return {
        "name": game.name, "width": r.width, "height": r.height, "pieces": res.bricks, "end": res.end,
        "score": res.score, "claimed": game.claimed, "rules": r.name, "cycle": r.spawn_state == "cycle",
        "shapes": list(SHAPE_NAMES), "colours": list(COLOURS), "cells": r.cells.tolist(),
        "boards": _b64(res.boards, "<u2"),           # (pieces + 1) x height rows
        "locked": _b64(res.locked, "<i2"),           # (pieces + 1) x (shape, state, x, y, rows)
        "scores": _b64(res.score_by_piece, "<i4"),   # pieces + 1
        "cleared": _b64(cleared_rows(res), "i1"),     # pieces + 1: rows a scoring clear removed
        "sequence": _b64(game.sequence, "i1"),       # shape of piece n + 1 at index n
    }


def cleared_rows(res: ReplayResult) -> np.ndarray:
    """Rows cleared by each piece's lock, counted as `engine.GameState` counts clears: 0 for a piece
    that never locked and for a lock that ended the game (it scores nothing)."""
    rows = np.where(res.locked[:, 0] >= 0, res.locked[:, 4], 0)
    if res.end in (GameEnd.TOP_TOUCHED.label, GameEnd.PIECE_LIMIT.label) and len(rows) > 1:
        rows[-1] = 0
    return rows


def clear_kinds(res: ReplayResult, n: int) -> list[int]:
    """Clear events by rows cleared (1, 2, 3, 4) up to piece n."""
    return [int(v) for v in np.bincount(cleared_rows(res)[: n + 1], minlength=5)[1:5]]


@cache
def page_template() -> str:
    """The replay page's HTML, CSS and JavaScript (templates/replay.html, package data) with two
    placeholders: ``__TITLE__`` (the title, HTML-escaped) and ``__DATA__`` (`page_data` as JSON,
    `script_json`)."""
    return (files(__package__) / "templates" / "replay.html").read_text(encoding="utf-8")


def html(game: Game) -> str:
    """The self-contained replay page: the template's two placeholders filled in one pass (a name
    that holds a placeholder's text is not filled in again)."""
    title = f"{Path(game.name).name}: {game.result.score:,} points"
    fill = {"__TITLE__": _escape(title), "__DATA__": script_json(page_data(game))}
    return re.sub("__TITLE__|__DATA__", lambda m: fill[m.group()], page_template())


#: what `script_json` writes for each character that could end or change a script element's text
SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(data) -> str:
    """``data`` as JSON text to embed in an HTML ``<script>`` element (the one way data goes into a
    page): ``<``, ``>`` and ``&`` written as JSON escapes, and the line separators U+2028 and
    U+2029, so no string in it (a record's path holding ``</script>`` or ``<!--<script>``) can end
    the element, open a comment or be read as markup, and the text still reads back, by JSON or by
    JavaScript, as ``data``. Those characters stand only inside JSON strings, where an escape means
    the same character."""
    text = json.dumps(data, separators=(",", ":"))
    return re.sub("[<>&\u2028\u2029]", lambda m: SCRIPT_ESCAPES[m.group()], text)


def _escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def board_cells(game: Game, n: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The board after piece n as a (height, width) bool array, and the cells (x, y) of piece n
    still on it after its clear (empty when it never locked)."""
    r, res = game.rules, game.result
    board = res.boards[n]
    grid = ((board[:, None].astype(np.int64) >> np.arange(r.width)) & 1).astype(bool)
    shape, state, x, y, rows = (int(v) for v in res.locked[n])
    if shape < 0 or n == 0:
        return grid, []
    full = (1 << r.width) - 1
    before = res.boards[n - 1].astype(np.int64).copy()
    cells = [(x + int(dx), y + int(dy)) for dx, dy in r.cells[shape, state]]
    for cx, cy in cells:
        if 0 <= cy < r.height:
            before[cy] |= 1 << cx
    full_rows = np.flatnonzero(before == full)
    kept = [(cx, cy + int(np.count_nonzero(full_rows > cy))) for cx, cy in cells
            if 0 <= cy < r.height and cy not in full_rows]
    return grid, kept


def write_png(game: Game, n: int, out: Path) -> None:
    """The board after piece n as a PNG (matplotlib): the stack grey, piece n in its colour."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgb

    r, res = game.rules, game.result
    grid, piece = board_cells(game, n)
    img = np.ones((r.height, r.width, 3)) * np.array(to_rgb("#16181d"))
    img[grid] = to_rgb("#8a8f98")
    shape = int(res.locked[n, 0])
    for cx, cy in piece:
        img[cy, cx] = to_rgb(COLOURS[shape])
    fig, ax = plt.subplots(figsize=(r.width * 0.32 + 0.6, r.height * 0.32 + 0.9), dpi=100)
    ax.imshow(img, interpolation="nearest")
    ax.set_xticks(np.arange(-0.5, r.width), minor=True)
    ax.set_yticks(np.arange(-0.5, r.height), minor=True)
    ax.grid(which="minor", color="#2b2f37", linewidth=0.6)
    ax.tick_params(which="both", length=0, labelbottom=False, labelleft=False)
    ax.set_title(f"piece {n:,} / {res.bricks:,}\nscore {int(res.score_by_piece[n]):,}", fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    write_bytes(out, buf.getvalue())


def output_path(text: str | None, default: str, option: str = "--out") -> Path:
    """Where ``option`` (``--out``) says to write (``default`` when not given); `ViewError` when it
    names no file that can be written: empty, a folder, a file that is not a plain file, a path
    under a file, or under a folder this process may not write in (the terminal player's ``--save``
    is checked so too, before its game)."""
    if text is None:
        return Path(default)
    if not text:
        raise ViewError(f"{option}: empty; name the file to write")
    out = Path(text)
    if out.is_dir():
        raise ViewError(f"{out}: is a folder; name the file to write (e.g. {out / default})")
    if out.exists() and not out.is_file():
        raise ViewError(f"{out}: not a plain file")
    up = not_a_folder(out)
    if up is not None:
        raise ViewError(f"{out}: cannot write there: {up} is not a folder")
    folder = next(p for p in out.parents if p.exists())  # (where the missing folders would be made)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ViewError(f"{out}: cannot write there: {folder} is not writable")
    return out


def write_output(out: Path, write) -> None:
    """``write(out)``, making the missing folders above ``out`` first; when it fails, the folders it
    made are removed again (nothing is left behind) and `ViewError` names ``out``."""
    made = []
    folder = out.parent
    while not folder.exists():
        made.append(folder)
        folder = folder.parent
    try:
        for folder in reversed(made):
            folder.mkdir()
        remove_stale_temporaries(out.parent, out.name)  # of a view killed while writing
        write(out)
    except OSError as e:
        for folder in made:  # deepest first
            try:
                folder.rmdir()
            except OSError:
                break
        raise ViewError(f"{out}: cannot write there: {e.strerror or e}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.view", description=description(__doc__))
    parser.add_argument("file", metavar="FILE", help="a record (plain or a console line) or a solver summary.json")
    parser.add_argument("--out", help="output file (default: replay.html, or replay-PIECE.png with --png, beside a "
                                      "summary.json, in the working folder for a record)")
    parser.add_argument("--png", type=int, metavar="PIECE", help="write the board after this piece as a PNG instead")
    parser.add_argument("--rules", choices=sorted(PRESETS),
                        help="rules preset (default: the summary's, else geek)")
    args = parser.parse_args(argv)
    try:
        name = "replay.html" if args.png is None else f"replay-{args.png}.png"
        beside = Path(args.file).parent if Path(args.file).suffix == ".json" else Path()  # a solve's folder
        out = output_path(args.out, str(beside / name))
        game = load(args.file, args.rules)
        if args.png is not None and not 0 <= args.png <= game.pieces:
            raise ViewError(f"{args.file}: --png: piece {args.png} is outside 0..{game.pieces}")
        res = game.result
        if game.claimed is not None and game.claimed != res.score:
            print(f"warning: {args.file} states score {game.claimed:,} but its record replays to {res.score:,}",
                  file=sys.stderr)
        if args.png is not None:
            write_output(out, lambda path: write_png(game, args.png, path))
        else:
            write_output(out, lambda path: write_text(path, html(game)))  # mode 0666 less the umask, as open() makes
    except ViewError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except InvalidRecord as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {out}: {game.name}: score {res.score:,}, {res.bricks:,} pieces, {res.end}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
