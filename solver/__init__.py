"""Policies that play the pieces with an evaluator, and the contest record of a known sequence.

One module per policy, each registering itself by name (`solver.registry`): for the known sequence
`greedy`, `lookahead`, `beam`, `profile_dp`, `backsearch`, `segment` (behind `solver._base.Policy`);
for unknown pieces, scored on seeded games, the modules of `solver/online/` (behind
`solver.online.OnlinePolicy`). The modules are discovered, not listed: a new policy is one module.
`solve` resolves a `SolverConfig`, runs its policy, and attaches the record checked by the
project's replayer; what it returns is typed (`Outcome`): a path on the known sequence is a
`SolveResult`, a series of seeded games a `solver.online.GamesSeries`, of splitting estimates a
`solver.online.SplittingSeries`.
"""

from . import registry
from ._base import Policy, Progress
from .config import BacksearchConfig, BeamConfig, GreedyConfig, LookaheadConfig, ProfileDPConfig
from .record import RecordMismatch, attach_record
from .files import load_evaluators, load_online_policy, load_solver_config
from .registry import PolicyError, SolverConfig, register
from .result import Outcome, SolveResult
from .solve import default_pieces, solve
from .threshold import Threshold

registry.discover(__name__)  # every policy module registers its policy
from .segment import SegmentConfig  # noqa: E402

__all__ = [
    "BacksearchConfig", "BeamConfig", "GreedyConfig", "LookaheadConfig", "Outcome", "Policy", "PolicyError",
    "ProfileDPConfig", "Progress", "RecordMismatch", "SegmentConfig", "SolveResult", "SolverConfig", "Threshold",
    "attach_record", "default_pieces", "load_evaluators", "load_online_policy", "load_solver_config", "register",
    "registry", "solve",
]
