"""Every score the README quotes is backed by a record in results/ that replays to it."""

import json
import re
from pathlib import Path

import pytest

from engine import replay

ROOT = Path(__file__).resolve().parents[1]
RESULTS = sorted(p for p in (ROOT / "results").glob("*/summary.json"))


def test_results_exist():
    assert RESULTS, "results/ holds no summary.json"


@pytest.mark.parametrize("summary_path", RESULTS, ids=lambda p: p.parent.name)
def test_result_replays_to_its_score(summary_path):
    summary = json.loads(summary_path.read_text())
    record = (summary_path.parent / "record.txt").read_text()
    verdict = replay(record)
    assert verdict.valid
    assert (verdict.score, verdict.bricks, verdict.end) == (summary["score"], summary["pieces"], summary["end"])


def test_readme_scores_are_backed():
    """Each row of the README's score table that links a results/<name>/ shows that summary's score."""
    readme = (ROOT / "README.md").read_text()
    rows = [line for line in readme.splitlines() if re.match(r"\| \[[\w.-]+\]\(results/", line)]
    assert rows, "the README quotes no result"
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        name = re.match(r"\[([\w.-]+)\]", cells[0]).group(1)
        summary = json.loads((ROOT / "results" / name / "summary.json").read_text())
        assert int(cells[3].replace(",", "")) == summary["score"], name
        assert int(cells[4].replace(",", "")) == summary["pieces"], name
