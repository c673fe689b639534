"""The literature's benchmark: 1-ply players on the standard game (run by hand; prints figures for
docs/benchmark-standard.md, asserts nothing).

    python benchmarks/bench_standard.py speed [--evaluator dellacherie] [--pieces 1000000]
    python benchmarks/bench_standard.py games [--evaluator dellacherie] [--games 10] [--seed 1000]
        [--cap 1000000000] [--rules standard] [--height 20] [--json FILE] [--resume] [--jobs 1]

``speed``: pieces per second of the 1-ply player (the whole game loop, in numba), one thread, kernels
compiled before timing: CPU time (user + system of this process) over ``--pieces`` pieces of
seeded games (seed 0, 1, ... until that many are placed).

``games``: ``--games`` seeded games (seeds ``--seed`` ...) of at most ``--cap`` pieces each, on the
rules preset ``--rules`` or the same rules on a board of ``--height`` rows (the literature's smaller
boards: 10 x 10, 10 x 14, ...); prints each game's rows, then the mean rows per game with its 95%
confidence interval (`solver.online.games.mean_ci95`). With ``--json`` every finished game is
written to FILE at once (a run stopped half-way keeps its games), and ``--resume`` continues such a
file: its games are kept and the series goes on from the next seed (games are deterministic, so a
game stopped half-way is played again from its start). ``--jobs N`` plays N games at once in
worker processes (`engine.parallel.Pool`): a game is its seed's, so the series is the same whatever
N. The series' figures count its games up to the first seed not yet finished: a game that ends
while an earlier seed is still being played (a shorter one, most likely) waits in ``ahead`` until
the gap is filled, so stopping a parallel run never favours short games. ``--evaluator`` is a
preset name or an evaluator YAML file.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine import PRESETS, get_rules  # noqa: E402
from engine.parallel import ParallelConfig, Pool  # noqa: E402
from evaluators import load_evaluator  # noqa: E402
from solver import SolverConfig  # noqa: E402
from solver.online import play_games  # noqa: E402
from solver.online.games import CI_METHOD, mean_ci95  # noqa: E402
from solver.registry import get as get_policy  # noqa: E402


def make(evaluator: str, rules_name: str, height: int | None):
    """The 1-ply player of ``evaluator`` under the preset ``rules_name``, on ``height`` rows if given."""
    rules = get_rules(rules_name)
    if height is not None and height != rules.height:
        rules = replace(rules, name=f"{rules.name}-{rules.width}x{height}", height=height)
    config = SolverConfig(policy="one_ply", rules=rules_name, evaluator=evaluator, pieces=1, threads=1)
    return get_policy("one_ply").policy(config, rules, load_evaluator(evaluator)), rules


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def speed(args) -> int:
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
    """Move the games of ``out["ahead"]`` that now follow the series' games without a gap (seeds
    ``first``, ``first`` + 1, ...) into ``out["games"]``, in seed order."""
    out["games"].sort(key=lambda x: x["seed"])
    ahead = {x["seed"]: x for x in out.get("ahead", [])}
    nxt = out["games"][-1]["seed"] + 1 if out["games"] else first
    while nxt in ahead:
        out["games"].append(ahead.pop(nxt))
        nxt += 1
    out["ahead"] = sorted(ahead.values(), key=lambda x: x["seed"])


def games(args) -> int:
    policy, rules = make(args.evaluator, args.rules, args.height)
    play_games(policy, [0], 2)  # compile or load the kernels
    _players[(args.evaluator, args.rules, args.height)] = policy
    out = {"command": " ".join(["python", "benchmarks/bench_standard.py", *sys.argv[1:]]),
           "evaluator": args.evaluator, "rules": args.rules, "width": rules.width, "height": rules.height,
           "cap": args.cap, "commit": commit(), "date": time.strftime("%Y-%m-%d %H:%M"),
           "machine": platform.node(), "ci95_method": CI_METHOD, "games": []}
    if args.resume:
        if not args.json or not args.json.exists():
            print("--resume: give the --json file of the series to continue", file=sys.stderr)
            return 2
        before = json.loads(args.json.read_text())
        if (before["evaluator"], before["rules"], before["height"], before["cap"]) != (
                args.evaluator, args.rules, rules.height, args.cap):
            print(f"--resume: {args.json} is a series of another player, rules, board or cap", file=sys.stderr)
            return 2
        out["games"] = before["games"]
        out["resumed"] = before.get("resumed", []) + [out["date"]]
        out["date"], out["command"] = before["date"], before["command"]
        out["ahead"] = before.get("ahead", [])
    first = out["games"][0]["seed"] if out["games"] else args.seed
    done = {g["seed"] for g in out["games"] + out.get("ahead", [])}
    tasks = [{"evaluator": args.evaluator, "rules": args.rules, "height": args.height, "seed": seed, "cap": args.cap}
             for seed in range(args.seed, args.seed + args.games) if seed not in done]

    def finished(_, g: dict) -> None:
        out.setdefault("ahead", []).append(g)
        settle(out, first)
        if out["games"]:
            summarize(out)
        print(f"seed {g['seed']}: {g['rows']:,} rows, {g['pieces']:,} pieces, {g['end']}, {g['cpu_seconds']:.1f} s CPU"
              + (f" ({len(out['ahead'])} ahead of an unfinished seed)" if out["ahead"] else ""), flush=True)
        if args.json:
            args.json.write_text(json.dumps(out, indent=1) + "\n")

    Pool(ParallelConfig(n_jobs=args.jobs, threads=1)).map(play_one, tasks, on_result=finished)
    if not out["games"]:
        print("no games played", file=sys.stderr)
        return 1
    summarize(out)
    ci = f", 95% CI {out['ci95'][0]:,.0f} .. {out['ci95'][1]:,.0f}" if out["ci95"] else ""
    print(f"{args.evaluator} on {rules.name} ({rules.width} x {rules.height}), {out['n']} games, cap {args.cap:,}: "
          f"mean {out['mean']:,.0f} rows{ci}, {out['capped']} capped, {out['cpu_seconds']:,.0f} s CPU")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
            p.add_argument("--json", type=Path)
            p.add_argument("--resume", action="store_true", help="continue the series in --json")
            p.add_argument("--jobs", type=int, default=1, help="games at once, in worker processes (the series "
                           "is the same whatever the number)")
    args = ap.parse_args()
    return speed(args) if args.what == "speed" else games(args)


if __name__ == "__main__":
    sys.exit(main())
