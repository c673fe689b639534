"""A tuning run on 1 and 2 workers and a dask cluster, with its parallel efficiency (run by hand):

    python benchmarks/parallel_scaling.py [CONFIG] [--overrides KEY=VALUE ...] [--runs 1] [--json FILE]

Each row is ``python -m experiments.run CONFIG`` (default configs/ga.yaml) + ``--overrides`` (default
{overrides}) + the row's (`ROWS`: {rows}; one numba thread a worker), a whole process writing into a
scratch runs_dir, the rows alternating ``--runs`` times (`run_row`). Per row, medians: wall seconds,
CPU seconds (user + system of the process and the children it waited for, wait4: a worker counts only
if the run reaps it, as loky's and a LocalCluster's are; evaluations.csv's seconds beside), the best
fitness (best.yaml), the efficiency wall(1 worker) / (workers x wall) and the load before. Every run
must give the first 1-worker run's results (best.yaml but its run's name, evaluations.csv and
generations.csv without their seconds: `results`): a difference is one line, exit status 1; any other
problem one line, exit status 2. ``--json FILE`` keeps each finished run; a later call with the same
CONFIG and overrides skips them. The table at the end is the Markdown of docs/performance.md.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.standard.players import UserError  # noqa: E402
from benchmarks.standard.versus import run_timed  # noqa: E402
from engine.files import MAX_TABLE_BYTES, ReadError, YamlError, load_yaml, read_json, read_text, write_json  # noqa: E402
from engine.provenance import provenance  # noqa: E402
from experiments import description  # noqa: E402

#: the run of every row: configs/ga.yaml's 12 generations of 24 candidates, each on 3,000 pieces (not
#: 1,000: longer evaluations, so start-up is a smaller share): 34 s of CPU on one worker here
OVERRIDES = ["pieces=3000"]
#: row name -> (workers, its overrides); numba gets one thread per worker in every row
ROWS = {"loky-1": (1, ["parallel.backend=loky", "parallel.n_jobs=1", "parallel.threads=1"]),
        "loky-2": (2, ["parallel.backend=loky", "parallel.n_jobs=2", "parallel.threads=1"]),
        "dask-2": (2, ["parallel.backend=dask", "parallel.n_jobs=2", "parallel.threads=1"])}
#: the columns of a run's tables that are timings, not results
TIMINGS = {"evaluations.csv": {"seconds"}, "generations.csv": {"eval_seconds", "wall_seconds"}}
__doc__ = __doc__.format(overrides=" ".join(f"``{o}``" for o in OVERRIDES),
                         rows=", ".join(f"``{k}`` {' '.join(v[1][:2])}" for k, v in ROWS.items()))


def command(config: str, overrides: list[str], row: str, runs_dir: str) -> list[str]:
    """One run of ``row``, as a user types it (``runs_dir`` last)."""
    return [sys.executable, "-m", "experiments.run", config, *overrides, *ROWS[row][1], "--quiet",
            f"runs_dir={runs_dir}"]


def table_rows(path: Path, drop: set[str]) -> list[list[str]]:
    """The CSV file's rows, its ``drop`` columns left out."""
    rows = list(csv.reader(io.StringIO(read_text(path, MAX_TABLE_BYTES, "a run's table"))))
    keep = [i for i, name in enumerate(rows[0] if rows else []) if name not in drop]
    return [[r[i] for i in keep] for r in rows]


def results(run_dir: Path) -> tuple[float, str, float]:
    """A finished run's best fitness, a digest of its results (best.yaml but ``meta.run``, the tables
    without `TIMINGS`) and the sum of its evaluations' seconds."""
    best = load_yaml(run_dir / "best.yaml")
    best["meta"].pop("run", None)
    tables = {name: table_rows(run_dir / name, drop) for name, drop in TIMINGS.items()}
    evaluations = table_rows(run_dir / "evaluations.csv", set())
    seconds = sum(float(r[evaluations[0].index("seconds")]) for r in evaluations[1:])
    digest = hashlib.sha256(json.dumps([best, tables], sort_keys=True).encode()).hexdigest()[:16]
    return float(best["meta"]["fitness"]), digest, seconds


def run_row(config: Path, overrides: list[str], row: str) -> dict:
    """One run of ``row`` in a scratch runs_dir: its wall and CPU seconds, best fitness, digest, the
    evaluations' seconds and the 1-minute load average before it; `UserError` when it fails."""
    with tempfile.TemporaryDirectory(prefix="parallel-scaling-") as tmp:
        before = os.getloadavg()[0]
        started = time.perf_counter()
        _, cpu = run_timed(command(str(config), overrides, row, tmp), f"row {row}", cwd=ROOT)
        wall = time.perf_counter() - started
        found = [p for p in Path(tmp).iterdir() if p.is_dir()]
        if len(found) != 1:
            raise UserError(f"row {row}: {len(found)} run directories written, not 1")
        try:
            fitness, digest, eval_s = results(found[0])
        except (ReadError, YamlError, KeyError, ValueError, TypeError) as e:
            raise UserError(f"row {row}: its run directory cannot be read: {e}") from None
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "eval_s": round(eval_s, 2), "fitness": fitness,
            "digest": digest, "load": round(before, 2)}


def load(path: Path | None, settings: dict) -> dict:
    """The runs FILE holds for these ``settings`` ({} for none); `UserError` when it holds others."""
    if path is None or not path.exists():
        return {}
    try:
        data = read_json(path)
    except ReadError as e:
        raise UserError(str(e)) from None
    held = {k: data.get(k) for k in settings} if isinstance(data, dict) else None
    if held != settings or not isinstance(data.get("rows"), dict):
        raise UserError(f"--json {path}: holds runs of {held}, not {settings}: give another --json")
    return data["rows"]


def median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def table(rows: dict, reference: str | None) -> str:
    """The Markdown table, one line per row of `ROWS` with a finished run."""
    base = median(rows["loky-1"], "wall_s") if rows.get("loky-1") else None
    lines = ["| row | workers | wall s | CPU s | evaluations' s | efficiency | best fitness | same result | load | runs |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, (workers, _) in ROWS.items():
        runs = rows.get(name) or []
        if not runs:
            continue
        wall = median(runs, "wall_s")
        eff = f"{base / (workers * wall):.2f}" if base else "–"
        same = "–" if reference is None else "yes" if all(r["digest"] == reference for r in runs) else "**no**"
        lines.append(f"| {name} | {workers} | {wall:,.1f} | {median(runs, 'cpu_s'):,.1f} | "
                     f"{median(runs, 'eval_s'):,.1f} | {eff} | {median(runs, 'fitness'):,.0f} | {same} | "
                     f"{median(runs, 'load'):.1f} | {len(runs)} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("config", nargs="?", default="configs/ga.yaml", help="run YAML (default configs/ga.yaml)")
    parser.add_argument("--overrides", nargs="*", default=OVERRIDES, metavar="KEY=VALUE",
                        help=f"the run's overrides (default: {' '.join(OVERRIDES)}; none: --overrides alone)")
    parser.add_argument("--runs", type=int, default=1, help="runs of each row, alternating (default 1); medians")
    parser.add_argument("--json", type=Path, help="keep the finished runs here and skip them on the next call")
    args = parser.parse_args(argv)
    try:
        if args.runs < 1:
            raise UserError(f"--runs {args.runs}: give at least 1")
        config = Path(args.config).resolve()
        if not config.is_file():
            raise UserError(f"{args.config}: no such file")
        if config.is_relative_to(ROOT):  # as the run's messages and files name it: no folder of the machine
            config = config.relative_to(ROOT)
        settings = {"config": args.config, "overrides": list(args.overrides)}
        rows = load(args.json, settings)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    failed = False
    for i in range(args.runs):
        for name in ROWS:
            runs = rows.setdefault(name, [])
            if len(runs) > i:
                print(f"{name} run {i + 1}: read back from {args.json}", flush=True)
                continue
            typed = shlex.join(["python", *command(args.config, args.overrides, name, "...")[1:-1]])
            print(f"{name} run {i + 1}: {typed} ...", end=" ", flush=True)
            try:
                runs.append(run_row(config, args.overrides, name))
            except UserError as e:
                print(f"failed: {e}", flush=True)
                failed = True
                continue
            r = runs[-1]
            print(f"best {r['fitness']:,.0f}, {r['wall_s']:,.1f} s wall, {r['cpu_s']:,.1f} s CPU "
                  f"(load {r['load']:.2f} before)", flush=True)
            if args.json is not None:
                try:
                    write_json(args.json, {**settings, "provenance": provenance(), "rows": rows})
                except OSError as e:
                    print(f"error: --json {args.json}: cannot write there: {e.strerror or e}", file=sys.stderr)
                    return 2
    reference = rows["loky-1"][0]["digest"] if rows.get("loky-1") else None
    differ = [f"{n} run {j + 1}" for n in ROWS for j, r in enumerate(rows.get(n, [])) if r["digest"] != reference]
    if any(rows.values()):
        print()
        print(table(rows, reference))
    if reference is not None and differ:
        print(f"\nresults differ from loky-1 run 1 (best.yaml, evaluations.csv or generations.csv): {', '.join(differ)}")
        return 1
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
