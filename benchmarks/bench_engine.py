"""Engine benchmark (run by hand; prints figures for the README, asserts nothing).

    python benchmarks/bench_engine.py [--record FILE]

1. Move generation per piece on a fixed set of mid-game boards: the boards of a published record
   (default ../shared/replays/geek-1395326.txt) every 100 pieces from piece 50, each with the
   sequence's next piece; median microseconds per call, timed inside a compiled loop, and
   placements per second.
2. 10,000 placements by a simple 1-ply policy along the sequence (every placement locked on a copy;
   fewest occupied rows, then most points, then lowest landing), a new game whenever one ends;
   seconds after warm-up, median of 3.
3. JIT start-up: a replay of the record by a fresh interpreter, with an empty numba cache (cold)
   and again with the cache it left (cached); and the replay CLI run twice the same way.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from numba import njit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine import GEEK, final_board  # noqa: E402
from engine.board import count_and_clear, place  # noqa: E402
from engine.movegen import capacity, scratch  # noqa: E402
from engine.movegen.generators import placements_into  # noqa: E402
from experiments import description  # noqa: E402


@njit(cache=True)
def movegen_loop(boards, shapes, states, rules, reps, sc, out):
    total = 0
    for i in range(boards.shape[0]):
        for _ in range(reps):
            total += placements_into(boards[i], rules, shapes[i], states[i], sc, out)
    return total


@njit(cache=True)
def one_ply_games(sequence, rules, n_placements, sc, out):
    """Play ``n_placements`` pieces greedily, restarting on game over; returns games started."""
    height = 20
    full = (1 << 10) - 1
    cells, table = rules.cells, rules.scores
    board = np.zeros(height, np.uint16)
    trial = np.zeros(height, np.uint16)
    piece = 0
    games = 1
    for _ in range(n_placements):
        shape = sequence[piece]
        n = placements_into(board, rules, shape, piece % 4, sc, out)
        best = -1
        best_key0 = -1
        best_key1 = 0
        best_key2 = 0
        for k in range(n):
            trial[:] = board
            place(trial, cells[shape, out[k, 2]], out[k, 0], out[k, 1])
            c, f, occ = count_and_clear(trial, full)
            if occ == height:
                continue
            k0 = -occ
            k1 = table[f] * c
            k2 = out[k, 1]
            if best < 0 or (k0, k1, k2) > (best_key0, best_key1, best_key2):
                best, best_key0, best_key1, best_key2 = k, k0, k1, k2
        if best < 0 or piece + 1 >= 9_999:
            board[:] = 0
            piece = 0
            games += 1
            continue
        place(board, cells[shape, out[best, 2]], out[best, 0], out[best, 1])
        count_and_clear(board, full)
        piece += 1
    return games


def bench_movegen(record: str) -> None:
    seq = GEEK.sequence()
    ks = list(range(50, 10_000, 100))
    boards = np.array([final_board(record, GEEK, k) for k in ks])
    shapes = np.array([seq[k] for k in ks], np.int64)
    states = np.array([k % 4 for k in ks], np.int64)
    rules, scr = GEEK.kernel, (scratch(GEEK), np.zeros((capacity(GEEK.height, GEEK.width), 3), np.int64))
    total = movegen_loop(boards, shapes, states, rules, 1, *scr)
    reps = 2000
    per_board = []
    for i in range(len(ks)):
        t = time.perf_counter()
        movegen_loop(boards[i:i + 1], shapes[i:i + 1], states[i:i + 1], rules, reps, *scr)
        per_board.append((time.perf_counter() - t) / reps * 1e6)
    median = float(np.median(per_board))
    t = time.perf_counter()
    found = movegen_loop(boards, shapes, states, rules, 200, *scr)
    rate = found / (time.perf_counter() - t)
    print(f"move generation: {len(ks)} mid-game boards, {total / len(ks):.1f} placements per piece on average")
    print(f"  median {median:.2f} us per piece (p10 {np.percentile(per_board, 10):.2f}, "
          f"p90 {np.percentile(per_board, 90):.2f}); {rate / 1e6:.2f} M placements per second")


def bench_one_ply() -> None:
    seq = GEEK.sequence().astype(np.int64)
    rules, scr = GEEK.kernel, (scratch(GEEK), np.zeros((capacity(GEEK.height, GEEK.width), 3), np.int64))
    one_ply_games(seq, rules, 100, *scr)
    times = []
    for _ in range(3):
        t = time.perf_counter()
        games = one_ply_games(seq, rules, 10_000, *scr)
        times.append(time.perf_counter() - t)
    print(f"10,000 placements by a 1-ply policy ({games} game(s)): {np.median(times):.3f} s "
          f"(median of 3, after warm-up)")


def bench_startup(record_path: Path) -> None:
    code = "import sys; from engine import replay; print(replay(open(sys.argv[1]).read()).score)"
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for label in ("cold", "cached"):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", code, str(record_path)], env=env, cwd=ROOT, check=True,
                           capture_output=True)
            print(f"replay in a fresh interpreter, {label} numba cache: {time.perf_counter() - t:.2f} s")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for label in ("first", "second"):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "experiments.replay", str(record_path)], env=env, cwd=ROOT,
                           check=True, capture_output=True)
            print(f"python -m experiments.replay, {label} invocation: {time.perf_counter() - t:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--record", type=Path, default=ROOT.parent / "shared" / "replays" / "geek-1395326.txt")
    args = parser.parse_args()
    if not args.record.is_file():
        sys.exit(f"error: record file not found: {args.record} (give one with --record)")
    bench_movegen(args.record.read_text())
    bench_one_ply()
    bench_startup(args.record)


if __name__ == "__main__":
    main()
