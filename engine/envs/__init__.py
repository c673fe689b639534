"""Gymnasium environments over the engine, registered when this package is imported:

    import gymnasium as gym
    import engine.envs  # noqa: F401  (registers the environments)
    env = gym.make("tetris_workbench/Standard-v0")

(or ``gym.make("engine.envs:tetris_workbench/Standard-v0")``, which imports it). The games
(`GAMES`): ``Standard-v0`` (rules preset ``standard``, reward = rows cleared), ``Classic-v0``
(``classic``, reward = its points) and ``Geek-v0`` (``geek``, the contest's fixed sequence, reward =
the contest engine's points). Keyword arguments of ``gym.make`` go to `TetrisEnv`.

Modules: `tetris` (`TetrisEnv`: one game, its spaces, rewards, ends and seeding), `vector`
(`TetrisVectorEnv`: a batch of games stepped by one kernel call, ``gym.make_vec``'s default for
these ids). Only this package imports gymnasium: the engine loads without it (docs/envs.md).
"""

import gymnasium as gym

from .tetris import ENDS, TetrisEnv
from .vector import TetrisVectorEnv

#: the registered games: id (under the ``tetris_workbench`` namespace) -> `TetrisEnv`'s keyword arguments
GAMES = {
    "Standard-v0": {"rules": "standard", "reward": "rows"},
    "Classic-v0": {"rules": "classic", "reward": "points"},
    "Geek-v0": {"rules": "geek", "reward": "points"},
}
NAMESPACE = "tetris_workbench"

for _name, _kwargs in GAMES.items():
    if f"{NAMESPACE}/{_name}" not in gym.registry:
        gym.register(id=f"{NAMESPACE}/{_name}", entry_point="engine.envs.tetris:TetrisEnv",
                     vector_entry_point="engine.envs.vector:TetrisVectorEnv", kwargs=dict(_kwargs))

__all__ = ["ENDS", "GAMES", "NAMESPACE", "TetrisEnv", "TetrisVectorEnv"]
