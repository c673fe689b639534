"""1-ply: the current piece goes where the evaluator values the resulting board most (exactly the
choice of the `greedy` policy)."""

from __future__ import annotations

from typing import NamedTuple

from numba import njit

from ..registry import register
from ._base import OnlinePolicy
from ._kernels import CURRENT, ply


class OnePlyBundle(NamedTuple):
    """1-ply has no settings and keeps no state: its bundle is empty, its class names the kernel."""


@njit(cache=True, _nrt=False)
def choose_one_ply(bundle, board, shape, preview, t, rules, spec, ws):
    """Index into ``ws.found[CURRENT]`` of the best placement (-1 when every child is dead).
    Compiled without numba's reference counting: it allocates nothing, and counting the views of
    the workspace it takes (an atomic add and subtract each) cost a tenth of a standard game's time."""
    return ply(CURRENT, board, shape, t, rules, spec, ws)[0]


@register
class OnePly(OnlinePolicy):
    name = "one_ply"
    Bundle = OnePlyBundle
    choose_kernel = choose_one_ply
    allocates = False
