"""The segment search (`solver.segment`): its table keeps the best ``states`` per (piece index, cells)
key and merges equal boards; a clear leaving fewer than ``min_cells`` cells is no state; a
segment's leaves are the reference's clearing placements; a short prefix gives a record the
project's replayer and the plain-Python reference score alike; the result does not depend on the
number of threads; a search stopped and resumed from its checkpoint ends as an uninterrupted one."""

import os
import signal
import zipfile

import numpy as np
import pytest

import reference as ref
from engine.board import from_strings
from engine.lock import lock_piece
from engine.rules import GEEK, SHAPE_NAMES
from engine.statefile import MAX_SEARCH_STATE_BYTES, read_state
from solver import SolverConfig, solve
from solver._base import CheckpointError
from solver.layered import board_hash, unpack
from solver.segment import (
    CHECKPOINT_KIND, History, Roots, SegmentConfig, expand_chunk, found_leaves, insert_found, new_leaves, new_table,
    settings, take,
)
from evaluators import load_evaluator

#: a short prefix at a small setting: the first clear comes after 26 pieces (100 cells must remain)
SMALL = {"nodes": 40, "states": 2, "depth": 12, "first_depth": 34}
PIECES = 90


def small_config(**segment) -> SolverConfig:
    return SolverConfig(policy="segment", evaluator="transitions", pieces=PIECES, threads=1,
                        segment={**SMALL, **segment})


def board_with(cells: int, tag: int):
    """A board of ``cells`` + 1 cells: rows of 9 from the bottom, and one cell in column ``tag`` of
    row 1 (boards of equal cells told apart)."""
    b = np.zeros(20, np.uint16)
    left = cells
    y = 19
    while left > 0:
        k = min(left, 9)
        b[y] = (1 << k) - 1
        left -= k
        y -= 1
    b[1] = 1 << tag
    return b


def one_leaf_per_root(scores, cells, tags, index=5, d=0):
    """Leaves as `expand_chunk` leaves them: root r has one leaf, at its (d, cells // 2) bucket."""
    cfg = settings(SegmentConfig(states=2, depth=4, first_depth=4), GEEK, 100, by_board=False)
    leaves = new_leaves(cfg, 20)
    n = len(scores)
    for r in range(n):
        b = board_with(cells[r], tags[r])
        key = (cells[r] + 1) // cfg.key_cells
        leaves.count[r, d, key] = 1
        leaves.boards[r, d, key, 0] = b
        leaves.score[r, d, key, 0] = scores[r]
        leaves.value[r, d, key, 0] = 0.0
        leaves.hash[r, d, key, 0] = board_hash(b)
    roots = Roots(np.zeros((n, 20), np.uint16), np.full(n, index, np.int64), np.zeros(n, np.int64),
                  np.full(n, 4, np.int64))
    return cfg, leaves, roots


def insert_leaves(n_roots, roots, ids, leaves, cfg, table):
    """The leaves of roots 0..n_roots-1 listed and merged, as the driver does."""
    insert_found(found_leaves(n_roots, roots.depth, leaves), roots.index, ids, cfg, table)


def test_the_table_keeps_the_best_states_of_a_key_and_merges_equal_boards():
    """Four leaves of one key (same cells) for piece index 6: the table keeps the two best scores;
    a leaf equal (board) to a kept one replaces it only with a higher score."""
    cfg, leaves, roots = one_leaf_per_root([500, 700, 600, 650], [120, 120, 120, 120], [1, 2, 3, 4])
    table = new_table(cfg, 20)
    insert_leaves(4, roots, np.arange(10, 14), leaves, cfg, table)
    boards, score, parent, length, _ = take(table, 6, cfg)
    assert sorted(score.tolist()) == [650, 700] and sorted(parent.tolist()) == [11, 13]
    assert length.tolist() == [1, 1]
    assert take(table, 6, cfg)[1].size == 0  # taken: the slot is empty again

    # the same board as the 700 one (tag 2), at 690 then 710: only the higher one replaces it
    cfg, leaves, roots = one_leaf_per_root([700, 690, 710], [120, 120, 120], [2, 2, 2])
    table = new_table(cfg, 20)
    insert_leaves(3, roots, np.arange(3), leaves, cfg, table)
    _, score, parent, _, _ = take(table, 6, cfg)
    assert score.tolist() == [710] and parent.tolist() == [2]


def test_states_of_other_cell_counts_are_kept_beside_the_best():
    """Keys are cells // key_cells: a 140-cell state scoring less than two 120-cell ones is kept
    (its own key), which is the point of the table."""
    cfg, leaves, roots = one_leaf_per_root([500, 700, 600], [140, 120, 120], [1, 2, 3])
    table = new_table(cfg, 20)
    insert_leaves(3, roots, np.arange(3), leaves, cfg, table)
    _, score, _, _, _ = take(table, 6, cfg)
    assert sorted(score.tolist()) == [500, 600, 700]


WELL = [
    "..........",
    "..........",
    "..........",
    "..........",
    "..........",
    "..........",
    "..........",
    "..........",
    "..........",
    "..........",
    "..........",
    "..........",
    "..........",
    "#########.",
    "#########.",
    "#########.",
    "#########.",
    "#########.",
    "#########.",
    "#########.",
]


def expand_one(board, index, pieces, min_cells, **segment):
    spec = load_evaluator("transitions").spec
    cfg = settings(SegmentConfig(states=4, key_cells=1, min_cells=min_cells, **segment), GEEK, pieces, spec.by_board)
    seq = np.ascontiguousarray(GEEK.sequence(pieces), dtype=np.int64)  # as solve passes it: one compile
    roots = Roots(board[None, :].copy(), np.array([index]), np.array([1000]), np.array([1]))
    leaves = new_leaves(cfg, GEEK.height)
    expand_chunk(1, roots, seq, GEEK.kernel, spec, cfg, leaves)
    return cfg, seq, leaves


def leaves_of(cfg, leaves, r=0, d=0):
    """(cells, score, placement) of root r's leaves after d + 1 pieces."""
    out = []
    for key in range(cfg.keys):
        for m in range(leaves.count[r, d, key]):
            out.append((key * cfg.key_cells, int(leaves.score[r, d, key, m]),
                        tuple(int(v) for v in unpack(int(leaves.codes[r, d, key, m, 0])))))
    return sorted(out)


def first_index_of(shape: int) -> int:
    return int(np.flatnonzero(GEEK.sequence(200) == shape)[0])


@pytest.mark.parametrize("seed", range(6))
def test_merging_only_the_best_valued_children_keeps_what_merging_all_keeps(seed):
    """`keep_best` with ``by_board`` (equal boards, equal values) merges only the children valued
    among the 2 ``nodes`` best: on children with many copies of few boards and many equal values,
    its picks are those of merging every child, in the same order; with too few distinct boards at
    that bound it merges them all."""
    from solver.segment.kernels import keep_best
    rng = np.random.default_rng(seed)
    nodes = 8
    for distinct_boards in (5, 12, 60):
        boards_of = rng.integers(0, 1 << 10, size=(distinct_boards, 20)).astype(np.uint16)
        value_of = rng.integers(-6, 0, size=distinct_boards).astype(np.float64)  # many equal values
        pick = rng.integers(0, distinct_boards, size=200)
        boards, values = boards_of[pick], value_of[pick]
        slot = np.empty(16, np.int64)
        for tie_seed in (0, 3):
            every, _ = keep_best(values, boards, len(pick), nodes, slot, tie_seed, False)
            bounded, _ = keep_best(values, boards, len(pick), nodes, slot, tie_seed, True)
            assert bounded.tolist() == every.tolist()
            assert len(every) == min(nodes, distinct_boards)
            firsts = {int(np.flatnonzero(pick == b)[0]) for b in range(distinct_boards) if (pick == b).any()}
            assert set(every.tolist()) <= firsts  # the first generated of equal boards


def test_a_segment_ends_at_each_clear_and_drops_clears_below_the_cell_floor():
    """An I over a well 7 rows deep beside 63 cells: its one clearing placement is upright at the
    well's bottom (4 rows: 67 - 40 = 27 cells left, scored 67 x 10); the floor 28 drops it, unless
    the I is one of the last ``endgame_pieces`` pieces."""
    board = from_strings(WELL)
    i_index = first_index_of(SHAPE_NAMES.index("I"))
    cfg, seq, leaves = expand_one(board, i_index, i_index + 5, min_cells=27, depth=1, first_depth=1)
    found = leaves_of(cfg, leaves)
    assert [(c, p) for c, p, _ in found] == [(27, 1000 + 67 * 10)]
    x, y, s = found[0][2]
    assert x == 9 and sorted(GEEK.kernel.cells[seq[i_index], s][:, 0].tolist()) == [0, 0, 0, 0]  # upright, in the well
    cfg, seq, leaves = expand_one(board, i_index, i_index + 5, min_cells=28, depth=1, first_depth=1)
    assert leaves_of(cfg, leaves) == []
    # within the last endgame_pieces pieces the floor is gone
    cfg, seq, leaves = expand_one(board, i_index, i_index + 5, min_cells=28, depth=1, first_depth=1, endgame_pieces=5)
    assert [(c, p) for c, p, _ in leaves_of(cfg, leaves)] == [(27, 1000 + 67 * 10)]
    cfg, seq, leaves = expand_one(board, i_index, i_index + 5, min_cells=28, depth=1, first_depth=1, endgame_pieces=4)
    assert leaves_of(cfg, leaves) == []


def test_a_short_prefix_gives_a_record_that_replays_to_its_score():
    """`solve` checks the record with the project's replayer (it raises otherwise); the reference
    replays it to the same score, and the segment search's clears all leave at least 100 cells."""
    result = solve(small_config())
    assert result.stop == "done" and result.pieces == PIECES
    verdict = ref.replay(result.record)
    assert verdict["valid"] and verdict["score"] == result.score > 0 and verdict["pieces"] == PIECES
    assert result.best_by_step.shape == (PIECES,) and result.best_by_step[-1] == result.score
    assert (np.diff(result.best_by_step) >= 0).all()
    # every clear leaves at least min_cells (100) cells: replay the placements piece by piece
    board = np.zeros(20, np.uint16)
    seq = GEEK.sequence(PIECES)
    clears = 0
    for t, (x, y, st) in enumerate(result.placements):
        lock = lock_piece(board, GEEK.kernel, seq[t], st, x, y, t + 1)
        if lock.lines:
            clears += 1
            assert lock.cells - 10 * lock.lines >= 100
    assert clears == sum(result.clear_kinds) > 0


def test_lowest_placements_and_mid_air_clears_give_records_that_replay():
    """``placements: lowest`` expands fewer children; ``floating`` adds mid-air clears as leaves:
    both records replay (the reference) to their scores."""
    for config in (small_config(placements="lowest"), small_config().model_copy(update={"floating": True})):
        result = solve(config)
        assert result.pieces == PIECES and ref.replay(result.record)["score"] == result.score > 0


def same_search(a, b) -> bool:
    return (a.score == b.score and np.array_equal(a.placements, b.placements)
            and np.array_equal(a.best_by_step, b.best_by_step) and a.nodes == b.nodes)


def test_the_result_does_not_depend_on_the_number_of_threads():
    one = solve(small_config(), record=False)
    two = solve(small_config().model_copy(update={"threads": 2}), record=False)
    assert same_search(one, two)


@pytest.mark.slow
def test_the_result_does_not_depend_on_the_number_of_processes():
    """The states of a piece index shared among 2 or 3 loky processes (2 numba threads each in
    one case), or a dask cluster of 2 workers: the same search as one thread in this process."""
    one = solve(small_config(), record=False)
    from engine.parallel import cpu_count

    several = max(2, min(3, cpu_count()))  # (at most one worker a CPU)
    for parallel in ({"n_jobs": 2}, {"n_jobs": several, "threads": 2}, {"backend": "dask", "n_jobs": 2}):
        assert same_search(one, solve(small_config(parallel=parallel), record=False)), parallel


def stopped_at_first_report(path, record: bool):
    """The small search, saving to ``path``, stopped by a first Ctrl-C at its first progress report."""

    def interrupt(done, total, best):
        if done < total:
            os.kill(os.getpid(), signal.SIGINT)

    return solve(small_config(), progress=interrupt, interruptible=True, checkpoint=path, record=record)


def test_a_search_stopped_and_resumed_ends_as_an_uninterrupted_one(tmp_path):
    """A first Ctrl-C (at the first progress report, piece 50) stops the search with its best path
    so far, saved; resumed from the checkpoint, it ends exactly as a search never stopped."""
    whole = solve(small_config(), record=False)
    path = tmp_path / "run.checkpoint.npz"
    stopped = stopped_at_first_report(path, record=True)
    assert stopped.stop == "interrupted" and 0 < stopped.pieces < PIECES and path.exists()
    assert ref.replay(stopped.record)["score"] == stopped.score
    saved = read_state(path, CHECKPOINT_KIND, MAX_SEARCH_STATE_BYTES)  # its history cut to what the table
    assert saved["history"]["dropped"] > 0                                     # and the best go back to
    assert zipfile.ZipFile(path).getinfo("arrays/0.npy").compress_type == zipfile.ZIP_DEFLATED  # compressed
    resumed = solve(small_config(), checkpoint=path, resume=True)
    assert resumed.stop == "done" and resumed.score == whole.score
    assert resumed.report.states == whole.report.states  # the states the compacted history left out still count
    assert np.array_equal(resumed.placements, whole.placements)
    assert np.array_equal(resumed.best_by_step, whole.best_by_step)
    # each sitting is accounted for: where it began and ended, and what it cost
    first, second = resumed.report.sittings
    assert first.first_index == 0 and first.next_index == second.first_index > 0
    assert second.next_index == PIECES and len(whole.report.sittings) == 1
    assert resumed.report.cpu_seconds_total == pytest.approx(first.cpu_seconds + second.cpu_seconds)
    assert second.cpu_seconds > 0 and second.peak_mib > 50
    # a finished search resumed gives its result again
    again = solve(small_config(), checkpoint=path, resume=True, record=False)
    assert again.score == whole.score and np.array_equal(again.placements, whole.placements)
    with pytest.raises(CheckpointError, match="another search"):
        solve(small_config(nodes=41), checkpoint=path, resume=True)


def test_a_compacted_history_keeps_the_paths_of_the_live_states_and_the_best():
    """Drawn by hand: ids 1-2 at piece 1 (from 0), 3-5 at piece 2 (3 from 1, 4 and 5 from 2),
    6-7 at piece 3 (from 4 and 3). Live in the table: 1 and 3; the best is 4 (score 9)."""
    h = History()
    one = lambda code: np.array([[code]], np.int16)  # noqa: E731  a segment of one placement
    h.add(1, np.array([1, 2]), np.array([0, 0]), np.array([1, 1]), np.vstack([one(11), one(12)]))
    h.add(2, np.array([3, 9, 4]), np.array([1, 2, 2]), np.array([1, 1, 1]), np.vstack([one(13), one(14), one(15)]))
    h.add(3, np.array([5, 6]), np.array([4, 3]), np.array([1, 1]), np.vstack([one(16), one(17)]))
    assert h.best() == 4  # id 4: score 9
    kept, new_id = h.compacted(np.array([1, 3]))  # ids given by the table's entries (old ids 1 and 3) ...
    # ... plus the states taken last (6, 7) and the best (4), and their ancestors: 0, 1, 2, 3, 4, 6, 7; 5 is dropped
    assert new_id.tolist() == [0, 1, 2, 3, 4, -1, 5, 6]
    assert len(kept) == 7 and kept.dropped == 1 and kept.taken == h.taken == 8
    assert kept.best() == new_id[h.best()] and kept.score(kept.best()) == 9
    for old in (3, 4, 6, 7):
        assert np.array_equal(kept.placements(int(new_id[old])), h.placements(old))
    again, _ = History.from_dict(kept.to_dict()).compacted(np.array([3]))  # compacting again: the count adds up
    assert again.taken == 8 and again.dropped == 1


@pytest.mark.slow
def test_a_search_stopped_in_one_process_resumes_in_two(tmp_path):
    """The checkpoint does not depend on where states are expanded: stopped in this process and
    resumed on 2 loky processes, the search ends as an uninterrupted one."""
    whole = solve(small_config(), record=False)
    path = tmp_path / "run.checkpoint.npz"
    stopped = stopped_at_first_report(path, record=False)
    assert stopped.stop == "interrupted"
    resumed = solve(small_config(parallel={"n_jobs": 2}), checkpoint=path, resume=True, record=False)
    assert resumed.stop == "done" and same_search(resumed, whole)


def test_the_command_line_saves_beside_the_folder_and_resumes_from_it(tmp_path, capsys):
    """``experiments.solve`` keeps a segment search in DIR.checkpoint.npz; a new solve into DIR
    that would overwrite it is refused (exit 2, the file named), ``--resume DIR`` continues it, and
    a policy that saves nothing cannot be resumed."""
    from experiments.solve import main

    out = tmp_path / "run"
    args = ["configs/solve/segment.yaml", "--quiet", "pieces=60", "threads=1", *(f"segment.{k}={v}" for k, v in SMALL.items())]
    assert main([*args, "--out", str(out)]) == 0
    saved = tmp_path / "run.checkpoint.npz"
    assert saved.exists() and (out / "record.txt").exists()
    first = (out / "record.txt").read_text()
    assert main([*args, "--out", str(out)]) == 2
    assert "run.checkpoint.npz holds a saved search: continue it with --resume" in capsys.readouterr().err
    assert main([*args, "--resume", str(out)]) == 0
    assert (out / "record.txt").read_text() == first
    assert main(["configs/solve/beam.yaml", "--quiet", "pieces=5", "--resume", str(out)]) == 2
    assert "cannot resume a search" in capsys.readouterr().err
    assert main([*args, "--resume", str(tmp_path / "elsewhere")]) == 2
    assert "no saved search there" in capsys.readouterr().err


@pytest.mark.slow
def test_a_cluster_that_cannot_be_reached_is_one_line_naming_the_key(tmp_path, capsys, monkeypatch):
    from engine import parallel
    from experiments.solve import main

    monkeypatch.setattr(parallel, "CONNECT_SECONDS", 2)  # the wait is the same at any length
    args = ["configs/solve/segment.yaml", "--quiet", "pieces=5", "segment.parallel.backend=dask",
            "segment.parallel.scheduler=tcp://127.0.0.1:9", "--out", str(tmp_path / "run")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: segment.parallel.scheduler: cannot reach tcp://127.0.0.1:9 in 2 s") and err.count("\n") == 1
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_the_segment_tuning_config_runs_and_exports_a_setting_the_solver_scores_alike(tmp_path):
    """configs/segment_tune.yaml at a toy size (60 pieces, 3 candidates): the segment's knobs are
    space paths (the cell floors by index), and best.yaml solves to the fitness it was chosen by."""
    from experiments.run import main as run_main
    from solver.files import load_solver_config

    assert run_main(["configs/segment_tune.yaml", "pieces=60", "random.samples=3", "random.generations=1",
                     "parallel.n_jobs=1", f"runs_dir={tmp_path}"]) == 0
    (run_dir,) = tmp_path.iterdir()
    config = load_solver_config(run_dir / "best.yaml")
    params = config.meta["parameters"]
    assert set(params) >= {"segment.min_cells.0", "segment.key_cells", "evaluator.features.column_transitions"}
    assert config.segment.min_cells[0] == params["segment.min_cells.0"] and config.policy == "segment"
    result = solve(config, record=False)
    assert result.score == config.meta["score"] > 0
