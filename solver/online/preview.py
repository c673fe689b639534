"""1-ply + preview: every placement of the current piece is followed by the best placement of the
shown next piece; a placement is worth the sum of the two values (``objective: sum``) or the second
value (``last``). Only the ``keep`` best first-ply children (by value; 0: all) are searched. With no
preview (the last piece of a protocol game) this is `one_ply`."""

from __future__ import annotations

from numba import njit

from ._base import OnlinePolicy
from ._kernels import DEAD, P_KEEP, P_OBJECTIVE_LAST, child_board, first_ply, ply


@njit(cache=True)
def choose_preview(board, shape, preview, t, R, spec, tie_break, params, ws, child):
    """Index into ``ws.found[0]`` of the chosen placement (-1 when every child is dead)."""
    if preview < 0:
        return ply(0, board, shape, t, R, spec, tie_break, ws)[0]
    values = ws[10]
    n, order = first_ply(board, shape, t, R, spec, tie_break, ws)
    keep = n if params[P_KEEP] <= 0 else min(n, int(params[P_KEEP]))
    last = params[P_OBJECTIVE_LAST] > 0
    best = -1
    best_worth = -3 * DEAD
    for i in range(keep):
        k = order[i]
        v = values[k]
        if v <= -DEAD:
            break
        child_board(board, shape, k, R, spec, ws, child)
        b, v2 = ply(1, child, preview, t + 1, R, spec, tie_break, ws)
        if b < 0:
            worth = v - DEAD
        else:
            worth = v2 if last else v + v2
        if worth > best_worth:
            best, best_worth = k, worth
    return best


class Preview(OnlinePolicy):
    name = "preview"
    code = 1
