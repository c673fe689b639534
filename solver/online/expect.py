"""2-ply over the unknown next piece: every placement of the current piece is followed, for each of
the seven shapes, by that shape's best placement; the seven best values are reduced by their mean
(``reduce: mean``, the expectation under uniform pieces) or their minimum (``min``, the worst
case). A placement is worth its value plus that (``objective: sum``) or that alone (``last``); a
shape with no surviving placement counts as -10^15. Only the ``keep`` best first-ply children are
searched (0: all). The preview is not used: this is the search for games that show no next piece."""

from __future__ import annotations

from numba import njit

from ._base import OnlinePolicy
from ._kernels import DEAD, P_KEEP, P_OBJECTIVE_LAST, P_REDUCE_MIN, child_board, first_ply, ply


@njit(cache=True)
def choose_expect(board, shape, t, R, spec, tie_break, params, ws, child):
    """Index into ``ws.found[0]`` of the chosen placement (-1 when every child is dead)."""
    values = ws[10]
    n, order = first_ply(board, shape, t, R, spec, tie_break, ws)
    keep = n if params[P_KEEP] <= 0 else min(n, int(params[P_KEEP]))
    last = params[P_OBJECTIVE_LAST] > 0
    use_min = params[P_REDUCE_MIN] > 0
    best = -1
    best_worth = -3 * DEAD
    for i in range(keep):
        k = order[i]
        v = values[k]
        if v <= -DEAD:
            break
        child_board(board, shape, k, R, spec, ws, child)
        total = 0.0
        worst = DEAD
        for s in range(7):
            b, v2 = ply(1, child, s, t + 1, R, spec, tie_break, ws)
            if b < 0:
                v2 = -DEAD
            total += v2
            worst = min(worst, v2)
        red = worst if use_min else total / 7.0
        worth = red if last else v + red
        if worth > best_worth:
            best, best_worth = k, worth
    return best


class Expect(OnlinePolicy):
    name = "expect"
    code = 2
