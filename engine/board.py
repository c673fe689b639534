"""Boards as bitmasks, and the lock: place a piece's cells, count, clear full rows.

A *board* is a numpy ``uint16`` array of ``height`` rows, row ``y`` (0 = top) holding bit ``x`` set
when cell (x, y) is occupied. Kernels work on int64 masks internally (numba's uint64 arithmetic
mixes badly with signed integers). Nothing here knows about evaluators or search.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from ._jit.decorators import inlined

BOARD_DTYPE = np.uint16


@intrinsic
def _ctpop(typingctx, v):
    """The hardware population count of an int64 (LLVM's ctpop: one instruction on x86-64)."""
    if not isinstance(v, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[0], v, types.int64)
        return builder.ctpop(value)

    return types.int64(v), codegen


@inlined
def popcount(v):
    """Number of set bits of an integer (as int64; negative values count all 64 bits)."""
    return _ctpop(np.int64(v))


@intrinsic
def _ctlz(typingctx, v):
    """The hardware count of leading zero bits of an int64, 64 for 0 (LLVM's ctlz)."""
    if not isinstance(v, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[0], v, types.int64)
        return builder.ctlz(value, context.get_constant(types.boolean, False))

    return types.int64(v), codegen


@inlined
def bit_length(v):
    """Bits a non-negative integer needs: the index of its highest set bit + 1 (0 for 0)."""
    return 64 - _ctlz(np.int64(v))


@inlined
def run_fill(seed, open_):
    """The bits of ``open_`` reached from ``seed`` (a subset of it) by moving left or right through
    ``open_`` (a Kogge-Stone occluded fill over 64-bit masks: the runs of ``open_`` that hold a seed
    bit)."""
    g = seed
    p = open_
    h = seed
    q = open_
    for k in (1, 2, 4, 8, 16, 32):
        g |= p & (g << k)
        p &= p << k
        h |= q & (h >> k)
        q &= q >> k
    return g | h


@inlined
def copy_rows(dst, src):
    """``dst[y] = src[y]`` for every row (a loop: numba's ``dst[:] = src`` allocates a temporary
    copy of the source on every call, and compiles its shape-mismatch message: seconds of every
    cold compile)."""
    for y in range(src.shape[0]):
        dst[y] = src[y]


@inlined
def place(board, cells, cx, cy):
    """Set the cells ``(cx + dx, cy + dy)`` of a piece on ``board`` in place; rows y < 0 are dropped."""
    for k in range(4):
        y = cy + cells[k, 1]
        if y >= 0:
            board[y] |= np.uint16(1 << (cx + cells[k, 0]))


@inlined
def clear_rows(board, full):
    """Remove the rows equal to ``full`` in place: the rows above them move down and empty rows
    enter at the top."""
    height = board.shape[0]
    dst = height - 1
    for y in range(height - 1, -1, -1):
        if np.int64(board[y]) != full:
            board[dst] = board[y]
            dst -= 1
    while dst >= 0:
        board[dst] = 0
        dst -= 1


@inlined
def count_rows(board, full):
    """``(cells, full_rows, occupied_rows)``: occupied cells on the board, rows equal to ``full``,
    rows holding at least one occupied cell."""
    height = board.shape[0]
    cells = 0
    full_rows = 0
    occupied_rows = 0
    for y in range(height):  # branch-free, so that the loop vectorises
        r = np.int64(board[y])
        occupied_rows += r != 0
        cells += popcount(r)
        full_rows += r == full
    return cells, full_rows, occupied_rows


@inlined
def count_and_clear(board, full):
    """Count, then clear, in place.

    Returns ``(cells, full_rows, occupied_rows)`` counted before clearing (`count_rows`). Full rows
    are then removed; the rows above them move down and empty rows enter at the top.
    """
    cells, full_rows, occupied_rows = count_rows(board, full)
    if full_rows:
        clear_rows(board, full)
    return cells, full_rows, occupied_rows


@njit(cache=True, _nrt=False)
def is_valid(board, cells, cx, cy, width):
    """Whether every cell of the piece is inside the columns, above the floor, and above the
    board (y < 0) or on an empty cell."""
    height = board.shape[0]
    for k in range(4):
        x = cx + cells[k, 0]
        y = cy + cells[k, 1]
        if x < 0 or x >= width or y >= height:
            return False
        if y >= 0 and (np.int64(board[y]) >> x) & 1:
            return False
    return True


def from_strings(rows: list[str] | str, width: int = 10, height: int = 20) -> np.ndarray:
    """A board from text rows (``#`` or ``X`` occupied, anything else empty), bottom-aligned.

    ``rows`` may be one multi-line string; blank lines are ignored. Fewer rows than ``height`` are
    padded with empty rows on top.
    """
    if isinstance(rows, str):
        rows = [r for r in rows.strip("\n").split("\n") if r.strip()]
    if len(rows) > height:
        raise ValueError(f"{len(rows)} rows given for a board of height {height}")
    board = np.zeros(height, dtype=BOARD_DTYPE)
    for i, row in enumerate(rows):
        row = row.strip()
        if len(row) != width:
            raise ValueError(f"row {i} {row!r} has {len(row)} cells, expected {width}")
        y = height - len(rows) + i
        board[y] = sum(1 << x for x, ch in enumerate(row) if ch in "#X")
    return board


def to_strings(board: np.ndarray, width: int = 10) -> list[str]:
    """Text rows of a board, top to bottom (``#`` occupied, ``.`` empty)."""
    return ["".join("#" if (int(r) >> x) & 1 else "." for x in range(width)) for r in board]
