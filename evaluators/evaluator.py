"""Evaluators: weighted features read from YAML, turned into the arrays the kernel multiplies.

The YAML format (a file, a preset of ``evaluators/presets/``, or the same structure as a dict)::

    name: pierre_dellacherie          # optional; default: the file's stem ("inline" for a dict)
    description: Pierre Dellacherie's six features (one line)      # optional
    features:                         # required, at least one; names from features.FEATURES or an alias
      landing_height: -45                 # shorthand: just a weight
      eroded_cells: {weight: 34}
      holes: {weight: -20, delta: true}   # the change from the parent board (board features only)
      lines_cleared: {weight: 0.5, table: [[1, 0], [2, 100], [3, 500], [4, 1000]]}
    tie_break: pd_priority            # optional: null (default) or pd_priority

Keys of a feature: ``weight`` (a number, required), ``delta`` (true/false, default false),
``table`` (null, default, or a list of ``[threshold, value]`` pairs, thresholds strictly
increasing). A feature's term is ``weight * t(v)``, where v is the feature's value (minus the parent
board's value when ``delta``) and t the step table: the value of the last pair whose threshold is
``<= v``, 0 below the first threshold; without a table t(v) = v. ``tie_break`` names how a solver
orders placements of equal value; ``pd_priority`` is Pierre Dellacherie's priority, implemented by
the solver. Numbers may be written ``1e9`` (YAML 1.2 style) as well as ``1.0e+9``.

Every problem raises `EvaluatorError` with one line ``"<file or origin>: <dotted key>: <problem>"``,
e.g. ``evaluators/presets/x.yaml: features.holse: unknown feature (known: aggregate_height, ...)``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import yaml

from .features import FEATURES, PLACEMENT_FEATURES, canonical, known_names
from .kernel import evaluate, parent_values

PRESETS_DIR = Path(__file__).resolve().parent / "presets"
TIE_BREAKS = ("pd_priority",)
TOP_KEYS = ("name", "description", "features", "tie_break")
TERM_KEYS = ("weight", "delta", "table")


class EvaluatorError(ValueError):
    """An evaluator description that cannot be used; the message is one line naming where."""


@dataclass(frozen=True)
class FeatureTerm:
    """One weighted feature: ``weight * table(value - parent value if delta else value)``."""

    weight: float
    delta: bool = False
    table: tuple[tuple[float, float], ...] | None = None

    def to_yaml_value(self) -> float | dict:
        """The shorthand weight when there is nothing else, else the mapping."""
        if not self.delta and self.table is None:
            return self.weight
        out: dict[str, Any] = {"weight": self.weight}
        if self.delta:
            out["delta"] = True
        if self.table is not None:
            out["table"] = [[t, v] for t, v in self.table]
        return out


@dataclass(frozen=True)
class Evaluator:
    """A named set of weighted features (``weights``: feature name or alias -> `FeatureTerm`)."""

    name: str
    description: str
    weights: dict[str, FeatureTerm] = field(default_factory=dict)
    tie_break: str | None = None

    def __post_init__(self):
        seen = set()
        for name, term in self.weights.items():
            if canonical(name) not in FEATURES:
                raise EvaluatorError(f"{self.name}: features.{name}: unknown feature (known: {', '.join(known_names())})")
            if canonical(name) in seen:
                raise EvaluatorError(f"{self.name}: features.{name}: the same feature is listed twice (alias)")
            if not isinstance(term, FeatureTerm):
                raise EvaluatorError(f"{self.name}: features.{name}: expected a FeatureTerm, got {type(term).__name__}")
            seen.add(canonical(name))
        if self.tie_break is not None and self.tie_break not in TIE_BREAKS:
            raise EvaluatorError(f"{self.name}: tie_break: unknown tie-break {self.tie_break!r}")

    @cached_property
    def spec(self) -> tuple:
        """``(weights, active, delta, table_x, table_y, table_len)`` for `kernel.evaluate`."""
        n = len(FEATURES)
        k = max([1] + [len(t.table) for t in self.weights.values() if t.table is not None])
        w = np.zeros(n, np.float64)
        active = np.zeros(n, np.bool_)
        delta = np.zeros(n, np.bool_)
        tx = np.zeros((n, k), np.float64)
        ty = np.zeros((n, k), np.float64)
        tlen = np.zeros(n, np.int64)
        for name, term in self.weights.items():
            i = FEATURES.index(canonical(name))
            w[i] = term.weight
            active[i] = True
            delta[i] = term.delta
            if term.table is not None:
                tlen[i] = len(term.table)
                for j, (t, v) in enumerate(term.table):
                    tx[i, j] = t
                    ty[i, j] = v
        for a in (w, active, delta, tx, ty, tlen):
            a.setflags(write=False)
        return (w, active, delta, tx, ty, tlen)

    def value(self, parent, locked, cleared, cells, x, y, lines, points, width) -> float:
        """The value of one placement (see `kernel.evaluate`); computes the parent's values too."""
        spec = self.spec
        pv = np.zeros(len(FEATURES), np.float64)
        parent_values(parent, width, spec, pv)
        return float(evaluate(parent, pv, locked, cleared, np.asarray(cells, np.int64), int(x), int(y),
                              int(lines), int(points), int(width), spec))

    def to_dict(self) -> dict:
        """The YAML structure (plain types); ``from_dict(e.to_dict()) == e``."""
        return {
            "name": self.name,
            "description": self.description,
            "features": {name: term.to_yaml_value() for name, term in self.weights.items()},
            "tie_break": self.tie_break,
        }

    def to_yaml(self) -> str:
        """`to_dict` as YAML text (the caller writes it where it belongs)."""
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    def with_weights(self, weights: Mapping[str, float]) -> "Evaluator":
        """A copy with the weights of the named features replaced (delta and table kept); a named
        feature the evaluator does not use yet is added as a plain term. A name may be an alias of a
        feature the evaluator lists under its other name."""
        new = dict(self.weights)
        by_feature = {canonical(n): n for n in new}
        for name, w in weights.items():
            if canonical(name) not in FEATURES:
                raise EvaluatorError(f"with_weights: {name}: unknown feature (known: {', '.join(known_names())})")
            if not _is_number(w):
                raise EvaluatorError(f"with_weights: {name}: weight must be a finite number, got {w!r}")
            key = by_feature.get(canonical(name), name)
            old = new.get(key)
            new[key] = FeatureTerm(float(w)) if old is None else replace(old, weight=float(w))
            by_feature[canonical(name)] = key
        return replace(self, weights=new)

    def __hash__(self):
        return hash((self.name, self.description, tuple(self.weights.items()), self.tie_break))

    def __getstate__(self):  # the cached spec is rebuilt, not pickled
        state = dict(self.__dict__)
        state.pop("spec", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)


# ------------------------------------------------------------------------------------------------
# Loading


class _Loader(yaml.SafeLoader):
    """Safe loader that also reads YAML 1.2 floats such as ``1e9`` and ``-1e-3`` as numbers."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) \
        and math.isfinite(float(v))


def _show(v) -> str:
    """A value as YAML would spell it, short."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    text = repr(v) if isinstance(v, str) else str(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _fail(origin: str, key: str | None, problem: str):
    raise EvaluatorError(f"{origin}: {key}: {problem}" if key else f"{origin}: {problem}")


def _parse_table(origin: str, key: str, table) -> tuple[tuple[float, float], ...] | None:
    if table is None:
        return None
    if not isinstance(table, (list, tuple)):
        _fail(origin, key, f"expected a list of [threshold, value] pairs, got {_show(table)}")
    if not table:
        _fail(origin, key, "empty table (leave the key out for no table)")
    out = []
    last = None
    for j, pair in enumerate(table):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            _fail(origin, f"{key}.{j}", f"expected a [threshold, value] pair, got {_show(pair)}")
        for part, v in zip(("threshold", "value"), pair):
            if not _is_number(v):
                _fail(origin, f"{key}.{j}", f"{part} must be a finite number, got {_show(v)}")
        t, v = float(pair[0]), float(pair[1])
        if out and t <= out[-1][0]:
            _fail(origin, f"{key}.{j}", f"thresholds must increase ({_show(pair[0])} after {_show(last)})")
        out.append((t, v))
        last = pair[0]
    return tuple(out)


def _parse_term(origin: str, key: str, name: str, raw) -> FeatureTerm:
    if not isinstance(raw, Mapping):
        if not _is_number(raw):
            _fail(origin, key, f"weight must be a finite number, got {_show(raw)}")
        return FeatureTerm(float(raw))
    for k in raw:
        if k not in TERM_KEYS:
            _fail(origin, f"{key}.{k}", f"unknown option (known: {', '.join(TERM_KEYS)})")
    if "weight" not in raw:
        _fail(origin, f"{key}.weight", "missing (every feature needs a weight)")
    w = raw["weight"]
    if not _is_number(w):
        _fail(origin, f"{key}.weight", f"weight must be a finite number, got {_show(w)}")
    d = raw.get("delta", False)
    if not isinstance(d, bool):
        _fail(origin, f"{key}.delta", f"expected true or false, got {_show(d)}")
    if d and canonical(name) in PLACEMENT_FEATURES:
        _fail(origin, f"{key}.delta", "a placement feature has no parent value; delta applies to board features only")
    table = _parse_table(origin, f"{key}.table", raw.get("table"))
    return FeatureTerm(float(w), d, table)


def from_dict(data: Any, origin: str = "<inline>", default_name: str = "inline") -> Evaluator:
    """An `Evaluator` from the YAML structure; problems raise `EvaluatorError` naming ``origin``."""
    if not isinstance(data, Mapping):
        _fail(origin, None, f"expected a mapping with keys {', '.join(TOP_KEYS)}, got {_show(data)}")
    for k in data:
        if k not in TOP_KEYS:
            _fail(origin, str(k), f"unknown key (known: {', '.join(TOP_KEYS)})")
    name = data.get("name", default_name)
    if not isinstance(name, str) or not name:
        _fail(origin, "name", f"expected a non-empty string, got {_show(name)}")
    description = data.get("description", "")
    if description is None:
        description = ""
    if not isinstance(description, str):
        _fail(origin, "description", f"expected a string, got {_show(description)}")
    if "features" not in data:
        _fail(origin, "features", "missing (give at least one feature)")
    raw = data["features"]
    if not isinstance(raw, Mapping):
        _fail(origin, "features", f"expected a mapping feature -> weight, got {_show(raw)}")
    if not raw:
        _fail(origin, "features", "no feature given")
    weights: dict[str, FeatureTerm] = {}
    seen: dict[str, str] = {}
    for fname, term in raw.items():
        key = f"features.{fname}"
        if not isinstance(fname, str) or canonical(fname) not in FEATURES:
            _fail(origin, key, f"unknown feature (known: {', '.join(known_names())})")
        target = canonical(fname)
        if target in seen:
            _fail(origin, key, f"same feature as {seen[target]} ({fname} is an alias); give it once")
        seen[target] = fname
        weights[fname] = _parse_term(origin, key, fname, term)
    tie_break = data.get("tie_break")
    if tie_break is not None and tie_break not in TIE_BREAKS:
        _fail(origin, "tie_break", f"unknown tie-break {_show(tie_break)} (known: null, {', '.join(TIE_BREAKS)})")
    return Evaluator(name=name, description=description, weights=weights, tie_break=tie_break)


def _display(path: Path) -> str:
    """How a file is named in messages: presets as ``evaluators/presets/<file>``, others as given."""
    full = path.resolve()
    if full.is_relative_to(PRESETS_DIR):
        return full.relative_to(PRESETS_DIR.parents[1]).as_posix()
    return str(path)


def load_file(path: str | Path) -> Evaluator:
    """An `Evaluator` from a YAML file."""
    path = Path(path)
    shown = _display(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        _fail(shown, None, "file not found")
    except OSError as e:
        _fail(shown, None, f"cannot read: {e.strerror or e}")
    try:
        data = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).split("\n")[0]
        _fail(shown, None, f"invalid YAML: {where}{problem}")
    if data is None:
        _fail(shown, None, "empty file")
    return from_dict(data, origin=shown, default_name=path.stem)


def preset_names() -> list[str]:
    """Names of the presets in `PRESETS_DIR`, sorted."""
    return sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))


def load_evaluator(source: str | Path | Mapping | Evaluator) -> Evaluator:
    """An `Evaluator` from a YAML file path, a preset name (``"pierre_dellacherie"``), an inline
    dict (the YAML structure) or an `Evaluator` (returned as is)."""
    if isinstance(source, Evaluator):
        return source
    if isinstance(source, Mapping):
        return from_dict(source)
    if not isinstance(source, (str, Path)):
        raise EvaluatorError(f"<inline>: expected a path, a preset name or a mapping, got {type(source).__name__}")
    path = Path(source)
    if path.is_file():
        return load_file(path)
    text = str(source)
    if isinstance(source, str) and "/" not in text and "\\" not in text and not text.endswith((".yaml", ".yml")):
        preset = PRESETS_DIR / f"{text}.yaml"
        if preset.is_file():
            return load_file(preset)
        _fail(text, None, f"no such file or preset (presets: {', '.join(preset_names())})")
    return load_file(path)
