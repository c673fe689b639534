"""The tuners registered in `optimizers.tuners`: the registry, and CMA-ES and the noisy
cross-entropy method on known functions (no Tetris: their ask/tell alone)."""

import numpy as np
import pytest

from optimizers.config import RunConfig
from optimizers.space import Param, Space
from optimizers.tuners import TUNERS, TunerError, get, register
from optimizers.tuners.cem import CEM, CEMConfig
from optimizers.tuners.cmaes import CMAES, CMAESConfig


def box(dim=3, low=-1.0, high=1.0):
    return Space([Param(f"p{i}", "float", low, high) for i in range(dim)], {f"p{i}": 0.5 * high for i in range(dim)})


def drive(tuner, f, generations):
    for _ in range(generations):
        x = tuner.ask()
        tuner.tell(np.array([f(v) for v in x]))
    return tuner


def test_every_tuner_is_an_algorithm_and_a_section_of_the_run_config():
    assert {"ga", "pso", "random", "cmaes", "cem"} <= set(TUNERS)
    for name, cls in TUNERS.items():
        assert RunConfig.model_fields[name].annotation is cls.Settings
    with pytest.raises(TunerError, match="unknown tuner 'nope' \\(known: "):
        get("nope")

    class Copy(CEM):
        name = "cem"

    with pytest.raises(TunerError, match="the tuner name 'cem' is taken"):
        register(Copy)


def test_the_run_config_budget_comes_from_the_tuner():
    space = [{"path": f"a{i}", "low": 0, "high": 1} for i in range(6)]
    assert RunConfig.model_validate({"name": "x", "space": space, "algorithm": "cmaes"}).population == 9  # 4 + 3 ln 6
    c = RunConfig.model_validate({"name": "x", "space": space, "algorithm": "cem", "cem": {"samples": 7, "generations": 4}})
    assert (c.generations, c.population) == (4, 7)


def test_cem_noise_schedules():
    assert [CEMConfig(schedule="none").noise_at(t) for t in (0, 5)] == [0.0, 0.0]
    assert [CEMConfig(schedule="constant", noise=0.02).noise_at(t) for t in (0, 50)] == [0.02, 0.02]
    paper = CEMConfig(schedule="decreasing", noise=5, noise_decrement=0.1)  # Szita & Lorincz: max(5 - t/10, 0)
    assert [paper.noise_at(t) for t in (0, 10, 49, 50, 80)] == pytest.approx([5, 4, 0.1, 0, 0])
    assert CEMConfig(samples=20, elite=0.1).elite_count() == 2 and CEMConfig(samples=5, elite=0.01).elite_count() == 1


def test_cem_moves_to_its_elite_and_adds_the_noise():
    space = box(2, 0.0, 10.0)  # unit scale: a gene g is g / 10
    tuner = CEM(space, CEMConfig(samples=4, elite=0.5, sigma=0.2, schedule="constant", noise=0.01),
                np.random.default_rng(0))
    x = tuner.ask()
    assert x.shape == (4, 2) and np.allclose(x[0], space.point())  # the initial point first
    tuner.tell(np.array([1.0, 4.0, 3.0, 2.0]))  # the elite: candidates 1 and 2
    u = x[[1, 2]] / 10
    assert np.allclose(tuner.mean, u.mean(axis=0))
    assert np.allclose(tuner.std, np.sqrt(u.var(axis=0) + 0.01))


def test_cem_finds_the_top_of_a_bowl():
    target = np.array([0.3, -0.6, 0.8])
    tuner = drive(CEM(box(), CEMConfig(samples=30, elite=0.2, sigma=0.5, noise=0.001, noise_decrement=0.0001),
                      np.random.default_rng(1)), lambda v: -((v - target) ** 2).sum(), 25)
    assert np.abs(tuner.space.lower + tuner.mean * 2 - target).max() < 0.05


def test_cmaes_finds_the_top_of_a_tilted_bowl():
    target = np.array([0.3, -0.6, 0.8])
    scale = np.array([1.0, 10.0, 100.0])  # ill-conditioned: what the covariance adapts to
    tuner = drive(CMAES(box(), CMAESConfig(population=10, sigma=0.3), np.random.default_rng(2)),
                  lambda v: -(scale * (v - target) ** 2).sum(), 40)
    best = tuner.space.lower + np.asarray(tuner.strategy.centroid) * 2
    assert np.abs(best - target).max() < 0.02


@pytest.mark.parametrize("bounds", ["clip", "penalty", "resample"])
def test_cmaes_keeps_candidates_in_the_box_and_reaches_a_bound(bounds):
    tuner = CMAES(box(), CMAESConfig(population=8, sigma=0.3, bounds=bounds), np.random.default_rng(3))
    for _ in range(30):
        x = tuner.ask()
        assert (x >= -1).all() and (x <= 1).all()
        tuner.tell(x.sum(axis=1))  # the best point is the corner (1, 1, 1)
    centroid = np.asarray(tuner.strategy.centroid)
    assert (centroid > 0.9).all()
    if bounds == "clip":
        assert (centroid <= 1 + 1e-12).all()  # told only points inside the box


def test_cmaes_resampling_keeps_its_draws_off_a_bound_the_penalty_piles_them_on():
    """A fitness in millions whose best point is inside the box near a bound (as rows per game on
    the standard game): under `penalty` at its default weight, too weak against such a fitness,
    many draws fall outside and are evaluated clipped; resampling keeps every draw inside and finds
    the top."""
    space = box()  # [-1, 1]^3, the start at its centre (0, 0, 0)

    def fitness(v):
        return 1e7 - 1e7 * ((v - np.array([0.5, 0.5, 0.9])) ** 2).sum()

    on_bound = {}
    for bounds in ("penalty", "resample"):
        tuner = CMAES(space, CMAESConfig(population=8, sigma=0.4, bounds=bounds), np.random.default_rng(5))
        hits = 0
        for _ in range(25):
            x = tuner.ask()
            raw = np.array([np.asarray(d) for d in tuner.draws])
            hits += int(((raw < 0) | (raw > 1)).any(axis=1).sum())
            tuner.tell(np.array([fitness(v) for v in x]))
        on_bound[bounds] = hits
        if bounds == "resample":
            best = space.lower + np.asarray(tuner.strategy.centroid) * 2
            assert np.abs(best - np.array([0.5, 0.5, 0.9])).max() < 0.1
    assert on_bound["resample"] == 0 and on_bound["penalty"] > 20


def test_cmaes_first_candidate_is_the_initial_point_and_parents_are_checked():
    from optimizers.space import SpaceError

    space = box()
    tuner = CMAES(space, CMAESConfig(population=5), np.random.default_rng(4))
    assert np.allclose(tuner.ask()[0], space.point())
    with pytest.raises(SpaceError, match="cmaes.parents: at most the population \\(7 for 3 parameters\\)"):
        CMAES(space, CMAESConfig(parents=8), np.random.default_rng(4))
    with pytest.raises(ValueError, match="parents: at most the population"):
        CMAESConfig(population=4, parents=5)


def test_sha_promotes_the_best_third_rung_after_rung():
    from optimizers.tuners.sha import SHA, SHAConfig

    settings = SHAConfig(candidates=9, eta=3, rungs=[{"settings": {"pieces": 10}}, {"settings": {"pieces": 20}},
                                                     {"settings": {"pieces": 40}, "early_abort": True}])
    assert [settings.size(r) for r in range(3)] == [9, 3, 1] and settings.budget(2) == (3, 9)
    tuner = SHA(box(), settings, np.random.default_rng(5))
    x0 = tuner.ask()
    assert x0.shape == (9, 3) and tuner.settings_at(0) == {"pieces": 10} and not tuner.aborts_at(0)
    tuner.tell(np.array([5, 1, 9, 3, 9, 0, 2, 8, 4.0]))  # the best three: 2, 4 (tied at 9, in order), 7
    x1 = tuner.ask()
    assert np.array_equal(x1, x0[[2, 4, 7]]) and tuner.compared(0)
    tuner.tell(np.array([1.0, 7.0, 3.0]))
    assert np.array_equal(tuner.ask(), x0[[4]]) and tuner.aborts_at(2) and not tuner.compared(0)
