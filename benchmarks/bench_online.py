"""Policies for unknown pieces on the classic game (run by hand; prints figures for the README).

    python benchmarks/bench_online.py [--seeds 1000 ... ] [--cap 5000] [--policies one_ply expect mcts]
        [--mcts-simulations 20] [--mcts-rollout 5] [--evaluator el_tetris] [--json FILE]

Every policy plays the same seeded games (seeds 1000..1009 by default: not used in tuning) with a
piece cap; prints the mean score, its standard deviation, the games that reached the cap and the
time per move (kernels compiled before timing). Single-threaded.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solver import SolverConfig  # noqa: E402
from solver.online import make_policy, play_games  # noqa: E402
from experiments import description  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--seeds", type=int, nargs="+", default=list(range(1000, 1010)))
    ap.add_argument("--cap", type=int, default=5000)
    ap.add_argument("--policies", nargs="+", default=["one_ply", "preview", "expect", "mcts"])
    ap.add_argument("--evaluator", default="el_tetris")
    ap.add_argument("--mcts-simulations", type=int, default=20)
    ap.add_argument("--mcts-rollout", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    for name in args.policies:
        config = SolverConfig(policy=name, rules="classic", pieces=args.cap, evaluator=args.evaluator, threads=1,
                              mcts={"simulations": args.mcts_simulations, "rollout": args.mcts_rollout})
        policy = make_policy(config)
        play_games(policy, [0], 2)  # compile or load the kernels
        cpu = time.process_time()
        g = play_games(policy, args.seeds, args.cap)
        cpu = time.process_time() - cpu
        moves = int(g.pieces.sum())
        row = {"policy": name, "mean": round(g.mean), "std": round(g.std), "capped": g.capped,
               "games": len(g.scores), "ms_per_move": round(1000 * float(g.seconds.sum()) / moves, 3),
               "cpu_ms_per_move": round(1000 * cpu / moves, 3), "scores": [int(s) for s in g.scores],
               "mcts": config.mcts.model_dump() if name == "mcts" else None}
        rows.append(row)
        print(f"{name:8s} mean {row['mean']:>9,} std {row['std']:>7,} capped {g.capped}/{len(g.scores)} "
              f"{row['ms_per_move']:.3f} ms/move wall, {row['cpu_ms_per_move']:.3f} ms/move CPU", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"seeds": args.seeds, "cap": args.cap, "evaluator": args.evaluator,
                                         "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
