"""Multilevel splitting against played games (run by hand; prints figures for
docs/benchmark-standard.md, asserts nothing).

    python benchmarks/bench_splitting.py --evaluator dellacherie [--rules standard] [--height 20]
        [--estimates 8] [--seed 0] [--measure mean] [--low 2] [--levels 5-19] [--trials 1000]
        [--pieces 200000] [--played results/standard/dellacherie-10x20.json] [--json FILE]

Makes ``--estimates`` splitting estimates (`solver.online.splitting`, seeds ``--seed`` ...) of the
1-ply player's mean rows per game, each with its CPU time, then their pooled mean and 95% interval
(`solver.online.splitting.combine`) and their plain mean, which overrates the length, beside the
played games of ``--played`` (a ``bench_standard.py games --json`` series). ``--levels`` is a range
``a-b`` (every height from a to b) or a comma-separated list; ``--json`` writes the figures to FILE.
In full: docs/benchmark-standard.md, "Estimating a game too long to play: multilevel splitting".
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.standard.players import commit, make  # noqa: E402
from benchmarks.standard.series import load_series  # noqa: E402
from engine import PRESETS  # noqa: E402
from engine.files import write_json  # noqa: E402
from solver.online.intervals import mean_ci95  # noqa: E402
from solver.online.splitting import SplittingConfig, combine, estimate  # noqa: E402
from experiments import description  # noqa: E402


def levels_of(text: str) -> list[int]:
    if "-" in text:
        a, b = (int(v) for v in text.split("-"))
        return list(range(a, b + 1))
    return [int(v) for v in text.split(",")]


def main() -> int:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--evaluator", default="dellacherie")
    ap.add_argument("--rules", default="standard", choices=[n for n in PRESETS if n.startswith("standard")])
    ap.add_argument("--height", type=int)
    ap.add_argument("--estimates", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--measure", default="mean", choices=["max", "mean"])
    ap.add_argument("--low", type=int, default=2)
    ap.add_argument("--levels", default="5-19")
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--pieces", type=int, default=200_000)
    ap.add_argument("--played", type=Path, help="a bench_standard.py games --json series of the same player and board")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    try:
        settings = SplittingConfig(measure=args.measure, low=args.low, levels=levels_of(args.levels), trials=args.trials,
                                   pieces=args.pieces)
        policy, rules = make(args.evaluator, args.rules, args.height)
        settings.check(rules.height)
        played = load_series(args.played) if args.played else None  # checked before the estimates
    except ValueError as e:
        print(f"bench_splitting: {e}", file=sys.stderr)
        return 2
    small = SplittingConfig(measure=args.measure, low=args.low, levels=settings.levels[:1], trials=1, pieces=2)
    estimate(policy, small, 0)  # compile or load the kernel
    found, cpus = [], []
    for seed in range(args.seed, args.seed + args.estimates):
        cpu = time.process_time()
        e = estimate(policy, settings, seed)
        cpus.append(time.process_time() - cpu)
        found.append(e)
        print(f"seed {seed}: {e.rows_per_game:,.0f} rows a game, successes {e.successes} of {e.trials}, "
              f"{e.arrivals} arrivals, {cpus[-1]:.1f} s CPU", flush=True)
    rows = [e.rows_per_game for e in found]
    mean, ci = combine(found)
    plain = mean_ci95(rows)
    out = {"command": " ".join(["python", "benchmarks/bench_splitting.py", *sys.argv[1:]]), "evaluator": args.evaluator,
           "rules": args.rules, "height": rules.height, "settings": settings.model_dump(), "commit": commit(),
           "date": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.node(),
           "mean": round(mean, 1), "ci95": None if ci is None else [round(ci[0], 1), round(ci[1], 1)],
           "ci95_method": "pooled (solver.online.splitting.combine): mean rows per piece / mean rate of game ends; "
                          "Student t on the rates, inverted",
           "mean_of_estimates": round(float(np.mean(rows)), 1),
           "mean_of_estimates_ci95": None if plain is None else [round(plain[0], 1), round(plain[1], 1)],
           "cpu_seconds_per_estimate": round(float(np.mean(cpus)), 2),
           "estimates": [e.summary() for e in found]}
    line = f"{args.evaluator} on {rules.width} x {rules.height}: splitting {out['mean']:,.0f} rows a game"
    if ci:
        line += f" (95% CI {ci[0]:,.0f} .. {ci[1]:,.0f}, {len(rows)} estimates pooled; their plain mean {out['mean_of_estimates']:,.0f})"
    line += f", {out['cpu_seconds_per_estimate']:.1f} s CPU each"
    if played is not None:
        out["played"] = {"file": str(args.played), "n": played["n"], "mean": played["mean"], "ci95": played["ci95"],
                         "cpu_seconds_per_game": round(played["cpu_seconds"] / played["n"], 3)}
        line += (f"; played {played['mean']:,.0f} over {played['n']} games"
                 + (f" (95% CI {played['ci95'][0]:,.0f} .. {played['ci95'][1]:,.0f})" if played["ci95"] else "")
                 + f", {out['played']['cpu_seconds_per_game']:.3g} s CPU a game")
    print(line)
    if args.json:
        write_json(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
