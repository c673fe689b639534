"""What the built-in features share: `MAX_HEIGHT`, stack scratch without a heap allocation
(`stack_int64`), and the hole counts several features and forms read (`count_holes`,
`count_open_holes`).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from engine._jit.decorators import inner
from engine.board import popcount, run_fill

#: Rows a board may have at most here (the engine's rules allow 4..60).
MAX_HEIGHT = 64


@intrinsic
def stack_int64(typingctx, n):
    """A pointer to ``n`` (a literal) int64 slots on the calling function's stack, uninitialised.

    Scratch space without a heap allocation: a heap array would cost an allocation and a free
    per call, and keep the evaluator from being compiled without numba's runtime. Valid only
    until the calling function returns."""
    if not isinstance(n, types.IntegerLiteral):
        return None

    def codegen(context, builder, signature, args):
        return cgutils.alloca_once(builder, ir.IntType(64), size=n.literal_value)

    return types.CPointer(types.int64)(n), codegen


@inner
def count_holes(board, width, top):
    """Holes (empty cells with an occupied cell anywhere above them in the same column)."""
    cover = 0
    n = 0
    for y in range(top, board.shape[0]):
        r = np.int64(board[y])
        n += popcount(cover & ~r)
        cover |= r
    return n


@inner
def count_open_holes(board, width, top):
    """Open holes, by a bit-parallel flood fill of the empty cells from the row ``top``."""
    height = board.shape[0]
    if top >= height:
        return 0
    full = (1 << width) - 1
    reach = stack_int64(MAX_HEIGHT)
    # Down: every empty cell of the top row is open to the sky; below, a cell under a reached one
    # is reached, and so is the rest of its run of empty cells in the row.
    above = full & ~np.int64(board[top])
    reach[top] = above
    for y in range(top + 1, height):
        e = full & ~np.int64(board[y])
        seed = e & above
        above = seed if seed == e else run_fill(seed, e)
        reach[y] = above
    # Then up and down sweeps, each spreading to the cells next to a reached one in the row below
    # (above), until one changes nothing.
    changed = True
    while changed:
        changed = False
        for y in range(height - 2, top - 1, -1):
            e = full & ~np.int64(board[y])
            new = e & reach[y + 1] & ~reach[y]
            if new != 0:
                reach[y] = run_fill(reach[y] | new, e)
                changed = True
        if not changed:
            break
        changed = False
        for y in range(top + 1, height):
            e = full & ~np.int64(board[y])
            new = e & reach[y - 1] & ~reach[y]
            if new != 0:
                reach[y] = run_fill(reach[y] | new, e)
                changed = True
    cover = 0
    n = 0
    for y in range(top, height):
        r = np.int64(board[y])
        n += popcount(cover & ~r & reach[y])
        cover |= r
    return n
