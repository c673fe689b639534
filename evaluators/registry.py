"""The features an evaluator weighs and the tie-breaks it may name: each declared once, by a
decorator; everything else is derived from the declarations.

`board_feature`, `board_features`, `row_feature` and `placement_feature` register a feature (the
function's docstring, its first paragraph, is its description), `tie_break` a tie-break, into
`FEATURES` and `TIE_BREAKS`, each an `engine.registry.Registry`. From the registry come the feature
names and their slots in an evaluator's weight vector (`names`), the evaluator kernels
(`evaluate`, `board_values`, `feature_vector`: numba overloads generated for the registry's digest
and the evaluator's layout, carried by the `Kind` token of its `EvaluatorSpec`, so a policy kernel
is compiled once per registry and layout, not per weights; generated in `evaluators.kernels`),
the YAML validation and the docs' feature table (`table`). In full: docs/evaluators.md, "Adding a feature" and "How features become
kernels".
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np
from numba import njit
from numba.core.dispatcher import Dispatcher

from engine._jit import cache
from engine._jit.dispatch import Static
from engine.registry import Registry

BOARD = "board"
PLACEMENT = "placement"


class Placement(NamedTuple):
    """One lock as an evaluator sees it (numba compiles it as a tuple).

    ``parent``: the board before the piece; ``locked``: with the piece placed, before the clear;
    ``board``: after the clear (board features are measured on it); ``cells``: the piece state's
    (4, 2) offsets (dx, dy) and (``x``, ``y``) its centre; ``lines``: rows the lock filled;
    ``points``: points it scored; ``width``: the board's columns."""

    parent: np.ndarray
    locked: np.ndarray
    board: np.ndarray
    cells: np.ndarray
    x: int
    y: int
    lines: int
    points: int
    width: int


@dataclass(frozen=True)
class Feature:
    """A registered feature: its ``kernel`` (a numba function), ``output`` (the index into the tuple a
    multi-feature kernel returns, None for one value), its one-paragraph ``doc`` and ``aliases``;
    for a row feature, ``row`` is its function of one row (``kernel`` sums it over a board)."""

    name: str
    kind: str
    kernel: Dispatcher
    output: int | None
    doc: str
    aliases: tuple[str, ...] = ()
    row: Dispatcher | None = None


class FeatureError(ValueError):
    """A feature or tie-break that cannot be registered; the message says which and why."""


def _checked(name: str, feature: Feature) -> Feature:
    """A feature as `FEATURES` keeps it, its names (and aliases) free and its description given."""
    for n in (name, *feature.aliases):
        if not n.isidentifier():
            raise FeatureError(f"feature {n!r}: a name must be an identifier")
        if n in FEATURES or n in _ALIASES:
            raise FeatureError(f"feature {n!r} is already registered (unregister it first)")
    if not feature.doc:
        raise FeatureError(f"feature {name!r}: its kernel needs a docstring (the feature's description)")
    return feature


def _forget_digest() -> None:
    global _digest
    _digest = None


def _tie_break_kernel(name: str, fn) -> Dispatcher:
    _check_arity(fn, 4, "a tie-break (x, state, spawn_x, spawn_state)")
    return _jit(fn)


#: the features by name, in slot order (the order of an evaluator's weight vector); an alias is
#: another name of one of them (`_ALIASES`), not an entry
FEATURES: Registry[Feature] = Registry("feature", error=FeatureError, entry=_checked, changed=_forget_digest)
_ALIASES: dict[str, str] = {}
#: the tie-breaks by name (`tie_break`): each a numba kernel
TIE_BREAKS: Registry[Dispatcher] = Registry("tie-break", error=FeatureError, entry=_tie_break_kernel)
#: digest -> the features of that registry, in slot order (every registry an evaluator was built for)
_SNAPSHOTS: dict[str, tuple[Feature, ...]] = {}
_digest: str | None = None


# ------------------------------------------------------------------------------------------------
# Declaring


def _jit(fn) -> Dispatcher:
    return fn if isinstance(fn, Dispatcher) else njit(cache=True)(fn)


def _doc(fn) -> str:
    doc = inspect.getdoc(getattr(fn, "py_func", fn)) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _check_arity(fn, n: int, what: str) -> None:
    py = getattr(fn, "py_func", fn)
    params = inspect.signature(py).parameters
    if len(params) != n:
        raise FeatureError(f"feature kernel {py.__qualname__}: {what} takes {n} argument(s), "
                            f"got ({', '.join(params)})")


def _add(feature: Feature) -> None:
    FEATURES.add(feature.name, feature)
    for alias in feature.aliases:
        _ALIASES[alias] = feature.name


def board_feature(fn: Callable | None = None, *, name: str | None = None, aliases: tuple[str, ...] = ()):
    """Register ``fn(board, width, top)`` as the board feature ``name`` (default: the function's
    name); returns the numba function (``fn`` is compiled with ``njit(cache=True)`` unless it
    already is a numba function)."""

    def wrap(f):
        _check_arity(f, 3, "a board feature (board, width, top)")
        kernel = _jit(f)
        _add(Feature(name or kernel.py_func.__name__, BOARD, kernel, None, _doc(f), tuple(aliases)))
        return kernel

    return wrap(fn) if fn is not None else wrap


def row_feature(fn: Callable | None = None, *, name: str | None = None, aliases: tuple[str, ...] = ()):
    """Register ``fn(row, above, width)`` as the board feature ``name`` (default: the function's
    name) whose value is the sum of ``fn`` over the board's rows, top to bottom: ``row`` the row's
    cells and ``above`` those of every row above it OR-ed together (int64 bit masks; the rows above
    the first occupied one are empty, each adding ``fn(0, 0, width)``). An evaluator computes all
    the row features it weighs in one pass over the rows. Returns the numba function of one row."""

    def wrap(f):
        _check_arity(f, 3, "a row feature (row, above, width)")
        row = _jit(f)
        _add(Feature(name or row.py_func.__name__, BOARD, _row_sum(row), None, _doc(f), tuple(aliases), row))
        return row

    return wrap(fn) if fn is not None else wrap


def _row_sum(row):
    """The board kernel ``(board, width, top)`` of the row feature ``row`` (compiled into the kernels
    calling it, which are cached). Named after ``row``: numba names a compiled function by its
    qualified name, its argument types and a counter of the process, and a cached kernel carries
    its callees' names from the process that compiled it, so two features' closures of one name
    could meet under one symbol in a process that loads one and compiles the other, and a call to
    one run the other's code."""

    def row_sum(board, width, top):
        zero = np.int64(0)
        total = top * row(zero, zero, width)  # the empty rows above the first occupied one
        above = zero
        for y in range(top, board.shape[0]):
            r = np.int64(board[y])
            total += row(r, above, width)
            above |= r
        return total

    py = getattr(row, "py_func", row)
    row_sum.__qualname__ = f"row_sum_of.{py.__module__}.{py.__qualname__}".replace("<locals>", "locals")
    return njit(row_sum)


def board_features(**docs: str):
    """Register a kernel ``f(board, width, top)`` that returns one value per feature, as the features
    named by the keywords, in order, each described by its keyword's value."""

    def wrap(f):
        _check_arity(f, 3, "a board feature (board, width, top)")
        if not docs:
            raise FeatureError(f"board_features on {f.__name__}: name at least one feature")
        kernel = _jit(f)
        for i, (n, d) in enumerate(docs.items()):
            _add(Feature(n, BOARD, kernel, i, " ".join(d.split())))
        return kernel

    return wrap


def placement_feature(fn: Callable | None = None, *, name: str | None = None, aliases: tuple[str, ...] = ()):
    """Register ``fn(p)``, ``p`` a `Placement`, as the placement feature ``name`` (default: the
    function's name); returns the numba function."""

    def wrap(f):
        _check_arity(f, 1, "a placement feature (p)")
        kernel = _jit(f)
        _add(Feature(name or kernel.py_func.__name__, PLACEMENT, kernel, None, _doc(f), tuple(aliases)))
        return kernel

    return wrap(fn) if fn is not None else wrap


def tie_break(name: str):
    """Register ``fn(x, state, spawn_x, spawn_state)`` -> an int rank (lower first) as the tie-break
    ``name`` an evaluator may name: among placements of equal value, a policy takes the lowest rank."""

    return lambda f: TIE_BREAKS.add(name, f)


def unregister(name: str) -> None:
    """Remove the feature ``name`` (and its aliases); its slot goes, later slots move down. Evaluators
    built before keep the registry they were built for."""
    if canonical(name) not in FEATURES:
        raise FeatureError(f"no feature {name!r} is registered")
    feature = FEATURES.remove(canonical(name))
    for alias in feature.aliases:
        _ALIASES.pop(alias, None)


# ------------------------------------------------------------------------------------------------
# Reading


def canonical(name: str) -> str:
    """The feature a name stands for (an alias's target, else the name itself)."""
    return _ALIASES.get(name, name)


def names() -> tuple[str, ...]:
    """Registered feature names in slot order (the order of an evaluator's weight vector)."""
    return FEATURES.names()


def known_names() -> list[str]:
    """Every accepted name, features and aliases, sorted."""
    return sorted(set(FEATURES) | set(_ALIASES))


def get(name: str) -> Feature:
    """The feature a name (or alias) stands for; `FeatureError` for an unknown name."""
    feature = FEATURES.get(canonical(name), None)
    if feature is None:
        from engine.validation import did_you_mean

        raise FeatureError(f"unknown feature {name!r}{did_you_mean(name, known_names())} (known: {', '.join(known_names())})")
    return feature


def index(name: str) -> int:
    """The slot of a feature (or alias) in the weight vector."""
    return names().index(get(name).name)


def is_placement(name: str) -> bool:
    return get(name).kind == PLACEMENT


def tie_breaks() -> tuple[str, ...]:
    """Registered tie-break names."""
    return TIE_BREAKS.names()


def aliases() -> dict[str, str]:
    """alias -> feature."""
    return dict(_ALIASES)


def table() -> str:
    """The docs' feature table (Markdown): every feature in slot order with its kind and description,
    then the aliases."""
    rows = ["| feature | kind | what it measures |", "|---|---|---|"]
    for f in FEATURES.values():
        doc = f.doc.replace("|", "\\|")
        rows.append(f"| `{f.name}` | {f.kind} | {doc} |")
    for alias, target in _ALIASES.items():
        rows.append(f"| `{alias}` | alias | the same kernel and weight slot as `{target}` |")
    return "\n".join(rows)


def measure(name: str, board: np.ndarray, width: int) -> float:
    """Board feature ``name`` of ``board`` (from Python; kernels call the feature functions)."""
    f = get(name)
    if f.kind != BOARD:
        raise FeatureError(f"{name} is a placement feature: it needs a lock, not a board")
    board = np.ascontiguousarray(board, np.uint16)
    v = f.kernel(board, width, top_row(board))
    return v if f.output is None else v[f.output]


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def top_row(board):
    """Row of the highest occupied cell (smallest y), or ``height`` for an empty board."""
    height = board.shape[0]
    y = 0
    while y < height and board[y] == 0:
        y += 1
    return y


# ------------------------------------------------------------------------------------------------
# The token that ties a spec to its registry and its layout


class Term(NamedTuple):
    """One feature an evaluator weighs, as its kernels are compiled for it: the feature's ``slot``
    (`names` order), whether its value is taken minus the parent's (``delta``) and whether it
    goes through a step table (``table``). The weight and the table's numbers are data."""

    slot: int
    delta: bool
    table: bool

    def __str__(self):
        return f"{self.slot}{'d' if self.delta else ''}{'t' if self.table else ''}"


class Kind(Static):
    """Which registry (``digest``) an evaluator's slots follow, its tie-break, and its ``layout``:
    the `Term` of each feature it weighs, in slot order. The kernels are compiled for a kind (a
    `Static`): an evaluator's structure (which features, delta or not, table or not) is code, its
    weights and tables are data, so tuning weights never recompiles and a kernel computes only the
    features its evaluator weighs."""

    __slots__ = ("digest", "tie", "layout")

    def __init__(self, digest: str, tie: str, layout: tuple[Term, ...] = ()):
        super().__init__(digest, tie, tuple(Term(*t) for t in layout))

    def label(self) -> str:
        return f"{self.digest}, {self.tie}, {' '.join(map(str, self.layout))}"


def _source_digest(fn) -> str:
    """A digest naming ``fn``'s source: its module and name, and the stamp numba's cache gives its
    file (`engine._jit.stamps`: the file and what it imports, without docstrings, comments or
    positions), or for a file outside the project its bytes. Editing a feature's
    file gives every feature there a new digest, which costs a recompile, never a stale kernel."""
    py = fn.py_func
    code = py.__code__
    where = _file_digest(code.co_filename) or repr(code.co_code) + repr(code.co_consts)
    return hashlib.sha1(f"{py.__module__}.{py.__qualname__}\n{where}".encode()).hexdigest()


@functools.lru_cache(maxsize=None)
def _file_digest(filename: str) -> str | None:
    """The cache's stamp of a project source, else the digest of the file's bytes (None when it
    cannot be read: code made by ``exec``)."""
    path = Path(filename).resolve()
    try:
        path.relative_to(cache.ROOT)
        return cache.SOURCES.stamp(path)
    except (ValueError, OSError, SyntaxError):
        pass
    try:
        return hashlib.sha1(path.read_bytes()).hexdigest()
    except OSError:
        return None


def digest() -> str:
    """A digest of the current registry (names, kinds, outputs, kernels and their sources); the
    registry it names is kept for the kernels."""
    global _digest
    if _digest is None:
        h = hashlib.sha1()
        for f in FEATURES.values():
            h.update(f"{f.name}|{f.kind}|{f.output}|{_source_digest(f.row or f.kernel)}\n".encode())
        _digest = h.hexdigest()[:16]
        _SNAPSHOTS[_digest] = tuple(FEATURES.values())
    return _digest


def kind(tie: str | None, layout: tuple[Term, ...] = ()) -> Kind:
    """The `Kind` of an evaluator with tie-break ``tie`` (None: ``none``) weighing the features of
    ``layout`` (`Term`s, in slot order), under the current registry."""
    tie = tie or "none"
    TIE_BREAKS.get(tie)  # FeatureError naming the known ones
    layout = tuple(sorted(Term(*t) for t in layout))
    slots = [t.slot for t in layout]
    if len(set(slots)) != len(slots) or any(not 0 <= i < len(FEATURES) for i in slots):
        raise FeatureError(f"a layout names each registered feature's slot at most once, got {slots}")
    return Kind(digest(), tie, layout)
