"""What the policies for unknown pieces share: parameters, scratch, and the one-move call.

A policy for unknown pieces (an *online* policy) sees only the board, the current piece and, when
the game shows it, the preview; it never reads further along the sequence. `OnlinePolicy.choose`
picks one placement; `solver.online.games.play_games` plays whole seeded games with it inside numba.
"""

from __future__ import annotations

import numpy as np

from engine import Rules
from engine.movegen import capacity
from engine.movegen import rows_for
from evaluators import Evaluator

from ..config import SolverConfig
from ._kernels import (N_PARAMS, P_DEATH, P_EXPLORATION, P_KEEP, P_MS, P_OBJECTIVE_LAST, P_REDUCE_MIN,
                       P_ROLLOUT, P_SIMULATIONS, P_USE_PREVIEW, P_VALUE_WEIGHT, workspace)


def policy_params(config: SolverConfig) -> np.ndarray:
    """The float64 parameter vector the kernels read (slots ``P_*`` of `_kernels`)."""
    p = np.zeros(N_PARAMS)
    p[P_OBJECTIVE_LAST] = config.online.objective == "last"
    p[P_KEEP] = config.online.keep
    p[P_REDUCE_MIN] = config.online.reduce == "min"
    p[P_SIMULATIONS] = config.mcts.simulations
    p[P_MS] = config.mcts.ms or 0.0
    p[P_EXPLORATION] = config.mcts.exploration
    p[P_ROLLOUT] = config.mcts.rollout
    p[P_VALUE_WEIGHT] = config.mcts.value_weight
    p[P_DEATH] = config.mcts.death_penalty
    p[P_USE_PREVIEW] = config.mcts.use_preview
    return p


class OnlinePolicy:
    """One policy for unknown pieces under ``rules`` with ``evaluator``; subclasses name a kernel
    (``code``, dispatched by `solver.online.games.choose_any`)."""

    name: str = ""
    code: int = -1

    def __init__(self, config: SolverConfig, rules: Rules, evaluator: Evaluator):
        from .mcts import tree_arrays

        self.config = config
        self.rules = rules
        self.evaluator = evaluator
        self.params = policy_params(config)
        self.spec = evaluator.spec
        self.tie_break = TIE_BREAKS[evaluator.tie_break]
        cap = capacity(rules)
        self.ws = workspace(rules.height, cap, self.spec[0].shape[0], rows_for(rules.height))
        self.tree = tree_arrays(rules.height, *self.tree_size(config, cap))
        self.child = np.zeros(rules.height, np.uint16)
        self.scratch_board = np.zeros(rules.height, np.uint16)

    @staticmethod
    def tree_size(config: SolverConfig, cap: int) -> tuple[int, int]:
        """(simulations, placements per node) the search tree is sized for: none but MCTS keeps one."""
        return 0, 1

    def seed(self, seed: int) -> None:
        """Seed the policy's own generator (MCTS draws) from a game's seed."""
        self.tree[-1][0] = np.uint64((int(seed) * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) % (1 << 64))

    def choose(self, board: np.ndarray, t: int, shape: int, preview: int = -1) -> np.ndarray | None:
        """The placement (x, y, state) for piece ``t`` (0-based) of ``shape`` on ``board``, with the
        preview's shape or -1; None when every placement ends the game."""
        from .games import choose_any

        k = choose_any(self.code, np.ascontiguousarray(board, np.uint16), shape, preview, t, self.rules.kernel,
                       self.spec, self.tie_break, self.params, self.ws, self.tree, self.child, self.scratch_board)
        return None if k < 0 else self.ws[6][0, k].copy()
