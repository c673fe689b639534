"""Where numba's compile time goes in a command (run by hand; prints, asserts nothing):

    python benchmarks/compile_profile.py [--top 30] [--csv FILE] -- -m pytest -m "not slow"
    python benchmarks/compile_profile.py -- -m experiments.run configs/ga.yaml

Runs ``python ARGS...`` in this process (`run`) with a listener on numba's compile events
(`CompileTimes`), which times each compile in all and by itself (its callees' compiles taken out).
Then prints the kernels by their own time: how many signatures each compiled, their own seconds
and the share of all compile time; ``--csv`` writes one row per compile. What other processes
compile is missing, so give a tuning run ``parallel.n_jobs=1``; pytest is run in one process. Use
an empty cache (``NUMBA_CACHE_DIR`` set to a new folder) to see a cold start. What it found:
docs/performance.md, "The test suite".
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import runpy
import sys
import time
from collections import defaultdict
from pathlib import Path

from numba.core import event
from experiments import description  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

#: an evaluator's layout in a kernel's argument types (`evaluators.registry.Kind.label`)
LAYOUT = re.compile(r"Kind\(([^()]*)\)")


class CompileTimes(event.Listener):
    """Own and total seconds of every compile, nested compiles taken out of their caller's own.

    numba's compile events fire only when a kernel is compiled, not when it is loaded from the
    cache. Each row (the ``--csv`` file's) holds the kernel, its argument types (the first 300
    characters), the evaluator layout among them when there is one (so compiles can be summed by
    layout), own and total seconds, and the test running when there is one."""

    def __init__(self):
        self.stack: list[list] = []  # [name, args, start, seconds of nested compiles]
        self.rows: list[dict] = []

    def on_start(self, e):
        d = e.data["dispatcher"]
        name = f"{d.py_func.__module__}.{d.py_func.__qualname__}"
        args = ", ".join(str(a) for a in e.data["args"])
        self.stack.append([name, args, time.perf_counter(), 0.0])

    def on_end(self, e):
        name, args, start, nested = self.stack.pop()
        total = time.perf_counter() - start
        if self.stack:
            self.stack[-1][3] += total
        layout = LAYOUT.search(args)
        self.rows.append({"kernel": name, "args": args[:300], "layout": layout.group(1) if layout else "",
                          "own_seconds": round(total - nested, 4), "total_seconds": round(total, 4),
                          "test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]})


def run(argv: list[str]) -> int:
    """``python argv...`` in this process (as ``python -m MODULE ...`` or ``python SCRIPT ...``
    would); its exit status. Other processes (a test's subprocess, loky or dask workers, pytest's
    workers) are not followed, so pytest gets ``-n 0`` unless the command says ``-n``."""
    if not argv:
        raise SystemExit("compile_profile.py: give the command after --, e.g. -- -m pytest -m 'not slow'")
    if argv[:2] == ["-m", "pytest"] and not any(a == "--numprocesses" or a.startswith(("-n", "--numprocesses="))
                                              for a in argv[2:]):
        argv = [*argv, "-n", "0"]  # the suite's own default spreads it over worker processes, not followed
    status = 0
    try:
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path.insert(0, str(Path(argv[0]).resolve().parent))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--top", type=int, default=30, help="kernels printed (by own time)")
    parser.add_argument("--csv", type=Path, help="one row per compile")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then what follows python")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    listener = CompileTimes()
    event.register("numba:compile", listener)
    cpu, wall = time.process_time(), time.perf_counter()
    status = run(command)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    event.unregister("numba:compile", listener)
    own, count = defaultdict(float), defaultdict(int)
    for r in listener.rows:
        own[r["kernel"]] += r["own_seconds"]
        count[r["kernel"]] += 1
    compiled = sum(own.values())
    print(f"\n{len(listener.rows)} compiles of {len(own)} kernels: {compiled:.1f} s of the command's {wall:.1f} s "
          f"wall ({cpu:.1f} s CPU of this process), exit status {status}", file=sys.stderr)
    for name in sorted(own, key=own.get, reverse=True)[:args.top]:
        print(f"{own[name]:8.1f} s {100 * own[name] / max(compiled, 1e-9):5.1f}% {count[name]:4d}x  {name}",
              file=sys.stderr)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            out = csv.DictWriter(f, fieldnames=["kernel", "args", "layout", "own_seconds", "total_seconds", "test"])
            out.writeheader()
            out.writerows(listener.rows)
    return status


if __name__ == "__main__":
    sys.exit(main())
