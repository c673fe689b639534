"""The run loop (`RunLoop`): generations of candidates through the memo, early abort, the parallel
map and the run directory, with a checkpoint after each generation.

One generation g (`RunLoop.run_generation`):

1. `RunLoop.propose`: the tuner's vectors (`Tuner.ask`) as solver configs, and the threshold;
2. `RunLoop.settle_known`: each candidate read back, a repeat, known to the memo, or pending;
3. `RunLoop.simulate`: each pending config simulated once, written down as it finishes;
4. `RunLoop.conclude`: the tuner told, the early abort updated, the statistics and files written.

The checkpoint (`state.RunState`) holds the state before the next `ask`, so a resumed run ends
where an uninterrupted one would. Beside it: `optimizers.generation`, `optimizers.restore`,
`optimizers.rescore`, `optimizers.artifacts`; every evaluation goes through `RunLoop.evaluate_on`.
In full (noise handling, saved searches, resumption): docs/tuning.md, 'The run loop, one generation'.
"""

from __future__ import annotations

import contextlib
import logging
import time
from pathlib import Path
from typing import Callable

import numpy as np

from engine.files import FolderLock
from engine.parallel import Pool
from engine.provenance import provenance

from ._base import Tuner, fidelity
from .artifacts import Artifacts
from .config import RunConfig, base_solver
from .early_abort import EarlyAbort
from .fitness import Evaluated, Memo, Task, TuningRecord, canonical, evaluate
from .generation import Candidate, Generation
from .heartbeat import Heartbeat
from .instances import first_seed, generation_seed
from .noise import Noise, point_key
from .racing import Racing
from .rescore import Rescore
from .restore import Restore
from .space import Param, Space, with_settings
from .state import RunState
from .records import Best, Evaluation, GenerationStats, spread
from .store import IN_PLAY, RunStore
from .tuners import get as get_tuner
from .validation import Validation

log = logging.getLogger("optimizers.run")
#: pieces of the game each policy plays in `RunLoop.warm_up`: enough to call every kernel once
WARM_UP_PIECES = 20
#: the file in a run directory whose lock a process holds while it works in the run
LOCK_FILE = "run.lock"


def make_space(config: RunConfig) -> Space:
    params = [Param(path=s.path, type=s.type, low=s.low, high=s.high,
                    choices=tuple(s.choices) if s.choices is not None else None, init=s.init) for s in config.space]
    return Space(params, base_solver(config), config.normalize)


def make_tuner(config: RunConfig, space: Space) -> Tuner:
    return get_tuner(config.algorithm)(space, config.settings, np.random.default_rng(config.seed), init=config.init,
                                       init_sigma=config.init_sigma)


class RunLoop(Restore, Rescore, Artifacts, Racing, Validation):
    """Runs (or resumes) one tuning run in ``run_dir``; ``config`` is the resolved run config.
    ``on_evaluation`` is called with each evaluation as it is written down (`Evaluation.as_row`)."""

    def __init__(self, config: RunConfig, run_dir: str | Path, quiet: bool = False,
                 on_evaluation: Callable[[dict], None] | None = None):
        self.config = config
        self.dir = Path(run_dir)
        self.quiet = quiet
        self.on_evaluation = on_evaluation
        self.space = make_space(config)
        self.store = RunStore(self.dir, self.space.params, config=config.model_dump(mode="json"))
        self.memo = Memo(config.early_abort.aborted_fitness)
        self.state: RunState | None = None
        self.evaluations: dict[tuple[int, int], Evaluation] = {}  # (generation, index) -> this run's evaluations
        #: config key -> its last simulated evaluation, whose curve curves.jsonl lost (`_restore`)
        self.unrecovered: dict[str, Evaluation] = {}
        self._plotted = time.monotonic()

    # ------------------------------------------------------------------ setup
    def fresh_state(self) -> RunState:
        return RunState(generation=0, optimizer=make_tuner(self.config, self.space),
                        early_abort=EarlyAbort.for_run(self.config), noise=Noise.for_run(self.config, self.space))

    def warm_up(self, pool: Pool) -> None:
        """Compile (or load) the policy kernels before the candidates play, so that the workers
        find them in numba's cache instead of all compiling at once: with the workers' numba
        threads, since a kernel for one thread and one for several are compiled apart. This process
        plays a short game of each policy while a worker compiles its kernel parts
        (`solver.solve.compile_parts`): on a cold cache the two share the compiling."""
        from solver import SolverConfig, solve
        from solver.solve import compile_parts

        policies = {self.space.base.get("policy", "beam")}
        for p in self.space.params:
            if p.path == "policy":
                policies.update(p.choices)
        what = ("preparing the kernels for this layout (compiled once per machine, tens of seconds; then loaded from "
                "numba's cache)")
        with Heartbeat(self._say, what, "preparing"):
            for policy in sorted(policies):
                data = {**self.space.config(self.space.init_values), "policy": policy, "pieces": WARM_UP_PIECES,
                        "threads": pool.threads}
                with pool.beside(compile_parts, [data]):
                    solve(SolverConfig.model_validate(data), record=False)

    # ------------------------------------------------------------------ the run
    def run(self, resume: bool = False) -> RunState:
        """Run to the end (or from the last checkpoint with ``resume``); returns the final state
        (the checkpoint holds it as `RunState.state_dict`). The run directory is locked before any
        of its state is read."""
        with FolderLock(self.dir, LOCK_FILE), self._run_log():
            from engine.files import remove_stale_temporaries

            remove_stale_temporaries(self.dir)  # left by a process killed while writing (kill -9)
            pool = Pool(self.config.parallel)
            try:
                self._begin(resume, pool)
                while self.state.generation < self.state.optimizer.generations:
                    self.run_generation(pool, self.state.generation)
                self._finish(pool)
                return self.state
            except KeyboardInterrupt:
                self._interrupted()
                raise
            finally:
                pool.close()

    @contextlib.contextmanager
    def _run_log(self):
        """The run's log lines go to run.log while the run lasts."""
        handler = logging.FileHandler(self.dir / "run.log", encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%d %H:%M:%S"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
        try:
            yield
        finally:
            log.removeHandler(handler)
            handler.close()

    def _begin(self, resume: bool, pool: Pool) -> None:
        """The state from the checkpoint (``resume``) or a fresh one, checkpointed at once."""
        checkpoint = self.store.load_checkpoint() if resume else None
        if resume:
            self._check_in_play()
        if checkpoint is None:
            self.state = self.fresh_state()
            self.state.optimizer.attach(self.dir)
            self.store.save_checkpoint(self.state.state_dict())
        else:
            self.state = RunState.from_checkpoint(checkpoint, self.store, self.config, self.space)
            self.state.optimizer.attach(self.dir)
        self.store.add_provenance({**provenance(), "resumed_at": self.state.generation if resume else None})
        if resume:
            self._restore()
            log.info("resumed at generation %d", self.state.generation)
        else:
            log.info("run %s: %s, %d generations of %d, %d parameters", self.dir.name, self.config.algorithm,
                     self.config.generations, self.config.population, self.space.dim)
        self.write_artifacts()
        if not self.state.done:
            self.warm_up(pool)

    def _finish(self, pool: Pool) -> None:
        """The re-scoring (when configured and not done yet), then the final checkpoint and artifacts."""
        if self.config.rescore is not None and self.state.rescored is None:
            self.run_rescore(pool)
        if self.config.validation is not None and self.state.validated is None and self.state.best is not None:
            self.run_validation(pool)
        self.state.done = True
        self.store.save_checkpoint(self.state.state_dict())
        with contextlib.suppress(OSError):
            (self.dir / IN_PLAY).rmdir()  # every candidate written down: nothing in play
        self.write_artifacts(final=True)
        best = self.state.best
        log.info("done: best fitness %s", None if best is None else f"{best.fitness:,.0f}")

    def _interrupted(self) -> None:
        log.info("interrupted at generation %d", 0 if self.state is None else self.state.generation)
        if self.state is not None:
            self.write_artifacts(final=True)

    def _say(self, line: str) -> None:
        """A line for run.log and, unless quiet, the terminal."""
        log.info(line)
        if not self.quiet:
            from tqdm import tqdm

            tqdm.write(line)

    def _task(self, config: dict, threshold, pool: Pool, in_play: Path | None = None) -> Task:
        """The `fitness.Task` of a config; ``in_play``: where it keeps its search, when its policy
        can (`in_play`)."""
        return Task(config, threshold, pool.threads, self.config.early_abort.aborted_fitness,
                    self.config.games.topout_penalty, None if in_play is None else str(in_play))

    def in_play(self, config: dict, name: str, pool: Pool) -> Path | None:
        """The file in ``in-play/`` where a candidate named ``name`` keeps its search while it is
        simulated: for a policy that can save its search (`solver.Policy.resumable`), on this
        machine's processes (not on a dask scheduler's workers elsewhere); else None."""
        from solver.registry import get as get_policy

        policy = get_policy(config.get("policy", "beam")).policy  # (a policy for unknown pieces has no search to save)
        if pool.settings.scheduler or not getattr(policy, "resumable", False):
            return None
        return self.dir / IN_PLAY / f"{name}.npz"

    def candidate_config(self, values: list, g: int) -> dict:
        """The solver config of a candidate of generation ``g``: the space's, with the generation's
        seeds under ``games.seeds: per_generation`` (and its games when they grow, `optimizers.noise`)."""
        data = self.space.config(values)
        rung = fidelity(self.state.optimizer).settings_at(g)
        if rung:
            data = with_settings(data, rung)
        if self.config.games.seeds == "per_generation":
            noise = self.state.noise
            if noise is not None and noise.grows:
                data = with_settings(data, {"online.games": noise.games, "seed": noise.first_seed(first_seed(data), g)})
            else:
                data = with_settings(data, {"seed": generation_seed(data, g)})
        return data

    # ------------------------------------------------------------------ one generation
    def run_generation(self, pool: Pool, g: int) -> None:
        """Generation ``g``: propose, settle the candidates known without a simulation, simulate the
        others, then take the results in (see the module docstring); under ``race``, a race
        (`optimizers.racing.Racing.race_generation`)."""
        if self.config.race is not None:
            return self.race_generation(pool, g)
        gen = self.propose(g)
        self._recover_curves(pool, gen)
        with self._progress(gen) as bar:
            pending = self.settle_known(gen, bar)
            self.simulate(pool, gen, pending, bar)
        self.conclude(gen)

    def propose(self, g: int) -> Generation:
        """The tuner's candidates for generation ``g`` and the threshold they are held to."""
        started = time.perf_counter()
        # the values played: decoded, the normalize group scaled (evaluations.csv and best.yaml's
        # parameters show what was played, not the tuner's unscaled draw)
        values = [self.space.played(v) for v in self.state.optimizer.ask()]
        candidates = [Candidate(i, v, *canonical(self.candidate_config(v, g))) for i, v in enumerate(values)]
        told = len(candidates)
        if self.state.noise is not None:  # the elite played again on this generation's games
            for v in self.state.noise.elite({point_key(c.values) for c in candidates}):
                candidates.append(Candidate(len(candidates), v, *canonical(self.candidate_config(v, g))))
        early = self.state.early_abort
        if not fidelity(self.state.optimizer).aborts_at(g):
            return Generation(g, candidates, None, None, started, told)
        return Generation(g, candidates, early.threshold(), early.kth_best(), started, told)

    def _progress(self, gen: Generation):
        from tqdm import tqdm

        g, total = gen.number, self.state.optimizer.generations
        return tqdm(total=len(gen.candidates), desc=f"generation {g} ({g + 1} of {total})", unit="eval", leave=False,
                    disable=self.quiet or None, dynamic_ncols=True)  # (None: none when not a terminal)

    def settle_known(self, gen: Generation, bar, candidates: list[Candidate] | None = None) -> dict[str, list[int]]:
        """Give a record, in index order, to every candidate (of ``candidates``, a race's batch; else
        all of the generation's) that needs no simulation: one written before an interruption, a
        repeat of an earlier candidate, or one the memo knows. Returns the others' indices by config
        key (each key is simulated once)."""
        pending: dict[str, list[int]] = {}
        first_of: dict[str, int] = {}  # key -> its first candidate with a record or pending
        for c in gen.candidates if candidates is None else candidates:
            if self._read_back(gen, c):
                first_of.setdefault(c.key, c.index)
            elif c.key in pending:
                pending[c.key].append(c.index)
                continue
            elif c.key in first_of:
                self._write_down(gen, c, gen.records[first_of[c.key]].repeated(), cached=True)
            elif (hit := self.memo.lookup(c.key, gen.threshold_of(c))) is not None:
                self._write_down(gen, c, hit, cached=True)
                first_of[c.key] = c.index
            else:
                pending[c.key] = [c.index]
                first_of[c.key] = c.index
                continue
            bar.update(1)
        return pending

    def _read_back(self, gen: Generation, c: Candidate) -> bool:
        """Whether the candidate was evaluated before an interruption (same slot, same config); its
        record is then taken as written."""
        old = self.evaluations.get((gen.number, c.index))
        if old is None or old.key != c.key:
            return False
        gen.records[c.index] = old.record
        return True

    def simulate(self, pool: Pool, gen: Generation, pending: dict[str, list[int]], bar) -> None:
        """Simulate each pending config once on the pool; every result is written down as it arrives."""
        groups = list(pending.items())
        firsts = [gen.candidates[indices[0]] for _, indices in groups]
        configs = [c.config for c in firsts]
        files = [self.in_play(config, f"g{gen.number}-{key}", pool) for config, (key, _) in zip(configs, groups)]
        tasks = [self._task(c.config, gen.threshold_of(c), pool, file) for c, file in zip(firsts, files)]

        def done(t: int, result: Evaluated) -> None:
            key, indices = groups[t]
            if result.discarded is not None:
                self._say(result.discarded)
            self._take_result(gen, key, indices, result)
            if files[t] is not None:  # written down: its saved search is not needed again
                files[t].unlink(missing_ok=True)
            bar.update(len(indices))
            if gen.race is None:  # (a race's single evaluations are not a candidate's fitness)
                bar.set_postfix_str(f"best {gen.best_fitness():,.0f}", refresh=False)

        self.evaluate_on(pool, tasks, done)

    def evaluate_on(self, pool: Pool, tasks: list, done) -> None:
        """Every evaluation of the run goes through here: ``tasks`` on the pool, ``done(t, result)``
        for each as it arrives (`optimizers.fitness.evaluate`)."""
        pool.map(evaluate, tasks, on_result=done)

    def _take_result(self, gen: Generation, key: str, indices: list[int], result: Evaluated) -> None:
        """A simulation's result: its curve and the memo first, then a row per candidate of the
        config (the first simulated, the others repeats of it)."""
        self.store.append_curve(gen.number, key, result.curve)
        self.memo.store(key, result.record, result.curve)
        record = result.record
        for j, i in enumerate(indices):
            self._write_down(gen, gen.candidates[i], record if j == 0 else record.repeated(), cached=j > 0)

    def _write_down(self, gen: Generation, c: Candidate, record: TuningRecord, cached: bool) -> None:
        """A candidate's record: in the generation, evaluations.csv, run.log and ``on_evaluation``."""
        gen.records[c.index] = record
        e = Evaluation(gen.number, c.index, list(c.values), record, cached, c.key)
        self.evaluations[e.slot] = e
        self.store.append_evaluation(e)
        self._log_evaluation(e)
        if self.on_evaluation is not None:
            self.on_evaluation(e.as_row())

    @staticmethod
    def _log_evaluation(e: Evaluation) -> None:
        r, memo = e.record, " (memo)" if e.cached else ""
        if r.aborted:
            log.info("gen %d #%d%s: aborted at piece %d (best %s < threshold %s), %.2f s", e.generation, e.index, memo,
                     r.abort_piece, f"{r.score:,}", f"{r.threshold:,.0f}", r.seconds)
        else:
            log.info("gen %d #%d%s: fitness %s (%d pieces, %s), %.2f s", e.generation, e.index, memo,
                     f"{r.fitness:,.0f}", r.pieces, r.stop, r.seconds)

    def conclude(self, gen: Generation) -> None:
        """Take a generation in: the evaluations rewritten in order, the tuner and the early abort
        told, the statistics, the checkpoint and the artifacts written."""
        state, noise = self.state, self.state.noise
        self.store.rewrite_evaluations(sorted(self.evaluations.values(), key=lambda e: e.slot))
        extra = ""
        if gen.race is not None:  # told the race's order; its statistics are the proposals' means
            told, fitness, stopped, state.elites, state.best, extra = self.race_outcome(gen)
            state.instances_seen = gen.instances_seen
            state.optimizer.tell_run(told, stopped)
        else:
            mine = gen.records[: gen.told]  # the tuner's candidates (then re-evaluations)
            fitness = told = np.array([r.fitness for r in mine])
            if noise is not None:
                told = noise.observe(gen.number, [(c.index, c.values, r) for c, r in zip(gen.candidates, gen.records)],
                                     gen.told)
            state.optimizer.tell_run(told, [r.abort_piece if r.aborted else None for r in mine])
            state.early_abort.observe(gen.number, [(c.index, c.key, r, self.memo.curve(c.key))
                                                   for c, r in zip(gen.candidates, gen.records) if not r.aborted])
            state.best = self._best_so_far(gen.number)
        stats = self._statistics(gen, fitness)
        state.history.append(stats)
        state.generation = gen.number + 1
        restart = noise is not None and noise.stalls(gen.number, float(told.max()), state.optimizer.generations)
        if restart:
            state.optimizer = noise.restarted(self.config, self.space, None if state.best is None else state.best.values,
                                              gen.number)
            state.optimizer.attach(self.dir)
        self.store.save_checkpoint(state.state_dict())
        for stale in (self.dir / IN_PLAY).glob(f"g{gen.number}-*.npz"):  # a stop between a result and its unlink
            stale.unlink(missing_ok=True)
        self.write_artifacts()
        if noise is not None and noise.pools:
            extra = f" | {noise.played[-1]} games each, {len(gen.candidates) - gen.told} re-evaluated"
        self._say(f"generation {stats.generation} ({stats.generation + 1} of {state.optimizer.generations}): "
                  f"best {stats.best:,.0f}  mean {stats.mean:,.0f}  median {stats.median:,.0f}  worst {stats.worst:,.0f} "
                  f"| {stats.simulated} simulated, {stats.aborted} aborted | {stats.wall_seconds:.1f} s | "
                  f"best so far {stats.best_so_far:,.0f}{extra}")
        if restart:
            self._say(f"restart {noise.restarts} after generation {gen.number} ({self.config.restart.stall} "
                      f"generations without improvement): {noise.population} candidates per generation from now on")

    def _statistics(self, gen: Generation, fitness: np.ndarray) -> GenerationStats:
        rows = [self.evaluations[(gen.number, c.index)] for c in gen.candidates]
        simulated = [e for e in rows if not e.cached]
        return GenerationStats(generation=gen.number, **spread(fitness), evaluations=len(rows),
                               simulated=len(simulated), aborted=sum(e.record.aborted for e in rows),
                               pieces=sum(e.record.pieces for e in simulated),
                               eval_seconds=sum(e.record.seconds for e in simulated),
                               wall_seconds=time.perf_counter() - gen.started,
                               best_so_far=self.state.best.fitness, kth_best=gen.kth_best)

    def _best_so_far(self, upto: int) -> Best:
        """The best evaluation of generations 0 .. ``upto``: the highest fitness among finished ones
        (aborted ones only when none finished), the earliest on ties (evaluations of later
        generations, read back from evaluations.csv when a run resumes without its checkpoint, do
        not count yet). With pooling (`optimizers.noise`): the point of highest pooled mean
        (`Noise.best`), as its first evaluation with that mean."""
        noise = self.state.noise
        if noise is not None and noise.pools and (point := noise.best()) is not None:
            e = self.evaluations[point.first]
            return Best(fitness=point.mean, score=int(round(point.score)), generation=e.generation, index=e.index,
                        key=e.key, values=list(e.values))
        compared = fidelity(self.state.optimizer).compared
        done = [e for e in self.evaluations.values() if e.generation <= upto]
        rows = [e for e in done if compared(e.generation)] or done
        finished = [e for e in rows if not e.record.aborted] or rows
        return Best.of(min(finished, key=lambda e: (-e.record.fitness, e.generation, e.index)))
