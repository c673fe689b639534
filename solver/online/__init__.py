"""Policies for unknown pieces (random-piece rules and the course protocol): one module each, a class
derived from `OnlinePolicy` registered by name (`solver.registry`): `one_ply`, `preview`, `expect`
and `mcts`; `games` plays seeded games with a piece cap (a series: `GamesSeries`), `splitting`
estimates the mean length of games too long to play (a series of estimates: `SplittingSeries`),
`intervals` gives a series' mean its 95% interval. The package's modules are discovered, not
listed: a new policy is one module (here or anywhere else), built on the kernels exported here
(`Workspace`, its ply levels `CURRENT` and `NEXT`, `ply`, `ply_scratch`)."""

from .. import registry
from ._base import OnlinePolicy, choose
from ._kernels import CURRENT, DEAD, NEXT, Workspace, ply, ply_scratch
from .games import GAME_ENDS, GamesResult, GamesSeries, make_policy, play_game, play_games, solve_games
from .splitting import SplittingSeries

registry.discover(__name__)  # every policy module registers its policy
from .expect import ExpectConfig  # noqa: E402  (the policies' settings, exported as solver's are)
from .mcts import MCTSConfig  # noqa: E402
from .preview import PreviewConfig  # noqa: E402

__all__ = ["CURRENT", "DEAD", "ExpectConfig", "GAME_ENDS", "GamesResult", "GamesSeries", "MCTSConfig", "NEXT",
           "OnlinePolicy", "PreviewConfig", "SplittingSeries", "Workspace", "choose", "make_policy", "play_game",
           "play_games", "ply", "ply_scratch", "solve_games"]
