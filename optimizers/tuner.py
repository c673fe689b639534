"""The run loop: generations of candidates through the memo, early abort, the parallel map and the
run directory, with a checkpoint after each generation.

One generation g (`Tuner.run_generation`):

1. `Tuner.propose`: the tuner proposes vectors (`Optimizer.ask`), decoded into solver configs
   (`Space.config`); the threshold is built from generations before g (`EarlyAbort.threshold`);
2. `Tuner.settle_known`: each candidate is, in order, read back from ``evaluations.csv`` (a resumed
   generation), a repeat of an earlier candidate of this generation, known to the memo, or pending;
3. `Tuner.simulate`: each pending config is simulated once (`fitness.evaluate` on the pool); every
   finished evaluation is written down at once. A policy that can save its search
   (`solver.Policy.resumable`: ``segment``) saves it in ``in-play/`` of the run directory as it
   goes (`IN_PLAY`); a run stopped and resumed plays such a candidate on from there, to the result
   of one never stopped (a saved search that cannot be read is discarded and said, and the
   candidate played from its first piece: `fitness.evaluate`), and its file goes once the
   evaluation is written down;
4. `Tuner.conclude`: the tuner is told the fitness, the early abort takes in the finished
   candidates, the statistics, ``best.yaml``, ``fitness.png`` and ``checkpoint.npz`` are written.

With a ``noise`` or ``restart`` section (`optimizers.noise`), a generation also re-evaluates the
incumbent and the elite (candidates after the tuner's), its candidates play the generation's
number of games, the tuner is told pooled means, the run's best is the best pooled mean, and a
tuner that stalls is replaced by a restarted one before the checkpoint.

The checkpoint holds the state before the next generation's `ask` (`state.RunState`: the tuner with
its random states, the early abort, the statistics), so a resumed run proposes the same candidates
again, reads the ones already finished back, and ends exactly where an uninterrupted run would.
"""

from __future__ import annotations

import contextlib
import copy
import csv
import io
import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

from engine.files import FolderLock, write_bytes, write_text, write_yaml
from engine.parallel import Pool
from engine.provenance import provenance

from ._base import Optimizer
from .config import RunConfig
from .early_abort import EarlyAbort
from .fitness import Evaluated, Memo, TuningRecord, canonical, evaluate
from .noise import NOISE_COLUMNS, Noise, point_key
from .space import Param, Space, with_settings
from .state import Best, Rescored, RunState, check_against_checkpoint
from .store import RECOMMENDATION, Evaluation, GenerationStats, Rescoring, RunDamaged, RunStore, spread
from .tuners import get as get_tuner

log = logging.getLogger("optimizers.run")
#: seconds between two drawings of fitness.png while a run goes on (a drawing costs a few tenths of a second)
PLOT_EVERY = 60.0
#: fitness.png's size in inches and its resolution in dots per inch
PLOT_INCHES, PLOT_DPI = (7, 4.2), 100
#: pieces of the game each policy plays in `Tuner.warm_up`: enough to call every kernel once
WARM_UP_PIECES = 20
#: the folder of a run directory where the candidates in play whose policy can save its search keep
#: it (``g<generation>-<config key>.npz``, an `engine.statefile` file; `Tuner.simulate`)
IN_PLAY = "in-play"
#: the file in a run directory whose lock a process holds while it works in the run
LOCK_FILE = "run.lock"


def base_solver(config: RunConfig) -> dict:
    """The resolved config's base solver mapping, with the run's ``pieces`` applied."""
    base = copy.deepcopy(config.solver or {})
    if config.pieces is not None:
        base["pieces"] = config.pieces
    return base


def make_space(config: RunConfig) -> Space:
    params = [Param(path=s.path, type=s.type, low=s.low, high=s.high,
                    choices=tuple(s.choices) if s.choices is not None else None, init=s.init) for s in config.space]
    return Space(params, base_solver(config), config.normalize)


def make_optimizer(config: RunConfig, space: Space) -> Optimizer:
    return get_tuner(config.algorithm)(space, config.settings, np.random.default_rng(config.seed), init=config.init,
                                       init_sigma=config.init_sigma)


def first_seed(solver: dict) -> int:
    """The first seed of a solver config's games: its seed, else its rules' own."""
    from engine import get_rules

    base = solver.get("seed")
    if base is None:
        base = get_rules(solver.get("rules", "geek")).pieces.seed
    return int(base)


def generation_seed(solver: dict, g: int) -> int:
    """The first seed generation ``g`` plays under ``games.seeds: per_generation``: the solver's
    seed (else its rules' own) plus ``g`` times its games, so no two generations share a game."""
    games = (solver.get("online") or {}).get("games", 1)
    return first_seed(solver) + g * int(games)


def replay_threshold(record: TuningRecord) -> np.ndarray | None:
    """A threshold under which a simulation of ``record``'s config ends as ``record`` did, whatever
    stopped it then: none for a finished one; for an aborted one, a threshold no score passes at its
    abort piece and unchecked (-inf) before it."""
    if not record.aborted:
        return None
    out = np.full(record.abort_piece, -np.inf)
    out[-1] = np.inf
    return out


@dataclass
class Candidate:
    """One proposal of a generation: its ``index``, parameter ``values``, canonical solver ``config``
    and that config's ``key``."""

    index: int
    values: list
    key: str
    config: dict


@dataclass
class Generation:
    """A generation under way: its ``candidates``, the early abort's ``threshold`` (and the K-th best
    fitness it was built from) they are held to, when it ``started`` (`time.perf_counter`), and
    each candidate's record once known. The first ``told`` candidates are the tuner's (None: all);
    the others are re-evaluations (`optimizers.noise`)."""

    number: int
    candidates: list[Candidate]
    threshold: np.ndarray | None
    kth_best: float | None
    started: float
    told: int | None = None
    records: list[TuningRecord | None] = field(default_factory=list)

    def __post_init__(self):
        self.records = [None] * len(self.candidates)
        if self.told is None:
            self.told = len(self.candidates)

    def best_fitness(self) -> float:
        return max(r.fitness for r in self.records if r is not None)


class Tuner:
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
        return RunState(generation=0, optimizer=make_optimizer(self.config, self.space),
                        early_abort=EarlyAbort.for_run(self.config), noise=Noise.for_run(self.config, self.space))

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

        pool.map(evaluate, tasks, on_result=done)

    def _check_in_play(self) -> None:
        """`RunDamaged` for a search in ``in-play/`` that an older version pickled (never read:
        `engine.statefile.legacy_problem`), before the run does any work."""
        from engine.statefile import legacy_problem

        old = sorted((self.dir / IN_PLAY).glob("*.pkl")) if (self.dir / IN_PLAY).is_dir() else []
        if old:
            raise RunDamaged(f"{old[0]}: {legacy_problem(self.dir)}")

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
        for policy in sorted(policies):
            data = {**self.space.config(self.space.init_values), "policy": policy, "pieces": WARM_UP_PIECES,
                    "threads": pool.threads}
            with pool.beside(compile_parts, [data]):
                solve(SolverConfig.model_validate(data), record=False)

    # ------------------------------------------------------------------ the run
    def run(self, resume: bool = False) -> dict:
        """Run to the end (or from the last checkpoint with ``resume``); returns the final state as
        the checkpoint holds it (`RunState.to_state`). The run directory is locked before any of
        its state is read."""
        with FolderLock(self.dir, LOCK_FILE), self._run_log():
            from engine.files import remove_stale_temporaries

            remove_stale_temporaries(self.dir)  # left by a process killed while writing (kill -9)
            pool = Pool(self.config.parallel)
            try:
                self._begin(resume, pool)
                while self.state.generation < self.state.optimizer.generations:
                    self.run_generation(pool, self.state.generation)
                self._finish(pool)
                return self.state.to_state()
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
            self.store.save_checkpoint(self.state.to_state())
        else:
            from engine.statefile import Fields, StateError

            check_against_checkpoint(self.config, checkpoint, self.dir / "config.yaml")
            try:
                self.state = RunState.from_state(Fields(checkpoint, self.store.checkpoint), self.config, self.space)
            except StateError as e:
                raise RunDamaged(f"{e}; {self.store.checkpoint_advice}") from None
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
        self.state.done = True
        self.store.save_checkpoint(self.state.to_state())
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

    def _task(self, config: dict, threshold, pool: Pool, in_play: Path | None = None) -> dict:
        """The plain task `fitness.evaluate` takes; ``in_play``: where it keeps its search, when its
        policy can (`in_play`)."""
        return {"config": config, "threshold": threshold, "threads": pool.threads,
                "aborted_fitness": self.config.early_abort.aborted_fitness,
                "topout_penalty": self.config.games.topout_penalty,
                **({"checkpoint": str(in_play)} if in_play is not None else {})}

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
        rung = self.state.optimizer.settings_at(g)
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
        others, then take the results in (see the module docstring)."""
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
        if not self.state.optimizer.aborts_at(g):
            return Generation(g, candidates, None, None, started, told)
        return Generation(g, candidates, early.threshold(), early.kth_best(), started, told)

    def _progress(self, gen: Generation):
        from tqdm import tqdm

        g, total = gen.number, self.state.optimizer.generations
        return tqdm(total=len(gen.candidates), desc=f"generation {g} ({g + 1} of {total})", unit="eval", leave=False,
                    disable=self.quiet, dynamic_ncols=True)

    def settle_known(self, gen: Generation, bar) -> dict[str, list[int]]:
        """Give a record, in index order, to every candidate that needs no simulation: one written
        before an interruption, a repeat of an earlier candidate of the generation, or one the memo
        knows. Returns the others' indices by config key (each key is simulated once)."""
        pending: dict[str, list[int]] = {}
        first_of: dict[str, int] = {}  # key -> its first candidate with a record or pending
        for c in gen.candidates:
            if self._read_back(gen, c):
                first_of.setdefault(c.key, c.index)
            elif c.key in pending:
                pending[c.key].append(c.index)
                continue
            elif c.key in first_of:
                self._write_down(gen, c, gen.records[first_of[c.key]].repeated(), cached=True)
            elif (hit := self.memo.lookup(c.key, gen.threshold)) is not None:
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
        configs = [gen.candidates[indices[0]].config for _, indices in groups]
        files = [self.in_play(config, f"g{gen.number}-{key}", pool) for config, (key, _) in zip(configs, groups)]
        tasks = [self._task(config, gen.threshold, pool, file) for config, file in zip(configs, files)]

        def done(t: int, result: Evaluated) -> None:
            key, indices = groups[t]
            if result.discarded is not None:
                self._say(result.discarded)
            self._take_result(gen, key, indices, result)
            if files[t] is not None:  # written down: its saved search is not needed again
                files[t].unlink(missing_ok=True)
            bar.update(len(indices))
            bar.set_postfix_str(f"best {gen.best_fitness():,.0f}", refresh=False)

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
        mine = gen.records[: gen.told]  # the tuner's candidates (then re-evaluations)
        fitness = np.array([r.fitness for r in mine])
        self.store.rewrite_evaluations(sorted(self.evaluations.values(), key=lambda e: e.slot))
        told = fitness
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
        self.store.save_checkpoint(state.to_state())
        for stale in (self.dir / IN_PLAY).glob(f"g{gen.number}-*.npz"):  # a stop between a result and its unlink
            stale.unlink(missing_ok=True)
        self.write_artifacts()
        extra = ""
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
        compared = self.state.optimizer.compared
        done = [e for e in self.evaluations.values() if e.generation <= upto]
        rows = [e for e in done if compared(e.generation)] or done
        finished = [e for e in rows if not e.record.aborted] or rows
        return Best.of(min(finished, key=lambda e: (-e.record.fitness, e.generation, e.index)))

    # ------------------------------------------------------------------ re-scoring
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
        compared = self.state.optimizer.compared
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
        (`Optimizer.recommendation`, under ``rescore.recommendation``; generation: the generations
        told, index `RECOMMENDATION`, never played while tuning, so no tuned fitness or key)
        unless it re-scores as one of them."""
        def rescored(values, g):
            tuned = with_settings(self.space.config(values), self.state.optimizer.settings_at(g))
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
        with tqdm(total=len(tasks), desc="rescore", unit="eval", leave=False, disable=self.quiet or not tasks) as bar:
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

            pool.map(evaluate, tasks, on_result=done)

    # ------------------------------------------------------------------ artifacts
    def best_config(self) -> dict | None:
        """best.yaml: a complete solver config (the best re-scored candidate when re-scored)."""
        from solver import SolverConfig

        best, rescored = self.state.best, self.state.rescored
        if best is None:
            return None
        source = rescored or best
        data = self.space.config(source.values)
        rung = self.state.optimizer.settings_at(source.generation)
        if rung:  # a multi-fidelity tuner's candidate at the fidelity it was scored at
            data = with_settings(data, rung)
        if rescored is not None:
            data = with_settings(data, self.config.rescore.overrides)
        data = SolverConfig.model_validate(data).model_dump(mode="json")
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
        data["meta"] = meta
        return data

    def recommended(self) -> list | None:
        """The values the tuner's recommendation (`Optimizer.recommendation`) is played with now;
        None for a tuner without one."""
        vector = self.state.optimizer.recommendation()
        return None if vector is None else self.space.played(vector)

    def recommendation_config(self) -> dict | None:
        """recommendation.yaml: the tuner's recommendation now (`Optimizer.recommendation`, the mean
        of its search distribution) as a complete solver config, to play while the run goes on;
        None for a tuner without one, or before its first generation is told."""
        from solver import SolverConfig

        g = self.state.generation
        values = self.recommended() if g > 0 else None
        if values is None:
            return None
        data = with_settings(self.space.config(values), self.state.optimizer.settings_at(g))
        data = SolverConfig.model_validate(data).model_dump(mode="json")
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
        rec = self.recommendation_config()
        if rec is not None:
            write_yaml(self.dir / "recommendation.yaml", rec,
                       header=f"# the tuner's recommendation after generation {rec['meta']['generation'] - 1} of run "
                              f"{self.dir.name} (the mean of its search distribution); run it with:\n"
                              f"#   python -m experiments.solve {self.dir / 'recommendation.yaml'}")
        if history and (final or time.monotonic() - self._plotted >= PLOT_EVERY):
            write_bytes(self.dir / "fitness.png", plot(history, self.config))
            self._plotted = time.monotonic()


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


def plot(history: list[GenerationStats], config: RunConfig) -> bytes:
    """fitness.png: best, mean and median fitness per generation, and the best so far."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = [h.generation for h in history]
    fig, ax = plt.subplots(figsize=PLOT_INCHES, dpi=PLOT_DPI)
    ax.plot(g, [h.best for h in history], "o-", label="best of generation")
    ax.plot(g, [h.median for h in history], "s-", label="median")
    ax.plot(g, [h.mean for h in history], "^-", label="mean")
    ax.plot(g, [h.best_so_far for h in history], "k--", label="best so far")
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
