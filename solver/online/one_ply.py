"""1-ply: the current piece goes where the evaluator values the resulting board most (exactly the
choice of the `greedy` policy)."""

from __future__ import annotations

from typing import NamedTuple

from engine._jit.decorators import inlined

from ..registry import register
from ._base import OnlinePolicy
from ._kernels import CURRENT, ply


class OnePlyBundle(NamedTuple):
    """1-ply has no settings and keeps no state: its bundle is empty, its class names the kernel."""


@inlined
def choose_one_ply(bundle, board, shape, preview, t, rules, spec, ws):
    """Index into ``ws.found[CURRENT]`` of the best placement (-1 when every child is dead).
    `inlined`, as is the whole ply under it (`solver.greedy.best_placement`, `best_dropped`): a
    call between numba kernels passes every array of its bundles as its seven fields, and a game's
    calls per piece (the rules, the workspace's twenty arrays) cost about a fifth of its time."""
    return ply(CURRENT, board, shape, t, rules, spec, ws)[0]


@register
class OnePly(OnlinePolicy):
    name = "one_ply"
    Bundle = OnePlyBundle
    choose_kernel = choose_one_ply
    allocates = False
