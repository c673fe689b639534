"""Policies on short prefixes, the threshold stop, determinism across threads, the solve CLI."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numba
import numpy as np
import pytest

from engine import GEEK, replay
from solver import SolverConfig, Threshold, solve
from solver.solve import make_policy

ROOT = Path(__file__).resolve().parents[1]


#: small settings of the searching policies, enough to play 120 pieces in a second or two
SMALL = {
    "beam": {"evaluator": "chys_quality", "beam": {"width": 24}},
    "lookahead": {"lookahead": {"depth": 2, "keep_fraction": 0.3}},
    "backsearch": {"backsearch": {"base_rows": 0, "depth": 2, "keep_fraction": 0.3, "survival_depth": 1,
                                  "backup": 12, "max_backups": 1}},
    "profile_dp": {"profile_dp": {"states": 300, "window": 10}},
}


def small(policy, **kw):
    base = {"policy": policy, "pieces": 120, "evaluator": "pierre_dellacherie", **SMALL.get(policy, {})}
    base.update(kw)
    return SolverConfig(**base)


@pytest.mark.parametrize("policy", ["greedy", "lookahead", "beam"])
def test_policy_plays_a_prefix_and_its_record_replays(policy):
    r = solve(small(policy))
    assert r.pieces == 120 and r.stop == "done"
    verdict = replay(r.record)
    assert (verdict.score, verdict.bricks, verdict.end) == (r.score, 120, "record_end")
    assert list(r.score_by_step) == list(verdict.score_by_piece[1:])
    assert len(r.best_by_step) == 120 and (np.diff(r.score_by_step) >= 0).all()
    assert sum(r.clear_kinds[k] * k for k in range(1, 5)) > 0  # it clears rows
    if policy == "beam":
        assert (r.best_by_step >= r.score_by_step).all()
    else:
        assert (r.best_by_step == r.score_by_step).all()


def test_pd_greedy_known_prefix_score():
    # Pierre Dellacherie's greedy clears early and often: a fixed, checked value on 500 pieces.
    r = solve(SolverConfig(policy="greedy", evaluator="pierre_dellacherie", pieces=500))
    assert r.score == replay(r.record).score
    assert r.score > 0 and r.clear_kinds[1] > r.clear_kinds[4]


def test_lookahead_depth_one_equals_greedy():
    g = solve(SolverConfig(policy="greedy", evaluator="el_tetris", pieces=200))
    la = solve(SolverConfig(policy="lookahead", evaluator="el_tetris", pieces=200,
                            lookahead={"depth": 1, "keep_fraction": 1.0}))
    assert la.record == g.record


@pytest.mark.parametrize("policy", ["greedy", "lookahead", "beam", "backsearch", "profile_dp"])
def test_threshold_stops_at_the_right_piece(policy):
    cfg = small(policy)
    free = solve(cfg, record=False)
    assert free.stop == "done"
    curve = free.best_by_step.astype(float).copy()
    curve[70] += 1  # the search's best at piece 71 is one point short
    r = solve(cfg, threshold=Threshold(curve))
    assert (r.stop, r.abort_piece, r.abort_threshold) == ("aborted", 71, curve[70])
    assert len(r.best_by_step) == 71 and r.pieces <= 71 and replay(r.record).score == r.score
    # checked only every 25 pieces: piece 71 is not a checkpoint, piece 75 is
    curve2 = free.best_by_step.astype(float).copy()
    curve2[70] += 1
    curve2[74] += 1
    r2 = solve(cfg, threshold=Threshold(curve2, every=25))
    assert r2.abort_piece == 75


def test_beam_path_reaches_the_best_score_it_saw():
    # the best child of a layer may be cut (the score picks rank by score per clear), and the path
    # must still end on it, as the 1,395,326 solver's global best does
    for width in (2, 3, 5, 8):
        r = solve(small("beam", pieces=300, beam={"width": width}))
        assert r.score == r.best_by_step.max() == replay(r.record).score


def test_beam_endgame_lifts_the_clear_rules_in_the_last_pieces():
    # 30 pieces lock 120 cells, fewer than the 126 the clear rules ask of a parent board: no clear,
    # unless the last 10 pieces may clear anyway; the layers before them are the same
    cfg = {"policy": "beam", "pieces": 30, "evaluator": "chys_quality", "beam": {"width": 24}}
    ruled = solve(SolverConfig(**cfg))
    endgame = solve(SolverConfig(**{**cfg, "beam": {"width": 24, "endgame_pieces": 10}}))
    assert ruled.score == 0 and not ruled.best_by_step.any()
    assert endgame.score == 822 == replay(endgame.record).score and endgame.clear_kinds == (0, 0, 1, 1, 0)
    assert not endgame.best_by_step[:20].any() and endgame.best_by_step[20] > 0
    free = solve(SolverConfig(**{**cfg, "beam": {"width": 24, "endgame_pieces": 1000}}))  # more than are played
    assert free.best_by_step[:20].any() and free.score == replay(free.record).score > 0


def parts_not_cached(cfg) -> tuple[list[str], list[str]]:
    """The policy's kernel parts (`Policy.kernel_parts`, at numba's current threads), and those that
    neither this process nor numba's cache holds after a warm-up: a part at other types than the
    search's would be compiled beside it for nothing. (A kernel loaded from the cache brings its
    callees' code with it, so the callees' dispatchers may hold nothing: the cache's index is read.)"""
    policy = make_policy(cfg)
    parts = policy.kernel_parts()
    policy.warm_up()
    return list(parts), [name for name, part in parts.items() if not part.cached()]


def test_the_beams_kernel_parts_are_what_its_search_compiles():
    names, missing = parts_not_cached(small("beam"))
    assert names == ["lock_nodes", "merge_equal_boards", "value_kept", "cut", "next_layer", "trace_back",
                     "path_scores"]
    assert missing == []


@pytest.mark.slow
@pytest.mark.parametrize("ties", [{}, {"tie_break": "board", "keep_ties": True}])
def test_beam_same_record_whatever_the_threads(ties):
    cfg = small("beam", pieces=300, beam={"width": 40, **ties})
    numba.set_num_threads(1)
    one = solve(cfg)
    assert parts_not_cached(cfg)[1] == []  # the parts of one thread's search (the tuners' workers')
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    many = solve(cfg)
    assert one.record == many.record and one.score == many.score
    assert list(one.best_by_step) == list(many.best_by_step)


def run_solve(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "experiments.solve", *args], capture_output=True, text=True, cwd=cwd)


@pytest.mark.slow
def test_solve_cli_writes_verified_files(tmp_path):
    cfg = tmp_path / "s.yaml"
    cfg.write_text("policy: beam\nevaluator: chys_quality\nbeam:\n  width: 10\n")
    out = tmp_path / "out"
    p = run_solve(str(cfg), "--pieces", "80", "--out", str(out), "--quiet", "beam.width=12")
    assert p.returncode == 0, p.stderr
    summary = json.loads((out / "summary.json").read_text())
    record = (out / "record.txt").read_text().strip()
    assert replay(record).score == summary["score"] and summary["pieces"] == 80
    assert summary["config"]["beam"]["width"] == 12
    assert (out / "replay.js").read_text().startswith("game.pause();game.playRecord('N,")
    assert f"score: {summary['score']}}})" in (out / "submit.js").read_text()
    assert len(summary["score_by_step"]) == 80 and summary["end"] == "record_end"


def test_solve_cli_ctrl_c_writes_the_best_path_so_far(tmp_path):
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, "-m", "experiments.solve", "configs/solve/beam.yaml", "beam.width=200",
                          "--out", str(out)], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    seen = ""
    while "score " not in seen and p.poll() is None:  # the progress bar reports a score: searching
        seen += p.stderr.read(1)
    p.send_signal(signal.SIGINT)
    err = seen + p.stderr.read()
    p.stderr.close()
    assert p.wait(timeout=120) == 130, err
    assert "interrupted: the best path found so far was written" in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stop"] == "interrupted" and 0 < summary["pieces"] < 9999  # stopped mid-search
    verdict = replay((out / "record.txt").read_text().strip())
    assert (verdict.score, verdict.bricks) == (summary["score"], summary["pieces"])


@pytest.mark.parametrize("text, override, message", [
    ("policy: beam\nbeam:\n  widht: 3\n", [], "beam.widht: unknown key"),
    ("policy: beam\n", ["beam.width=0"], "beam.width: Input should be greater than or equal to 1"),
    ("policy: sideways\n", [], "policy: Input should be 'backsearch', 'beam', 'greedy', 'lookahead', 'profile_dp', 'segment', 'expect', 'mcts', 'one_ply' or 'preview'"),
    ("policy: greedy\nevaluator: nope.yaml\n", [], "nope.yaml"),
    ("policy: [\n", [], "invalid YAML"),
])
def test_solve_cli_config_errors(tmp_path, capsys, text, override, message):
    """The command's main in this process: the messages are the same as from the command line,
    whose process boundary test_solve_cli_ctrl_c_writes_the_best_path_so_far and the slow
    test_solve_cli_writes_verified_files hold."""
    from experiments.solve import main

    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    assert main([str(cfg), *override, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert message in err and str(cfg) in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_lowest_placements_keep_the_lowest_of_each_state_and_column():
    from engine import final_board, placements
    from engine.movegen import capacity, scratch
    from solver.beam import NODE_PLACEMENTS, node_placements
    from solver.layered import unpack

    boards = [final_board("N,N,D19,N,C1,D17,N,R3,D18", GEEK), np.zeros(20, np.uint16)]
    sc = scratch(GEEK)
    found = np.zeros((capacity(GEEK.height, GEEK.width), 3), np.int64)
    codes = np.zeros(capacity(GEEK.height, GEEK.width), np.int16)
    for shape in range(7):
        for board in boards:
            full = [tuple(p) for p in placements(board, GEEK, shape, 1).tolist()]
            n = node_placements(board, GEEK.kernel, shape, 1, NODE_PLACEMENTS.token("all"), sc, found, codes)
            assert [unpack(int(c)) for c in codes[:n]] == full         # all placements, packed
            lowest = {}
            for x, y, s in full:
                lowest[(s, x)] = max(lowest.get((s, x), -1), y)
            n = node_placements(board, GEEK.kernel, shape, 1, NODE_PLACEMENTS.token("lowest"), sc, found, codes)
            got = [unpack(int(c)) for c in codes[:n]]
            assert got == [(x, y, s) for x, y, s in full if y == lowest[(s, x)]]
            assert len(got) == len(lowest)


def test_board_words_read_four_rows_per_word_top_first():
    from solver.beam import board_words

    board = np.zeros(20, np.uint16)
    board[0], board[3] = 0b1, 0b11  # word 0: row 0 in bits 0-15, row 3 in bits 48-63
    board[4] = 0b100  # word 1
    board[19] = 0b1111111111  # word 4, its last row
    words = board_words(np.stack([np.zeros(20, np.uint16), board]), np.array([1, 0]))
    assert words.shape == (5, 2) and not words[:, 1].any()
    assert list(words[:, 0]) == [1 | 3 << 48, 4, 0, 0, 1023 << 48]


def test_pick_keeps_the_ties_of_the_last_pick_within_the_quotas():
    from solver.beam import Picks, pack_rows, pick

    # seven nodes, best first, by ranking key (rank) and parent (anc); nodes 1-4 and 6 tie on the key
    order = np.arange(7)
    rank = np.array([[9, 1], [5, 1], [5, 1], [5, 1], [5, 1], [5, 0], [5, 1]], np.int64)
    head = pack_rows(np.ascontiguousarray(rank.T))  # one key per node, equal exactly when the rows are
    assert [head[i] == head[1] for i in range(7)] == [False, True, True, True, True, False, True]
    anc = np.array([[0], [1], [0], [0], [1], [1], [0]])
    heights = np.zeros(7, np.int64)

    def run(want, keep_ties, quota=10):
        out = np.full(7, -1, np.int64)
        n = pick(order, head, Picks(want, np.array([quota]), 10), anc, heights, np.zeros(7, np.bool_),
                 np.zeros((1, 2), np.int64), np.zeros(21, np.int64), out, keep_ties)
        return list(out[:n])

    assert run(2, False) == [0, 1]
    assert run(2, True) == [0, 1, 2, 3, 4]  # node 5 differs and is within the quotas: the walk ends there
    assert run(2, True, quota=2) == [0, 1, 2, 4]  # node 3 is over its parent's quota, node 5 too
    assert run(0, True) == []


@pytest.mark.parametrize("policy", ["greedy", "lookahead", "beam", "backsearch", "profile_dp"])
def test_first_ctrl_c_ends_the_search_with_its_best_path(policy):
    # the progress callback plays the user: Ctrl-C at the first report (after 50-500 pieces)
    def ctrl_c(done, total, best):
        if done < total:
            os.kill(os.getpid(), signal.SIGINT)

    free = solve(small(policy, pieces=1200), record=False)
    r = solve(small(policy, pieces=1200), progress=ctrl_c, interruptible=True)
    assert r.stop == "interrupted" and 0 < r.pieces < 1200
    verdict = replay(r.record)
    assert (verdict.score, verdict.bricks) == (r.score, r.pieces)
    if policy in ("greedy", "lookahead"):  # a single path: the same path, cut where the search stopped
        assert list(r.score_by_step) == list(free.score_by_step[:r.pieces])
    # the handler is gone afterwards: Ctrl-C raises again
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)


def test_a_kill_ends_the_search_too_and_ignored_signals_stay_ignored():
    def kill(done, total, best):
        if done < total:
            os.kill(os.getpid(), signal.SIGTERM)

    before = signal.getsignal(signal.SIGTERM)
    r = solve(small("beam", pieces=1200), progress=kill, interruptible=True)
    assert r.stop == "interrupted" and replay(r.record).score == r.score
    assert signal.getsignal(signal.SIGTERM) is before
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as in a job started with &
    try:
        def ctrl_c(done, total, best):
            os.kill(os.getpid(), signal.SIGINT)

        r = solve(small("beam", pieces=300), progress=ctrl_c, interruptible=True)
        assert r.stop == "done" and r.pieces == 300
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_best_first_orders_by_value_then_tie_break_then_index():
    """`best_first` is the stable order: values descending, then ranks ascending, then index (as two
    stable argsorts give it), on random values with many ties."""
    from solver._base import best_first

    rng = np.random.default_rng(7)
    for _ in range(500):
        n = int(rng.integers(0, 50))
        values = rng.integers(-3, 3, n + 2).astype(np.float64)  # room past n: only the first n count
        ranks = rng.integers(0, 3, n + 2)
        by_rank = np.argsort(ranks[:n], kind="stable")
        want = by_rank[np.argsort(-values[:n][by_rank], kind="stable")]
        assert best_first(values, ranks, n).tolist() == want.tolist()
