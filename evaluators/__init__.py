"""Evaluators: features of a placement (numba kernels, declared in a registry), weighted by presets.

- `registry`: how a feature or a tie-break is declared (`board_feature`, `board_features`,
  `row_feature`, `placement_feature`, `tie_break`) and what is read from the declarations (names
  and slots, the `registry.Kind` token of a registry and a layout, the docs' table);
- `kernels`: the kernels generated from the registry (`evaluate`, `board_values`,
  `feature_vector`, `priority`);
- `features`: the built-in features and tie-breaks, and the column forms of those that have one;
- `incremental`: a child valued from its parent's columns (`incremental.column_form`,
  `incremental.evaluate_child`), what a 1-ply search pays per placement;
- `evaluator`: the `Evaluator` (validated YAML <-> weights <-> `EvaluatorSpec`), `load_evaluator`.

Importing compiles nothing: kernels compile (or load from numba's cache) on first call. In full:
docs/evaluators.md.
"""

from . import features as _builtin  # noqa: F401  (registers the built-in features first)
from . import registry
from .evaluator import (
    PRESETS_DIR,
    Evaluator,
    EvaluatorError,
    EvaluatorFile,
    EvaluatorSpec,
    FeatureTerm,
    from_dict,
    load_evaluator,
    preset_names,
)
from .kernels import board_values, evaluate, feature_vector, priority
from .registry import FeatureError, Placement, board_feature, board_features, placement_feature, row_feature, tie_break

__all__ = [
    "Evaluator", "EvaluatorError", "EvaluatorFile", "EvaluatorSpec", "FeatureError", "FeatureTerm", "PRESETS_DIR",
    "Placement", "board_feature", "board_features", "board_values", "evaluate", "feature_vector",
    "from_dict", "load_evaluator", "placement_feature", "preset_names", "priority", "registry", "row_feature",
    "tie_break",
]
