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
from .records import Evaluation, GenerationStats, spread
from .store import DECIMALS, IN_PLAY, RunDamaged, RunStore

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
    """The run loop's resumption (`optimizers.run_loop.RunLoop` is one)."""

    def _restore(self) -> None:
        """Rebuild the memo from the files; clean partial lines. `RunDamaged` when evaluations.csv is
        not what the checkpoint's finished generations counted (`check_against`: rows
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
        check_against(self.store, rows, self.state.history, told)
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


def check_against(store: RunStore, rows: list[Evaluation], history: list[GenerationStats],
                  told: dict[int, int] | None = None) -> None:
    """`RunDamaged` when ``rows`` (evaluations.csv as read) are not the evaluations of the
    finished generations of ``history`` (the checkpoint's): rows missing (naming the damaged
    lines), a candidate the generation did not have, or fitness values whose statistics (best,
    mean, median, worst of the tuner's candidates, computed as the run loop computes them,
    `spread`) are not the checkpoint's at the precision generations.csv is written at
    (`DECIMALS`): a value changed after its generation finished. ``told``: how many of a
    generation's candidates, the first ones, are the tuner's (the others re-evaluations,
    `optimizers.noise`); absent: all of them."""
    by_generation: dict[int, list[Evaluation]] = {}
    for e in rows:
        by_generation.setdefault(e.generation, []).append(e)
    counted = {h.generation: h.evaluations for h in history}
    have = {g: len(by_generation.get(g, [])) for g in counted}
    missing = {g: n - have[g] for g, n in counted.items() if have[g] < n}
    name = store.evaluations.name
    if missing:
        if not store.evaluations.exists():
            where = "the file is missing"
        elif store.damaged.get(name) == [1] and not rows:
            where = "its header is not the one this run writes"
        elif store.damaged.get(name):
            lines = store.damaged[name]
            where = f"unreadable line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines[:5]))}" + (
                ", ..." if len(lines) > 5 else "")
        else:
            where = "rows deleted"
        gens = ", ".join(str(g) for g in sorted(missing))
        raise RunDamaged(f"{store.evaluations}: {sum(missing.values())} of the evaluations the checkpoint counts in "
                         f"generation{'s' if len(missing) > 1 else ''} {gens} are not there ({where}); restore the "
                         "file, or move checkpoint.npz aside to resume from the evaluations that remain")
    for h in history:
        mine = by_generation[h.generation]
        for e in mine:
            if not 0 <= e.index < h.evaluations:
                raise RunDamaged(f"{store.evaluations}: line {store.slot_lines.get(e.slot, '?')} is generation "
                                 f"{e.generation}'s candidate {e.index}, which the checkpoint does not count (the "
                                 f"generation had candidates 0 to {h.evaluations - 1}); remove it, or restore the file")
        n = h.evaluations if told is None else told.get(h.generation, h.evaluations)
        fitness = [e.record.fitness for e in mine if e.index < n]
        if not fitness:
            continue
        now = spread(fitness)
        for stat in ("best", "mean", "median", "worst"):
            saved = getattr(h, stat)
            if saved is None or f"{now[stat]:.{DECIMALS}f}" != f"{saved:.{DECIMALS}f}":
                raise RunDamaged(
                    f"{store.evaluations}: generation {h.generation}'s rows give a {stat} fitness of "
                    f"{now[stat]:.{DECIMALS}f} where the checkpoint's statistics say "
                    f"{'none' if saved is None else f'{saved:.{DECIMALS}f}'}: a value was changed after the "
                    "generation finished; restore the file as the run wrote it")
