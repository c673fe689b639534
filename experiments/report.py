"""The figures of a tuning run as PNG files, for people without Jupyter.

    python -m experiments.report RUN_DIR [--compare OTHER_RUN_DIR ...]

Writes to ``RUN_DIR/figures/``: fitness.png (best / mean / median per generation with the spread),
best_so_far.png (every candidate in order; best so far against wall time), score_curves.png (the
best candidates' ``best_by_step`` curves against the early-abort threshold, aborted candidates
marked), parameters.png (each parameter over the generations), parameter_fitness.png (each
parameter against fitness) and top10.csv (the 10 best distinct candidates); with ``--compare``,
compare.png and compare.csv (this run beside the others). The same figures as the notebooks
(`experiments.figures`). Exit status 2, with one line naming the file and the problem, when a
directory is not a run, one of its files cannot be read (not UTF-8 text, not the table it should be,
larger than `engine.files.MAX_TABLE_BYTES`) or figures/ cannot be written.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from engine.files import remove_stale_temporaries, write_bytes, write_text

from .figures import RUN_FIGURES, RunError, compare_runs, load_run, summary_table, top_candidates
from experiments import description

#: resolution of the PNG files, in dots per inch
DPI = 110


def write_figure(path: Path, fig) -> Path:
    """A matplotlib figure as a PNG file, written whole (then closed)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    plt.close(fig)
    write_bytes(path, buf.getvalue())
    return path


def write_table(path: Path, table) -> Path:
    """A pandas table as a CSV file, written whole."""
    write_text(path, table.to_csv(index=False))
    return path


def write_report(run_dir: str | Path, compare: list[str | Path] = ()) -> list[Path]:
    """Write the figures of ``run_dir`` (and the comparison with ``compare``); returns the files."""
    import matplotlib
    matplotlib.use("Agg")

    run = load_run(run_dir)
    others = [load_run(d) for d in compare]
    out = run.dir / "figures"
    remove_stale_temporaries(out)  # of a report killed while writing
    written = [write_figure(out / name, figure(run)) for name, figure in RUN_FIGURES.items()]
    written.append(write_table(out / "top10.csv", top_candidates(run)))
    if others:
        written.append(write_figure(out / "compare.png", compare_runs([run, *others])))
        written.append(write_table(out / "compare.csv", summary_table([run, *others])))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.report", description=description(__doc__))
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (runs/<name>-<time>)")
    parser.add_argument("--compare", nargs="+", default=[], metavar="RUN_DIR", help="other runs to draw beside it")
    args = parser.parse_args(argv)
    try:
        written = write_report(args.run_dir, args.compare)
    except RunError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # figures/ cannot be written: a read-only or full disk
        print(f"error: {Path(args.run_dir) / 'figures'}: cannot write there: {e.strerror or e}", file=sys.stderr)
        return 2
    print(f"{len(written)} files written to {written[0].parent}/: " + ", ".join(p.name for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
