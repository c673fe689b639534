"""The literature's benchmark: 1-ply players on the standard game (run by hand; prints figures for
docs/benchmark-standard.md, asserts nothing).

    python benchmarks/bench_standard.py speed [--evaluator dellacherie] [--pieces 1000000]
    python benchmarks/bench_standard.py games [--evaluator dellacherie] [--games 10] [--seed 1000]
        [--cap 1000000000] [--rules standard] [--height 20] [--json FILE] [--resume | --force] [--jobs 1]
    python benchmarks/bench_standard.py --versus PATH [--runs 3] [--only dellacherie|bcts] [--games N] [--height H]

``speed``: pieces per second of the 1-ply player, one thread; ``games``: a seeded series and its
mean rows per game with its 95% interval, in a resumable series file (``--json``); ``--versus``:
MdpTetris's ``mdptetris_play_games`` beside ours, whole processes, rows per CPU second
(`benchmarks.standard.versus`). Every problem is one line naming the option or file, exit status
2; Ctrl-C or SIGTERM writes the games finished so far and exits with 130. In full:
docs/benchmark-standard.md ("Running it", "Beside MdpTetris: building the peer").
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pydantic import ValidationError  # noqa: E402

from benchmarks.standard.players import (STATE_KEYS, UserError, at_least, commit, inplay_path, make,  # noqa: E402
                                         read_state, settle, summarize)
from benchmarks.standard.series import SeriesFile, check_output, in_play, keep_states, load_series, state_file  # noqa: E402
from benchmarks.standard.versus import VERSUS, versus  # noqa: E402
from engine import PRESETS  # noqa: E402
from engine.files import write_json  # noqa: E402
from engine.parallel import ParallelConfig, Pool  # noqa: E402
from engine.validation import problem, show  # noqa: E402
from solver.online import play_games  # noqa: E402
from solver.online.games import GameCheckpoint, play_game  # noqa: E402
from solver.online.intervals import CI_METHOD  # noqa: E402
from experiments import description  # noqa: E402

#: wall seconds between two states kept of a game being played (``FILE.inplay/seed-N.json``) at least
KEEP_SECONDS = 60.0


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
