"""`TetrisEnv`: one game of the family as a Gymnasium environment, over the engine's lock and moves.

- *Action*: ``Discrete(4 x width)``, ``a = state x width + column``: the piece turned to ``state``
  with its leftmost cell in ``column``, placed at the lowest resting position it reaches there
  (`engine.envs._kernels`); ``action_mask`` marks the legal ones, an illegal one is played as the
  first legal one or raises (``illegal_action="raise"``).
- *Observation*: a ``spaces.Dict`` of ``board``, ``piece``, ``preview`` (only under rules that show
  it, `engine.rules.Rules.preview`) and ``action_mask``.
- *Reward*: the rows the lock cleared (``reward="rows"``) or the points the rules score for it
  (``"points"``); 0 for a lock that ends the game.
- *Episode end*: ``terminated`` when the game is lost, ``truncated`` at a piece limit (the rules' or
  ``max_pieces``); ``info["end"]`` names it.
- *Seeding*: under uniform pieces ``reset(seed=k)`` plays the project's seeded game ``k``; under
  the contest's LCG the sequence is the rules' own. In full: docs/envs.md.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..lock import GOING_ON, lock_piece, no_placement
from ..movegen import capacity, route, scratch
from ..outcome import GameEnd
from ..record import encode
from ..rules import SHAPE_NAMES, Rules, get_rules
from ._kernels import leftmost, lock_and_offer, offer

#: how an episode ended (``info["end"]``): the lock's own ends, then the environment's
ENDS = GameEnd.labels((GameEnd.TOP_TOUCHED, GameEnd.OVERFLOW, GameEnd.SPAWN_BLOCKED, GameEnd.STUCK, GameEnd.PIECE_LIMIT,
                       GameEnd.CAPPED))
#: pieces drawn from the source at once (the stream is the same whatever the block: numpy's
#: generator and the LCG keep their state between draws)
BLOCK = 256
REWARDS = ("rows", "points")
ILLEGAL = ("first", "raise")


class TetrisEnv(gym.Env):
    """A game under ``rules`` (a preset's name or an `engine.rules.Rules`) as a Gymnasium
    environment (actions, observations, rewards, ends and seeding: docs/envs.md).

    ``reward``: ``"rows"`` or ``"points"``; ``max_pieces``: truncate after that many pieces (None:
    the rules' piece limit, if any); ``illegal_action``: ``"first"`` or ``"raise"``;
    ``render_mode``: None or ``"ansi"`` (the board as text)."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, rules: str | Rules = "standard", reward: str = "rows", max_pieces: int | None = None,
                 illegal_action: str = "first", render_mode: str | None = None):
        rules = get_rules(rules) if isinstance(rules, str) else rules
        if not isinstance(rules, Rules):
            raise ValueError(f"rules: a preset's name or an engine.rules.Rules, got {type(rules).__name__}")
        if rules.placement == "floating":
            raise ValueError(f"rules {rules.name!r}: mid-air placements are not actions of (state, column)")
        if reward not in REWARDS:
            raise ValueError(f"reward: should be one of {', '.join(REWARDS)}, got {reward!r}")
        if illegal_action not in ILLEGAL:
            raise ValueError(f"illegal_action: should be one of {', '.join(ILLEGAL)}, got {illegal_action!r}")
        if max_pieces is not None and (not isinstance(max_pieces, (int, np.integer)) or isinstance(max_pieces, bool)
                                       or max_pieces < 1):
            raise ValueError(f"max_pieces: should be a whole number >= 1 or None, got {max_pieces!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode: should be None or one of {', '.join(self.metadata['render_modes'])}, "
                             f"got {render_mode!r}")
        self.rules = rules
        self.reward_kind = reward
        self.illegal_action = illegal_action
        self.render_mode = render_mode
        limits = [n for n in (rules.piece_limit, max_pieces) if n is not None]
        self.max_pieces = min(limits) if limits else None
        self.width, self.height = rules.width, rules.height
        self.n_actions = 4 * rules.width
        self.action_space = spaces.Discrete(self.n_actions)
        observation = {
            "board": spaces.Box(0, 1, (rules.height, rules.width), np.int8),
            "piece": spaces.Discrete(len(SHAPE_NAMES)),
            "action_mask": spaces.Box(0, 1, (self.n_actions,), np.int8),
        }
        if rules.preview:
            observation["preview"] = spaces.Discrete(len(SHAPE_NAMES))
        self.observation_space = spaces.Dict(observation)
        self._kernel = rules.kernel
        self._left = leftmost(rules.cells)
        self._sc = scratch(rules)
        self._found = np.zeros((capacity(rules.height, rules.width), 3), np.int64)
        self._table = np.zeros((self.n_actions, 3), np.int64)
        self._mask = np.zeros(self.n_actions, np.int8)
        self._cells = np.zeros((rules.height, rules.width), np.int8)
        self.board = np.zeros(rules.height, np.uint16)
        self._pieces = np.zeros(0, np.int64)
        self._stream = None
        #: the episode's placements so far, (x, y, state) each
        self.placed: list[tuple[int, int, int]] = []
        self._started = False
        self._over = True

    # -- the pieces ---------------------------------------------------------------------------

    def _draw(self) -> None:
        """`BLOCK` more pieces: from ``np_random`` under uniform pieces, else from the rules' own
        stream (the contest's LCG)."""
        if self.rules.pieces.kind == "uniform":
            block = self.np_random.integers(0, len(SHAPE_NAMES), size=BLOCK).astype(np.int64)
        else:
            block = self._stream.take(BLOCK)
        self._pieces = np.concatenate((self._pieces, block))

    def shape_of(self, t: int) -> int:
        """The shape of piece ``t`` (0-based) of this episode. The environment draws the pieces it
        shows, a `BLOCK` at a time; a ``t`` beyond them draws more, and a later episode reset
        without a seed then begins further along the generator."""
        while t >= len(self._pieces):
            self._draw()
        return int(self._pieces[t])


    # -- the game -----------------------------------------------------------------------------

    @property
    def piece_index(self) -> int:
        """The 0-based index of the current piece (= pieces placed so far)."""
        return len(self.placed)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if options:
            raise ValueError(f"options: none are taken, got {sorted(options)}")
        self._pieces = np.zeros(0, np.int64)
        self._stream = None if self.rules.pieces.kind == "uniform" else self.rules.pieces.stream()
        self.board = np.zeros(self.height, np.uint16)
        self._cells[:] = 0
        self.placed = []
        self.score = self.lines = 0
        n = offer(self.board, self._kernel, self.shape_of(0), self.rules.spawn_state_of(0), self._sc, self._found,
                  self._table, self._mask, self._left)
        self._started, self._over = True, n == 0
        observation = self._observation()
        return observation, self._info(observation["action_mask"], False)

    def step(self, action):
        if not self._started:
            raise RuntimeError("step before reset: call reset() first")
        if self._over:
            raise RuntimeError("the episode is over: call reset()")
        a = self._index(action)
        illegal = not self._mask[a]
        if illegal:
            if self.illegal_action == "raise":
                state, column = divmod(a, self.width)
                raise ValueError(f"action {a} (state {state}, column {column}) is not a placement of the current "
                                 f"piece; legal: {self.legal_actions().tolist()}")
            a = int(np.flatnonzero(self._mask)[0])
        t = self.piece_index
        self.placed.append(tuple(int(v) for v in self._table[a]))  # before the next piece's actions overwrite it
        step, n = lock_and_offer(
            self.board, self._kernel, self.shape_of(t), t, a, self.shape_of(t + 1), self.rules.spawn_state_of(t + 1),
            self._sc, self._found, self._table, self._mask, self._left, self._cells)
        terminated = truncated = False
        reason = None
        lines, points = step.lines, step.points
        if step.end != GOING_ON:
            terminated, truncated = step.terminated, step.truncated
            reason = GameEnd(step.end).label
            lines = 0
        elif self.max_pieces is not None and t + 1 >= self.max_pieces:
            truncated, reason = True, GameEnd.CAPPED.label
        elif n == 0:
            nothing = no_placement(self.board, self._kernel, self.shape_of(t + 1), self.rules.spawn_state_of(t + 1))
            terminated, reason = nothing.terminated, GameEnd(nothing.end).label
        self.score += int(points)
        self.lines += int(lines)
        self._over = terminated or truncated
        observation = self._observation()
        info = self._info(observation["action_mask"], illegal)
        if reason is not None:
            info["end"] = reason
        reward = float(lines if self.reward_kind == "rows" else points)
        return observation, reward, terminated, truncated, info

    def _index(self, action) -> int:
        """``action`` as an index of the action space; ValueError for anything outside it."""
        whole = isinstance(action, (int, np.integer)) or (
            isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer))
        if not whole or isinstance(action, (bool, np.bool_)):
            raise ValueError(f"action: should be a whole number 0..{self.n_actions - 1}, got {action!r}")
        a = int(action)
        if not 0 <= a < self.n_actions:
            raise ValueError(f"action: should be 0..{self.n_actions - 1}, got {a}")
        return a

    def _observation(self) -> dict:
        t = self.piece_index
        observation = {"board": self._cells.copy(), "piece": np.int64(self.shape_of(t)),
                       "action_mask": self._mask.copy()}
        if self.rules.preview:
            observation["preview"] = np.int64(self.shape_of(t + 1))
        return observation

    def _info(self, mask: np.ndarray, illegal: bool) -> dict:
        return {"action_mask": mask, "pieces": self.piece_index, "score": self.score, "lines": self.lines,
                "illegal_action": illegal}

    # -- actions and placements -----------------------------------------------------------------

    def legal_actions(self) -> np.ndarray:
        """The legal actions of the current piece, ascending (empty once the episode is over)."""
        return np.flatnonzero(self._mask)

    def placement(self, action: int) -> tuple[int, int, int]:
        """The placement (x, y, state) a legal action stands for (ValueError for another)."""
        a = self._index(action)
        if not self._mask[a]:
            raise ValueError(f"action {a} is not legal now")
        return tuple(int(v) for v in self._table[a])

    def action_of(self, placement) -> int:
        """The action standing for ``placement`` (x, y, state) of the current piece (ValueError when
        none does: a placement above the lowest of its state and column, or not a placement)."""
        x, y, s = (int(v) for v in placement)
        shape = self.shape_of(self.piece_index)
        s = int(self.rules.alias[shape, s % 4])
        a = s * self.width + x + int(self._left[shape, s])
        if not (0 <= a < self.n_actions and self._mask[a] and tuple(self._table[a, :2]) == (x, y)):
            raise ValueError(f"placement ({x}, {y}, {s}) is not the lowest of its state and column, or not legal")
        return a

    def routes(self) -> list[list[int]]:
        """The episode's placements so far as routes of single steps (0..3 = L, R, D, C) from each
        piece's spawn (`engine.movegen.route`); ValueError under drop-only rules (no routes)."""
        if self.rules.placement == "drop":
            raise ValueError(f"rules {self.rules.name!r} place pieces by dropping them: there are no routes")
        board = np.zeros(self.height, np.uint16)
        sc = scratch(self.rules, routes=True)
        out = []
        for t, (x, y, s) in enumerate(self.placed):
            shape, state = self.shape_of(t), self.rules.spawn_state_of(t)
            out.append(route(board, self.rules, shape, state, (x, y, s), sc))
            lock_piece(board, self._kernel, shape, s, x, y, t + 1)
        return out

    def record(self) -> str:
        """The episode so far as a contest record (`engine.record.encode` of `routes`): the
        replayer (`engine.replay`) scores it as the episode's points under these rules (with the
        episode's seed under uniform pieces: ``engine.replay(record, rules, seed=k)`` after
        ``reset(seed=k)``)."""
        return encode(self.routes())

    def render(self):
        if self.render_mode != "ansi":
            return None
        rows = ["".join("#" if c else "." for c in row) for row in self._cells]
        t = self.piece_index
        head = f"piece {t + 1}: {SHAPE_NAMES[self.shape_of(t)]}"
        if self.rules.preview:
            head += f", next {SHAPE_NAMES[self.shape_of(t + 1)]}"
        return "\n".join([head + f"; score {self.score}, rows {self.lines}", *rows]) + "\n"
