"""What the policies for unknown pieces share: the class a policy derives from, and `choose`, the
one call the game loop makes.

A policy for unknown pieces (an *online* policy) sees only the board, the current piece and, when
the game shows it, the preview; it never reads further along the sequence. One module per policy
declares it on a class derived from `OnlinePolicy` (whose docstring lists what it declares: its
``Bundle`` and its ``choose_kernel`` among them) and registered with `solver.registry.register`.

The game loops (`solver.online.games`, `solver.online.splitting`) play a piece by `play_step`, the
one online step: the piece appears, `choose` places it, `engine.lock.lock_step` locks it. `choose`
is a numba overload that compiles, into the calling kernel, the kernel of the registered policy
whose ``Bundle`` is the bundle's class: no dispatch code lists the policies. How to add one:
docs/extending.md, "A policy"."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numba import njit
from numba.core import types
from numba.extending import overload

from engine import Rules
from engine.lock import SPAWN_BLOCKED, Step, lock_step, spawn_blocked, spawn_state, unplaced
from evaluators import Evaluator

from .. import registry
from ..registry import SolverConfig
from ._kernels import CURRENT, workspace


class OnlinePolicy:
    """One policy for unknown pieces under ``rules`` with ``evaluator``. ``bundle`` is its bundle
    for this configuration, ``ws`` its workspace. A subclass declares:

    - ``name``, and ``Settings``: its settings (a pydantic model, the configuration section named
      after it), if it has any;
    - ``Bundle``: a NamedTuple class of its own, its parameters and state as its kernel reads them
      (numba compiles it as a tuple), and `OnlinePolicy.new_bundle`, which builds one;
    - ``choose_kernel``: a numba kernel
      ``choose(bundle, board, shape, preview, t, rules, spec, ws)`` returning the index of the
      chosen placement of the current piece in ``ws.found[CURRENT]`` (-1 when none survives);
      ``rules`` is `engine.KernelRules`, ``spec`` the evaluator's `EvaluatorSpec`, ``ws`` the
      shared `Workspace`;
    - ``allocates = False`` when that kernel allocates no array: its games then run without
      numba's reference counting (`OnlinePolicy.allocates`)."""

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
        k = self._choice(np.ascontiguousarray(board, np.uint16), t, shape, preview)
        return None if k < 0 else self.ws.found[CURRENT, k].copy()

    def play(self, board: np.ndarray, t: int, shape: int, preview: int = -1) -> tuple[Step, np.ndarray | None]:
        """One step of a game from Python: piece ``t`` of ``shape`` placed by `choose` and locked
        on ``board`` (uint16 rows, changed in place) by the game loops' lock (`engine.lock.lock_step`);
        returns (its `engine.lock.Step`, the placement (x, y, state) or None when none was chosen)."""
        k = self._choice(board, t, shape, preview)
        step = lock_step(board, self.rules.kernel, shape, t, self.ws.found[CURRENT], k)
        return step, (None if k < 0 else self.ws.found[CURRENT, k].copy())

    def _choice(self, board: np.ndarray, t: int, shape: int, preview: int) -> int:
        """The policy's kernel's choice: an index into ``ws.found[CURRENT]``, -1 for none."""
        if not self.rules.preview:
            preview = -1
        kernel = type(self).choose_kernel  # on the class: a numba function is not bound to the object
        return int(kernel(self.bundle, board, shape, preview, t, self.rules.kernel, self.spec, self.ws))


def choose(bundle, board, shape, preview, t, rules, spec, ws):
    """The choice of the policy whose bundle ``bundle`` is: the index into ``ws.found[CURRENT]`` of
    the placement of the current piece (``shape``, piece ``t``, with the shown ``preview`` or -1)
    on ``board``, or -1 when every placement ends the game. Numba kernels only: the policy's
    kernel is compiled into the caller, chosen by the bundle's class."""
    raise TypeError("choose is a numba kernel: call it from a jitted function, or use OnlinePolicy.choose")


@njit(inline="always")  # numba's inlining: typed in each game loop, under its reference counting (or none) and cache
def play_step(bundle, board, shape, preview, t, rules, spec, ws):
    """One step of a game with the policy whose bundle is ``bundle``: piece ``t`` of ``shape``
    appears on ``board`` (when its spawn is blocked: `engine.lock.SPAWN_BLOCKED`, the policy is
    not asked), the policy chooses its placement (`choose`, shown ``preview`` or -1), and the
    piece is locked there in place (`engine.lock.lock_step`: `engine.lock.STUCK` when none was
    chosen). Returns the `engine.lock.Step`."""
    if spawn_blocked(board, rules, shape, spawn_state(t, rules)):
        return unplaced(SPAWN_BLOCKED)
    k = choose(bundle, board, shape, preview, t, rules, spec, ws)
    return lock_step(board, rules, shape, t, ws.found[CURRENT], k)


def policy_of(bundle_class: type | None) -> type[OnlinePolicy]:
    """The registered policy for unknown pieces whose ``Bundle`` is ``bundle_class``."""
    for entry in registry.entries():
        if not entry.known_pieces and entry.policy.Bundle is bundle_class:
            return entry.policy
    raise registry.PolicyError(f"no registered policy for unknown pieces has the bundle class {bundle_class!r}")


@overload(choose, inline="always")
def _choose_overload(bundle, board, shape, preview, t, rules, spec, ws):
    if not isinstance(bundle, types.BaseNamedTuple):
        return None
    kernel = policy_of(bundle.instance_class).choose_kernel

    def impl(bundle, board, shape, preview, t, rules, spec, ws):
        return kernel(bundle, board, shape, preview, t, rules, spec, ws)

    return impl
