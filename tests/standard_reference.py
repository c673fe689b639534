"""Plain-Python reading of the literature's simplified game (MdpTetris, /work/notes/mdptetris.md),
for tests only: slow, obvious, and sharing no code or data with the engine.

Conventions are MdpTetris's, not the engine's: rows are numbered from the bottom (row 0 on the
floor) and a board is a list of rows, each a list of ``width`` booleans, as many rows as the stack
needs (it may grow above ``height`` while a piece overflows); columns are 1-based; an action is
(orientation, column), the column being the leftmost column of the oriented piece's box. A piece's
orientations come from its first one, drawn as in MdpTetris's piece file, each next one turned a
quarter counter-clockwise by the rule new(row j, col k) = old(row W' - 1 - k, col j), W' the new
width (the notes, section 1).
"""

from functools import cache

#: orientation 0 of each piece as the piece file draws it (top row first) and its orientation count
PIECE_FILE = {
    "I": (["X", "X", "X", "X"], 2),
    "O": (["XX", "XX"], 1),
    "T": (["X.", "XX", "X."], 4),
    "Z": ([".X", "XX", "X."], 2),
    "S": (["X.", "XX", ".X"], 2),
    "J": (["X..", "XXX"], 4),
    "L": (["XXX", "X.."], 4),
}


@cache  # the same for every call: worked out once per letter
def orientations(letter):
    """The piece's orientations: a tuple of (width, height, cells), cells a frozenset of (dx, dy),
    dy = 0 the bottom row of the box."""
    picture, count = PIECE_FILE[letter]
    h, w = len(picture), len(picture[0])
    rows = [[picture[h - 1 - j][k] == "X" for k in range(w)] for j in range(h)]  # bottom row first
    out = []
    for _ in range(count):
        out.append((w, h, frozenset((k, j) for j in range(h) for k in range(w) if rows[j][k])))
        w, h = h, w  # the new box: width = the old height
        rows = [[rows[w - 1 - k][j] for k in range(w)] for j in range(h)]
    return tuple(out)


def actions(letter, width=10):
    """Every action MdpTetris offers, in its order: orientation, then column 1 .. width - w + 1."""
    return [(o, c) for o, (w, _, _) in enumerate(orientations(letter)) for c in range(1, width - w + 2)]


def column_heights(board, width):
    """Highest occupied row + 1 per column (0 for an empty column); holes do not lower it."""
    heights = [0] * width
    for y, row in enumerate(board):
        for x in range(width):
            if row[x]:
                heights[x] = y + 1
    return heights


def landing_row(board, letter, orientation, column, width=10):
    """The row of the box's bottom where the piece, dropped straight down, comes to rest: the
    highest over its columns of (column height - the piece's lowest dy in that column)."""
    _, _, cells = orientations(letter)[orientation]
    heights = column_heights(board, width)
    lowest = {}
    for dx, dy in cells:
        lowest[dx] = min(lowest.get(dx, dy), dy)
    return max(heights[column - 1 + dx] - dy for dx, dy in lowest.items())


def drop(board, letter, orientation, column, height, clear_first, width=10):
    """One move of the simplified game. Returns a dict: ``board`` (after the move), ``lines``
    (rows removed), ``over`` (the game-over test after the move), ``landing`` (MdpTetris's landing
    height: the bottom row + (piece height - 1) / 2, before any clear), ``eroded`` (rows removed x
    the piece's cells in them), ``cells`` (the piece's cells where it rested, (column 0-based, row))."""
    w, h, shape = orientations(letter)[orientation]
    bottom = landing_row(board, letter, orientation, column, width)
    rows = [list(r) for r in board]
    while len(rows) < bottom + h:
        rows.append([False] * width)
    cells = [(column - 1 + dx, bottom + dy) for dx, dy in shape]
    for x, y in cells:
        assert not rows[y][x]
        rows[y][x] = True
    lines = 0
    eroded = 0
    if bottom + h <= height or clear_first:
        full = [y for y in range(bottom, bottom + h) if all(rows[y])]
        lines = len(full)
        eroded = lines * sum(1 for _, y in cells if y in full)
        rows = [r for y, r in enumerate(rows) if y not in full]
    while rows and not any(rows[-1]):
        rows.pop()
    return {"board": rows, "lines": lines, "over": len(rows) > height, "landing": bottom + (h - 1) / 2,
            "eroded": eroded, "cells": cells}


# ------------------------------------------------------------------------------------------------
# Features of the afterstate (section 6 of the notes), cell by cell


def grid(board, height, width):
    """``g[y][x]`` for y = 0 (the floor row) .. height - 1 (empty rows above the stack filled in)."""
    return [list(board[y]) if y < len(board) else [False] * width for y in range(height)]


def features(board, height, width=10):
    g = grid(board, height, width)
    wall = len(board)  # the lowest empty row (every row below it holds a cell)
    out = {}
    # 3: transitions along each row between the two walls (both occupied); an empty row counts 2
    out["row_transitions"] = sum(sum(a != b for a, b in zip([True] + row, row + [True])) for row in g)
    # 4: transitions up each column from an occupied floor to the empty row at the stack's top
    col_t = 0
    for x in range(width):
        column = [True] + [g[y][x] for y in range(wall)] + [False]
        col_t += sum(a != b for a, b in zip(column, column[1:]))
    out["column_transitions"] = col_t
    # 5: empty cells with an occupied cell somewhere above them in the column
    holes = [[not g[y][x] and any(g[k][x] for k in range(y + 1, height)) for x in range(width)] for y in range(height)]
    out["holes"] = sum(map(sum, holes))
    # 6: each well cell (empty, both neighbours occupied, walls occupied) in rows below the wall
    # height: 1 + the empty cells directly below it
    wells = 0
    for x in range(width):
        for y in range(wall):
            left = x == 0 or g[y][x - 1]
            right = x == width - 1 or g[y][x + 1]
            if not g[y][x] and left and right:
                k = y
                while k >= 0 and not g[k][x]:
                    wells += 1
                    k -= 1
    out["wells_empty_below"] = wells
    # -1: occupied cells in an unbroken occupied run starting directly above an empty cell
    depth = 0
    for x in range(width):
        for y in range(1, height):
            k = y
            while k >= 0 and g[k][x]:
                k -= 1
            if g[y][x] and k >= 0:
                depth += 1
    out["hole_depth"] = depth
    # -2: rows holding a hole
    out["rows_with_holes"] = sum(any(row) for row in holes)
    # Bertsekas: heights, |differences|, the wall height
    hs = column_heights(board, width)
    for x in range(width):
        out[f"column_height_{x}"] = hs[x]
    for x in range(width - 1):
        out[f"column_height_diff_{x}"] = abs(hs[x] - hs[x + 1])
    out["max_height"] = wall
    out["constant"] = 1
    # -14, pattern diversity: which of the differences -2..2 occur between neighbouring columns
    out["pattern_diversity"] = len({hs[x + 1] - hs[x] for x in range(width - 1)} & {-2, -1, 0, 1, 2})
    return out


# ------------------------------------------------------------------------------------------------
# The 1-ply player (features_get_best_action): every action in order, game-over afterstates worth
# -1e100, the first strictly better one kept, (0, 1) when none is


def best_action(board, letter, weights, height, clear_first, width=10):
    best = (0, 1)
    best_value = -1e100
    for o, c in actions(letter, width):
        move = drop(board, letter, o, c, height, clear_first, width)
        if move["over"]:
            value = -1e100
        else:
            f = features(move["board"], height, width)
            f["landing_height_zero_based"] = move["landing"]
            f["eroded_cells"] = move["eroded"]
            value = sum(w * f[name] for name, w in weights.items())
        if value - best_value > 1e-30:
            best, best_value = (o, c), value
    return best, best_value > -1e100


def play(letters, weights, height, clear_first, width=10):
    """A game of the 1-ply player on the pieces ``letters``: (rows, moves, ended, rows of the forced
    last move). When every action ends the game, MdpTetris still plays (0, 1) and counts the rows it
    removes (the last value; always 0 when nothing is cleared on an overflow)."""
    board = []
    rows = 0
    for t, letter in enumerate(letters):
        (o, c), alive = best_action(board, letter, weights, height, clear_first, width)
        move = drop(board, letter, o, c, height, clear_first, width)
        if not alive:
            return rows, t, True, move["lines"]
        rows += move["lines"]
        board = move["board"]
    return rows, len(letters), False, 0
