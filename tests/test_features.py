"""The feature kernels (evaluators/features.py) on hand-drawn boards, and against slow per-cell
reference computations on random boards."""

from collections import deque

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from engine.board import count_and_clear, from_strings, place
from engine.rules import CLASSIC, GEEK
from evaluators import features as F
from evaluators.kernel import board_feature, feature_vector

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
}


@pytest.mark.parametrize("name", sorted(EXPECTED_B))
def test_board_b(name):
    assert F.FUNCTIONS[name](B, 10) == EXPECTED_B[name]


def test_every_board_feature_has_a_hand_value():
    assert set(EXPECTED_B) == set(F.BOARD_FEATURES)


def test_empty_board():
    empty = np.zeros(20, np.uint16)
    expected = dict.fromkeys(F.BOARD_FEATURES, 0)
    expected.update(row_transitions=40,        # 20 empty rows, 2 each (the two walls)
                    column_transitions=10,     # each empty column meets the floor once
                    platforms=9)               # all 9 neighbouring pairs at height 0
    assert {n: F.FUNCTIONS[n](empty, 10) for n in F.BOARD_FEATURES} == expected


def test_flood_fill_goes_back_up():
    # Holes (2,4), (3,3), (4,3), (3,4), (4,4): (3,3) and (4,3) are reached only by going down
    # column 1, right along row 4, and back up. All five are open; none is covered.
    board = from_strings("""
        #.####
        #.#..#
        #....#
        ######
    """, width=6, height=6)
    assert F.holes(board, 6) == 5
    assert F.open_holes(board, 6) == 5
    assert F.covered_holes(board, 6) == 0
    # Closing the top of column 1 closes the whole pocket: five covered holes, plus (1,3), (1,4)
    # now holes too.
    closed = board.copy()
    closed[2] |= 1 << 1
    assert (F.holes(closed, 6), F.open_holes(closed, 6), F.covered_holes(closed, 6)) == (7, 0, 7)


def test_full_rows_count_for_transitions_and_wells():
    # A full row has no interior transition and no PD row transition (walls are occupied too); the
    # empty cell at (9,18) under a full row is a hole, a well cell (wall right, (8,18) left) and
    # leaves the cell above it buried.
    board = from_strings("##########\n#########.\n##########", 10, 20)
    assert F.interior_row_transitions(board, 10) == 1          # row 18: the pair (8, 9)
    assert F.row_transitions(board, 10) == 17 * 2 + 0 + 2 + 0  # row 18: (8,9) and (9,wall)
    assert F.holes(board, 10) == 1
    assert F.covered_holes(board, 10) == 1
    assert F.wells(board, 10) == 1
    assert F.buried_cells(board, 10) == 1
    assert F.column_transitions(board, 10) == 9 + 3           # column 9: sky->#, #->., .->#


def test_classic_board_12_wide():
    # 12 columns, 26 rows (the classic preset), three rows at the bottom:
    #   y23  #..........#
    #   y24  ##.#....####
    #   y25  ####.#######
    board = from_strings("#..........#\n##.#....####\n####.#######", CLASSIC.width, CLASSIC.height)
    w = CLASSIC.width
    # heights 3 2 1 2 0 1 1 1 2 2 2 3
    assert F.aggregate_height(board, w) == 20
    assert F.max_height(board, w) == 3
    assert F.bumpiness(board, w) == 8                          # 1+1+1+2+1+0+0+1+0+0+1
    assert F.platforms(board, w) == 4                          # (5,6) (6,7) (8,9) (9,10)
    assert F.holes(board, w) == 0
    assert F.wells(board, w) == 2                              # (2,24) and (4,25), runs of 1
    assert F.row_transitions(board, w) == 23 * 2 + 2 + 4 + 2   # 23 empty rows, then y23..y25
    assert F.interior_row_transitions(board, w) == 2 + 4 + 2
    assert F.column_transitions(board, w) == 12                # no holes: one per column
    assert F.occupied_cells(board, w) == 2 + 7 + 11
    assert F.occupied_rows(board, w) == 3


def test_landing_height():
    h = 20
    assert F.landing_height(I_FLAT, 19, h) == 1.0        # row 19: ((20-19) + (20-19)) / 2
    assert F.landing_height(I_VERTICAL, 18, h) == 2.5    # rows 16..19: (4 + 1) / 2
    assert F.landing_height(I_VERTICAL, 10, h) == 10.5   # rows 8..11: (12 + 9) / 2


def test_eroded_cells():
    # Two rows missing column 9; a vertical I at x = 9 (rows 16..19) fills both: 2 rows x 2 cells.
    parent = from_strings("#########.\n#########.", 10, 20)
    locked = parent.copy()
    place(locked, I_VERTICAL, 9, 18)
    cleared = locked.copy()
    _, lines, _ = count_and_clear(cleared, GEEK.full_row)
    assert lines == 2
    assert F.eroded_cells(locked, I_VERTICAL, 18, lines, 10) == 4
    # No clear, no erosion.
    assert F.eroded_cells(parent, I_VERTICAL, 18, 0, 10) == 0


def test_feature_vector_order():
    # Placement features first from the placement; board features from `cleared`, each equal to
    # its own kernel.
    out = np.zeros(len(F.FEATURES))
    feature_vector(B, B, B, I_FLAT, 4, 13, 3, 77, 10, out)
    assert out[F.index("landing_height")] == 7.0
    assert out[F.index("lines_cleared")] == 3
    assert out[F.index("points_gained")] == 77
    assert out[F.index("eroded_cells")] == 0                 # no full row in B
    for name in F.BOARD_FEATURES:
        assert out[F.index(name)] == EXPECTED_B[name], name


def test_registry():
    assert len(set(F.FEATURES)) == len(F.FEATURES)
    assert set(F.FUNCTIONS) == set(F.FEATURES)
    assert F.ALIASES == {"covered_empty_cells": "holes"}
    assert F.index("covered_empty_cells") == F.index("holes")
    described = F.describe()
    assert list(described)[: len(F.FEATURES)] == list(F.FEATURES)
    assert "covered_empty_cells" in described
    assert all(text and "\n" not in text for text in described.values())
    with pytest.raises(ValueError):
        F.index("holse")


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
    got = {name: F.FUNCTIONS[name](board, width) for name in F.BOARD_FEATURES}
    assert got == expected
    # The kernel's dispatch by slot agrees with the named kernels.
    assert {name: board_feature(F.index(name), board, width) for name in F.BOARD_FEATURES} == expected
