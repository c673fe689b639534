"""Evaluators: weighted features read from YAML, turned into the spec the kernels multiply.

The YAML format (a file, a preset of ``evaluators/presets/``, or the same structure as a dict)::

    name: pierre_dellacherie          # optional; default: the file's stem ("inline" for a dict)
    features:                         # required, at least one; names from the feature registry
      landing_height: -45                 # shorthand: just a weight
      holes: {weight: -20, delta: true}   # the change from the parent board (board features only)
      lines_cleared: {weight: 0.5, table: [[1, 0], [2, 100], [3, 500], [4, 1000]]}
    tie_break: pd_priority            # optional: null (default) or a registered tie-break

`load_evaluator` reads it into an `Evaluator`; the schema is pydantic (`EvaluatorFile`, `TermFile`),
and every problem raises `EvaluatorError` in one line ``"<file or origin>: <dotted key>: <problem>"``.
A feature's term, its step table and the keys' defaults: docs/evaluators.md, 'The YAML format'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Mapping, NamedTuple, Optional

import numpy as np
import yaml
from numba import njit
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, field_validator, model_validator

from engine.files import YamlError, load_yaml
from engine.validation import did_you_mean, format_validation_error, show

from . import kernels, registry
from .kernels import board_values, evaluate
from .registry import Kind, Placement

PRESETS_DIR = Path(__file__).resolve().parent / "presets"


class EvaluatorError(ValueError):
    """An evaluator description that cannot be used; the message is one line naming where."""


class EvaluatorSpec(NamedTuple):
    """An evaluator as the kernels read it, one column per registered feature (`registry.names`):
    ``kind`` (the registry, tie-break and layout the kernels are compiled for: which features are
    weighed, delta or not, through a table or not, see `registry.Kind`); ``terms``, one read-only
    float64 array whose rows are named in `registry` (``WEIGHT``, ``ACTIVE`` (1: the feature is
    used), ``DELTA`` (1: minus the parent's value), ``TABLE_LEN`` (0: no step table), then the
    tables' K thresholds and K values from row ``TABLE``); ``reads_parent``: some delta feature reads
    the parent's values (`board_values`; without one they are all zero, and a caller may skip
    computing them). One array rather than six: a kernel call passes a spec by value, field by
    field. The properties below read it from Python."""

    kind: Kind
    terms: np.ndarray
    reads_parent: bool

    @property
    def weights(self) -> np.ndarray:
        return self.terms[kernels.WEIGHT]

    @property
    def by_board(self) -> bool:
        """Whether a child's value is a function of its board alone: every feature weighed is a
        board feature, none taken minus the parent's (equal boards, equal values)."""
        features = registry._SNAPSHOTS[self.kind.digest]
        return all(not t.delta and features[t.slot].kind == registry.BOARD for t in self.kind.layout)

    @property
    def active(self) -> np.ndarray:
        return self.terms[kernels.ACTIVE] != 0

    @property
    def delta(self) -> np.ndarray:
        return self.terms[kernels.DELTA] != 0

    @property
    def table_len(self) -> np.ndarray:
        return self.terms[kernels.TABLE_LEN].astype(np.int64)

    @property
    def table_x(self) -> np.ndarray:
        k = (self.terms.shape[0] - kernels.TABLE) // 2
        return self.terms[kernels.TABLE:kernels.TABLE + k].T

    @property
    def table_y(self) -> np.ndarray:
        k = (self.terms.shape[0] - kernels.TABLE) // 2
        return self.terms[kernels.TABLE + k:].T


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


# ------------------------------------------------------------------------------------------------
# The schema


def _finite(what: str):
    """A check of a number the kernels multiply: a finite float (an integer too large for a float,
    beyond 1.8e308, is no more finite than ``.inf``)."""
    def check(v):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise ValueError(f"{what} must be a finite number, got {show(v)}")
        try:
            f = float(v)
        except OverflowError:
            f = math.inf
        if not math.isfinite(f):
            raise ValueError(f"{what} must be a finite number, got {show(v)}")
        return f

    return check


def _pair(v):
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        raise ValueError(f"expected a [threshold, value] pair, got {show(v)}")
    return (_finite("threshold")(v[0]), _finite("value")(v[1]))


Weight = Annotated[float, BeforeValidator(_finite("weight"))]
Pair = Annotated[tuple[float, float], BeforeValidator(_pair)]


class TermFile(BaseModel):
    """One feature's entry: a weight, or a mapping with ``weight``, ``delta`` and ``table``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    weight: Weight
    delta: bool = False
    table: Optional[tuple[Pair, ...]] = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data):
        if isinstance(data, Mapping):
            return data
        return {"weight": _finite("weight")(data)}

    @field_validator("delta", mode="before")
    @classmethod
    def _bool(cls, v):
        if not isinstance(v, bool):
            raise ValueError(f"expected true or false, got {show(v)}")
        return v

    @field_validator("table", mode="before")
    @classmethod
    def _list(cls, v):
        if v is None:
            return v
        if not isinstance(v, (list, tuple)):
            raise ValueError(f"expected a list of [threshold, value] pairs, got {show(v)}")
        if not v:
            raise ValueError("empty table (leave the key out for no table)")
        return v

    @field_validator("table")
    @classmethod
    def _increasing(cls, v):
        if v is not None:
            for j in range(1, len(v)):
                if v[j][0] <= v[j - 1][0]:
                    raise ValueError(f"thresholds must increase ({show(v[j][0])} after {show(v[j - 1][0])}, pair {j})")
        return v


class EvaluatorFile(BaseModel):
    """An evaluator's YAML."""

    model_config = ConfigDict(extra="forbid")

    name: Optional[str] = None
    description: Optional[str] = ""
    features: dict[str, TermFile]
    tie_break: Optional[str] = None

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, v):
        if v is not None and (not isinstance(v, str) or not v):
            raise ValueError(f"expected a non-empty string, got {show(v)}")
        return v

    @field_validator("features", mode="before")
    @classmethod
    def _names(cls, v):
        if not isinstance(v, Mapping):
            raise ValueError(f"expected a mapping feature -> weight, got {show(v)}")
        if not v:
            raise ValueError("no feature given")
        seen: dict[str, str] = {}
        for name in v:
            if not isinstance(name, str) or registry.canonical(name) not in registry.names():
                raise ValueError(f"{name}: unknown feature{did_you_mean(name, registry.known_names())} "
                                 f"(known: {', '.join(registry.known_names())})")
            target = registry.canonical(name)
            if target in seen:
                raise ValueError(f"{name}: same feature as {seen[target]} ({name} is an alias); give it once")
            seen[target] = name
            term = v[name]
            if isinstance(term, Mapping) and term.get("delta") is True and registry.is_placement(name):
                raise ValueError(f"{name}.delta: a placement feature has no parent value; delta applies to "
                                 "board features only")
        return v

    @field_validator("tie_break")
    @classmethod
    def _tie_break(cls, v):
        known = [t for t in registry.tie_breaks() if t != "none"]
        if v is not None and v not in known:
            raise ValueError(f"unknown tie-break {show(v)} (known: null, {', '.join(known)})")
        return v


# ------------------------------------------------------------------------------------------------
# The value


@njit(cache=True)
def value_of(p, spec):
    """`evaluate` of one placement, the parent's values computed here (for Python callers)."""
    pv = np.zeros(spec.terms.shape[1])
    board_values(p.parent, p.width, spec, pv)
    return evaluate(p, pv, spec)


@dataclass(frozen=True)
class Evaluator:
    """A named set of weighted features (``weights``: feature name or alias -> `FeatureTerm`)."""

    name: str
    description: str
    weights: dict[str, FeatureTerm] = field(default_factory=dict)
    tie_break: str | None = None

    def __post_init__(self):
        try:
            EvaluatorFile.model_validate(self.to_dict())
        except ValidationError as e:
            raise EvaluatorError(format_validation_error(e, self.name, EvaluatorFile)) from None

    @cached_property
    def spec(self) -> EvaluatorSpec:
        """The kernels' `EvaluatorSpec` under the feature registry as it is now."""
        names = registry.names()
        k = max([1] + [len(t.table) for t in self.weights.values() if t.table is not None])
        terms = np.zeros((kernels.TABLE + 2 * k, len(names)), np.float64)
        for name, term in self.weights.items():
            i = names.index(registry.canonical(name))
            terms[kernels.WEIGHT, i] = term.weight
            terms[kernels.ACTIVE, i] = 1.0
            terms[kernels.DELTA, i] = 1.0 if term.delta else 0.0
            if term.table is not None:
                terms[kernels.TABLE_LEN, i] = len(term.table)
                for j, (t, v) in enumerate(term.table):
                    terms[kernels.TABLE + j, i] = t
                    terms[kernels.TABLE + k + j, i] = v
        terms.setflags(write=False)
        layout = [registry.Term(int(i), bool(terms[kernels.DELTA, i]), bool(terms[kernels.TABLE_LEN, i]))
                  for i in np.flatnonzero(terms[kernels.ACTIVE])]
        return EvaluatorSpec(registry.kind(self.tie_break, layout), terms, bool(terms[kernels.DELTA].any()))

    def value(self, parent, locked, cleared, cells, x, y, lines, points, width) -> float:
        """The value of one placement (see `kernels.evaluate`); computes the parent's values too."""
        p = Placement(_board(parent), _board(locked), _board(cleared), np.ascontiguousarray(cells, np.int64),
                      int(x), int(y), int(lines), int(points), int(width))
        return float(value_of(p, self.spec))

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
        by_feature = {registry.canonical(n): n for n in new}
        for name, w in weights.items():
            if registry.canonical(name) not in registry.names():
                raise EvaluatorError(f"with_weights: {name}: unknown feature{did_you_mean(name, registry.known_names())} "
                                     f"(known: {', '.join(registry.known_names())})")
            try:
                w = _finite("weight")(w)
            except ValueError as e:
                raise EvaluatorError(f"with_weights: {name}: {e}") from None
            key = by_feature.get(registry.canonical(name), name)
            old = new.get(key)
            new[key] = FeatureTerm(w) if old is None else replace(old, weight=w)
            by_feature[registry.canonical(name)] = key
        return replace(self, weights=new)

    def __hash__(self):
        return hash((self.name, self.description, tuple(self.weights.items()), self.tie_break))

    def __getstate__(self):  # the cached spec is rebuilt (under the receiving process's registry)
        state = dict(self.__dict__)
        state.pop("spec", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)


def _board(b) -> np.ndarray:
    return np.ascontiguousarray(b, np.uint16)


# ------------------------------------------------------------------------------------------------
# Loading


def from_dict(data: Any, origin: str = "<inline>", default_name: str = "inline") -> Evaluator:
    """An `Evaluator` from the YAML structure; problems raise `EvaluatorError` naming ``origin``."""
    if not isinstance(data, Mapping):
        keys = ", ".join(EvaluatorFile.model_fields)
        raise EvaluatorError(f"{origin}: expected a mapping with keys {keys}, got {show(data)}")
    try:
        parsed = EvaluatorFile.model_validate(data)
    except ValidationError as e:
        raise EvaluatorError(format_validation_error(e, origin, EvaluatorFile)) from None
    weights = {name: FeatureTerm(t.weight, t.delta, t.table) for name, t in parsed.features.items()}
    return Evaluator(name=parsed.name or default_name, description=parsed.description or "", weights=weights,
                     tie_break=parsed.tie_break)


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
    data = _read_yaml(path, shown)
    if data is None:
        raise EvaluatorError(f"{shown}: empty file")
    return from_dict(data, origin=shown, default_name=path.stem)


def _read_yaml(path: Path, shown: str):
    """The YAML document in ``path`` (one `EvaluatorError` line naming ``shown`` when it cannot be read)."""
    try:
        return load_yaml(path)
    except YamlError as e:
        raise EvaluatorError(f"{shown}: {e.problem}") from None


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
        raise EvaluatorError(f"{text}: no such file or preset{did_you_mean(text, preset_names())} "
                             f"(presets: {', '.join(preset_names())})")
    return load_file(path)
