"""The tie seed (issue 58): the beam's and the segment search's order of boards of equal value,
drawn anew by ``beam.tie_seed`` / ``segment.tie_seed``; seed 0 is the order the records were made
with. Another seed changes which of the equal-valued boards are kept, never which values are."""

import numpy as np
import pytest

import reference as ref
from solver import SolverConfig, solve
from solver.layered import board_hash, tie_hash
from solver.segment.kernels import keep_best


def boards(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1 << 10, size=(n, 20)).astype(np.uint16)


@np.errstate(over="ignore")  # (the plain-Python mix wraps around as the kernel's does)
def test_seed_zero_is_the_board_hash_and_another_seed_a_bijection_of_it():
    bs = boards(4000)
    plain = np.array([board_hash.py_func(b) for b in bs])
    assert [tie_hash.py_func(b, 0) for b in bs] == list(plain)
    for seed in (1, 2, 12345, 2**62 + 7):
        mixed = np.array([tie_hash.py_func(b, seed) for b in bs])
        assert (mixed >= 0).all()  # 63 bits, as board_hash
        assert len(set(mixed)) == len(set(plain))  # distinct boards stay distinct ...
        same = np.array([tie_hash.py_func(b, seed) for b in bs[:50]])
        assert list(same) == list(mixed[:50])  # ... equal ones equal
        # the order of pairs changes: about half of them
        i, j = np.arange(0, 3998, 2), np.arange(1, 3999, 2)
        flipped = np.mean((plain[i] < plain[j]) != (mixed[i] < mixed[j]))
        assert 0.4 < flipped < 0.6, flipped


def kept(values, bs, nodes, seed):
    slot = np.empty(1, np.int64)
    best, _ = keep_best(np.asarray(values, np.float64), bs, len(values), nodes, slot, seed, False)
    return [int(i) for i in best]


@np.errstate(over="ignore")  # (board_hash's plain-Python form wraps around as the kernel's does)
def test_another_tie_seed_keeps_other_boards_of_equal_value_only():
    bs = boards(12, seed=3)
    distinct = [float(v) for v in range(12)]
    assert all(kept(distinct, bs, 5, s) == kept(distinct, bs, 5, 0) for s in range(1, 9))  # no tie: the same
    tied = [9.0] * 8 + [3.0, 2.0, 1.0, 0.0]  # 8 boards of value 9, 4 kept
    picks = {tuple(kept(tied, bs, 4, s)) for s in range(0, 12)}
    assert all(set(p) <= set(range(8)) for p in picks)  # always 4 of the value-9 boards
    assert len(picks) > 1  # and not always the same 4
    assert kept(tied, bs, 4, 0) == sorted(range(8), key=lambda i: board_hash.py_func(bs[i]))[:4]  # seed 0: by hash


@pytest.mark.slow
@pytest.mark.parametrize("policy, section", [("beam", {"width": 12}),
                                              ("segment", {"nodes": 40, "states": 2, "depth": 12, "first_depth": 34})])
def test_a_tie_seed_gives_a_record_that_replays_and_seed_zero_is_the_default(policy, section):
    evaluator = "transitions" if policy == "segment" else "chys_quality"

    def play(seed=None):
        extra = {} if seed is None else {"tie_seed": seed}
        return solve(SolverConfig(policy=policy, evaluator=evaluator, pieces=90, threads=1,
                                  **{policy: {**section, **extra}}))

    default, zero = play(), play(0)
    assert zero.record == default.record and zero.score == default.score
    other = [play(s) for s in (1, 2, 3)]
    for r in other:
        verdict = ref.replay(r.record)
        assert verdict["valid"] and verdict["score"] == r.score
    assert any(r.record != default.record for r in other)  # the ties are met, and drawn otherwise


def test_the_board_tie_order_has_no_seed():
    with pytest.raises(ValueError, match="tie_seed: draws the order of the `hash` tie order"):
        SolverConfig(policy="beam", beam={"tie_break": "board", "tie_seed": 1})
