"""A run's artifacts: best.yaml (the best candidate as a solver configuration: what the run tuned
and what replaying it needs), evaluator.yaml (its tuned evaluator alone, when the run tunes
weights), recommendation.yaml (the tuner's mean), generations.csv, noise.csv and fitness.png,
rewritten after each generation."""

from __future__ import annotations

import csv
import io
import time

from engine.files import write_bytes, write_text, write_yaml

from ._base import fidelity
from .config import RunConfig, base_solver
from .noise import NOISE_COLUMNS, point_key
from .space import with_settings
from .records import RECOMMENDATION, GenerationStats

#: seconds between two drawings of fitness.png while a run goes on (a drawing costs a few tenths of a second)
PLOT_EVERY = 60.0
#: fitness.png's size in inches and its resolution in dots per inch
PLOT_INCHES, PLOT_DPI = (7, 4.2), 100


class Artifacts:
    """The run loop's files for the user (`optimizers.run_loop.RunLoop` is one)."""

    def best_config(self) -> dict | None:
        """best.yaml: a complete solver config (the best re-scored candidate when re-scored)."""
        from solver import SolverConfig

        best, rescored = self.state.best, self.state.rescored
        if best is None:
            return None
        source = rescored or best
        data = trimmed(SolverConfig.model_validate(self.pick_config()))
        if isinstance(data.get("evaluator"), dict) and any(p.path.startswith("evaluator.") for p in self.space.params):
            data["evaluator"] = self.tuned_evaluator(data["evaluator"], source.fitness)
        meta = {"source": "tuning run", "run": self.dir.name, **self.run_config(), "algorithm": self.config.algorithm,
                "generation": source.generation, "index": source.index,
                "fitness": source.fitness, "score": source.score,
                "parameters": {p.path: v for p, v in zip(self.space.params, source.values)}}
        noise = self.state.noise
        if noise is not None and noise.pools and (point := noise.points.get(point_key(best.values))) is not None:
            meta["pooled"] = {"mean": point.mean, "games": point.games, "samples": point.samples}
        if rescored is not None and rescored.index == RECOMMENDATION:
            meta["recommendation"] = recommendation_note(rescored.generation)
        if rescored is not None:
            meta.update({"tuned_fitness": rescored.tuned_fitness, "rescored_with": dict(self.config.rescore.overrides),
                         "best_before_rescoring": {"generation": best.generation, "index": best.index,
                                                   "fitness": best.fitness}})
        if self.state.validated is not None:
            meta["validation"] = self.state.validated.meta()
        data["meta"] = meta
        return data

    def tuned_evaluator(self, evaluator: dict, fitness: float) -> dict:
        """The pick's evaluator under a name of its own, its description saying what it is: the
        starting evaluator's terms with the weights this run tuned."""
        base = evaluator.get("name") or "the solver's evaluator"
        return {**evaluator, "name": f"{self.config.name}-tuned",
                "description": f"{base}'s terms with the weights tuned by {self.config.name} ({self.config.algorithm}, seed "
                               f"{self.config.seed}, fitness {fitness:,.0f}); not {base}'s own weights"}

    def write_evaluator(self, cfg: dict) -> None:
        """evaluator.yaml: the pick's tuned evaluator alone, a file any solver config can name."""
        if isinstance(cfg.get("evaluator"), dict) and cfg["evaluator"].get("name") == f"{self.config.name}-tuned":
            write_yaml(self.dir / EVALUATOR_FILE, cfg["evaluator"],
                       header=f"# the tuned evaluator of run {self.dir.name}; name it in a solver config with\n"
                              f"#   evaluator: {self.dir / EVALUATOR_FILE}")

    def pick_config(self) -> dict:
        """The run's pick as a solver config mapping: the best re-scored candidate when re-scored,
        else the best, at the fidelity it was scored at."""
        source = self.state.rescored or self.state.best
        data = self.space.config(source.values)
        rung = fidelity(self.state.optimizer).settings_at(source.generation)
        if rung:  # a multi-fidelity tuner's candidate at the fidelity it was scored at
            data = with_settings(data, rung)
        if self.state.rescored is not None:
            data = with_settings(data, self.config.rescore.overrides)
        return data

    def recommended(self) -> list | None:
        """The values the tuner's recommendation (`Tuner.recommendation`) is played with now;
        None for a tuner without one."""
        vector = self.state.optimizer.recommendation()
        return None if vector is None else self.space.played(vector)

    def recommendation_config(self) -> dict | None:
        """recommendation.yaml: the tuner's recommendation now (`Tuner.recommendation`, the mean
        of its search distribution) as a complete solver config, to play while the run goes on;
        None for a tuner without one, or before its first generation is told."""
        from solver import SolverConfig

        g = self.state.generation
        values = self.recommended() if g > 0 else None
        if values is None:
            return None
        data = with_settings(self.space.config(values), fidelity(self.state.optimizer).settings_at(g))
        data = trimmed(SolverConfig.model_validate(data))
        data["meta"] = {"source": "tuning run", "run": self.dir.name, **self.run_config(), "algorithm": self.config.algorithm,
                        "generation": g, "recommendation": recommendation_note(g),
                        "parameters": {p.path: v for p, v in zip(self.space.params, values)}}
        return data

    def run_config(self) -> dict:
        """``{"config": the run's YAML}`` as the run recorded it (`optimizers.run.resolve`), or
        nothing for a run that did not."""
        name = ((self.config.meta or {}).get("resolved_from") or {}).get("run_config")
        return {"config": name} if name else {}

    def write_artifacts(self, final: bool = False) -> None:
        """generations.csv, best.yaml and recommendation.yaml; fitness.png at the end, and meanwhile
        at most every `PLOT_EVERY` seconds."""
        history = self.state.history
        self.store.write_generations(history)
        if self.state.noise is not None:
            write_text(self.dir / "noise.csv", noise_table(self.state.noise.rows))
        cfg = self.best_config()
        if cfg is not None:
            write_yaml(self.dir / "best.yaml", cfg,
                       header=f"# the best candidate of run {self.dir.name}; run it with:\n"
                              f"#   python -m experiments.solve {self.dir / 'best.yaml'}")
            self.write_evaluator(cfg)
        rec = self.recommendation_config()
        if rec is not None:
            write_yaml(self.dir / "recommendation.yaml", rec,
                       header=f"# the tuner's recommendation after generation {rec['meta']['generation'] - 1} of run "
                              f"{self.dir.name} (the mean of its search distribution); run it with:\n"
                              f"#   python -m experiments.solve {self.dir / 'recommendation.yaml'}")
        if history and (final or time.monotonic() - self._plotted >= PLOT_EVERY):
            rows = list(self.evaluations.values())
            spread = None if self.config.race is not None else spread_of(rows)
            write_bytes(self.dir / "fitness.png", plot(history, self.config, spread,
                                                       start_fitness(rows, self.space.init_values)))
            self._plotted = time.monotonic()


#: the run directory's file of the pick's tuned evaluator alone (`Artifacts.write_evaluator`)
EVALUATOR_FILE = "evaluator.yaml"
#: keys best.yaml keeps even at their defaults: what a reader looks for first
ALWAYS_SHOWN = ("policy", "rules")


def trimmed(config) -> dict:
    """A solver config (`solver.SolverConfig`) as best.yaml holds it: the settings that differ from
    the defaults (the tuned ones, and those the run's solver set), with `ALWAYS_SHOWN`; played
    back, it is the same config."""
    data = config.model_dump(mode="json", exclude_defaults=True)
    full = config.model_dump(mode="json")
    shown = {k: full[k] for k in ALWAYS_SHOWN}
    return {**shown, **{k: v for k, v in data.items() if k not in shown}}


def recommendation_note(generations: int) -> str:
    """best.yaml's and recommendation.yaml's ``meta.recommendation`` for the tuner's mean after
    ``generations`` generations told."""
    return f"the mean of the tuner's search distribution after generation {generations - 1}, not a candidate it played"


def noise_table(rows: list[dict]) -> str:
    """noise.csv: a row per generation (`optimizers.noise.NOISE_COLUMNS`; empty: none)."""
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(NOISE_COLUMNS)
    for row in rows:
        out.writerow(["" if row[c] is None else repr(row[c]) if isinstance(row[c], float) else row[c]
                      for c in NOISE_COLUMNS])
    return buf.getvalue()


def plot(history: list[GenerationStats], config: RunConfig, spread: dict | None = None,
         start: float | None = None) -> bytes:
    """fitness.png: `fitness_figure` of the run's generations, as PNG bytes."""
    import io

    import matplotlib

    matplotlib.use("Agg")  # (a file, no window: the run loop draws in any process)
    pieces = base_solver(config).get("pieces")
    note = ", aborted candidates count with their fitness at the abort" if config.early_abort.enabled else ""
    fig = fitness_figure([h.generation for h in history], [h.best for h in history], [h.mean for h in history],
                         [h.median for h in history], [h.best_so_far for h in history], spread, start,
                         title=f"{config.name}: {config.algorithm}, {config.population} candidates per generation{note}",
                         ylabel=f"fitness (score over {pieces:,} pieces)" if pieces else "fitness (score)")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=PLOT_DPI)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()


def fitness_figure(generations, best, mean, median, best_so_far, spread: dict | None, start: float | None,
                   title: str, ylabel: str, size=PLOT_INCHES):
    """The fitness per generation, the one drawing of it (the run's fitness.png and the report's
    figures/fitness.png): best, mean and median, the spread of the candidates as bands (``spread``:
    generation -> (min, 25%, 75%, max); None: none, as for a race, whose rows are single
    instances), the best so far, and the start's fitness as a dotted line (None: not played)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=size)
    if spread:
        gs = sorted(spread)
        q = [spread[g] for g in gs]
        ax.fill_between(gs, [v[0] for v in q], [v[3] for v in q], alpha=0.12, color="C0",
                        label="all candidates (min to max)")
        ax.fill_between(gs, [v[1] for v in q], [v[2] for v in q], alpha=0.28, color="C0", label="middle half (25-75%)")
    ax.plot(generations, best, "o-", color="C0", label="best of generation")
    ax.plot(generations, mean, "^-", color="C1", label="mean")
    ax.plot(generations, median, "s-", color="C2", label="median")
    ax.plot(generations, best_so_far, "k--", label="best so far")
    if start is not None:
        ax.axhline(start, color="0.4", ls=":", lw=1.2, label=f"the start ({start:,.0f})")
    ax.set_xlabel("generation")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def spread_of(rows) -> dict:
    """generation -> (min, 25%, 75%, max) of the fitness of ``rows`` (`Evaluation`s)."""
    import numpy as np

    by: dict[int, list[float]] = {}
    for e in rows:
        by.setdefault(e.generation, []).append(e.record.fitness)
    return {g: tuple(float(v) for v in np.quantile(f, [0.0, 0.25, 0.75, 1.0])) for g, f in by.items()}


def start_fitness(rows, values) -> float | None:
    """The fitness of the run's start (the initial point, ``values`` as played) when a
    generation played it: its first evaluation's; None otherwise."""
    for e in sorted(rows, key=lambda e: e.slot):
        if list(e.values) == list(values):
            return float(e.record.fitness)
    return None
