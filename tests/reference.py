"""Plain-Python reference implementation of the Geek Tetris rules.

Written from /work/shared/GEEK_RULES.md alone, for tests only: it is meant to
be slow, obvious and easy to check against the rules text, so that the fast
engine can be cross-checked against it.

Conventions: a board is ``board[y][x]`` (20 rows of 10 booleans, y = 0 is the
top row); a piece is (shape, state, cx, cy); cells are absolute (x, y) pairs.
"""

import re
from collections import deque

WIDTH = 10
HEIGHT = 20
MAX_PIECES = 10_000
MAX_STEPS_PER_PIECE = 100
SPAWN_X = 4
SPAWN_Y = 0

SHAPE_NAMES = "ILJTOSZ"

# Offsets (dx, dy) per shape (I, L, J, T, O, S, Z) and state 0..3, copied
# by hand from the table in GEEK_RULES.md.
_I0 = ((0, 0), (0, -1), (0, -2), (0, 1))
_I1 = ((0, 0), (1, 0), (2, 0), (-1, 0))
_O = ((0, 0), (0, -1), (1, -1), (1, 0))
_S0 = ((0, 0), (0, -1), (1, -1), (-1, 0))
_S1 = ((0, 0), (-1, 0), (-1, -1), (0, 1))
_Z0 = ((0, 0), (0, -1), (1, 0), (-1, -1))
_Z1 = ((0, 0), (0, -1), (-1, 1), (-1, 0))

SHAPE_CELLS = [
    # I
    [_I0, _I1, _I0, _I1],
    # L
    [
        ((0, 0), (0, -1), (0, -2), (1, 0)),
        ((0, 0), (1, 0), (2, 0), (0, 1)),
        ((0, 0), (-1, 0), (0, 1), (0, 2)),
        ((0, 0), (0, -1), (-1, 0), (-2, 0)),
    ],
    # J
    [
        ((0, 0), (0, -1), (0, -2), (-1, 0)),
        ((0, 0), (0, -1), (1, 0), (2, 0)),
        ((0, 0), (1, 0), (0, 1), (0, 2)),
        ((0, 0), (-1, 0), (-2, 0), (0, 1)),
    ],
    # T
    [
        ((0, 0), (1, 0), (0, 1), (-1, 0)),
        ((0, 0), (0, -1), (0, 1), (-1, 0)),
        ((0, 0), (0, -1), (1, 0), (-1, 0)),
        ((0, 0), (0, -1), (1, 0), (0, 1)),
    ],
    # O
    [_O, _O, _O, _O],
    # S
    [_S0, _S1, _S0, _S1],
    # Z
    [_Z0, _Z1, _Z0, _Z1],
]

# Score multiplier per number of full rows cleared at once.
LINE_FACTOR = (0, 1, 3, 6, 10)


# ---------------------------------------------------------------- sequence

def _shape_from_w(w):
    """Map w = v mod 29 to a shape index (weights 2, 3, 3, 4, 5, 6, 6)."""
    if w <= 1:
        return 0  # I
    if w <= 4:
        return 1  # L
    if w <= 7:
        return 2  # J
    if w <= 11:
        return 3  # T
    if w <= 16:
        return 4  # O
    if w <= 22:
        return 5  # S
    return 6  # Z


def geek_sequence(n):
    """Return the first n shape indices produced by the contest's LCG."""
    v = 12358
    shapes = []
    for _ in range(n):
        v = (v * 27073 + 17713) % 32749
        shapes.append(_shape_from_w(v % 29))
    return shapes


# ------------------------------------------------------------ board, moves

def empty_board():
    """Return a new empty board: 20 rows of 10 False cells."""
    return [[False] * WIDTH for _ in range(HEIGHT)]


def cells_of(shape, state, cx, cy):
    """Return the four absolute (x, y) cells of a piece."""
    return [(cx + dx, cy + dy) for dx, dy in SHAPE_CELLS[shape][state]]


def is_valid(board, shape, state, cx, cy):
    """True when every cell is in 0..9 horizontally, at most row 19, and
    either above the board (y < 0) or on an empty cell."""
    for dx, dy in SHAPE_CELLS[shape][state]:
        x, y = cx + dx, cy + dy
        if x < 0 or x >= WIDTH or y >= HEIGHT:
            return False
        if y >= 0 and board[y][x]:
            return False
    return True


def step(board, shape, state, cx, cy, op):
    """Try one single step ('L', 'R', 'D' or 'C'); return the new
    (state, cx, cy), or the old one unchanged if the result is invalid."""
    new_state, new_x, new_y = state, cx, cy
    if op == "L":
        new_x = cx - 1
    elif op == "R":
        new_x = cx + 1
    elif op == "D":
        new_y = cy + 1
    elif op == "C":
        new_state = (state + 1) % 4
    else:
        raise ValueError(f"unknown step {op!r}")
    if is_valid(board, shape, new_state, new_x, new_y):
        return new_state, new_x, new_y
    return state, cx, cy


def _split_op(op):
    """Split an already valid operation like 'D019' into ('D', 19)."""
    op = op.strip()
    return op[0], (int(op[1:]) if len(op) > 1 else 0)


def apply_ops(board, shape, state, ops):
    """Start at the spawn (4, 0, state), apply operations such as 'L3' or
    'C1' one single step at a time, and return the final absolute cells."""
    cx, cy = SPAWN_X, SPAWN_Y
    for op in ops:
        letter, count = _split_op(op)
        for _ in range(count):
            state, cx, cy = step(board, shape, state, cx, cy, letter)
    return cells_of(shape, state, cx, cy)


def resting_placements(board, shape, spawn_state, max_steps=MAX_STEPS_PER_PIECE):
    """Breadth-first search from the spawn over single L/R/D/C steps.

    Return {frozenset of cells: minimum steps} for every resting position
    (one more D step would be invalid) reachable in at most max_steps steps.
    Steps that would give an invalid position are not edges. Returns {} when
    the spawn position itself is invalid.
    """
    start = (spawn_state, SPAWN_X, SPAWN_Y)
    if not is_valid(board, shape, *start):
        return {}
    distance = {start: 0}
    queue = deque([start])
    result = {}
    while queue:
        position = queue.popleft()
        state, cx, cy = position
        steps = distance[position]
        if not is_valid(board, shape, state, cx, cy + 1):
            cells = frozenset(cells_of(shape, state, cx, cy))
            # BFS visits positions by increasing distance, so the first
            # time a cell set is seen is its minimum.
            if cells not in result:
                result[cells] = steps
        if steps == max_steps:
            continue
        for op in "LRDC":
            nxt = step(board, shape, state, cx, cy, op)
            if nxt != position and nxt not in distance:
                distance[nxt] = steps + 1
                queue.append(nxt)
    return result


def reachable_positions(board, shape, spawn_state, max_steps=MAX_STEPS_PER_PIECE):
    """Breadth-first search from the spawn over single L/R/D/C steps, as
    resting_placements, but return {(state, cx, cy): minimum steps} for every
    position reached in at most max_steps steps, resting or not."""
    start = (spawn_state, SPAWN_X, SPAWN_Y)
    if not is_valid(board, shape, *start):
        return {}
    distance = {start: 0}
    queue = deque([start])
    while queue:
        position = queue.popleft()
        if distance[position] == max_steps:
            continue
        for op in "LRDC":
            nxt = step(board, shape, *position, op)
            if nxt != position and nxt not in distance:
                distance[nxt] = distance[position] + 1
                queue.append(nxt)
    return distance


def lock(board, cells):
    """Place cells on a copy of the board (cells with y < 0 are dropped).

    Return (new_board, c, f, all_rows_occupied) where c is the number of
    occupied cells and f the number of full rows, both counted before
    clearing, all_rows_occupied tells whether each of the 20 rows holds at
    least one occupied cell, and new_board has the full rows removed (rows
    above move down, empty rows enter at the top).
    """
    placed = [row[:] for row in board]
    for x, y in cells:
        if y >= 0:
            placed[y][x] = True
    occupied = sum(map(sum, placed))  # a row's True cells count 1 each
    full_rows = sum(1 for row in placed if all(row))
    all_rows_occupied = all(any(row) for row in placed)
    kept = [row for row in placed if not all(row)]
    new_board = [[False] * WIDTH for _ in range(HEIGHT - len(kept))] + kept
    return new_board, occupied, full_rows, all_rows_occupied


# ---------------------------------------------------------------- records

# ASCII digits only, as in the JavaScript regex; fullmatch avoids Python's
# "$ also matches before a final newline" behaviour.
_OP_PATTERN = re.compile(r"([LRDCN])([0-9]*)")


def parse_record(text):
    """Split a record on commas and trim each operation."""
    return [op.strip() for op in text.split(",")]


def rejection(ops):
    """Return None if the list of operations is a valid record, else a short
    reason (the four validation rules of the spec)."""
    if not ops:
        return "empty record"
    piece_total = 0
    for index, raw in enumerate(ops):
        op = raw.strip()
        match = _OP_PATTERN.fullmatch(op)
        if match is None:
            return f"operation {index} {raw!r} is not a valid operation"
        letter, digits = match.groups()
        if index == 0 and letter != "N":
            return "the first operation must be N"
        if letter == "N":
            if digits:
                return f"operation {index} {raw!r}: N must not carry a number"
            piece_total = 0
            continue
        if not digits or int(digits) < 1:
            return f"operation {index} {raw!r}: {letter} needs a number of at least 1"
        piece_total += int(digits)
        if piece_total > MAX_STEPS_PER_PIECE:
            return (f"operation {index} {raw!r}: numbers for one piece add up "
                    f"to more than {MAX_STEPS_PER_PIECE}")
    return None


def replay(text):
    """Replay a record as the contest engine does and report
    {valid, error, score, pieces, end}."""
    ops = parse_record(text)
    error = rejection(ops)
    if error is not None:
        return {"valid": False, "error": error, "score": 0, "pieces": 0, "end": None}

    sequence = geek_sequence(MAX_PIECES)
    board = empty_board()
    score = 0
    counter = 0
    piece = None        # (shape, state, cx, cy) of the current piece
    has_moved = False   # did any operation follow the current piece's N?

    def lock_current():
        """Lock the current piece; return the end reason if the game ends."""
        nonlocal board, score
        shape, state, cx, cy = piece
        new_board, c, f, all_rows = lock(board, cells_of(shape, state, cx, cy))
        if all_rows:
            return "top_touched"
        if counter == MAX_PIECES:
            return "piece_limit"
        score += c * LINE_FACTOR[f]
        board = new_board
        return None

    end = None
    for op in ops:
        letter, count = _split_op(op)
        if letter == "N":
            # The previous piece locks only if some operation followed it;
            # otherwise it vanishes.
            if piece is not None and has_moved:
                end = lock_current()
                if end is not None:
                    break
            if counter == MAX_PIECES:
                end = "piece_limit"
                break
            counter += 1
            shape = sequence[counter - 1]
            piece = (shape, (counter - 1) % 4, SPAWN_X, SPAWN_Y)
            has_moved = False
            if not is_valid(board, *piece):
                end = "spawn_blocked"
                break
        else:
            shape, state, cx, cy = piece
            for _ in range(count):
                state, cx, cy = step(board, shape, state, cx, cy, letter)
            piece = (shape, state, cx, cy)
            has_moved = True

    if end is None:
        # Record ran out: the current piece locks where it stands, even if
        # no operation followed its N.
        end = lock_current() if piece is not None else None
        if end is None:
            end = "record_end"

    return {"valid": True, "error": None, "score": score,
            "pieces": counter, "end": end}
