"""What the policies for unknown pieces share: the class a policy derives from, and `choose`, the
one call the game loop makes.

A policy for unknown pieces (an *online* policy) sees only the board, the current piece and, when
the game shows it, the preview; it never reads further along the sequence. One module per policy
declares, on a class derived from `OnlinePolicy` and registered with `solver.registry.register`:

- ``name``, and ``Settings``: its settings (a pydantic model, the configuration section named after
  it), if it has any;
- ``Bundle``: a NamedTuple class of its own, its parameters and state as its kernel reads them
  (numba compiles it as a tuple), and `OnlinePolicy.new_bundle`, which builds one;
- ``choose_kernel``: a numba kernel ``choose(bundle, board, shape, preview, t, rules, spec, ws)``
  returning the index of the chosen placement of the current piece in ``ws.found[CURRENT]`` (-1
  when none survives); ``rules`` is `engine.KernelRules`, ``spec`` the evaluator's
  `EvaluatorSpec`, ``ws`` the shared `Workspace`;
- ``allocates = False`` when that kernel allocates no array: its games then run without numba's
  reference counting (`OnlinePolicy.allocates`).

The game loop (`solver.online.games`) calls `choose`, a numba overload that compiles, into the
calling kernel, the kernel of the registered policy whose ``Bundle`` is the bundle's class: no
dispatch code lists the policies.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numba.core import types
from numba.extending import overload

from engine import Rules
from evaluators import Evaluator

from .. import registry
from ..registry import SolverConfig
from ._kernels import CURRENT, workspace


class OnlinePolicy:
    """One policy for unknown pieces under ``rules`` with ``evaluator`` (see the module docstring
    for what a subclass declares). ``bundle`` is its bundle for this configuration, ``ws`` its
    workspace."""

    name: ClassVar[str] = ""
    #: its settings: a pydantic model, the configuration section named after it (None: it has none)
    Settings: ClassVar[Any] = None
    #: it plays unknown pieces, scored on seeded games (`solver.registry`)
    known_pieces: ClassVar[bool] = False
    Bundle: ClassVar[type]
    choose_kernel: ClassVar[Any]
    #: its kernel allocates (numba arrays): its games keep numba's reference counting; a policy
    #: whose kernel allocates nothing says False, and its games run without it, faster
    #: (`solver.online.games.game_loop`)
    allocates: ClassVar[bool] = True

    def __init__(self, config: SolverConfig, rules: Rules, evaluator: Evaluator):
        self.config = config
        self.rules = rules
        self.evaluator = evaluator
        self.spec = evaluator.spec
        self.ws = workspace(rules.height, rules.width, self.spec.terms.shape[1])
        self.bundle = self.new_bundle()

    @property
    def settings(self):
        """This policy's section of the configuration (registered with settings)."""
        return getattr(self.config, self.name)

    def new_bundle(self):
        """The bundle its kernel reads, for this configuration and rules (a policy without
        settings or state: an empty one)."""
        return self.Bundle()

    def seed(self, seed: int) -> None:
        """Seed the policy's own draws from a game's seed (a policy without draws: nothing)."""

    def choose(self, board: np.ndarray, t: int, shape: int, preview: int = -1) -> np.ndarray | None:
        """The placement (x, y, state) for piece ``t`` (0-based) of ``shape`` on ``board``, with the
        preview's shape or -1 (not passed on under rules that show no preview); None when every
        placement ends the game."""
        board = np.ascontiguousarray(board, np.uint16)
        if not self.rules.preview:
            preview = -1
        kernel = type(self).choose_kernel  # on the class: a numba function is not bound to the object
        k = kernel(self.bundle, board, shape, preview, t, self.rules.kernel, self.spec, self.ws)
        return None if k < 0 else self.ws.found[CURRENT, k].copy()


def choose(bundle, board, shape, preview, t, rules, spec, ws):
    """The choice of the policy whose bundle ``bundle`` is: the index into ``ws.found[CURRENT]`` of
    the placement of the current piece (``shape``, piece ``t``, with the shown ``preview`` or -1)
    on ``board``, or -1 when every placement ends the game. Numba kernels only: the policy's
    kernel is compiled into the caller, chosen by the bundle's class."""
    raise TypeError("choose is a numba kernel: call it from a jitted function, or use OnlinePolicy.choose")


def policy_of(bundle_class: type | None) -> type[OnlinePolicy]:
    """The registered policy for unknown pieces whose ``Bundle`` is ``bundle_class``."""
    for entry in registry.entries():
        if not entry.known_pieces and entry.policy.Bundle is bundle_class:
            return entry.policy
    raise registry.PolicyError(f"no registered policy for unknown pieces has the bundle class {bundle_class!r}")


@overload(choose)
def _choose_overload(bundle, board, shape, preview, t, rules, spec, ws):
    if not isinstance(bundle, types.BaseNamedTuple):
        return None
    kernel = policy_of(bundle.instance_class).choose_kernel

    def impl(bundle, board, shape, preview, t, rules, spec, ws):
        return kernel(bundle, board, shape, preview, t, rules, spec, ws)

    return impl
