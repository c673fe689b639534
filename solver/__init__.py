"""Policies that play the known piece sequence with an evaluator and write the contest record.

One module per policy behind the `Policy` base (`solver/_base.py`): `greedy`, `lookahead`,
`beam`, `profile_dp`, `backsearch`. `solve` resolves a `SolverConfig`, runs its policy, and
attaches the record checked by the project's replayer.
"""

from ._base import Policy, Progress
from .backsearch import Backsearch
from .beam import Beam
from .config import BacksearchConfig, BeamConfig, GreedyConfig, LookaheadConfig, ProfileDPConfig, SolverConfig
from .greedy import Greedy
from .lookahead import Lookahead
from .profile_dp import ProfileDP
from .record import RecordMismatch, attach_record
from .result import SolveResult
from .run import POLICIES, default_pieces, solve
from .threshold import Threshold

__all__ = [
    "Backsearch", "BacksearchConfig", "Beam", "BeamConfig", "Greedy", "GreedyConfig", "Lookahead", "LookaheadConfig",
    "POLICIES", "Policy", "ProfileDP", "ProfileDPConfig",
    "Progress", "RecordMismatch", "SolveResult", "SolverConfig", "Threshold", "attach_record", "default_pieces",
    "solve",
]
