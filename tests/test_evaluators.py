"""Evaluators: presets, YAML loading and its errors, the kernel's delta / table / weight semantics."""

import pickle

import numpy as np
import pytest
import yaml
from numba import njit

import evaluators as E
from engine import GEEK, final_board, lock_copy, placements, scratch
from engine.board import count_and_clear, from_strings, place
from evaluators import FeatureError, Placement, board_values, evaluate, feature_vector, registry
from evaluators.evaluator import FeatureTerm
from evaluators.registry import index, known_names

I_VERTICAL = GEEK.cells[0, 0]   # (0,0) (0,-1) (0,-2) (0,1)
KNOWN = ", ".join(known_names())

# The board of tests/test_features.py (rows y14..y19, 10 x 20).
BOARD_B = from_strings("""
    ......#...
    .##...#...
    .#....###.
    .#.#..#..#
    ##.#.###.#
    ####.#####
""", 10, 20)


def lock(parent, cells, x, y):
    """``(locked, cleared, lines, points)`` for a piece locked on a copy of ``parent`` (Geek scoring)."""
    locked = parent.copy()
    place(locked, cells, x, y)
    cleared = locked.copy()
    c, f, _ = count_and_clear(cleared, GEEK.full_row)
    return locked, cleared, f, int(GEEK.scores[f]) * c


@njit(cache=True)
def _evaluate(p, pv, spec):
    return evaluate(p, pv, spec)


@njit(cache=True)
def _board_values(board, width, spec, out):
    board_values(board, width, spec, out)


@njit(cache=True)
def _feature_vector(p, spec, out):
    feature_vector(p, spec, out)


def children(parent, rules, shape, state, number):
    """Every child of ``parent`` for piece ``number`` (1-based): (placement, locked, cleared,
    `LockResult`), in `placements` order, locked by the engine's one lock rule (`lock_copy`)."""
    out = []
    for p in placements(parent, rules, shape, state, scratch(rules)):
        x, y, s = (int(v) for v in p)
        locked = np.zeros_like(parent)
        cleared = np.zeros_like(parent)
        out.append(((x, y, s), locked, cleared, lock_copy(parent, rules.kernel, shape, s, x, y, number, locked, cleared)))
    return out


# ---------------------------------------------------------------------------------------------
# Presets


def test_presets_load():
    names = E.preset_names()
    assert names == sorted([
        "backsearch_points", "bcts", "bdu", "chys_quality", "dellacherie", "el_tetris", "lecture_v1", "lecture_v2",
        "lecture_v2_aggressive", "lecture_v2_balanced", "lecture_v2_conservative", "pierre_dellacherie", "transitions",
    ])
    for name in names:
        ev = E.load_evaluator(name)
        assert ev.name == name
        assert ev.description and "\n" not in ev.description
        assert E.load_evaluator(E.PRESETS_DIR / f"{name}.yaml") == ev
    assert E.load_evaluator("pierre_dellacherie").tie_break == "pd_priority"
    for name in names:
        if name.startswith("lecture"):
            assert "workbench's reading" in E.load_evaluator(name).description


def test_preset_weights():
    pd = E.load_evaluator("pierre_dellacherie")
    assert {n: t.weight for n, t in pd.weights.items()} == {
        "landing_height": -45, "eroded_cells": 34, "row_transitions": -32,
        "column_transitions": -93, "holes": -79, "wells": -34}
    chys = E.load_evaluator("chys_quality")
    assert {n: t.weight for n, t in chys.weights.items()} == {
        "occupied_cells": 600, "interior_row_transitions": -458, "covered_empty_cells": -1080}
    # The alias fills the holes slot.
    w = chys.spec.weights
    assert w[index("holes")] == -1080 and w[index("occupied_cells")] == 600
    el = E.load_evaluator("el_tetris")
    assert el.weights["landing_height"].weight == -4.500158825082766
    assert el.weights["lines_cleared"].weight == 3.4181268101392694
    v1 = E.load_evaluator("lecture_v1")
    assert v1.weights["covered_holes"] == FeatureTerm(1.0, True, ((-1e9, 20.0), (0.0, 0.0)))
    v2 = E.load_evaluator("lecture_v2")
    assert v2.weights["lines_cleared"] == FeatureTerm(0.5, False, ((1, 0), (2, 100), (3, 500), (4, 1000)))
    assert E.load_evaluator("lecture_v2_balanced").weights == v2.weights
    assert E.load_evaluator("lecture_v2_conservative").weights["lines_cleared"].table[:2] == ((1, -100), (2, -50))


# ---------------------------------------------------------------------------------------------
# Values


def test_pierre_dellacherie_clearing_everything():
    # Two rows missing column 9, a vertical I at x = 9 (rows 16..19): both rows clear, the board
    # is empty. landing 2.5; eroded 2 rows x 2 cells = 4; on the empty board: row transitions
    # 20 x 2 = 40, column transitions 10 x 1, holes 0, wells 0.
    # -45 x 2.5 + 34 x 4 - 32 x 40 - 93 x 10 = -112.5 + 136 - 1280 - 930
    parent = from_strings("#########.\n#########.", 10, 20)
    locked, cleared, lines, points = lock(parent, I_VERTICAL, 9, 18)
    pd = E.load_evaluator("pierre_dellacherie")
    assert pd.value(parent, locked, cleared, I_VERTICAL, 9, 18, lines, points, 10) == -2186.5


def test_pierre_dellacherie_on_board_b():
    # A vertical I at x = 4 (rows 16..19) of board B completes row 19 only: landing 2.5,
    # eroded 1 x 1. After the clear (rows y15..y19):
    #     ......#...      row transitions: 15 empty rows x 2 + 4 + 6 + 8 + 8 + 4 = 60
    #     .##...#...      column transitions: 1 per column, 3 for columns 2, 7, 8 = 16
    #     .#..#.###.      holes: column 2: y17-19, column 7: y18, column 8: y18-19 = 6
    #     .#.##.#..#      wells: (0,16-18) 1+2+3, (2,18-19) 1+2, (5,17-18) 1+2, (9,17) 1,
    #     ##.#####.#             (8,19) 1 = 14
    # -45 x 2.5 + 34 x 1 - 32 x 60 - 93 x 16 - 79 x 6 - 34 x 14
    locked, cleared, lines, points = lock(BOARD_B, I_VERTICAL, 4, 18)
    assert (lines, points) == (1, 32)
    pd = E.load_evaluator("pierre_dellacherie")
    assert pd.value(BOARD_B, locked, cleared, I_VERTICAL, 4, 18, lines, points, 10) == -4436.5


def test_chys_quality_on_board_b():
    # Parent and child the same board: 28 cells, 25 interior transitions, 6 covered empty cells.
    chys = E.load_evaluator("chys_quality")
    flat = GEEK.cells[0, 1]
    assert chys.value(BOARD_B, BOARD_B, BOARD_B, flat, 4, 13, 0, 0, 10) == 600 * 28 - 458 * 25 - 1080 * 6


def value(features, parent, child, lines=0, points=0):
    ev = E.from_dict({"name": "t", "features": features})
    return ev.value(parent, child, child, I_VERTICAL, 4, 10, lines, points, 10)


def test_delta():
    parent = from_strings("#########.", 10, 20)                        # 9 cells, no hole
    child = from_strings("###.......\n#.#.......\n#########.", 10, 20)   # 1 hole: (1, 18)
    assert value({"holes": 5}, parent, child) == 5
    assert value({"holes": {"weight": 5, "delta": True}}, parent, child) == 5          # 1 - 0
    assert value({"holes": {"weight": 5, "delta": True}}, child, parent) == -5         # 0 - 1
    # occupied cells: parent 9, child 3 + 2 + 9 = 14
    assert value({"occupied_cells": {"weight": 1, "delta": True}}, parent, child) == 5
    assert value({"occupied_cells": 1}, parent, child) == 14


def test_step_table():
    board = np.zeros(20, np.uint16)
    table = {"weight": 2, "table": [[1, 10], [3, 50]]}
    # lines 0 is below the first threshold: 0; 1..2 -> 10; 3 and more -> 50; times the weight.
    got = [value({"lines_cleared": table}, board, board, lines=k) for k in range(5)]
    assert got == [0, 20, 20, 100, 100]
    # Points: table on a large value.
    assert value({"points_gained": {"weight": 1, "table": [[0, 1], [100, 2]]}}, board, board, points=99) == 1


def test_delta_through_table():
    # lecture_v1's bumpiness: +10 when it goes down, 0 when it stays, -10 when it goes up.
    term = {"bumpiness": {"weight": 1, "delta": True, "table": [[-1e9, 10], [0, 0], [1, -10]]}}
    flat = from_strings("##########", 10, 20)
    step = from_strings("#.........\n##########", 10, 20)         # bumpiness 1
    tower = from_strings("#.........\n#.........\n##########", 10, 20)  # bumpiness 2
    assert value(term, step, flat) == 10
    assert value(term, step, step) == 0
    assert value(term, step, tower) == -10


def test_lecture_v1_covered_hole_made_open():
    # Parent: a covered hole at (1, 19), walled in by (0, 19), (2, 19), (1, 18). The child has
    # the same hole, open through (2, 19) and (2, 18): covered holes 1 -> 0 gives +20, holes
    # 1 -> 1 gives 0 (the other terms are weighted 0 here).
    parent = from_strings("###.......\n#.#.......", 10, 20)
    child = from_strings("##........\n#.........", 10, 20)
    ev = E.load_evaluator("lecture_v1")
    only = ev.with_weights({"bumpiness": 0, "aggregate_height": 0, "holes": 0, "lines_cleared": 0})
    assert only.value(parent, child, child, I_VERTICAL, 4, 10, 0, 0, 10) == 20
    only = ev.with_weights({"bumpiness": 0, "aggregate_height": 0, "covered_holes": 0, "lines_cleared": 0})
    assert only.value(child, parent, parent, I_VERTICAL, 4, 10, 0, 0, 10) == 0      # holes 1 -> 1


def test_lecture_v2_average_height_thresholds():
    # Aggregate height +1..+9 (average up by less than 1 row on 10 columns) -> -20, +10..+19 ->
    # -40, +20 or more -> -80, all x 0.2.
    ev = E.load_evaluator("lecture_v2").with_weights({"lines_cleared": 0, "holes": 0, "bumpiness": 0})
    empty = np.zeros(20, np.uint16)
    one = from_strings("#.........", 10, 20)
    row = from_strings("##########", 10, 20)
    two_rows = from_strings("##########\n##########", 10, 20)
    for child, expected in ((empty, 0), (one, -20), (row, -40), (two_rows, -80)):
        assert ev.value(empty, child, child, I_VERTICAL, 4, 10, 0, 0, 10) == pytest.approx(0.2 * expected)


def test_evaluate_is_the_documented_dot_product(replays_dir):
    # Every feature, random weights, some deltas and tables, on the children of real mid-game
    # boards: evaluate == sum of weight x table(value - parent value).
    rng = np.random.default_rng(7)
    features = {}
    names = registry.names()
    for name in names:
        term = {"weight": float(rng.normal())}
        if not registry.is_placement(name) and rng.random() < 0.5:
            term["delta"] = True
        if rng.random() < 0.3:
            thresholds = np.sort(rng.choice(np.arange(-10, 40), size=3, replace=False))
            term["table"] = [[int(t), float(rng.normal())] for t in thresholds]
        features[name] = term
    ev = E.from_dict({"name": "all", "features": features})
    text = (replays_dir / "geek-1395326.txt").read_text()
    seq = GEEK.sequence(2000)
    n = len(names)
    checked = 0
    for k in (100, 700, 1500):
        parent = final_board(text, pieces=k)
        shape, state = int(seq[k]), k % 4
        pv = np.zeros(n)
        _board_values(parent, 10, ev.spec, pv)
        full_parent = np.zeros(n)
        _feature_vector(Placement(parent, parent, parent, I_VERTICAL, 0, 0, 0, 0, 10), ev.spec, full_parent)
        kids = children(parent, GEEK, shape, state, k + 1)
        assert kids
        for (x, y, s), locked, cleared, lock in kids:
            cells = GEEK.cells[shape, s]
            p = Placement(parent, locked, cleared, cells, x, y, lock.lines, lock.points, 10)
            fv = np.zeros(n)
            _feature_vector(p, ev.spec, fv)
            expected = 0.0
            for i, name in enumerate(names):  # the documented sum, in slot order
                term = ev.weights[name]
                v = fv[i] - (full_parent[i] if term.delta else 0.0)
                if term.table is not None:
                    v = next((out for t, out in reversed(term.table) if t <= v), 0.0)
                expected += term.weight * v
            assert _evaluate(p, pv, ev.spec) == pytest.approx(expected, rel=1e-12, abs=1e-9)
            assert ev.value(parent, locked, cleared, cells, x, y, lock.lines, lock.points, 10) == \
                pytest.approx(expected, rel=1e-12, abs=1e-9)
            checked += 1
    assert checked > 30


def test_parent_values_only_for_active_delta_features():
    ev = E.from_dict({"features": {"holes": {"weight": 1, "delta": True}, "wells": 1,
                                   "landing_height": 1}})
    n = len(registry.names())
    pv = np.full(n, 99.0)
    _board_values(BOARD_B, 10, ev.spec, pv)
    expected = np.zeros(n)
    expected[index("holes")] = 6
    assert (pv == expected).all()


# ---------------------------------------------------------------------------------------------
# Loading and errors


def test_sources(tmp_path):
    data = {"name": "mine", "description": "d", "features": {"holes": -1, "wells": {"weight": 2}}}
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data))
    from_file = E.load_evaluator(path)
    assert from_file == E.load_evaluator(str(path)) == E.load_evaluator(data) == E.from_dict(data)
    assert from_file.weights == {"holes": FeatureTerm(-1.0), "wells": FeatureTerm(2.0)}
    # The name defaults to the file's stem.
    path.write_text("features: {holes: -1}\n")
    assert E.load_evaluator(path).name == "mine"


def test_yaml_numbers_without_a_dot(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("features:\n  holes: {weight: 1e3, delta: true, table: [[-1e9, 1], [2e0, -2]]}\n")
    assert E.load_evaluator(path).weights["holes"] == FeatureTerm(1000.0, True, ((-1e9, 1.0), (2.0, -2.0)))


ERRORS = [
    ("features: {holse: 1}", f"features.holse: unknown feature (did you mean 'holes'?) (known: {KNOWN})"),
    ("features: {holes: {delta: true}}", "features.holes.weight: missing key"),
    ("features: {holes: heavy}", "features.holes: weight must be a finite number, got 'heavy'"),
    ("features: {holes: true}", "features.holes: weight must be a finite number, got true"),
    ("features: {holes: {weight: false}}", "features.holes.weight: weight must be a finite number, got false"),
    ("features: {holes: {weight: .nan}}", "features.holes.weight: weight must be a finite number, got nan"),
    ("features: {holes: {weight: 1, colour: red}}", "features.holes.colour: unknown key (known: weight, delta, table)"),
    ("features: {holes: {weight: 1, delta: 1}}", "features.holes.delta: expected true or false, got 1"),
    ("features: {holes: {weight: 1, table: 3}}", "features.holes.table: expected a list of [threshold, value] pairs, got 3"),
    ("features: {holes: {weight: 1, table: []}}", "features.holes.table: empty table (leave the key out for no table)"),
    ("features: {holes: {weight: 1, table: [[1, 2], [3]]}}", "features.holes.table.1: expected a [threshold, value] pair, got [3]"),
    ("features: {holes: {weight: 1, table: [[1, x]]}}", "features.holes.table.0: value must be a finite number, got 'x'"),
    ("features: {holes: {weight: 1, table: [[2, 1], [2, 3]]}}", "features.holes.table: thresholds must increase (2.0 after 2.0, pair 1)"),
    ("features: {lines_cleared: {weight: 1, delta: true}}",
     "features.lines_cleared.delta: a placement feature has no parent value; delta applies to board features only"),
    ("features: {holes: 1, covered_empty_cells: 2}",
     "features.covered_empty_cells: same feature as holes (covered_empty_cells is an alias); give it once"),
    ("features: {holes: 1}\ntie_break: random", "tie_break: unknown tie-break 'random' (known: null, pd_priority, state_then_column)"),
    ("features: {holes: 1}\nweights: {}", "weights: unknown key (known: name, description, features, tie_break)"),
    ("name: x", "features: missing key"),
    ("features: {}", "features: no feature given"),
    ("features: [holes]", "features: expected a mapping feature -> weight, got ['holes']"),
    ("name: [1]\nfeatures: {holes: 1}", "name: expected a non-empty string, got [1]"),
]


@pytest.mark.parametrize("text, message", ERRORS)
def test_errors_name_file_and_key(tmp_path, text, message):
    path = tmp_path / "x.yaml"
    path.write_text(text + "\n")
    with pytest.raises(E.EvaluatorError) as info:
        E.load_evaluator(path)
    assert str(info.value) == f"{path}: {message}"
    assert "\n" not in str(info.value)


def test_errors_of_files_and_sources(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("features:\n  holes: [1,\n")
    with pytest.raises(E.EvaluatorError, match=r"^.*bad\.yaml: invalid YAML: line 3, column 1: "):
        E.load_evaluator(path)
    path.write_text("")
    with pytest.raises(E.EvaluatorError) as info:
        E.load_evaluator(path)
    assert str(info.value) == f"{path}: empty file"
    path.write_text("- 1\n- 2\n")
    with pytest.raises(E.EvaluatorError) as info:
        E.load_evaluator(path)
    assert str(info.value) == f"{path}: expected a mapping with keys name, description, features, tie_break, got [1, 2]"
    missing = tmp_path / "none.yaml"
    with pytest.raises(E.EvaluatorError) as info:
        E.load_evaluator(missing)
    assert str(info.value) == f"{missing}: file not found"
    with pytest.raises(E.EvaluatorError) as info:
        E.load_evaluator("pierre")
    assert str(info.value) == f"pierre: no such file or preset (presets: {', '.join(E.preset_names())})"
    with pytest.raises(E.EvaluatorError) as info:
        E.from_dict({"features": {"holse": 1}})
    assert str(info.value) == f"<inline>: features.holse: unknown feature (did you mean 'holes'?) (known: {KNOWN})"
    with pytest.raises(E.EvaluatorError) as info:
        E.from_dict({"features": {"holse": 1}}, origin="runs/a/config.yaml:evaluator")
    assert str(info.value).startswith("runs/a/config.yaml:evaluator: features.holse: ")


def test_preset_errors_name_the_preset_path(tmp_path, monkeypatch):
    # A broken preset is reported under evaluators/presets/, not under an absolute path.
    import evaluators.evaluator as ev_mod
    presets = tmp_path / "evaluators" / "presets"
    presets.mkdir(parents=True)
    (presets / "x.yaml").write_text("features: {holse: 1}\n")
    monkeypatch.setattr(ev_mod, "PRESETS_DIR", presets)
    with pytest.raises(E.EvaluatorError) as info:
        ev_mod.load_evaluator("x")
    assert str(info.value) == f"evaluators/presets/x.yaml: features.holse: unknown feature (did you mean 'holes'?) (known: {KNOWN})"


def test_errors_are_value_errors():
    assert issubclass(E.EvaluatorError, ValueError)


# ---------------------------------------------------------------------------------------------
# The Evaluator value


def test_round_trip():
    for name in E.preset_names():
        ev = E.load_evaluator(name)
        data = ev.to_dict()
        assert E.from_dict(data) == ev
        assert E.from_dict(yaml.safe_load(ev.to_yaml())) == ev
        assert pickle.loads(pickle.dumps(ev)) == ev
    data = E.load_evaluator("lecture_v1").to_dict()
    assert data["features"]["covered_holes"] == {"weight": 1.0, "delta": True, "table": [[-1e9, 20.0], [0.0, 0.0]]}
    assert E.load_evaluator("pierre_dellacherie").to_dict()["features"]["holes"] == -79.0


def test_with_weights():
    pd = E.load_evaluator("pierre_dellacherie")
    tuned = pd.with_weights({"holes": -100, "wells": 0.5})
    assert tuned.weights["holes"].weight == -100 and tuned.weights["wells"].weight == 0.5
    assert pd.weights["holes"].weight == -79                  # the original is unchanged
    assert tuned.spec.weights[index("holes")] == -100
    assert (tuned.name, tuned.tie_break, list(tuned.weights)) == (pd.name, pd.tie_break, list(pd.weights))
    # Delta and table are kept; an alias reaches the feature listed under its other name.
    v1 = E.load_evaluator("lecture_v1").with_weights({"covered_holes": 3})
    assert v1.weights["covered_holes"] == FeatureTerm(3.0, True, ((-1e9, 20.0), (0.0, 0.0)))
    chys = E.load_evaluator("chys_quality").with_weights({"holes": -1})
    assert list(chys.weights) == ["occupied_cells", "interior_row_transitions", "covered_empty_cells"]
    assert chys.weights["covered_empty_cells"].weight == -1
    # A new feature is added as a plain term.
    assert pd.with_weights({"bumpiness": -2}).weights["bumpiness"] == FeatureTerm(-2.0)
    with pytest.raises(E.EvaluatorError, match="^with_weights: holse: unknown feature"):
        pd.with_weights({"holse": 1})
    with pytest.raises(E.EvaluatorError, match="^with_weights: holes: weight must be a finite number"):
        pd.with_weights({"holes": True})


def test_spec_arrays():
    ev = E.load_evaluator("lecture_v2")
    spec = ev.spec
    kind, w, active, delta, tx, ty, tlen = (spec.kind, spec.weights, spec.active, spec.delta, spec.table_x,
                                            spec.table_y, spec.table_len)
    assert kind.digest == registry.digest() and kind.tie == "none"
    # the layout: the weighed features in slot order, each plain, delta or through a table
    terms = {name: (registry.index(name), t.delta, t.table is not None) for name, t in ev.weights.items()}
    assert kind.layout == tuple(sorted(registry.Term(*t) for t in terms.values()))
    assert kind == registry.kind(None, [registry.Term(*t) for t in reversed(list(terms.values()))])
    assert kind != registry.kind(None)
    pd = E.load_evaluator("pierre_dellacherie")
    assert pd.spec.kind == registry.kind("pd_priority", pd.spec.kind.layout)
    assert pd.with_weights({"holes": -1}).spec.kind == pd.spec.kind        # new weights: the same kernels
    assert pd.with_weights({"bumpiness": -1}).spec.kind != pd.spec.kind    # another feature: its own
    assert pickle.loads(pickle.dumps(kind)) == kind
    with pytest.raises(FeatureError, match="at most once"):
        registry.kind(None, [registry.Term(1, False, False), registry.Term(1, True, False)])
    n = len(registry.names())
    assert (w.shape, active.shape, delta.shape, tlen.shape) == ((n,), (n,), (n,), (n,))
    assert tx.shape == ty.shape == (n, 4)
    assert (w.dtype, active.dtype, delta.dtype, tx.dtype, tlen.dtype) == (np.float64, np.bool_, np.bool_, np.float64, np.int64)
    i = index("lines_cleared")
    assert (active[i], delta[i], tlen[i], list(tx[i]), list(ty[i])) == (True, False, 4, [1, 2, 3, 4], [0, 100, 500, 1000])
    assert active.sum() == 4 and not active[index("wells")]
    assert ev.spec is ev.spec                                   # cached


def test_an_evaluator_values_a_board_alone_without_placement_features_or_deltas():
    """`EvaluatorSpec.by_board`: what lets the segment search merge only its best-valued children."""
    assert E.load_evaluator("transitions").spec.by_board  # row and column transitions
    assert not E.load_evaluator("dellacherie").spec.by_board  # landing height, eroded cells
    assert E.from_dict({"name": "t", "features": {"holes": -1}}).spec.by_board
    assert not E.from_dict({"name": "t", "features": {"holes": {"weight": -1, "delta": True}}}).spec.by_board
