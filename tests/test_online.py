"""Policies for unknown pieces: agreement with the known-sequence policies where they must agree,
a plain-Python check of the 2-ply reduction, seeded games, and MCTS on a hand-drawn board."""

import json
from dataclasses import replace

import numpy as np
import pytest

from engine import CLASSIC, GameState
from engine.board import from_strings
from evaluators import load_evaluator
from solver import SolverConfig, solve
from solver.online import games, make_policy, play_game, play_games
from solver.online.games import GameCheckpoint
from solver.online.mcts import ENDED, MCTS


def config(policy, rules="classic", **kw):
    base = {"policy": policy, "rules": rules, "pieces": 400, "evaluator": "el_tetris", "seed": 3, "threads": 1}
    base.update(kw)
    return SolverConfig(**base)


def test_one_ply_plays_exactly_as_greedy():
    greedy = solve(config("greedy"), record=False)
    online = solve(config("one_ply"))
    assert online.games.ends == ["capped"]
    assert online.score == greedy.score > 0
    assert online.clear_kinds == greedy.clear_kinds


def test_preview_plays_as_two_deep_lookahead():
    # the preview is the next piece of the sequence: a 2-deep lookahead searching every child with
    # the summed objective makes the same decisions
    look = solve(config("lookahead", lookahead={"depth": 2, "keep_fraction": 1.0, "objective": "sum"},
                        pieces=150), record=False)
    online = solve(config("preview", pieces=150))
    assert online.score == look.score and online.clear_kinds == look.clear_kinds


def python_worths(board, shape, t, evaluator, reduce):
    """Each placement's 2-ply worth, computed with GameState and Evaluator.value, plain Python."""
    rules = CLASSIC
    seq = np.array([shape] + [0] * 3, np.int8)
    g = GameState(rules, seq, board.copy(), piece=t - t, end=None)

    def value(state, p, sh):
        x, y, s = (int(v) for v in p)
        locked = state.board.copy()
        from engine.board import count_and_clear, place
        place(locked, rules.cells[sh, s], x, y)
        cleared = locked.copy()
        _, f, _ = count_and_clear(cleared, rules.full_row)
        v = evaluator.value(state.board, locked, cleared, rules.cells[sh, s], x, y, f, rules.scores[f], rules.width)
        return v, cleared

    out = []
    for p in g.placements():
        v1, child = value(g, p, shape)
        bests = []
        for s2 in range(7):
            g2 = GameState(rules, np.array([s2, 0], np.int8), child, end=None)
            bests.append(max(value(g2, q, s2)[0] for q in g2.placements()))
        out.append(v1 + (min(bests) if reduce == "min" else sum(bests) / 7))
    return g.placements(), np.array(out)


@pytest.mark.parametrize("reduce", ["mean", "min"])
def test_expect_picks_the_best_two_ply_worth(reduce):
    board = from_strings(["......#.....", "#..#.##.##..", "##.######.##", "####.#######"], width=12, height=26)
    ev = load_evaluator("el_tetris")
    policy = make_policy(config("expect", expect={"reduce": reduce}), ev)
    for shape in range(7):
        p = policy.choose(board, 0, shape)
        placements, worths = python_worths(board, shape, 0, ev, reduce)
        k = int(np.flatnonzero((placements == p).all(axis=1))[0])
        assert worths[k] == pytest.approx(worths.max(), abs=1e-6)


def test_seeded_games_are_reproducible_and_capped():
    policy = make_policy(config("one_ply"))
    a = play_games(policy, [5, 6], 300)
    b = play_games(policy, [5, 6], 300)
    assert list(a.scores) == list(b.scores) and a.capped == 2 and list(a.pieces) == [300, 300]
    assert a.scores[0] != a.scores[1]  # different seeds, different pieces
    r = solve(config("one_ply", pieces=300, seed=5, online={"games": 2}))
    assert r.score == round(a.mean) and list(r.games.scores) == list(a.scores)
    assert r.games.capped == 2 and r.pieces == 600


def test_games_end_when_the_stack_tops_out():
    # a weight set that builds towers (rewards height) tops out long before the cap; el_tetris's
    # features (its layout: the one-ply kernels compiled for el_tetris serve it)
    bad = {"features": {"landing_height": 10, "lines_cleared": 0, "row_transitions": 0, "column_transitions": 0,
                        "holes": 5, "wells": 0}}
    r = solve(config("one_ply", evaluator=bad, pieces=5000))
    g = r.games
    assert g.ends == ["spawn_blocked"] and g.pieces[0] < 5000


@pytest.mark.slow
def test_mcts_takes_the_four_row_clear_and_is_reproducible():
    rows = ["###########."] * 4
    board = from_strings(rows, width=12, height=26)
    policy = make_policy(config("mcts", mcts={"simulations": 300, "rollout": 3}))
    policy.seed(1)
    p = policy.choose(board, 0, 0, -1)  # an I
    x, y, s = (int(v) for v in p)
    cells = {(x + dx, y + dy) for dx, dy in CLASSIC.cells[0, s]}
    assert cells == {(11, 22), (11, 23), (11, 24), (11, 25)}
    g1 = play_games(policy, [2], 60)
    g2 = play_games(policy, [2], 60)
    assert list(g1.scores) == list(g2.scores) and g1.capped == 1


@pytest.mark.slow
def test_mcts_reaching_the_piece_limit_is_an_end_not_a_death():
    # a game of 12 pieces, searched from its 11th: rollouts and tree paths reach the last piece
    rules = replace(CLASSIC, piece_limit=12)
    cfg = config("mcts", mcts={"simulations": 200, "rollout": 3})
    policy = MCTS(cfg, rules, load_evaluator("el_tetris"))
    policy.seed(1)
    board = np.zeros(rules.height, np.uint16)
    assert policy.choose(board, 10, 2, -1) is not None
    nodes, after = policy.bundle.tree.decisions, policy.bundle.tree.after
    root = slice(nodes.first[0], nodes.first[0] + nodes.count[0])
    visited = after.visits[root] > 0
    assert visited.sum() > 5
    # no simulation was counted as lost (-death_penalty): an empty board cannot top out in 3 pieces
    assert (after.total[root][visited] / after.visits[root][visited] > -cfg.mcts.death_penalty / 2).all()
    assert (after.next[:, 0] == ENDED).any()  # the last piece's after-states are leaves


def test_course_preview_survives():
    r = solve(config("preview", rules="course", pieces=500))
    assert r.games.ends == ["capped"] and r.score >= 1000


def test_mcts_time_budget():
    import time

    board = from_strings(["#.#########."] * 2, width=12, height=26)
    policy = make_policy(config("mcts", mcts={"ms": 30, "rollout": 2}))
    policy.seed(4)
    policy.choose(board, 0, 3, 4)  # compile
    start = time.perf_counter()
    p = policy.choose(board, 0, 3, 4)
    took = time.perf_counter() - start
    assert took >= 0.030
    legal = GameState(CLASSIC, np.array([3, 4], np.int8), board, end=None).placements()
    assert (legal == p).all(axis=1).any()


def test_each_policy_reads_its_own_section_and_the_old_keys_say_where_they_went(tmp_path):
    from engine.config import ConfigError
    from solver import load_solver_config

    preview = make_policy(config("preview", preview={"keep": 3, "objective": "last"}))
    expect = make_policy(config("expect", expect={"keep": 5, "reduce": "min"}))
    assert (preview.bundle.search.keep, preview.bundle.search.last) == (3, True)
    assert (expect.bundle.search.keep, expect.bundle.search.last, expect.bundle.search.worst) == (5, False, True)
    path = tmp_path / "old.yaml"
    path.write_text("policy: expect\nrules: classic\npieces: 10\nonline:\n  games: 2\n  keep: 4\n")
    with pytest.raises(ConfigError, match="keep: moved to preview.keep and expect.keep"):
        load_solver_config(path)


@pytest.mark.parametrize("policy, cap", [("one_ply", 900), ("preview", 300)])
def test_a_game_played_on_from_its_checkpoint_is_the_game_never_stopped(policy, cap, monkeypatch):
    monkeypatch.setattr(games, "CHUNK", 70)  # a checkpoint after every 70 pieces
    straight = play_game(make_policy(config(policy)), 11, cap)
    kept = []
    again = play_game(make_policy(config(policy)), 11, cap, keep=kept.append, keep_seconds=0)
    assert straight[:3] == again[:3] and list(straight[3]) == list(again[3]) and straight[1] == cap
    assert [c.pieces for c in kept] == list(range(70, cap, 70))
    for c in (kept[0], kept[len(kept) // 2], kept[-1]):  # each through JSON, played on by a new policy
        c = GameCheckpoint.from_json(json.loads(json.dumps(c.to_json())))
        on = play_game(make_policy(config(policy)), 11, cap, start=c)
        assert on[:3] == straight[:3] and list(on[3]) == list(straight[3]) and on[4] >= c.seconds


def test_a_game_that_tops_out_after_its_checkpoint_ends_as_it_did(monkeypatch):
    # the tower-building weights above: the game ends by its spawn, not the cap
    monkeypatch.setattr(games, "CHUNK", 5)
    bad = {"features": {"landing_height": 10, "lines_cleared": 0, "row_transitions": 0, "column_transitions": 0,
                        "holes": 5, "wells": 0}}
    policy = make_policy(config("one_ply", evaluator=bad))
    kept = []
    straight = play_game(policy, 4, 5000, keep=kept.append, keep_seconds=0)
    assert straight[2] == "spawn_blocked" and len(kept) > 2 and kept[-1].pieces > straight[1] - 5
    for c in kept[-2:]:
        on = play_game(policy, 4, 5000, start=c)
        assert on[:3] == straight[:3] and list(on[3]) == list(straight[3])


def test_a_checkpoint_that_does_not_fit_the_game_is_refused():
    policy = make_policy(config("one_ply"))
    kept = []
    with pytest.MonkeyPatch.context() as m:
        m.setattr(games, "CHUNK", 50)
        play_game(policy, 3, 120, keep=kept.append, keep_seconds=0)
    c = kept[0]
    with pytest.raises(ValueError, match="seed 3 given for the game of seed 4"):
        play_game(policy, 4, 120, start=c)
    with pytest.raises(ValueError, match="at or past the cap 50"):
        play_game(policy, 3, 50, start=c)
    wide = GameCheckpoint(3, c.pieces, c.score, c.board | np.uint16(1 << 13), c.kinds)
    with pytest.raises(ValueError, match="beyond the rules' width"):
        play_game(policy, 3, 120, start=wide)
    with pytest.raises(ValueError, match="draws of its own"):
        play_game(make_policy(config("mcts", mcts={"simulations": 10})), 3, 120, start=c)
    for broken, problem in (({**c.to_json(), "pieces": -1}, "pieces: should be"),
                            ({**c.to_json(), "kinds": [0, 1]}, "kinds: should hold 5"),
                            ({**c.to_json(), "board": [1 << 16]}, "16-bit"), ([], "a JSON object")):
        with pytest.raises(ValueError, match=problem):
            GameCheckpoint.from_json(broken)
