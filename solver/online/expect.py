"""2-ply over the unknown next piece: every placement of the current piece is followed, for each of
the seven shapes, by that shape's best placement; the seven best values are reduced by their mean
(``reduce: mean``, the expectation under uniform pieces) or their minimum (``min``, the worst
case). A placement is worth its value plus that (``objective: sum``) or that alone (``last``); a
shape with no surviving placement counts as -10^15. Only the ``keep`` best first-ply children are
searched (0: all). The preview is not used: this is the search for games that show no next piece."""

from __future__ import annotations

from typing import Literal, NamedTuple

from numba import njit
from pydantic import Field

from ..registry import register
from ._base import OnlinePolicy
from ._kernels import SHAPES
from ._two_ply import TwoPly, TwoPlyConfig, two_ply, two_ply_search


class ExpectConfig(TwoPlyConfig):
    """``expect``: 2-ply over the seven unknown next shapes, their best values reduced by their mean
    or their minimum (see `solver/online/expect.py`)."""

    reduce: Literal["mean", "min"] = Field(
        "mean", description="the seven unknown pieces' best values reduced by their mean or their minimum")


class ExpectBundle(NamedTuple):
    """Expect's bundle: its 2-ply search over the seven shapes."""

    search: TwoPly


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def choose_expect(bundle, board, shape, preview, t, rules, spec, ws):
    """Index into ``ws.found[CURRENT]`` of the chosen placement (-1 when every child is dead)."""
    return two_ply(board, shape, t, 0, SHAPES, rules, spec, ws, bundle.search)


@register
class Expect(OnlinePolicy):
    name = "expect"
    Settings = ExpectConfig
    Bundle = ExpectBundle
    choose_kernel = choose_expect

    def new_bundle(self):
        return ExpectBundle(two_ply_search(self.settings, worst=self.settings.reduce == "min"))
