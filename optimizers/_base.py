"""What every tuner shares: the ask/tell protocol the run loop drives, and private random states.

A tuner proposes one generation of candidate vectors at a time (`ask`) and is told their fitness
(`tell`, higher is better). The run loop (`optimizers.run_loop`) evaluates them, writes them down and
saves the tuner's state between generations as data (`state_dict`, restored by `Tuner.restore`
and `load_state`): a tuner's state is what it was made with (its settings, initial point and
step) and everything it carries from one generation to the next, its random states included.

Randomness: one numpy `Generator` per run, seeded from the config's seed. DEAP draws from Python's
`random` module and pyswarms from numpy's global state; a tuner keeps private copies of those states
(seeded from its generator) and installs them only around the library calls (`library_random`),
so nothing else in the process (joblib, dask) can disturb them.
"""

from __future__ import annotations

import contextlib
import random
from abc import ABC, abstractmethod

from typing import Protocol, runtime_checkable

import numpy as np

from engine.statefile import Fields

from .space import Space

#: seeds of the private library states are drawn below these bounds: Python's `random` takes any
#: integer (63 bits: the largest a numpy int64 draw gives), numpy's `RandomState` one below 2**32
PYTHON_SEED_BOUND = 2**63
NUMPY_SEED_BOUND = 2**32


class Tuner(ABC):
    name: str = ""
    #: the restart this tuner was made for (0: the run's first; `optimizers.noise` sets it)
    restart: int = 0

    def __init__(self, space: Space, settings, rng: np.random.Generator, init: str = "point",
                 init_point: np.ndarray | None = None, init_sigma: float = 0.1):
        self.space = space
        self.settings = settings
        self.rng = rng
        self.init = init
        self.init_point = space.point() if init_point is None else np.asarray(init_point, dtype=np.float64)
        self.init_sigma = init_sigma
        self.generation = 0  # the generation the next `ask` proposes
        self._py_state = random.Random(int(rng.integers(PYTHON_SEED_BOUND))).getstate()
        self._np_state = np.random.RandomState(int(rng.integers(NUMPY_SEED_BOUND))).get_state()

    @property
    def generations(self) -> int:
        """Generations of the run, the first included (its settings' `budget`)."""
        return self.settings.budget(self.space.dim)[0]

    def unit_start(self) -> np.ndarray:
        """Where a tuner searching the unit cube (`Space.to_unit`) starts: the initial point, or a
        uniform draw under ``init: random``."""
        if self.init == "random":
            return self.rng.uniform(0.0, 1.0, self.space.dim)
        return self.space.to_unit(self.init_point)

    @abstractmethod
    def ask(self) -> np.ndarray:
        """The vectors of the current generation, shape (candidates, dimensions)."""

    @abstractmethod
    def tell(self, fitness: np.ndarray) -> None:
        """The fitness of the vectors of the last `ask`; advances to the next generation."""

    def tell_run(self, fitness: np.ndarray, stopped: list) -> None:
        """How the run loop tells a generation: ``fitness`` as for `tell`, and for each candidate the
        piece at which the early abort stopped it (None: it finished). By default `tell(fitness)`;
        a tuner that treats stopped candidates apart (Optuna's pruned trials) overrides it."""
        self.tell(fitness)

    def attach(self, run_dir) -> None:
        """The run directory this tuner may keep its own files in (Optuna's study); the run loop
        calls it at the start of every session (a fresh run, each resume, a restart), before the
        session's first `ask`. Nothing by default."""

    def recommendation(self) -> np.ndarray | None:
        """The point this tuner would answer with now, as genes (a vector `Space.decode` reads): a
        tuner that moves a search distribution (CMA-ES, CEM) answers with its mean, which on a noisy
        fitness is a better guess at the optimum than the best single draw, a lucky one (the
        re-scoring plays it beside the top candidates, ``rescore.recommendation``); None by default
        (the tuner keeps no such point)."""
        return None

    def initial(self, n: int) -> np.ndarray:
        """The first generation: the initial point and perturbations of it, or uniform samples."""
        if self.init == "random":
            return self.space.sample(self.rng, n)
        return self.space.around(self.rng, n, self.init_point, self.init_sigma)

    @contextlib.contextmanager
    def library_random(self):
        """Install this tuner's Python and numpy global random states for a DEAP or pyswarms call,
        then save them and put the outer states back."""
        outer_py, outer_np = random.getstate(), np.random.get_state()
        random.setstate(self._py_state)
        np.random.set_state(self._np_state)
        try:
            yield
        finally:
            self._py_state = random.getstate()
            self._np_state = np.random.get_state()
            random.setstate(outer_py)
            np.random.set_state(outer_np)

    # ------------------------------------------------------------------ state (the checkpoint)
    def state_dict(self) -> dict:
        """This tuner's state as data (`engine.statefile`): what it was made with and the random
        states and generation it has reached. A tuner with more state extends it
        (``{**super().state_dict(), ...}``) and reads it back in `load_state`."""
        return {"tuner": self.name, "restart": self.restart, "settings": self.settings.model_dump(mode="json"),
                "init": self.init, "init_point": self.init_point, "init_sigma": self.init_sigma,
                "generation": self.generation, "rng": self.rng.bit_generator.state,
                "python_random": self._py_state, "numpy_random": self._np_state}

    def load_state(self, f: Fields) -> None:
        """Take back the state `state_dict` saved (the tuner made from its settings, `restore`);
        `engine.statefile.StateError` naming the key of a value that is not what it should be."""
        self.generation = f.int("generation", 0, self.generations)
        self.rng = generator(f, "rng")
        self._py_state = python_random_state(f, "python_random")
        self._np_state = numpy_random_state(f, "numpy_random")

    @staticmethod
    def restore(space: Space, f: Fields) -> "Tuner":
        """The tuner whose `state_dict` ``f`` holds, made again from its settings in ``space`` and
        given its state back."""
        from .tuners import TUNERS

        name = f.str("tuner")
        if name not in TUNERS:
            f.fail(f.name("tuner"), f"{name!r} is not a tuner of this version ({', '.join(TUNERS)})")
        cls = TUNERS[name]
        try:
            settings = cls.Settings.model_validate(f.dict("settings"))
        except ValueError as e:
            f.fail(f.name("settings"), f"not {name}'s settings ({str(e).splitlines()[-1].strip()})")
        init = f.str("init")
        if init not in ("point", "random"):
            f.fail(f.name("init"), f"point or random, not {init!r}")
        point = f.array("init_point", np.float64, shape=(space.dim,), finite=True)
        tuner = cls(space, settings, np.random.default_rng(0), init=init, init_point=point,
                    init_sigma=f.float("init_sigma"))
        tuner.restart = f.int("restart", 0)
        tuner.load_state(f)
        return tuner


def generator(f: Fields, key: str) -> np.random.Generator:
    """The numpy `Generator` whose bit generator's state ``f[key]`` holds (PCG64, as
    ``default_rng`` makes)."""
    state = f.dict(key)
    if state.get("bit_generator") != "PCG64":
        f.fail(f.name(key), f"a PCG64 generator's state, not {state.get('bit_generator')!r}")
    rng = np.random.Generator(np.random.PCG64())
    try:
        rng.bit_generator.state = state
    except (TypeError, ValueError, KeyError, OverflowError) as e:
        f.fail(f.name(key), f"not a generator's state ({e})")
    return rng


def python_random_state(f: Fields, key: str) -> tuple:
    """A state of Python's `random` (``random.getstate()``) from ``f[key]``, checked by loading it."""
    state = f.raw(key)
    try:
        if not (isinstance(state, tuple) and len(state) == 3 and isinstance(state[1], tuple)
                and all(type(v) is int for v in state[1])):
            raise ValueError("not (version, words, gauss)")
        random.Random().setstate(state)
    except (TypeError, ValueError, OverflowError) as e:
        f.fail(f.name(key), f"not a state of Python's random ({e})")
    return state


def numpy_random_state(f: Fields, key: str) -> tuple:
    """A state of numpy's `RandomState` (``get_state()``) from ``f[key]``, checked by loading it."""
    state = f.raw(key)
    try:
        if not (isinstance(state, tuple) and len(state) == 5 and state[0] == "MT19937"
                and isinstance(state[1], np.ndarray) and state[1].dtype == np.uint32 and state[1].shape == (624,)):
            raise ValueError("not (MT19937, 624 words, position, gauss flag, gauss)")
        np.random.RandomState().set_state(state)
    except (TypeError, ValueError, OverflowError) as e:
        f.fail(f.name(key), f"not a state of numpy's RandomState ({e})")
    return state


@runtime_checkable
class MultiFidelity(Protocol):
    """A tuner whose generations play at other fidelities (successive halving, `sha`): only such a
    tuner has these three methods; the run loop reads every tuner through `fidelity`."""

    def settings_at(self, generation: int) -> dict:
        """Dotted solver settings every candidate of ``generation`` plays with (its rung: more
        pieces, a wider beam)."""

    def compared(self, generation: int) -> bool:
        """Whether evaluations of ``generation`` compete for the run's best (only those at the
        highest fidelity reached)."""

    def aborts_at(self, generation: int) -> bool:
        """Whether ``generation``'s candidates are held to the early-abort threshold."""


class SingleFidelity:
    """`fidelity` of a tuner that plays every generation alike: no settings of its own, every
    generation compared and held to the early abort."""

    def settings_at(self, generation: int) -> dict:
        return {}

    def compared(self, generation: int) -> bool:
        return True

    def aborts_at(self, generation: int) -> bool:
        return True


def fidelity(tuner) -> MultiFidelity:
    """The tuner's fidelities: the tuner itself when it is `MultiFidelity`, else `SingleFidelity`."""
    return tuner if isinstance(tuner, MultiFidelity) else SingleFidelity()


def is_multi_fidelity(cls: type) -> bool:
    """Whether instances of the tuner class ``cls`` are `MultiFidelity`."""
    return all(callable(getattr(cls, m, None)) for m in ("settings_at", "compared", "aborts_at"))
