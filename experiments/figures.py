"""The figures of a tuning run, shared by the notebooks and ``python -m experiments.report``.

`load_run` reads a run directory (written by ``python -m experiments.run``) into a `Run`; each
figure function takes runs and returns a matplotlib Figure with labelled axes and a legend. Terms:

- *fitness*: a candidate's score on the run's pieces (an aborted candidate's: its running best at
  the abort, or 0, as the run's ``early_abort.aborted_fitness`` says);
- *curve*: a simulated candidate's ``best_by_step`` (the best score in its search after each piece),
  the quantity early abort compares;
- *threshold* of generation g: the curve early abort held generation g's candidates to, rebuilt
  exactly as the tuner built it (`optimizers.early_abort.EarlyAbort`) from the curves of earlier
  generations; None before K candidates had finished.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from optimizers.config import RunConfig, base_solver
from optimizers.early_abort import EarlyAbort
from optimizers.fitness import RECORD_FIELDS, TuningRecord
from optimizers.space import SpaceError
from engine.files import MAX_TABLE_BYTES, ReadError, read_text
from optimizers.records import GENERATION_COLUMNS
from optimizers.store import RunDamaged, RunStore
from optimizers.run_loop import make_space

#: the environment variables the notebooks read their run directories from
RUN_DIR_ENV, RUN_DIRS_ENV = "TETRIS_RUN_DIR", "TETRIS_RUN_DIRS"


class RunError(Exception):
    """Not a readable run directory; the message names it and the problem."""


@dataclass
class Run:
    """A run directory read back.

    - ``evaluations``: evaluations.csv (one row per candidate; booleans and choices parsed);
    - ``generations``: generations.csv (best/mean/median/worst, wall seconds, ...), with
      ``wall_time`` (cumulative seconds at the generation's end) and ``pieces_total`` added;
    - ``curves``: ``{key: best_by_step array}`` of every simulated candidate;
    - ``thresholds``: ``{generation: threshold array or None}`` (NaN at pieces not checked);
    - ``params``: the tuned parameters' paths (columns of ``evaluations``);
    - ``rows``: evaluations.csv as the run loop reads it (`optimizers.records.Evaluation`s)."""

    dir: Path
    config: RunConfig
    evaluations: pd.DataFrame
    generations: pd.DataFrame
    curves: dict
    thresholds: dict
    params: list
    rows: list = field(default_factory=list)

    @property
    def label(self) -> str:
        abort = "early abort" if self.config.early_abort.enabled else "no early abort"
        return f"{self.dir.name} ({self.config.algorithm}, {abort})"

    @property
    def pieces(self) -> int | None:
        return base_solver(self.config).get("pieces")


def load_run(run_dir: str | Path) -> Run:
    """Read a run directory; raises `RunError` when it is not one."""
    from .run import load_resume
    from engine.config import ConfigError

    run_dir = Path(run_dir)
    for name in ("config.yaml", "evaluations.csv", "generations.csv"):
        if not (run_dir / name).is_file():
            raise RunError(f"{run_dir}: not a run directory (no {name}; runs are written by python -m experiments.run)")
    try:
        config = load_resume(run_dir)
        space = make_space(config)
    except (ConfigError, SpaceError) as e:
        raise RunError(str(e)) from None
    store = RunStore(run_dir, space.params)  # it drops a line cut short by a kill
    params = [p.path for p in store.params]
    try:
        evaluations = store.read_evaluations()
    except RunDamaged as e:
        raise RunError(str(e)) from None
    ev = pd.DataFrame([{"generation": e.generation, "index": e.index, **dict(zip(params, e.values)),
                        **e.record.as_dict(), "cached": e.cached, "key": e.key} for e in evaluations])
    gen = read_generations(run_dir / "generations.csv")
    if ev.empty or gen.empty:
        raise RunError(f"{run_dir}: no finished generation yet")
    gen["wall_time"] = gen["wall_seconds"].cumsum()
    gen["pieces_total"] = gen["pieces"].cumsum()
    curves = {key: curve for (_, key), curve in store.read_curves().items()}
    return Run(run_dir, config, ev, gen, curves, _thresholds(config, ev, curves), params, evaluations)


def read_generations(path: Path) -> pd.DataFrame:
    """A run's generations.csv (`engine.files.read_text`: at most `MAX_TABLE_BYTES`), every column
    of `GenerationStats` present and numeric; `RunError` naming the file otherwise."""
    import io

    try:
        text = read_text(path, MAX_TABLE_BYTES, "a run's table")
    except ReadError as e:
        raise RunError(str(e)) from None
    try:
        gen = pd.read_csv(io.StringIO(text))
    except (ValueError, pd.errors.ParserError) as e:  # (EmptyDataError is a ValueError)
        raise RunError(f"{path}: not a generations.csv ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    missing = [c for c in GENERATION_COLUMNS if c not in gen.columns]
    if missing:
        raise RunError(f"{path}: not a generations.csv (no column {', '.join(missing[:3])}"
                       f"{', ...' if len(missing) > 3 else ''})")
    for c in GENERATION_COLUMNS:
        try:
            gen[c] = pd.to_numeric(gen[c])
        except (ValueError, TypeError):
            raise RunError(f"{path}: column {c}: not numbers") from None
    return gen


def _thresholds(config: RunConfig, ev: pd.DataFrame, curves: dict) -> dict:
    """Each generation's early-abort threshold, replaying what the tuner observed."""
    early = EarlyAbort.for_run(config)
    out = {}
    for g, rows in ev.groupby("generation", sort=True):
        t = early.threshold()
        out[int(g)] = None if t is None else np.where(np.isfinite(t), t, np.nan)
        early.observe(int(g), [(int(r.index), r.key, TuningRecord(**{name: getattr(r, name) for name in RECORD_FIELDS}),
                                curves.get(r.key, np.zeros(0, np.int64)))
                               for r in rows.itertuples() if not r.aborted])
    return out


def runs_root(start: str | Path | None = None) -> Path:
    """The ``runs/`` folder: under ``start`` (default the working directory) or its parent (a
    notebook runs in ``notebooks/``)."""
    start = Path(start or os.getcwd())
    for base in (start, start.parent):
        if (base / "runs").is_dir():
            return base / "runs"
    return start / "runs"


def run_dirs(root: str | Path | None = None) -> list[Path]:
    """Run directories under ``root`` (default `runs_root`), oldest first by modification time."""
    root = Path(root) if root is not None else runs_root()
    dirs = [p for p in root.glob("*") if (p / "generations.csv").is_file()] if root.is_dir() else []
    return sorted(dirs, key=lambda p: (p.stat().st_mtime, p.name))


def latest_run(root: str | Path | None = None) -> Path:
    """The newest run directory (`run_dirs`); RunError when there is none."""
    dirs = run_dirs(root)
    if not dirs:
        raise RunError(f"{Path(root) if root is not None else runs_root()}: no run directories (python -m experiments.run "
                       "configs/ga.yaml writes one)")
    return dirs[-1]


def notebook_run_dir() -> Path:
    """The run a notebook shows: ``$TETRIS_RUN_DIR``, else the newest under runs/."""
    return Path(os.environ[RUN_DIR_ENV]) if os.environ.get(RUN_DIR_ENV) else latest_run()


def notebook_run_dirs() -> list[Path]:
    """The runs a comparison shows: ``$TETRIS_RUN_DIRS`` (separated by ``os.pathsep``), else the
    newest run of each name under runs/."""
    if os.environ.get(RUN_DIRS_ENV):
        return [Path(p) for p in os.environ[RUN_DIRS_ENV].split(os.pathsep) if p]
    newest = {}
    for d in run_dirs():
        newest[re.sub(r"-\d{8}-\d{6}(-\d+)?$", "", d.name)] = d
    if not newest:
        raise RunError(f"{runs_root()}: no run directories")
    return list(newest.values())


# ------------------------------------------------------------------------------------------------
# tables


def finished_unique(run: Run) -> pd.DataFrame:
    """Distinct candidates (by solver-config key), best first: finished ones before aborted, then
    fitness, then the earliest."""
    ev = run.evaluations.sort_values(["aborted", "fitness", "generation", "index"],
                                     ascending=[True, False, True, True], kind="stable")
    return ev.drop_duplicates("key")


def top_candidates(run: Run, n: int = 10) -> pd.DataFrame:
    """The n best distinct candidates: rank, generation, index, every parameter, fitness, score,
    pieces, aborted."""
    top = finished_unique(run).head(n)
    cols = ["generation", "index", *run.params, "fitness", "score", "pieces", "aborted", "abort_piece"]
    out = top[cols].reset_index(drop=True)
    out["abort_piece"] = out["abort_piece"].astype("Int64")
    out.insert(0, "rank", np.arange(1, len(out) + 1))
    return out


# ------------------------------------------------------------------------------------------------
# figures


def _plt():
    import matplotlib.pyplot as plt
    return plt


def _fitness_label(run: Run) -> str:
    return f"fitness (score over {run.pieces:,} pieces)" if run.pieces else "fitness (score)"


def fitness_by_generation(run: Run):
    """Best, mean and median fitness per generation, the spread as bands (all candidates; the
    middle half; none for a race), the best so far and the start's fitness
    (`optimizers.artifacts.fitness_figure`, as the run's own fitness.png draws it)."""
    from optimizers.artifacts import fitness_figure, spread_of, start_fitness

    gen = run.generations
    spread = None if run.config.race is not None else spread_of(run.rows)
    start = start_fitness(run.rows, make_space(run.config).init_values)
    return fitness_figure(gen["generation"].to_numpy(), gen["best"], gen["mean"], gen["median"], gen["best_so_far"],
                          spread, start, title=f"{run.label}: fitness per generation", ylabel=_fitness_label(run),
                          size=(8, 4.5))


def best_so_far(run: Run):
    """Every candidate's fitness in evaluation order (aborted ones marked), and the best so far;
    below, the best so far against wall time."""
    plt = _plt()
    ev = run.evaluations.sort_values(["generation", "index"]).reset_index(drop=True)
    x = np.arange(1, len(ev) + 1)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    done, ab = ~ev["aborted"], ev["aborted"]
    ax.scatter(x[done], ev["fitness"][done], s=14, color="C0", label="finished candidate")
    ax.scatter(x[ab], ev["fitness"][ab], s=18, marker="x", color="C3", label="aborted (fitness at the abort)")
    ax.plot(x, np.maximum.accumulate(ev["fitness"].to_numpy()), "k-", label="best so far")
    ax.set_xlabel("evaluation (in order)")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_ylabel(_fitness_label(run))
    ax.set_title("every candidate", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    gen = run.generations
    bx.step(gen["wall_time"], gen["best_so_far"], "o-", where="post", color="k", ms=4,
            label="best so far (at the end of each generation)")
    bx.set_xlabel("wall time (s)")
    bx.set_ylabel(_fitness_label(run))
    bx.set_title("best so far against wall time", fontsize=10)
    bx.grid(alpha=0.3)
    bx.legend(fontsize=8, loc="lower right")
    fig.suptitle(run.label, fontsize=10)
    fig.tight_layout()
    return fig


def score_curves(run: Run, top: int = 5):
    """The ``best_by_step`` curves of the ``top`` best finished candidates against the last
    generation's early-abort threshold; aborted candidates' curves end with a cross where they
    stopped. Left: the scores; right: the same minus the best candidate's curve (where the
    differences that decide an abort are visible)."""
    plt = _plt()
    best = finished_unique(run)
    finished = best[~best["aborted"]].head(top)
    aborted = best[best["aborted"]]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.6))
    ref = run.curves.get(finished["key"].iloc[0]) if len(finished) else None

    def rel(curve):
        n = min(len(curve), len(ref))
        return np.arange(1, n + 1), curve[:n] - ref[:n]

    for i, r in enumerate(finished.itertuples()):
        c = run.curves.get(r.key)
        if c is None:
            continue
        label = f"#{i + 1}: generation {r.generation}, candidate {r.index} ({r.fitness:,.0f})"
        ax.plot(np.arange(1, len(c) + 1), c, color=f"C{i}", lw=1.2, label=label)
        bx.plot(*rel(c), color=f"C{i}", lw=1.2, label=label)
    marked = False
    for r in aborted.itertuples():
        c = run.curves.get(r.key)
        if c is None or not len(c):
            continue
        kw = dict(label="aborted candidate (x: where it stopped)") if not marked else {}
        ax.plot(np.arange(1, len(c) + 1), c, color="0.6", lw=0.6, **kw)
        ax.plot(len(c), c[-1], "x", color="C3", ms=6)
        xs, ys = rel(c)
        bx.plot(xs, ys, color="0.6", lw=0.6, **kw)
        if len(ys):
            bx.plot(xs[-1], ys[-1], "x", color="C3", ms=6)
        marked = True
    last = max(run.thresholds) if run.thresholds else None
    t = run.thresholds.get(last) if last is not None else None
    if t is not None:
        lab = f"abort threshold of generation {last} (K = {run.config.early_abort.k}, margin {run.config.early_abort.margin:,.0f})"
        ax.plot(np.arange(1, len(t) + 1), t, "k--", lw=1.2, label=lab)
        if ref is not None:
            bx.plot(*rel(t), "k--", lw=1.2, label=lab)
    ax.set_xlabel("piece")
    ax.set_ylabel("best score in the search (best_by_step)")
    ax.set_title("score curves of the best candidates", fontsize=10)
    bx.set_xlabel("piece")
    bx.set_ylabel("points relative to the best candidate")
    bx.set_title("relative to the best candidate's curve", fontsize=10)
    for a in (ax, bx):
        a.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(run.label, fontsize=10)
    fig.tight_layout()
    return fig


def _grid(n: int, width: float = 4.2, height: float = 3.2):
    plt = _plt()
    cols = min(3, max(1, n))
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, layout="constrained")
    for a in axes.flat[n:]:
        a.set_visible(False)
    return fig, list(axes.flat[:n])


def _numeric(values: pd.Series) -> tuple[np.ndarray, list | None]:
    """Values as numbers; a choice parameter's values as category codes (with the categories)."""
    v = pd.to_numeric(values, errors="coerce")
    if v.notna().all():
        return v.to_numpy(float), None
    cats = sorted(values.astype(str).unique())
    return values.astype(str).map({c: i for i, c in enumerate(cats)}).to_numpy(float), cats


def parameter_trajectories(run: Run):
    """Each tuned parameter over the generations: every candidate (coloured by fitness), the best of
    each generation and the best so far."""
    plt = _plt()
    ev = run.evaluations
    fig, axes = _grid(len(run.params))
    norm = plt.Normalize(ev["fitness"].min(), ev["fitness"].max())
    best_rows = ev.loc[ev.sort_values(["fitness", "index"], ascending=[False, True]).groupby("generation").head(1).index]
    best_rows = best_rows.sort_values("generation")
    so_far = []
    top = None
    for g, r in best_rows.set_index("generation").iterrows():
        if top is None or r["fitness"] > top["fitness"]:
            top = r
        so_far.append((g, top))
    sc = None
    for a, p in zip(axes, run.params):
        v, cats = _numeric(ev[p])
        sc = a.scatter(ev["generation"], v, c=ev["fitness"], cmap="viridis", norm=norm, s=14, alpha=0.8,
                       label="candidate (colour: fitness)")
        bv, _ = _numeric(best_rows[p]) if cats is None else (best_rows[p].astype(str).map(
            {c: i for i, c in enumerate(cats)}).to_numpy(float), None)
        a.plot(best_rows["generation"], bv, "o-", color="C3", ms=4, label="best of generation")
        sv = [r[p] if cats is None else cats.index(str(r[p])) for _, r in so_far]
        a.step([g for g, _ in so_far], sv, where="post", color="k", ls="--", label="best so far")
        if cats is not None:
            a.set_yticks(range(len(cats)), cats)
        a.set_xlabel("generation")
        a.set_ylabel("value")
        a.set_title(p, fontsize=9)
        a.xaxis.get_major_locator().set_params(integer=True)
        a.grid(alpha=0.3)
    if axes:
        axes[0].legend(fontsize=7, loc="best")
        fig.colorbar(sc, ax=axes, label=_fitness_label(run), shrink=0.8)
    fig.suptitle(f"{run.label}: parameters over the generations", fontsize=10)
    return fig


def parameter_fitness(run: Run):
    """Each tuned parameter against fitness: finished and aborted candidates, the best marked."""
    ev = run.evaluations
    fig, axes = _grid(len(run.params))
    best = finished_unique(run).iloc[0]
    for a, p in zip(axes, run.params):
        v, cats = _numeric(ev[p])
        done = ~ev["aborted"].to_numpy()
        a.scatter(v[done], ev["fitness"][done], s=14, color="C0", label="finished")
        a.scatter(v[~done], ev["fitness"][~done], s=16, marker="x", color="C3", label="aborted")
        bv = float(best[p]) if cats is None else cats.index(str(best[p]))
        a.plot([bv], [best["fitness"]], "*", color="gold", mec="k", ms=13, label="best")
        if cats is not None:
            a.set_xticks(range(len(cats)), cats)
        a.set_xlabel(p)
        a.set_ylabel(_fitness_label(run))
        a.grid(alpha=0.3)
    if axes:
        axes[0].legend(fontsize=7, loc="best")
    fig.suptitle(f"{run.label}: parameter against fitness", fontsize=10)
    return fig


def compare_runs(runs: list[Run]):
    """Several runs on one chart, each panel on its own scale: the best so far against the
    evaluations done (equal budget, whatever each run's generation size), against wall time and
    against the pieces simulated (the work early abort saves), and each run's median per
    generation against the evaluations done."""
    from matplotlib.ticker import EngFormatter, MaxNLocator

    plt = _plt()
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    (by_evals, by_wall), (by_pieces, medians) = axes
    for i, run in enumerate(runs):
        gen = run.generations
        colour = f"C{i}"
        evals = gen["evaluations"].cumsum()
        by_evals.step(evals, gen["best_so_far"], "o-", where="post", color=colour, ms=4, label=run.label)
        by_wall.step(gen["wall_time"], gen["best_so_far"], "o-", where="post", color=colour, ms=4, label=run.label)
        by_pieces.step(gen["pieces_total"], gen["best_so_far"], "o-", where="post", color=colour, ms=4,
                       label=run.label)
        medians.plot(evals, gen["median"], "s:", color=colour, ms=4, label=run.label)
    titles = ("best so far against the evaluations done", "best so far against wall time",
              "best so far against the work done", "median of each generation")
    xlabels = ("evaluations done", "wall time (s)", "pieces simulated", "evaluations done")
    for a, title, x in zip(axes.flat, titles, xlabels):
        a.set_title(title, fontsize=10)
        a.set_xlabel(x)
        a.set_ylabel(_fitness_label(runs[0]) if runs else "fitness")
        a.grid(alpha=0.3)
        a.yaxis.set_major_formatter(EngFormatter(sep=""))
        a.xaxis.set_major_locator(MaxNLocator(6))
        a.xaxis.set_major_formatter(EngFormatter(sep=""))  # (1.2M, not 1200000 run into its neighbour)
    by_evals.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def summary_table(runs: list[Run]) -> pd.DataFrame:
    """One row per run: algorithm, early abort, generations, evaluations, simulated, aborted,
    pieces simulated, wall seconds, final best."""
    rows = []
    for run in runs:
        gen = run.generations
        rows.append({"run": run.dir.name, "algorithm": run.config.algorithm,
                     "early abort": run.config.early_abort.enabled, "generations": len(gen),
                     "evaluations": int(gen["evaluations"].sum()), "simulated": int(gen["simulated"].sum()),
                     "aborted": int(gen["aborted"].sum()), "pieces simulated": int(gen["pieces"].sum()),
                     "wall seconds": round(float(gen["wall_seconds"].sum()), 1),
                     "best": float(gen["best_so_far"].iloc[-1])})
    return pd.DataFrame(rows)


#: the report's figures: file name -> figure function of one run
RUN_FIGURES = {
    "fitness.png": fitness_by_generation,
    "best_so_far.png": best_so_far,
    "score_curves.png": score_curves,
    "parameters.png": parameter_trajectories,
    "parameter_fitness.png": parameter_fitness,
}
