"""The feature kernels (evaluators/features/) on hand-drawn boards, and against slow per-cell
reference computations on random boards. Features are reached by name through the registry
(`evaluators.registry`): ``measure`` for a board feature, the kernel itself on a `Placement` for a
placement feature, the generated ``feature_vector`` for all of them at once."""

from collections import deque

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numba import njit

from engine.board import count_and_clear, from_strings, place
from engine.rules import CLASSIC, GEEK
from evaluators import FeatureError, Placement, feature_vector, load_evaluator, registry
from evaluators.features.literature import landing_height_zero_based
from evaluators.features.placement import eroded_cells, landing_height

I_VERTICAL = GEEK.cells[0, 0]    # (0,0) (0,-1) (0,-2) (0,1)
I_FLAT = GEEK.cells[0, 1]        # (0,0) (1,0) (2,0) (-1,0)

# A 10 x 20 board; only the six bottom rows hold cells (y = 14..19):
#        x 0123456789
BOARD_B = """
y14:     ......#...
y15:     .##...#...
y16:     .#....###.
y17:     .#.#..#..#
y18:     ##.#.###.#
y19:     ####.#####
"""


def board_from(text, width=10, height=20):
    """``from_strings`` on rows written after a ``label:`` prefix."""
    rows = [line.split(":")[-1].strip() for line in text.strip("\n").split("\n") if line.strip()]
    return from_strings(rows, width, height)


B = board_from(BOARD_B)

#: the per-column features (Bertsekas and Tsitsiklis's), columns 0..15
COLUMN_FEATURES = tuple(f"column_height_{x}" for x in range(16)) + tuple(f"column_height_diff_{x}" for x in range(15))
#: the built-in board features (a test may register more for a while: these are the ones with hand values)
BUILTIN = ("row_transitions", "interior_row_transitions", "column_transitions", "occupied_cells",
           "occupied_rows", "buried_cells", "wells", "rows_with_holes", "holes", "open_holes", "covered_holes",
           "aggregate_height", "max_height", "bumpiness", "platforms", "steps_up_1", "steps_up_2",
           "steps_up_3plus", "steps_down_1", "steps_down_2", "steps_down_3plus", "wells_empty_below",
           "hole_depth", "constant", "pattern_diversity") + COLUMN_FEATURES
PLACEMENT = ("landing_height", "eroded_cells", "lines_cleared", "points_gained", "landing_height_zero_based")


def measure(name, board, width=10):
    return registry.measure(name, board, width)


def board_features():
    """The registered board features, in slot order."""
    return [n for n in registry.names() if not registry.is_placement(n)]


def placement(parent, locked, board, cells, x, y, lines=0, points=0, width=10):
    u16 = lambda b: np.ascontiguousarray(b, np.uint16)  # noqa: E731
    return Placement(u16(parent), u16(locked), u16(board), np.ascontiguousarray(cells, np.int64), x, y, lines,
                     points, width)


@njit(cache=True)
def _vector(p, spec, out):
    feature_vector(p, spec, out)


def vector(p):
    """`feature_vector` of ``p`` under the registry as it is now, as {name: value}."""
    spec = load_evaluator({"features": {"holes": 1}}).spec
    out = np.zeros(len(registry.names()))
    _vector(p, spec, out)
    return dict(zip(registry.names(), out.tolist()))

# By hand, per column x (top row -> column height 20 - y_top; holes; buried cells):
#   x:       0   1   2   3   4   5   6   7   8   9
#   top y:  18  15  15  17   -  18  14  16  16  17
#   height:  2   5   5   3   0   2   6   4   4   3
#   holes:   0   0   3   0   0   0   0   1   2   0   (col 2: y16-18; col 7: y17; col 8: y17-18)
#   buried:  0   0   1   0   0   0   0   1   1   0   (the cell just above each hole run)
EXPECTED_B = {
    "occupied_cells": 28,                 # 1 + 3 + 4 + 4 + 7 + 9
    "occupied_rows": 6,
    "aggregate_height": 34,               # 2+5+5+3+0+2+6+4+4+3
    "max_height": 6,
    "bumpiness": 17,                      # 3+0+2+3+2+4+2+0+1
    # pairs (h[x], h[x+1]): (2,5) up3+, (5,5) flat, (5,3) down2, (3,0) down3+, (0,2) up2,
    # (2,6) up3+, (6,4) down2, (4,4) flat, (4,3) down1
    "platforms": 2, "steps_up_1": 0, "steps_up_2": 1, "steps_up_3plus": 2,
    "steps_down_1": 1, "steps_down_2": 2, "steps_down_3plus": 1,
    "pattern_diversity": 4,               # of -2..2 the differences 0, -2, +2, -1 occur (+1 does not)
    "holes": 6,
    "rows_with_holes": 3,                 # y16 (col 2), y17 (cols 2, 7, 8), y18 (cols 2, 8)
    # col 2's holes reach (3, 16), open to the sky (column 3 starts at y17): open. (7,17),
    # (8,17), (8,18) are walled in by (6,17), (7,16), (8,16), (9,17), (7,18), (9,18), (8,19).
    "open_holes": 3,
    "covered_holes": 3,
    "buried_cells": 3,
    # walls counted: 14 empty rows x 2 = 28, then y14..y19: 4 + 6 + 6 + 8 + 6 + 2 = 32
    "row_transitions": 60,
    # walls not counted, y14..y19: 2 + 4 + 4 + 7 + 6 + 2
    "interior_row_transitions": 25,
    # 1 per column, 3 for columns 2, 7 and 8 (cells over holes): 7 x 1 + 3 x 3
    "column_transitions": 16,
    # well cells: (0,15) (0,16) (0,17) | (2,17) (2,18) | (4,18) (4,19) | (8,18) | (9,16)
    # runs 3, 2, 2, 1, 1 -> 6 + 3 + 3 + 1 + 1
    "wells": 14,
    # each well cell 1 + the empty cells below it: (0,15) 3, (0,16) 2, (0,17) 1 | (2,17) 2 (over
    # (2,18)), (2,18) 1 | (4,18) 2 (over (4,19), then the floor), (4,19) 1 | (8,18) 1 | (9,16) 1; no
    # well cell has a non-well empty cell below it here, so this equals wells (see the next test)
    "wells_empty_below": 14,
    # occupied runs sitting on an empty cell: (2,15) on (2,16); (7,16) on (7,17); (8,16) on (8,17)
    "hole_depth": 3,
    "constant": 1,
    **{f"column_height_{x}": h for x, h in enumerate((2, 5, 5, 3, 0, 2, 6, 4, 4, 3, 0, 0, 0, 0, 0, 0))},
    # |h[x] - h[x + 1]| for x = 0..8; no column 10 on this board: 0 from x = 9 on
    **{f"column_height_diff_{x}": d for x, d in enumerate((3, 0, 2, 3, 2, 4, 2, 0, 1, 0, 0, 0, 0, 0, 0))},
}


@pytest.mark.parametrize("name", sorted(EXPECTED_B))
def test_board_b(name):
    assert measure(name, B) == EXPECTED_B[name]


def test_every_board_feature_has_a_hand_value():
    assert set(EXPECTED_B) == set(BUILTIN)
    assert set(BUILTIN) <= set(board_features())
    assert set(PLACEMENT) <= set(registry.names())
    assert all(registry.is_placement(n) for n in PLACEMENT) and not any(registry.is_placement(n) for n in BUILTIN)


def test_empty_board():
    empty = np.zeros(20, np.uint16)
    expected = dict.fromkeys(BUILTIN, 0)
    expected.update(row_transitions=40,        # 20 empty rows, 2 each (the two walls)
                    column_transitions=10,     # each empty column meets the floor once
                    platforms=9,               # all 9 neighbouring pairs at height 0
                    pattern_diversity=1,       # the difference 0 alone
                    constant=1)
    assert {n: measure(n, empty) for n in BUILTIN} == expected


def test_flood_fill_goes_back_up():
    # Holes (2,4), (3,3), (4,3), (3,4), (4,4): (3,3) and (4,3) are reached only by going down
    # column 1, right along row 4, and back up. All five are open; none is covered.
    board = from_strings("""
        #.####
        #.#..#
        #....#
        ######
    """, width=6, height=6)
    assert measure("holes", board, 6) == 5
    assert measure("open_holes", board, 6) == 5
    assert measure("covered_holes", board, 6) == 0
    # Closing the top of column 1 closes the whole pocket: five covered holes, plus (1,3), (1,4)
    # now holes too.
    closed = board.copy()
    closed[2] |= 1 << 1
    assert tuple(measure(n, closed, 6) for n in ("holes", "open_holes", "covered_holes")) == (7, 0, 7)


def test_full_rows_count_for_transitions_and_wells():
    # A full row has no interior transition and no PD row transition (walls are occupied too); the
    # empty cell at (9,18) under a full row is a hole, a well cell (wall right, (8,18) left) and
    # leaves the cell above it buried.
    board = from_strings("##########\n#########.\n##########", 10, 20)
    assert measure("interior_row_transitions", board) == 1          # row 18: the pair (8, 9)
    assert measure("row_transitions", board) == 17 * 2 + 0 + 2 + 0  # row 18: (8,9) and (9,wall)
    assert measure("holes", board) == 1
    assert measure("covered_holes", board) == 1
    assert measure("wells", board) == 1
    assert measure("buried_cells", board) == 1
    assert measure("column_transitions", board) == 9 + 3           # column 9: sky->#, #->., .->#


def test_classic_board_12_wide():
    # 12 columns, 26 rows (the classic preset), three rows at the bottom:
    #   y23  #..........#
    #   y24  ##.#....####
    #   y25  ####.#######
    board = from_strings("#..........#\n##.#....####\n####.#######", CLASSIC.width, CLASSIC.height)
    w = CLASSIC.width
    # heights 3 2 1 2 0 1 1 1 2 2 2 3
    assert measure("aggregate_height", board, w) == 20
    assert measure("max_height", board, w) == 3
    assert measure("bumpiness", board, w) == 8                          # 1+1+1+2+1+0+0+1+0+0+1
    assert measure("platforms", board, w) == 4                          # (5,6) (6,7) (8,9) (9,10)
    assert measure("pattern_diversity", board, w) == 4                  # -2, -1, 0, +1 occur; +2 does not
    assert measure("holes", board, w) == 0
    assert measure("wells", board, w) == 2                              # (2,24) and (4,25), runs of 1
    assert measure("row_transitions", board, w) == 23 * 2 + 2 + 4 + 2   # 23 empty rows, then y23..y25
    assert measure("interior_row_transitions", board, w) == 2 + 4 + 2
    assert measure("column_transitions", board, w) == 12                # no holes: one per column
    assert measure("occupied_cells", board, w) == 2 + 7 + 11
    assert measure("occupied_rows", board, w) == 3


def test_landing_height():
    empty = np.zeros(20, np.uint16)

    def landing(cells, y):
        return landing_height(placement(empty, empty, empty, cells, 4, y))

    assert landing(I_FLAT, 19) == 1.0        # row 19: ((20-19) + (20-19)) / 2
    assert landing(I_VERTICAL, 18) == 2.5    # rows 16..19: (4 + 1) / 2
    assert landing(I_VERTICAL, 10) == 10.5   # rows 8..11: (12 + 9) / 2


def test_eroded_cells():
    # Two rows missing column 9; a vertical I at x = 9 (rows 16..19) fills both: 2 rows x 2 cells.
    parent = from_strings("#########.\n#########.", 10, 20)
    locked = parent.copy()
    place(locked, I_VERTICAL, 9, 18)
    cleared = locked.copy()
    _, lines, _ = count_and_clear(cleared, GEEK.full_row)
    assert lines == 2
    assert eroded_cells(placement(parent, locked, cleared, I_VERTICAL, 9, 18, lines)) == 4
    # No clear, no erosion.
    assert eroded_cells(placement(parent, parent, parent, I_VERTICAL, 9, 18, 0)) == 0


# MdpTetris's own example for its feature 6 (the docstring of get_well_sums_dellacherie), 8 wide,
# the well cells marked o:
#   ........        ........
#   ........        ........
#   ...X....        ...X....
#   ...XX...        ...XX...
#   .X.XX...        oXoXX...
#   .XXXXX.X        oXXXXXoX
#   .XXXXX.X        oXXXXXoX
#   XXXXX..X        XXXXX..X
#   ...XXX.X        ...XXXoX
#   X.X..X.X        XoX..XoX
MDP_WELLS = from_strings("""
    ........
    ........
    ...X....
    ...XX...
    .X.XX...
    .XXXXX.X
    .XXXXX.X
    XXXXX..X
    ...XXX.X
    X.X..X.X
""", width=8, height=10)


def test_wells_empty_below_on_mdptetris_example():
    # column 0: 3 + 2 + 1; columns 1 and 2: 1 each; column 6: its two upper well cells have 4 and 3
    # empty cells below them (the empty (6, 7) between them and the lower two is no well cell: its
    # left neighbour is empty too), the lower two 2 and 1: 5 + 4 + 2 + 1. MdpTetris says 20.
    assert measure("wells_empty_below", MDP_WELLS, 8) == 6 + 1 + 1 + 12
    # runs of well cells only: 6 + 1 + 1 + (1 + 2) + (1 + 2)
    assert measure("wells", MDP_WELLS, 8) == 14
    # a plain well of depth 3 under no cover: both give 1 + 2 + 3
    well = from_strings("#.#\n#.#\n#.#", width=3, height=4)
    assert measure("wells_empty_below", well, 3) == measure("wells", well, 3) == 6
    # well cells (1, 1) and (3, 1); (1, 2) and (1, 3) are no well cells (their left neighbours are
    # empty) but lie below (1, 1): it counts 1 + 2, (3, 1) (on (3, 2)) 1, against wells' 1 + 1
    shaft = from_strings("....\n#.#.\n...#\n...#", width=4, height=4)
    assert measure("wells_empty_below", shaft, 4) == 3 + 1
    assert measure("wells", shaft, 4) == 1 + 1


def test_hole_depth():
    # Per column of MDP_WELLS, from the floor up, the occupied runs that sit on an empty cell:
    # x0: X . X . . -> the run (0,7): 1;  x1: . . X X X X . -> 4;  x2: X . X X X . -> 3;
    # x3: . X X X X X X X -> 7;  x4: . X X X X X . -> 6;  x5: X X . X X . -> 2;  x6: none;
    # x7: X X X X X on the floor -> 0.
    assert measure("hole_depth", MDP_WELLS, 8) == 1 + 4 + 3 + 7 + 6 + 2
    # the notes' column E, F, E, F, F (from the floor up): the first F (over the floor's empty cell) 1,
    # the top two (over the second empty cell) 2: 3, where counting every cell above each hole gives 5
    column = from_strings("#\n#\n.\n#\n.", width=1, height=5)
    assert measure("hole_depth", column, 1) == 3
    assert measure("holes", column, 1) == 2
    assert measure("hole_depth", from_strings("#\n#", width=1, height=4), 1) == 0   # on the floor: no hole


def test_landing_height_zero_based():
    empty = np.zeros(20, np.uint16)

    def landing(cells, y):
        p = placement(empty, empty, empty, cells, 4, y)
        assert landing_height_zero_based(p) == landing_height(p) - 1
        return landing_height_zero_based(p)

    # MdpTetris's examples: a flat I on the floor 0, an O on the floor 0.5, a vertical I 1.5
    assert landing(I_FLAT, 19) == 0.0
    assert landing(GEEK.cells[4, 0], 19) == 0.5       # the O's cells are rows 18 and 19
    assert landing(I_VERTICAL, 18) == 1.5            # rows 16..19
    assert landing(I_VERTICAL, 10) == 9.5            # rows 8..11: bottom row 8 from the floor, + 1.5
    assert landing(I_FLAT, -1) == 20.0               # one row above a 20-row board (an overflow)


def test_feature_vector_by_name():
    # Placement features from the placement; board features from ``board`` (the board after the
    # clear), each equal to its own kernel. Slots are looked up by name, never by position.
    got = vector(placement(B, B, B, I_FLAT, 4, 13, 3, 77))
    assert got["landing_height"] == 7.0
    assert got["lines_cleared"] == 3
    assert got["points_gained"] == 77
    assert got["eroded_cells"] == 0                 # no full row in B
    for name in BUILTIN:
        assert got[name] == EXPECTED_B[name], name
    # board features read ``board`` only: a different parent and locked board change nothing
    other = vector(placement(np.zeros(20, np.uint16), np.zeros(20, np.uint16), B, I_FLAT, 4, 13, 3, 77))
    assert {n: other[n] for n in BUILTIN} == {n: got[n] for n in BUILTIN}


def test_registry():
    names = registry.names()
    assert len(set(names)) == len(names)
    assert set(BUILTIN) | set(PLACEMENT) <= set(names)
    assert registry.aliases() == {"covered_empty_cells": "holes"}
    assert registry.canonical("covered_empty_cells") == "holes"
    assert registry.index("covered_empty_cells") == registry.index("holes")
    assert [registry.index(n) for n in names] == list(range(len(names)))
    assert registry.known_names() == sorted(set(names) | {"covered_empty_cells"})
    # the docs' table: one row per feature in slot order (kind, one-line description), then the alias
    rows = registry.table().splitlines()
    assert rows[:2] == ["| feature | kind | what it measures |", "|---|---|---|"]
    assert [r.split("`")[1] for r in rows[2:2 + len(names)]] == list(names)
    assert rows[2 + len(names):] == ["| `covered_empty_cells` | alias | the same kernel and weight slot as `holes` |"]
    for row, name in zip(rows[2:], names):
        kind, doc = row.split(" | ")[1:3]
        assert kind == ("placement" if registry.is_placement(name) else "board")
        assert doc and "\n" not in doc
    assert registry.get("lines_cleared").doc == "Rows cleared by the lock, 0..4."
    with pytest.raises(FeatureError, match="unknown feature 'holse'"):
        registry.index("holse")
    with pytest.raises(FeatureError, match="landing_height is a placement feature"):
        registry.measure("landing_height", B, 10)


# ---------------------------------------------------------------------------------------------
# Slow, obvious reference computations on a grid of booleans (grid[y][x], y = 0 at the top).


def grid_of(board, width):
    return [[bool((int(r) >> x) & 1) for x in range(width)] for r in board]


def ref_heights(g):
    height, width = len(g), len(g[0])
    out = []
    for x in range(width):
        tops = [y for y in range(height) if g[y][x]]
        out.append(height - tops[0] if tops else 0)
    return out


def ref_holes_mask(g):
    height, width = len(g), len(g[0])
    return [[not g[y][x] and any(g[k][x] for k in range(y)) for x in range(width)] for y in range(height)]


def ref_open_mask(g):
    """Empty cells connected (4-neighbourhood) to an empty cell with nothing above it."""
    height, width = len(g), len(g[0])
    seen = [[False] * width for _ in range(height)]
    todo = deque()
    for x in range(width):
        for y in range(height):
            if g[y][x]:
                break
            seen[y][x] = True
            todo.append((x, y))
    while todo:
        x, y = todo.popleft()
        for nx, ny in ((x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)):
            if 0 <= nx < width and 0 <= ny < height and not g[ny][nx] and not seen[ny][nx]:
                seen[ny][nx] = True
                todo.append((nx, ny))
    return seen


def ref_features(g):
    height, width = len(g), len(g[0])
    h = ref_heights(g)
    holes = ref_holes_mask(g)
    open_ = ref_open_mask(g)
    out = {}
    out["occupied_cells"] = sum(map(sum, g))
    out["occupied_rows"] = sum(any(row) for row in g)
    out["aggregate_height"] = sum(h)
    out["max_height"] = max(h)
    diffs = [h[x + 1] - h[x] for x in range(width - 1)]
    out["bumpiness"] = sum(abs(d) for d in diffs)
    out["platforms"] = sum(d == 0 for d in diffs)
    out["steps_up_1"] = sum(d == 1 for d in diffs)
    out["steps_up_2"] = sum(d == 2 for d in diffs)
    out["steps_up_3plus"] = sum(d >= 3 for d in diffs)
    out["steps_down_1"] = sum(d == -1 for d in diffs)
    out["steps_down_2"] = sum(d == -2 for d in diffs)
    out["steps_down_3plus"] = sum(d <= -3 for d in diffs)
    out["pattern_diversity"] = len(set(diffs) & {-2, -1, 0, 1, 2})
    out["holes"] = sum(map(sum, holes))
    out["rows_with_holes"] = sum(any(row) for row in holes)
    out["open_holes"] = sum(holes[y][x] and open_[y][x] for y in range(height) for x in range(width))
    out["covered_holes"] = out["holes"] - out["open_holes"]
    out["buried_cells"] = sum(g[y][x] and any(not g[k][x] for k in range(y + 1, height))
                              for y in range(height) for x in range(width))
    out["row_transitions"] = sum(
        sum(a != b for a, b in zip([True] + row, row + [True])) for row in g)
    out["interior_row_transitions"] = sum(sum(row[x] != row[x + 1] for x in range(width - 1)) for row in g)
    out["column_transitions"] = sum(
        sum(a != b for a, b in zip([False] + col, col + [True]))
        for col in ([g[y][x] for y in range(height)] for x in range(width)))
    wells = 0
    for x in range(width):
        run = 0
        for y in range(height):
            left = x == 0 or g[y][x - 1]
            right = x == width - 1 or g[y][x + 1]
            if not g[y][x] and left and right:
                run += 1
                wells += run          # the k-th cell of a run adds k: 1 + 2 + ... + k in all
            else:
                run = 0
    out["wells"] = wells
    sums = 0  # MdpTetris's feature 6: each well cell, 1 + the empty cells directly below it
    for x in range(width):
        for y in range(height):
            left = x == 0 or g[y][x - 1]
            right = x == width - 1 or g[y][x + 1]
            if not g[y][x] and left and right:
                k = y
                while k < height and not g[k][x]:
                    sums += 1
                    k += 1
    out["wells_empty_below"] = sums
    depth = 0  # occupied cells whose unbroken occupied run downwards ends on an empty cell
    for x in range(width):
        for y in range(height):
            k = y
            while k < height and g[k][x]:
                k += 1
            if g[y][x] and k < height:
                depth += 1
    out["hole_depth"] = depth
    out["constant"] = 1
    for x in range(16):
        out[f"column_height_{x}"] = h[x] if x < width else 0
    for x in range(15):
        out[f"column_height_diff_{x}"] = abs(h[x] - h[x + 1]) if x + 1 < width else 0
    return out


@st.composite
def boards(draw):
    width = draw(st.sampled_from([4, 6, 10, 12, 16]))
    height = draw(st.integers(4, 26))
    full = (1 << width) - 1
    empty_top = draw(st.integers(0, height))
    rows = []
    for y in range(height):
        if y < empty_top:
            rows.append(0)
            continue
        a, b = draw(st.integers(0, full)), draw(st.integers(0, full))
        mix = draw(st.sampled_from(["one", "dense", "sparse", "full"]))
        rows.append({"one": a, "dense": a | b, "sparse": a & b, "full": full}[mix])
    return np.array(rows, dtype=np.uint16), width


@settings(derandomize=True, deadline=None, max_examples=100)
@given(boards())
def test_bit_parallel_features_match_per_cell_reference(case):
    board, width = case
    expected = ref_features(grid_of(board, width))
    got = {name: measure(name, board, width) for name in BUILTIN}
    assert got == expected
    # The generated kernel, which reaches every feature by its slot, agrees with the named kernels.
    cells = GEEK.cells[0, 0]
    by_slot = vector(placement(board, board, board, cells, 0, 0, 0, 0, width))
    assert {name: by_slot[name] for name in BUILTIN} == expected
