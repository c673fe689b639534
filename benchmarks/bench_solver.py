"""Solver benchmark (run by hand; prints figures for the README, asserts nothing).

    python benchmarks/bench_solver.py [--widths 100 1000] [--runs 3] [--pieces N] [--threads T]
    python benchmarks/bench_solver.py --versus /path/to/main [--widths 100 1000] [--runs 3] [--core 0]

The first form times the configs/solve/beam.yaml beam at each width on the full sequence (or N
pieces), JIT excluded, median of the runs: wall and CPU milliseconds per piece, nodes expanded per
wall second and the score; then greedy and lookahead with the evaluator presets. ``--versus`` runs
our ``experiments.solve`` and another solver (the yardstick is the 1,395,326 beam's C++, built
single-threaded) as whole processes, alternately, on one pinned core, and prints the CPU of each,
the medians and their ratio ours / theirs. What each figure counts, and the figures: the table of
scripts in docs/performance.md and its "Against the 1,395,326 solver's C++, on one core".
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numba  # noqa: E402

from benchmarks.standard.players import UserError  # noqa: E402
from benchmarks.standard.versus import run_timed  # noqa: E402

from solver import load_solver_config  # noqa: E402
from solver import solve  # noqa: E402
from experiments import description  # noqa: E402


def bench_beam(widths, runs, pieces, threads):
    base = load_solver_config(ROOT / "configs" / "solve" / "beam.yaml").model_copy(update={"threads": threads})
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
    base = load_solver_config(ROOT / "configs" / "solve" / "beam.yaml")
    for policy, extra in (("greedy", {}), ("lookahead", {"lookahead": {"depth": 2, "keep_fraction": 0.25}})):
        for ev in ("pierre_dellacherie", "el_tetris", "lecture_v1", "lecture_v2"):
            cfg = base.model_validate({**base.model_dump(), "policy": policy, "evaluator": ev, "pieces": pieces, **extra})
            solve(cfg.model_copy(update={"pieces": 20}), record=False)
            start = time.perf_counter()
            r = solve(cfg, record=False)
            print(f"{policy:>9} {ev:>20}: {r.score:>9,} points, {r.pieces:>5,} pieces ({r.stop}), "
                  f"{time.perf_counter() - start:6.1f} s", flush=True)


def process_cpu(argv, cwd, core):
    """The CPU seconds of ``argv`` run to its end on CPU ``core`` (`benchmarks.standard.versus.run_timed`);
    a failure ends the benchmark with its last line of errors."""
    try:
        return run_timed(argv, shlex.join(argv), cwd=cwd, core=core)[1]
    except UserError as e:
        raise SystemExit(f"error: {e}") from None


def bench_versus(other, template, widths, runs, core):
    """Ours and ``other`` side by side, alternating, on one pinned core (see the module docstring)."""
    print(f"side by side on CPU {core}: ours = python -m experiments.solve configs/solve/beam.yaml, "
          f"theirs = {other} {template}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-versus-") as scratch:
        os.makedirs(os.path.join(scratch, "out"), exist_ok=True)
        for w in widths:
            ours_argv = [sys.executable, "-m", "experiments.solve", str(ROOT / "configs" / "solve" / "beam.yaml"),
                         f"beam.width={w}", "threads=1", "--quiet", "--out", os.path.join(scratch, "ours")]
            theirs_argv = [other, *shlex.split(template.format(width=w))]
            process_cpu(ours_argv, ROOT, core)  # warm-up: the JIT cache, the page cache
            process_cpu(theirs_argv, scratch, core)
            ours, theirs = [], []
            for _ in range(runs):
                ours.append(process_cpu(ours_argv, ROOT, core))
                theirs.append(process_cpu(theirs_argv, scratch, core))
            a, b = statistics.median(ours), statistics.median(theirs)
            show = lambda xs: ", ".join(f"{x:.2f}" for x in xs)
            print(f"W = {w:>5,}: ours {a:7.2f} s CPU ({show(ours)}), theirs {b:7.2f} s CPU ({show(theirs)}), "
                  f"ratio ours/theirs {a / b:.3f} (medians of {runs})", flush=True)


def main():
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--widths", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pieces", type=int, default=None, help="default: the whole sequence")
    parser.add_argument("--threads", type=int, default=None, help="numba threads (default: all cores)")
    parser.add_argument("--skip-simple", action="store_true", help="only the beam")
    parser.add_argument("--versus", metavar="PATH", help="side by side with this solver binary (see above)")
    parser.add_argument("--versus-args", default="--total_keep={width}",
                        help="its arguments; {width} is the beam width (default: %(default)s)")
    parser.add_argument("--core", type=int, default=0, help="the CPU both run on with --versus (default: 0)")
    args = parser.parse_args()
    if args.versus:
        bench_versus(os.path.abspath(args.versus), args.versus_args, args.widths, args.runs, args.core)
        return
    bench_beam(args.widths, args.runs, args.pieces, args.threads)
    if not args.skip_simple:
        bench_simple(args.pieces)


if __name__ == "__main__":
    main()
