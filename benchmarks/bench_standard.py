"""The literature's benchmark: 1-ply players on the standard game (run by hand; prints figures for
docs/benchmark-standard.md, asserts nothing).

    python benchmarks/bench_standard.py speed [--evaluator dellacherie] [--pieces 1000000]
    python benchmarks/bench_standard.py games [--evaluator dellacherie] [--games 10] [--seed 1000]
        [--cap 1000000000] [--rules standard] [--height 20] [--json FILE] [--resume | --force] [--jobs 1]
    python benchmarks/bench_standard.py --versus PATH [--runs 3] [--only dellacherie|bcts] [--games N] [--height H]

``speed``: pieces per second of the 1-ply player, one thread; ``games``: a seeded series and its
mean rows per game with its 95% interval, kept game by game in a resumable series file (``--json``);
``--versus``: MdpTetris's ``mdptetris_play_games`` beside ours, whole processes, rows per CPU second
(`VERSUS`, `VERSUS_RULES`, `MDPTETRIS_FEATURES`: what is checked to be the same game first). Every
problem is one line naming the option or file, exit status 2; Ctrl-C or SIGTERM writes the games
finished so far and exits with 130. What each option does and how the figures are taken:
docs/benchmark-standard.md ("Running it", "Beside MdpTetris: building the peer").
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pydantic import ValidationError  # noqa: E402

from engine import PRESETS, get_rules  # noqa: E402
from engine.config import ConfigError  # noqa: E402
from engine.files import (MAX_CONFIG_BYTES, MAX_JSON_BYTES, ReadError, YamlError, load_yaml,  # noqa: E402
                          not_a_folder, read_json, read_text, remove_stale_temporaries, write_json)
from engine.parallel import ParallelConfig, Pool  # noqa: E402
from engine.validation import problem, show  # noqa: E402
from evaluators import EvaluatorError, load_evaluator  # noqa: E402
from evaluators.registry import canonical  # noqa: E402
from solver import SolverConfig, load_solver_config  # noqa: E402
from solver.online import play_games  # noqa: E402
from solver.online.games import GameCheckpoint, play_game  # noqa: E402
from solver.online.intervals import CI_METHOD, mean_ci95, survival_summary  # noqa: E402
from solver.registry import get as get_policy  # noqa: E402
from experiments import description  # noqa: E402

#: wall seconds between two states kept of a game being played (``FILE.inplay/seed-N.json``) at least
KEEP_SECONDS = 60.0
#: seconds between two rewrites of the series file at least
REWRITE_SECONDS = 10.0
#: the largest share of the time spent rewriting the series file (a rewrite that took t seconds is
#: followed by the next one t / REWRITE_SHARE seconds later at the earliest)
REWRITE_SHARE = 0.02


class UserError(ValueError):
    """A problem with the command line or a file: one line naming the option or file."""


def evaluator_of(source: str):
    """What ``--evaluator`` names, as `load_evaluator` takes it: a preset name or an evaluator file as
    given, or the ``evaluator`` of a solver configuration (a file with ``policy`` and ``evaluator``
    keys: a tuning run's best.yaml or recommendation.yaml), read by `load_solver_config` (a relative
    evaluator path is the configuration's folder's)."""
    path = Path(source)
    if not path.is_file():
        return source
    try:
        data = load_yaml(path)
        if isinstance(data, dict) and "policy" in data and "evaluator" in data:
            return load_solver_config(path).evaluator
    except YamlError as e:
        raise UserError(f"--evaluator: {source}: {e.problem}") from None
    except ConfigError as e:
        raise UserError(f"--evaluator: {e}") from None
    return source


def make(evaluator: str, rules_name: str, height: int | None):
    """The 1-ply player of ``evaluator`` (`evaluator_of`) under the preset ``rules_name``, on
    ``height`` rows if given; `UserError` naming the option when it cannot be made."""
    rules = get_rules(rules_name)
    if height is not None and height != rules.height:
        try:
            rules = replace(rules, name=f"{rules.name}-{rules.width}x{height}", height=height)
        except ValueError as e:
            raise UserError(f"--height {height}: {str(e).partition(': ')[2] or e}") from None
    evaluator = evaluator_of(evaluator)
    try:
        player = load_evaluator(evaluator)
        config = SolverConfig(policy="one_ply", rules=rules_name, evaluator=evaluator, pieces=1, threads=1)
        return get_policy("one_ply").policy(config, rules, player), rules
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
    if out["capped"]:  # the mean of uncapped games, the capped ones censored (a survival model)
        out["survival"] = survival_summary(rows, [x["pieces"] for x in out["games"]],
                                           [x["end"] != "capped" for x in out["games"]])
    else:
        out.pop("survival", None)


_players: dict = {}


def play_one(task: dict) -> dict:
    """One seeded game of a series (in this process or a worker; the player is built once per
    process): its seed, rows, pieces, end and CPU seconds. With ``task["keep"]`` (a game's state
    file, `inplay_path`) the game goes on from the state there, if any, and keeps its state there
    every `KEEP_SECONDS`."""
    key = (task["evaluator"], task["rules"], task["height"])
    if key not in _players:
        _players[key] = make(*key)[0]
    path = Path(task["keep"]) if task.get("keep") else None
    start, before = None, 0.0
    if path is not None and path.exists():
        start, before = read_state(path, task)
    cpu = time.process_time()

    def keep(state: GameCheckpoint) -> None:
        spent = round(before + time.process_time() - cpu, 2)
        write_json(path, {**{k: task[k] for k in STATE_KEYS}, "cpu_seconds": spent, "game": state.to_json()})

    rows, pieces, end, _, _ = play_game(_players[key], task["seed"], task["cap"], start=start,
                                        keep=keep if path is not None else None, keep_seconds=KEEP_SECONDS)
    return {"seed": task["seed"], "rows": rows, "pieces": pieces, "end": end,
            "cpu_seconds": round(before + time.process_time() - cpu, 2)}


#: what a game's state file holds besides the game: whose game it is (checked against the task)
STATE_KEYS = ("evaluator", "rules", "height", "cap", "seed")


def inplay_path(path: Path) -> Path:
    """The folder of the games in play of the series file ``path``: ``<path>.inplay``."""
    return path.with_name(path.name + ".inplay")


def read_state(path: Path, task: dict) -> tuple[GameCheckpoint, float]:
    """The game state in ``path`` (`play_one`'s ``keep``) and the CPU seconds it had taken, checked
    against ``task``: `UserError` naming the file and the problem."""
    try:
        data = read_json(path, MAX_JSON_BYTES, "a game's state")
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        for k in STATE_KEYS:
            if data.get(k) != task[k]:
                raise ValueError(f"{k}: {show(data.get(k))}, but the series' is {show(task[k])}")
        cpu = data.get("cpu_seconds")
        if type(cpu) not in (int, float) or cpu < 0:
            raise ValueError(f"cpu_seconds: should be a number >= 0, got {show(cpu)}")
        state = GameCheckpoint.from_json(data.get("game"))
        if state.seed != task["seed"]:
            raise ValueError(f"game: seed {state.seed}, but the file is seed {task['seed']}'s")
    except ReadError as e:
        raise UserError(str(e)) from None
    except ValueError as e:
        raise UserError(f"{path}: not a game state of this series ({e}); remove it to play that game from its "
                        "start") from None
    return state, float(cpu)


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
    if args.json is not None:
        going_on = keep_states(args.json, tasks, done, args.force)
        if going_on:
            print("going on from their kept states: "
                  + ", ".join(f"seed {seed} at piece {n:,}" for seed, n in going_on), flush=True)
    play_games(policy, [0], 2)  # compile or load the kernels
    _players[(args.evaluator, args.rules, args.height)] = policy

    def finished(_, g: dict) -> None:
        out.setdefault("ahead", []).append(g)
        settle(out, first)
        print(f"seed {g['seed']}: {g['rows']:,} rows, {g['pieces']:,} pieces, {g['end']}, {g['cpu_seconds']:.1f} s CPU"
              + (f" ({len(out['ahead'])} ahead of an unfinished seed)" if out["ahead"] else ""), flush=True)
        if series is not None:
            series.add(g)
            state_file(args.json, g["seed"]).unlink(missing_ok=True)  # in the journal now

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
        kept = f"; {len(out['games']) + len(out.get('ahead', []))} games kept in {args.json}, " \
               f"{len(in_play(args.json))} in play in {inplay_path(args.json)}, continue with --resume" \
            if series is not None else ""
        print(f"interrupted{kept}", file=sys.stderr)
        return 130
    if args.json is not None:
        with contextlib.suppress(OSError):
            inplay_path(args.json).rmdir()  # every game finished: its games in play are gone
    if not out["games"]:
        print("no games played", file=sys.stderr)
        return 1
    summarize(out)
    ci = f", 95% CI {out['ci95'][0]:,.0f} .. {out['ci95'][1]:,.0f}" if out["ci95"] else ""
    print(f"{args.evaluator} on {rules.name} ({rules.width} x {rules.height}), {out['n']} games, cap {args.cap:,}: "
          f"mean {out['mean']:,.0f} rows{ci}, {out['capped']} capped, {out['cpu_seconds']:,.0f} s CPU")
    if "survival" in out:
        s = out["survival"]
        shown = lambda v: "inf" if v is None else f"{v:,.0f}"  # noqa: E731
        print(f"  uncapped, by a survival model (capped games censored): mean {shown(s['mean'])} rows, "
              f"95% CI {shown(s['ci95'][0])} .. {shown(s['ci95'][1])}")
    return 0


# ------------------------------------------------------------------------------------------------
# --versus: MdpTetris beside ours

#: what --versus compares (``--only`` names one): our evaluator, MdpTetris's feature file for the
#: same player (in its data/features), the board's height (10 columns) and the games each process
#: plays (``--height``, ``--games`` replace the last two)
VERSUS = {"dellacherie": ("dellacherie", "dellacherie_initial.dat", 14, 200),
          "bcts": ("bcts", "record_du.dat", 10, 1000)}

#: MdpTetris's feature ids (its ``FeatureID``, include/feature_policy.h) for the features our
#: players weigh (docs/benchmark-standard.md, "Features and players")
MDPTETRIS_FEATURES = {1: "landing_height_zero_based", 2: "eroded_cells", 3: "row_transitions",
                      4: "column_transitions", 5: "holes", 6: "wells_empty_below", -1: "hole_depth",
                      -2: "rows_with_holes"}

#: the rules our side plays: MdpTetris's simplified game as ``mdptetris_play_games`` builds it
#: (``new_game(0, width, height, 0, "pieces4.dat", NULL)`` in its src/play_games.c: drops only, no
#: preview, a point per row, ``allow_lines_after_overflow`` 0, our overflow rule "end")
VERSUS_RULES = "standard"


#: the first seed of our side's games (run i plays seeds VERSUS_SEED + i * games onwards)
VERSUS_SEED = 1000


def our_command(evaluator: str, height: int, n: int, seed: int, series: Path) -> list[str]:
    """Our side of a ``--versus`` pair: this script's ``games``, one thread, in a new process."""
    return [sys.executable, str(Path(__file__).resolve()), "games", "--rules", VERSUS_RULES, "--evaluator", evaluator,
            "--height", str(height), "--games", str(n), "--seed", str(seed), "--json", str(series), "--force"]


def peer(path: Path, features: list[str]) -> tuple[Path, Path]:
    """MdpTetris's ``mdptetris_play_games`` and its data folder from ``--versus PATH``: its checkout
    built in place (PATH/src/mdptetris_play_games, PATH/data), or the program itself (its data
    folder then beside its folder); `UserError` when either, its pieces or one of ``features``
    (files of data/features) is missing."""
    if path.is_dir():
        program, data = path / "src" / "mdptetris_play_games", path / "data"
    else:
        program, data = path, path.resolve().parent.parent / "data"
    if not program.is_file() or not os.access(program, os.X_OK):
        raise UserError(f"--versus {path}: no program {program} (build MdpTetris first: docs/benchmark-standard.md)")
    for need in ["pieces4.dat", *(f"features/{name}" for name in features)]:
        if not (data / need).is_file():
            raise UserError(f"--versus {path}: {data / need} is missing (MdpTetris's data folder)")
    return program.resolve(), data


def feature_file(path: Path) -> dict[str, float]:
    """The player of MdpTetris's feature file ``path`` in our feature names (`MDPTETRIS_FEATURES`):
    its weights; `UserError` naming the file when it is not a fixed-weight player ``--versus``
    can compare: a reward function other than 0 (none), a game-over value other than -1 (a move that
    ends the game valued -1e100, as ours never plays one unless every move does), or a feature we
    do not have."""
    try:
        words = read_text(path, MAX_CONFIG_BYTES, "a feature file").split()
    except ReadError as e:
        raise UserError(str(e)) from None
    try:
        reward, gameover, n = (int(w) for w in words[:3])
        pairs = [(int(words[3 + 2 * i]), float(words[4 + 2 * i])) for i in range(n)]
    except (ValueError, IndexError):
        raise UserError(f"{path}: not a MdpTetris feature file (reward function, game-over value, number of "
                        "features, then a feature id and a weight per feature)") from None
    if reward != 0 or gameover != -1:
        raise UserError(f"{path}: reward function {reward}, game-over value {gameover}: --versus compares "
                        "players with reward function 0 and game-over value -1 only")
    unknown = sorted({i for i, _ in pairs} - set(MDPTETRIS_FEATURES))
    if unknown:
        raise UserError(f"{path}: feature id {unknown[0]}: not one of ours (MDPTETRIS_FEATURES)")
    weights: dict[str, float] = {}
    for i, w in pairs:
        weights[MDPTETRIS_FEATURES[i]] = weights.get(MDPTETRIS_FEATURES[i], 0.0) + w
    return weights


def same_player(name: str, evaluator: str, path: Path, height: int) -> None:
    """`UserError` unless our ``games`` plays ``evaluator`` on 10 x ``height`` as ``mdptetris_play_games``
    plays the feature file ``path``: the same rules (`VERSUS_RULES`), MdpTetris's tie rule (a move
    replaces the best so far only if it is better, so the first best in (orientation, column)
    order wins: our ``state_then_column``), and the same features with the same weights."""
    rules = get_rules(VERSUS_RULES)
    try:
        rules = replace(rules, height=height)
    except ValueError as e:
        raise UserError(f"--height {height}: {str(e).partition(': ')[2] or e}") from None
    if (rules.width, rules.placement, rules.overflow, rules.preview, rules.score_table, rules.score_by_cells) != \
            (10, "drop", "end", False, (0, 1, 2, 3, 4), False):
        raise UserError(f"rules {VERSUS_RULES!r} are no longer MdpTetris's simplified game with "
                        "allow_lines_after_overflow 0 (VERSUS_RULES)")
    try:
        ours = load_evaluator(evaluator)
    except EvaluatorError as e:
        raise UserError(f"--only {name}: {e}") from None
    if ours.tie_break != "state_then_column":
        raise UserError(f"--only {name}: {evaluator} breaks ties by {ours.tie_break}, MdpTetris by the first "
                        "(orientation, column): state_then_column")
    mine = {canonical(k): t.weight for k, t in ours.weights.items() if t.weight != 0}
    if any(t.table is not None or t.delta for t in ours.weights.values()):
        raise UserError(f"--only {name}: {evaluator} has a table or delta term, which MdpTetris's files cannot hold")
    theirs = {k: w for k, w in feature_file(path).items() if w != 0}
    if mine.keys() != theirs.keys() or any(not math.isclose(mine[k], theirs[k], rel_tol=1e-9) for k in mine):
        differ = sorted(k for k in mine.keys() | theirs.keys()
                        if not math.isclose(mine.get(k, 0.0), theirs.get(k, 0.0), rel_tol=1e-9))
        differences = ", ".join(f"{k} {theirs.get(k, 0.0):g} against our {mine.get(k, 0.0):g}" for k in differ)
        raise UserError(f"{path}: not {evaluator}'s player: {differences}")


def run_timed(command: list[str], who: str, cwd: Path | None = None, keep_output: bool = False,
              core: int | None = None) -> tuple[str, float]:
    """Run ``command`` to its end, pinned to CPU ``core`` when one is given: (its standard output if
    ``keep_output``, the CPU seconds, user + system, the system accounts for the finished process and
    the children it waited for: wait4); `UserError` naming ``who`` with its last line of errors when
    it cannot run or fails."""
    pin = (lambda: os.sched_setaffinity(0, {core})) if core is not None else None
    with tempfile.TemporaryFile("w+") as err:
        try:
            proc = subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE if keep_output else subprocess.DEVNULL, stderr=err,
                                    text=True, preexec_fn=pin)
        except OSError as e:
            raise UserError(f"{who}: cannot run {command[0]}: {e.strerror or e}") from None
        out = ""
        if keep_output:
            out = proc.stdout.read()
            proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        if code != 0:
            err.seek(0)
            last = (err.read().strip().splitlines() or ["no message"])[-1].strip()
            end = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
            raise UserError(f"{who}: {end}: {last}")
    cpu = usage.ru_utime + usage.ru_stime
    if cpu <= 0:
        raise UserError(f"{who}: no CPU time measured (too short: raise --games)")
    return out, cpu


def mdptetris_scores(out: str, n: int, who: str) -> list[int]:
    """The rows of each game ``mdptetris_play_games`` printed (a line starting with ``#``, the
    scores separated by spaces, then ``Mean score: M``); `UserError` naming ``who`` unless it printed
    ``n`` of them and their mean."""
    scores_text, found, rest = out.partition("Mean score:")
    if not found:
        raise UserError(f"{who}: no 'Mean score:' line in its output (is it mdptetris_play_games?)")
    scores = []
    for line in scores_text.splitlines():
        if line.startswith("#"):  # "# Initializing the random number generator with seed ..."
            continue
        for word in line.split():
            if not word.isdigit():
                raise UserError(f"{who}: {word!r} where a game's score was expected")
            scores.append(int(word))
    if len(scores) != n:
        raise UserError(f"{who}: printed {len(scores)} scores for {n} games")
    try:
        mean = float(rest.split()[0])
    except (IndexError, ValueError):
        raise UserError(f"{who}: no number after 'Mean score:'") from None
    if abs(mean - sum(scores) / n) > 1e-6 * max(1.0, mean) + 1e-6:
        raise UserError(f"{who}: its mean score {mean} is not the mean of its {n} scores ({sum(scores) / n})")
    return scores


def versus(args) -> int:
    at_least(args, runs=1)
    if args.versus_games is not None and args.versus_games < 1:
        raise UserError(f"--games {args.versus_games}: must be at least 1")
    names = list(dict.fromkeys(args.only or VERSUS))
    cases = []
    for name in names:
        evaluator, features, height, n = VERSUS[name]
        cases.append((name, evaluator, features, args.versus_height or height, args.versus_games or n))
    program, data = peer(args.versus, [c[2] for c in cases])
    for name, evaluator, features, height, _ in cases:
        same_player(name, evaluator, data / "features" / features, height)
    load = lambda: " ".join(f"{x:.2f}" for x in os.getloadavg())  # noqa: E731
    print(f"MdpTetris ({program}) beside ours, commit {commit()}, {time.strftime('%Y-%m-%d %H:%M')}, "
          f"{args.runs} pair(s) a player, load average {load()}\n"
          "  whole processes one after the other (which one first alternates from pair to pair); CPU time = "
          "user + system of each finished process (wait4)\n"
          f"  ours: a new `games --rules {VERSUS_RULES}` process each run, so the interpreter's start, the imports "
          "and loading the kernels from numba's cache are counted, compiling is not (an untimed run of each "
          "side first fills numba's cache and the page cache)\n"
          "  the same game: MdpTetris's simplified game, allow_lines_after_overflow 0 (as mdptetris_play_games "
          f"builds it) = our {VERSUS_RULES!r} rules; ties to the first (orientation, column) = state_then_column; "
          "its feature file's weights = our preset's (checked); MdpTetris seeds its pieces from the clock, so "
          "the games differ", flush=True)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-versus-") as tmp:
            pit(program, data, cases, args.runs, Path(tmp), load)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


def pit(program: Path, data: Path, cases: list, runs: int, tmp: Path, load) -> None:
    """`versus`'s pairs, for each of ``cases`` (name, evaluator, feature file, height, games), with
    their files in ``tmp``: prints each pair, the medians and the ratio."""
    series, stats = tmp / "ours.json", tmp / "stats.txt"

    def ours(evaluator: str, height: int, n: int, seed: int) -> tuple[int, float, float]:
        """(rows, CPU seconds of the process, CPU seconds of its games alone)"""
        command = our_command(evaluator, height, n, seed, series)
        _, cpu = run_timed(command, f"ours (games --evaluator {evaluator} --height {height} --games {n})")
        try:
            played = json.loads(series.read_text(encoding="utf-8"))["games"]
            rows, in_games = sum(g["rows"] for g in played), sum(g["cpu_seconds"] for g in played)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise UserError(f"ours: {series}: not the series of its games ({e})") from None
        if len(played) != n:
            raise UserError(f"ours: {series}: {len(played)} games for {n}")
        return rows, cpu, in_games

    def theirs(features: str, height: int, n: int) -> tuple[int, float]:
        command = [str(program), f"features/{features}", str(n), "10", str(height), str(stats)]
        who = f"--versus: {program.name} {' '.join(command[1:5])}"
        out, cpu = run_timed(command, who, cwd=data, keep_output=True)
        return sum(mdptetris_scores(out, n, who)), cpu

    for _, evaluator, features, height, n in cases:
        print(f"{evaluator} on 10 x {height}, {n:,} games a process (MdpTetris: features/{features}):", flush=True)
        (a, acpu, _), (b, bcpu) = ours(evaluator, height, 1, VERSUS_SEED), theirs(features, height, 1)
        print(f"  warm-up, 1 game each, not counted: ours {a:,} rows in {acpu:.2f} s of CPU, MdpTetris {b:,} rows "
              f"in {bcpu:.2f} s", flush=True)
        pairs = []
        for i in range(runs):
            seed = VERSUS_SEED + i * n  # other games each run, as MdpTetris's
            if i % 2 == 0:
                o = ours(evaluator, height, n, seed)
                t = theirs(features, height, n)
            else:
                t = theirs(features, height, n)
                o = ours(evaluator, height, n, seed)
            pairs.append((o, t))
            f = pair_rates(o, t)
            print(f"  pair {i + 1} ({'ours' if i % 2 == 0 else 'MdpTetris'} first): ours {o[0]:,} rows in "
                  f"{o[1]:.2f} s ({f['ours']:,.0f}/s; {o[2]:.2f} s in its games), MdpTetris {t[0]:,} rows in "
                  f"{t[1]:.2f} s ({f['theirs']:,.0f}/s): ratio {f['ratio']:.3f}", flush=True)
        f = versus_figures(pairs)
        spread = lambda k: f"{f[k][0]:>9,.0f} ({f[k][1]:,.0f}-{f[k][2]:,.0f})"  # noqa: E731
        print(f"  rows per CPU second, median (min-max) of {runs}, load average now {load()}:")
        print(f"    MdpTetris {spread('theirs')}; {f['theirs_cpu']:.2f} s of CPU a process")
        print(f"    ours      {spread('ours')}; {f['ours_cpu']:.2f} s of CPU a process, "
              f"{f['ours_outside']:.2f} s of it outside its games")
        print(f"  ratio ours / MdpTetris (above 1: ours clears more rows per CPU second): {f['ratio'][0]:.3f} "
              f"({f['ratio'][1]:.3f}-{f['ratio'][2]:.3f})", flush=True)


def pair_rates(o: tuple, t: tuple) -> dict:
    """One pair's rows per CPU second, ours (``o``: rows, CPU seconds of the process, of its games
    alone) and MdpTetris's (``t``: rows, CPU seconds), and their ``ratio`` ours / MdpTetris."""
    ours, theirs = o[0] / o[1], t[0] / t[1]
    return {"ours": ours, "theirs": theirs, "ratio": ours / theirs}


def versus_figures(pairs: list) -> dict:
    """`pit`'s figures for one player's ``pairs`` (ours, MdpTetris's), as `pair_rates` takes them:
    ``ours``, ``theirs`` (rows per CPU second) and ``ratio``, each the (median, min, max) over the
    pairs of `pair_rates`; ``ours_cpu`` and ``theirs_cpu``, the median CPU seconds of a process, and
    ``ours_outside``, the median CPU seconds of our process outside its games."""
    each = [pair_rates(o, t) for o, t in pairs]
    spread = lambda k: (float(np.median([p[k] for p in each])), min(p[k] for p in each),  # noqa: E731
                        max(p[k] for p in each))
    return {"ours": spread("ours"), "theirs": spread("theirs"), "ratio": spread("ratio"),
            "ours_cpu": float(np.median([o[1] for o, _ in pairs])),
            "ours_outside": float(np.median([o[1] - o[2] for o, _ in pairs])),
            "theirs_cpu": float(np.median([t[1] for _, t in pairs]))}


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
    ap = Parser(prog="bench_standard.py", description=description(__doc__))
    ap.add_argument("--versus", type=Path, metavar="PATH", help="MdpTetris's built checkout (or its "
                    "mdptetris_play_games): run it beside ours and print the ratio")
    ap.add_argument("--runs", type=int, help="--versus: pairs of processes per player (default 3)")
    ap.add_argument("--only", choices=list(VERSUS), action="append", help="--versus: this player only")
    ap.add_argument("--games", dest="versus_games", type=int, metavar="N",
                    help="--versus: games each process plays (default: the player's in VERSUS, 200 or 1,000)")
    ap.add_argument("--height", dest="versus_height", type=int, metavar="H",
                    help="--versus: rows of the board (default: the player's in VERSUS, 14 or 10)")
    sub = ap.add_subparsers(dest="what")
    for name in ("speed", "games"):
        p = sub.add_parser(name, help="pieces per second of one long game" if name == "speed" else
                           "a series of seeded games, rows per game with its interval")
        p.add_argument("--evaluator", default="dellacherie",
                       help="a preset's name or an evaluator YAML (a run's evaluator.yaml; default dellacherie)")
        p.add_argument("--rules", default="standard", choices=[n for n in PRESETS if n.startswith("standard")],
                       help="the standard game's preset (default standard, 10 x 20)")
        p.add_argument("--height", type=int, help="rows of the board (default: the preset's 20)")
        if name == "speed":
            p.add_argument("--pieces", type=int, default=1_000_000, help="pieces of the game timed")
        else:
            p.add_argument("--games", type=int, default=10, help="games in the series (default 10)")
            p.add_argument("--seed", type=int, default=1000,
                           help="the first game's seed; game i plays seed + i (default 1000: seeds no tuning run plays)")
            p.add_argument("--cap", type=int, default=1_000_000_000, help="pieces per game at most")
            p.add_argument("--json", type=series_file, help="the series file (its games also in FILE.journal while it runs)")
            p.add_argument("--resume", action="store_true", help="continue the series in --json")
            p.add_argument("--force", action="store_true", help="replace the series in --json (else refused)")
            p.add_argument("--jobs", type=int, default=1, help="games at once, in worker processes (the series "
                           "is the same whatever the number)")
    args = ap.parse_args(argv)
    if (args.versus is None) == (args.what is None):
        ap.error("give one of speed, games or --versus PATH")
    if args.versus is None:
        given = [o for o, v in (("--runs", args.runs), ("--only", args.only), ("--games", args.versus_games),
                                ("--height", args.versus_height)) if v is not None]
        if given:
            ap.error(f"{given[0]} before {args.what} is a --versus option ({args.what}'s own options come after "
                     f"{args.what})")
    elif args.runs is None:
        args.runs = 3
    try:
        if args.versus is not None:
            return versus(args)
        return speed(args) if args.what == "speed" else games(args)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
