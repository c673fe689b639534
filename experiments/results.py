"""Regenerate results/ (the record and summary behind every score the README quotes), or print its score table.

    python -m experiments.results [NAME ...]     # default: all but the long ones (LONG), made only when named
    python -m experiments.results --table        # the README's score table from results/
    python -m experiments.results --backsearch   # only the backsearch depth table (≈ 3 min)

Each entry runs ``python -m experiments.solve`` with the listed config and overrides into
``results/<name>/`` of the checkout; a resumable search whose checkpoint is there
(``results/<name>.checkpoint.npz``) is continued (``--resume``): delete the checkpoint to start it
afresh. The README's score table quotes ``summary.json``'s score and seconds (for a search spread
over sittings, the sum of their search seconds).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RUNS = {
    "beam-w100": ("configs/solve/beam.yaml", ["beam.width=100"]),
    "beam-w1000": ("configs/solve/beam.yaml", ["beam.width=1000"]),
    "beam-w9041": ("configs/solve/beam_9041.yaml", []),
    "beam-full": ("configs/solve/beam_full.yaml", []),
}
for k in (1_000, 10_000, 100_000):  # the profile DP (one thread: the machine is shared)
    RUNS[f"profile-dp-k{k}"] = ("configs/solve/profile_dp.yaml", [f"profile_dp.states={k}", "threads=1"])
for ev in ("pierre_dellacherie", "el_tetris", "lecture_v1", "lecture_v2"):
    RUNS[f"greedy-{ev}"] = ("configs/solve/beam.yaml", ["policy=greedy", f"evaluator={ev}"])
    RUNS[f"lookahead2-{ev}"] = ("configs/solve/beam.yaml", ["policy=lookahead", f"evaluator={ev}",
                                                        "lookahead.depth=2", "lookahead.keep_fraction=0.25"])

RUNS["segment"] = ("configs/solve/segment.yaml", ["threads=1"])  # the everyday segment search
RUNS["segment-full"] = ("configs/solve/segment_full.yaml", [])  # hours: resumable (experiments.solve --resume)
RUNS["segment-tuned"] = ("configs/solve/segment_tuned.yaml", ["threads=1"])  # the knobs configs/segment_tune.yaml found
RUNS["segment-tuned-full"] = ("configs/solve/segment_tuned.yaml", ["segment.states=24"])  # about an hour: resumable
# a floor that keeps singles for the endgame (201 cells, more than a single can leave): the
# record's run at 24, 22 and 16 states, in 20, 18 and 13 minutes of search on 2 threads
RUNS["segment-floors"] = ("configs/solve/segment_full.yaml", ["segment.min_cells=[201,120,100,100]"])
RUNS["segment-s16-floors"] = ("configs/solve/segment_full.yaml", ["segment.min_cells=[201,120,100,100]", "segment.states=16"])
RUNS["segment-s22-floors"] = ("configs/solve/segment_full.yaml", ["segment.min_cells=[201,120,100,100]", "segment.states=22"])
# the knobs of a tuning run at the record's size (configs/segment_tune_record.yaml), 18-23 minutes on 2 threads
RUNS["segment-tuned-record"] = ("configs/solve/segment_tuned_record.yaml", [])
#: runs of more than half an hour, made only when named
LONG = ("beam-w9041", "beam-full", "profile-dp-k100000", "segment-full", "segment-tuned-full")

BACKSEARCH_DEPTHS = (2, 3, 4, 5, 6)
for depth in BACKSEARCH_DEPTHS:
    RUNS[f"backsearch-d{depth}"] = ("configs/solve/backsearch.yaml", [f"backsearch.depth={depth}"])
RUNS["backsearch-tuned"] = ("configs/solve/backsearch_tuned.yaml", [])  # the point configs/backsearch_tune.yaml found
RUNS["backsearch-tuned-d8"] = ("configs/solve/backsearch_tuned.yaml", ["backsearch.depth=8"])  # the same, deeper


def _name(source) -> str:
    """An evaluator as the table shows it: its preset or file name, or the inline mapping's name."""
    if isinstance(source, dict):
        return source.get("name", "inline")
    return Path(source).stem if source.endswith((".yaml", ".yml")) else source


class SummaryError(ValueError):
    """A summary.json the table cannot be made from; the message is one line naming it."""


def table() -> str:
    """The README's score table rows, from results/*/summary.json, each read by the schema that
    wrote it (`solver.result.read_summary`: at most `MAX_JSON_BYTES`); `SummaryError` naming the
    file, and the field, when one cannot be read or is not a solve's summary."""
    from engine.files import ReadError, recover_output
    from solver.result import read_summary

    rows = ["| result | policy | evaluator | score | pieces | search time | pieces/s |", "|---|---|---|---|---|---|---|"]
    for name in RUNS:
        path = ROOT / "results" / name / "summary.json"
        recover_output(path.parent)  # a set a solve killed in its commit left aside
        if not path.exists():
            continue
        try:
            summary = read_summary(path)
        except ReadError as e:
            raise SummaryError(str(e)) from None
        rows.append(_row(name, summary))
    return "\n".join(rows)


def _row(name: str, s) -> str:
    """The table's row of result ``name`` from its summary ``s`` (a `solver.result.SolveSummary`:
    the played policy's section a validated model)."""
    cfg = s.config
    policy = cfg.policy
    section = cfg.section(policy)
    if policy == "beam":
        policy += f" W = {section.width:,}" + (", lowest" if section.placements == "lowest" else "")
        if section.tie_break == "board":
            policy += ", board tie order" + (", ties kept" if section.keep_ties else "")
        if section.endgame_pieces:
            policy += f", endgame {section.endgame_pieces}"
    elif policy == "profile_dp":
        policy = f"profile DP K = {section.states:,}, window {section.window}"
    elif policy == "segment":
        policy += f" nodes {section.nodes:,}, states {section.states}" + (", floating" if cfg.floating else "")
        if (section.depth, section.key_cells) != (24, 2):  # other than the everyday config's
            policy += f", depth {section.depth}, keys of {section.key_cells} cells"
        if list(section.min_cells) != [100] * 4:
            policy += ", floors " + "/".join(str(c) for c in section.min_cells) + " cells"
    elif policy == "lookahead":
        policy += f" depth {section.depth}, keep {section.keep_fraction}"
    elif policy == "backsearch":
        policy += (f" depth {section.depth}, keep {section.keep_fraction}, base {section.base_rows}, "
                   f"back-up {section.backup}")
    evaluator = _name(cfg.evaluator)
    if cfg.policy == "backsearch":
        evaluator = f"{_name(section.points_evaluator or cfg.evaluator)} / {_name(section.survival_evaluator)}"
    seconds = s.search_seconds  # a run over sittings: their sum
    rate = f"{s.pieces / seconds:,.0f}" if seconds > 0 else "-"
    return (f"| [{name}](results/{name}/) | {policy} | {evaluator} | {s.score:,} | {s.pieces:,} | "
            f"{seconds:,.1f} s | {rate} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.results",
                                     description="Regenerate results/ or print its score table.")
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"runs to make (known: {', '.join(RUNS)})")
    parser.add_argument("--table", action="store_true", help="print the README's score table from results/")
    parser.add_argument("--backsearch", action="store_true", help="only the backsearch depth table")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in RUNS]
    if unknown:
        parser.error(f"unknown run {unknown[0]!r} (known: {', '.join(RUNS)})")
    if args.table:
        try:
            print(table())
        except SummaryError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        return 0
    names = args.names or [n for n in RUNS if n not in LONG]
    if args.backsearch:
        names = [f"backsearch-d{depth}" for depth in BACKSEARCH_DEPTHS]
    from experiments.solve import checkpoint_path  # (loads the solver: not for --table)

    for name in names:
        config, overrides = RUNS[name]
        where = "--resume" if checkpoint_path(ROOT / "results" / name).exists() else "--out"
        cmd = [sys.executable, "-m", "experiments.solve", config, *overrides, where, f"results/{name}", "--quiet"]
        print("$", " ".join(cmd[1:]), flush=True)
        done = subprocess.run(cmd, cwd=ROOT)
        if done.returncode:
            return done.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
