"""What a resumed run takes back from its run directory beyond the checkpoint (a room of the run
loop): the memo from evaluations.csv and curves.jsonl, the curves a damaged curves.jsonl lost, and
the refusal of an older version's pickled searches in ``in-play/``."""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np

from engine.parallel import Pool

from .fitness import Evaluated, TuningRecord
from .generation import Generation
from .store import IN_PLAY, Evaluation, RunDamaged

log = logging.getLogger("optimizers.run")


def replay_threshold(record: TuningRecord) -> np.ndarray | None:
    """A threshold under which a simulation of ``record``'s config ends as ``record`` did, whatever
    stopped it then: none for a finished one; for an aborted one, a threshold no score passes at its
    abort piece and unchecked (-inf) before it."""
    if not record.aborted:
        return None
    out = np.full(record.abort_piece, -np.inf)
    out[-1] = np.inf
    return out


class Restore:
    """The run loop's resumption (`optimizers.tuner.Tuner` is one)."""

    def _restore(self) -> None:
        """Rebuild the memo from the files; clean partial lines. `RunDamaged` when evaluations.csv is
        not what the checkpoint's finished generations counted (`RunStore.check_against`: rows
        missing, a damaged line, a value changed): the run would silently simulate them again, or
        go on from values it was never told.

        The memo holds, for each config, its last simulated evaluation with its curve, as in a run
        never stopped. An evaluation whose curve curves.jsonl lost (a damaged, truncated or removed
        file) takes it from the early abort's saved candidates when it is one of them; the others
        are simulated again, each when its config comes up again (`_recover_curves`), so that the
        memo answers as it would have and the run ends as an uninterrupted one."""
        rows = self.store.read_evaluations()
        noise = self.state.noise
        told = {r["generation"]: r["candidates"] for r in noise.rows} if noise is not None else None
        if self.config.race is not None:  # a race's statistics are means by entrant: only rows are counted
            told = {h.generation: 0 for h in self.state.history}
        self.store.check_against(rows, self.state.history, told)
        damaged = self.store.damaged.get(self.store.evaluations.name)
        if damaged:  # (lines of no finished generation: check_against refuses those)
            self._say(f"{self.store.evaluations}: line{'s' if len(damaged) > 1 else ''} "
                      f"{', '.join(map(str, damaged[:5]))}{', ...' if len(damaged) > 5 else ''} could not be read "
                      "(dropped): their candidates are evaluated again")
        self.store.rewrite_curves()
        rows = self.store.rewrite_evaluations(rows) if self.store.evaluations.exists() else []
        curves = self.store.read_curves()
        kept = {key: curve for *_, key, curve in self.state.early_abort.best}  # finished candidates' curves
        last: dict[str, Evaluation] = {}
        for e in rows:
            self.evaluations[e.slot] = e
            if not e.cached:
                last[e.key] = e
        for key, e in last.items():
            curve = curves.get((e.generation, key))
            if curve is None and not e.record.aborted:
                curve = kept.get(key)
            if curve is None:
                self.unrecovered[key] = e
            else:
                self.memo.store(key, e.record, curve)
        if self.unrecovered:
            gens = sorted({e.generation for e in self.unrecovered.values()})
            self._say(f"{self.store.curves}: the curves of {len(self.unrecovered)} simulated evaluation(s) of generation"
                      f"{'s' if len(gens) > 1 else ''} {', '.join(map(str, gens))} are lost (the file is damaged or "
                      "removed): each is simulated again when its config comes up again, so the run ends as one "
                      "never stopped")

    def _recover_curves(self, pool: Pool, gen: Generation) -> None:
        """Simulate again the configs of ``gen`` whose last evaluation lost its curve (`_restore`),
        each to the end it had (a finished one in full, an aborted one stopped at its abort piece),
        and put it in the memo as the run never stopped would have it, its curve back in
        curves.jsonl. `RunDamaged` when the simulation does not give the record evaluations.csv holds."""
        todo = {c.key: (self.unrecovered[c.key], c.config) for c in gen.candidates if c.key in self.unrecovered}
        if not todo:
            return
        groups = list(todo.items())
        tasks = [self._task(config, replay_threshold(e.record), pool) for _, (e, config) in groups]

        def done(t: int, result: Evaluated) -> None:
            key, (e, _) = groups[t]
            got, want = replace(result.record, seconds=0.0, threshold=None), replace(e.record, seconds=0.0, threshold=None)
            if got != want:
                raise RunDamaged(f"{self.store.evaluations}: generation {e.generation}'s candidate {e.index}, simulated "
                                 f"again for the curve curves.jsonl lost, gives fitness {got.fitness:,} ({got.stop}) where "
                                 f"the file says {want.fitness:,} ({want.stop}); restore the two files as the run wrote them")
            self.store.append_curve(e.generation, key, result.curve)
            self.memo.store(key, e.record, result.curve)
            del self.unrecovered[key]
            log.info("gen %d #%d: its curve simulated again (%d pieces)", e.generation, e.index, len(result.curve))

        self.evaluate_on(pool, tasks, done)

    def _check_in_play(self) -> None:
        """`RunDamaged` for a search in ``in-play/`` that an older version pickled (never read:
        `engine.statefile.legacy_problem`), before the run does any work."""
        from engine.statefile import legacy_problem

        old = sorted((self.dir / IN_PLAY).glob("*.pkl")) if (self.dir / IN_PLAY).is_dir() else []
        if old:
            raise RunDamaged(f"{old[0]}: {legacy_problem(self.dir)}")
