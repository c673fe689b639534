"""2-ply over the unknown next piece: every placement of the current piece is followed, for each of
the seven shapes, by that shape's best placement; the seven best values are reduced by their mean
(``reduce: mean``, the expectation under uniform pieces) or their minimum (``min``, the worst
case). A placement is worth its value plus that (``objective: sum``) or that alone (``last``); a
shape with no surviving placement counts as -10^15. Only the ``keep`` best first-ply children are
searched (0: all). The preview is not used: this is the search for games that show no next piece."""

from __future__ import annotations

from numba import njit

from ._base import OnlinePolicy
from ._kernels import two_ply


@njit(cache=True)
def choose_expect(board, shape, t, R, spec, tie_break, params, ws, child):
    """Index into ``ws.found[0]`` of the chosen placement (-1 when every child is dead)."""
    return two_ply(board, shape, t, 0, 7, R, spec, tie_break, params, ws, child)


class Expect(OnlinePolicy):
    name = "expect"
    code = 2
