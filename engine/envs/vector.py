"""`TetrisVectorEnv`: ``num_envs`` games of `engine.envs.tetris.TetrisEnv` stepped together by
one kernel call (`engine.envs._kernels.batch_step`), a ``gymnasium.vector.VectorEnv`` with the
next-step autoreset of ``gymnasium.vector.SyncVectorEnv``.

Game ``i`` is exactly the `TetrisEnv` that ``SyncVectorEnv`` would hold as its ``i``-th: the same
spaces (batched), actions, rewards, ends and info keys (each with its ``_key`` mask), and its
pieces drawn from a generator of its own in the same blocks, so ``reset(seed=k)`` gives game ``i``
the pieces of ``TetrisEnv.reset(seed=k + i)`` (a list of seeds: one each), and every later
episode the same pieces as that environment's. After a step that ends game ``i``, the next step
ignores its action and resets it (reward 0, neither terminated nor truncated); ``reset(options=
{"reset_mask": mask})`` resets only the games of ``mask``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..movegen import capacity, scratch
from ..outcome import GameEnd
from ..rules import SHAPE_NAMES, Rules
from ._kernels import CAPPED, MODE_KEEP, MODE_RESTART, MODE_STEP, STUCK, batch_play, leftmost
from .tetris import BLOCK, TetrisEnv

#: pieces held per game: the block being played and the (at most two) pieces kept from the one before
WINDOW = BLOCK + 3


class TetrisVectorEnv(VectorEnv):
    """``num_envs`` games of ``TetrisEnv(rules, reward, max_pieces, illegal_action)`` (module
    docstring). ``render_mode="ansi"``: `render` returns each game's text."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4, "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 1, rules: str | Rules = "standard", reward: str = "rows",
                 max_pieces: int | None = None, illegal_action: str = "first", render_mode: str | None = None):
        if not isinstance(num_envs, (int, np.integer)) or isinstance(num_envs, bool) or num_envs < 1:
            raise ValueError(f"num_envs: should be a whole number >= 1, got {num_envs!r}")
        self.template = TetrisEnv(rules, reward, max_pieces, illegal_action, render_mode)
        t = self.template
        self.rules, self.reward_kind, self.illegal_action = t.rules, reward, illegal_action
        self.render_mode = render_mode
        self.max_pieces, self.width, self.height, self.n_actions = t.max_pieces, t.width, t.height, t.n_actions
        self.num_envs = n = int(num_envs)
        self.single_observation_space = t.observation_space
        self.single_action_space = t.action_space
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self._kernel = self.rules.kernel
        self._left = leftmost(self.rules.cells)
        self._sc = scratch(self.rules)
        self._found = np.zeros((capacity(self.height, self.width), 3), np.int64)
        self._boards = np.zeros((n, self.height), np.uint16)
        self._tables = np.zeros((n, self.n_actions, 3), np.int64)
        self._masks = np.zeros((n, self.n_actions), np.int8)
        self._cells = np.zeros((n, self.height, self.width), np.int8)
        self._ends = np.zeros(n, np.int64)
        self._rewards = np.zeros(n, np.float64)
        self._terminated = np.zeros(n, np.bool_)
        self._truncated = np.zeros(n, np.bool_)
        self._illegal = np.zeros(n, np.bool_)
        self._t = np.zeros(n, np.int64)  # pieces placed in each game's episode
        self._score = np.zeros(n, np.int64)
        self._rows = np.zeros(n, np.int64)
        self._window = np.zeros((n, WINDOW), np.int64)  # pieces base .. drawn - 1 of each game
        self._base = np.zeros(n, np.int64)
        self._drawn = np.zeros(n, np.int64)
        self._sources: list = [None] * n  # each game's generator (uniform pieces) or LCG stream
        self._autoreset = np.zeros(n, np.bool_)
        self._over = np.ones(n, np.bool_)
        self._started = False
        self._lookahead = 1 + int(self.rules.preview)  # pieces after the current one an observation shows, + 1
        self._index = np.arange(n)

    # -- the pieces ---------------------------------------------------------------------------

    def _new_source(self, i: int, seed: int | None) -> None:
        """Game ``i``'s piece source for an episode: reseeded when ``seed`` is given (or it has none
        yet), as `TetrisEnv.reset` reseeds ``np_random``; its pieces so far dropped."""
        if self.rules.pieces.kind == "uniform":
            if seed is not None or self._sources[i] is None:
                self._sources[i] = seeding.np_random(seed)[0]
        else:
            self._sources[i] = self.rules.pieces.stream()
        self._base[i] = self._drawn[i] = 0

    def _ensure(self, games: np.ndarray, last: np.ndarray) -> None:
        """Pieces up to index ``last[k]`` drawn for game ``games[k]``, a `BLOCK` at a time as
        `TetrisEnv` draws them; the pieces before the game's current one are dropped."""
        for k in np.flatnonzero(last >= self._drawn[games]):
            i = int(games[k])
            keep = self._window[i, self._t[i] - self._base[i]:self._drawn[i] - self._base[i]].copy()
            self._window[i, :len(keep)] = keep
            self._base[i] = self._t[i]
            source = self._sources[i]
            if self.rules.pieces.kind == "uniform":
                block = source.integers(0, len(SHAPE_NAMES), size=BLOCK).astype(np.int64)
            else:
                block = source.take(BLOCK)
            self._window[i, len(keep):len(keep) + BLOCK] = block
            self._drawn[i] += BLOCK

    def _shapes(self, offset: int) -> np.ndarray:
        """Each game's shape of piece ``t + offset`` (``t``: its pieces placed)."""
        return self._window[self._index, self._t + offset - self._base]

    # -- the games ----------------------------------------------------------------------------

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        n = self.num_envs
        if seed is None or isinstance(seed, (int, np.integer)):
            super().reset(seed=None if seed is None else int(seed))
            seeds = [None] * n if seed is None else [int(seed) + i for i in range(n)]
        else:
            seeds = [None if s is None else int(s) for s in seed]
            if len(seeds) != n:
                raise ValueError(f"seed: a list of {n} seeds (one per game), got {len(seeds)}")
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if options:
            raise ValueError(f"options: only reset_mask is taken, got {sorted(options)}")
        if mask is None:
            mask = np.ones(n, np.bool_)
        elif not (isinstance(mask, np.ndarray) and mask.shape == (n,) and mask.dtype == np.bool_ and mask.any()):
            raise ValueError(f"options['reset_mask']: a numpy bool array of shape ({n},) with a True value")
        elif not self._started:
            raise RuntimeError("reset with a reset_mask before a first reset of every game")
        for i in np.flatnonzero(mask):
            self._new_source(int(i), seeds[i])
        self._play(np.where(mask, MODE_RESTART, MODE_KEEP), np.zeros(n, np.int64))
        self._autoreset[mask] = False
        self._over[mask] = self._ends[mask] == STUCK
        self._started = True
        return self._observation(), self._info(mask.copy())

    def step(self, actions):
        if not self._started:
            raise RuntimeError("step before reset: call reset() first")
        n = self.num_envs
        actions = np.asarray(actions)
        if actions.shape != (n,) or not np.issubdtype(actions.dtype, np.integer):
            raise ValueError(f"actions: {n} whole numbers (one per game), got {actions!r}")
        if ((actions < 0) | (actions >= self.n_actions)).any():
            raise ValueError(f"actions: each should be 0..{self.n_actions - 1}, got {actions.tolist()}")
        restart = self._autoreset
        if (~restart & self._over).any():
            raise RuntimeError(f"games {np.flatnonzero(~restart & self._over).tolist()} have no piece: call reset()")
        actions = actions.astype(np.int64)
        if self.illegal_action == "raise":
            illegal = ~restart & (self._masks[self._index, actions] == 0)
            if illegal.any():
                i = int(np.flatnonzero(illegal)[0])
                raise ValueError(f"game {i}: action {int(actions[i])} is not a placement of the current piece; "
                                 f"legal: {np.flatnonzero(self._masks[i]).tolist()}")
        for i in np.flatnonzero(restart):
            self._new_source(int(i), None)
        self._play(np.where(restart, MODE_RESTART, MODE_STEP), actions)
        done = self._terminated | self._truncated
        self._over = done | (restart & (self._ends == STUCK))
        self._autoreset = done
        info = self._info(np.ones(n, np.bool_))
        if done.any():
            end = np.full(n, None, dtype=object)
            for i in np.flatnonzero(done):
                end[i] = GameEnd(self._ends[i]).label
            info["end"], info["_end"] = end, done
        return self._observation(), self._rewards.copy(), self._terminated.copy(), self._truncated.copy(), info

    def _play(self, modes: np.ndarray, actions: np.ndarray) -> None:
        """`batch_play` of ``modes`` and ``actions``, the pieces it reads drawn first (a game to
        restart has its piece source set: `_new_source`)."""
        restart = modes == MODE_RESTART
        self._t[restart] = 0
        self._ensure(self._index, np.where(restart, self._lookahead - 1, self._t + self._lookahead))
        batch_play(modes, actions, self._boards, self._kernel, self._window, self._base, self._t,
                   -1 if self.max_pieces is None else self.max_pieces, self.reward_kind == "rows", self._sc,
                   self._found, self._tables, self._masks, self._left, self._cells, self._score, self._rows,
                   self._rewards, self._terminated, self._truncated, self._illegal, self._ends)

    def _observation(self) -> dict:
        observation = {"board": self._cells.copy(), "piece": self._shapes(0), "action_mask": self._masks.copy()}
        if self.rules.preview:
            observation["preview"] = self._shapes(1)
        return observation

    def _info(self, which: np.ndarray) -> dict:
        """Each game's `TetrisEnv` info (``_key``: the games it is given for)."""
        info = {"action_mask": self._masks.copy(), "pieces": self._t.copy(), "score": self._score.copy(),
                "lines": self._rows.copy(), "illegal_action": self._illegal.copy()}
        for key in list(info):
            info[f"_{key}"] = which.copy()
        return info

    def render(self):
        if self.render_mode != "ansi":
            return None
        out = []
        for i in range(self.num_envs):
            rows = ["".join("#" if c else "." for c in row) for row in self._cells[i]]
            out.append("\n".join([f"game {i}: piece {self._t[i] + 1}: {SHAPE_NAMES[self._shapes(0)[i]]}; "
                                  f"score {self._score[i]}, rows {self._rows[i]}", *rows]) + "\n")
        return tuple(out)
