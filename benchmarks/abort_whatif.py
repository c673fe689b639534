"""What early abort would have done to finished runs made without it (run by hand; prints).

    python benchmarks/abort_whatif.py RUN_DIR [RUN_DIR ...] [--k 1 3] [--relative 0 0.06]
                                      [--margin 1000 2000] [--every 1]

Each RUN_DIR is a tuning run made with ``early_abort.enabled=false``, so every candidate's full
``best_by_step`` curve is in its ``curves.jsonl``. Every rule (K, relative, margin, checkpoint
interval) is replayed on the runs (`replay`, through `optimizers.early_abort.EarlyAbort`), and
printed per rule are the pieces simulated (share saved), aborts, false aborts and each run's best
finished fitness. It is an estimate: the real run would have evolved differently once aborted
candidates got their score at the abort as fitness. Check the chosen rule with
``benchmarks/bench_tuning.py``. The rule and how it was chosen: docs/tuning.md, "Early abort".
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from experiments.figures import RunError, load_run  # noqa: E402
from optimizers.config import EarlyAbortConfig  # noqa: E402
from optimizers.early_abort import EarlyAbort  # noqa: E402
from optimizers.fitness import TuningRecord  # noqa: E402
from experiments import description  # noqa: E402


def load(run_dir: Path) -> list[tuple[int, list[tuple[int, str, float, np.ndarray]]]]:
    """[(generation, [(index, key, fitness, curve), ...])] of the simulated candidates, in order."""
    try:
        run = load_run(run_dir)
    except RunError as e:
        raise SystemExit(str(e)) from None
    ev, curves = run.evaluations, run.curves
    if ev.aborted.any():
        raise SystemExit(f"{run_dir}: made with early abort on; give runs made with early_abort.enabled=false")
    return [(int(g), [(int(r.index), r.key, float(r.fitness), curves[r.key])
                      for r in rows.itertuples() if r.key in curves])
            for g, rows in ev.groupby("generation", sort=True)]


def replay(generations, rule: EarlyAbortConfig) -> tuple[int, int, int, int, float]:
    """(pieces simulated, pieces without abort, aborts, false aborts, best finished fitness).

    The generations are replayed in order through the optimizer's own
    `optimizers.early_abort.EarlyAbort`: generation g's threshold comes from the K best finished
    candidates of the generations before g, and a candidate stops at the first checked piece where
    its running best falls below it. A false abort is a stopped candidate whose final fitness is at
    or above the K-th best finished fitness its threshold came from; the best finished fitness
    counts only the candidates that were not stopped."""
    ea = EarlyAbort(rule)
    used = total = aborts = false = 0
    seen: set[str] = set()
    top = -np.inf
    for g, cands in generations:
        threshold, kth = ea.threshold(), ea.kth_best()
        finished = []
        for index, key, fitness, curve in cands:
            if key in seen:
                continue
            seen.add(key)
            total += len(curve)
            below = np.flatnonzero(curve < threshold[: len(curve)]) if threshold is not None else []
            if len(below):
                used += int(below[0]) + 1
                aborts += 1
                false += fitness >= kth
            else:
                used += len(curve)
                top = max(top, fitness)
                record = TuningRecord(fitness=float(fitness), score=int(fitness), pieces=len(curve), stop="done",
                                      aborted=False, abort_piece=None, threshold=None, seconds=0.0)
                finished.append((index, key, record, curve))
        ea.observe(g, finished)
    return used, total, aborts, false, top


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--k", type=int, nargs="+", default=[1, 3, 20])
    parser.add_argument("--relative", type=float, nargs="+", default=[0.0, 0.04, 0.06, 0.08])
    parser.add_argument("--margin", type=float, nargs="+", default=[1000, 2000, 3000])
    parser.add_argument("--every", type=int, nargs="+", default=[1])
    args = parser.parse_args(argv)
    data = [load(d) for d in args.runs]
    print(f"{'K':>3}{'relative':>9}{'margin':>8}{'every':>6}{'saved':>8}{'aborts':>8}{'false':>7}  best per run")
    for k, rel, margin, every in itertools.product(args.k, args.relative, args.margin, args.every):
        rule = EarlyAbortConfig(k=k, relative=rel, margin=margin, every=every)
        used = total = aborts = false = 0
        tops = []
        for generations in data:
            u, t, a, f, top = replay(generations, rule)
            used, total, aborts, false = used + u, total + t, aborts + a, false + f
            tops.append(f"{top:,.0f}")
        print(f"{k:>3}{rel:>9g}{margin:>8,.0f}{every:>6}{100 * (1 - used / total):>7.1f}%{aborts:>8}{false:>7}  "
              + " ".join(tops), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
