"""Evaluators: features of a placement (numba kernels), weighted by YAML presets.

- `features`: one kernel per feature, `FEATURES` (the weight-vector order), `ALIASES`, `describe()`;
- `kernel`: `evaluate` / `parent_values` / `feature_vector`, callable inside other numba kernels;
- `evaluator`: the `Evaluator` (YAML <-> weights <-> spec arrays) and `load_evaluator`.

Importing compiles nothing: kernels compile (or load from numba's cache) on first call.
"""

from .evaluator import (
    PRESETS_DIR,
    Evaluator,
    EvaluatorError,
    FeatureTerm,
    from_dict,
    load_evaluator,
    preset_names,
)
from .features import ALIASES, FEATURES, PLACEMENT_FEATURES, describe
from .kernel import evaluate, feature_vector, parent_values

__all__ = [
    "ALIASES", "Evaluator", "EvaluatorError", "FEATURES", "FeatureTerm", "PLACEMENT_FEATURES",
    "PRESETS_DIR", "describe", "evaluate", "feature_vector", "from_dict", "load_evaluator",
    "parent_values", "preset_names",
]
