"""A child valued from its parent's columns (`evaluators.incremental`) against the values computed
afresh: every feature's form gives the feature's value on random boards (and, for the standard
game's features, the plain-Python reference's); `evaluate_child` gives `evaluate`'s value, bit for
bit, on random children of random boards under several evaluators (terms plain, delta and through a
table); and the 1-ply choice (`solver.greedy.best_placement`, which values its children so) is the
choice of valuing every child afresh, on the standard game and the contest's."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from numba import njit

import standard_reference as ref
from engine import GEEK, STANDARD, STANDARD_CLEAR_FIRST, lock_copy, placements
from engine.lock import lost, spawn_state
from engine.movegen import scratch
from evaluators import Placement, evaluate, from_dict, load_evaluator, registry
from evaluators.features.tie_breaks import no_tie_break, pd_priority, state_then_column
from evaluators.incremental import (NONE, OR, ROWS, SUM, column_form, column_scratch, column_view, evaluate_child,
                                    form, incremental)
from solver._base import value_scratch
from solver.greedy import best_placement

#: the features that have a form
FORMED = tuple(name for name in registry.names() if form(name) is not None)


def columns(board, width):
    """Each column's cells as an int (bit k: the cell k rows above the floor), the walls beside."""
    height = len(board)
    cols = [sum(1 << (height - 1 - y) for y in range(height) if (int(board[y]) >> x) & 1) for x in range(width)]
    wall = (1 << height) - 1
    return [wall, *cols, wall]


def by_form(name, board, width):
    """The value of feature ``name`` on ``board`` from its form alone."""
    f = form(name)
    if f.combine == ROWS:
        rows = [int(registry.get(name).row(np.int64(int(r)), np.int64(0), width)) for r in board]
        assert min(rows) >= 0, f"{name}: a form counts (a search's bound on a value relies on it)"
        return sum(rows)
    cols = columns(board, width)
    if f.edge == NONE:  # the outer columns have no neighbour beyond them: -1
        cols[0] = cols[-1] = -1
    g = [int(f.fn(np.int64(cols[x]), np.int64(cols[x + 1]), np.int64(cols[x + 2]), len(board))) for x in range(width)]
    assert min(g) >= 0, f"{name}: a form counts (a search's bound on a value relies on it)"
    if f.combine == SUM:
        return sum(g)
    assert f.combine == OR
    m = 0
    for v in g:
        m |= v
    return bin(m).count("1")


@st.composite
def boards(draw, width=None, height=None):
    """A board of any density: rows with holes, overhangs, full rows, wells and empty columns."""
    width = width or draw(st.integers(2, 16))
    height = height or draw(st.integers(4, 60))
    top = draw(st.integers(0, height))
    full = (1 << width) - 1
    rows = [0] * top
    kind = draw(st.sampled_from(["any", "dense", "well"]))
    well = draw(st.integers(0, width - 1))
    for _ in range(top, height):
        r = draw(st.integers(0, full))
        if kind == "dense":
            r |= draw(st.integers(0, full))
        elif kind == "well":
            r = full & ~(1 << well) & ~(draw(st.integers(0, full)) if draw(st.booleans()) else 0)
        rows.append(r)
    return np.array(rows, np.uint16), width


def test_the_forms_are_declared_where_expected():
    assert {"holes", "column_transitions", "row_transitions", "wells_empty_below", "hole_depth", "rows_with_holes",
            "wells", "pattern_diversity"} <= set(FORMED)
    assert form("column_height_0") is None and form("landing_height") is None


def test_a_form_of_pairs_inside_the_board_is_given_no_wall():
    # pattern diversity reads h[x+1] - h[x] for pairs inside the board: columns 8 and 9 both 18 high,
    # the rest empty, give the differences 0 and +18 (1 of -2..2); read against the right wall
    # (20 high), column 9 would add +2
    board = np.zeros(20, np.uint16)
    board[2:] = 0b11 << 8
    assert form("pattern_diversity").edge == NONE
    assert registry.measure("pattern_diversity", board, 10) == by_form("pattern_diversity", board, 10) == 1
    wall, column = (1 << 20) - 1, (1 << 18) - 1
    g = form("pattern_diversity").fn
    assert (g(np.int64(column), np.int64(column), np.int64(-1), 20), g(np.int64(column), np.int64(column),
                                                                          np.int64(wall), 20)) == (0, 1 << 4)


def test_a_column_form_is_declared_with_known_settings():
    for settings_, message in (({"combine": "max"}, "combine is 'sum' or 'or'"), ({"reach": 2}, "reach is 0 or 1"),
                               ({"edge": "floor"}, "edge is 'wall' or 'none'")):
        with pytest.raises(registry.FeatureError, match=f"column form of 'holes': {message}"):
            column_form("holes", **settings_)


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(boards())
def test_each_form_gives_its_features_value(case):
    board, width = case
    top = registry.top_row(board)
    for name in FORMED:
        f = registry.get(name)
        expected = f.kernel(board, width, top)
        assert by_form(name, board, width) == expected, name


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(boards(width=10, height=20))
def test_local_rows_ignore_the_rows_above(case):
    board, width = case
    for name in FORMED:
        if form(name).combine == ROWS:
            row = registry.get(name).row
            for r in board:
                for above in (0, 1, 0x155, (1 << width) - 1):
                    assert row(np.int64(int(r)), np.int64(above), width) == row(np.int64(int(r)), np.int64(0), width)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(boards(width=10, height=20))
def test_the_standard_forms_against_the_reference(case):
    # the reference reads a board as games leave it: no empty row below an occupied one
    board, width = case
    board = np.array([r for r in board if r] , np.uint16)
    board = np.concatenate([np.zeros(20 - len(board), np.uint16), board])
    expected = ref.features([[bool((int(r) >> x) & 1) for x in range(10)] for r in board[::-1] if r], 20)
    for name in ("row_transitions", "column_transitions", "holes", "wells_empty_below", "hole_depth", "rows_with_holes",
                 "pattern_diversity"):
        assert by_form(name, board, 10) == expected[name], name


# ------------------------------------------------------------------------------------------------
# evaluate_child against evaluate


@njit(cache=True)
def child_values(p, view, pv, spec, offsets):
    """(evaluate, evaluate_child, evaluate_child with each value to beat evaluate + ``offsets[i]``)
    of the placement ``p``, a lock that cleared no row. One kernel with one call site of each
    evaluator (their code is inlined where they are called), taking the placement rather than the
    rules: each layout compiles it once, whatever the rule set."""
    column_view(p.parent, p.width, spec, view)
    fresh = evaluate(p, pv, spec)
    out = np.empty(offsets.shape[0] + 1)
    for i in range(out.shape[0]):
        out[i] = evaluate_child(p, view, pv, spec, -np.inf if i == 0 else fresh + offsets[i - 1])
    return fresh, out[0], out[1:]


#: every layout compiles its own kernels (seconds each from a cold cache): the everyday loop
#: runs `terms`, which weighs every feature that has a form (plain, delta and through a table, ties
#: by pd_priority), and `bdu` (features without a form, ties by state_then_column); the presets run
#: with the slow tests
EVERYDAY = ("terms", "bdu")

EVALUATORS = {
    "dellacherie": load_evaluator("dellacherie"),
    "bcts": load_evaluator("bcts"),
    "pierre_dellacherie": load_evaluator("pierre_dellacherie"),
    "el_tetris": load_evaluator("el_tetris"),
    "chys_quality": load_evaluator("chys_quality"),
    "bdu": load_evaluator("bdu"),  # weighs features without a form: evaluate on the child board
    "terms": from_dict({"features": {
        "holes": {"weight": -2.5, "delta": True}, "wells": {"weight": -0.3, "table": [[1, 0.5], [3, 7.25]]},
        "rows_with_holes": -1.125, "hole_depth": {"weight": 0.7, "delta": True}, "occupied_rows": 0.01,
        "aggregate_height": -0.0625, "buried_cells": {"weight": -1.0, "table": [[0, 1], [2, 3], [9, -4]]},
        "interior_row_transitions": 0.5, "occupied_cells": -0.3, "wells_empty_below": -1.75,
        "column_transitions": -3.0, "landing_height": -1.0, "eroded_cells": 2.0, "row_transitions": -0.75,
        "pattern_diversity": -0.4},
        "tie_break": "pd_priority"}),
}


def everyday(names):
    """``names`` as parameters, those outside `EVERYDAY` marked slow."""
    return [pytest.param(n, marks=() if n in EVERYDAY else pytest.mark.slow) for n in names]


def test_which_evaluators_are_incremental():
    assert {name for name, e in EVALUATORS.items() if incremental(e.spec.kind)} == set(EVALUATORS) - {"bdu"}


def test_the_everyday_layout_weighs_every_form():
    assert {name for name in FORMED if name in EVALUATORS["terms"].weights} == set(FORMED)


@pytest.mark.parametrize("name", everyday(sorted(EVALUATORS)))
@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(boards(width=10, height=20), st.integers(0, 6), st.sampled_from(["standard", "geek"]), st.integers(0, 10 ** 6))
def test_evaluate_child_is_evaluate(name, case, shape, game, pick):
    board, _ = case
    rules = STANDARD if game == "standard" else GEEK
    spec = EVALUATORS[name].spec
    n = spec.terms.shape[1]
    pv = np.zeros(n)
    view = column_scratch(n)
    locked = np.zeros(20, np.uint16)
    cleared = np.zeros(20, np.uint16)
    found = placements(board, rules, shape, 0)
    if not len(found):
        return
    for k in (pick % len(found), (pick * 7 + 3) % len(found)):
        x, y, s = (int(v) for v in found[k])
        lock = lock_copy(board, rules.kernel, shape, s, x, y, 1, locked, cleared)
        if lock.lines or lost(lock.end):
            continue
        # a value to beat: the value itself, or -inf only when it is below the value to beat
        offsets = np.array([-np.inf, np.inf, -1.0, 0.0, 0.5, 100.0])
        p = Placement(board, locked, cleared, rules.kernel.cells[shape, s], x, y, lock.lines, lock.points, rules.width)
        fresh, incremental_value, beaten = child_values(p, view, pv, spec, offsets)
        assert incremental_value == fresh  # bit for bit
        assert np.array_equal(view.child, view.cols)  # the piece taken off again
        for b, v in zip(fresh + offsets, beaten):
            assert v == fresh or (v == -np.inf and fresh < b)


# ------------------------------------------------------------------------------------------------
# The 1-ply choice against valuing every child afresh

TIE_BREAKS = {"state_then_column": state_then_column, "pd_priority": pd_priority, None: no_tie_break}


def chosen_afresh(board, shape, t, rules, evaluator):
    """(placement, value) of the best placement, each child locked on a copy and valued by
    `Evaluator.value`; ties to the lower tie-break rank, then the first generated."""
    rank_of = TIE_BREAKS[evaluator.tie_break]
    ss = spawn_state(t, rules.kernel)
    best, best_key = None, None
    for k, (x, y, s) in enumerate(placements(board, rules, shape, ss)):
        locked = np.zeros(rules.height, np.uint16)
        cleared = np.zeros(rules.height, np.uint16)
        lock = lock_copy(board, rules.kernel, shape, s, x, y, t + 1, locked, cleared)
        if lost(lock.end):
            continue
        v = evaluator.value(board, locked, cleared, rules.cells[shape, s], x, y, lock.lines, lock.points, rules.width)
        key = (-v, rank_of(x, s, rules.spawn_x, ss), k)
        if best_key is None or key < best_key:
            best, best_key = (int(x), int(y), int(s)), key
    return best, (-best_key[0] if best_key else None)


#: (rules, evaluator) pairs of the choice test, each a compile of the 1-ply kernels (4-10 s from a
#: cold cache): both paths (formed: `terms`, which weighs every form; afresh: `bdu`) on the rule sets
#: where they can differ, and each other preset's layout on one rule set. A rule set changes the
#: placements and the lock, a layout the evaluator's code, and the two meet only through the
#: placement the evaluator is given. The formed path values only locks that clear no row, where the
#: standard rules and their clear-first variant are one rule (an overflowing piece ends the game under
#: both), so `terms` runs on the standard rules and the contest's; the clear-first rule's own
#: placements (overflowing cells moved down by a clear) go to the afresh path, which `bdu` checks on
#: every rule set. The rest of the grid would add compiles, not code paths
CHOICE_CASES = {"terms": ("standard", "geek"),
                "bdu": ("standard", "geek", "standard_clear_first"),
                "bcts": ("standard",), "dellacherie": ("standard_clear_first",), "pierre_dellacherie": ("geek",)}


def choice_cases():
    """`CHOICE_CASES` as parameters: every rule set and both paths in the everyday loop, the rest with
    the slow tests."""
    everyday = {("standard", "terms"), ("geek", "terms"), ("standard_clear_first", "bdu")}
    rules_of = {r.name: r for r in (STANDARD, STANDARD_CLEAR_FIRST, GEEK)}
    return [pytest.param(rules_of[rules], name, id=f"{name}-{rules}",
                         marks=() if (rules, name) in everyday else pytest.mark.slow)
            for name, sets in CHOICE_CASES.items() for rules in sets]


@pytest.mark.parametrize(("rules", "name"), choice_cases())
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(boards(width=10, height=20), st.integers(0, 6), st.integers(0, 50))
def test_the_choice_is_that_of_valuing_every_child_afresh(rules, name, case, shape, t):
    board, _ = case
    evaluator = EVALUATORS[name]
    spec = evaluator.spec
    found = np.zeros((4000, 3), np.int64)
    k, v = best_placement(board, shape, t, rules.kernel, spec, scratch(rules), found,
                          value_scratch(spec.terms.shape[1], rules.height))
    chosen, v_ref = chosen_afresh(board, shape, t, rules, evaluator)
    assert (None if k < 0 else tuple(int(c) for c in found[k])) == chosen
    if k >= 0:
        assert v == v_ref
