"""The evaluator kernels, generated from the feature registry (`evaluators.registry`).

`evaluate`, `board_values`, `feature_vector` and `priority` are numba overloads: when a kernel
calling one is compiled, the source of its implementation is generated for the registry's
snapshot and the evaluator's layout that the spec's `registry.Kind` token names (only the
features the evaluator weighs, each as its `registry.Term` says: delta or not, table or not), so
a policy kernel is compiled once per registry and layout, never per weights. `source` shows the
generated text. The rows of a spec's ``terms`` (`WEIGHT` ...) are read here by `term`.
"""

from __future__ import annotations

import numpy as np
from numba.extending import overload

from engine._jit.decorators import inner

from .registry import _SNAPSHOTS, BOARD, FEATURES, PLACEMENT, TIE_BREAKS, Feature, FeatureError, Kind, Term, top_row


def evaluate(p, parent_values, spec):
    """Value of the placement ``p`` (a `Placement`) under ``spec`` (an `EvaluatorSpec`):
    sum over the active features i of ``weights[i] * t_i(v_i)``, v_i the feature's value minus
    ``parent_values[i]`` when ``delta[i]``, t_i its step table (identity without one). Callable
    from numba kernels only; compiled per registry."""
    raise TypeError("evaluate is a numba kernel: call it from a jitted function, or use Evaluator.value")


def board_values(board, width, spec, out):
    """``out[i]``: board feature i of ``board`` for every active delta feature i of ``spec``, 0
    elsewhere (a parent's values for `evaluate`). Numba kernels only."""
    raise TypeError("board_values is a numba kernel")


def feature_vector(p, spec, out):
    """``out[i]``: every registered feature of the placement ``p`` in slot order, for the registry of
    ``spec`` (weights unused). Numba kernels only."""
    raise TypeError("feature_vector is a numba kernel")


def priority(spec, x, state, spawn_x, spawn_state):
    """The rank of a placement under ``spec``'s tie-break (lower first). Numba kernels only."""
    raise TypeError("priority is a numba kernel")


#: the rows of an evaluator spec's ``terms`` (`evaluators.EvaluatorSpec`); from ``TABLE`` on, the step
#: tables' K thresholds, then their K values
WEIGHT, ACTIVE, DELTA, TABLE_LEN, TABLE = 0, 1, 2, 3, 4


@inner
def term(i, value, parent_values, spec):
    """Feature ``i``'s term: weight x table(value - parent value if delta, else value). A plain call
    (LLVM inlines it where it pays): inlined by numba, each delta or table term of an evaluator
    re-typed the whole generated `evaluate`, and an evaluator of many such terms took half a
    minute to compile instead of ten seconds."""
    terms = spec.terms
    v = np.float64(value)
    if terms[DELTA, i] != 0.0:
        v -= parent_values[i]
    n = np.int64(terms[TABLE_LEN, i])
    if n > 0:
        k = (terms.shape[0] - TABLE) // 2
        stepped = 0.0
        j = 0
        while j < n and terms[TABLE + j, i] <= v:
            stepped = terms[TABLE + k + j, i]
            j += 1
        v = stepped
    return terms[WEIGHT, i] * v


def _spec_kind(spec) -> Kind:
    """The `Kind` a spec's numba type carries."""
    fields = dict(zip(spec.fields, spec.types))
    return fields["kind"].value


def _groups(features: tuple[Feature, ...], slots=None) -> list[tuple[Feature, list[tuple[int, Feature]]]]:
    """Features in slot order (only ``slots`` when given) grouped by kernel: (first feature,
    [(slot, feature), ...])."""
    groups: dict[int, tuple[Feature, list]] = {}
    for slot, f in enumerate(features):
        if slots is None or slot in slots:
            groups.setdefault(id(f.kernel), (f, []))[1].append((slot, f))
    return list(groups.values())


def _value(f: Feature) -> str:
    return "v" if f.output is None else f"v[{f.output}]"


def _source(features: tuple[Feature, ...], what: str, layout: tuple[Term, ...] = ()) -> tuple[str, dict]:
    """Python source of one generated kernel (``evaluate``, ``board_values`` or ``feature_vector``)
    for ``features`` and an evaluator's ``layout`` (the features ``evaluate`` weighs and
    ``board_values`` computes for a parent), and its globals."""
    env = {"term": term, "top_row": top_row, "np": np, "WEIGHT": WEIGHT}
    kernels: dict[int, str] = {}
    for f in features:
        kernels.setdefault(id(f.kernel), f"k{len(kernels)}")
        env[kernels[id(f.kernel)]] = f.kernel
    terms = {t.slot: t for t in layout}
    body: list[str] = []
    if what == "evaluate":
        body += ["    w = spec.terms[WEIGHT]", "    total = 0.0"]
        groups = _groups(features, terms)
        if any(first.kind == BOARD for first, _ in groups):
            body += ["    board = p.board", "    width = p.width", "    top = top_row(board)"]
        rows = [(slot, f) for first, members in groups for slot, f in members if f.row is not None]
        if rows:  # every row feature weighed, in one pass over the rows
            zero = "np.int64(0)"
            for slot, f in rows:
                env[f"row{slot}"] = f.row
                body.append(f"    a{slot} = top * row{slot}({zero}, {zero}, width)")
            body += [f"    above = {zero}", "    for y in range(top, board.shape[0]):",
                     "        r = np.int64(board[y])"]
            body += [f"        a{slot} += row{slot}(r, above, width)" for slot, _ in rows]
            body.append("        above |= r")
        for first, members in groups:
            k = kernels[id(first.kernel)]
            if first.kind == BOARD and first.row is None:
                body.append(f"    v = {k}(board, width, top)")
            for slot, f in members:
                if first.kind == PLACEMENT:
                    value = f"{k}(p)"
                else:
                    value = f"a{slot}" if f.row is not None else _value(f)
                t = terms[slot]
                if t.delta or t.table:
                    body.append(f"    total += term({slot}, {value}, parent_values, spec)")
                else:
                    body.append(f"    total += w[{slot}] * np.float64({value})")
        body.append("    return total")
        head = "def generated(p, parent_values, spec):"
    elif what == "board_values":
        body += ["    out[:] = 0.0"]
        groups = [g for g in _groups(features, {t.slot for t in layout if t.delta}) if g[0].kind == BOARD]
        if groups:
            body += ["    top = top_row(board)"]
        for first, members in groups:
            body.append(f"    v = {kernels[id(first.kernel)]}(board, width, top)")
            for slot, f in members:
                body.append(f"    out[{slot}] = {_value(f)}")
        head = "def generated(board, width, spec, out):"
    else:  # feature_vector
        body += ["    board = p.board", "    width = p.width", "    top = top_row(board)"]
        for first, members in _groups(features):
            k = kernels[id(first.kernel)]
            if first.kind == PLACEMENT:
                for slot, _ in members:
                    body.append(f"    out[{slot}] = {k}(p)")
                continue
            body.append(f"    v = {k}(board, width, top)")
            for slot, f in members:
                body.append(f"    out[{slot}] = {_value(f)}")
        head = "def generated(p, spec, out):"
    return "\n".join([head, *body]) + "\n", env


def source(what: str = "evaluate", layout: tuple[Term, ...] | None = None) -> str:
    """The generated source of a kernel for the current registry and ``layout`` (default: every
    feature weighed plainly), for reading and debugging."""
    if layout is None:
        layout = tuple(Term(i, False, False) for i in range(len(FEATURES)))
    return _source(tuple(FEATURES.values()), what, layout)[0]


def _generated(what: str, kind: Kind):
    features = _SNAPSHOTS.get(kind.digest)
    if features is None:
        raise FeatureError(f"no feature registry with digest {kind.digest} in this process")
    text, env = _source(features, what, kind.layout)
    name = f"<evaluators.kernels: {what} for {kind.label()}>"
    exec(compile(text, name, "exec"), env)
    return env["generated"]


@overload(evaluate, jit_options={"_nrt": False, "forceinline": True})
def _evaluate_overload(p, parent_values, spec):
    return _generated("evaluate", _spec_kind(spec))


@overload(board_values)
def _board_values_overload(board, width, spec, out):
    return _generated("board_values", _spec_kind(spec))


@overload(feature_vector)
def _feature_vector_overload(p, spec, out):
    return _generated("feature_vector", _spec_kind(spec))


@overload(priority)
def _priority_overload(spec, x, state, spawn_x, spawn_state):
    rank = TIE_BREAKS[_spec_kind(spec).tie]

    def impl(spec, x, state, spawn_x, spawn_state):
        return rank(x, state, spawn_x, spawn_state)

    return impl
