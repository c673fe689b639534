"""Valuing the children of one board incrementally: a child that cleared no row is its parent plus
the piece's four cells, so most of its features are its parent's, changed where the cells fell.

A feature may declare a *form* beside its definition (`column_form`, with ``combine`` "sum" or
"or", its ``reach`` and ``edge``; `local_rows` for a row feature that ignores ``above``). From the
forms of the features an evaluator weighs, two kernels are generated per evaluator layout:
`column_view` (once per parent, fills the `ColumnView`) and `evaluate_child` (`kernels.evaluate`'s
value of a child that cleared no row, bit for bit, from the view and the piece, or -inf once a
bound shows it cannot beat ``to_beat``). An evaluator that weighs a board feature without a form
is valued by `evaluate` on the child board. The forms and the bound in full: docs/evaluators.md,
"Valuing children incrementally".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit
from numba.core.dispatcher import Dispatcher
from numba.extending import overload

from engine._jit.decorators import inner
from engine.board import popcount
from engine.movegen.tables import MAX_COLUMNS

from . import kernels, registry
from .kernels import WEIGHT, evaluate, term
from .registry import BOARD, PLACEMENT, FeatureError, top_row

SUM, OR, ROWS = "sum", "or", "rows"
#: a column form's ``edge``: the outer columns' missing neighbour a wall, or -1
WALL, NONE = "wall", "none"


@dataclass(frozen=True)
class Form:
    """How a feature's value follows from columns or rows (see the module docstring): ``combine``
    `SUM`, `OR` or `ROWS`; ``fn`` g(left, col, right, height) (None for `ROWS`: the feature's row
    function); ``reach`` 1 when g reads the neighbouring columns; ``kernel`` the feature's kernel
    it was declared for (a feature registered again under the name has none); ``edge`` what an
    outer column's missing neighbour is given as (`WALL` or `NONE`)."""

    feature: str
    combine: str
    fn: Dispatcher | None
    reach: int
    kernel: Dispatcher
    edge: str = WALL


#: feature name -> its form
_FORMS: dict[str, Form] = {}


def column_form(feature: str, *, reach: int = 0, combine: str = SUM, edge: str = WALL):
    """Declare ``fn(left, col, right, height)`` the column form of the registered board feature
    ``feature`` (see the module docstring); returns the numba function."""
    if combine not in (SUM, OR):
        raise FeatureError(f"column form of {feature!r}: combine is 'sum' or 'or', not {combine!r}")
    if reach not in (0, 1):
        raise FeatureError(f"column form of {feature!r}: reach is 0 or 1, not {reach}")
    if edge not in (WALL, NONE):
        raise FeatureError(f"column form of {feature!r}: edge is 'wall' or 'none', not {edge!r}")
    f = registry.get(feature)
    if f.kind != BOARD or f.output is not None:
        raise FeatureError(f"column form of {feature!r}: a board feature of one value only")

    def wrap(fn):
        registry._check_arity(fn, 4, "a column form (left, col, right, height)")
        kernel = fn if isinstance(fn, Dispatcher) else njit(cache=True)(fn)
        _FORMS[f.name] = Form(f.name, combine, kernel, reach, f.kernel, edge)
        return kernel

    return wrap


def local_rows(feature: str) -> None:
    """Declare that the row feature ``feature``'s row function ignores ``above``: its value is the sum
    of its rows, each on its own (see the module docstring)."""
    f = registry.get(feature)
    if f.row is None:
        raise FeatureError(f"local_rows: {feature!r} is not a row feature")
    _FORMS[f.name] = Form(f.name, ROWS, None, 0, f.kernel)


def form(name: str) -> Form | None:
    """The form of the feature ``name`` (its current registration), or None."""
    f = registry.get(name)
    found = _FORMS.get(f.name)
    return found if found is not None and found.kernel is f.kernel else None


class ColumnView(NamedTuple):
    """A parent board as `evaluate_child` reads it (`column_view` fills it), columns at index x + 1
    and the walls at 0 and width + 1: ``cols`` the parent's columns (bit k: k rows above the floor),
    ``child`` the same with a child's piece (put back after each child); per feature slot, for a
    column form, ``values[slot, x + 1]`` g of column x (under ``or``: its mask), ``totals[slot]`` the
    parent's value, and under ``or`` ``before[slot, i]`` / ``after[slot, i]`` the OR of the masks at
    indices below i / from i on."""

    cols: np.ndarray
    child: np.ndarray
    values: np.ndarray
    totals: np.ndarray
    before: np.ndarray
    after: np.ndarray


@njit(cache=True)
def column_scratch(n_features):
    """A `ColumnView` for evaluators of ``n_features`` slots (the columns a board may have, and the
    two walls)."""
    n = MAX_COLUMNS + 2
    return ColumnView(np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros((n_features, n), np.int64),
                      np.zeros(n_features, np.int64), np.zeros((n_features, n), np.int64),
                      np.zeros((n_features, n), np.int64))


@njit(cache=True)
def columns_into(board, width, top, cols, child):
    """``cols`` and ``child``: the board's columns at index x + 1 (bit k: the cell k rows above the
    floor), the walls (every row) at 0 and width + 1."""
    height = board.shape[0]
    wall = (np.int64(1) << height) - 1
    cols[0] = wall
    cols[width + 1] = wall
    for x in range(1, width + 1):
        cols[x] = 0
    for y in range(top, height):
        r = np.int64(board[y])
        bit = np.int64(1) << (height - 1 - y)
        while r:
            low = r & -r
            cols[popcount(low - 1) + 1] |= bit
            r ^= low
    for x in range(width + 2):
        child[x] = cols[x]


@inner
def put_piece(p, child):
    """Set the cells of the lock ``p`` inside the board in the view's ``child`` columns; returns
    the first and last index they fall in (width + 1 and 0 when none does)."""
    height = p.board.shape[0]
    a = p.width + 1
    b = 0
    for k in range(4):
        r = p.y + p.cells[k, 1]
        if r >= 0:
            i = p.x + p.cells[k, 0] + 1
            child[i] |= np.int64(1) << (height - 1 - r)
            a = min(a, i)
            b = max(b, i)
    return a, b


@inner
def take_piece(p, child, cols):
    """Put the view's ``child`` columns the lock ``p`` changed back to the parent's."""
    for k in range(4):
        if p.y + p.cells[k, 1] >= 0:
            i = p.x + p.cells[k, 0] + 1
            child[i] = cols[i]


@inner
def piece_rows(cells):
    """The least and the greatest dy of a piece's cells: the rows it may change, from its centre's
    (a row between them without a cell of the piece is the parent's, and changes nothing)."""
    lo = cells[0, 1]
    hi = lo
    for k in range(1, 4):
        lo = min(lo, cells[k, 1])
        hi = max(hi, cells[k, 1])
    return lo, hi


def column_view(board, width, spec, view):
    """Fill the `ColumnView` ``view`` of the parent ``board`` for the evaluator ``spec`` (nothing
    when it weighs a board feature without a form). Numba kernels only."""
    raise TypeError("column_view is a numba kernel")


def evaluate_child(p, view, parent_values, spec, to_beat):
    """`kernels.evaluate` of the child ``p``, a `registry.Placement` whose lock cleared no row
    (``p.board`` is ``p.parent`` with the piece's cells set), ``view`` filled by `column_view` for
    ``p.parent``; or -inf when that value is certainly below ``to_beat`` (a search's best so far: -inf
    to have every value). Numba kernels only."""
    raise TypeError("evaluate_child is a numba kernel")


def incremental(kind: registry.Kind) -> bool:
    """Whether the evaluators of ``kind`` are valued incrementally: every board feature they weigh
    has a form."""
    return _plan(kind) is not None


def _plan(kind: registry.Kind):
    """The weighed features of ``kind`` in `evaluate`'s order of terms, each (slot, feature, its form
    or None for a placement feature), or None when some board feature has no form."""
    features = registry._SNAPSHOTS.get(kind.digest)
    if features is None:
        raise FeatureError(f"no feature registry with digest {kind.digest} in this process")
    terms = {t.slot: t for t in kind.layout}
    plan = []
    for _, members in kernels._groups(features, terms):
        for slot, f in members:
            if f.kind == PLACEMENT:
                plan.append((slot, f, None))
                continue
            found = _FORMS.get(f.name)
            if found is None or found.kernel is not f.kernel or (found.combine != ROWS and f.output is not None):
                return None
            plan.append((slot, f, found))
    return plan


def _source(kind: registry.Kind, what: str) -> tuple[str, dict]:
    """Python source of the generated ``column_view`` or ``evaluate_child`` for ``kind``, and its globals."""
    env = {"np": np, "popcount": popcount, "top_row": top_row, "columns_into": columns_into, "put_piece": put_piece,
           "take_piece": take_piece, "piece_rows": piece_rows, "term": term, "evaluate": evaluate,
           "WEIGHT": WEIGHT}
    plan = _plan(kind)
    terms = {t.slot: t for t in kind.layout}
    if what == "column_view":
        head = "def generated(board, width, spec, view):"
        if plan is None:
            return head + "\n    return\n", env
        body = ["    height = board.shape[0]", "    top = top_row(board)",
                "    columns_into(board, width, top, view.cols, view.child)"]
        for slot, f, found in plan:
            if found is None:
                continue
            if found.combine == ROWS:
                env[f"k{slot}"] = f.kernel
                body.append(f"    view.totals[{slot}] = k{slot}(board, width, top)")
                continue
            env[f"g{slot}"] = found.fn
            g = _call(slot, found, "view.cols[x - 1]", "view.cols[x]", "view.cols[x + 1]")
            if found.combine == SUM:
                body += ["    t = np.int64(0)", "    for x in range(1, width + 1):", f"        g = {g}",
                         f"        view.values[{slot}, x] = g", "        t += g", f"    view.totals[{slot}] = t"]
            else:
                body += ["    m = np.int64(0)", f"    view.before[{slot}, 1] = m", "    for x in range(1, width + 1):",
                         f"        g = {g}", f"        view.values[{slot}, x] = g", "        m |= g",
                         f"        view.before[{slot}, x + 1] = m", f"    view.totals[{slot}] = popcount(m)",
                         "    m = np.int64(0)", f"    view.after[{slot}, width + 1] = m",
                         "    for x in range(width, 0, -1):", f"        m |= view.values[{slot}, x]",
                         f"        view.after[{slot}, x] = m"]
        return "\n".join([head, *body]) + "\n", env
    head = "def generated(p, view, parent_values, spec, to_beat):"
    if plan is None:
        return head + "\n    return evaluate(p, parent_values, spec)\n", env
    body = ["    w = spec.terms[WEIGHT]", "    total = 0.0", "    height = p.board.shape[0]", "    width = p.width",
            "    zero = np.int64(0)", "    child = view.child", "    values = view.values", "    a, b = put_piece(p, child)"]
    # the last terms, when each is a form's plain term: a count times its weight, never positive
    # when the weights are not (checked at run time), so the sum before them bounds the value
    cut = len(plan)
    while cut > 0 and plan[cut - 1][2] is not None and not (terms[plan[cut - 1][0]].delta or
                                                            terms[plan[cut - 1][0]].table):
        cut -= 1
    for i, part in enumerate((plan[:cut], plan[cut:])):
        lines = _values(part, env)
        for slot, f, found in part:  # the terms, in the order `evaluate` adds them
            if found is None:
                env[f"k{slot}"] = f.kernel
                value = f"k{slot}(p)"
            else:
                value = f"v{slot}"
            t = terms[slot]
            if t.delta or t.table:
                lines.append(f"    total += term({slot}, {value}, parent_values, spec)")
            else:
                lines.append(f"    total += w[{slot}] * np.float64({value})")
        if i == 1 and part:  # the bound: the last terms computed only when it does not cut
            weights = " and ".join(f"w[{slot}] <= 0.0" for slot, _, _ in part)
            lines = [f"    if total < to_beat and {weights}:", "        total = -np.inf", "    else:",
                     *("    " + line for line in lines)]
        body += lines
    body += ["    take_piece(p, child, view.cols)", "    return total"]
    return "\n".join([head, *body]) + "\n", env


def _values(plan, env) -> list[str]:
    """Source lines computing ``v<slot>``, each formed feature's value on the child, for the features
    of ``plan`` (the forms of one kind in one loop: integers, so any order gives the same)."""
    body = []
    rows = [(slot, f) for slot, f, found in plan if found is not None and found.combine == ROWS]
    if rows:
        body.append("    lo, hi = piece_rows(p.cells)")
        for slot, f in rows:
            env[f"row{slot}"] = f.row
            body.append(f"    v{slot} = view.totals[{slot}]")
        body += ["    for r in range(max(p.y + lo, 0), p.y + hi + 1):", "        new = np.int64(p.board[r])",
                 "        old = np.int64(p.parent[r])"]
        body += [f"        v{slot} += row{slot}(new, zero, width) - row{slot}(old, zero, width)" for slot, _ in rows]
    for reach in (0, 1):
        sums = [(slot, found) for slot, _, found in plan if found is not None and found.combine == SUM
                and found.reach == reach]
        if not sums:
            continue
        for slot, found in sums:
            env[f"g{slot}"] = found.fn
            body.append(f"    v{slot} = view.totals[{slot}]")
        lo, hi = _changed(reach)
        body += [f"    for x in range({lo}, {hi} + 1):", "        left = child[x - 1]", "        col = child[x]",
                 "        right = child[x + 1]"]
        body += [f"        v{slot} += {_call(slot, found, 'left', 'col', 'right')} - values[{slot}, x]"
                 for slot, found in sums]
    for slot, _, found in plan:
        if found is not None and found.combine == OR:
            env[f"g{slot}"] = found.fn
            lo, hi = _changed(found.reach)
            body += [f"    m = view.before[{slot}, {lo}] | view.after[{slot}, {hi} + 1]",
                     f"    for x in range({lo}, {hi} + 1):",
                     f"        m |= {_call(slot, found, 'child[x - 1]', 'child[x]', 'child[x + 1]')}",
                     f"    v{slot} = popcount(m)"]
    return body


def _changed(reach: int) -> tuple[str, str]:
    """Source of the first and last column index whose form of ``reach`` a child changes: those its
    piece fell in (``a``..``b``), widened by ``reach`` within the board."""
    return ("a", "b") if reach == 0 else (f"max(a - {reach}, 1)", f"min(b + {reach}, width)")


def _call(slot: int, found: Form, left: str, col: str, right: str) -> str:
    """Source of the call of the form of slot ``slot`` on the column ``col`` (index ``x``) and its
    neighbours, the outer columns' missing neighbour -1 under ``edge: none``."""
    if found.edge == NONE:
        left = f"({left} if x > 1 else np.int64(-1))"
        right = f"({right} if x < width else np.int64(-1))"
    return f"g{slot}({left}, {col}, {right}, height)"


def source(what: str, kind: registry.Kind) -> str:
    """The generated source of ``column_view`` or ``evaluate_child`` for ``kind``, for reading and
    debugging."""
    return _source(kind, what)[0]


def _generated(what: str, kind: registry.Kind):
    text, env = _source(kind, what)
    exec(compile(text, f"<evaluators.incremental: {what} for {kind.label()}>", "exec"), env)
    return env["generated"]


@overload(column_view)
def _column_view_overload(board, width, spec, view):
    return _generated("column_view", kernels._spec_kind(spec))


@overload(evaluate_child, jit_options={"_nrt": False, "forceinline": True})
def _evaluate_child_overload(p, view, parent_values, spec, to_beat):
    return _generated("evaluate_child", kernels._spec_kind(spec))
