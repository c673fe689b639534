"""Every score the documentation quotes from results/ is backed by a record there that replays to it.

README.md's score table and every table in docs/*.md with a row that links ``results/<name>/``
are checked the same way: the row's ``score`` column (and its ``pieces`` column, where the table
has one) must show what ``results/<name>/summary.json`` holds, and each summary's record must
replay to that summary.
"""

import json
import re
from pathlib import Path

import pytest

from engine import replay

ROOT = Path(__file__).resolve().parents[1]
RESULTS = sorted(p for p in (ROOT / "results").glob("*/summary.json"))
DOCS = sorted((ROOT / "docs").glob("*.md"))

# a Markdown link whose target is a results/<name>/ folder, relative to the page (results/... from
# README.md, ../results/... from docs/)
RESULT_LINK = re.compile(r"\]\(((?:\.\./)?results/([\w.-]+)/)\)")
ANY_RESULTS_LINK = re.compile(r"\]\(((?:\.\./)*results/[^)#\s]*)\)")
CELL_SPLIT = re.compile(r"(?<!\\)\|")
LEADING_NUMBER = re.compile(r"^\**\s*(\d[\d,]*)")


def _tables(text: str):
    """Each Markdown table outside code fences as (header cells, [(line number, row cells)])."""
    lines = text.splitlines()
    fenced = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif (not fenced and line.startswith("|") and i + 1 < len(lines)
              and re.match(r"^\|(\s*:?-+:?\s*\|)+\s*$", lines[i + 1])):
            header = _cells(line)
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append((i + 1, _cells(lines[i])))
                i += 1
            yield header, rows
            continue
        i += 1


def _cells(line: str) -> list[str]:
    return [c.strip() for c in CELL_SPLIT.split(line.strip().strip("|"))]


def _number(cell: str) -> int | None:
    """The number a cell starts with (bold and thousands separators allowed), or None."""
    m = LEADING_NUMBER.match(cell.strip())
    return int(m.group(1).replace(",", "")) if m else None


def _checked_rows(page: Path) -> list[tuple[str, str, list[str], list[str]]]:
    """(where, result name, header, cells) for every table row of ``page`` that links results/<name>/."""
    found = []
    folder = page.parent.relative_to(ROOT).as_posix()
    for header, rows in _tables(page.read_text(encoding="utf-8")):
        for lineno, cells in rows:
            names = {m.group(2): m.group(1) for cell in cells for m in RESULT_LINK.finditer(cell)}
            for name, target in names.items():
                where = f"{page.relative_to(ROOT)}:{lineno}"
                assert (page.parent / target).resolve() == (ROOT / "results" / name).resolve(), (
                    f"{where}: the link {target} does not lead to results/{name}/ from {folder}/")
                found.append((where, name, header, cells))
    return found


def _mismatches(where: str, name: str, header: list[str], cells: list[str]) -> list[str]:
    """What the row shows that its results/<name>/summary.json does not say (empty when it agrees)."""
    summary_path = ROOT / "results" / name / "summary.json"
    if not summary_path.exists():
        return [f"{where}: links results/{name}/, which has no summary.json"]
    summary = json.loads(summary_path.read_text())
    columns = [h.lower() for h in header]
    if "score" not in columns:
        return [f"{where}: a table row linking results/{name}/ needs a 'score' column"]
    wrong = []
    for column in ("score", "pieces"):
        if column in columns:
            shown = _number(cells[columns.index(column)])
            if shown != summary[column]:
                wrong.append(f"{where}: {name} shows {column} {shown}, its summary.json {summary[column]}")
    return wrong


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
    """Each row of the README's score table that links a results/<name>/ shows that summary's score and pieces."""
    rows = _checked_rows(ROOT / "README.md")
    assert rows, "the README quotes no result"
    wrong = [w for row in rows for w in _mismatches(*row)]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_docs_scores_are_backed(page):
    """Each table row in docs/*.md that links a results/<name>/ shows that summary's score (and pieces)."""
    wrong = [w for row in _checked_rows(page) for w in _mismatches(*row)]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("page", [ROOT / "README.md", *DOCS], ids=lambda p: p.name)
def test_results_links_lead_somewhere(page):
    """Every link into results/ from the README or docs/ (tables and prose) names a file or folder that exists."""
    for m in ANY_RESULTS_LINK.finditer(page.read_text(encoding="utf-8")):
        target = (page.parent / m.group(1)).resolve()
        assert target.exists(), f"{page.relative_to(ROOT)}: the link {m.group(1)} leads nowhere"


def test_the_standard_tuner_comparison_table_holds_the_runs():
    """docs/tuning.md's table of the standard tuner comparison has one row per tuner that
    ``bench_tuning.py --standard`` runs (its first cell names the label in backticks) and a column
    per seed; a cell shows the run's re-scored best and its tuned best in millions, to 0.1 M, as
    ``results/bench-standard/standard-<label>-seed<seed>/`` holds them (``rescore.csv``'s highest
    estimate, ``evaluations.csv``'s), and a run not re-scored yet shows no figure."""
    import pandas as pd
    from conftest import load_benchmark

    labels = list(load_benchmark("bench_tuning").STANDARD)
    runs = ROOT / "results" / "bench-standard"
    page = ROOT / "docs" / "tuning.md"
    tables = [(h, rows) for h, rows in _tables(page.read_text(encoding="utf-8"))
              if h[0] == "tuner" and h[1:] and all(re.fullmatch(r"seed \d+", c) for c in h[1:])]
    assert len(tables) == 1, f"{page.relative_to(ROOT)}: {len(tables)} tables headed 'tuner | seed N | ...', want 1"
    header, rows = tables[0]
    shown = {}
    for lineno, cells in rows:
        named = re.findall(r"`([\w-]+)`", cells[0])
        assert named and named[0] in labels, f"docs/tuning.md:{lineno}: the row names no tuner of {labels}"
        shown[named[0]] = (lineno, cells)
    assert sorted(shown) == sorted(labels), f"docs/tuning.md: rows for {sorted(shown)}, bench_tuning runs {labels}"
    wrong = []
    for label, (lineno, cells) in shown.items():
        for column, cell in zip(header[1:], cells[1:]):
            run = runs / f"standard-{label}-seed{column.split()[1]}"
            figures = re.findall(r"(\d+\.\d) M", cell)
            if not (run / "rescore.csv").is_file():
                if figures:
                    wrong.append(f"docs/tuning.md:{lineno}: {label}, {column} shows {cell!r}; "
                                 f"{run.name} is not re-scored")
                continue
            want = [f"{pd.read_csv(run / name).fitness.max() / 1e6:.1f}" for name in ("rescore.csv", "evaluations.csv")]
            if figures != want:
                wrong.append(f"docs/tuning.md:{lineno}: {label}, {column} shows {cell!r}; "
                             f"{run.relative_to(ROOT).as_posix()} holds {want[0]} M re-scored ({want[1]} M tuned)")
    assert not wrong, "\n".join(wrong)
