"""Monte Carlo tree search over placements, with chance nodes for the unknown pieces.

The tree alternates *decision nodes* (a board and the piece to place on it) and *after-states*
(the board after one placement, with the points that lock scored). An after-state is a chance node:
the next piece is the preview when it is known (the root's children), else a uniformly drawn shape,
and each drawn shape gets its own decision node. One *simulation*: selection by UCT (`descend`,
`select`, `follow`), expansion of a decision node on its first visit (`expand`), a rollout of
``rollout`` drawn pieces placed by the 1-ply evaluator (`rollout`, `reward`), and
back-propagation of the reward to every after-state on the path (`back_propagate`).

The budget is ``simulations`` per move, or ``ms`` milliseconds per move when set
(`within_budget`); the move is the root's most visited after-state (`most_visited`). Random draws
come from a splitmix64 generator (`solver._splitmix`) whose state the game loop seeds from the
game's seed, so a game is reproducible. The settings: `MCTSConfig`; the policy beside the others:
docs/family.md, "Policies for unknown pieces"."""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np
from numba import njit, objmode
from pydantic import Field

from engine._jit.decorators import inner
from engine.board import copy_rows
from engine.lock import GOING_ON, lock_piece, lock_step, spawn_blocked, spawn_state
from engine.movegen import capacity
from engine.movegen.generators import placements_into
from evaluators import board_values

from .._base import value_child
from .._splitmix import next_random
from ..config import Strict
from ..registry import register
from ._base import OnlinePolicy
from ._kernels import CURRENT, NEXT, SHAPES, TREE, ply, ply_scratch


class MCTSConfig(Strict):
    """``mcts``: UCT over placements with chance nodes for the unknown pieces, rollouts by the
    1-ply evaluator (see `solver/online/mcts.py`)."""

    simulations: int = Field(200, ge=1, description="simulations per move (when ms is null)")
    ms: float | None = Field(None, gt=0, description="milliseconds per move instead of a simulation count")
    exploration: float = Field(0.5, ge=0, description="UCT constant c (rewards scaled to [0, 1])")
    rollout: int = Field(10, ge=0, description="pieces per rollout, placed 1-ply")
    value_weight: float = Field(1.0, description="weight of the evaluator value of the rollout's last placement in the reward")
    death_penalty: float = Field(10000.0, ge=0, description="reward of a simulation in which the game ends")
    use_preview: bool = Field(True, description="the root's chance node is the shown preview")

    def memory(self, config) -> list:
        """The tree's storage (`engine.memory`, `new_tree`): per simulation of a move (``ms``: room for
        `TIMED_SIMULATIONS`), a decision node and room for every placement's after-state (its board,
        points, value, visits and a child per shape)."""
        from engine.memory import Need

        rules = config.game_rules()
        n = TIMED_SIMULATIONS if self.ms else self.simulations
        after = 2 * rules.height + 8 * (5 + SHAPES)
        per = capacity.py_func(rules.height, rules.width) * after + 2 * rules.height + 48
        key, what = ("mcts.ms", f"room for {n:,} simulations a move") if self.ms else \
            ("mcts.simulations", f"{n:,} simulations a move")
        return [Need(key, what, (n + 2) * per)]


#: ``AfterStates.next`` of an after-state whose lock ends the game (the piece limit): a leaf worth its points
ENDED = -2
#: ``AfterStates.next`` of a shape not drawn yet after that after-state
UNDRAWN = -1
#: ``Decisions.count`` of a decision node not expanded yet
NOT_EXPANDED = -1
#: the root's decision node
ROOT = 0
#: tree paths are stored up to this many after-states
PATH_LENGTH = 4096
#: a time budget (``ms``) gets storage for this many simulations (the search stops early when it is full)
TIMED_SIMULATIONS = 20_000
#: slots of `Tree.used` and `Tree.rewards`
DECISIONS_USED, AFTER_STATES_USED = 0, 1
LEAST, GREATEST = 0, 1
#: `Walk.outcome`: where a simulation's walk down the tree stopped
LEAF, ENDED_PATH, DEAD_END, FULL = range(4)
#: the generator's state is seeded as (seed x MIX_MULTIPLIER + MIX_INCREMENT) mod 2^64
MIX_MULTIPLIER, MIX_INCREMENT = 0x9E3779B97F4A7C15, 0x632BE59BD9B4E019


class Decisions(NamedTuple):
    """The decision nodes, one row each: ``board``, the ``shape`` to place on it as ``piece``
    (0-based index in the game), its after-states ``first`` .. ``first + count - 1`` (``count``
    `NOT_EXPANDED` before its first visit), its ``visits``."""

    board: np.ndarray
    shape: np.ndarray
    piece: np.ndarray
    first: np.ndarray
    count: np.ndarray
    visits: np.ndarray


class AfterStates(NamedTuple):
    """The after-states, one row each: ``board`` after the lock, the lock's ``points``, the
    evaluator's ``value``, ``visits``, ``total`` (the sum of the rewards back-propagated through it),
    ``next[a, shape]`` (the decision node after it when the next piece is ``shape``: `UNDRAWN`, or
    `ENDED` for the game's last lock), and ``placement`` (its index among its node's placements)."""

    board: np.ndarray
    points: np.ndarray
    value: np.ndarray
    visits: np.ndarray
    total: np.ndarray
    next: np.ndarray
    placement: np.ndarray


class Tree(NamedTuple):
    """The search tree of one move: ``decisions`` and ``after`` (storage for every node a move's
    simulations can create), the current simulation's path (``path_decision[i]`` and
    ``path_after[i]``, its i-th node and the after-state taken there), ``used`` (decision nodes and
    after-states in use) and ``rewards`` (the least and greatest reward seen this move)."""

    decisions: Decisions
    after: AfterStates
    path_decision: np.ndarray
    path_after: np.ndarray
    used: np.ndarray
    rewards: np.ndarray


class MCTSBundle(NamedTuple):
    """MCTS's bundle: its settings as the kernel reads them (``ms`` 0: no time budget), the tree,
    and ``rng``, the state of the generator of its draws."""

    simulations: int
    ms: float
    exploration: float
    rollout: int
    value_weight: float
    death_penalty: float
    use_preview: bool
    tree: Tree
    rng: np.ndarray


class Walk(NamedTuple):
    """Where a simulation's walk down the tree stopped: its ``outcome`` (`LEAF`: at an after-state
    never visited, ``leaf``; `ENDED_PATH`: at the game's last lock; `DEAD_END`: at a decision node
    with no surviving placement; `FULL`: the storage is full), the after-states on its path
    (``steps``), the decision nodes it went down (``depth``) and the points of its locks
    (``reward``)."""

    outcome: int
    steps: int
    depth: int
    reward: float
    leaf: int


def new_tree(height: int, simulations: int, capacity: int) -> Tree:
    """Storage for ``simulations`` simulations per move (at most one new decision node and its
    ``capacity`` after-states per simulation)."""
    nd = simulations + 2
    na = nd * capacity
    decisions = Decisions(np.zeros((nd, height), np.uint16), *(np.zeros(nd, np.int64) for _ in range(5)))
    after = AfterStates(np.zeros((na, height), np.uint16), np.zeros(na, np.int64), np.zeros(na),
                        np.zeros(na, np.int64), np.zeros(na), np.zeros((na, SHAPES), np.int64), np.zeros(na, np.int64))
    return Tree(decisions, after, np.zeros(PATH_LENGTH, np.int64), np.zeros(PATH_LENGTH, np.int64),
                np.zeros(2, np.int64), np.zeros(2))


@inner
def random_shape(rng):
    return np.int64(next_random(rng) % np.uint64(SHAPES))


@inner
def _now_ms():
    with objmode(t="float64"):
        t = time.perf_counter() * 1000.0
    return t


@inner
def expand(d, rules, spec, tree, ws):
    """Expansion: create the after-states of decision node ``d``, every surviving placement of its
    piece locked and valued (none when its spawn is blocked); False when the storage is full (the
    node stays `NOT_EXPANDED`)."""
    nodes, after = tree.decisions, tree.after
    board = nodes.board[d]
    shape = nodes.shape[d]
    t = nodes.piece[d]
    ss = spawn_state(t, rules)
    used = tree.used[AFTER_STATES_USED]
    nodes.first[d] = used
    nodes.count[d] = 0
    if spawn_blocked(board, rules, shape, ss):
        return True
    found = ws.found[TREE]
    vs = ply_scratch(ws, TREE)
    n = placements_into(board, rules, shape, ss, ws.moves, found)
    if used + n > after.board.shape[0]:
        nodes.count[d] = NOT_EXPANDED
        return False
    board_values(board, rules.width, spec, vs.pvals)
    for k in range(n):
        x, y, s = found[k, 0], found[k, 1], found[k, 2]
        alive, v = value_child(board, rules, shape, s, x, y, t + 1, spec, vs)
        if not alive:
            continue
        a = used
        copy_rows(after.board[a], board)
        lock = lock_piece(after.board[a], rules, shape, s, x, y, t + 1)
        after.points[a] = lock.points
        after.value[a] = v
        after.visits[a] = 0
        after.total[a] = 0.0
        after.next[a, :] = UNDRAWN if lock.end == GOING_ON else ENDED
        after.placement[a] = k
        used += 1
        nodes.count[d] += 1
    tree.used[AFTER_STATES_USED] = used
    return True


@inner
def plant_root(tree, board, shape, t, rules, spec, ws):
    """Start the move's tree: the root (``board``, ``shape`` to place as piece ``t``), expanded, its
    placements copied to ``ws.found[CURRENT]``; returns whether any of them survives."""
    nodes = tree.decisions
    copy_rows(nodes.board[ROOT], board)
    nodes.shape[ROOT] = shape
    nodes.piece[ROOT] = t
    nodes.visits[ROOT] = 0
    tree.used[DECISIONS_USED] = 1
    tree.used[AFTER_STATES_USED] = 0
    tree.rewards[LEAST] = np.inf
    tree.rewards[GREATEST] = -np.inf
    expand(ROOT, rules, spec, tree, ws)
    for k in range(ws.found.shape[1]):
        copy_rows(ws.found[CURRENT, k], ws.found[TREE, k])
    return nodes.count[ROOT] > 0


@inner
def select(d, tree, exploration):
    """Selection at decision node ``d``: its highest-valued after-state never visited, else the
    one with the highest UCT score ``q + c * sqrt(ln N / n)`` (``q``: its mean reward scaled to
    [0, 1] by the least and greatest rewards seen this move; ``N``, ``n``: visits of the node and of
    the after-state; ``c``: ``exploration``)."""
    nodes, after = tree.decisions, tree.after
    least, greatest = tree.rewards[LEAST], tree.rewards[GREATEST]
    best = -1
    best_score = -np.inf
    fresh = -1
    ln_visits = math.log(max(nodes.visits[d], 1))
    for a in range(nodes.first[d], nodes.first[d] + nodes.count[d]):
        if after.visits[a] == 0:
            if fresh < 0 or after.value[a] > after.value[fresh]:
                fresh = a
        else:
            q = after.total[a] / after.visits[a]
            q = (q - least) / (greatest - least) if greatest > least else 0.5
            score = q + exploration * math.sqrt(ln_visits / after.visits[a])
            if score > best_score:
                best, best_score = a, score
    return fresh if fresh >= 0 else best


@inner
def follow(tree, d, a, shape):
    """The decision node after after-state ``a`` (a child of node ``d``) when the next piece is
    ``shape``: created, not expanded, the first time that shape is drawn there."""
    nodes, after = tree.decisions, tree.after
    if after.next[a, shape] < 0:
        nd = tree.used[DECISIONS_USED]
        tree.used[DECISIONS_USED] += 1
        copy_rows(nodes.board[nd], after.board[a])
        nodes.shape[nd] = shape
        nodes.piece[nd] = nodes.piece[d] + 1
        nodes.count[nd] = NOT_EXPANDED
        nodes.visits[nd] = 0
        after.next[a, shape] = nd
    return after.next[a, shape]


@inner
def descend(search, preview, rules, spec, ws):
    """Selection and expansion: walk from the root down the tree, expanding each decision node on
    its first visit, taking `select`'s after-state, then the node of the next piece (the preview
    below the root when shown, else a drawn shape), until a `Walk` outcome; the path is left in
    ``tree.path_decision`` and ``tree.path_after``."""
    tree = search.tree
    nodes, after = tree.decisions, tree.after
    d = ROOT
    depth = 0
    steps = 0
    reward = 0.0
    while True:
        if nodes.count[d] < 0 and not expand(d, rules, spec, tree, ws):
            return Walk(FULL, steps, depth, reward, -1)
        if nodes.count[d] == 0:
            return Walk(DEAD_END, steps, depth, reward, -1)
        tree.path_decision[steps] = d
        a = select(d, tree, search.exploration)
        tree.path_after[steps] = a
        steps += 1
        reward += after.points[a]
        if after.next[a, 0] == ENDED:  # the game's last piece: nothing follows
            return Walk(ENDED_PATH, steps, depth, reward, -1)
        if after.visits[a] == 0 or steps >= tree.path_after.shape[0]:
            return Walk(LEAF, steps, depth, reward, a)
        shape = preview if (depth == 0 and preview >= 0) else random_shape(search.rng)
        d = follow(tree, d, a, shape)
        depth += 1


@inner
def rollout(board, t, preview, pieces, rules, spec, ws, rng):
    """Rollout: play ``pieces`` drawn pieces (the first is ``preview`` when >= 0) 1-ply from
    ``board`` (copied into ``ws.spare``), piece ``t`` first; returns (points, last value, lost):
    the value is NaN when no piece was placed, 0 when the game ended."""
    out = ws.spare
    copy_rows(out, board)
    found = ws.found[NEXT]
    points = 0
    last = np.nan
    for i in range(pieces):
        shape = preview if (i == 0 and preview >= 0) else random_shape(rng)
        k, v = ply(NEXT, out, shape, t + i, rules, spec, ws)
        step = lock_step(out, rules, shape, t + i, found, k)
        points += step.points
        last = v
        if step.end != GOING_ON:  # lost, or over at the rules' last piece (truncated): no future value
            return points, 0.0, step.terminated
    return points, last, False


@inner
def reward(walk, search, preview, rules, spec, ws):
    """The reward of a simulation whose walk stopped at ``walk`` (not `FULL`): the points scored
    along the tree path and the rollout plus ``value_weight`` times the evaluator value of the last
    placement, or ``-death_penalty`` when the game was lost on the way; a path reaching the rules'
    last piece (``piece_limit``) ends there and is worth its points alone."""
    if walk.outcome == DEAD_END:
        return -search.death_penalty
    if walk.outcome == ENDED_PATH:
        return walk.reward
    tree = search.tree
    first = preview if (walk.depth == 0 and preview >= 0) else -1
    t = tree.decisions.piece[tree.path_decision[walk.steps - 1]] + 1
    points, last, lost = rollout(tree.after.board[walk.leaf], t, first, search.rollout, rules, spec, ws, search.rng)
    if lost:
        return -search.death_penalty
    return walk.reward + points + search.value_weight * (tree.after.value[walk.leaf] if np.isnan(last) else last)


@inner
def back_propagate(tree, steps, total):
    """Back-propagation: add the reward ``total`` to every after-state of the path's ``steps``,
    count a visit there and at its decision node, and widen the move's reward range."""
    tree.rewards[LEAST] = min(tree.rewards[LEAST], total)
    tree.rewards[GREATEST] = max(tree.rewards[GREATEST], total)
    for i in range(steps):
        a = tree.path_after[i]
        tree.after.visits[a] += 1
        tree.after.total[a] += total
        tree.decisions.visits[tree.path_decision[i]] += 1


@inner
def within_budget(search, done, start):
    """Whether another simulation may start after ``done``: the time (``ms``, from ``start``) or
    simulation budget is not spent, and the storage has room for a new decision node."""
    if search.ms > 0:
        if done > 0 and _now_ms() - start >= search.ms:
            return False
    elif done >= search.simulations:
        return False
    return search.tree.used[DECISIONS_USED] + 1 < search.tree.decisions.board.shape[0]


@inner
def most_visited(tree):
    """The root's most visited after-state (ties: the higher value), as its placement index."""
    nodes, after = tree.decisions, tree.after
    best = -1
    for a in range(nodes.first[ROOT], nodes.first[ROOT] + nodes.count[ROOT]):
        if (best < 0 or after.visits[a] > after.visits[best]
                or (after.visits[a] == after.visits[best] and after.value[a] > after.value[best])):
            best = a
    return after.placement[best]


@njit(cache=True)  # called from Python too: one compile, with the wrapper
def choose_mcts(search, board, shape, preview, t, rules, spec, ws):
    """Index of the chosen placement among the root's placements as `placements_into` lists them
    (-1 when every child is dead). The root's placements are left in ``ws.found[CURRENT]``."""
    if not search.use_preview:
        preview = -1
    if not plant_root(search.tree, board, shape, t, rules, spec, ws):
        return -1
    start = _now_ms() if search.ms > 0 else 0.0
    done = 0
    while within_budget(search, done, start):
        walk = descend(search, preview, rules, spec, ws)
        if walk.steps == 0 or walk.outcome == FULL:
            break  # the storage is full
        back_propagate(search.tree, walk.steps, reward(walk, search, preview, rules, spec, ws))
        done += 1
    return most_visited(search.tree)


@register
class MCTS(OnlinePolicy):
    name = "mcts"
    Settings = MCTSConfig
    Bundle = MCTSBundle
    choose_kernel = choose_mcts

    def new_bundle(self):
        """A simulation budget sizes the tree; a time budget gets storage for `TIMED_SIMULATIONS`."""
        cfg = self.settings
        simulations = TIMED_SIMULATIONS if cfg.ms else cfg.simulations
        tree = new_tree(self.rules.height, simulations, capacity(self.rules.height, self.rules.width))
        return MCTSBundle(int(cfg.simulations), float(cfg.ms or 0.0), float(cfg.exploration), int(cfg.rollout),
                          float(cfg.value_weight), float(cfg.death_penalty), bool(cfg.use_preview), tree,
                          np.zeros(1, np.uint64))

    def seed(self, seed: int) -> None:
        """Seed the generator of the search's draws from a game's seed."""
        self.bundle.rng[0] = np.uint64((int(seed) * MIX_MULTIPLIER + MIX_INCREMENT) % (1 << 64))
