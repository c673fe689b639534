"""Solver benchmark (run by hand; prints figures for the README, asserts nothing).

    python benchmarks/bench_solver.py [--widths 100 1000] [--runs 3] [--pieces N] [--threads T]

For each beam width: the configs/solver.yaml beam on the full sequence (or N pieces), JIT excluded
(a short warm-up run compiles first), median of the runs: wall and CPU milliseconds per piece
(CPU = user + system time of this process, all its threads), nodes expanded per wall second, and
the score. With ``--threads 1`` the CPU figure is the per-core cost, the one to compare with a
single-threaded solver; it is also the figure to trust on a busy machine, where wall time mostly
measures the other processes. Then greedy and lookahead with each evaluator preset that makes sense
for them (one run each).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numba  # noqa: E402

from experiments.solve import load_solver_config  # noqa: E402
from solver import solve  # noqa: E402


def bench_beam(widths, runs, pieces, threads):
    base = load_solver_config(ROOT / "configs" / "solver.yaml").model_copy(update={"threads": threads})
    solve(base.model_copy(update={"pieces": 50}), record=False)  # compile
    print(f"numba threads: {threads or numba.get_num_threads()}", flush=True)
    for w in widths:
        cfg = base.model_copy(update={"pieces": pieces, "beam": base.beam.model_copy(update={"width": w})})
        walls, cpus, rates = [], [], []
        for _ in range(runs):
            cpu = time.process_time()
            r = solve(cfg, record=False)
            cpus.append(time.process_time() - cpu)
            walls.append(r.seconds)
            rates.append(r.nodes / r.seconds)
        t, c = statistics.median(walls), statistics.median(cpus)
        print(f"beam W = {w:>5,}: {r.score:>9,} points, {r.pieces:,} pieces, wall {t:7.1f} s "
              f"({1000 * t / r.pieces:.2f} ms per piece), CPU {c:7.1f} s ({1000 * c / r.pieces:.2f} ms per piece), "
              f"{statistics.median(rates) / 1e3:,.0f} k nodes expanded per wall second (median of {runs})", flush=True)


def bench_simple(pieces):
    base = load_solver_config(ROOT / "configs" / "solver.yaml")
    for policy, extra in (("greedy", {}), ("lookahead", {"lookahead": {"depth": 2, "keep_fraction": 0.25}})):
        for ev in ("pierre_dellacherie", "el_tetris", "lecture_v1", "lecture_v2"):
            cfg = base.model_validate({**base.model_dump(), "policy": policy, "evaluator": ev, "pieces": pieces, **extra})
            solve(cfg.model_copy(update={"pieces": 20}), record=False)
            start = time.perf_counter()
            r = solve(cfg, record=False)
            print(f"{policy:>9} {ev:>20}: {r.score:>9,} points, {r.pieces:>5,} pieces ({r.stop}), "
                  f"{time.perf_counter() - start:6.1f} s", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pieces", type=int, default=None, help="default: the whole sequence")
    parser.add_argument("--threads", type=int, default=None, help="numba threads (default: all cores)")
    parser.add_argument("--skip-simple", action="store_true", help="only the beam")
    args = parser.parse_args()
    bench_beam(args.widths, args.runs, args.pieces, args.threads)
    if not args.skip_simple:
        bench_simple(args.pieces)


if __name__ == "__main__":
    main()
