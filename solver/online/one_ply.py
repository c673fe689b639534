"""1-ply: the current piece goes where the evaluator values the resulting board most."""

from __future__ import annotations

from numba import njit

from ._base import OnlinePolicy
from ._kernels import ply


@njit(cache=True)
def choose_one_ply(board, shape, t, R, spec, tie_break, ws):
    """Index into ``ws.found[0]`` of the best placement (-1 when every child is dead)."""
    return ply(0, board, shape, t, R, spec, tie_break, ws)[0]


class OnePly(OnlinePolicy):
    name = "one_ply"
    code = 0
