"""Racing (`optimizers.racing`): the paired tests' decisions on hand-made tables, and races on a
synthetic noisy function with a known best: the best is kept at the stated confidence and the race
spends less than evaluating every candidate on every instance."""

import numpy as np
import pytest

from optimizers.racing import TESTS, Race, RaceConfig, friedman, paired_t, survivors, wilcoxon


def test_the_tests_are_registered_by_name():
    assert list(TESTS) == ["friedman", "t", "wilcoxon"]
    assert RaceConfig(test="t").test == "t"
    with pytest.raises(ValueError):
        RaceConfig(test="anova")
    with pytest.raises(ValueError, match="first_test: at most max_instances"):
        RaceConfig(first_test=8, max_instances=6)


# ------------------------------------------------------------------------------------------------
# hand-made tables (candidates x instances, higher better)

#: candidate 0 best on every instance, 1 second, 2 last: Friedman's statistic is at its highest
ORDERED = np.array([[10, 11, 12, 13, 14, 15], [9, 10, 11, 12, 13, 14], [1, 2, 3, 4, 5, 6]], float)


def test_friedman_drops_a_candidate_last_on_every_instance():
    # ranks: sums 6, 12, 18 over 6 instances; T = 12, p = 0.0025; Conover's bound 2.0 x t(0.975, 10)
    # = 4.456: 12 - 6 and 18 - 6 exceed it: only the best is kept
    assert friedman(ORDERED, 0.95).tolist() == [0]
    # at a confidence whose bound passes 6 (t(1 - alpha / 2, 10) > 3, alpha < 0.0134) but not 12
    assert friedman(ORDERED, 0.99).tolist() == [0]
    assert friedman(ORDERED[:, :2], 0.95).tolist() == [0, 1, 2]  # two instances: T = 4, p = 0.135, nothing


def test_friedman_keeps_everything_when_the_ranks_do_not_differ():
    rotating = np.array([[3, 1, 2, 3, 1, 2], [2, 3, 1, 2, 3, 1], [1, 2, 3, 1, 2, 3]], float)  # each rank twice
    assert friedman(rotating, 0.95).tolist() == [0, 1, 2]
    assert friedman(np.ones((4, 6)), 0.95).tolist() == [0, 1, 2, 3]  # all tied


def test_friedman_keeps_the_candidates_near_the_best():
    # 0 and 1 trade places, 2 and 3 are always behind: the test rejects, the post-hoc keeps 0 and 1
    table = np.array([[5, 4, 5, 4, 5, 4, 5, 4], [4, 5, 4, 5, 4, 5, 4, 5], [2, 2, 2, 2, 2, 2, 2, 2],
                      [1, 1, 1, 1, 1, 1, 1, 1]], float)
    assert friedman(table, 0.95).tolist() == [0, 1]


def test_two_candidates_are_compared_by_the_signed_rank_test():
    a = np.array([[5.0, 6, 7, 8, 9, 10], [4, 5, 6, 7, 8, 9]])  # 6 differences of +1: exact p = 1/64
    assert friedman(a, 0.95).tolist() == [0] and wilcoxon(a, 0.95).tolist() == [0]
    assert wilcoxon(a, 0.99).tolist() == [0, 1]  # 1/64 = 0.0156 > 0.01


def with_t(t: float, n: int = 6) -> np.ndarray:
    """n paired differences whose t statistic is ``t`` (mean t / sqrt(n), sample sd 1)."""
    z = np.array([1.0, -1.0] * (n // 2)) / np.sqrt(n / (n - 1))
    return t / np.sqrt(n) + z


def test_the_t_test_against_the_best_and_holms_correction():
    from scipy.stats import t as student

    best = np.full(6, 10.0)
    assert paired_t(np.stack([best, best - with_t(6.0)]), 0.95).tolist() == [0]  # p = 0.0009: dropped
    assert paired_t(np.stack([best, best - with_t(1.0)]), 0.95).tolist() == [0, 1]  # p = 0.18: kept
    assert paired_t(np.stack([best, best]), 0.95).tolist() == [0, 1]  # equal: no evidence
    assert paired_t(np.stack([best, best - 1]), 0.95).tolist() == [0]  # always 1 below, no spread: dropped
    # two candidates at t = 2.2 each: p = 0.0395 < 0.05, but above 0.05 / 2 (Holm's first level)
    assert 0.025 < student.sf(2.2, 5) < 0.05
    table = np.stack([best, best - with_t(2.2), best - with_t(2.2)[::-1]])
    assert paired_t(table, 0.95, holm=False).tolist() == [0]
    assert paired_t(table, 0.95, holm=True).tolist() == [0, 1, 2]
    # with one at t = 6 (p = 0.0009 < 0.025), Holm drops it, then tests the other at 0.05: dropped too
    table = np.stack([best, best - with_t(6.0), best - with_t(2.2)])
    assert paired_t(table, 0.95, holm=True).tolist() == [0]


def test_the_best_is_never_dropped():
    from scipy.stats import rankdata

    rng = np.random.default_rng(0)
    for _ in range(200):
        table = rng.normal(size=(rng.integers(2, 7), rng.integers(2, 12)))
        best_mean = int(np.argmax(table.mean(axis=1)))
        rank_sums = rankdata(-table, axis=0).sum(axis=1)
        for name in TESTS:
            kept = survivors(table, RaceConfig(test=name, first_test=2)).tolist()
            assert kept == sorted(set(kept))
            if name == "friedman" and table.shape[0] > 2:
                assert int(np.argmin(rank_sums)) in kept
            else:
                assert best_mean in kept


# ------------------------------------------------------------------------------------------------
# races on a noisy function with a known best

MEANS = np.array([10.0, 9.0, 8.5, 8.0, 7.0, 6.0, 5.0, 4.0])  # candidate 0 is the best
NOISE = 2.0


def draw(candidate: int, instance: int, seed: int) -> float:
    """One evaluation: the candidate's mean plus the instance's shared part (common random numbers:
    a hard instance is hard for everyone) and its own noise."""
    shared = np.random.default_rng([seed, instance]).normal(0, 3.0)
    own = np.random.default_rng([seed, instance, candidate]).normal(0, NOISE)
    return float(MEANS[candidate] + shared + own)


def run_race(settings: RaceConfig, seed: int, candidates=range(len(MEANS))) -> Race:
    race = Race(list(candidates), settings)
    while need := race.step():
        for c, i in need:
            race.results[(c, i)] = draw(c, i, seed)
    return race


@pytest.mark.parametrize("test", [t if t == "friedman" else pytest.param(t, marks=pytest.mark.slow) for t in TESTS])
def test_a_race_keeps_the_best_at_its_confidence_and_spends_less(test):
    settings = RaceConfig(test=test, confidence=0.95, first_test=5, max_instances=20)
    full = len(MEANS) * settings.max_instances
    lost, spent = 0, []
    for seed in range(60):
        race = run_race(settings, seed)
        lost += 0 not in race.alive
        spent.append(race.evaluations)
        assert race.evaluations < full or len(race.alive) == len(MEANS)
    # the best dropped in at most 5% of races (binomial: 60 races at 5%, 8 or more has p < 0.01)
    assert lost <= 7, lost
    assert np.mean(spent) < 0.7 * full, np.mean(spent) / full  # the losers stop early (52-60% of it here)


def test_a_race_told_fitness_keeps_its_order():
    race = run_race(RaceConfig(first_test=5, max_instances=30), seed=3)
    told = race.fitness()
    alive, dropped = race.alive, list(race.dropped)
    assert alive and dropped and set(alive) | set(dropped) == set(range(len(MEANS)))
    assert min(told[c] for c in alive) > max(told[c] for c in dropped)
    assert all(told[c] == race.mean(c) for c in alive)
    later_first = sorted(dropped, key=lambda c: (-race.dropped[c], -race.mean(c)))
    assert sorted(dropped, key=lambda c: -told[c]) == later_first


def test_a_race_resumed_from_its_results_ends_as_one_never_stopped():
    settings = RaceConfig(first_test=4, max_instances=25)
    whole = run_race(settings, seed=11)
    cut = Race(list(range(len(MEANS))), settings)
    for _ in range(7):  # seven rounds of evaluations, then a stop
        for c, i in cut.step():
            cut.results[(c, i)] = draw(c, i, 11)
    again = Race(list(range(len(MEANS))), settings, results=dict(cut.results))  # read back
    while need := again.step():
        for c, i in need:
            again.results[(c, i)] = draw(c, i, 11)
    assert again.alive == whole.alive and again.dropped == whole.dropped and again.results == whole.results


def test_an_elite_known_on_every_instance_costs_nothing():
    settings = RaceConfig(first_test=5, max_instances=20)
    known = {(0, i): draw(0, i, 5) for i in range(settings.max_instances)}  # the elite's, from races before
    race = Race([0, 1, 2, 3], settings, results=dict(known))
    while need := race.step():
        assert all(c != 0 for c, _ in need)
        for c, i in need:
            race.results[(c, i)] = draw(c, i, 5)
    assert 0 in race.alive
