"""The segment search's score against compute (run by hand; prints, asserts nothing):

    python benchmarks/segment_compute.py [--pieces 2000] [--rows NAME ...] [--json FILE] [--threads 1]

Each row is ``python -m experiments.solve configs/solve/segment.yaml pieces=N threads=T`` plus the row's
overrides (`ROWS`), run as a whole process, one row after another (`run_row`). From the run's
summary.json (`figures`): the best state's score after piece 1,000 and after the last piece, the
states expanded and boards valued, the search's wall and CPU seconds and its peak memory; and the
whole process's user + system CPU. Rows (``--rows``, default all, in this order): {rows}.
``--json FILE`` keeps every finished row as it finishes and a later call reads them back (`load`),
so a long measurement survives being stopped. The table is printed at the end in the Markdown of
docs/policies.md's "Measured: score against compute", where the figures are.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.standard.players import UserError  # noqa: E402
from benchmarks.standard.versus import run_timed  # noqa: E402
from engine.files import ReadError, read_json, write_json  # noqa: E402
from engine.provenance import provenance  # noqa: E402
from experiments import description  # noqa: E402

#: row name -> overrides of configs/solve/segment.yaml (nodes 200, states 2 per key)
ROWS = {
    "base": [],
    "chys_quality": ["evaluator=chys_quality"],
    "floating": ["floating=true"],
    "floors-140": ["segment.min_cells=[140,100,100,100]"],
    "floors-201": ["segment.min_cells=[201,120,100,100]"],
    "nodes-1000": ["segment.nodes=1000"],
    "states-6": ["segment.states=6"],
    "states-6-floating": ["segment.states=6", "floating=true"],
    "states-12": ["segment.states=12"],
    # the record's settings (configs/solve/segment_record.yaml: these floors, 22 states) at fewer states
    "floors-201-states-6": ["segment.min_cells=[201,120,100,100]", "segment.states=6"],
    "floors-201-states-12": ["segment.min_cells=[201,120,100,100]", "segment.states=12"],
    "floors-201-states-22": ["segment.min_cells=[201,120,100,100]", "segment.states=22"],
}
__doc__ = __doc__.format(rows=", ".join(f"``{k}``" for k in ROWS))

def command(overrides: list[str], pieces: int, threads: int, out: Path) -> list[str]:
    """The solve of one row, as a user types it (``out`` the folder it writes)."""
    return [sys.executable, "-m", "experiments.solve", "configs/solve/segment.yaml", f"pieces={pieces}",
            f"threads={threads}", *overrides, "--out", str(out)]


def figures(summary: dict) -> dict:
    """A row's figures from a segment solve's summary.json."""
    best = summary["best_by_step"]
    seg = summary["segment"]
    return {"best_1000": best[999] if len(best) > 1000 else None, "best_end": best[-1], "score": summary["score"],
            "states": seg["states"], "boards": summary["nodes"], "search_s": seg["seconds_total"],
            "search_cpu_s": seg["cpu_seconds_total"], "peak_mib": seg["peak_mib"]}


def run_row(name: str, pieces: int, threads: int) -> dict:
    """Solve one row in a scratch folder (`benchmarks.standard.versus.run_timed`): its figures; `UserError`
    naming the row with the solve's last line of errors when it fails."""
    with tempfile.TemporaryDirectory(prefix="segment-compute-") as tmp:
        out = Path(tmp) / name
        _, cpu = run_timed(command(ROWS[name], pieces, threads, out), f"row {name}", cwd=ROOT)
        row = figures(read_json(out / "summary.json"))
        row["process_cpu_s"] = round(cpu, 2)
        return row


def load(path: Path | None, pieces: int, threads: int) -> dict:
    """The rows FILE holds for these settings ({} for none); SystemExit when it holds others."""
    if path is None or not path.exists():
        return {}
    try:
        data = read_json(path)
    except ReadError as e:
        raise SystemExit(f"segment_compute.py: {e}") from None
    if (data.get("pieces"), data.get("threads")) != (pieces, threads):
        raise SystemExit(f"segment_compute.py: {path} holds pieces={data.get('pieces')} threads={data.get('threads')}, "
                         f"not pieces={pieces} threads={threads}: give another --json")
    return data.get("rows", {})


def save(path: Path | None, pieces: int, threads: int, rows: dict) -> None:
    if path is not None:
        write_json(path, {"pieces": pieces, "threads": threads, "command": "configs/solve/segment.yaml + the row's overrides",
                          "provenance": provenance(), "rows": rows})


def table(rows: dict, pieces: int) -> str:
    """The Markdown table, one line per row in `ROWS` order."""
    def n(v):
        return "" if v is None else f"{v:,}"

    lines = [f"| `configs/solve/segment.yaml` + | best at 1,000 | best at {pieces:,} | states expanded | boards valued | "
             "search | search CPU | process CPU | peak |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, over in ROWS.items():
        if name not in rows:
            continue
        r = rows[name]
        label = " ".join(f"`{o}`" for o in over) or "(nodes 200, states 2)"
        lines.append(f"| {label} | {n(r['best_1000'])} | {n(r['best_end'])} | {n(r['states'])} | "
                     f"{r['boards'] / 1e6:,.0f} M | {r['search_s']:,.0f} s | {r['search_cpu_s']:,.0f} s | "
                     f"{r['process_cpu_s']:,.0f} s | {r['peak_mib']:,.0f} MiB |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--pieces", type=int, default=2000, help="pieces per solve (default 2,000; more than 1,000)")
    parser.add_argument("--threads", type=int, default=1, help="numba threads per solve (default 1: per-core figures)")
    parser.add_argument("--rows", nargs="+", choices=list(ROWS), default=list(ROWS), metavar="NAME",
                        help=f"rows to run: {', '.join(ROWS)}")
    parser.add_argument("--json", type=Path, help="keep the finished rows here and skip them on the next call")
    args = parser.parse_args(argv)
    if args.pieces <= 1000:
        parser.error("--pieces must be more than 1,000 (the table's first column is the best at 1,000)")
    rows = load(args.json, args.pieces, args.threads)
    failed = []
    for name in args.rows:
        if name in rows:
            print(f"{name}: read back from {args.json}", flush=True)
            continue
        started = time.perf_counter()
        print(f"{name}: {shlex.join(command(ROWS[name], args.pieces, args.threads, Path('...'))[1:-2])} ...",
              end=" ", flush=True)
        try:
            rows[name] = run_row(name, args.pieces, args.threads)
        except UserError as e:
            print(f"failed: {e}", flush=True)
            failed.append(name)
            continue
        print(f"{rows[name]['best_end']:,} in {time.perf_counter() - started:,.0f} s", flush=True)
        save(args.json, args.pieces, args.threads, rows)
    print()
    print(table(rows, args.pieces))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
