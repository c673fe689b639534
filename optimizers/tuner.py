"""The run loop: generations of candidates through the memo, early abort, the parallel map and the
run directory, with a checkpoint after each generation.

One generation g:

1. the tuner proposes vectors (`Optimizer.ask`), decoded into solver configs (`Space.config`);
2. the threshold is built from generations before g (`EarlyAbort.threshold`);
3. each candidate is, in order: read back from ``evaluations.csv`` (a resumed generation), a repeat
   of an earlier candidate of this generation, known to the memo, or simulated (`fitness.evaluate`
   on the pool); every finished evaluation is written down at once;
4. the tuner is told the fitness, the early abort takes in the finished candidates, the statistics,
   ``best.yaml``, ``fitness.png`` and ``checkpoint.pkl`` are written.

The checkpoint holds the state before the next generation's `ask` (the tuner with its random states,
the early abort, the statistics), so a resumed run proposes the same candidates again, reads the ones
already finished back, and ends exactly where an uninterrupted run would.
"""

from __future__ import annotations

import copy
import logging
import time
from pathlib import Path
from typing import Callable

import numpy as np

from ._base import Optimizer
from ._io import write_bytes, write_yaml
from .config import RunConfig
from .early_abort import EarlyAbort
from .fitness import Memo, canonical, evaluate
from .ga import GA
from .parallel import Pool
from .pso import PSO
from .random_search import RandomSearch
from .space import Param, Space, set_path

OPTIMIZERS: dict[str, type[Optimizer]] = {"ga": GA, "pso": PSO, "random": RandomSearch}

log = logging.getLogger("optimizers.run")
PLOT_EVERY = 60.0


def base_solver(config: RunConfig) -> dict:
    """The resolved config's base solver mapping, with the run's ``pieces`` applied."""
    base = copy.deepcopy(config.solver or {})
    if config.pieces is not None:
        base["pieces"] = config.pieces
    return base


def make_space(config: RunConfig) -> Space:
    params = [Param(path=s.path, type=s.type, low=s.low, high=s.high,
                    choices=tuple(s.choices) if s.choices is not None else None, init=s.init) for s in config.space]
    return Space(params, base_solver(config))


def make_optimizer(config: RunConfig, space: Space) -> Optimizer:
    settings = getattr(config, config.algorithm)
    return OPTIMIZERS[config.algorithm](space, settings, np.random.default_rng(config.seed), init=config.init,
                                       init_sigma=config.init_sigma)


def apply_overrides(data: dict, overrides: dict) -> dict:
    """A copy of a solver mapping with dotted ``overrides`` set (missing sections are created)."""
    data = copy.deepcopy(data)
    for path, value in overrides.items():
        if path.startswith("evaluator.features."):
            set_path(data, path, value)
            continue
        node = data
        parts = path.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return data


def _stats(values) -> dict:
    a = np.asarray(values, dtype=np.float64)
    return {"best": float(a.max()), "mean": float(a.mean()), "median": float(np.median(a)), "worst": float(a.min())}


class Tuner:
    """Runs (or resumes) one tuning run in ``run_dir``; ``config`` is the resolved run config."""

    def __init__(self, config: RunConfig, run_dir: str | Path, quiet: bool = False,
                 on_evaluation: Callable[[dict], None] | None = None):
        self.config = config
        self.dir = Path(run_dir)
        self.quiet = quiet
        self.on_evaluation = on_evaluation
        self.space = make_space(config)
        from .store import RunStore

        self.store = RunStore(self.dir, self.space.params)
        self.memo = Memo(config.early_abort.aborted_fitness)
        self.state: dict = {}
        self.rows: dict[tuple[int, int], dict] = {}  # (generation, index) -> row, this run's evaluations
        self._plotted = time.monotonic()

    # ------------------------------------------------------------------ setup
    def fresh_state(self) -> dict:
        return {"generation": 0, "optimizer": make_optimizer(self.config, self.space),
                "early_abort": EarlyAbort.for_run(self.config), "history": [], "best": None,
                "rescored": None, "done": False}

    def _restore(self) -> None:
        """Rebuild the memo from the files; clean partial lines."""
        self.store.rewrite_curves()
        rows = self.store.rewrite_evaluations() if self.store.evaluations.exists() else []
        curves = self.store.read_curves()
        for r in rows:
            self.rows[(r["generation"], r["index"])] = r
            if not r["cached"] and (r["generation"], r["key"]) in curves:
                self.memo.store(r["key"], r["record"], curves[(r["generation"], r["key"])])

    def warm_up(self) -> None:
        """Compile (or load) the policy kernels in this process before the workers start, so they
        find them in numba's cache instead of all compiling at once."""
        from solver import SolverConfig, solve

        policies = {self.space.base.get("policy", "beam")}
        for p in self.space.params:
            if p.path == "policy":
                policies.update(p.choices)
        for policy in sorted(policies):
            data = {**self.space.config(self.space.init_values), "policy": policy, "pieces": 20, "threads": None}
            solve(SolverConfig.model_validate(data), record=False)

    # ------------------------------------------------------------------ the run
    def run(self, resume: bool = False) -> dict:
        """Run to the end (or from the last checkpoint with ``resume``); returns the final state."""
        handler = logging.FileHandler(self.dir / "run.log", encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%d %H:%M:%S"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
        pool = Pool(self.config.parallel)
        try:
            state = self.store.load_checkpoint() if resume else None
            if state is None:
                state = self.fresh_state()
                self.store.save_checkpoint(state)
            self.state = state
            if resume:
                self._restore()
                log.info("resumed at generation %d", state["generation"])
            else:
                log.info("run %s: %s, %d generations of %d, %d parameters", self.dir.name, self.config.algorithm,
                         self.config.generations, self.config.population, self.space.dim)
            self.write_artifacts()
            if not state["done"]:
                self.warm_up()
            opt: Optimizer = state["optimizer"]
            while state["generation"] < opt.generations:
                self.run_generation(pool, state["generation"])
            if self.config.rescore is not None and state["rescored"] is None:
                self.run_rescore(pool)
            state["done"] = True
            self.store.save_checkpoint(state)
            self.write_artifacts(final=True)
            log.info("done: best fitness %s", None if state["best"] is None else f"{state['best']['fitness']:,.0f}")
            return state
        except KeyboardInterrupt:
            log.info("interrupted at generation %d", self.state.get("generation", 0))
            if self.state:
                self.write_artifacts(final=True)
            raise
        finally:
            pool.close()
            log.removeHandler(handler)
            handler.close()

    def _row(self, g, i, values, record, cached, key) -> dict:
        row = {"generation": g, "index": i, "values": list(values), "record": record, "cached": cached, "key": key}
        self.rows[(g, i)] = row
        self.store.append_evaluation(g, i, values, record, cached, key)
        r = record
        if r["aborted"]:
            log.info("gen %d #%d%s: aborted at piece %d (best %s < threshold %s), %.2f s", g, i, " (memo)" if cached else "",
                     r["abort_piece"], f"{r['score']:,}", f"{r['threshold']:,.0f}", r["seconds"])
        else:
            log.info("gen %d #%d%s: fitness %s (%d pieces, %s), %.2f s", g, i, " (memo)" if cached else "",
                     f"{r['fitness']:,.0f}", r["pieces"], r["stop"], r["seconds"])
        if self.on_evaluation is not None:
            self.on_evaluation(row)
        return row

    def run_generation(self, pool: Pool, g: int) -> None:
        from tqdm import tqdm

        state = self.state
        opt: Optimizer = state["optimizer"]
        early: EarlyAbort = state["early_abort"]
        start = time.perf_counter()
        vectors = opt.ask()
        values = [self.space.decode(v) for v in vectors]
        configs, keys = [], []
        for v in values:
            key, data = canonical(self.space.config(v))
            keys.append(key)
            configs.append(data)
        threshold = early.threshold()
        kth = early.kth_best()
        n = len(values)
        bar = tqdm(total=n, desc=f"generation {g} ({g + 1} of {opt.generations})", unit="eval", leave=False, disable=self.quiet,
                   dynamic_ncols=True)
        records: list[dict | None] = [None] * n
        first_of: dict[str, int] = {}
        pending: dict[str, list[int]] = {}
        for i in range(n):
            old = self.rows.get((g, i))
            if old is not None and old["key"] == keys[i]:  # finished before an interruption
                records[i] = old["record"]
                first_of.setdefault(keys[i], i)
                bar.update(1)
                continue
            k = keys[i]
            if k in pending:
                pending[k].append(i)
                continue
            if k in first_of and records[first_of[k]] is not None:
                records[i] = {**records[first_of[k]], "seconds": 0.0}
                self._row(g, i, values[i], records[i], True, k)
                bar.update(1)
                continue
            hit = self.memo.lookup(k, threshold)
            if hit is not None:
                records[i] = hit
                first_of.setdefault(k, i)
                self._row(g, i, values[i], hit, True, k)
                bar.update(1)
                continue
            pending[k] = [i]
            first_of.setdefault(k, i)
        tasks = [{"config": configs[idx[0]], "threshold": threshold, "threads": pool.threads,
                  "aborted_fitness": self.config.early_abort.aborted_fitness} for idx in pending.values()]
        groups = list(pending.items())

        def done(t: int, result: dict) -> None:
            key, idx = groups[t]
            record, curve = result["record"], result["curve"]
            self.store.append_curve(g, key, curve)
            self.memo.store(key, record, curve)
            for j, i in enumerate(idx):
                records[i] = record if j == 0 else {**record, "seconds": 0.0}
                self._row(g, i, values[i], records[i], j > 0, key)
                bar.update(1)
            best = max(r["fitness"] for r in records if r is not None)
            bar.set_postfix_str(f"best {best:,.0f}", refresh=False)

        pool.map(evaluate, tasks, on_result=done)
        bar.close()
        fitness = np.array([r["fitness"] for r in records])
        rows = [self.rows[(g, i)] for i in range(n)]
        self.store.rewrite_evaluations(sorted(self.rows.values(), key=lambda r: (r["generation"], r["index"])))
        opt.tell(fitness)
        early.observe(g, [(i, keys[i], records[i], self.memo.curve(keys[i])) for i in range(n)
                          if not records[i]["aborted"]])
        best = self._best_candidate()
        simulated = [r for r in rows if not r["cached"]]
        stats = {"generation": g, **_stats(fitness), "evaluations": n, "simulated": len(simulated),
                 "aborted": sum(r["record"]["aborted"] for r in rows),
                 "pieces": sum(r["record"]["pieces"] for r in simulated),
                 "eval_seconds": sum(r["record"]["seconds"] for r in simulated),
                 "wall_seconds": time.perf_counter() - start,
                 "best_so_far": best["fitness"], "kth_best": kth}
        state["history"].append(stats)
        state["best"] = best
        state["generation"] = g + 1
        self.store.save_checkpoint(state)
        self.write_artifacts()
        line = (f"generation {g} ({g + 1} of {opt.generations}): best {stats['best']:,.0f}  mean {stats['mean']:,.0f}  "
                f"median {stats['median']:,.0f}  worst {stats['worst']:,.0f} | {len(simulated)} simulated, "
                f"{stats['aborted']} aborted | {stats['wall_seconds']:.1f} s | best so far {best['fitness']:,.0f}")
        log.info(line)
        if not self.quiet:
            tqdm.write(line)

    def _best_candidate(self, rows=None) -> dict:
        """The best evaluation so far: the highest fitness among finished ones (aborted ones only
        when none finished), the earliest on ties."""
        rows = list(self.rows.values()) if rows is None else rows
        finished = [r for r in rows if not r["record"]["aborted"]] or rows
        r = min(finished, key=lambda r: (-r["record"]["fitness"], r["generation"], r["index"]))
        return {"fitness": r["record"]["fitness"], "score": r["record"]["score"], "generation": r["generation"],
                "index": r["index"], "key": r["key"], "values": list(r["values"])}

    # ------------------------------------------------------------------ re-scoring
    def run_rescore(self, pool: Pool) -> None:
        rs = self.config.rescore
        ranked = sorted(self.rows.values(),
                        key=lambda r: (r["record"]["aborted"], -r["record"]["fitness"], r["generation"], r["index"]))
        top, seen = [], set()
        for r in ranked:
            if r["key"] not in seen:
                seen.add(r["key"])
                top.append(r)
            if len(top) == rs.top:
                break
        done_rows = {r["rank"]: r for r in self.store.read_rescore()}
        out: dict[int, dict] = {}
        tasks, ranks = [], []
        for rank, r in enumerate(top):
            data = apply_overrides(self.space.config(r["values"]), rs.overrides)
            key, data = canonical(data)
            if rank in done_rows and done_rows[rank]["key"] == key:
                out[rank] = done_rows[rank]
                continue
            tasks.append({"config": data, "threshold": None, "threads": pool.threads,
                          "aborted_fitness": self.config.early_abort.aborted_fitness})
            ranks.append((rank, r, key))
        bar = None
        if tasks:
            from tqdm import tqdm
            bar = tqdm(total=len(tasks), desc="rescore", unit="eval", leave=False, disable=self.quiet)

        def done(t: int, result: dict) -> None:
            rank, r, key = ranks[t]
            self.store.append_curve("rescore", key, result["curve"])
            row = {"rank": rank, "generation": r["generation"], "index": r["index"], "values": r["values"],
                   "tuned_fitness": r["record"]["fitness"], "record": result["record"], "cached": False, "key": key,
                   "tuned_key": r["key"]}
            self.store.append_rescore(rank, r["generation"], r["index"], r["values"], r["record"]["fitness"],
                                      result["record"], False, key, r["key"])
            out[rank] = row
            log.info("rescore #%d (gen %d #%d, tuned %s): %s", rank, r["generation"], r["index"],
                     f"{r['record']['fitness']:,.0f}", f"{result['record']['fitness']:,.0f}")
            if bar is not None:
                bar.update(1)

        pool.map(evaluate, tasks, on_result=done)
        if bar is not None:
            bar.close()
        rows = [out[k] for k in sorted(out)]
        self.store.rewrite_rescore(rows)
        best = min(rows, key=lambda r: (-r["record"]["fitness"], r["rank"]))
        self.state["rescored"] = {"fitness": best["record"]["fitness"], "score": best["record"]["score"],
                                  "generation": best["generation"], "index": best["index"], "key": best["key"],
                                  "tuned_key": best["tuned_key"], "tuned_fitness": best["tuned_fitness"],
                                  "values": best["values"], "rank": best["rank"]}
        line = (f"rescore: {len(rows)} candidates with {rs.overrides}; best {best['record']['fitness']:,.0f} "
                f"(tuned rank {best['rank'] + 1}, tuned fitness {best['tuned_fitness']:,.0f})")
        log.info(line)
        if not self.quiet:
            from tqdm import tqdm
            tqdm.write(line)

    # ------------------------------------------------------------------ artifacts
    def best_config(self) -> dict | None:
        """best.yaml: a complete solver config (the best re-scored candidate when re-scored)."""
        from solver import SolverConfig

        state = self.state
        best, rescored = state.get("best"), state.get("rescored")
        if best is None:
            return None
        source = rescored or best
        data = self.space.config(source["values"])
        if rescored is not None:
            data = apply_overrides(data, self.config.rescore.overrides)
        data = SolverConfig.model_validate(data).model_dump(mode="json")
        meta = {"source": "tuning run", "run": self.dir.name, "algorithm": self.config.algorithm,
                "generation": source["generation"], "index": source["index"],
                "fitness": source["fitness"], "score": source["score"],
                "parameters": {p.path: v for p, v in zip(self.space.params, source["values"])}}
        if rescored is not None:
            meta.update({"tuned_fitness": rescored["tuned_fitness"], "rescored_with": dict(self.config.rescore.overrides),
                         "best_before_rescoring": {"generation": best["generation"], "index": best["index"],
                                                   "fitness": best["fitness"]}})
        data["meta"] = meta
        return data

    def write_artifacts(self, final: bool = False) -> None:
        """generations.csv and best.yaml; fitness.png at the end, and meanwhile at most every
        `PLOT_EVERY` seconds (drawing it costs a few tenths of a second)."""
        history = self.state.get("history", [])
        self.store.write_generations(history)
        cfg = self.best_config()
        if cfg is not None:
            write_yaml(self.dir / "best.yaml", cfg,
                       header=f"# the best candidate of run {self.dir.name}; run it with:\n"
                              f"#   python -m experiments.solve {self.dir / 'best.yaml'}")
        if history and (final or time.monotonic() - self._plotted >= PLOT_EVERY):
            write_bytes(self.dir / "fitness.png", plot(history, self.config))
            self._plotted = time.monotonic()


def plot(history: list[dict], config: RunConfig) -> bytes:
    """fitness.png: best, mean and median fitness per generation, and the best so far."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = [h["generation"] for h in history]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=100)
    ax.plot(g, [h["best"] for h in history], "o-", label="best of generation")
    ax.plot(g, [h["median"] for h in history], "s-", label="median")
    ax.plot(g, [h["mean"] for h in history], "^-", label="mean")
    ax.plot(g, [h["best_so_far"] for h in history], "k--", label="best so far")
    pieces = base_solver(config).get("pieces")
    ax.set_xlabel("generation")
    ax.set_ylabel(f"fitness (score over {pieces:,} pieces)" if pieces else "fitness (score)")
    note = ", aborted candidates count with their fitness at the abort" if config.early_abort.enabled else ""
    ax.set_title(f"{config.name}: {config.algorithm}, {config.population} candidates per generation{note}",
                 fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()
