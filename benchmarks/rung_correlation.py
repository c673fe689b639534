"""Rank correlation between the rungs of a multi-fidelity ladder (run by hand; prints, asserts nothing):

    python benchmarks/rung_correlation.py [CONFIG] [--samples 16] [--rungs 0 1 2] [--out DIR] [key=value ...]
    python benchmarks/rung_correlation.py configs/sha_segment.yaml --rungs 0 1 --from-run results/segment-tune-record-run

CONFIG (default configs/sha_geek.yaml) is a run config whose tuner has rungs (``algorithm: sha``).
Sampled settings (or, with ``--from-run``, a tuning run's candidates, the run's fitness one more
column) are scored at every rung in ``--rungs`` and the Spearman rank correlation of every pair of
rungs is printed (`spearman_interval`): how well a cheap rung's order predicts a costly one's
decides the ladder. ``--aborted`` says where the run's early-stopped candidates rank
(`run_order`). Scores are kept in DIR/scores.jsonl as they finish, so a stopped call resumes;
DIR/summary.json holds the table. In full: docs/tuning.md, "Multi-fidelity: successive halving" and
"Measured: rung correlations".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from engine.files import write_json  # noqa: E402
from engine.provenance import project_path  # noqa: E402
from optimizers._base import fidelity  # noqa: E402
from optimizers.fitness import Task, canonical, evaluate  # noqa: E402
from engine.parallel import Pool  # noqa: E402
from optimizers.run import load_run_config  # noqa: E402
from optimizers.space import with_settings  # noqa: E402
from optimizers.store import RunStore  # noqa: E402
from optimizers.run_loop import make_tuner, make_space  # noqa: E402
from experiments import description  # noqa: E402


def run_candidates(run_dir: Path, space, aborted: str = "last") -> tuple[list[list], list[float], list[bool]]:
    """The settings, fitness and whether stopped early of the candidates of the tuning run in
    ``run_dir`` (its evaluations.csv, read by `RunStore`), each distinct setting once, in the run's
    order; the stopped ones left out when ``aborted`` is ``"drop"``. SystemExit when the run has
    none or its parameters are not the space's."""
    store = RunStore(run_dir, space.params)
    evaluations = store.read_evaluations()
    if not evaluations:
        why = "not this space's parameters" if store.damaged.get("evaluations.csv") == [1] else "no evaluations yet"
        raise SystemExit(f"{store.evaluations}: {why}")
    values, fitness, stopped, seen = [], [], [], set()
    for e in evaluations:
        if e.key in seen or (e.record.aborted and aborted == "drop"):
            continue
        seen.add(e.key)
        values.append(e.values)
        fitness.append(e.record.fitness)
        stopped.append(bool(e.record.aborted))
    return values, fitness, stopped


def run_order(fitness: list[float], stopped: list[bool]) -> list[float]:
    """The run's order as ranks (1 the lowest): a stopped candidate below every finished one, all the
    stopped ones tied (their final scores are unknown; they fell behind the record's pace). Ranks,
    not a sentinel such as -inf: pandas' correlations leave out values that are not finite."""
    floor = min([f for f, s in zip(fitness, stopped) if not s], default=0.0) - 1.0
    return pd.Series([floor if s else f for f, s in zip(fitness, stopped)], dtype=float).rank().tolist()


def spearman_interval(rho: float, n: int) -> tuple[float, float] | None:
    """A 95% interval for a Spearman correlation ``rho`` of ``n`` pairs: Fisher's z with the
    standard error sqrt(1.06 / (n - 3)) (Fieller, Hartley & Pearson 1957); None for n < 5, where
    it says nothing. A correlation of +-1 is taken as +-0.9999 (its z is infinite)."""
    if n < 5 or not np.isfinite(rho):
        return None
    z, half = np.arctanh(np.clip(rho, -0.9999, 0.9999)), 1.96 * np.sqrt(1.06 / (n - 3))
    return float(np.tanh(z - half)), float(np.tanh(z + half))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("config", nargs="?", default=str(ROOT / "configs" / "sha_geek.yaml"))
    parser.add_argument("overrides", nargs="*", metavar="key=value")
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--rungs", type=int, nargs="+", help="rung indices to score (default: all)")
    parser.add_argument("--from-run", type=Path, metavar="RUN_DIR",
                        help="the samples: this tuning run's candidates, its fitness one more column")
    parser.add_argument("--aborted", choices=["last", "drop"], default="last",
                        help="with --from-run, a candidate the run stopped early: ranked below every finished "
                             "one, all tied (last, the default), or left out (drop)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_intermixed_args(argv)
    config = load_run_config(args.config, args.overrides)
    space = make_space(config)
    tuner = make_tuner(config, space)
    rungs = args.rungs if args.rungs is not None else list(range(tuner.generations))
    label = config.name + (f"-{args.from_run.resolve().name}" if args.from_run else "")
    out = args.out or ROOT / "results" / "rung-correlation" / label
    out.mkdir(parents=True, exist_ok=True)
    if args.from_run:
        values, run_fitness, stopped = run_candidates(args.from_run, space, args.aborted)
        args.samples = len(values)
    else:
        vectors = space.around(np.random.default_rng(config.seed), args.samples, space.point(), config.init_sigma)
        values = [space.decode(v) for v in vectors]
        run_fitness, stopped = None, []

    log = out / "scores.jsonl"
    done: dict[tuple[int, str], dict] = {}
    if log.exists():
        for line in log.read_text().splitlines():
            row = json.loads(line)
            done[(row["rung"], row["key"])] = row
    def at_rung(v, r: int) -> tuple[str, dict]:  # a sample's config at rung r, and its key
        return canonical(with_settings(space.config(v), fidelity(tuner).settings_at(r)))

    jobs = []
    for r in rungs:
        for i, v in enumerate(values):
            key, data = at_rung(v, r)
            if (r, key) not in done:
                jobs.append((r, i, key, data))
    print(f"{config.name}: {args.samples} samples x rungs {rungs}: {len(jobs)} to score, "
          f"{args.samples * len(rungs) - len(jobs)} read back from {log}", flush=True)
    pool = Pool(config.parallel)
    started = time.perf_counter()

    def finished(j: int, result) -> None:  # an optimizers.fitness.Evaluated
        r, i, key, _ = jobs[j]
        rec = result.record
        row = {"rung": r, "sample": i, "key": key, "fitness": rec.fitness, "score": rec.score,
               "pieces": rec.pieces, "seconds": round(rec.seconds, 2)}
        done[(r, key)] = row
        with open(log, "a") as f:
            f.write(json.dumps(row) + "\n")
        print(f"  rung {r} sample {i:>3}: {rec.fitness:>12,.0f} in {rec.seconds:7.1f} s "
              f"({time.perf_counter() - started:,.0f} s so far)", flush=True)

    try:
        tasks = [Task(data, threads=pool.threads)
                 for *_, data in jobs]
        pool.map(evaluate, tasks, on_result=finished)
    finally:
        pool.close()

    table = pd.DataFrame({f"rung {r}": [done[(r, at_rung(v, r)[0])]["fitness"] for v in values] for r in rungs})
    if run_fitness is not None:
        table["run"] = run_fitness
    ranked = table.assign(run=run_order(run_fitness, stopped)) if run_fitness is not None else table
    corr = ranked.corr(method="spearman")
    print("\nSpearman rank correlation between rungs (settings of each: "
          + "; ".join(f"{r}: {fidelity(tuner).settings_at(r)}" for r in rungs) + ")"
          + (f"; the run's {sum(stopped)} stopped candidates ranked last, tied" if any(stopped) else ""))
    print(corr.round(3).to_string())
    intervals = {a: {b: spearman_interval(corr.loc[a, b], len(table)) for b in corr.columns if b != a} for a in corr.columns}
    last = corr.columns[-1]  # the costliest rung, or the run
    shown = [f"{b} {corr.loc[b, last]:.2f} ({iv[0]:.2f} to {iv[1]:.2f})" for b, iv in intervals[last].items() if iv]
    if shown:
        print(f"95% intervals against {last} ({len(table)} settings): " + "; ".join(shown))
    seconds = {f"rung {r}": float(np.mean([done[(r, at_rung(v, r)[0])]["seconds"] for v in values])) for r in rungs}
    print("mean seconds per evaluation: " + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()))
    write_json(out / "summary.json", {
        "config": project_path(args.config), "overrides": args.overrides, "samples": args.samples,
        "from_run": args.from_run.resolve().name if args.from_run else None,
        **({"aborted": args.aborted, "stopped": stopped} if args.from_run else {}),
        "rungs": {str(r): fidelity(tuner).settings_at(r) for r in rungs}, "parameters": space.names,
        "values": values, "fitness": table.to_dict(orient="list"), "spearman": corr.round(4).to_dict(),
        "spearman_95": {a: {b: iv and [round(iv[0], 4), round(iv[1], 4)] for b, iv in row.items()}
                        for a, row in intervals.items()},
        "mean_seconds": seconds})
    return 0


if __name__ == "__main__":
    sys.exit(main())
