"""Optuna's samplers, TPE and CMA-ES, through its ask/tell interface (`OptunaTuner`): the
ecosystem's baseline, stepped one generation at a time by the run loop like every tuner here.

One generation: ``population`` trials asked of the study with the space's distributions, evaluated
by the run loop, then told together; a candidate the early abort stopped is a pruned trial whose
last intermediate value is its fitness at the abort piece. The first generation is the run's
initial population, enqueued (Optuna learns the space from finished trials).

The sampler reads the study in memory; ``study.db`` in the run directory holds a copy of the told
trials, for optuna-dashboard and for a resume, which cuts it back to the trials the checkpoint
told (`trials_digest`) and reads them into memory. The file is checked before use
(`OptunaTuner._check_file`); a file that is not the study, or whose told trials differ from the
checkpoint's, is `RunDamaged`. The checkpoint keeps the sampler's seed and random states
(`sampler_random_states`). In full: docs/tuning.md, 'The optuna tuner'.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import warnings
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from engine.files import SPECIAL_FILES, writing

from .._base import NUMPY_SEED_BOUND, Tuner, numpy_random_state
from .._settings import TunerSettings
from ..optuna_space import choices_of, distributions, genes
from . import register

#: the study's file in the run directory
STUDY_FILE = "study.db"
#: the study's name outside a run (in memory)
MEMORY_STUDY = "optuna"
#: seconds a SQLite connection waits for a lock (optuna-dashboard reads the file meanwhile)
SQLITE_TIMEOUT = 60
#: how every SQLite database file begins
SQLITE_HEADER = b"SQLite format 3\0"
#: the tables of Optuna's RDB storage the tuner reads and writes (a study.db without one is no study)
STUDY_TABLES = ("studies", "study_directions", "trials", "trial_params", "trial_values",
                "trial_intermediate_values", "version_info")
#: how to go on past a damaged study.db (the end of its `RunDamaged` line)
STUDY_ADVICE = ("put the run's study.db back, or move it and checkpoint.npz aside (mv study.db study.db.bad; "
                "mv checkpoint.npz checkpoint.npz.bad) and resume again: the run then starts over from "
                "evaluations.csv, simulating none of the evaluations it holds")


def _optuna():
    """Optuna, imported when a tuner first needs it, its INFO lines off (one per trial)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


class OptunaConfig(TunerSettings):
    """``optuna``: Optuna's TPE or CMA-ES sampler through its ask/tell interface, the study kept in
    the run directory as SQLite (study.db, for optuna-dashboard); a candidate the early abort stops
    is told as a pruned trial."""

    population_key: ClassVar[str | None] = "population"
    step_key: ClassVar[str | None] = "sigma"
    sampler: Literal["tpe", "cmaes"] = Field("tpe", description="`tpe`: Optuna's TPESampler; `cmaes`: its CmaEsSampler")
    population: int = Field(16, ge=2, description="trials asked per generation, told together")
    generations: int = Field(10, ge=1, description="generations, the first (the initial population) included")
    startup: int | None = Field(
        None, ge=0, description="tpe: trials before TPE models (n_startup_trials; null: the first generation, "
                                "the initial population)")
    multivariate: bool | None = Field(None, description="tpe: multivariate TPE (null: Optuna's default)")
    constant_liar: bool = Field(
        True, description="tpe: trials asked but not yet told count as bad ones, so a generation's trials spread out")
    sigma: float = Field(
        0.2, gt=0, description="cmaes: initial step (sigma0), a share of each parameter's range; also the spread "
                               "of the first generation around the initial point")
    consider_pruned: bool = Field(
        True, description="cmaes: pruned trials enter the update with their fitness at the abort "
                          "(Optuna's consider_pruned_trials)")

    pruner: Literal["none", "wilcoxon"] = Field(
        "none", description="with a `race` section: `wilcoxon`, Optuna's WilcoxonPruner decides which trials stop, "
                            "the race's instances as its steps, instead of the race's test (the ecosystem's baseline)")
    p_threshold: float = Field(0.1, gt=0, lt=1, description="wilcoxon: the pruner's p_threshold")
    startup_steps: int = Field(2, ge=0, description="wilcoxon: instances a trial plays before it can be pruned "
                                                    "(n_startup_steps)")

    def budget(self, dim: int) -> tuple[int, int]:
        return self.generations, self.population


@register
class OptunaTuner(Tuner):
    name = "optuna"
    Settings = OptunaConfig

    def __init__(self, space, settings, rng, **kw):
        super().__init__(space, settings, rng, **kw)
        self.seed = int(rng.integers(NUMPY_SEED_BOUND))
        #: CMA-ES's initial mean as the trial's parameters (None for TPE)
        self.x0 = self._params(self.space.from_unit(self.unit_start())) if settings.sampler == "cmaes" else None
        self.sampler = self._make_sampler()
        self.study_name: str | None = None  # fixed by the first `attach`
        self.path: Path | None = None  # study.db; None: in memory
        self.told = 0  # trials of the study told so far (at a checkpoint: every trial asked)
        #: `trials_digest` of each generation's told trials (None: a checkpoint of a version without them)
        self.digests: list[str] | None = []
        self._memory = None  # the in-memory storage the sampler reads
        self._file = None  # study.db's storage (in a run), and this tuner's study id there
        self._file_study: int | None = None
        self._study = None
        self._trials: list = []
        self._reported: dict[int, int] = {}  # a trial of the generation -> its instances reported (the pruner)

    # ------------------------------------------------------------------ state (the checkpoint)
    def state_dict(self) -> dict:
        """The tuner's state: the sampler's seed, ``x0`` and random states, the study's name and
        the trials told; the trials themselves are study.db's (so only a tuner attached to a run
        directory has a state to save)."""
        if self.path is None:
            raise ValueError("an optuna tuner's state is saved beside its study: attach it to a run directory first")
        if self._trials:
            raise ValueError("an optuna tuner's state is saved between generations, not while trials are asked")
        states = {k: rs.get_state() for k, rs in sampler_random_states(self.sampler).items()}
        return {**super().state_dict(), "seed": self.seed, "x0": self.x0, "study_name": self.study_name,
                "told": self.told, "digests": self.digests, "random_states": states}

    def load_state(self, f) -> None:
        super().load_state(f)
        self.seed = f.int("seed", 0, NUMPY_SEED_BOUND - 1)
        if self.settings.sampler == "cmaes":
            x0 = f.dict("x0")
            if sorted(x0) != sorted(p.path for p in self.space.params):
                f.fail("x0", "not a value for each parameter of the space")
            self.x0 = x0
        self.sampler = self._make_sampler()
        self.study_name = f.str("study_name")
        self.told = f.int("told", 0)
        if self.told != self.generation * self.settings.population:
            f.fail(f.name("told"), f"{self.told} trials told in {self.generation} generations of "
                                   f"{self.settings.population}")
        self.digests = None
        if f.get("digests") is not None:  # (absent from the checkpoints of versions without them)
            digests = f.list("digests", self.generation)
            if not all(isinstance(d, str) and len(d) == 64 for d in digests):
                f.fail(f.name("digests"), "not a SHA-256 digest (64 hex digits) for each generation")
            self.digests = digests
        saved, mine = f.sub("random_states"), sampler_random_states(self.sampler)
        if sorted(saved.data) != sorted(mine):
            f.fail("random_states", f"the random states of another sampler ({', '.join(sorted(saved.data))}; "
                                    f"this version's: {', '.join(sorted(mine))})")
        for key, rs in mine.items():
            rs.set_state(numpy_random_state(saved, key))

    # ------------------------------------------------------------------ the space as Optuna sees it
    def _distributions(self) -> dict:
        return distributions(self.space)

    def _params(self, genes) -> dict:
        """A vector as the trial's parameters (ints rounded, a choice by its value)."""
        out = {}
        for p, g in zip(self.space.params, genes):
            out[p.path] = choices_of(p)[int(p.encode(p.decode(g)))] if p.type == "choice" else p.decode(g)
        return out

    def _genes(self, params: dict) -> np.ndarray:
        return genes(self.space, params)

    def _make_sampler(self):
        optuna = _optuna()
        s = self.settings
        with warnings.catch_warnings():  # x0 and sigma0 are deprecated, consider_pruned_trials experimental
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            if s.sampler == "tpe":
                return optuna.samplers.TPESampler(
                    seed=self.seed, n_startup_trials=s.population if s.startup is None else s.startup,
                    multivariate=s.multivariate, constant_liar=s.constant_liar)
            return optuna.samplers.CmaEsSampler(
                x0=dict(self.x0), sigma0=s.sigma, seed=self.seed, n_startup_trials=0, popsize=s.population,
                consider_pruned_trials=s.consider_pruned, warn_independent_sampling=False)

    def _first_generation(self, n: int) -> np.ndarray:
        if self.settings.sampler == "cmaes" and self.init != "random":
            return self.space.around(self.rng, n, self.init_point, self.settings.sigma)
        return self.initial(n)

    # ------------------------------------------------------------------ the study
    def attach(self, run_dir) -> None:
        """Keep the study in ``run_dir``/study.db (named after the run directory the first time),
        cut back to the trials told at the checkpoint this tuner was read from."""
        run_dir = Path(run_dir)
        if self.study_name is None:
            self.study_name = run_dir.name + (f"-restart-{self.restart}" if self.restart else "")
        self.path = run_dir / STUDY_FILE
        self._study = None
        self.study()

    def study(self):
        """The open study (opened, and in a run checked, cut back to the checkpoint's trials and read
        from study.db, on first use); `RunDamaged` when study.db is not the study the checkpoint told."""
        if self._study is None:
            optuna = _optuna()
            name = self.study_name or MEMORY_STUDY
            if self.path is not None or self._memory is None:  # in a run: filled from study.db below
                self._memory = optuna.storages.InMemoryStorage()
            pruner = None
            if self.settings.pruner == "wilcoxon":
                with warnings.catch_warnings():  # (experimental since Optuna 3.6: a warning each run)
                    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                    pruner = optuna.pruners.WilcoxonPruner(p_threshold=self.settings.p_threshold,
                                                           n_startup_steps=self.settings.startup_steps)
            study = optuna.create_study(storage=self._memory, sampler=self.sampler, pruner=pruner,
                                        direction="maximize", study_name=name, load_if_exists=True)
            if self.path is not None:
                self._check_file()
                try:
                    self._file = self._storage()
                    file_study = optuna.create_study(storage=self._file, direction="maximize", study_name=name,
                                                     load_if_exists=True)
                    self._file_study = file_study._study_id
                    if not file_study.metric_names:  # the dashboard's name of the value
                        from ..objective import metric_of

                        with warnings.catch_warnings():  # (experimental since Optuna 3.2)
                            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                            file_study.set_metric_names([metric_of(self.space.base)])
                    told = sorted(self._file.get_all_trials(self._file_study, deepcopy=False), key=lambda t: t.number)
                except _sql_errors() as e:
                    raise self._damaged(f"cannot be read as a study ({_sql_problem(e)})") from None
                self._check_digests(told)
                for t in told:
                    self._memory.create_new_trial(study._study_id, template_trial=t)
            self._study = study
        return self._study

    def _damaged(self, problem: str):
        """study.db's `RunDamaged`: the file, its ``problem`` and how to go on."""
        from ..store import RunDamaged

        return RunDamaged(f"{self.path}: {problem}; {STUDY_ADVICE}")

    def _check_file(self) -> None:
        """`RunDamaged` unless study.db is missing or empty (a new study), or a regular file that
        begins with SQLite's header, passes SQLite's quick check and holds Optuna's tables."""
        path = self.path
        try:
            info = os.stat(path)
        except FileNotFoundError:
            if path.is_symlink():
                raise self._damaged("a symbolic link to nothing") from None
            return
        except OSError as e:
            raise self._damaged(f"cannot read it: {e.strerror or e}") from None
        if stat.S_ISDIR(info.st_mode):
            raise self._damaged("a folder, not a file")
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in SPECIAL_FILES if test(info.st_mode)), "of no known kind")
            raise self._damaged(f"not a regular file ({kind})")
        if info.st_size == 0:  # SQLite's empty database: created, nothing written yet
            return
        try:
            with open(path, "rb") as f:
                head = f.read(len(SQLITE_HEADER))
        except OSError as e:
            raise self._damaged(f"cannot read it: {e.strerror or e}") from None
        if head != SQLITE_HEADER:
            raise self._damaged("not a SQLite database (it does not begin with SQLite's header)")
        try:
            connection = sqlite3.connect(path, timeout=SQLITE_TIMEOUT)
            try:
                verdict = [row[0] for row in connection.execute("PRAGMA quick_check")]
                tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            finally:
                connection.close()
        except sqlite3.Error as e:
            raise self._damaged(f"not a readable SQLite database ({e})") from None
        if verdict != ["ok"]:
            raise self._damaged(f"a damaged SQLite database (its quick check: {verdict[0]})")
        missing = [t for t in STUDY_TABLES if t not in tables]
        if missing:
            raise self._damaged(f"not an Optuna study (no table {', '.join(missing)})")

    def _check_digests(self, told: list) -> None:
        """`RunDamaged` when the trials read from study.db (``told``, by number, cut to the
        checkpoint's) are not the ones each generation told (`trials_digest`); a checkpoint without
        digests (an older version's) takes them from the file."""
        n = self.settings.population
        found = [trials_digest(told[g * n:(g + 1) * n]) for g in range(self.generation)]
        if self.digests is None:
            self.digests = found
            return
        for g, (saved, read) in enumerate(zip(self.digests, found)):
            if saved != read:
                raise self._damaged(f"trials {g * n} to {(g + 1) * n - 1} of the study {self.study_name!r} are not the "
                                    "ones the run told (a parameter, value or state was changed since)")

    def _open(self, path: Path):
        optuna = _optuna()
        try:
            storage = optuna.storages.RDBStorage(f"sqlite:///{path.resolve()}",
                                                 engine_kwargs={"connect_args": {"timeout": SQLITE_TIMEOUT}})
        except RuntimeError as e:  # Optuna's own check of the tables' schema version
            raise self._damaged(f"a study whose tables this version of Optuna cannot use ({str(e).splitlines()[0]})"
                                ) from None
        if not writing.DURABLE:  # commits not fsynced, as the project's other writes (`engine.files.writing.DURABLE`)
            from sqlalchemy import event

            event.listen(storage.engine, "connect", lambda connection, _: connection.execute("PRAGMA synchronous=OFF"))
            storage.engine.dispose()  # the connections opened so far, without it
        return storage

    def _storage(self):
        """study.db's storage, holding exactly the ``told`` trials of this tuner's study."""
        from ..store import RunDamaged

        storage = self._open(self.path)
        studies = sorted(storage.get_all_studies(), key=lambda s: s._study_id)
        mine = [s for s in studies if s.study_name == self.study_name]
        have = len(storage.get_all_trials(mine[0]._study_id, deepcopy=False)) if mine else 0
        if have < self.told:
            storage.engine.dispose()
            raise RunDamaged(f"{self.path}: the study {self.study_name!r} holds {have} trials where the checkpoint "
                             f"has told {self.told}; the sampler's history is lost: {STUDY_ADVICE}")
        if have > self.told:
            storage = self._cut(storage, studies)
        return storage

    def _cut(self, old, studies):
        """Rewrite study.db with this tuner's study cut to its first ``told`` trials (the others as
        they are), keeping every study's id, then rename it over the file."""
        from ..store import RunDamaged

        tmp = self.path.with_name(self.path.name + ".cut")
        tmp.unlink(missing_ok=True)
        new = self._open(tmp)
        try:
            for s in studies:
                sid = new.create_new_study(s.directions, s.study_name)
                if sid != s._study_id:
                    raise RunDamaged(f"{self.path}: study ids are not consecutive (study {s.study_name!r}); "
                                     "cannot cut it back to the checkpoint")
                for k, v in s.user_attrs.items():
                    new.set_study_user_attr(sid, k, v)
                for k, v in s.system_attrs.items():
                    new.set_study_system_attr(sid, k, v)
                trials = sorted(old.get_all_trials(s._study_id, deepcopy=False), key=lambda t: t.number)
                if s.study_name == self.study_name:
                    trials = trials[: self.told]
                for t in trials:
                    new.create_new_trial(sid, template_trial=t)
        finally:
            old.engine.dispose()
            new.engine.dispose()
        os.replace(tmp, self.path)
        return self._open(self.path)

    # ------------------------------------------------------------------ ask / tell
    def ask(self) -> np.ndarray:
        study = self.study()
        n = self.settings.population
        if self.generation == 0:
            for genes in self._first_generation(n):
                study.enqueue_trial(self._params(genes))
        distributions = self._distributions()
        self._trials = [study.ask(distributions) for _ in range(n)]
        self._reported = {}
        return np.array([self._genes(t.params) for t in self._trials])

    @property
    def prunes(self) -> bool:
        """Whether Optuna's pruner, not the race's test, stops this tuner's trials (`prune`)."""
        return self.settings.pruner != "none"

    def prune(self, index: int, values) -> bool:
        """Whether trial ``index`` of the generation stops after its results ``values`` on the race's
        first instances: each new one reported at its step (the instance), then Optuna's pruner asked."""
        trial = self._trials[index]
        for step in range(self._reported.get(index, 0), len(values)):
            trial.report(float(values[step]), step=step)
        self._reported[index] = len(values)
        return trial.should_prune()

    def tell(self, fitness: np.ndarray) -> None:
        self.tell_run(fitness, [None] * len(self._trials))

    def tell_run(self, fitness: np.ndarray, stopped: list) -> None:
        from optuna.trial import TrialState

        study = self.study()
        reported = {self._trials[i].number for i in self._reported}
        for trial, f, piece in zip(self._trials, np.asarray(fitness, dtype=np.float64), stopped):
            if piece is None:
                study.tell(trial, float(f))
            else:
                if trial.number not in reported:  # (a trial the pruner stopped has its values reported)
                    trial.report(float(f), step=int(piece))
                study.tell(trial, state=TrialState.PRUNED)
        frozen = study.get_trials(deepcopy=False)  # by trial number
        mine = [frozen[trial.number] for trial in self._trials]
        if self._file is not None:  # the generation's told trials, copied to study.db
            try:
                for t in mine:
                    self._file.create_new_trial(self._file_study, template_trial=t)
            except _sql_errors() as e:
                from ..store import RunDamaged

                raise RunDamaged(f"{self.path}: cannot write the generation's trials ({_sql_problem(e)}); once "
                                 "that is fixed, resume the run: it goes on from its last checkpoint") from None
        if self.digests is not None:
            self.digests.append(trials_digest(mine))
        self.told += len(self._trials)
        self._trials = []
        self.generation += 1


def trials_digest(trials) -> str:
    """The SHA-256 (hex) of trials as the sampler learns from them: each one's number, state,
    parameters, value and intermediate values, in order."""
    h = hashlib.sha256()
    for t in trials:
        item = [t.number, t.state.name, sorted(t.params.items()), t.value, sorted(t.intermediate_values.items())]
        h.update(json.dumps(item, default=_plain).encode() + b"\n")
    return h.hexdigest()


def _plain(v):
    """A numpy scalar among a trial's values as the Python number SQLite gives back."""
    if isinstance(v, np.generic):
        return v.item()
    raise TypeError(f"{type(v).__name__} in a trial")


def _sql_errors() -> tuple:
    """The errors SQLite and SQLAlchemy raise on a file that is not the study it should be."""
    from sqlalchemy.exc import SQLAlchemyError

    return SQLAlchemyError, sqlite3.Error


def _sql_problem(e: Exception) -> str:
    """An error of `_sql_errors` in a few words: SQLite's own, without SQLAlchemy's statement."""
    return str(getattr(e, "orig", None) or e).splitlines()[0]


def sampler_random_states(sampler, prefix: str = "sampler") -> dict:
    """The numpy `RandomState`s a sampler draws from, by where they sit (``sampler._rng``,
    ``sampler._random_sampler._rng``, ...), found in its attributes and its inner samplers'."""
    from optuna.samplers import BaseSampler
    from optuna.samplers._lazy_random_state import LazyRandomState

    out = {}
    for name, v in sorted(vars(sampler).items()):
        if isinstance(v, LazyRandomState):
            out[f"{prefix}.{name}"] = v.rng
        elif isinstance(v, np.random.RandomState):
            out[f"{prefix}.{name}"] = v
        elif isinstance(v, BaseSampler):
            out.update(sampler_random_states(v, f"{prefix}.{name}"))
    return out
