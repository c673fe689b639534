"""Plain-Python reading of the course protocol's game (../shared/PROTOCOL.md), for tests only.

The piece matrices are parsed from the table in ../shared/CLASSIC_RULES.md itself, so nothing here
shares code or data with the engine. A board is a set of occupied (x, y) cells (y = 0 is the top);
a piece is dropped straight down from above the board at the column where its leftmost cell goes.
"""

import re
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared"
WIDTH = 10
HEIGHT = 20
SCORES = {0: 0, 1: 10, 2: 25, 3: 40, 4: 55}
LETTERS = "ILJTOSZ"


def _parse_matrices() -> dict:
    """{letter: [four sets of (dx, dy)]} from the code block of CLASSIC_RULES.md."""
    text = (SHARED / "CLASSIC_RULES.md").read_text()
    block = text.split("```")[1]
    rows = [r for r in block.splitlines() if r.strip()]
    out = {}
    i = 0
    while i < len(rows):
        row = rows[i]
        heads = list(re.finditer(r"([ILJTOSZ]):", row))
        if not heads:
            i += 1
            continue
        group = rows[i:i + 4]
        for h in heads:
            letter = h.group(1)
            start = h.end()
            states = []
            for k in range(4):
                cells = set()
                for dy, line in enumerate(group):
                    seg = line[start:].split()
                    if k < len(seg) and re.fullmatch(r"[.#]{4}", seg[k]):
                        cells |= {(dx, dy) for dx, ch in enumerate(seg[k]) if ch == "#"}
                states.append(frozenset(cells))
            if letter == "O":  # "(same in all four rotations)"
                states = [states[0]] * 4
            out[letter] = states
        i += 4
    return out


MATRICES = _parse_matrices()


def normalized(cells):
    """Cells shifted so that the leftmost column is 0 (rows kept)."""
    mx = min(x for x, _ in cells)
    return frozenset((x - mx, y) for x, y in cells)


def drop(board, letter, rotation, x):
    """The cells where the piece (rotation in degrees) comes to rest when dropped with its leftmost
    cell in column x, or None when it does not fit (outside the walls, or resting partly above the
    board)."""
    shape = normalized(MATRICES[letter][rotation // 90])
    if x < 0 or x + max(dx for dx, _ in shape) >= WIDTH:
        return None
    top = -10  # every cell above the board
    y = top

    def fits(y):
        return all(cy + y < HEIGHT and (cx + x, cy + y) not in board for cx, cy in shape)

    while fits(y + 1):
        y += 1
    cells = {(cx + x, cy + y) for cx, cy in shape}
    if any(cy < 0 for _, cy in cells):
        return None
    return cells


def lock(board, cells):
    """The board after adding ``cells`` and clearing full rows, and the rows cleared."""
    board = set(board) | set(cells)
    full = [y for y in range(HEIGHT) if all((x, y) in board for x in range(WIDTH))]
    new = set()
    for x, y in board:
        if y in full:
            continue
        new.add((x, y + sum(1 for f in full if f > y)))
    return new, len(full)


def any_fit(board, letter):
    return any(drop(board, letter, r, x) is not None for r in (0, 90, 180, 270) for x in range(WIDTH))
