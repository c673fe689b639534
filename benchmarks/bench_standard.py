"""The literature's benchmark: 1-ply players on the standard game (run by hand; prints figures for
docs/benchmark-standard.md, asserts nothing).

    python benchmarks/bench_standard.py speed [--evaluator dellacherie] [--pieces 1000000]
    python benchmarks/bench_standard.py games [--evaluator dellacherie] [--games 10] [--seed 1000]
        [--cap 1000000000] [--rules standard] [--height 20] [--json FILE] [--resume | --force] [--jobs 1]

``speed``: pieces per second of the 1-ply player (the whole game loop, in numba), one thread, kernels
compiled before timing: CPU time (user + system of this process) over ``--pieces`` pieces of
seeded games (seed 0, 1, ... until that many are placed).

``games``: ``--games`` seeded games (seeds ``--seed`` ...) of at most ``--cap`` pieces each, on the
rules preset ``--rules`` or the same rules on a board of ``--height`` rows (the literature's smaller
boards: 10 x 10, 10 x 14, ...); prints each game's rows, then the mean rows per game with its 95%
confidence interval (`solver.online.intervals.mean_ci95`). ``--jobs N`` plays N games at once in
worker processes (`engine.parallel.Pool`): a game is its seed's, so the series is the same whatever
N. The series' figures count its games up to the first seed not yet finished: a game that ends
while an earlier seed is still being played (a shorter one, most likely) waits in ``ahead`` until
the gap is filled, so stopping a parallel run never favours short games. ``--evaluator`` is a
preset name or an evaluator YAML file.

The series file (``--json FILE``): every finished game is appended at once, as one JSON line, to
``FILE.journal``, and FILE, the series with its figures, is rewritten whole and atomically at the
start, at most every 10 s and no more than 2% of the time (`REWRITE_SECONDS`, `REWRITE_SHARE`: a
rewrite costs the length of the series), and at the end, when the journal is removed. A run stopped
or killed at any moment keeps its games: ``--resume`` reads FILE and its journal back, every value
checked, keeps their games and goes on from the next seed (games are deterministic, so a game
stopped half-way is played again from its start). An existing FILE is never replaced silently:
without ``--resume`` it is refused unless ``--force`` is given.

Every problem with the command line or the files (a number out of range, an unknown evaluator, a
``--json`` that is a folder, cannot be written, or is not a series of this player, rules, board,
cap and first seed) is one line naming the option or file and the problem, exit status 2, before
any game is played. Ctrl-C or a kill (SIGTERM) writes the games finished so far and exits with 130.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pydantic import ValidationError  # noqa: E402

from engine import PRESETS, get_rules  # noqa: E402
from engine.files import (MAX_JSON_BYTES, ReadError, not_a_folder, read_json, read_text,  # noqa: E402
                          remove_stale_temporaries, write_json)
from engine.parallel import ParallelConfig, Pool  # noqa: E402
from engine.validation import problem, show  # noqa: E402
from evaluators import EvaluatorError, load_evaluator  # noqa: E402
from solver import SolverConfig  # noqa: E402
from solver.online import play_games  # noqa: E402
from solver.online.intervals import CI_METHOD, mean_ci95  # noqa: E402
from solver.registry import get as get_policy  # noqa: E402

#: seconds between two rewrites of the series file at least
REWRITE_SECONDS = 10.0
#: the largest share of the time spent rewriting the series file (a rewrite that took t seconds is
#: followed by the next one t / REWRITE_SHARE seconds later at the earliest)
REWRITE_SHARE = 0.02


class UserError(ValueError):
    """A problem with the command line or a file: one line naming the option or file."""


def make(evaluator: str, rules_name: str, height: int | None):
    """The 1-ply player of ``evaluator`` under the preset ``rules_name``, on ``height`` rows if given;
    `UserError` naming the option when it cannot be made."""
    rules = get_rules(rules_name)
    if height is not None and height != rules.height:
        try:
            rules = replace(rules, name=f"{rules.name}-{rules.width}x{height}", height=height)
        except ValueError as e:
            raise UserError(f"--height {height}: {str(e).partition(': ')[2] or e}") from None
    config = SolverConfig(policy="one_ply", rules=rules_name, evaluator=evaluator, pieces=1, threads=1)
    try:
        return get_policy("one_ply").policy(config, rules, load_evaluator(evaluator)), rules
    except (EvaluatorError, ValueError) as e:
        raise UserError(f"--evaluator: {e}") from None


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def at_least(args, **bounds: int) -> None:
    """`UserError` for an option below its bound (``games=1``: ``--games`` at least 1)."""
    for name, low in bounds.items():
        value = getattr(args, name)
        if value < low:
            raise UserError(f"--{name} {value}: must be at least {low}")


def speed(args) -> int:
    at_least(args, pieces=1)
    policy, rules = make(args.evaluator, args.rules, args.height)
    play_games(policy, [0], 2)  # compile or load the kernels
    placed = rows = 0
    seed = 0
    cpu = time.process_time()
    while placed < args.pieces:
        g = play_games(policy, [seed], args.pieces - placed)
        placed += int(g.pieces.sum())
        rows += int(g.scores.sum())
        seed += 1
    cpu = time.process_time() - cpu
    print(f"{args.evaluator} 1-ply on {rules.name} ({rules.width} x {rules.height}): {placed:,} pieces, "
          f"{rows:,} rows in {cpu:.2f} s CPU ({seed} game(s)): {placed / cpu:,.0f} pieces/s, "
          f"{rows / cpu:,.0f} rows/s (commit {commit()}, {time.strftime('%Y-%m-%d')})")
    return 0


def summarize(out: dict) -> None:
    """The series' figures from its games, in place: n, mean, std, ci95, capped, cpu_seconds."""
    rows = np.array([x["rows"] for x in out["games"]])
    ci = mean_ci95(rows)
    out.update(n=len(rows), mean=round(float(rows.mean()), 1), std=round(float(rows.std(ddof=1)), 1) if len(rows) > 1
               else None, ci95=None if ci is None else [round(ci[0], 1), round(ci[1], 1)],
               capped=sum(x["end"] == "capped" for x in out["games"]),
               cpu_seconds=round(sum(x["cpu_seconds"] for x in out["games"]), 1))


_players: dict = {}


def play_one(task: dict) -> dict:
    """One seeded game of a series (in this process or a worker; the player is built once per
    process): its seed, rows, pieces, end and CPU seconds."""
    key = (task["evaluator"], task["rules"], task["height"])
    if key not in _players:
        _players[key] = make(*key)[0]
    cpu = time.process_time()
    g = play_games(_players[key], [task["seed"]], task["cap"])
    return {"seed": task["seed"], "rows": int(g.scores[0]), "pieces": int(g.pieces[0]), "end": g.ends[0],
            "cpu_seconds": round(time.process_time() - cpu, 2)}


def settle(out: dict, first: int) -> None:
    """Move the games of ``out["ahead"]`` that now follow the series' games (in seed order) without a
    gap (seeds ``first``, ``first`` + 1, ...) into ``out["games"]``, in seed order (the cost is that
    of ``ahead``, not of the series)."""
    ahead = {x["seed"]: x for x in out.get("ahead", [])}
    nxt = out["games"][-1]["seed"] + 1 if out["games"] else first
    while nxt in ahead:
        out["games"].append(ahead.pop(nxt))
        nxt += 1
    out["ahead"] = sorted(ahead.values(), key=lambda x: x["seed"])


# ------------------------------------------------------------------------------------------------
# The series file and its journal

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
    """The series' file, rewritten atomically at bounded cost, and its journal, appended per game."""

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
            self.journal = open(self.journal_path, "w", encoding="utf-8")
        else:
            self.journal.seek(0)
            self.journal.truncate()
        self.written_at = time.monotonic()
        self.cost = self.written_at - start

    def add(self, game: dict) -> None:
        """A finished game: appended to the journal at once; FILE rewritten when it is due."""
        self.journal.write(json.dumps(game) + "\n")
        self.journal.flush()
        if time.monotonic() - self.written_at >= max(REWRITE_SECONDS, self.cost / REWRITE_SHARE):
            self.rewrite()

    def close(self) -> None:
        """The final FILE; the journal removed (Ctrl-C and SIGTERM are ignored until it is done)."""
        handlers = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.rewrite()
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
    elif (path.exists() or journal_path(path).exists()) and not force:
        raise UserError(f"--json {path}: holds a series already; continue it with --resume, or replace it with --force")
    if path.exists() and not os.access(path, os.W_OK):
        raise UserError(f"--json {path}: read-only; make it writable, or name another file")


def games(args) -> int:
    at_least(args, games=1, cap=1, seed=0, jobs=1)
    try:
        parallel = ParallelConfig(n_jobs=args.jobs, threads=1)
    except ValidationError as e:
        raise UserError(f"--jobs {args.jobs}: {problem(e)[1]}") from None
    if args.resume and args.force:
        raise UserError("--resume continues the series in --json, --force replaces it: give one")
    if args.json is None and args.resume:
        raise UserError("--resume: give the --json file of the series to continue")
    if args.json is not None:
        check_output(args.json, args.resume, args.force)
    policy, rules = make(args.evaluator, args.rules, args.height)
    out = {"command": " ".join(["python", "benchmarks/bench_standard.py", *sys.argv[1:]]),
           "evaluator": args.evaluator, "rules": args.rules, "width": rules.width, "height": rules.height,
           "cap": args.cap, "commit": commit(), "date": time.strftime("%Y-%m-%d %H:%M"),
           "machine": platform.node(), "ci95_method": CI_METHOD, "games": []}
    if args.resume:
        before = load_series(args.json)
        for key, ours in (("evaluator", args.evaluator), ("rules", args.rules), ("height", rules.height),
                          ("cap", args.cap)):
            if before[key] != ours:
                raise UserError(f"--resume: {args.json} is a series of {key} {show(before[key])}, not {show(ours)}: "
                                "give the same --evaluator, --rules, --height and --cap")
        seeds = [g["seed"] for g in before["games"] + before["ahead"]]
        if seeds and min(seeds) < args.seed or before["games"] and before["games"][0]["seed"] != args.seed:
            first = before["games"][0]["seed"] if before["games"] else min(seeds)
            raise UserError(f"--seed {args.seed}: the series in {args.json} starts at seed {first}; resume it with "
                            f"--seed {first}")
        out["games"] = before["games"]
        out["resumed"] = before.get("resumed", []) + [out["date"]]
        out["date"], out["command"] = before["date"], before["command"]
        out["ahead"] = before["ahead"]
    series = None
    if args.json is not None:
        series = SeriesFile(args.json, out)
        try:
            series.open()
        except OSError as e:
            raise UserError(f"--json {args.json}: cannot write there: {e.strerror or e}") from None
    first = out["games"][0]["seed"] if out["games"] else args.seed
    done = {g["seed"] for g in out["games"] + out.get("ahead", [])}
    tasks = [{"evaluator": args.evaluator, "rules": args.rules, "height": args.height, "seed": seed, "cap": args.cap}
             for seed in range(args.seed, args.seed + args.games) if seed not in done]
    play_games(policy, [0], 2)  # compile or load the kernels
    _players[(args.evaluator, args.rules, args.height)] = policy

    def finished(_, g: dict) -> None:
        out.setdefault("ahead", []).append(g)
        settle(out, first)
        print(f"seed {g['seed']}: {g['rows']:,} rows, {g['pieces']:,} pieces, {g['end']}, {g['cpu_seconds']:.1f} s CPU"
              + (f" ({len(out['ahead'])} ahead of an unfinished seed)" if out["ahead"] else ""), flush=True)
        if series is not None:
            series.add(g)

    def stop(signum, frame):  # a kill stops like Ctrl-C: the games so far are written
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    interrupted = False
    try:
        try:
            Pool(parallel).map(play_one, tasks, on_result=finished)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            if series is not None:
                series.close()
    except OSError as e:
        print(f"error: --json {args.json}: cannot write there: {e.strerror or e}; the games so far are in "
              f"{series.journal_path} (continue with --resume once it can be written)", file=sys.stderr)
        return 2
    if interrupted:
        kept = f"; {len(out['games']) + len(out.get('ahead', []))} games kept in {args.json}, continue with --resume" \
            if series is not None else ""
        print(f"interrupted{kept}", file=sys.stderr)
        return 130
    if not out["games"]:
        print("no games played", file=sys.stderr)
        return 1
    summarize(out)
    ci = f", 95% CI {out['ci95'][0]:,.0f} .. {out['ci95'][1]:,.0f}" if out["ci95"] else ""
    print(f"{args.evaluator} on {rules.name} ({rules.width} x {rules.height}), {out['n']} games, cap {args.cap:,}: "
          f"mean {out['mean']:,.0f} rows{ci}, {out['capped']} capped, {out['cpu_seconds']:,.0f} s CPU")
    return 0


def series_file(text: str) -> Path:
    """``--json``'s value: a file name (not empty)."""
    if not text:
        raise argparse.ArgumentTypeError("empty: name the series' file")
    return Path(text)


class Parser(argparse.ArgumentParser):
    """argparse, with its errors in one line."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (--help: the options)\n")


def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog="bench_standard.py", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    for name in ("speed", "games"):
        p = sub.add_parser(name)
        p.add_argument("--evaluator", default="dellacherie")
        p.add_argument("--rules", default="standard", choices=[n for n in PRESETS if n.startswith("standard")])
        p.add_argument("--height", type=int, help="rows of the board (default: the preset's 20)")
        if name == "speed":
            p.add_argument("--pieces", type=int, default=1_000_000)
        else:
            p.add_argument("--games", type=int, default=10)
            p.add_argument("--seed", type=int, default=1000)
            p.add_argument("--cap", type=int, default=1_000_000_000, help="pieces per game at most")
            p.add_argument("--json", type=series_file, help="the series file (its games also in FILE.journal while it runs)")
            p.add_argument("--resume", action="store_true", help="continue the series in --json")
            p.add_argument("--force", action="store_true", help="replace the series in --json (else refused)")
            p.add_argument("--jobs", type=int, default=1, help="games at once, in worker processes (the series "
                           "is the same whatever the number)")
    args = ap.parse_args(argv)
    try:
        return speed(args) if args.what == "speed" else games(args)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
