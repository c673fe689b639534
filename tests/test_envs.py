"""The Gymnasium environments (`engine.envs`): registered ids, Gymnasium's own checker, seeding as the
project's seeded games, the dynamics against `engine.GameState`, the 1-ply player through the
environment against `benchmarks/bench_standard.py`'s games, a Geek episode through the contest's
record and replayer, and the batched environment against ``SyncVectorEnv`` / ``AsyncVectorEnv``."""

import subprocess
import sys
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

import engine.envs  # noqa: E402,F401  (registers the environments)
from benchmarks.standard import players  # noqa: E402
from engine import CLASSIC, GEEK, STANDARD, GameState, get_rules, lock_copy, replay, to_strings  # noqa: E402
from engine.envs import GAMES, TetrisEnv, TetrisVectorEnv  # noqa: E402
from engine.lock import OVERFLOW, TOP_TOUCHED  # noqa: E402
from evaluators import load_evaluator  # noqa: E402
from evaluators.registry import TIE_BREAKS  # noqa: E402
from solver.online.games import play_game  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def make(name="Standard-v0", **kwargs):
    return gym.make(f"tetris_workbench/{name}", **kwargs)


def random_policy(seed):
    """A seeded uniform choice among the legal actions."""
    rng = np.random.default_rng(seed)
    return lambda obs, env: int(rng.choice(np.flatnonzero(obs["action_mask"])))


def one_ply(evaluator):
    """The project's 1-ply choice made through the environment: each legal action's placement locked
    on a copy of the board (`engine.lock_copy`) and valued by the evaluator (`Evaluator.value`),
    a lock that loses the game left out; the highest value wins, a tie the lower rank of the
    evaluator's tie-break, then the placement the move generator lists first (state, y, x), as
    `solver.greedy.best_placement` chooses. None when every lock loses."""
    rank_of = TIE_BREAKS.get(evaluator.tie_break or "none")

    def choose(obs, env):
        u = env.unwrapped
        rules, board, t = u.rules, u.board, u.piece_index
        shape, spawn = u.shape_of(t), rules.spawn_state_of(t)
        placements = sorted((u.placement(a)[::-1], a) for a in u.legal_actions())  # (state, y, x)
        best = None
        for (s, y, x), a in placements:
            locked, cleared = np.zeros_like(board), np.zeros_like(board)
            lock = lock_copy(board, rules.kernel, shape, s, x, y, t + 1, locked, cleared)
            if lock.end in (TOP_TOUCHED, OVERFLOW):
                continue
            v = evaluator.value(board, locked, cleared, rules.cells[shape, s], x, y, lock.lines, lock.points,
                                rules.width)
            rank = rank_of(x, s, rules.spawn_x, spawn)
            if best is None or v > best[0] or (v == best[0] and rank < best[1]):
                best = (v, rank, a)
        return None if best is None else best[2]

    return choose


def play(env, policy, seed=None):
    """One episode: (rewards, the last info, terminated, truncated, actions)."""
    obs, info = env.reset(seed=seed)
    rewards, actions = [], []
    while True:
        a = policy(obs, env)
        actions.append(a)
        obs, r, terminated, truncated, info = env.step(a)
        rewards.append(r)
        if terminated or truncated:
            return rewards, info, terminated, truncated, actions


# ------------------------------------------------------------------------------------------------
# Registration and spaces


def test_the_engine_loads_without_gymnasium():
    code = ("import sys; sys.modules['gymnasium'] = None\n"
            "import engine, engine.state, engine.replay\n"
            "assert 'engine.envs' not in sys.modules\n"
            "try:\n    import engine.envs\nexcept ImportError:\n    print('refused')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "refused\n"


@pytest.mark.parametrize(("name", "rules", "width", "height", "preview", "reward"), [
    ("Standard-v0", "standard", 10, 20, False, "rows"),
    ("Classic-v0", "classic", 12, 26, True, "points"),
    ("Geek-v0", "geek", 10, 20, True, "points"),
])
def test_each_game_is_registered_with_its_spaces(name, rules, width, height, preview, reward):
    env = make(name).unwrapped
    assert isinstance(env, TetrisEnv) and env.rules.name == rules and env.reward_kind == reward
    assert env.action_space == gym.spaces.Discrete(4 * width)
    space = env.observation_space
    assert set(space) == {"board", "piece", "action_mask"} | ({"preview"} if preview else set())
    assert space["board"].shape == (height, width) and space["board"].dtype == np.int8
    assert space["action_mask"].shape == (4 * width,)
    assert env.max_pieces == (10_000 if rules == "geek" else None)
    assert set(GAMES) == {"Standard-v0", "Classic-v0", "Geek-v0"}


@pytest.mark.parametrize("name", sorted(GAMES))
def test_gymnasiums_checker_passes(name):
    from gymnasium.utils.env_checker import check_env

    env = make(name, render_mode="ansi").unwrapped
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    assert [str(w.message) for w in caught] == []


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(ValueError, match="unknown rules preset 'standrd'"):
        TetrisEnv("standrd")
    with pytest.raises(ValueError, match="reward: should be one of rows, points, got 'lines'"):
        TetrisEnv(reward="lines")
    with pytest.raises(ValueError, match="max_pieces: should be a whole number >= 1"):
        TetrisEnv(max_pieces=0)
    with pytest.raises(ValueError, match="illegal_action"):
        TetrisEnv(illegal_action="ignore")
    with pytest.raises(ValueError, match="mid-air placements"):
        TetrisEnv(GEEK.floating())
    with pytest.raises(ValueError, match="render_mode"):
        TetrisEnv(render_mode="human")


# ------------------------------------------------------------------------------------------------
# Seeding


def test_reset_seed_k_plays_the_pieces_of_the_projects_game_k():
    env = make("Standard-v0", max_pieces=600).unwrapped
    for seed in (0, 7):
        rewards, info, *_ = play(env, random_policy(1), seed)
        n = info["pieces"] + 1  # the pieces placed and the one shown at the end
        assert len(env._pieces) >= n
        assert (env._pieces[:n] == STANDARD.sequence(n, seed)).all()
        assert (env._pieces[:n] == STANDARD.pieces.stream(seed).take(n)).all()
    env.reset(seed=3)
    first = env.shape_of(0), env.shape_of(1), env.shape_of(2)
    env.reset(seed=3)
    assert (env.shape_of(0), env.shape_of(1), env.shape_of(2)) == first == tuple(STANDARD.sequence(3, 3))
    # the contest's sequence whatever the seed
    geek = make("Geek-v0").unwrapped
    for seed in (0, 1, None):
        geek.reset(seed=seed)
        assert [geek.shape_of(t) for t in range(300)] == GEEK.sequence(300).tolist()


def test_an_unseeded_reset_goes_on_with_the_generator():
    env = make("Classic-v0").unwrapped
    env.reset(seed=5)
    a = [env.shape_of(t) for t in range(10)]
    env.reset()
    b = [env.shape_of(t) for t in range(10)]
    assert a == CLASSIC.sequence(10, 5).tolist() and b != a


# ------------------------------------------------------------------------------------------------
# The dynamics against the engine's GameState


def lowest_actions(state: GameState, width: int) -> dict[int, tuple]:
    """action -> placement: the lowest placement of each (state, leftmost column) GameState lists."""
    out = {}
    rules = state.rules
    for x, y, s in state.placements().tolist():
        a = s * width + x + int(rules.cells[state.shape, s, :, 0].min())
        if a not in out or y > out[a][1]:
            out[a] = (x, y, s)
    return out


@pytest.mark.parametrize(("name", "rules", "seed"), [
    ("Geek-v0", GEEK, 0), ("Geek-v0", GEEK, 1), ("Classic-v0", CLASSIC, 4), ("Standard-v0", STANDARD, 2),
    ("Standard-v0", get_rules("standard_clear_first"), 3),
])
def test_each_step_is_the_game_states(name, rules, seed):
    """Random legal actions: the mask is the game state's lowest placements, each step's reward,
    board and end are those of `GameState.apply` on the same pieces."""
    env = make(name, rules=rules).unwrapped
    policy = random_policy(seed)
    obs, info = env.reset(seed=seed)
    state = GameState.new(rules, sequence=rules.sequence(10_001, seed if rules.pieces.kind == "uniform" else None))
    total = 0
    for step in range(1, 10_001):
        options = lowest_actions(state, env.width)
        assert sorted(options) == np.flatnonzero(obs["action_mask"]).tolist()
        assert all(env.placement(a) == p for a, p in options.items())
        a = policy(obs, env)
        obs, reward, terminated, truncated, info = env.step(a)
        t = state.apply(options[a])
        state = t.state
        total += t.points
        assert reward == (t.lines if env.reward_kind == "rows" else t.points)
        assert (env.board == state.board).all()
        assert (obs["board"] == np.array([[(r >> x) & 1 for x in range(env.width)] for r in state.board])).all()
        assert info["score"] == state.score == total and info["lines"] == state.lines and info["pieces"] == step
        if terminated or truncated:
            break
        assert obs["piece"] == state.shape
        if rules.preview:
            assert obs["preview"] == state.sequence[state.piece + 1]
    assert terminated and not truncated
    if state.over:
        assert info["end"] == state.end
    else:  # a drop-only game: the next piece has no placement
        assert info["end"] == "stuck" and len(state.placements()) == 0
    assert obs["action_mask"].sum() == 0


def test_the_contests_piece_limit_truncates():
    short = replace(GEEK, name="geek_12", piece_limit=12)
    env = TetrisEnv(short, reward="points")
    rewards, info, terminated, truncated, actions = play(env, random_policy(3), 0)
    assert (len(rewards), terminated, truncated, info["end"]) == (12, False, True, "piece_limit")
    state = GameState.new(short)
    for a in actions[:-1]:
        state = state.apply(env_placement_replayed(short, state, a)).state
    last = state.apply(env_placement_replayed(short, state, actions[-1]))
    assert last.points == 0 and rewards[-1] == 0 and sum(rewards) == state.score == info["score"]
    # max_pieces: "capped", before the rules' limit
    env = make("Geek-v0", max_pieces=5).unwrapped
    rewards, info, terminated, truncated, _ = play(env, random_policy(3), 0)
    assert (len(rewards), terminated, truncated, info["end"]) == (5, False, True, "capped")
    assert make("Geek-v0", max_pieces=20_000).unwrapped.max_pieces == 10_000


def env_placement_replayed(rules, state, action):
    return lowest_actions(state, rules.width)[action]


def test_illegal_actions():
    env = make("Standard-v0").unwrapped
    obs, _ = env.reset(seed=0)
    legal = np.flatnonzero(obs["action_mask"])
    illegal = next(a for a in range(env.n_actions) if a not in legal)
    twin = make("Standard-v0").unwrapped
    twin.reset(seed=0)
    o1, r1, *_, i1 = env.step(illegal)
    o2, r2, *_, i2 = twin.step(int(legal[0]))
    assert i1["illegal_action"] and not i2["illegal_action"] and (o1["board"] == o2["board"]).all()
    strict = make("Standard-v0", illegal_action="raise").unwrapped
    strict.reset(seed=0)
    with pytest.raises(ValueError, match=rf"action {illegal} \(state \d, column \d\) is not a placement"):
        strict.step(illegal)
    for bad in (-1, env.n_actions, 1.5, True, np.array([1, 2])):
        with pytest.raises(ValueError, match="action: should be"):
            env.step(bad)
    with pytest.raises(RuntimeError, match="step before reset"):
        make("Standard-v0").unwrapped.step(0)
    env = make("Standard-v0", max_pieces=1).unwrapped
    env.reset(seed=0)
    env.step(int(env.legal_actions()[0]))
    with pytest.raises(RuntimeError, match="the episode is over"):
        env.step(0)


def test_render_shows_the_board():
    env = make("Geek-v0", render_mode="ansi").unwrapped
    env.reset()
    first = env.placement(int(env.legal_actions()[0]))
    env.step(int(env.legal_actions()[0]))
    text = env.render().splitlines()
    assert text[0] == "piece 2: I, next O; score 0, rows 0"  # the contest's sequence: Z, I, O, ...
    assert text[1:] == to_strings(GameState.new(GEEK).apply(first).state.board)


# ------------------------------------------------------------------------------------------------
# The 1-ply player through the environment, against bench_standard.py's games


@pytest.mark.parametrize(("evaluator", "rules", "height", "cap", "seeds", "expected"), [
    # bench_standard.py games --evaluator dellacherie --height 6 --seed 1 --games 1 (and --seed 5): to the end
    ("dellacherie", "standard", 6, 100_000, (1, 5), [8, 10]),
    # seeds 0..7 (--games 8), each game to its end
    pytest.param("dellacherie", "standard", 6, 100_000, range(8), [59, 8, 92, 50, 220, 10, 85, 32],
                 marks=pytest.mark.slow),
    pytest.param("pierre_dellacherie", "standard", 6, 100_000, range(8), [0, 56, 118, 16, 9, 25, 70, 34],
                 marks=pytest.mark.slow),  # another tie-break (pd_priority)
    # the preset standard_10x10, capped at 250 pieces (--rules standard_10x10 --cap 250)
    pytest.param("bcts", "standard_10x10", None, 250, range(3), [98, 98, 99], marks=pytest.mark.slow),
])
def test_the_one_ply_player_through_the_env_scores_bench_standards_rows(evaluator, rules, height, cap, seeds,
                                                                        expected):
    """Each step's action chosen by the evaluator over the legal placements (`one_ply`), checked
    piece by piece against the 1-ply policy's own choice: game by game the rows, pieces and end of
    `bench_standard.py`'s player (`make`, `play_game`) on the same seeds."""
    policy, game_rules = players.make(evaluator, rules, height)
    env = gym.make("tetris_workbench/Standard-v0", rules=game_rules, max_pieces=cap)
    choose = one_ply(load_evaluator(evaluator))
    same = []

    def checked(obs, env):
        a = choose(obs, env)
        u = env.unwrapped
        placement = policy.choose(u.board, u.piece_index, u.shape_of(u.piece_index))
        same.append(a == u.action_of(placement))
        return a

    rows, theirs = [], []
    for seed in seeds:
        rewards, info, terminated, truncated, _ = play(env, checked, seed)
        score, pieces, end, _, _ = play_game(policy, seed, cap)
        rows.append(int(sum(rewards)))
        theirs.append(score)
        assert (info["pieces"], info["end"]) == (pieces, end)
        assert (terminated, truncated) == (end == "stuck", end == "capped")
    assert rows == theirs == expected
    assert len(same) > 30 and all(same)


# ------------------------------------------------------------------------------------------------
# A Geek episode through the contest's record


def test_a_geek_episode_replays_to_its_reward():
    env = make("Geek-v0", max_pieces=200)
    rewards, info, terminated, truncated, actions = play(env, one_ply(load_evaluator("pierre_dellacherie")), None)
    assert truncated and not terminated and len(actions) == 200
    record = env.unwrapped.record()
    verdict = replay(record, GEEK)
    assert verdict.valid and verdict.end == "record_end" and verdict.bricks == 200
    assert verdict.score == sum(rewards) == info["score"] > 1_000
    # the replayer's trace locks each piece where the episode did
    trace = replay(record, GEEK, trace=True)
    locked = [(x, y, int(GEEK.alias[shape, s])) for shape, s, x, y, _ in trace.locked[1:].tolist()]
    assert locked == env.unwrapped.placed
    # and a game that tops out replays to the same end
    env = make("Geek-v0")
    rewards, info, terminated, _, _ = play(env, lambda obs, env: int(np.flatnonzero(obs["action_mask"])[0]), None)
    verdict = replay(env.unwrapped.record(), GEEK)
    assert terminated and verdict.end == info["end"] == "top_touched" and verdict.score == sum(rewards)


def test_drop_only_games_have_no_record():
    env = make("Standard-v0")
    env.reset(seed=0)
    env.step(0)
    with pytest.raises(ValueError, match="place pieces by dropping them"):
        env.unwrapped.record()


# ------------------------------------------------------------------------------------------------
# Vectorised


def run_vector(envs, steps, seed, legal_only=True):
    """``steps`` steps of seeded random legal actions (any actions: ``legal_only`` False); every
    returned value, step by step."""
    rng = np.random.default_rng(seed)
    out = [envs.reset(seed=seed)]
    obs = out[0][0]
    for _ in range(steps):
        actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() and legal_only else rng.integers(len(m))
                            for m in obs["action_mask"]])
        result = envs.step(actions)
        out.append(result)
        obs = result[0]
    return out


def assert_same(a, b, path="result"):
    if isinstance(a, dict):
        assert set(a) == set(b), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            assert_same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]")
    else:
        x, y = np.asarray(a), np.asarray(b)
        assert x.shape == y.shape and (x == y).all(), f"{path}: {x} != {y}"
        if x.dtype != object:
            assert x.dtype.kind == y.dtype.kind, f"{path}: {x.dtype} != {y.dtype}"


@pytest.mark.parametrize(("name", "kwargs", "steps", "legal_only"), [
    ("Standard-v0", {"rules": "standard_10x10", "max_pieces": 37}, 400, True),
    ("Geek-v0", {}, 300, True),
    ("Classic-v0", {"max_pieces": 300}, 500, True),
    ("Geek-v0", {"reward": "rows"}, 200, False),  # illegal actions played as the first legal one
])
def test_the_batched_env_is_a_sync_vector_env(name, kwargs, steps, legal_only):
    """Every observation, reward, end and info of `TetrisVectorEnv` is ``SyncVectorEnv``'s over
    ``TetrisEnv``, through episodes that end and autoreset (games of different lengths)."""
    ours = gym.make_vec(f"tetris_workbench/{name}", num_envs=3, **kwargs)
    sync = gym.make_vec(f"tetris_workbench/{name}", num_envs=3, vectorization_mode="sync", **kwargs)
    assert isinstance(ours, TetrisVectorEnv) and isinstance(sync, gym.vector.SyncVectorEnv)
    assert ours.observation_space == sync.observation_space and ours.action_space == sync.action_space
    a, b = run_vector(ours, steps, 11, legal_only), run_vector(sync, steps, 11, legal_only)
    ends = sum(int((r[2] | r[3]).sum()) for r in a[1:])
    assert ends >= 3  # episodes ended and restarted
    illegal = sum(int(r[4]["illegal_action"].sum()) for r in a[1:])
    assert (illegal == 0) == legal_only
    assert_same(a, b)
    for obs in (r[0] for r in a):
        assert ours.observation_space.contains(obs)


def test_the_batched_env_resets_a_mask_and_seeds_per_game():
    env = TetrisVectorEnv(3, rules="standard", max_pieces=50)
    obs, info = env.reset(seed=[4, 9, 4])
    assert obs["piece"].tolist() == [STANDARD.sequence(1, 4)[0], STANDARD.sequence(1, 9)[0],
                                     STANDARD.sequence(1, 4)[0]]
    for _ in range(5):
        obs, *_ = env.step(obs["action_mask"].argmax(axis=1))
    assert env._t.tolist() == [5, 5, 5]
    obs, info = env.reset(seed=[None, 2, None], options={"reset_mask": np.array([False, True, False])})
    assert env._t.tolist() == [5, 0, 5] and info["_pieces"].tolist() == [False, True, False]
    assert obs["piece"][1] == STANDARD.sequence(1, 2)[0] and obs["board"][1].sum() == 0 and obs["board"][0].sum() > 0
    with pytest.raises(ValueError, match="only reset_mask"):
        env.reset(options={"other": 1})
    with pytest.raises(ValueError, match="actions: 3 whole numbers"):
        env.step(np.zeros(2, np.int64))
    strict = TetrisVectorEnv(2, rules="standard", illegal_action="raise")
    obs, _ = strict.reset(seed=0)
    actions = obs["action_mask"].argmax(axis=1)
    actions[1] = np.flatnonzero(obs["action_mask"][1] == 0)[0]
    with pytest.raises(ValueError, match=rf"game 1: action {actions[1]} is not a placement"):
        strict.step(actions)
    assert strict._t.tolist() == [0, 0] and strict._boards.sum() == 0
    with pytest.raises(ValueError, match="num_envs"):
        TetrisVectorEnv(0)


@pytest.mark.slow
def test_async_vector_env_plays_the_same_games():
    kwargs = {"rules": "standard_10x10", "max_pieces": 25}
    asynchronous = gym.make_vec("tetris_workbench/Standard-v0", num_envs=2, vectorization_mode="async", **kwargs)
    try:
        a = run_vector(asynchronous, 80, 5)
    finally:
        asynchronous.close()
    b = run_vector(gym.make_vec("tetris_workbench/Standard-v0", num_envs=2, **kwargs), 80, 5)
    assert_same(a, b)
