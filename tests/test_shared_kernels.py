"""The shared evaluator kernels (`evaluators.registry.Kind`, ``TETRIS_EVALUATOR_KERNELS=shared``)
against each layout's own: the same values bit for bit on random placements, the same tie-breaks,
the same games; one kind for every evaluator; the mode read from the environment; the generated
kernels cached on disk across processes.

The suite itself runs with the shared kernels (`conftest`), so every other test checks them too;
the tests here are those that need a layout's own kernels beside them."""

import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import KERNELS_DEFAULT
from engine import GEEK, STANDARD, lock_copy, placements
from engine.lock import lost
from engine.movegen import scratch
from evaluators import EvaluatorError, Placement, from_dict, load_evaluator, registry
from evaluators.evaluator import preset_names, value_of
from solver import SolverConfig, solve
from solver._base import value_scratch
from solver.greedy import best_placement

#: evaluators beyond the presets: every term style (delta, table, both) and no tie-break
INLINE = {
    "terms": from_dict({"features": {
        "holes": {"weight": -2.5, "delta": True}, "wells": {"weight": -0.3, "table": [[1, 0.5], [3, 7.25]]},
        "hole_depth": {"weight": 0.7, "delta": True, "table": [[0, 1.5], [4, -2.0]]}, "steps_up_2": 0.37,
        "column_height_3": -0.11, "column_height_diff_7": 0.29, "platforms": -1.3, "covered_holes": 2.1,
        "landing_height": -1.0, "eroded_cells": 2.0, "row_transitions": -0.75, "constant": 3.0}}),
    "one": from_dict({"features": {"max_height": -1.0}}),
}


def evaluators_under_test(everyday: bool):
    """Every preset and `INLINE` (with the slow tests); a spread of them in the everyday loop."""
    names = preset_names() if not everyday else ["bcts", "pierre_dellacherie", "lecture_v2", "bdu"]
    return {**{name: load_evaluator(name) for name in names}, **INLINE}


def random_placements(seed, n_boards):
    """Placements (`Placement`) of random pieces on random 10 x 20 boards, standard and contest rules."""
    rng = np.random.default_rng(seed)
    for _ in range(n_boards):
        board = np.zeros(20, np.uint16)
        top = int(rng.integers(2, 20))
        board[top:] = rng.integers(0, 1 << 10, 20 - top)
        for rules in (STANDARD, GEEK):
            shape = int(rng.integers(0, 7))
            found = placements(board, rules, shape, 0)
            for k in rng.permutation(len(found))[:5]:
                x, y, s = (int(v) for v in found[k])
                locked = np.zeros(20, np.uint16)
                cleared = np.zeros(20, np.uint16)
                lock = lock_copy(board, rules.kernel, shape, s, x, y, 1, locked, cleared)
                if not lost(lock.end):
                    yield Placement(board, locked, cleared, rules.kernel.cells[shape, s], x, y, lock.lines,
                                    lock.points, rules.width)


@pytest.mark.parametrize("everyday", [pytest.param(True, id="some"), pytest.param(False, id="all", marks=pytest.mark.slow)])
def test_the_same_values_bit_for_bit(everyday):
    cases = list(random_placements(7, 40))
    assert len(cases) > 300
    for name, ev in evaluators_under_test(everyday).items():
        layout, shared = ev.spec_for("layout"), ev.spec_for("shared")
        values = [(value_of(p, layout), value_of(p, shared)) for p in cases]
        assert all(a == b for a, b in values), name
        assert len({a for a, _ in values}) > 4, name  # the boards tell the placements apart


@pytest.mark.parametrize("name", ["pierre_dellacherie", pytest.param("bcts", marks=pytest.mark.slow),
                                  pytest.param("one", marks=pytest.mark.slow)])
def test_the_same_choice_and_tie_break(name):  # each a compile of the 1-ply choice for a layout
    ev = {**INLINE, "bcts": load_evaluator("bcts"), "pierre_dellacherie": load_evaluator("pierre_dellacherie")}[name]
    rng = np.random.default_rng(11)
    chosen = {"layout": [], "shared": []}
    for _ in range(60):
        board = np.zeros(20, np.uint16)
        top = int(rng.integers(8, 20))
        board[top:] = rng.integers(0, 1 << 10, 20 - top) & int(rng.choice([0x3FF, 0x1EF, 0x37B]))
        shape, t = int(rng.integers(0, 7)), int(rng.integers(0, 50))
        for mode, out in chosen.items():
            spec = ev.spec_for(mode)
            found = np.zeros((4000, 3), np.int64)
            k, v = best_placement(board, shape, t, GEEK.kernel, spec, scratch(GEEK), found,
                                  value_scratch(spec.terms.shape[1], 20))
            out.append((tuple(int(c) for c in found[k]) if k >= 0 else None, v))
    assert chosen["layout"] == chosen["shared"]
    assert len(set(chosen["shared"])) > 30


def test_one_kind_for_every_evaluator():
    kinds = {ev.spec_for("shared").kind for ev in evaluators_under_test(True).values()}
    assert len(kinds) == 1
    (kind,) = kinds
    assert kind.shared and kind.layout == () and kind.tie == registry.tie_breaks()
    assert "shared" in kind.label()
    bcts = load_evaluator("bcts")
    assert bcts.spec_for("layout").kind != kind and not bcts.spec_for("layout").kind.shared
    # the tie-break is data in a shared spec: its index among the kind's
    pd = load_evaluator("pierre_dellacherie").spec_for("shared")
    assert kind.tie[pd.tie] == "pd_priority" and kind.tie[INLINE["one"].spec_for("shared").tie] == "none"


def test_the_mode_comes_from_the_environment(monkeypatch):
    ev = load_evaluator("dellacherie")
    monkeypatch.setenv(registry.KERNELS_ENV, "layout")
    assert registry.kernel_mode() == "layout" and not ev.spec.kind.shared
    monkeypatch.setenv(registry.KERNELS_ENV, "shared")
    assert registry.kernel_mode() == "shared" and ev.spec.kind.shared
    monkeypatch.delenv(registry.KERNELS_ENV)
    assert registry.kernel_mode() == "layout"
    monkeypatch.setenv(registry.KERNELS_ENV, "fast")
    with pytest.raises(registry.FeatureError, match="TETRIS_EVALUATOR_KERNELS='fast': must be one of layout, shared"):
        ev.spec
    with pytest.raises(EvaluatorError, match="dellacherie: evaluator kernels 'fast'"):
        ev.spec_for("fast")


def test_the_suite_runs_the_shared_kernels():
    assert KERNELS_DEFAULT == ("TETRIS_EVALUATOR_KERNELS", "shared")
    assert registry.KERNELS_ENV == KERNELS_DEFAULT[0] and KERNELS_DEFAULT[1] in registry.KERNEL_MODES
    if os.environ.get(registry.KERNELS_ENV) == "shared":
        assert load_evaluator("bcts").spec.kind.shared


@pytest.mark.slow
@pytest.mark.parametrize(("policy", "rules", "evaluator", "extra"), [
    ("one_ply", "standard", "bcts", {"pieces": 3000, "seed": 4}),
    ("beam", "geek", "chys_quality", {"pieces": 300, "beam": {"width": 30}}),
    ("greedy", "geek", "pierre_dellacherie", {"pieces": 400}),
])
def test_the_same_games(monkeypatch, policy, rules, evaluator, extra):
    results = {}
    for mode in ("layout", "shared"):
        monkeypatch.setenv(registry.KERNELS_ENV, mode)
        r = solve(SolverConfig(policy=policy, rules=rules, evaluator=evaluator, threads=1, **extra))
        results[mode] = (r.score, r.pieces, r.clear_kinds)
    assert results["layout"] == results["shared"]
    assert results["shared"][0] > 0


@pytest.mark.slow
def test_the_generated_kernels_are_cached_across_processes(tmp_path):
    # a kernel calling the shared evaluate, compiled in one process and loaded in the next (numba
    # rebuilds its callees' environment from their module: the generated one must be importable)
    code = ("import numpy as np; from evaluators import load_evaluator; from evaluators.evaluator import value_of;"
            "b = np.zeros(20, np.uint16); b[17:] = 0x1F7; locked = b.copy(); locked[16] = 0x3C;"
            "cells = np.array([[-1, 0], [0, 0], [1, 0], [2, 0]], np.int64);"
            "print(load_evaluator('bcts').value(b, locked, locked, cells, 3, 16, 0, 0, 10));"
            "print(len(value_of.stats.cache_misses))")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), registry.KERNELS_ENV: "shared"}
    runs = [subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True)
            for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr[-2000:]
    first, second = (r.stdout.split() for r in runs)
    assert first[0] == second[0]
    assert first[1] == "1" and second[1] == "0"  # compiled once, then loaded
    generated = sorted(p.name for p in (tmp_path / "cache" / registry.GENERATED).glob("*.py"))
    assert [n.rsplit("_", 1)[0] for n in generated] == ["shared_board_values", "shared_evaluate"]
