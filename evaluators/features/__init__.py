"""The built-in features and tie-breaks: one registered numba kernel each (see `evaluators.registry`).

Boards are the engine's: a numpy ``uint16`` array of ``height`` rows, row ``y = 0`` at the top,
bit ``x`` of row ``y`` set when cell (x, y) is occupied; every kernel works on whole rows as int64
bit masks, never cell by cell. Modules, imported in registration order, which is slot order (the
order the evaluator has always added them, so values are bit-for-bit those of earlier versions):
`placement` (features of the placement itself), `board` (board and row features), `literature`
(the literature's conventions and features) and `tie_breaks`; `helpers` holds what they share.
Beside a feature, its *form* when it has one (`evaluators.incremental`). Limits: ``width`` up to
16, ``height`` up to `helpers.MAX_HEIGHT`. The terms the descriptions use (column height, hole,
open to the sky), the forms and the limits: docs/evaluators.md, "How features become kernels".
"""

from . import placement  # noqa: F401  (first: registration order is slot order)
from . import board  # noqa: F401
from . import literature  # noqa: F401
from . import tie_breaks  # noqa: F401
