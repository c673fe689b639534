"""The 2-ply search that `preview` and `expect` share: its settings, its part of their bundles, its
kernel.

Every placement of the current piece (a *first-ply child*) is followed by the best placement of
each next shape searched (the one shown, or the seven unknown ones); their values are reduced by
their mean or their minimum, and a child is worth its value plus that (``objective: sum``) or that
alone (``last``). Only the ``keep`` best first-ply children are searched (0: all).
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from numba import njit
from pydantic import Field

from engine._jit.decorators import inlined
from engine.board import copy_rows
from engine.lock import lock_piece, spawn_state
from engine.movegen.generators import placements_into
from evaluators import board_values, priority

from .._base import best_first, value_child
from ..config import Strict
from ._kernels import CURRENT, DEAD, NEXT, ply, ply_scratch


class TwoPlyConfig(Strict):
    """The 2-ply search's settings (`preview`, `expect`)."""

    objective: Literal["sum", "last"] = Field(
        "sum", description="a placement is worth its value plus the next ply's, or the next ply's alone")
    keep: int = Field(0, ge=0, description="best first-ply placements searched deeper (0: all)")


class TwoPly(NamedTuple):
    """The 2-ply search as its kernel reads it: ``keep`` (0: all), ``last`` (``objective:
    last``), ``worst`` (the next shapes' values reduced by their minimum, else their mean)."""

    keep: int
    last: bool
    worst: bool


def two_ply_search(settings: TwoPlyConfig, worst: bool = False) -> TwoPly:
    return TwoPly(int(settings.keep), settings.objective == "last", bool(worst))


@njit(cache=True, inline="always")  # allocates its order: typed in each caller, under its reference counting
def first_ply(board, shape, t, rules, spec, ws):
    """Value every placement of the current piece into ``ws.values`` (-DEAD for a dead child) and
    its tie-break rank into ``ws.ranks``; returns (n, order): ``order`` the placement indices, best
    first (value descending, then rank, then generation order)."""
    found = ws.found[CURRENT]
    vs = ply_scratch(ws, CURRENT)
    ss = spawn_state(t, rules)
    n = placements_into(board, rules, shape, ss, ws.moves, found)
    board_values(board, rules.width, spec, vs.pvals)
    for k in range(n):
        x, y, s = found[k, 0], found[k, 1], found[k, 2]
        alive, v = value_child(board, rules, shape, s, x, y, t + 1, spec, vs)
        ws.values[k] = v if alive else -DEAD
        ws.ranks[k] = priority(spec, x, s, rules.spawn_x, ss)
    return n, best_first(ws.values, ws.ranks, n)


@inlined
def child_board(board, shape, k, t, rules, ws, out):
    """The first-ply child of placement ``k`` (of ``ws.found[CURRENT]``) of piece ``t`` into ``out``."""
    found = ws.found[CURRENT]
    copy_rows(out, board)
    lock_piece(out, rules, shape, found[k, 2], found[k, 0], found[k, 1], t + 1)


@njit(cache=True, inline="always")  # calls first_ply: typed in each caller, as it is
def two_ply(board, shape, t, lo, hi, rules, spec, ws, search):
    """Index into ``ws.found[CURRENT]`` of the placement of the current piece worth most over two
    plies (-1 when every child is dead), following each of the ``search.keep`` best first-ply
    children by the best placement of every next shape ``lo <= s < hi``; a shape with no surviving
    placement counts -`DEAD`. Ties: the first in `first_ply`'s order."""
    n, order = first_ply(board, shape, t, rules, spec, ws)
    keep = n if search.keep <= 0 else min(n, search.keep)
    best = -1
    best_worth = -3 * DEAD
    for i in range(keep):
        k = order[i]
        v = ws.values[k]
        if v <= -DEAD:
            break
        child_board(board, shape, k, t, rules, ws, ws.spare)
        total = 0.0
        worst = DEAD
        for s in range(lo, hi):
            b, v2 = ply(NEXT, ws.spare, s, t + 1, rules, spec, ws)
            if b < 0:
                v2 = -DEAD
            total += v2
            worst = min(worst, v2)
        reduced = worst if search.worst else total / (hi - lo)
        worth = reduced if search.last else v + reduced
        if worth > best_worth:
            best, best_worth = k, worth
    return best
