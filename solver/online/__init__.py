"""Policies for unknown pieces (random-piece rules and the course protocol), one module each behind
`OnlinePolicy`: `one_ply`, `preview` (1-ply + the shown next piece), `expect` (2-ply, expectation or
minimum over the seven unknown pieces), `mcts`; `games` plays seeded games with a piece cap."""

from ._base import OnlinePolicy
from .expect import Expect
from .games import GAME_ENDS, GamesResult, play_game, play_games
from .mcts import MCTS
from .one_ply import OnePly
from .preview import Preview

ONLINE_POLICIES: dict[str, type[OnlinePolicy]] = {p.name: p for p in (OnePly, Preview, Expect, MCTS)}

__all__ = ["Expect", "GAME_ENDS", "GamesResult", "MCTS", "ONLINE_POLICIES", "OnePly", "OnlinePolicy", "Preview",
           "play_game", "play_games"]
