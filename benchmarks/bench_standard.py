"""The literature's benchmark: 1-ply players on the standard game (run by hand; prints figures for
docs/benchmark-standard.md, asserts nothing).

    python benchmarks/bench_standard.py speed [--evaluator dellacherie] [--pieces 1000000]
    python benchmarks/bench_standard.py games [--evaluator dellacherie] [--games 10] [--seed 1000]
        [--cap 1000000000] [--rules standard] [--height 20] [--json FILE]

``speed``: pieces per second of the 1-ply player (the whole game loop, in numba), one thread, kernels
compiled before timing: CPU time (user + system of this process) over ``--pieces`` pieces of
seeded games (seed 0, 1, ... until that many are placed).

``games``: ``--games`` seeded games (seeds ``--seed`` ...) of at most ``--cap`` pieces each, on the
rules preset ``--rules`` or the same rules on a board of ``--height`` rows (the literature's smaller
boards: 10 x 10, 10 x 14, ...); prints each game's rows, then the mean rows per game with its 95%
confidence interval (`solver.online.games.mean_ci95`). With ``--json`` every finished game is
written to FILE at once (a run stopped half-way keeps its games), and ``--resume`` continues such a
file: its games are kept and the series goes on from the next seed (games are deterministic, so a
game stopped half-way is played again from its start). ``--evaluator`` is a preset name or an
evaluator YAML file.
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


def games(args) -> int:
    policy, rules = make(args.evaluator, args.rules, args.height)
    play_games(policy, [0], 2)  # compile or load the kernels
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
    done = {g["seed"] for g in out["games"]}
    for seed in range(args.seed, args.seed + args.games):
        if seed in done:
            continue
        cpu = time.process_time()
        g = play_games(policy, [seed], args.cap)
        cpu = time.process_time() - cpu
        out["games"].append({"seed": seed, "rows": int(g.scores[0]), "pieces": int(g.pieces[0]), "end": g.ends[0],
                             "cpu_seconds": round(cpu, 2)})
        summarize(out)
        print(f"seed {seed}: {g.scores[0]:,} rows, {g.pieces[0]:,} pieces, {g.ends[0]}, {cpu:.1f} s CPU", flush=True)
        if args.json:
            args.json.write_text(json.dumps(out, indent=1) + "\n")
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
    args = ap.parse_args()
    return speed(args) if args.what == "speed" else games(args)


if __name__ == "__main__":
    sys.exit(main())
