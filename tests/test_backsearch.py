"""The base + back-search policy: base rows, death handling, mode counts, config errors (its threshold
stop is tested with every policy in test_solver.py)."""

import re

import numpy as np
import pytest

from engine import GEEK, final_board, replay
from solver import BacksearchConfig, SolverConfig, solve
from solver.backsearch import (BACKUPS, BACKUPS_HERE, BASE, BASE_DONE, BASE_END, POINTS, SCORE, SEGMENT, SURVIVAL,
                               SURVIVAL_END, UNDONE, T, _after_death, _mode, backsearch_settings, new_state)
from solver.lookahead import base_allowed, lookahead_settings

#: a points evaluator that wants the stack tall: it dies within a few dozen pieces. It weighs the
#: features of `backsearch_points` (the same evaluator layout: the kernels compiled for the default
#: points evaluator serve it, new weights are not a new kernel), the tallest column through a table
#: that counts its rows one by one
TOWER = {"name": "tower", "features": {
    "points_gained": 0, "occupied_cells": 0, "interior_row_transitions": 0, "covered_empty_cells": -1,
    "max_height": {"weight": 10, "table": [[h, h] for h in range(1, 21)]}}}
#: the same wish in `pierre_dellacherie`'s features and tie-break (its layout likewise): land high
TOWER_SURVIVAL = {"name": "tower_survival", "tie_break": "pd_priority", "features": {
    "landing_height": 10, "eroded_cells": 0, "row_transitions": 0, "column_transitions": 0, "holes": -1, "wells": 0}}


def config(**backsearch):
    section = {"points_evaluator": TOWER, "survival_evaluator": "pierre_dellacherie", "base_rows": 0,
               "depth": 2, "keep_fraction": 0.3, "survival_depth": 1, "survival_keep_fraction": 1.0,
               "backup": 12, "max_backups": 0}
    section.update(backsearch)
    return SolverConfig(policy="backsearch", pieces=150, backsearch=section)


@pytest.mark.slow
def test_death_backs_up_and_replays_survival_first():
    r = solve(config())
    info = r.report
    modes = info.mode_by_step
    assert r.stop == "done" and r.pieces == 150 and len(modes) == 150
    assert info.backups >= 1
    # without further back-ups, each back-up undoes exactly `backup` pieces
    assert info.pieces_undone == 12 * info.backups
    # the counts are those of the path, letter by letter
    assert info.modes == {"base": modes.count("b"), "points": modes.count("p"), "survival": modes.count("s")}
    assert info.modes["base"] == 0 and info.modes["survival"] >= 13
    # every placement of the path was made once, undone placements on top
    made = info.placements_made
    assert sum(made.values()) == r.pieces + info.pieces_undone
    assert made["points"] >= info.modes["points"] and made["survival"] >= info.modes["survival"]
    # a replay covers the backup pieces and the point of death: survival runs of at least 13 pieces
    assert min(len(run) for run in re.findall("s+", modes)) >= 13
    # the points-first tower alone tops out: the survival replays are what kept it alive
    verdict = replay(r.record)
    assert (verdict.score, verdict.bricks, verdict.end) == (r.score, 150, "record_end")
    assert list(r.score_by_step) == list(verdict.score_by_piece[1:])
    assert solve(config()).record == r.record  # deterministic


@pytest.mark.slow
def test_without_backsearch_the_tower_dies():
    tower = solve(SolverConfig(policy="lookahead", pieces=150, evaluator=TOWER_SURVIVAL,
                               lookahead={"depth": 2, "keep_fraction": 0.3}))
    assert tower.pieces < 150 and tower.stop in ("stuck", "spawn_blocked")


@pytest.mark.slow
@pytest.mark.parametrize("max_backups", [0, 2])
def test_further_backups_when_the_replay_dies_too(max_backups):
    # the survival evaluator wants a tower too: its replay dies too and backs up further
    r = solve(config(survival_evaluator=TOWER_SURVIVAL, max_backups=max_backups, backup=3))
    info = r.report
    assert r.stop in ("stuck", "spawn_blocked") and r.pieces < 150
    # the last death alone: a back-up of 3 pieces, then max_backups more of at least 3 each (each
    # from 3 pieces before the replay's start), and survival play to the end
    assert info.backups >= 1 + max_backups and info.pieces_undone >= 3 * (1 + max_backups)
    assert info.mode_by_step.endswith("s")  # the game ended in survival play
    assert replay(r.record).score == r.score


@pytest.mark.slow
def test_base_rows_each_keep_exactly_one_gap():
    r = solve(SolverConfig(policy="backsearch", pieces=80, evaluator="backsearch_points",
                           backsearch={"base_rows": 4, "depth": 2, "survival_depth": 2}))
    info = r.report
    end = info.base_end
    assert 0 < end == info.modes["base"] and info.mode_by_step[:end] == "b" * end
    board = final_board(r.record, GEEK, end)
    assert [bin(int(row)).count("1") for row in board[-4:]] == [9, 9, 9, 9]
    assert replay(r.record).score == r.score


def test_base_allowed_rules():
    board = np.zeros(20, np.uint16)
    board[19] = 0b0000000110  # an S on the floor: one hole in the bottom row
    board[18] = 0b0000000011
    assert base_allowed(board, 4, 10)
    board[19] = 0b0000000100  # two holes under row 18
    assert not base_allowed(board, 4, 10)
    assert base_allowed(board, 1, 10) is False and base_allowed(board, 0, 10)  # only base rows count
    board[19] = 0b1111101111  # one gap, covered: done
    board[18] = 0b1111111011
    assert base_allowed(board, 2, 10)
    board[19] = 0b1111100111  # a row of nine cells above a row of eight: built out of order
    board[18] = 0b1111110111  # (one hole below it, at column 4; column 3 still open)
    assert not base_allowed(board, 2, 10) and base_allowed(board, 1, 10)
    board[:] = 0
    board[19] = 0b1111111111  # a full base row would clear
    assert not base_allowed(board, 1, 10)
    board[19], board[18] = 0b1111111110, 0b1111111111  # rows above the base may clear
    assert base_allowed(board, 1, 10) and not base_allowed(board, 2, 10)


def test_settings_from_the_config():
    cfg = BacksearchConfig(base_rows=30, depth=5, keep_fraction=0.2, survival_depth=3, survival_keep_fraction=0.5,
                           objective="last", backup=7, max_backups=2, base_max_pieces=40, base_cell_value=50)
    s = backsearch_settings(cfg, 20)
    assert s.points == lookahead_settings(5, 0.2, True)
    assert s.survival == lookahead_settings(3, 0.5, True)
    assert s.base == lookahead_settings(3, 0.5, True, 19, 50.0)  # a base leaves the top row free
    assert (s.base_max, s.backup, s.max_backups, s.reach) == (40, 7, 2, 21)


def test_mode_of_a_piece():
    settings = backsearch_settings(BacksearchConfig(base_max_pieces=10), 20)
    st = new_state(50, 20).slots
    assert st[SURVIVAL_END] == -1 and _mode(st, 9, settings) == BASE
    assert _mode(st, 10, settings) == POINTS  # the unfinished base is given up at base_max
    assert (st[BASE_DONE], st[BASE_END]) == (1, 10)
    st[SURVIVAL_END], st[BACKUPS_HERE] = 20, 1
    assert _mode(st, 20, settings) == SURVIVAL and st[BACKUPS_HERE] == 1
    assert _mode(st, 21, settings) == POINTS and st[BACKUPS_HERE] == 0  # a new point of death may back up again


def test_a_death_backs_up_then_further_back_then_gives_in():
    settings = backsearch_settings(BacksearchConfig(backup=5, max_backups=1), 20)
    state = new_state(50, 20)
    st, by_step = state.slots, state.path.score_by_step
    by_step[:] = np.arange(50) * 10
    st[BASE_DONE], st[BASE_END], st[T] = 1, 3, 12
    # points play dies at piece 12: back to piece 7, replayed survival-first up to piece 12
    assert _after_death(st, by_step, POINTS, 12, 3, settings)
    assert (st[T], st[SCORE], st[SURVIVAL_END], st[SEGMENT], st[BACKUPS], st[UNDONE]) == (7, 60, 12, 7, 1, 5)
    # the replay dies at piece 9: once more from 5 pieces further back (not below the base's end, 3)
    assert _after_death(st, by_step, SURVIVAL, 9, 3, settings)
    assert (st[T], st[SCORE], st[SEGMENT], st[BACKUPS_HERE], st[BACKUPS], st[UNDONE]) == (3, 20, 3, 1, 2, 11)
    # and dies again: no back-up left, the best placement is taken as it is
    assert not _after_death(st, by_step, SURVIVAL, 8, 3, settings)
    assert (st[T], st[BACKUPS], st[UNDONE]) == (3, 2, 11)
    # a point of death right at the floor: survival play from there, nothing undone
    assert _after_death(st, by_step, POINTS, 3, 3, settings)
    assert (st[T], st[SURVIVAL_END], st[SEGMENT], st[BACKUPS]) == (3, 3, 3, 2)
    # no base placement survives: the base is given up where it stands
    st[BASE_DONE] = 0
    assert _after_death(st, by_step, BASE, 4, 0, settings) and (st[BASE_DONE], st[BASE_END]) == (1, 4)


@pytest.mark.parametrize("text, message", [
    ("policy: backsearch\nbacksearch:\n  depht: 3\n", "backsearch.depht: unknown key"),
    ("policy: backsearch\nbacksearch:\n  depth: 0\n", "backsearch.depth: Input should be greater than or equal to 1"),
    ("policy: backsearch\nbacksearch:\n  keep_fraction: 1.5\n", "backsearch.keep_fraction: Input should be less"),
    ("policy: backsearch\nbacksearch:\n  backup: -1\n", "backsearch.backup: Input should be greater than or equal to 0"),
    ("policy: backsearch\nbacksearch:\n  survival_evaluator: nope\n", "backsearch.survival_evaluator: nope: no such file or preset"),
    ("policy: backsearch\nbacksearch:\n  points_evaluator: {features: {holse: 1}}\n",
     "backsearch.points_evaluator: <inline>: features.holse: unknown feature"),
])
def test_config_errors_name_the_key(tmp_path, capsys, text, message):
    from experiments.solve import main

    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    status = main([str(cfg), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert status == 2 and message in err, err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_tuning_space_reaches_both_evaluators_and_the_knobs(tmp_path):
    from optimizers import load_run_config
    from optimizers.run_loop import make_space

    run = tmp_path / "run.yaml"
    run.write_text(
        "name: t\npieces: 50\nsolver:\n  policy: backsearch\n  backsearch: {survival_evaluator: pierre_dellacherie}\n"
        "space:\n"
        "  - {path: backsearch.survival_evaluator.features.holes, low: -120, high: -40}\n"
        "  - {path: backsearch.points_evaluator.features.occupied_cells, low: 20, high: 60}\n"
        "  - {path: backsearch.depth, type: int, low: 1, high: 8}\n"
        "  - {path: backsearch.backup, type: int, low: 0, high: 30}\n")
    config = load_run_config(run)
    space = make_space(config)
    assert space.init_values == [-79.0, 45.0, 6, 20]  # from the presets and the defaults
    solver = space.config([-100.0, 30.0, 2, 5])
    assert solver["backsearch"]["survival_evaluator"]["features"]["holes"] == -100.0
    assert solver["backsearch"]["points_evaluator"]["features"]["occupied_cells"] == 30.0
    r = solve(SolverConfig.model_validate(solver))
    assert r.pieces == 50 and replay(r.record).score == r.score
