"""A tuner's state as data (`Tuner.state_dict`, `Tuner.restore`): saved to a state file and
read back, every registered tuner goes on exactly as the one never saved, and a damaged value is
one line naming its key."""

import shutil

import numpy as np
import pytest

from engine.statefile import Fields, StateError, read_state, write_state
from optimizers._base import Tuner
from optimizers.space import Param, Space
from optimizers.tuners import TUNERS

#: settings of a small, fast instance of each tuner (the successive halving needs its rungs)
SETTINGS = {"ga": {"population": 6, "generations": 6}, "cmaes": {"population": 6, "generations": 6},
            "pso": {"particles": 6, "iterations": 6, "topology": "ring", "k": 2, "boundary": "intermediate"},
            "cem": {"samples": 6, "generations": 6}, "random": {"samples": 6, "generations": 6},
            "sha": {"candidates": 9, "eta": 2, "rungs": [{"settings": {}}] * 4},
            "optuna": {"population": 6, "generations": 6, "startup": 3}}


def space():
    params = [Param(f"p{i}", "float", -1.0, 1.0) for i in range(3)] + [Param("k", "int", 0, 6),
                                                                      Param("c", "choice", choices=("x", "y", "z"))]
    return Space(params, {"p0": 0.5, "p1": 0.5, "p2": 0.5, "k": 3, "c": "y"})


def fitness(x: np.ndarray) -> np.ndarray:
    return -((x[:, :3] - 0.3) ** 2).sum(axis=1) - 0.01 * x[:, 3] + 0.1 * (x[:, 4] == 1)


def saved_and_read(tuner, path):
    write_state(path, tuner.state_dict(), "a tuner")
    return Fields(read_state(path, "a tuner", 2**20), path)


def test_every_tuner_has_settings_for_this_test():
    assert set(SETTINGS) == set(TUNERS)


@pytest.mark.parametrize("name", sorted(SETTINGS))
@pytest.mark.parametrize("init", ["point", "random"])
def test_a_restored_tuner_goes_on_as_the_one_never_saved(tmp_path, name, init):
    cls = TUNERS[name]
    tuner = cls(space(), cls.Settings.model_validate(SETTINGS[name]), np.random.default_rng(5), init=init)
    if name == "optuna":
        (tmp_path / "a").mkdir()
        tuner.attach(tmp_path / "a")
    for _ in range(2):
        tuner.tell(fitness(tuner.ask()))
    saved = saved_and_read(tuner, tmp_path / "state.npz")
    again = Tuner.restore(space(), saved)
    if name == "optuna":  # its trials are study.db's: the copy of the run directory has its own
        shutil.copytree(tmp_path / "a", tmp_path / "b")
        again.attach(tmp_path / "b")
    assert type(again) is cls and again.generation == tuner.generation == 2
    for _ in range(tuner.generations - 2):
        x, y = tuner.ask(), again.ask()
        np.testing.assert_array_equal(x, y)
        tuner.tell(fitness(x))
        again.tell(fitness(y))
    rec = tuner.recommendation()
    assert (rec is None and again.recommendation() is None) or np.array_equal(rec, again.recommendation())


def state_of(name, tmp_path):
    cls = TUNERS[name]
    tuner = cls(space(), cls.Settings.model_validate(SETTINGS[name]), np.random.default_rng(5))
    tuner.tell(fitness(tuner.ask()))
    return tuner.state_dict()


@pytest.mark.parametrize("name, key, value, problem", [
    ("ga", "generation", "2", "generation: an integer, not a string"),
    ("ga", "generation", 99, "generation: 99 is out of range [0, 6]"),
    ("ga", "tuner", "nope", "tuner: 'nope' is not a tuner of this version"),
    ("ga", "settings", {"population": -1}, "settings: not ga's settings"),
    ("ga", "rng", {"bit_generator": "MT19937"}, "rng: a PCG64 generator's state, not 'MT19937'"),
    ("ga", "python_random", (3, (1, 2), None), "python_random: not a state of Python's random"),
    ("ga", "init_point", np.zeros(2), "init_point: an array of shape (5,), not (2,)"),
    ("cmaes", "strategy.C", np.full((5, 5), np.nan), "strategy.C: holds values that are not finite"),
    ("cmaes", "strategy.sigma", "0.1", "strategy.sigma: a number, not a string"),
    ("cem", "mean", np.zeros(5, np.int64), "mean: an array of float64, not int64"),
    ("pso", "swarm.velocity", np.zeros((2, 5)), "swarm.velocity: an array of shape (6, 5), not (2, 5)"),
    ("ga", "hall_of_fame.genes", np.zeros((1, 4)), "hall_of_fame.genes: an array of shape (*, 5), not (1, 4)"),
])
def test_a_damaged_value_is_one_line_naming_its_key(tmp_path, name, key, value, problem):
    state = state_of(name, tmp_path)
    *outer, last = key.split(".")
    holder = state
    for k in outer:
        holder = holder[k]
    holder[last] = value
    path = tmp_path / "state.npz"
    write_state(path, state, "a tuner")
    with pytest.raises(StateError) as e:
        Tuner.restore(space(), Fields(read_state(path, "a tuner", 2**20), path))
    assert str(e.value).startswith(f"{path}: {problem}") and "\n" not in str(e.value)


def test_a_missing_key_is_named(tmp_path):
    state = state_of("cem", tmp_path)
    del state["std"]
    with pytest.raises(StateError, match=r"^x.npz: std: missing$"):
        Tuner.restore(space(), Fields(state, "x.npz"))
