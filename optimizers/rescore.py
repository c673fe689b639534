"""The re-scoring of a run's best (issue 59's room of the run loop): the top distinct candidates
and the tuner's recommendation played again with ``rescore.overrides`` (a wider beam, the whole
sequence), the best of them the run's result; read back from rescore.csv on resume."""

from __future__ import annotations

import logging
from dataclasses import replace

from engine.parallel import Pool

from ._base import fidelity
from .fitness import Evaluated, canonical
from .space import with_settings
from .records import RECOMMENDATION, Evaluation, Rescored, Rescoring

log = logging.getLogger("optimizers.run")


class Rescore:
    """The run loop's re-scoring (`optimizers.run_loop.RunLoop` is one): what it plays and how."""

    def run_rescore(self, pool: Pool) -> None:
        """Re-run the best distinct candidates (and the tuner's recommendation) with
        ``rescore.overrides``; the best of them is the run's result (best.yaml)."""
        rows = self._rescorings(pool)
        best = min(rows, key=lambda r: (-r.record.fitness, r.rank))
        self.state.rescored = Rescored.of(best)
        which = ("the tuner's recommendation" if best.index == RECOMMENDATION else
                 f"tuned rank {best.rank + 1}, tuned fitness {best.tuned_fitness:,.0f}")
        self._say(f"rescore: {len(rows)} candidates with {self.config.rescore.overrides}; best "
                  f"{best.record.fitness:,.0f} ({which})")

    def _top_distinct(self) -> list[Evaluation]:
        """The ``rescore.top`` best evaluations of distinct configs: finished ones first, then by
        fitness, the earliest on ties."""
        compared = fidelity(self.state.optimizer).compared
        noise = self.state.noise
        if noise is not None and noise.pools:  # points by pooled mean, each as its first evaluation
            ranked = [replace(e, record=replace(e.record, fitness=p.mean))
                      for p in noise.ranked() for e in [self.evaluations[p.first]]]
        else:
            ranked = sorted((e for e in self.evaluations.values() if compared(e.generation)),
                            key=lambda e: (e.record.aborted, -e.record.fitness, e.generation, e.index))
        top, seen = [], set()
        for e in ranked:
            if e.key not in seen:
                seen.add(e.key)
                top.append(e)
            if len(top) == self.config.rescore.top:
                break
        return top

    def _rescore_entries(self) -> list[tuple[Rescoring, dict]]:
        """What the re-scoring plays, by rank: each as a row still without a record and the config
        it plays. The top distinct candidates, then the tuner's recommendation
        (`Tuner.recommendation`, under ``rescore.recommendation``; generation: the generations
        told, index `RECOMMENDATION`, never played while tuning, so no tuned fitness or key)
        unless it re-scores as one of them."""
        def rescored(values, g):
            tuned = with_settings(self.space.config(values), fidelity(self.state.optimizer).settings_at(g))
            return canonical(with_settings(tuned, self.config.rescore.overrides))

        out = []
        for e in self._top_distinct():
            key, data = rescored(e.values, e.generation)
            out.append((Rescoring(len(out), e.generation, e.index, list(e.values), e.record.fitness, None, False, key,
                                  e.key), data))
        values = self.recommended() if self.config.rescore.recommendation else None
        if values is not None:
            g = self.state.generation
            key, data = rescored(values, g)
            if key not in {row.key for row, _ in out}:
                out.append((Rescoring(len(out), g, RECOMMENDATION, values, float("nan"), None, False, key, ""), data))
        return out

    def _rescorings(self, pool: Pool) -> list[Rescoring]:
        """Every re-scoring, by rank: read back from rescore.csv when written before an
        interruption, else simulated."""
        written = {r.rank: r for r in self.store.read_rescore()}
        rows: dict[int, Rescoring] = {}
        todo = []  # (entry, config) to simulate
        for entry, data in self._rescore_entries():
            if entry.rank in written and written[entry.rank].key == entry.key:
                rows[entry.rank] = written[entry.rank]
            else:
                todo.append((entry, data))
        self._simulate_rescore(pool, todo, rows)
        out = [rows[k] for k in sorted(rows)]
        self.store.rewrite_rescore(out)
        return out

    def _simulate_rescore(self, pool: Pool, todo: list[tuple], rows: dict[int, Rescoring]) -> None:
        from tqdm import tqdm

        files = [self.in_play(data, f"rescore-{entry.rank}-{entry.key}", pool) for entry, data in todo]
        tasks = [self._task(data, None, pool, file) for (_, data), file in zip(todo, files)]
        with tqdm(total=len(tasks), desc="rescore", unit="eval", leave=False, disable=self.quiet or not tasks or None) as bar:
            def done(t: int, result: Evaluated) -> None:
                entry = todo[t][0]
                if result.discarded is not None:
                    self._say(result.discarded)
                self.store.append_curve("rescore", entry.key, result.curve)
                row = replace(entry, record=result.record)
                self.store.append_rescore(row)
                rows[row.rank] = row
                if files[t] is not None:
                    files[t].unlink(missing_ok=True)
                where = (f"the recommendation after generation {row.generation - 1}" if row.index == RECOMMENDATION
                         else f"gen {row.generation} #{row.index}, tuned {row.tuned_fitness:,.0f}")
                log.info("rescore #%d (%s): %s", row.rank, where, f"{row.record.fitness:,.0f}")
                bar.update(1)

            self.evaluate_on(pool, tasks, done)
