"""1-ply + preview: every placement of the current piece is followed by the best placement of the
shown next piece; a placement is worth the sum of the two values (``objective: sum``) or the second
value (``last``). Only the ``keep`` best first-ply children (by value; 0: all) are searched: the
2-ply search (`_two_ply`) over the one shape shown. With no preview (the last piece of a protocol
game) this is `one_ply`."""

from __future__ import annotations

from typing import NamedTuple


from engine._jit.decorators import inner
from ..registry import register
from ._base import OnlinePolicy
from ._kernels import CURRENT, ply
from ._two_ply import TwoPly, TwoPlyConfig, two_ply, two_ply_search


class PreviewConfig(TwoPlyConfig):
    """``preview``: 1-ply + the shown next piece, the 2-ply search over the one shape shown (see
    `solver/online/preview.py`)."""


class PreviewBundle(NamedTuple):
    """Preview's bundle: its 2-ply search (reduced over the one shape shown)."""

    search: TwoPly


@inner
def choose_preview(bundle, board, shape, preview, t, rules, spec, ws):
    """Index into ``ws.found[CURRENT]`` of the chosen placement (-1 when every child is dead)."""
    if preview < 0:
        return ply(CURRENT, board, shape, t, rules, spec, ws)[0]
    return two_ply(board, shape, t, preview, preview + 1, rules, spec, ws, bundle.search)


@register
class Preview(OnlinePolicy):
    name = "preview"
    Settings = PreviewConfig
    Bundle = PreviewBundle
    choose_kernel = choose_preview

    def new_bundle(self):
        return PreviewBundle(two_ply_search(self.settings))
