"""1-ply + preview: every placement of the current piece is followed by the best placement of the
shown next piece; a placement is worth the sum of the two values (``objective: sum``) or the second
value (``last``). Only the ``keep`` best first-ply children (by value; 0: all) are searched: the
2-ply search of `expect` over the one shape shown (`_kernels.two_ply`). With no preview (the last
piece of a protocol game) this is `one_ply`."""

from __future__ import annotations

from numba import njit

from ._base import OnlinePolicy
from ._kernels import ply, two_ply


@njit(cache=True)
def choose_preview(board, shape, preview, t, R, spec, tie_break, params, ws, child):
    """Index into ``ws.found[0]`` of the chosen placement (-1 when every child is dead)."""
    if preview < 0:
        return ply(0, board, shape, t, R, spec, tie_break, ws)[0]
    return two_ply(board, shape, t, preview, preview + 1, R, spec, tie_break, params, ws, child)


class Preview(OnlinePolicy):
    name = "preview"
    code = 1
