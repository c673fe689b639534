"""The standard benchmark's series file (``--json``): its games kept game by game, rewritten at
most every `REWRITE_SECONDS` and with a journal of the games since (`SeriesFile`), read back
checked (`load_series`), and the states of the games in play that ``--resume`` goes on from.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from engine.files import (MAX_JSON_BYTES, ReadError, not_a_folder, read_json, read_text, remove_stale_temporaries,

                          write_json)
from engine.validation import show

from .players import UserError, inplay_path, read_state, settle, summarize

REWRITE_SECONDS = 10.0
#: the largest share of the time spent rewriting the series file (a rewrite that took t seconds is
#: followed by the next one t / REWRITE_SHARE seconds later at the earliest)
REWRITE_SHARE = 0.02


#: what a game of a series holds (a value's type; numbers are at least 0)
GAME_KEYS = {"seed": int, "rows": int, "pieces": int, "end": str, "cpu_seconds": (int, float)}
#: what a series file must hold to be continued
SERIES_KEYS = {"command": str, "evaluator": str, "rules": str, "width": int, "height": int, "cap": int, "date": str,
               "games": list}


def journal_path(path: Path) -> Path:
    """The journal of the series file ``path``: ``<path>.journal``, a game per line."""
    return path.with_name(path.name + ".journal")


def _typed(value, kind) -> bool:
    if not isinstance(value, kind) or isinstance(value, bool):
        return False
    return value >= 0 if isinstance(value, (int, float)) else True


def check_game(game, where: str) -> dict:
    """``game`` when it is one (`GAME_KEYS`); `UserError` naming ``where`` otherwise."""
    if not isinstance(game, dict):
        raise UserError(f"{where}: not a game (an object with {', '.join(GAME_KEYS)}), got {show(game)}")
    for key, kind in GAME_KEYS.items():
        if key not in game:
            raise UserError(f"{where}: {key}: missing")
        if not _typed(game[key], kind):
            want = "text" if kind is str else "a whole number >= 0" if kind is int else "a number >= 0"
            raise UserError(f"{where}: {key}: should be {want}, got {show(game[key])}")
    return game


def load_series(path: Path) -> dict:
    """The series in ``path`` and its journal's games (those not in it yet settled into it), every
    value checked; `UserError` (one line naming the file) when it is not a series this script wrote."""
    try:
        data = read_json(path, MAX_JSON_BYTES, "a series")
    except ReadError as e:
        raise UserError(str(e)) from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: not a series of bench_standard.py games (a JSON object), got {show(data)}")
    for key, kind in SERIES_KEYS.items():
        if key not in data:
            raise UserError(f"{path}: {key}: missing (not a series of bench_standard.py games)")
        if not _typed(data[key], kind):
            raise UserError(f"{path}: {key}: should be {'text' if kind is str else 'a list' if kind is list else 'a whole number >= 0'}, "
                            f"got {show(data[key])}")
    for key in ("ahead", "resumed"):
        if not isinstance(data.get(key, []), list):
            raise UserError(f"{path}: {key}: should be a list, got {show(data[key])}")
    if not all(isinstance(d, str) for d in data.get("resumed", [])):
        raise UserError(f"{path}: resumed: should be a list of dates")
    games = [check_game(g, f"{path}: games[{i}]") for i, g in enumerate(data["games"])]
    games.sort(key=lambda g: g["seed"])
    for a, b in zip(games, games[1:]):
        if b["seed"] != a["seed"] + 1:
            raise UserError(f"{path}: games: seed {a['seed']} is followed by {b['seed']} (a series' games have "
                            "consecutive seeds)")
    data["games"] = games
    ahead = {}
    for i, g in enumerate(data.get("ahead", [])):
        check_game(g, f"{path}: ahead[{i}]")
        ahead[g["seed"]] = g
    journal = journal_path(path)
    if journal.exists():
        try:
            lines = read_text(journal, MAX_JSON_BYTES, "a series' journal").split("\n")
        except ReadError as e:
            raise UserError(str(e)) from None
        for number, line in enumerate(lines[:-1], start=1):  # the last piece is empty, or a line cut short
            try:
                g = json.loads(line)
            except ValueError:
                raise UserError(f"{journal}: line {number}: not JSON") from None
            check_game(g, f"{journal}: line {number}")
            ahead.setdefault(g["seed"], g)
    done = {g["seed"] for g in games}
    data["ahead"] = [g for s, g in sorted(ahead.items()) if s not in done]
    if games:
        settle(data, games[0]["seed"])
    return data


class SeriesFile:
    """The series' file, rewritten atomically at bounded cost, and its journal, appended per game
    (held open from the first game on: a command stopped before one leaves no handle open)."""

    def __init__(self, path: Path, out: dict):
        self.path, self.journal_path, self.out = path, journal_path(path), out
        self.journal = None
        self.written_at = 0.0
        self.cost = 0.0

    def open(self) -> None:
        """Write the series as it stands and start an empty journal."""
        remove_stale_temporaries(self.path.parent, self.path.name)
        self.rewrite()

    def rewrite(self) -> None:
        """FILE written whole (atomically), then the journal emptied: its games are in FILE now."""
        start = time.monotonic()
        if self.out["games"]:
            summarize(self.out)
        write_json(self.path, self.out)
        if self.journal is None:
            open(self.journal_path, "w", encoding="utf-8").close()
        else:
            self.journal.seek(0)
            self.journal.truncate()
        self.written_at = time.monotonic()
        self.cost = self.written_at - start

    def add(self, game: dict) -> None:
        """A finished game: appended to the journal at once; FILE rewritten when it is due."""
        if self.journal is None:
            self.journal = open(self.journal_path, "a", encoding="utf-8")
        self.journal.write(json.dumps(game) + "\n")
        self.journal.flush()
        if time.monotonic() - self.written_at >= max(REWRITE_SECONDS, self.cost / REWRITE_SHARE):
            self.rewrite()

    def close(self) -> None:
        """The final FILE; the journal removed (Ctrl-C and SIGTERM are ignored until it is done)."""
        handlers = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.rewrite()
            if self.journal is not None:
                self.journal.close()
            self.journal_path.unlink(missing_ok=True)
        finally:
            for s, handler in handlers.items():
                signal.signal(s, handler)


def check_output(path: Path, resume: bool, force: bool) -> None:
    """`UserError` when the series file ``path`` cannot be (re)written as asked."""
    if path.is_dir():
        raise UserError(f"--json {path}: is a folder; name the series' file")
    up = not_a_folder(path)
    if up is not None:
        raise UserError(f"--json {path}: cannot write there: {up} is not a folder")
    if path.exists() and not path.is_file():
        raise UserError(f"--json {path}: not a regular file")
    if resume:
        if not path.exists():
            raise UserError(f"--resume: {path} does not exist (give the --json file of the series to continue)")
    elif (path.exists() or journal_path(path).exists() or in_play(path)) and not force:
        raise UserError(f"--json {path}: holds a series already; continue it with --resume, or replace it with --force")
    if path.exists() and not os.access(path, os.W_OK):
        raise UserError(f"--json {path}: read-only; make it writable, or name another file")


def keep_states(path: Path, tasks: list[dict], done: set, force: bool) -> list[tuple[int, int]]:
    """Give each task the state file of its game (``task["keep"]``) in the folder of the games in
    play of the series file ``path``, made if need be, and return (seed, pieces) of those that go on
    from a kept state, each checked (`read_state`) before any game is played. The states of games
    the series holds already are removed, and with ``force`` every state."""
    folder = inplay_path(path)
    remove_stale_temporaries(folder)
    for state in in_play(path) if force else [state_file(path, seed) for seed in done]:
        state.unlink(missing_ok=True)
    try:
        folder.mkdir(exist_ok=True)
    except OSError as e:
        raise UserError(f"--json {path}: cannot keep the games in play in {folder}: {e.strerror or e}") from None
    going_on = []
    for task in tasks:
        task["keep"] = str(state_file(path, task["seed"]))
        if Path(task["keep"]).exists():
            going_on.append((task["seed"], read_state(Path(task["keep"]), task)[0].pieces))
    return going_on


def state_file(path: Path, seed: int) -> Path:
    """The state file of the game of ``seed`` in play in the series file ``path``."""
    return inplay_path(path) / f"seed-{seed}.json"


def in_play(path: Path) -> list[Path]:
    """The state files of the games in play of the series file ``path`` (`inplay_path`)."""
    folder = inplay_path(path)
    return sorted(folder.glob("seed-*.json")) if folder.is_dir() else []
