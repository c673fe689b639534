"""The search space (`Space` of `Param`s): the solver settings a tuner varies, vector <-> config.

A parameter names a dotted ``path`` into the solver configuration mapping (``beam.width``,
``beam.score_share``, ``lookahead.depth``, ``beam.clear_min_height.0`` for a list entry) or an
evaluator weight, ``evaluator.features.<feature>`` (the base configuration's evaluator is an inline
mapping, `evaluators.Evaluator.to_dict`; a feature term given as a bare number or as a mapping
``{weight, delta, table}`` gets its weight set either way, and a feature the evaluator does not
list yet is added as a plain term). Every tuner works on real vectors, one gene per parameter:

- ``float``: the value itself, in [low, high];
- ``int``: a real in [low, high], rounded to the nearest integer (halves up) when decoded;
- ``choice``: an index into ``choices``, a real in [0, len - 1], rounded when decoded.

Genes outside the bounds are clipped when decoded, so any real vector maps to a valid setting.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from evaluators.registry import canonical, names as feature_names

from engine.paths import get_dotted, set_dotted

FEATURE_PREFIX = "evaluator.features."
#: significant digits a float gene keeps when decoded: genes an ulp or so apart, as crossover
#: arithmetic makes them, are one setting to the memo
FLOAT_DIGITS = 12
#: the relative distance from the initial point's norm within which `Space.scaled` takes a group
#: as scaled already (12 significant digits leave about 1e-12)
SCALED_TOLERANCE = 1e-10


class SpaceError(ValueError):
    """A parameter that cannot be used; the message is ``<key>: <problem>`` (the caller adds the file)."""


@dataclass(frozen=True)
class Param:
    """One tuned setting (see the module docstring for the encoding)."""

    path: str
    type: str = "float"  # float | int | choice
    low: float | None = None
    high: float | None = None
    choices: tuple | None = None
    init: Any = None

    @property
    def lower(self) -> float:
        return 0.0 if self.type == "choice" else float(self.low)

    @property
    def upper(self) -> float:
        return float(len(self.choices) - 1) if self.type == "choice" else float(self.high)

    def decode(self, gene: float):
        """The setting a gene stands for: clipped to the bounds; a float to 12 significant digits
        (genes an ulp or so apart, as crossover arithmetic makes them, are one setting to the memo);
        an int or a choice rounded."""
        g = min(max(float(gene), self.lower), self.upper)
        if self.type == "float":
            return float(f"{g:.{FLOAT_DIGITS}g}")
        i = int(math.floor(g + 0.5))
        if self.type == "int":
            return i
        return self.choices[i]

    def encode(self, value) -> float:
        """The gene of a setting (ValueError when it is not one of the choices)."""
        if self.type == "choice":
            for i, c in enumerate(self.choices):
                if c == value and (type(c) is type(value) or (_num(c) and _num(value))):
                    return float(i)
            raise ValueError(f"{value!r} is not one of the choices {list(self.choices)}")
        if not _num(value):
            raise ValueError(f"expected a number, got {value!r}")
        return float(value)


def _num(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


# ------------------------------------------------------------------------------------------------
# Dotted paths into a solver configuration mapping


def _feature_key(features: dict, name: str) -> str | None:
    """The key under which ``features`` lists the feature ``name`` (or one of its aliases)."""
    target = canonical(name)
    for k in features:
        if canonical(k) == target:
            return k
    return None


def _feature_name(path: str) -> str:
    name = path[len(FEATURE_PREFIX):]
    return name[: -len(".weight")] if name.endswith(".weight") else name


def get_path(data: dict, path: str):
    """The value at ``path`` (KeyError naming the missing part when there is none)."""
    if path.startswith(FEATURE_PREFIX):
        features = data["evaluator"]["features"]
        key = _feature_key(features, _feature_name(path))
        if key is None:
            raise KeyError(path)
        term = features[key]
        return term["weight"] if isinstance(term, dict) else term
    return get_dotted(data, path)


def set_path(data: dict, path: str, value) -> None:
    """Set the value at ``path`` in place: an evaluator feature's weight by its name or an alias
    (a feature the evaluator does not list yet is added as a plain term), any other setting by
    `paths.set_dotted` (mappings missing on the way are made; `paths.PathError` when the path
    runs into a value or past a list's end)."""
    if path.startswith(FEATURE_PREFIX):
        features = data["evaluator"]["features"]
        name = _feature_name(path)
        key = _feature_key(features, name)
        if key is None:
            features[name] = value
        elif isinstance(features[key], dict):
            features[key]["weight"] = value
        else:
            features[key] = value
        return
    set_dotted(data, path, value)


def with_settings(data: dict, settings: Mapping[str, Any]) -> dict:
    """A copy of a solver configuration mapping with each dotted setting set (`set_path`), e.g. a
    run's ``rescore.overrides``."""
    data = copy.deepcopy(data)
    for path, value in settings.items():
        set_path(data, path, value)
    return data


def check_path(data: dict, path: str) -> None:
    """SpaceError unless ``path`` names a setting of ``data`` (or a known evaluator feature)."""
    if not path or any(not p for p in path.split(".")):
        raise SpaceError(f"{path!r} is not a dotted path")
    if path.startswith(FEATURE_PREFIX):
        ev = data.get("evaluator")
        if not isinstance(ev, dict) or not isinstance(ev.get("features"), dict):
            raise SpaceError(f"{path}: the solver's evaluator is not an inline mapping")
        name = _feature_name(path)
        if canonical(name) not in feature_names():
            from engine.validation import did_you_mean

            raise SpaceError(f"{path}: unknown feature {name!r}{did_you_mean(canonical(name), feature_names())}")
        return
    try:
        node = get_path(data, path)
    except KeyError as e:
        raise SpaceError(f"{path}: no such setting in the solver config ({e.args[0]!r} not found)") from None
    if isinstance(node, (dict, list)):
        raise SpaceError(f"{path}: names a section or a list, not a single setting")


# ------------------------------------------------------------------------------------------------


class Space:
    """The parameters and the base solver configuration they are applied to."""

    def __init__(self, params: Sequence[Param], base: dict, normalize: Sequence[str] = ()):
        self.params = list(params)
        self.base = copy.deepcopy(base)
        self.normalize: list[int] = []  # indices of the parameters scaled together (`config`)
        self.norm = 0.0
        if not self.params:
            raise SpaceError("space: give at least one parameter")
        seen = {}
        for i, p in enumerate(self.params):
            where = f"space.{i}"
            try:
                check_path(self.base, p.path)
            except SpaceError as e:
                raise SpaceError(f"{where}.path: {e}") from None
            ident = _identity(p.path)
            if ident in seen:
                raise SpaceError(f"{where}.path: {p.path} is already tuned by space.{seen[ident]}")
            seen[ident] = i
        self.lower = np.array([p.lower for p in self.params])
        self.upper = np.array([p.upper for p in self.params])
        self.init_values = [self._initial(i, p) for i, p in enumerate(self.params)]
        self._group(list(normalize))

    def _group(self, paths: list[str]) -> None:
        """The parameters ``paths`` names are scaled together by `config` to the initial point's
        norm; each must be a float parameter of the space."""
        if not paths:
            return
        where = {p.path: i for i, p in enumerate(self.params)}
        for k, path in enumerate(paths):
            i = where.get(path)
            if i is None:
                raise SpaceError(f"normalize.{k}: {path} is not a parameter of the space")
            if self.params[i].type != "float":
                raise SpaceError(f"normalize.{k}: {path} is {self.params[i].type}; only float parameters scale")
            if i in self.normalize:
                raise SpaceError(f"normalize.{k}: {path} is listed twice")
            self.normalize.append(i)
        if len(self.normalize) < 2:
            raise SpaceError("normalize: give at least two parameters (one alone would be a constant)")
        self.norm = float(np.linalg.norm([self.init_values[i] for i in self.normalize]))
        if self.norm == 0:
            raise SpaceError("normalize: the initial point's values there are all 0 (no norm to keep)")

    def scaled(self, values) -> list:
        """``values`` with the `normalize` group scaled to the initial point's norm (an all-zero
        group is left as it is); floats to 12 significant digits, as decoding gives them. Values
        scaled already are returned as they are: at that rounding their norm is the initial
        point's only to about 1e-12, and scaling them again could move a last digit."""
        values = list(values)
        if not self.normalize:
            return values
        norm = float(np.linalg.norm([values[i] for i in self.normalize]))
        if abs(norm - self.norm) <= SCALED_TOLERANCE * self.norm:
            return values
        if norm > 0:
            for i in self.normalize:
                values[i] = float(f"{values[i] * self.norm / norm:.{FLOAT_DIGITS}g}")
        return values

    def _initial(self, i: int, p: Param):
        where = f"space.{i}.init"
        if p.init is not None:
            value = p.init
        else:
            try:
                value = get_path(self.base, p.path)
            except KeyError:
                value = None  # a feature the evaluator does not list yet
            if value is None:
                return p.decode((p.lower + p.upper) / 2)
        try:
            gene = p.encode(value)
        except ValueError as e:
            raise SpaceError(f"{where}: {e}") from None
        if p.type != "choice" and not p.lower <= gene <= p.upper:
            src = "init" if p.init is not None else f"the solver config's {p.path}"
            raise SpaceError(f"{where}: {src} = {value} is outside [{p.low:g}, {p.high:g}]")
        return p.decode(gene)

    @property
    def dim(self) -> int:
        return len(self.params)

    @property
    def names(self) -> list[str]:
        return [p.path for p in self.params]

    def decode(self, vector) -> list:
        return [p.decode(g) for p, g in zip(self.params, vector)]

    def played(self, vector) -> list:
        """The values a gene vector is played with: decoded, the `normalize` group scaled (what
        evaluations.csv and best.yaml record)."""
        return self.scaled(self.decode(vector))

    def encode(self, values) -> np.ndarray:
        return np.array([p.encode(v) for p, v in zip(self.params, values)], dtype=np.float64)

    def to_unit(self, genes) -> np.ndarray:
        """Genes in the unit cube: each range scaled to [0, 1] (a range of one value to 0), so that
        a share of it means the same for every parameter (the swarm, CMA-ES and CEM search there)."""
        span = np.where(self.upper > self.lower, self.upper - self.lower, 1.0)
        return (np.asarray(genes, dtype=np.float64) - self.lower) / span

    def from_unit(self, u) -> np.ndarray:
        """The genes of a point of the unit cube, clipped to it (`to_unit`'s inverse inside it)."""
        return self.lower + np.clip(np.asarray(u, dtype=np.float64), 0.0, 1.0) * (self.upper - self.lower)

    def clip(self, vector) -> np.ndarray:
        return np.clip(np.asarray(vector, dtype=np.float64), self.lower, self.upper)

    def point(self) -> np.ndarray:
        """The initial point's genes."""
        return self.encode(self.init_values)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` uniform samples: floats uniform in [low, high], ints and choices uniform over their values."""
        out = np.empty((n, self.dim))
        for j, p in enumerate(self.params):
            if p.type == "float":
                out[:, j] = rng.uniform(p.lower, p.upper, n)
            else:
                out[:, j] = rng.integers(int(p.lower), int(p.upper), n, endpoint=True)
        return out

    def around(self, rng: np.random.Generator, n: int, point: np.ndarray, sigma: float) -> np.ndarray:
        """``n`` vectors: ``point`` itself, then Gaussian perturbations of it (standard deviation
        ``sigma`` times each gene's range), clipped to the bounds."""
        span = self.upper - self.lower
        out = point + rng.normal(0.0, 1.0, (n, self.dim)) * sigma * span
        out[0] = point
        return self.clip(out)

    def config(self, values) -> dict:
        """The base solver configuration with the parameters set to ``values`` (a new mapping), the
        `normalize` group scaled (`scaled`): candidates that differ only in that group's scale are
        one configuration, to the solver and to the memo."""
        return with_settings(self.base, {p.path: v for p, v in zip(self.params, self.scaled(values))})

    def values_in(self, data: dict) -> list:
        """The parameters' values in a solver configuration mapping (None where it has none)."""
        out = []
        for p in self.params:
            try:
                out.append(get_path(data, p.path))
            except (KeyError, TypeError):
                out.append(None)
        return out


def _identity(path: str) -> str:
    if path.startswith(FEATURE_PREFIX):
        return FEATURE_PREFIX + canonical(_feature_name(path))
    return path
