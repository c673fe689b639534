"""A feature is declared in one place: one decorated numba function with a docstring. Declared
here, in a test file, it is a registered name, a row of the docs' table, a key an evaluator YAML
may use, a term of the evaluator's value, and a term the policies' kernels sum; unregistered, it is
gone again. Registration refuses what it cannot use, with a message naming the feature."""

import numpy as np
import pytest
import yaml

from engine import GEEK, GameState, from_strings, lock_copy, replay
from engine.board import popcount
from evaluators import EvaluatorError, FeatureError, board_feature, kernels, load_evaluator, placement_feature, registry
from solver import SolverConfig, solve

NAME = "top_rows_cells"
DOC = "Occupied cells in the four rows from the first occupied row down (fewer when the floor comes first)."

# tests/test_features.py's board B (10 x 20, rows y14..y19; 6 holes); cells per row on the right.
# Its first occupied row is y14: the top four rows hold 1 + 3 + 4 + 4 = 12 cells.
BOARD = from_strings("""
    ......#...
    .##...#...
    .#....###.
    .#.#..#..#
    ##.#.###.#
    ####.#####
""")                     # 1, 3, 4, 4, 7, 9
TOP_ROWS_CELLS = 12


@pytest.fixture
def registry_restored():
    """Whatever a test registers is unregistered afterwards, even when the test fails."""
    before = registry.names()
    try:
        yield
    finally:
        for name in registry.names():
            if name not in before:
                registry.unregister(name)
        assert registry.names() == before


@pytest.fixture
def top_rows_cells(registry_restored):
    """The feature, declared as any feature is: one decorated numba function with a docstring."""

    @board_feature
    def top_rows_cells(board, width, top):
        """Occupied cells in the four rows from the first occupied row down (fewer when the floor
        comes first).

        This second paragraph is the kernel's own documentation, not the feature's description."""
        n = 0
        for y in range(top, min(top + 4, board.shape[0])):
            n += popcount(np.int64(board[y]))
        return n

    yield top_rows_cells
    assert NAME in registry.names()


def test_the_board_is_drawn_right():
    assert [int(popcount(np.int64(r))) for r in BOARD[14:]] == [1, 3, 4, 4, 7, 9]
    assert not BOARD[:14].any()


def test_a_feature_declared_in_a_test_file_is_everywhere(top_rows_cells, tmp_path):
    # a registered name, in the last slot (registration order is slot order)
    names = registry.names()
    assert names[-1] == NAME and registry.index(NAME) == len(names) - 1 and not registry.is_placement(NAME)
    # a row of the docs' table, described by its docstring's first paragraph
    rows = registry.table().splitlines()
    assert f"| `{NAME}` | board | {DOC} |" in rows
    assert "second paragraph" not in registry.table()
    # measured by name
    assert registry.measure(NAME, BOARD, 10) == TOP_ROWS_CELLS
    assert registry.measure(NAME, np.zeros(20, np.uint16), 10) == 0
    assert registry.measure(NAME, from_strings("##########\n.#########"), 10) == 19  # two rows only
    # an evaluator YAML may use it, and its value has the feature's term
    path = tmp_path / "top.yaml"
    path.write_text(yaml.safe_dump({"features": {NAME: 2.5, "holes": -1}}))
    ev = load_evaluator(path)
    assert ev.spec.active[registry.index(NAME)] and ev.spec.weights[registry.index(NAME)] == 2.5
    flat = GEEK.cells[0, 1]
    # parent and child the same board: 2.5 x 12 - 6 holes
    assert ev.value(BOARD, BOARD, BOARD, flat, 4, 13, 0, 0, 10) == 2.5 * TOP_ROWS_CELLS - 6
    # a vertical I at x = 4 (rows 16..19) completes row 19 only (32 points); after the clear, rows
    # y15..y19 read ......#... / .##...#... / .#..#.###. / .#.##.#..# / ##.#####.#: the top four rows
    # hold 1 + 3 + 5 + 5 = 14 cells, and 6 holes (tests/test_evaluators.py's hand count)
    locked = np.zeros(20, np.uint16)
    cleared = np.zeros(20, np.uint16)
    vertical = GEEK.cells[0, 0]
    lock = lock_copy(BOARD, GEEK.kernel, 0, 0, 4, 18, 1, locked, cleared)
    assert (lock.lines, lock.points) == (1, 32)
    assert registry.measure(NAME, cleared, 10) == 14
    assert ev.value(BOARD, locked, cleared, vertical, 4, 18, lock.lines, lock.points, 10) == 2.5 * 14 - 6
    delta = load_evaluator({"features": {NAME: {"weight": 1, "delta": True}}})
    assert delta.value(BOARD, locked, cleared, vertical, 4, 18, lock.lines, lock.points, 10) == 14 - 12


def test_a_policy_plays_with_a_feature_declared_in_a_test_file(top_rows_cells, tmp_path):
    path = tmp_path / "top.yaml"
    spec = {"features": {NAME: -3, "holes": -40, "aggregate_height": -2, "lines_cleared": 50}}
    path.write_text(yaml.safe_dump(spec))
    r = solve(SolverConfig(policy="greedy", pieces=30, evaluator=str(path)))
    assert (r.pieces, r.stop, r.end) == (30, "done", "record_end")
    verdict = replay(r.record)
    assert (verdict.score, verdict.bricks, verdict.end) == (r.score, 30, "record_end")
    assert list(verdict.score_by_piece[1:]) == list(r.score_by_step)
    # every choice is the best by the evaluator, the new feature's term included: re-valued from
    # Python, piece by piece, over every placement; on some boards the choice an evaluator blind to
    # the feature makes (the first of its best, no tie-break) is strictly worse. Blind: the feature's
    # weight 0, which keeps the evaluator's layout, so nothing is compiled for it
    ev = load_evaluator(path)
    without = {**spec["features"], NAME: 0}
    blind = load_evaluator({"features": without})
    g = GameState.new(GEEK, pieces=30)
    worse = 0
    for t in range(30):
        values, plain = {}, {}
        for p in g.placements():
            x, y, s = (int(v) for v in p)
            locked = np.zeros(20, np.uint16)
            cleared = np.zeros(20, np.uint16)
            lock = lock_copy(g.board, GEEK.kernel, g.shape, s, x, y, t + 1, locked, cleared)
            if lock.over:
                continue
            args = (g.board, locked, cleared, GEEK.cells[g.shape, s], x, y, lock.lines, lock.points, 10)
            values[(x, y, s)] = ev.value(*args)
            plain[(x, y, s)] = blind.value(*args)
        chosen = tuple(int(v) for v in r.placements[t])
        assert values[chosen] == max(values.values()), f"piece {t + 1}"
        blind_choice = next(p for p, v in plain.items() if v == max(plain.values()))
        worse += values[blind_choice] < values[chosen]
        g = g.apply(chosen).state
    assert worse > 0
    other = solve(SolverConfig(policy="greedy", pieces=30, evaluator={"features": without}))
    assert other.record != r.record


def test_each_row_feature_kernel_has_a_name_of_its_own():
    # numba names a compiled function by its qualified name, argument types and a per-process
    # counter; the row features' board kernels all take (board, width, top), so one name for all
    # would let a kernel cached by one process call another feature's code in the next
    rows = [f for f in registry.FEATURES.values() if f.row is not None]
    assert len(rows) >= 6
    names = {f.kernel.py_func.__qualname__ for f in rows}
    assert len(names) == len(rows)
    assert all(f.row.py_func.__qualname__ in f.kernel.py_func.__qualname__ for f in rows)


def test_a_row_feature_is_summed_over_the_rows_and_fused(registry_restored):
    """A row feature is one function of a row and the rows above it; the evaluator computes every
    row feature it weighs in one pass (one loop in the generated kernel), with the same value as
    the feature's own board kernel."""
    from evaluators import row_feature

    @row_feature
    def wall_gaps(row, above, width):
        """Empty cells next to a wall, in every row (empty rows included: 2 each)."""
        return (1 - (row & 1)) + (1 - ((row >> (width - 1)) & 1))

    assert wall_gaps(np.int64(0b1000000001), np.int64(0), 10) == 0 and wall_gaps(np.int64(0), np.int64(0), 10) == 2
    # BOARD: 14 empty rows (28), then ......#... (2) .##...#... (2) .#....###. (2) .#.#..#..# (1)
    # ##.#.###.# (0) ####.##### (0)
    assert registry.measure("wall_gaps", BOARD, 10) == 28 + 2 + 2 + 2 + 1
    weights = {"wall_gaps": 3, "holes": -2, "occupied_rows": 5, "bumpiness": -1, "lines_cleared": 7}
    ev = load_evaluator({"features": weights})
    want = sum(w * (registry.measure(n, BOARD, 10) if n != "lines_cleared" else 1) for n, w in weights.items())
    assert ev.value(BOARD, BOARD, BOARD, GEEK.cells[0, 1], 4, 13, 1, 0, 10) == want
    text = kernels.source("evaluate", ev.spec.kind.layout)
    assert text.count("for y in range") == 1  # wall_gaps, holes and occupied_rows: one pass
    assert text.count("(board, width, top)") == 1  # bumpiness: its own board kernel, called once


def test_unregistering_removes_the_feature(registry_restored):
    @board_feature
    def full_columns(board, width, top):
        """Columns with no empty cell."""
        full = (1 << width) - 1
        for y in range(board.shape[0]):
            full &= np.int64(board[y])
        return popcount(full)

    assert "full_columns" in registry.names() and "full_columns" in registry.table()
    assert registry.measure("full_columns", from_strings("\n".join(["#.#......."] * 20)), 10) == 2
    registry.unregister("full_columns")
    assert "full_columns" not in registry.names() and "full_columns" not in registry.table()
    with pytest.raises(EvaluatorError, match=r"^<inline>: features\.full_columns: unknown feature \(known: "):
        load_evaluator({"features": {"full_columns": 1}})
    with pytest.raises(FeatureError, match="^no feature 'full_columns' is registered$"):
        registry.unregister("full_columns")


def test_registration_refuses_what_it_cannot_use(registry_restored):
    names, table = registry.names(), registry.table()

    with pytest.raises(FeatureError, match=r"^feature 'holes' is already registered \(unregister it first\)$"):
        @board_feature
        def holes(board, width, top):
            """A second holes."""
            return 0

    with pytest.raises(FeatureError, match=r"^feature 'covered_empty_cells' is already registered"):
        @board_feature(name="covered_empty_cells")  # an alias's name is taken too
        def other(board, width, top):
            """Another."""
            return 0

    with pytest.raises(FeatureError, match=r"^feature 'lines_cleared' is already registered"):
        @placement_feature
        def lines_cleared(p):
            """Placement features share the names."""
            return 0

    with pytest.raises(FeatureError, match=r"^feature 'undocumented': its kernel needs a docstring "
                                            r"\(the feature's description\)$"):
        @board_feature
        def undocumented(board, width, top):
            return 0

    with pytest.raises(FeatureError, match=r"^feature kernel .*two_arguments: a board feature \(board, width, top\) "
                                            r"takes 3 argument\(s\), got \(board, width\)$"):
        @board_feature
        def two_arguments(board, width):
            """Board features take the board, its width and its top row."""
            return 0

    with pytest.raises(FeatureError, match=r"^feature kernel .*board_like: a placement feature \(p\) takes 1 "
                                            r"argument\(s\), got \(board, width, top\)$"):
        @placement_feature
        def board_like(board, width, top):
            """Placement features take the placement only."""
            return 0

    with pytest.raises(FeatureError, match=r"^feature 'two words': a name must be an identifier$"):
        @board_feature(name="two words")
        def spaced(board, width, top):
            """A name with a space."""
            return 0

    assert registry.names() == names and registry.table() == table  # nothing was half-registered
