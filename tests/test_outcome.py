"""One outcome vocabulary (`engine.outcome`): the codes and the labels files write are paired there
only, and no label is written as a string literal, nor a second table of them kept, anywhere else."""

import ast
from collections import Counter
from pathlib import Path

import pytest

from engine.outcome import LOCK_ENDS, GameEnd, Stop

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "evaluators", "solver", "optimizers", "experiments")
OUTCOME = "engine/outcome.py"
LABELS = {m.label for m in GameEnd} | {m.label for m in Stop}

#: string literals equal to a label that are not an outcome (a column, a key, a name), counted per
#: file: the ``aborted`` column of evaluations.csv, the ``done`` field of a run's state, the
#: ``capped`` count in a games summary, the function `engine.lock.spawn_blocked` in ``__all__`` (and the
#: figures' legend for aborted candidates)
NOT_OUTCOMES = {
    ("engine/__init__.py", "spawn_blocked"): 1,
    ("experiments/convert.py", "done"): 2,
    ("experiments/figures.py", "aborted"): 10,
    ("optimizers/state.py", "done"): 2,
    ("optimizers/store.py", "aborted"): 1,
    ("solver/online/games.py", "capped"): 1,
}


def sources():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel != OUTCOME:
                yield rel, ast.parse(path.read_text(encoding="utf-8"), rel)


def docstrings(tree) -> set[int]:
    """ids of the docstrings' nodes (and of any bare string statement, a comment in code)."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


def label_literals(tree) -> list[str]:
    skip = docstrings(tree)
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value in LABELS and id(node) not in skip]


def test_the_labels_are_the_words_the_files_write():
    # summary.json, evaluations.csv, info["end"] and the records hold these words: changing one breaks them
    assert [(m.name, int(m), m.label) for m in GameEnd] == [
        ("GOING_ON", -1, "going_on"), ("RECORD_END", 0, "record_end"), ("TOP_TOUCHED", 1, "top_touched"),
        ("SPAWN_BLOCKED", 2, "spawn_blocked"), ("PIECE_LIMIT", 3, "piece_limit"), ("SEQUENCE_END", 4, "sequence_end"),
        ("OVERFLOW", 5, "overflow"), ("CAPPED", 6, "capped"), ("STUCK", 7, "stuck"), ("RULES_END", 8, "rules_end")]
    assert [(m.name, int(m), m.label) for m in Stop] == [
        ("GOING", -1, "going"), ("DONE", 0, "done"), ("STUCK", 1, "stuck"), ("SPAWN_BLOCKED", 2, "spawn_blocked"),
        ("ABORTED", 3, "aborted"), ("INTERRUPTED", 4, "interrupted")]
    assert [e.label for e in LOCK_ENDS] == [
        "record_end", "top_touched", "spawn_blocked", "piece_limit", "sequence_end", "overflow"]
    assert str(Stop.ABORTED) == "aborted" and GameEnd(2) is GameEnd.SPAWN_BLOCKED
    assert Stop.GOING.written is Stop.DONE and Stop.STUCK.written is Stop.STUCK
    assert not GameEnd.GOING_ON.ended and GameEnd.CAPPED.ended and not Stop.GOING.ended and Stop.DONE.ended


def test_the_kernels_constants_are_the_enums_codes():
    from engine import lock
    from engine.envs import _kernels
    from solver import _base
    from solver.beam import bundles
    from solver.online import games

    assert (lock.GOING_ON, lock.TOP_TOUCHED, lock.PIECE_LIMIT, lock.OVERFLOW) == (-1, 1, 3, 5)
    assert (_kernels.CAPPED, _kernels.STUCK) == (GameEnd.CAPPED, GameEnd.STUCK)
    assert (_base.GOING, _base.DONE, _base.STUCK, _base.BLOCKED, _base.ABORTED, _base.INTERRUPTED) == tuple(Stop)
    assert (bundles.GOING, bundles.STUCK, bundles.ABORTED) == (Stop.GOING, Stop.STUCK, Stop.ABORTED)
    assert games.GAME_ENDS == ("capped", "stuck", "spawn_blocked", "rules_end")
    assert games.PLAYING == GameEnd.GOING_ON
    # plain ints (what numba compiles), not the members
    assert type(lock.GOING_ON) is int and type(_base.ABORTED) is int and type(games.RULES_END) is int


def test_no_outcome_label_is_a_string_literal_outside_engine_outcome():
    found = Counter()
    for rel, tree in sources():
        for label in label_literals(tree):
            found[rel, label] += 1
    assert dict(found) == NOT_OUTCOMES, "an outcome word as a string literal: use engine.outcome's member's .label"


def tables(tree) -> list[str]:
    """Module-level names bound to a display (tuple, list, set, dict) holding two labels or more, or to
    a mapping built from members' labels (a dict display or comprehension with ``.label`` in it)."""
    found = []
    for node in tree.body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        value = node.value
        labels = [n for n in ast.walk(value) if isinstance(n, ast.Constant) and n.value in LABELS]
        mapping = isinstance(value, (ast.Dict, ast.DictComp)) and any(
            isinstance(n, ast.Attribute) and n.attr == "label" for n in ast.walk(value))
        if (isinstance(value, (ast.Tuple, ast.List, ast.Set, ast.Dict)) and len(labels) >= 2) or mapping:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [ast.unparse(t) for t in targets]
    return found


def test_no_second_outcome_table():
    found = {rel: names for rel, tree in sources() if (names := tables(tree))}
    assert found == {}


@pytest.mark.parametrize("text, caught", [
    ('END = ("record_end", "top_touched")\n', ["END"]),
    ('BY_CODE = {c: GameEnd(c).label for c in range(6)}\n', ["BY_CODE"]),
    ('ENDS = GameEnd.labels((GameEnd.CAPPED, GameEnd.STUCK))\n', []),
])
def test_the_table_check_catches_a_table(text, caught):
    assert tables(ast.parse(text)) == caught


def test_the_literal_check_skips_docstrings_only():
    tree = ast.parse('"""aborted"""\ndef f():\n    "done"\n    return "aborted" if x else {"done": 1}\n')
    assert label_literals(tree) == ["aborted", "done"]
