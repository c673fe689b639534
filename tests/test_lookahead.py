"""The lookahead's kernels on hand-built boards: its choice against a brute-force search, the death
penalty, the kept fraction's order, base building, and its settings bundle."""

import dataclasses

import numba
import numpy as np
import pytest

from engine import GEEK
from engine.rules import SHAPE_NAMES
from engine.lock import TOP_TOUCHED, lock_copy, spawn_blocked, spawn_state
from engine.movegen import capacity, placements, scratch
from evaluators import load_evaluator
from solver._base import value_scratch
from solver.greedy import best_placement
from solver.lookahead import (DEAD, _keep_best, base_allowed, lookahead_choice, lookahead_settings,
                              lookahead_work)

#: a short board, where two pieces are enough to top out
SHORT = dataclasses.replace(GEEK, name="geek8", height=8)
I, L, J, T, O, S, Z = (SHAPE_NAMES.index(name) for name in "ILJTOSZ")


@pytest.fixture(scope="module")
def pd():
    return load_evaluator("pierre_dellacherie")


def children(board, rules, t, shape, ev):
    """Every surviving child of piece ``t`` on ``board``: ((x, y, s), value, board after the clear)."""
    k = rules.kernel
    if spawn_blocked(board, k, shape, spawn_state(t, k)):
        return []
    out = []
    for x, y, s in placements(board, rules, shape, rules.spawn_state_of(t)):
        locked, cleared = np.zeros(rules.height, np.uint16), np.zeros(rules.height, np.uint16)
        lock = lock_copy(board, k, shape, s, x, y, t + 1, locked, cleared)
        if lock.end != TOP_TOUCHED:
            v = ev.value(board, locked, cleared, rules.cells[shape, s], x, y, lock.lines, lock.points, rules.width)
            out.append(((int(x), int(y), int(s)), v, cleared))
    return out


def two_ply_worths(board, rules, sequence, ev):
    """Brute force, depth 2, everything kept, sum objective: each first placement's worth."""
    worths = {}
    for first, v, after in children(board, rules, 0, sequence[0], ev):
        nxt = children(after, rules, 1, sequence[1], ev)
        worths[first] = v + max(c[1] for c in nxt) if nxt else v - DEAD
    return worths


def choose(board, rules, sequence, ev, settings):
    work = lookahead_work(settings.depth, rules.kernel, ev.spec.weights.shape[0])
    return lookahead_choice(np.array(board, np.uint16), 0, np.array(sequence, np.int64), rules.kernel, ev.spec,
                            settings, work)


def test_depth_two_finds_the_brute_force_best_and_avoids_deaths(pd):
    # a J then an S on a ragged six-row stack: 9 of the J's 10 placements leave the S no survivor
    board = np.array([0, 0, 301, 48, 979, 579, 370, 384], np.uint16)
    worths = two_ply_worths(board, SHORT, [J, S], pd)
    survivors = [p for p, w in worths.items() if w > -DEAD / 2]
    assert len(worths) == 10 and len(survivors) == 1
    c = choose(board, SHORT, [J, S], pd, lookahead_settings(2, 1.0, False))
    assert (c.x, c.y, c.s) == survivors[0] and c.worth == worths[survivors[0]]
    # nodes: the J's survivors, then the S's survivors under each of them
    assert c.nodes == len(worths) + sum(len(children(after, SHORT, 1, S, pd))
                                        for _, _, after in children(board, SHORT, 0, J, pd))


def test_when_every_path_dies_the_best_dead_path_is_still_named(pd):
    board = np.array([0, 0, 415, 616, 306, 89, 832, 411], np.uint16)
    worths = two_ply_worths(board, SHORT, [T, J], pd)
    assert len(worths) == 2 and all(w < -DEAD / 2 for w in worths.values())
    c = choose(board, SHORT, [T, J], pd, lookahead_settings(2, 1.0, False))
    assert c.found and c.worth == max(worths.values()) < -DEAD / 2
    assert worths[(c.x, c.y, c.s)] == c.worth and c.nodes == 2


def test_a_blocked_spawn_has_no_placement(pd):
    board = np.zeros(SHORT.height, np.uint16)
    board[0] = board[1] = 0b0001110000  # around the spawn column 4
    c = choose(board, SHORT, [T, T], pd, lookahead_settings(2, 1.0, False))
    assert (c.found, c.nodes, c.worth) == (False, 0, -np.inf)


def test_the_sequence_end_cuts_the_depth(pd):
    # the same J and S, the S past the game's end: depth 1 whatever the settings, so deaths of the S
    # cannot count and the choice is the J's best value
    board = np.array([0, 0, 301, 48, 979, 579, 370, 384], np.uint16)
    c = choose(board, SHORT, [J], pd, lookahead_settings(4, 1.0, False))
    best = max(v for _, v, _ in children(board, SHORT, 0, J, pd))
    assert c.worth == best and c.nodes == 10


def test_depth_one_is_the_greedy_choice(pd):
    rules = GEEK.kernel
    board = np.zeros(20, np.uint16)
    board[14:] = [0b0000000000, 0b1000000001, 0b1100000011, 0b1110110111, 0b1111100111, 0b0111111111]
    for shape in range(7):
        c = choose(board, GEEK, [shape], pd, lookahead_settings(1, 1.0, False))
        found = np.zeros((capacity(20, 10), 3), np.int64)
        k, value = best_placement(board, shape, 0, rules, pd.spec, scratch(GEEK), found,
                                  value_scratch(pd.spec.weights.shape[0], 20))
        assert (c.x, c.y, c.s) == tuple(found[k]) and c.worth == value


def test_keep_best_sorts_by_value_then_rank_then_generation():
    work = lookahead_work(1, GEEK.kernel, 4)
    values = [3.0, 5.0, 5.0, 1.0, 5.0, 3.0, 2.0]
    ranks = [0, 2, 1, 0, 1, 0, 0]
    work.values[0, :7] = values
    work.ranks[0, :7] = ranks
    work.order[0, :7] = [10, 11, 12, 13, 14, 15, 16]  # indices into found
    assert _keep_best(0, 7, 0.5, work) == 4  # ceil(3.5)
    # 5.0 at rank 1 (generated 2nd, then 4th), 5.0 at rank 2, then the first 3.0
    assert list(work.order[0, :4]) == [12, 14, 11, 10]
    assert list(work.values[0, :4]) == [5.0, 5.0, 5.0, 3.0]
    work.values[0, :3] = [1.0, 2.0, 3.0]
    work.ranks[0, :3] = 0
    work.order[0, :3] = [0, 1, 2]
    assert _keep_best(0, 3, 0.01, work) == 1 and work.order[0, 0] == 2  # at least one


def test_base_building_keeps_allowed_children_and_adds_their_base_cells(pd):
    board = np.zeros(20, np.uint16)
    board[19] = 0b0000111111
    settings = lookahead_settings(1, 1.0, False, base_rows=2, base_cell_value=100.0)
    spoiling = 0
    for shape in range(7):
        kids = children(board, GEEK, 0, shape, pd)
        allowed = []
        for (x, y, s), v, _ in kids:
            locked = board.copy()
            for dx, dy in GEEK.cells[shape, s]:
                if y + dy >= 0:
                    locked[y + dy] |= 1 << (x + dx)
            if base_allowed(locked, 2, 10):
                for row in locked[-2:]:  # row by row, as the kernel adds them
                    v += 100.0 * bin(int(row)).count("1")
                allowed.append((v, (x, y, s)))
        assert allowed
        spoiling += len(kids) - len(allowed)
        c = choose(board, GEEK, [shape], pd, settings)
        best = max(w for w, _ in allowed)
        assert c.worth == best and (best, (c.x, c.y, c.s)) in allowed
    assert spoiling > 0  # some placements would spoil the base: they were not chosen from


def test_settings_have_one_numba_type_whatever_the_inputs():
    a = lookahead_settings(2, 1, 0)
    b = lookahead_settings(np.int64(3), 0.25, True, 6, 100)
    assert numba.typeof(a) == numba.typeof(b)
    assert (a.keep_fraction, a.last_only, a.base_rows, a.base_cell_value) == (1.0, False, 0, 0.0)
